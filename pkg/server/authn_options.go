package server

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The ConfigMap kube-apiserver publishes for delegated authentication: the client CA, and
// the front proxy's CA and headers.
const (
	authenticationConfigMapNamespace = "kube-system"
	authenticationConfigMapName      = "extension-apiserver-authentication"
)

// RequestHeaderOptions are the --requestheader-* flags: an authenticating proxy (the API
// server's aggregator) that presents a client certificate signed by ClientCAFile may say
// who the user is in these headers.
type RequestHeaderOptions struct {
	ClientCAFile        string
	UsernameHeaders     []string
	UIDHeaders          []string
	GroupHeaders        []string
	ExtraHeaderPrefixes []string
	AllowedNames        []string
}

// AuthenticationOptions are kube-controller-manager's delegated authentication flags, with
// the same names, defaults and meaning (k8s.io/apiserver's DelegatingAuthenticationOptions):
// bearer tokens are checked with TokenReview, client certificates against the client CA,
// front-proxy headers against the request-header CA; what is not given is looked up in
// ConfigMap kube-system/extension-apiserver-authentication.
type AuthenticationOptions struct {
	// RemoteKubeConfigFile is --authentication-kubeconfig: who creates the TokenReviews and
	// reads the ConfigMap.
	RemoteKubeConfigFile string
	// CacheTTL is --authentication-token-webhook-cache-ttl: how long a token's review is kept.
	CacheTTL time.Duration
	// ClientCAFile is --client-ca-file.
	ClientCAFile string
	// RequestHeader are the --requestheader-* flags.
	RequestHeader RequestHeaderOptions
	// SkipInClusterLookup is --authentication-skip-lookup.
	SkipInClusterLookup bool
	// TolerateInClusterLookupFailure is --authentication-tolerate-lookup-failure.
	TolerateInClusterLookupFailure bool
	// RetryBackoff paces retries of a TokenReview that failed in a way worth retrying.
	RetryBackoff wait.Backoff
	// RequestTimeout bounds one TokenReview.
	RequestTimeout time.Duration
}

// defaultReviewBackoff is k8s.io/apiserver's DefaultAuthWebhookRetryBackoff: five tries over
// about four seconds.
func defaultReviewBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// NewAuthenticationOptions returns kube-controller-manager's defaults.
func NewAuthenticationOptions() *AuthenticationOptions {
	return &AuthenticationOptions{
		CacheTTL: 10 * time.Second,
		RequestHeader: RequestHeaderOptions{
			UsernameHeaders:     []string{"x-remote-user"},
			GroupHeaders:        []string{"x-remote-group"},
			ExtraHeaderPrefixes: []string{"x-remote-extra-"},
		},
		RetryBackoff:   defaultReviewBackoff(),
		RequestTimeout: 10 * time.Second,
	}
}

// AddFlags adds the flags with kube-controller-manager's names and help.
func (o *AuthenticationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.RemoteKubeConfigFile, "authentication-kubeconfig", o.RemoteKubeConfigFile, ""+
		"kubeconfig file pointing at the 'core' kubernetes server with enough rights to create "+
		"tokenreviews.authentication.k8s.io. Empty: --kubeconfig, else the in-cluster configuration.")
	fs.DurationVar(&o.CacheTTL, "authentication-token-webhook-cache-ttl", o.CacheTTL,
		"The duration to cache responses from the webhook token authenticator.")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, ""+
		"If set, any request presenting a client certificate signed by one of "+
		"the authorities in the client-ca-file is authenticated with an identity "+
		"corresponding to the CommonName of the client certificate.")
	rh := &o.RequestHeader
	fs.StringSliceVar(&rh.UsernameHeaders, "requestheader-username-headers", rh.UsernameHeaders,
		"List of request headers to inspect for usernames. X-Remote-User is common.")
	fs.StringSliceVar(&rh.UIDHeaders, "requestheader-uid-headers", rh.UIDHeaders,
		"List of request headers to inspect for UIDs. X-Remote-Uid is suggested.")
	fs.StringSliceVar(&rh.GroupHeaders, "requestheader-group-headers", rh.GroupHeaders,
		"List of request headers to inspect for groups. X-Remote-Group is suggested.")
	fs.StringSliceVar(&rh.ExtraHeaderPrefixes, "requestheader-extra-headers-prefix", rh.ExtraHeaderPrefixes,
		"List of request header prefixes to inspect. X-Remote-Extra- is suggested.")
	fs.StringVar(&rh.ClientCAFile, "requestheader-client-ca-file", rh.ClientCAFile, ""+
		"Root certificate bundle to use to verify client certificates on incoming requests "+
		"before trusting usernames in headers specified by --requestheader-username-headers. "+
		"WARNING: generally do not depend on authorization being already done for incoming requests.")
	fs.StringSliceVar(&rh.AllowedNames, "requestheader-allowed-names", rh.AllowedNames, ""+
		"List of client certificate common names to allow to provide usernames in headers "+
		"specified by --requestheader-username-headers. If empty, any client certificate validated "+
		"by the authorities in --requestheader-client-ca-file is allowed.")
	fs.BoolVar(&o.SkipInClusterLookup, "authentication-skip-lookup", o.SkipInClusterLookup, ""+
		"If false, the authentication-kubeconfig will be used to lookup missing authentication "+
		"configuration from the cluster.")
	fs.BoolVar(&o.TolerateInClusterLookupFailure, "authentication-tolerate-lookup-failure", o.TolerateInClusterLookupFailure, ""+
		"If true, failures to look up missing authentication configuration from the cluster are not considered fatal. "+
		"Note that this can result in authentication that treats all requests as anonymous.")
}

// Validate checks the flags' values, naming the flag that is wrong.
func (o *AuthenticationOptions) Validate() []error {
	var errs []error
	rh := o.RequestHeader
	for _, f := range []struct {
		flag   string
		values []string
	}{
		{"requestheader-username-headers", rh.UsernameHeaders},
		{"requestheader-uid-headers", rh.UIDHeaders},
		{"requestheader-group-headers", rh.GroupHeaders},
		{"requestheader-extra-headers-prefix", rh.ExtraHeaderPrefixes},
		{"requestheader-allowed-names", rh.AllowedNames},
	} {
		if slices.ContainsFunc(f.values, func(v string) bool { return strings.TrimSpace(v) == "" }) {
			errs = append(errs, fmt.Errorf("--%s has an empty or whitespace-only value", f.flag))
		}
	}
	if len(rh.UIDHeaders) > 0 && !hasFold(rh.UIDHeaders, "X-Remote-Uid") {
		errs = append(errs, fmt.Errorf("--requestheader-uid-headers is set without the standard X-Remote-Uid header: API aggregation will not work"))
	}
	if o.CacheTTL < 0 {
		errs = append(errs, fmt.Errorf("--authentication-token-webhook-cache-ttl %s must not be negative", o.CacheTTL))
	}
	if o.RetryBackoff.Steps <= 0 {
		errs = append(errs, fmt.Errorf("number of TokenReview attempts must be at least 1, but is %d", o.RetryBackoff.Steps))
	}
	return errs
}

func hasFold(values []string, want string) bool {
	return slices.ContainsFunc(values, func(v string) bool { return strings.EqualFold(v, want) })
}
