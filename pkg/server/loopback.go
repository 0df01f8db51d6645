package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"
)

// ListenLoopback binds addr ("127.0.0.1:8080", or "127.0.0.1:0" for a free port in tests)
// for plain HTTP. It refuses any address that is not loopback: plain HTTP has no
// authentication, so it must only be reachable from the machine itself (a laptop, the demo)
// or, inside a Pod, through `kubectl port-forward`, which the API server authorizes.
func ListenLoopback(addr string) (net.Listener, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s for plain HTTP (--http-addr): %w", addr, err)
	}
	return l, nil
}

// CheckLoopback accepts host:port addresses whose host is a loopback IP or "localhost", the
// only ones ListenLoopback binds, so that a program can check its flag before it starts work.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http-addr %q is not host:port (e.g. 127.0.0.1:8080): %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--http-addr %q is not a loopback address: plain HTTP has no authentication, so it only listens on 127.0.0.1, ::1 or localhost "+
		"(reach it in a Pod with kubectl port-forward); serve other clients on the secure port (--secure-port, --bind-address)", addr)
}

// LoopbackHandler is what the plain HTTP listener serves: everything but /debug/, and only
// to requests whose Host header names the loopback interface. A browser page from elsewhere
// that rebinds its own domain name to 127.0.0.1 (DNS rebinding) sends that name as Host, so
// it cannot read the dashboard of a laptop or of a port-forward.
func (s *Server) LoopbackHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "this plain HTTP listener only answers requests for localhost, 127.0.0.1 or [::1]", http.StatusMisdirectedRequest)
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header (with or without a port) names the loopback
// interface.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves LoopbackHandler over plain HTTP on l (from ListenLoopback) until ctx ends,
// then shuts down gracefully: requests in flight get a few seconds to finish, then every
// connection left is closed (a browser may hold one it opened ahead and never used).
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	logger := klog.FromContext(ctx)
	srv := &http.Server{Handler: s.LoopbackHandler(), ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(l) }()
	logger.Info("Serving plain HTTP on loopback", "address", l.Addr().String())
	select {
	case err := <-errs:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serving HTTP on %s: %w", l.Addr(), err)
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			logger.V(2).Info("Closing the connections left after the grace period", "address", l.Addr().String(), "reason", err.Error())
			if err := srv.Close(); err != nil {
				return fmt.Errorf("closing the HTTP listener on %s: %w", l.Addr(), err)
			}
		}
		return nil
	}
}
