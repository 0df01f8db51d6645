package server

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// reviewClient is the client of the TokenReviews, SubjectAccessReviews and the ConfigMap
// lookups: kubeconfig's (empty: the in-cluster configuration), with the high limits
// k8s.io/apiserver gives it (200 QPS, burst 400), since every request to the secure port
// may wait on it, and JSON, as k8s.io/apiserver's webhook clients send reviews.
func reviewClient(kubeconfig string) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("loading the client configuration (%q; empty is the in-cluster one): %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.ContentType = "application/json"
	cfg.UserAgent = rest.DefaultKubernetesUserAgent() + "/delegated-auth"
	return kubernetes.NewForConfig(cfg)
}

// retryReview calls review until it succeeds, fails in a way not worth retrying, or backoff
// is spent, as k8s.io/apiserver's webhooks do (webhook.WithExponentialBackoff with
// DefaultShouldRetry): a reset or lost connection, an internal error, a timeout, 429, or an
// answer that asks the client to come back later are retried.
func retryReview(ctx context.Context, backoff wait.Backoff, review func(context.Context) error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		last = review(ctx)
		switch {
		case last == nil:
			return true, nil
		case retryable(last):
			return false, nil
		default:
			return false, last
		}
	})
	switch {
	case last != nil:
		return last
	case err != nil:
		return fmt.Errorf("review call failed: %w", err)
	}
	return nil
}

func retryable(err error) bool {
	if utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) || apierrors.IsInternalError(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	_, later := apierrors.SuggestsClientDelay(err)
	return later
}
