package server

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
)

// AuthorizationOptions are kube-controller-manager's delegated authorization flags, with the
// same names, defaults and meaning (k8s.io/apiserver's DelegatingAuthorizationOptions):
// every request not on AlwaysAllowPaths, and not from AlwaysAllowGroups, is allowed only if
// a SubjectAccessReview says its user may use its verb on its path.
type AuthorizationOptions struct {
	// RemoteKubeConfigFile is --authorization-kubeconfig: who creates the reviews.
	RemoteKubeConfigFile string
	// AllowCacheTTL is --authorization-webhook-cache-authorized-ttl.
	AllowCacheTTL time.Duration
	// DenyCacheTTL is --authorization-webhook-cache-unauthorized-ttl.
	DenyCacheTTL time.Duration
	// AlwaysAllowPaths is --authorization-always-allow-paths: exact paths, or prefixes
	// ending in *; they are also the only paths served without credentials.
	AlwaysAllowPaths []string
	// AlwaysAllowGroups skip the review (system:masters, which kube-apiserver always allows).
	AlwaysAllowGroups []string
	// RetryBackoff paces retries of a review that failed in a way worth retrying.
	RetryBackoff wait.Backoff
	// RequestTimeout bounds one SubjectAccessReview.
	RequestTimeout time.Duration
}

// NewAuthorizationOptions returns kube-controller-manager's defaults: the health paths are
// allowed without a review, and so is system:masters.
func NewAuthorizationOptions() *AuthorizationOptions {
	return &AuthorizationOptions{
		AllowCacheTTL:     10 * time.Second,
		DenyCacheTTL:      10 * time.Second,
		AlwaysAllowPaths:  []string{"/healthz", "/readyz", "/livez"},
		AlwaysAllowGroups: []string{"system:masters"},
		RetryBackoff:      defaultReviewBackoff(),
		RequestTimeout:    10 * time.Second,
	}
}

// AddFlags adds the flags with kube-controller-manager's names and help.
func (o *AuthorizationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.RemoteKubeConfigFile, "authorization-kubeconfig", o.RemoteKubeConfigFile, ""+
		"kubeconfig file pointing at the 'core' kubernetes server with enough rights to create "+
		"subjectaccessreviews.authorization.k8s.io. Empty: --kubeconfig, else the in-cluster configuration.")
	fs.DurationVar(&o.AllowCacheTTL, "authorization-webhook-cache-authorized-ttl", o.AllowCacheTTL,
		"The duration to cache 'authorized' responses from the webhook authorizer.")
	fs.DurationVar(&o.DenyCacheTTL, "authorization-webhook-cache-unauthorized-ttl", o.DenyCacheTTL,
		"The duration to cache 'unauthorized' responses from the webhook authorizer.")
	fs.StringSliceVar(&o.AlwaysAllowPaths, "authorization-always-allow-paths", o.AlwaysAllowPaths, ""+
		"A list of HTTP paths to skip during authorization, i.e. these are authorized without "+
		"contacting the 'core' kubernetes server.")
}

// Validate checks the flags' values, naming the flag that is wrong.
func (o *AuthorizationOptions) Validate() []error {
	var errs []error
	if o.AllowCacheTTL < 0 || o.DenyCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("--authorization-webhook-cache-authorized-ttl %s and --authorization-webhook-cache-unauthorized-ttl %s must not be negative",
			o.AllowCacheTTL, o.DenyCacheTTL))
	}
	if o.RetryBackoff.Steps <= 0 {
		errs = append(errs, fmt.Errorf("number of SubjectAccessReview attempts must be at least 1, but is %d", o.RetryBackoff.Steps))
	}
	return errs
}
