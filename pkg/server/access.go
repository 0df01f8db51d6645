package server

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// authorizerKey carries the secure port's authorizer in a request's context, for AllowedTo.
type authorizerKey struct{}

func withAuthorizer(ctx context.Context, authz authorizer.Authorizer) context.Context {
	return context.WithValue(ctx, authorizerKey{}, authz)
}

// AllowedTo says whether the request's user may verb the API resource (group "" is core) in
// namespace, asking the secure port's authorizer (the same SubjectAccessReviews, cached the
// same way, as for paths). A page that shows cluster objects asks it before answering, so
// that being granted the dashboard does not show a user objects their own RBAC hides. It
// returns nil when allowed, and an error saying what is missing otherwise.
//
// A request the plain loopback listener serves has no authenticated user and is allowed: that
// listener is reached only from the machine itself or through kubectl port-forward, which
// the API server authorizes (and which reaches far more than the dashboard shows).
func AllowedTo(r *http.Request, verb, group, resource, namespace string) error {
	ctx := r.Context()
	authz, ok := ctx.Value(authorizerKey{}).(authorizer.Authorizer)
	if !ok {
		return nil
	}
	u, ok := genericrequest.UserFrom(ctx)
	if !ok {
		return fmt.Errorf("no user found for the request")
	}
	attrs := authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, APIVersion: "*", Resource: resource,
		Namespace: namespace, ResourceRequest: true}
	decision, reason, err := authz.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	where := "in namespace " + namespace
	if namespace == "" {
		where = "cluster-wide"
	}
	msg := fmt.Sprintf("user %q may not %s %s %s", u.GetName(), verb, resource, where)
	if reason != "" {
		msg += ": " + reason
	}
	if err != nil {
		return &AccessError{Msg: msg + ": " + err.Error(), Unavailable: true}
	}
	return &AccessError{Msg: msg}
}

// AccessError is AllowedTo's refusal. Unavailable means no authorizer could answer (the API
// server did not), which is the server's failure, not the user's: answer 503, not 403.
type AccessError struct {
	Msg         string
	Unavailable bool
}

func (e *AccessError) Error() string { return e.Msg }
