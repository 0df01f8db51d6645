package main

import (
	"context"

	"github.com/migration-aware/adc/pkg/server"
)

// serve opens adc's listeners and serves srv on them until ctx ends: the secure port
// (unless --secure-port=0) with delegated authentication and authorization through
// kubeconfig's API server, and the plain HTTP listener on loopback if --http-addr asks for
// one. Both are bound before it returns, so a taken port or a refused address fails the
// start; what fails later arrives on the returned channel.
func serve(ctx context.Context, srv *server.Server, opts *server.Options, kubeconfig string) (chan error, error) {
	errs := make(chan error, 2)
	secure, err := opts.SecureConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	if opts.HTTPAddr != "" {
		l, err := server.ListenLoopback(opts.HTTPAddr)
		if err != nil {
			if secure != nil {
				_ = secure.Close()
			}
			return nil, err
		}
		go func() { errs <- srv.Serve(ctx, l) }()
	}
	if secure != nil {
		go func() { errs <- srv.ServeSecure(ctx, secure) }()
	}
	return errs, nil
}
