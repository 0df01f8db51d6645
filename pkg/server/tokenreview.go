package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
)

// tokenReviewer authenticates a bearer token by asking the API server (TokenReview), as
// k8s.io/apiserver's webhook token authenticator does with a delegating configuration:
// no audiences, retries on transient failures, one time limit for all of them.
type tokenReviewer struct {
	client  authenticationclient.TokenReviewInterface
	backoff wait.Backoff
	timeout time.Duration
}

var _ authenticator.Token = &tokenReviewer{}

// AuthenticateToken returns the token's user, or false (and the API server's reason as the
// error, if it gave one) when the token is not valid; an error when no answer came.
func (r *tokenReviewer) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	var result *authenticationv1.TokenReview
	if err := retryReview(ctx, r.backoff, func(ctx context.Context) error {
		var err error
		result, err = r.client.Create(ctx, review, metav1.CreateOptions{})
		return err
	}); err != nil {
		// withAuthentication logs it, with the request's path.
		return nil, false, fmt.Errorf("reviewing the bearer token with the API server (TokenReview): %w", err)
	}
	if !result.Status.Authenticated {
		if result.Status.Error != "" {
			return nil, false, errors.New(result.Status.Error)
		}
		return nil, false, nil
	}
	u := result.Status.User
	info := &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return &authenticator.Response{User: info}, true, nil
}
