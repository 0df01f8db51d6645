package server

import (
	"errors"
	"fmt"

	cliflag "k8s.io/component-base/cli/flag"
)

// DefaultSecurePort is adc's --secure-port. kube-controller-manager serves on 10257,
// kube-scheduler on 10259 and cloud-controller-manager on 10258, so that they can share a
// host network; adc runs in its own Pod, and 8443 is the usual port of an HTTPS workload.
const DefaultSecurePort = 8443

// Options are the flags of adc's listeners. The secure port's have kube-controller-manager's
// names, defaults and meaning (k8s.io/apiserver's options): --bind-address, --secure-port,
// --tls-*, --cert-dir, the --authentication-* and --authorization-* flags, --client-ca-file
// and --requestheader-*.
type Options struct {
	// SecureServing is the HTTPS listener; BindPort 0 (--secure-port=0) turns it off.
	SecureServing *SecureServingOptions
	// Authentication delegates to the API server: TokenReview for bearer tokens, and client
	// certificates signed by the cluster's client CA (read from the ConfigMap
	// kube-system/extension-apiserver-authentication unless --client-ca-file is given).
	Authentication *AuthenticationOptions
	// Authorization delegates to the API server with SubjectAccessReview; the paths of
	// --authorization-always-allow-paths (the health paths) skip it and are the only ones
	// served without credentials.
	Authorization *AuthorizationOptions
	// HTTPAddr is the plain HTTP listener (--http-addr), which has no authentication: empty
	// (the default) turns it off, and ListenLoopback refuses an address that is not
	// loopback.
	HTTPAddr string
}

// NewOptions returns kube-controller-manager's defaults on adc's port: HTTPS on every
// interface at DefaultSecurePort, with a self-signed certificate made in memory unless
// --tls-cert-file and --tls-private-key-file (or --cert-dir) are given; the API server's
// delegated authentication and authorization; /healthz, /readyz and /livez allowed
// anonymously; no plain HTTP.
func NewOptions() *Options {
	return &Options{
		SecureServing:  NewSecureServingOptions(),
		Authentication: NewAuthenticationOptions(),
		Authorization:  NewAuthorizationOptions(),
	}
}

// AddFlags adds the flags in the groups kube-controller-manager's --help uses ("secure
// serving", "authentication", "authorization"), and --http-addr under "insecure serving".
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Authentication.AddFlags(fss.FlagSet("authentication"))
	o.Authorization.AddFlags(fss.FlagSet("authorization"))
	fss.FlagSet("insecure serving").StringVar(&o.HTTPAddr, "http-addr", o.HTTPAddr,
		"Address of a plain HTTP listener without authentication for /healthz, /readyz, /livez, /metrics and the dashboard (never the profiles), "+
			"for a laptop or for kubectl port-forward; it must be a loopback address such as 127.0.0.1:8080. Empty (the default) disables it.")
}

// Validate checks the flags' values, naming the flag that is wrong.
func (o *Options) Validate() error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	if o.HTTPAddr != "" {
		if err := CheckLoopback(o.HTTPAddr); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("serving flags: %w", err)
	}
	return nil
}

// Secure reports whether the secure port is on.
func (o *Options) Secure() bool {
	return o.SecureServing.on()
}
