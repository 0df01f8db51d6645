package server

import (
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/path"
)

// anonymousOnlyOn lets a request without credentials through as system:anonymous only on
// the paths that skip authorization (--authorization-always-allow-paths, matched by
// k8s.io/apiserver's own path authorizer), so that it is answered 401 everywhere else, as
// kube-apiserver does with anonymous authentication restricted to paths
// (AuthenticationConfiguration anonymous.conditions).
//
// kube-controller-manager lets it through as anonymous on every path, to be answered 403
// by the authorizer; but a 403 tells a scraper with a missing token that it lacks a role
// rather than a token. Credentials that were presented and failed are never anonymous:
// delegate's error stands.
func anonymousOnlyOn(delegate authenticator.Request, alwaysAllowPaths []string) (authenticator.Request, error) {
	allowed, err := path.NewAuthorizer(alwaysAllowPaths)
	if err != nil {
		return nil, err
	}
	anonymous := &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}}
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := delegate.AuthenticateRequest(req)
		if ok || err != nil {
			return resp, ok, err
		}
		decision, _, _ := allowed.Authorize(req.Context(), authorizer.AttributesRecord{Path: req.URL.Path, Verb: "get"})
		if decision != authorizer.DecisionAllow {
			return nil, false, nil
		}
		return anonymous, true, nil
	}), nil
}
