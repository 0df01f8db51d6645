package server

import (
	"context"
	"fmt"
	"net"
	"time"

	apiserver "k8s.io/apiserver/pkg/server"
	controllermanager "k8s.io/controller-manager/app"
	"k8s.io/klog/v2"
)

// SecureConfig is the secure port made from Options: its bound listener and certificates,
// and the authenticator and authorizer every request passes.
type SecureConfig struct {
	Serving        *apiserver.SecureServingInfo
	Authentication apiserver.AuthenticationInfo
	Authorization  apiserver.AuthorizationInfo
}

// SecureConfig binds the secure port and builds its authentication and authorization, as
// kube-controller-manager does at start; nil (and no error) when --secure-port is 0.
// kubeconfig (empty: the in-cluster configuration) is the client of the TokenReviews,
// SubjectAccessReviews and the client CA lookup unless --authentication-kubeconfig or
// --authorization-kubeconfig say otherwise, so that `adc controller --kubeconfig` needs no
// second file. Its identity needs ClusterRole system:auth-delegator (create tokenreviews
// and subjectaccessreviews) and Role kube-system/extension-apiserver-authentication-reader
// (the client CA and front-proxy settings in ConfigMap extension-apiserver-authentication).
func (o *Options) SecureConfig(kubeconfig string) (*SecureConfig, error) {
	if !o.Secure() {
		return nil, nil
	}
	s := o.SecureServing
	// As kube-controller-manager: a certificate for localhost and 127.0.0.1 (and the bind
	// address) when none is given, made in memory (defaultServingCert).
	if err := defaultServingCert(s, "localhost", []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("generating a self-signed serving certificate (or give --tls-cert-file and --tls-private-key-file): %w", err)
	}
	c := &SecureConfig{}
	if err := s.ApplyTo(&c.Serving); err != nil {
		return nil, fmt.Errorf("opening the secure port (--bind-address %s, --secure-port %d; 0 turns it off): %w", s.BindAddress, s.BindPort, err)
	}
	fail := func(err error) (*SecureConfig, error) {
		_ = c.Serving.Listener.Close()
		return nil, err
	}

	authn := *o.Authentication
	if authn.RemoteKubeConfigFile == "" {
		authn.RemoteKubeConfigFile = kubeconfig
	}
	if err := authn.ApplyTo(&c.Authentication, c.Serving, nil); err != nil {
		return fail(fmt.Errorf("setting up delegated authentication (--authentication-kubeconfig; its user needs ClusterRole system:auth-delegator "+
			"and Role kube-system/extension-apiserver-authentication-reader, or --authentication-skip-lookup): %w", err))
	}
	anonymous, err := anonymousOnlyOn(c.Authentication.Authenticator, o.Authorization.AlwaysAllowPaths)
	if err != nil {
		return fail(fmt.Errorf("--authorization-always-allow-paths: %w", err))
	}
	c.Authentication.Authenticator = anonymous

	authz := *o.Authorization
	if authz.RemoteKubeConfigFile == "" {
		authz.RemoteKubeConfigFile = kubeconfig
	}
	if err := authz.ApplyTo(&c.Authorization); err != nil {
		return fail(fmt.Errorf("setting up delegated authorization (--authorization-kubeconfig; its user needs ClusterRole system:auth-delegator): %w", err))
	}
	return c, nil
}

// Addr is the secure port's bound address.
func (c *SecureConfig) Addr() net.Addr { return c.Serving.Listener.Addr() }

// ServeSecure serves everything (Handler, /debug/ included) on the secure port until ctx
// ends, behind kube-controller-manager's own handler chain (k8s.io/controller-manager/app
// BuildHandlerChain): panic recovery, request logging, Cache-Control, request info,
// authentication (401 without valid credentials, except on the anonymous paths), then
// authorization (403 unless the API server allows get on the path as a non-resource URL).
// It returns once the listener has stopped and in-flight requests have ended.
func (s *Server) ServeSecure(ctx context.Context, c *SecureConfig) error {
	logger := klog.FromContext(ctx)
	handler := controllermanager.BuildHandlerChain(s.all, &c.Authorization, &c.Authentication)
	addr := c.Addr().String()
	stopped, _, err := c.Serving.Serve(handler, 5*time.Second, ctx.Done())
	if err != nil {
		return fmt.Errorf("serving HTTPS on %s: %w", addr, err)
	}
	logger.Info("Serving securely", "address", addr)
	<-stopped
	return nil
}
