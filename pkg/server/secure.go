package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"
)

// SecureConfig is the secure port made from Options: its bound listener, its certificates
// (which it reloads when their files or ConfigMap change), and the authenticator and
// authorizer every request passes.
type SecureConfig struct {
	listener net.Listener
	options  *SecureServingOptions
	// cert is the serving certificate; sniCerts are --tls-sni-cert-key's.
	cert     dynamiccertificates.CertKeyContentProvider
	sniCerts []dynamiccertificates.SNICertKeyContentProvider
	// clientCA verifies client certificates: the client CA and the front proxy's, nil when
	// neither is known.
	clientCA dynamiccertificates.CAContentProvider

	authenticator authenticator.Request
	authorizer    authorizer.Authorizer
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
	c := &SecureConfig{options: s}
	var err error
	if c.cert, c.sniCerts, err = servingCerts(s, "localhost", []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, err
	}
	if c.listener, err = s.listen(); err != nil {
		return nil, fmt.Errorf("opening the secure port (--bind-address %s, --secure-port %d; 0 turns it off): %w", s.BindAddress, s.BindPort, err)
	}
	fail := func(err error) (*SecureConfig, error) {
		_ = c.listener.Close()
		return nil, err
	}

	// One client when both reviews go to the same API server, as they do unless
	// --authentication-kubeconfig and --authorization-kubeconfig differ.
	authnKubeconfig := cmp.Or(o.Authentication.RemoteKubeConfigFile, kubeconfig)
	authzKubeconfig := cmp.Or(o.Authorization.RemoteKubeConfigFile, kubeconfig)
	authnClient, err := reviewClient(authnKubeconfig)
	if err != nil {
		return fail(fmt.Errorf("setting up delegated authentication (--authentication-kubeconfig): %w", err))
	}
	authzClient := authnClient
	if authzKubeconfig != authnKubeconfig {
		if authzClient, err = reviewClient(authzKubeconfig); err != nil {
			return fail(fmt.Errorf("setting up delegated authorization (--authorization-kubeconfig): %w", err))
		}
	}

	authn, err := o.Authentication.authenticator(authnClient)
	if err != nil {
		return fail(fmt.Errorf("setting up delegated authentication (--authentication-kubeconfig; its user needs ClusterRole system:auth-delegator "+
			"and Role kube-system/extension-apiserver-authentication-reader, or --authentication-skip-lookup): %w", err))
	}
	c.clientCA = authn.clientCA
	if c.authenticator, err = anonymousOnlyOn(authn.request, o.Authorization.AlwaysAllowPaths); err != nil {
		return fail(fmt.Errorf("--authorization-always-allow-paths: %w", err))
	}
	if c.authorizer, err = o.Authorization.authorizer(authzClient); err != nil {
		return fail(fmt.Errorf("setting up delegated authorization (--authorization-always-allow-paths): %w", err))
	}
	return c, nil
}

// Addr is the secure port's bound address.
func (c *SecureConfig) Addr() net.Addr { return c.listener.Addr() }

// Close releases the secure port without serving it.
func (c *SecureConfig) Close() error { return c.listener.Close() }

// ServeSecure serves everything (Handler, /debug/ included) on the secure port until ctx
// ends, behind kube-controller-manager's handler chain (secureHandler): panic recovery,
// request logging, Cache-Control, authentication (401 without valid credentials, except on
// the anonymous paths), then authorization (403 unless the API server allows the method on
// the path as a non-resource URL). Certificates and CAs are reloaded as their files or
// ConfigMap change. It returns once the listener has stopped and in-flight requests have
// ended (at most 5 s after ctx ends).
func (s *Server) ServeSecure(ctx context.Context, c *SecureConfig) error {
	logger := klog.FromContext(ctx)
	tlsConfig, err := c.options.baseTLSConfig(logger)
	if err != nil {
		_ = c.listener.Close()
		return err
	}
	if c.clientCA != nil {
		// Ask for a certificate, verified by the authenticator rather than the handshake, so
		// that a client without one can still present a token.
		tlsConfig.ClientAuth = tls.RequestClientCert
	}
	certs := dynamiccertificates.NewDynamicServingCertificateController(tlsConfig, c.clientCA, c.cert, c.sniCerts, nil)
	runCertControllers(ctx, certs, c.clientCA, c.cert, c.sniCerts)
	tlsConfig.GetConfigForClient = certs.GetConfigForClient

	srv := &http.Server{
		Handler:           secureHandler(s.all, c.authenticator, c.authorizer),
		TLSConfig:         tlsConfig,
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       90 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
		ErrorLog:          log.New(handshakeErrorWriter{logger}, "", 0),
		// Requests log with adc's logger; they are not cancelled by ctx, so Shutdown lets
		// them finish.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if c.options.DisableHTTP2Serving {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
	} else {
		// k8s.io/apiserver's HTTP/2 limits: 256 KiB frames and buffers per stream, 100 streams
		// per connection unless --http2-max-streams-per-connection says otherwise.
		const frame = 256 * 1024
		streams := 100
		if c.options.HTTP2MaxStreamsPerConnection > 0 {
			streams = c.options.HTTP2MaxStreamsPerConnection
		}
		srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: streams, MaxReadFrameSize: frame,
			MaxReceiveBufferPerStream: frame, MaxReceiveBufferPerConnection: frame * streams}
	}
	addr := c.Addr().String()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			logger.Error(err, "Failed to shut the secure port down", "address", addr)
		}
	}()
	logger.Info("Serving securely", "address", addr)
	if err := srv.ServeTLS(c.listener, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTPS on %s: %w", addr, err)
	}
	<-stopped
	logger.Info("Stopped listening", "address", addr)
	return nil
}

// runCertControllers loads the certificates and CAs once, then keeps them current until ctx
// ends (files are watched, the ConfigMap is informed), and the TLS configuration with them.
func runCertControllers(ctx context.Context, certs *dynamiccertificates.DynamicServingCertificateController,
	clientCA dynamiccertificates.CAContentProvider, cert dynamiccertificates.CertKeyContentProvider, sniCerts []dynamiccertificates.SNICertKeyContentProvider) {
	logger := klog.FromContext(ctx)
	start := func(what string, p any) {
		r, ok := p.(dynamiccertificates.ControllerRunner)
		if !ok {
			return
		}
		if err := r.RunOnce(ctx); err != nil {
			logger.Error(err, "Initial load failed; retrying in the background", "what", what)
		}
		go r.Run(ctx, 1)
	}
	if clientCA != nil {
		clientCA.AddListener(certs)
		start("client CA", clientCA)
	}
	if cert != nil {
		cert.AddListener(certs)
		start("serving certificate", cert)
	}
	for _, sni := range sniCerts {
		sni.AddListener(certs)
		start("SNI certificate", sni)
	}
	if err := certs.RunOnce(); err != nil {
		logger.Error(err, "Initial load of the TLS configuration failed; retrying in the background")
	}
	go certs.Run(1, ctx.Done())
}

// handshakeErrorWriter logs TLS handshake failures (a scanner, a client that does not trust
// the certificate) at V(5), as k8s.io/apiserver does, and everything else net/http reports
// as an error.
type handshakeErrorWriter struct{ logger klog.Logger }

func (w handshakeErrorWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if strings.Contains(msg, "http: TLS handshake error") {
		w.logger.V(5).Info(msg)
	} else {
		w.logger.Error(nil, msg)
	}
	return len(p), nil
}
