package server

import (
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/path"
)

// anonymousOnlyOn limits the anonymous identity of a delegating authenticator to the paths
// that skip authorization (--authorization-always-allow-paths, matched by k8s.io/apiserver's
// own path authorizer), so that a request without valid credentials is answered 401
// everywhere else, as kube-apiserver does with anonymous authentication restricted to
// paths (AuthenticationConfiguration anonymous.conditions).
//
// DelegatingAuthenticationOptions.ApplyTo always appends an anonymous authenticator for
// every path, so a request without a token would otherwise reach the authorizer as
// system:anonymous and be answered 403; that is what kube-controller-manager does, but a
// 403 tells a scraper with a missing token that it lacks a role rather than a token. This
// checks no credential: tokens, client certificates and front-proxy headers are still
// verified by the delegating authenticator, and only its anonymous answer is dropped.
func anonymousOnlyOn(delegate authenticator.Request, alwaysAllowPaths []string) (authenticator.Request, error) {
	allowed, err := path.NewAuthorizer(alwaysAllowPaths)
	if err != nil {
		return nil, err
	}
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := delegate.AuthenticateRequest(req)
		if !ok || err != nil || resp.User.GetName() != user.Anonymous {
			return resp, ok, err
		}
		decision, _, _ := allowed.Authorize(req.Context(), authorizer.AttributesRecord{Path: req.URL.Path, Verb: "get"})
		if decision != authorizer.DecisionAllow {
			return nil, false, nil
		}
		return resp, ok, err
	}), nil
}
