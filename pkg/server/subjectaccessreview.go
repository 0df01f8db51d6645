package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"
)

// accessReviewer authorizes a request by asking the API server (SubjectAccessReview) whether
// its user may use its verb on its path, as k8s.io/apiserver's webhook authorizer does with
// a delegating configuration: answers are cached by the review's spec, allowed ones for
// allowTTL and the others for denyTTL; failures are not cached and decide nothing.
type accessReviewer struct {
	client            authorizationclient.SubjectAccessReviewInterface
	allowTTL, denyTTL time.Duration
	backoff           wait.Backoff
	timeout           time.Duration
	answers           *cache.LRUExpireCache
}

var _ authorizer.Authorizer = &accessReviewer{}

// accessReviewCacheSize is k8s.io/apiserver's webhook authorizer's.
const accessReviewCacheSize = 8192

func newAccessReviewer(client authorizationclient.SubjectAccessReviewInterface, o *AuthorizationOptions) *accessReviewer {
	return &accessReviewer{
		client: client, allowTTL: o.AllowCacheTTL, denyTTL: o.DenyCacheTTL, backoff: o.RetryBackoff, timeout: o.RequestTimeout,
		answers: cache.NewLRUExpireCache(accessReviewCacheSize),
	}
}

// Authorize asks about a request for a path (adc serves no API resources) or, for the pages
// that show cluster objects (AllowedTo), about the API resource the page reads for its user.
func (r *accessReviewer) Authorize(ctx context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: attr.GetPath(), Verb: attr.GetVerb()},
	}}
	if attr.IsResourceRequest() {
		review.Spec.NonResourceAttributes = nil
		review.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Namespace: attr.GetNamespace(), Verb: attr.GetVerb(),
			Group: attr.GetAPIGroup(), Version: attr.GetAPIVersion(), Resource: attr.GetResource(), Subresource: attr.GetSubresource(), Name: attr.GetName()}
	}
	if u := attr.GetUser(); u != nil {
		review.Spec.User, review.Spec.UID, review.Spec.Groups = u.GetName(), u.GetUID(), u.GetGroups()
		if extra := u.GetExtra(); extra != nil {
			review.Spec.Extra = make(map[string]authorizationv1.ExtraValue, len(extra))
			for k, v := range extra {
				review.Spec.Extra[k] = v
			}
		}
	}
	key, err := json.Marshal(review.Spec)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("encoding the access review's key: %w", err)
	}
	status, ok := r.answers.Get(string(key))
	if !ok {
		if status, err = r.review(ctx, review); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to review access with the API server (SubjectAccessReview)", "path", attr.GetPath())
			return authorizer.DecisionNoOpinion, "", err
		}
		ttl := r.denyTTL
		if status.(authorizationv1.SubjectAccessReviewStatus).Allowed {
			ttl = r.allowTTL
		}
		r.answers.Add(string(key), status, ttl)
	}
	s := status.(authorizationv1.SubjectAccessReviewStatus)
	switch {
	case s.Denied && s.Allowed:
		return authorizer.DecisionDeny, s.Reason, errors.New("the SubjectAccessReview both allowed and denied the request")
	case s.Denied:
		return authorizer.DecisionDeny, s.Reason, nil
	case s.Allowed:
		return authorizer.DecisionAllow, s.Reason, nil
	}
	return authorizer.DecisionNoOpinion, s.Reason, nil
}

func (r *accessReviewer) review(ctx context.Context, review *authorizationv1.SubjectAccessReview) (authorizationv1.SubjectAccessReviewStatus, error) {
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	var result *authorizationv1.SubjectAccessReview
	err := retryReview(ctx, r.backoff, func(ctx context.Context) error {
		var err error
		result, err = r.client.Create(ctx, review, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("reviewing access with the API server: %w", err)
	}
	return result.Status, nil
}

// privilegedGroups allows every request from a member of one of its groups: kube-apiserver
// allows system:masters everything, so asking it would only cost a review.
type privilegedGroups []string

var _ authorizer.Authorizer = privilegedGroups(nil)

// Authorize allows members of the groups and has no opinion on anyone else.
func (g privilegedGroups) Authorize(_ context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	if u := attr.GetUser(); u != nil && slices.ContainsFunc(u.GetGroups(), func(group string) bool { return slices.Contains(g, group) }) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}
