package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestAllowedTo: a page's resource check asks the API server a SubjectAccessReview with the
// resource attributes and the request's user, answers nil when allowed and an AccessError
// otherwise; on the loopback listener (no authorizer in the context) it allows.
func TestAllowedTo(t *testing.T) {
	client := fake.NewClientset()
	var reviews []authorizationv1.SubjectAccessReviewSpec
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		reviews = append(reviews, sar.Spec)
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = ra != nil && ra.Namespace == "team-a" && ra.Resource == "pods" && ra.Verb == "get" && sar.Spec.User == "alice"
		return true, sar, nil
	})
	authz, err := NewAuthorizationOptions().authorizer(client)
	if err != nil {
		t.Fatal(err)
	}
	request := func(withAuthz bool) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/dashboard/api/v1/explain?pod=team-a/web-0", nil)
		ctx := genericrequest.WithUser(r.Context(), &user.DefaultInfo{Name: "alice", Groups: []string{"dev"}})
		if withAuthz {
			ctx = withAuthorizer(ctx, authz)
		}
		return r.WithContext(ctx)
	}
	if err := AllowedTo(request(true), "get", "", "pods", "team-a"); err != nil {
		t.Errorf("alice may get pods in team-a, AllowedTo says %v", err)
	}
	err = AllowedTo(request(true), "get", "", "pods", "team-b")
	var access *AccessError
	if !errors.As(err, &access) || access.Unavailable {
		t.Errorf("alice may not get pods in team-b, AllowedTo says %v", err)
	}
	if len(reviews) != 2 || reviews[1].ResourceAttributes == nil || reviews[1].NonResourceAttributes != nil ||
		reviews[1].ResourceAttributes.Namespace != "team-b" || reviews[1].User != "alice" {
		t.Errorf("reviews asked: %+v, want resource attributes for pods in team-b as alice", reviews)
	}
	if err := AllowedTo(request(false), "get", "", "pods", "team-b"); err != nil {
		t.Errorf("on the loopback listener (no authorizer) AllowedTo says %v, want allowed", err)
	}
}

// TestAllowedToBehindTheSecureChain: a handler behind the secure port's chain can ask
// AllowedTo about its own request, with the user the chain authenticated and the
// authorizer it used for the path.
func TestAllowedToBehindTheSecureChain(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		if nr := sar.Spec.NonResourceAttributes; nr != nil {
			sar.Status.Allowed = nr.Path == "/page"
		} else {
			sar.Status.Allowed = sar.Spec.ResourceAttributes.Namespace == "team-a"
		}
		return true, sar, nil
	})
	authz, err := NewAuthorizationOptions().authorizer(client)
	if err != nil {
		t.Fatal(err)
	}
	authn := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	})
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := AllowedTo(r, "get", "", "pods", r.URL.Query().Get("ns")); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
		}
	})
	h := secureHandler(page, authn, authz)
	for ns, want := range map[string]int{"team-a": http.StatusOK, "team-b": http.StatusForbidden} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/page?ns="+ns, nil))
		if rec.Code != want {
			t.Errorf("GET /page?ns=%s = %d, want %d: %s", ns, rec.Code, want, rec.Body)
		}
	}
}
