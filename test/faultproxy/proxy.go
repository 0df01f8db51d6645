package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Proxy is a TEST-ONLY reverse proxy in front of a real kube-apiserver that injects faults
// into one resource's list and watch streams at a time and counts every request, so
// integration tests can replay API server restarts and slow informers deterministically.
// It listens on 127.0.0.1 only and forwards with the admin credentials it was built with:
// never run it outside tests.
type Proxy struct {
	upstream  *rest.Config
	transport http.RoundTripper
	rp        *httputil.ReverseProxy
	faults    *faults
	logger    klog.Logger

	reqMu    sync.Mutex
	requests []Request

	mu       sync.Mutex
	listener net.Listener
	srv      *http.Server
	cancel   context.CancelFunc // ends every request's context
	started  bool
	closing  bool
	wg       sync.WaitGroup // the server, its handlers and their pumps
}

// New builds a proxy to the API server upstream describes: the admin rest.Config of the
// test control plane (TLS plus client certificate or token). The proxy authenticates
// upstream with it, so its own clients need no credentials.
func New(upstream *rest.Config) (*Proxy, error) {
	if upstream == nil {
		return nil, errors.New("faultproxy: no upstream rest.Config")
	}
	target, err := upstreamURL(upstream)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: building the transport to %s: %w", upstream.Host, err)
	}
	p := &Proxy{
		upstream:  rest.CopyConfig(upstream),
		transport: transport,
		faults:    newFaults(),
		logger:    klog.Background().WithName("faultproxy"),
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:      transport,
		FlushInterval:  -1, // watch events must reach the client as they come
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.proxyError,
		ErrorLog:       log.New(logWriter{p}, "", 0),
	}
	return p, nil
}

// upstreamURL is the API server's base URL; a bare host:port means https when the config
// carries TLS settings, as client-go reads it.
func upstreamURL(cfg *rest.Config) (*url.URL, error) {
	host := cfg.Host
	if host == "" {
		return nil, errors.New("faultproxy: upstream rest.Config has no Host")
	}
	if !strings.Contains(host, "://") {
		scheme := "http"
		if rest.IsConfigTransportTLS(*cfg) {
			scheme = "https"
		}
		host = scheme + "://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: parsing upstream host %q: %w", cfg.Host, err)
	}
	return u, nil
}

// Start listens on 127.0.0.1 (a free port) and serves plain HTTP until ctx ends or Close is
// called. It returns once the proxy accepts connections, so URL and Config are usable.
func (p *Proxy) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.closing {
		return errors.New("faultproxy: Start called twice or after Close")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("faultproxy: listening on 127.0.0.1: %w", err)
	}
	p.logger = klog.FromContext(ctx).WithName("faultproxy")
	base, cancel := context.WithCancel(klog.NewContext(context.Background(), p.logger))
	p.listener, p.cancel, p.started = ln, cancel, true
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(logWriter{p}, "", 0),
	}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.logger.Error(err, "Serving stopped")
		}
	}()
	go func() {
		defer p.wg.Done()
		select {
		case <-ctx.Done():
			go func() { _ = p.Close() }() // Close waits for this goroutine
		case <-base.Done():
		}
	}()
	p.logger.V(2).Info("Proxying", "url", p.url(), "upstream", p.upstream.Host)
	return nil
}

// URL is the proxy's address, http://127.0.0.1:PORT, for clients that take a server URL;
// empty before Start.
func (p *Proxy) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url()
}

func (p *Proxy) url() string {
	if p.listener == nil {
		return ""
	}
	return "http://" + p.listener.Addr().String()
}

// Config returns a rest.Config for clients that should go through the proxy (call it after
// Start): Host is URL(),
// no TLS and no credentials (the proxy authenticates upstream), and the upstream's QPS,
// Burst, content types, user agent and timeout, so a client behaves as it would direct.
// Impersonation set on it passes through, so tests can act as a ServiceAccount.
func (p *Proxy) Config() *rest.Config {
	return &rest.Config{
		Host: p.URL(),
		ContentConfig: rest.ContentConfig{
			ContentType:        p.upstream.ContentType,
			AcceptContentTypes: p.upstream.AcceptContentTypes,
		},
		QPS:       p.upstream.QPS,
		Burst:     p.upstream.Burst,
		UserAgent: p.upstream.UserAgent,
		Timeout:   p.upstream.Timeout,
	}
}

// Close stops the proxy: held and open requests end at once (their clients see the
// connection drop), and Close returns when every goroutine of the proxy has stopped. It is
// safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closing = true
	srv, cancel := p.srv, p.cancel
	p.mu.Unlock()
	var err error
	if cancel != nil {
		cancel()
	}
	if srv != nil {
		if cerr := srv.Close(); cerr != nil {
			err = fmt.Errorf("faultproxy: closing the server: %w", cerr)
		}
	}
	p.wg.Wait()
	utilnet.CloseIdleConnectionsFor(p.transport)
	p.logger.V(2).Info("Closed")
	return err
}

// enter counts a request in unless the proxy is closing, so Close can wait for it.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	p.wg.Add(1)
	return true
}

// logWriter sends net/http's and httputil's log lines (aborted streams, mostly) to klog at a
// verbosity tests do not print by default.
type logWriter struct{ p *Proxy }

func (w logWriter) Write(b []byte) (int, error) {
	w.p.logger.V(4).Info(strings.TrimSpace(string(b)))
	return len(b), nil
}
