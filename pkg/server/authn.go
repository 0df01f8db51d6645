package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	unionauth "k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// delegatedAuthn is the secure port's authentication: the request authenticator, and the
// CAs a client certificate may be signed by (for the TLS handshake to ask for one).
type delegatedAuthn struct {
	request  authenticator.Request
	clientCA dynamiccertificates.CAContentProvider
}

// authenticator builds what k8s.io/apiserver's DelegatingAuthenticationOptions.ApplyTo
// builds, in the same order: the front proxy's headers (with a client certificate signed
// by the request-header CA), then client certificates (the client CA), then bearer tokens
// (TokenReview, answers cached for CacheTTL). What the flags do not give is looked up in
// ConfigMap kube-system/extension-apiserver-authentication unless SkipInClusterLookup, and
// kept current. No anonymous user: anonymousOnlyOn adds it where it is allowed.
func (o *AuthenticationOptions) authenticator(client kubernetes.Interface) (*delegatedAuthn, error) {
	var err error
	logger := klog.Background()
	var authns []authenticator.Request
	var cas []dynamiccertificates.CAContentProvider

	// The front proxy first.
	var frontProxy *requestHeader
	switch {
	case o.RequestHeader.ClientCAFile != "":
		frontProxy, err = o.RequestHeader.fromFlags()
	case !o.SkipInClusterLookup:
		frontProxy, err = requestHeaderFromCluster(client)
		if err != nil && o.TolerateInClusterLookupFailure {
			logger.Error(err, "Looking up the front proxy's configuration in the cluster failed; continuing without it, as --authentication-tolerate-lookup-failure says",
				"configMap", authenticationConfigMapNamespace+"/"+authenticationConfigMapName)
			frontProxy, err = nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if frontProxy != nil {
		authns = append(authns, headerrequest.NewDynamicVerifyOptionsSecure(frontProxy.ca.VerifyOptions,
			frontProxy.allowedNames, frontProxy.usernames, frontProxy.uids, frontProxy.groups, frontProxy.extraPrefixes))
		cas = append(cas, frontProxy.ca)
	}

	// Client certificates.
	var clientCA dynamiccertificates.CAContentProvider
	switch {
	case o.ClientCAFile != "":
		if clientCA, err = dynamiccertificates.NewDynamicCAContentFromFile("client-ca-bundle", o.ClientCAFile); err != nil {
			return nil, fmt.Errorf("loading --client-ca-file %s: %w", o.ClientCAFile, err)
		}
	case !o.SkipInClusterLookup:
		if clientCA, err = dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca", authenticationConfigMapNamespace,
			authenticationConfigMapName, "client-ca-file", client); err != nil {
			return nil, fmt.Errorf("watching the client CA in ConfigMap %s/%s: %w", authenticationConfigMapNamespace, authenticationConfigMapName, err)
		}
	}
	if clientCA != nil {
		authns = append(authns, x509request.NewDynamic(clientCA.VerifyOptions, x509request.CommonNameUserConversion))
		cas = append(cas, clientCA)
	}

	// Bearer tokens.
	reviewer := &tokenReviewer{client: client.AuthenticationV1().TokenReviews(), backoff: o.RetryBackoff, timeout: o.RequestTimeout}
	authns = append(authns, bearertoken.New(tokencache.New(reviewer, false, o.CacheTTL, o.CacheTTL)))

	a := &delegatedAuthn{request: authenticatedGroupAdder{unionauth.New(authns...)}}
	switch len(cas) {
	case 0:
	case 1:
		a.clientCA = cas[0]
	default:
		a.clientCA = dynamiccertificates.NewUnionCAContentProvider(cas...)
	}
	return a, nil
}

// authenticatedGroupAdder puts every authenticated user in system:authenticated, as
// k8s.io/apiserver does (group.AuthenticatedGroupAdder).
type authenticatedGroupAdder struct{ authenticator.Request }

func (g authenticatedGroupAdder) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	resp, ok, err := g.Request.AuthenticateRequest(req)
	if !ok || err != nil || resp.User.GetName() == user.Anonymous {
		return resp, ok, err
	}
	groups := resp.User.GetGroups()
	if sets.New(groups...).HasAny(user.AllAuthenticated, user.AllUnauthenticated) {
		return resp, ok, err
	}
	resp.User = &user.DefaultInfo{Name: resp.User.GetName(), UID: resp.User.GetUID(),
		Groups: append(append([]string(nil), groups...), user.AllAuthenticated), Extra: resp.User.GetExtra()}
	return resp, ok, err
}

// requestHeader is the front proxy's configuration: its CA and the headers it uses.
type requestHeader struct {
	ca                                                   dynamiccertificates.CAContentProvider
	usernames, uids, groups, extraPrefixes, allowedNames headerrequest.StringSliceProvider
}

// fromFlags is the front proxy given by --requestheader-client-ca-file and its headers.
func (o RequestHeaderOptions) fromFlags() (*requestHeader, error) {
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("request-header", o.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("loading --requestheader-client-ca-file %s: %w", o.ClientCAFile, err)
	}
	return &requestHeader{ca: ca,
		usernames: headerrequest.StaticStringSlice(o.UsernameHeaders), uids: headerrequest.StaticStringSlice(o.UIDHeaders),
		groups: headerrequest.StaticStringSlice(o.GroupHeaders), extraPrefixes: headerrequest.StaticStringSlice(o.ExtraHeaderPrefixes),
		allowedNames: headerrequest.StaticStringSlice(o.AllowedNames),
	}, nil
}

// requestHeaderFromCluster is the front proxy as the API server publishes it in ConfigMap
// kube-system/extension-apiserver-authentication, read once now (an error if it cannot be)
// and kept current while the secure port serves.
func requestHeaderFromCluster(client kubernetes.Interface) (*requestHeader, error) {
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca", authenticationConfigMapNamespace,
		authenticationConfigMapName, "requestheader-client-ca-file", client)
	if err != nil {
		return nil, fmt.Errorf("watching the front proxy's CA in ConfigMap %s/%s: %w", authenticationConfigMapNamespace, authenticationConfigMapName, err)
	}
	headers := headerrequest.NewRequestHeaderAuthRequestController(authenticationConfigMapName, authenticationConfigMapNamespace, client,
		"requestheader-username-headers", "requestheader-uid-headers", "requestheader-group-headers",
		"requestheader-extra-headers-prefix", "requestheader-allowed-names")
	p := &frontProxyController{ConfigMapCAController: ca, RequestHeaderAuthRequestController: headers}
	if err := p.RunOnce(context.TODO()); err != nil {
		return nil, fmt.Errorf("reading the front proxy's configuration in ConfigMap %s/%s: %w", authenticationConfigMapNamespace, authenticationConfigMapName, err)
	}
	return &requestHeader{ca: p,
		usernames: headerrequest.StringSliceProviderFunc(headers.UsernameHeaders), uids: headerrequest.StringSliceProviderFunc(headers.UIDHeaders),
		groups: headerrequest.StringSliceProviderFunc(headers.GroupHeaders), extraPrefixes: headerrequest.StringSliceProviderFunc(headers.ExtraHeaderPrefixes),
		allowedNames: headerrequest.StringSliceProviderFunc(headers.AllowedClientNames),
	}, nil
}

// frontProxyController keeps the front proxy's CA and headers current from the ConfigMap
// (k8s.io/apiserver's DynamicRequestHeaderController): it is the CA provider, and running it
// runs both watches.
type frontProxyController struct {
	*dynamiccertificates.ConfigMapCAController
	*headerrequest.RequestHeaderAuthRequestController
}

var (
	_ dynamiccertificates.ControllerRunner  = &frontProxyController{}
	_ dynamiccertificates.CAContentProvider = &frontProxyController{}
)

// RunOnce reads the ConfigMap for both.
func (c *frontProxyController) RunOnce(ctx context.Context) error {
	return errors.Join(c.ConfigMapCAController.RunOnce(ctx), c.RequestHeaderAuthRequestController.RunOnce(ctx))
}

// Run keeps both current until ctx ends.
func (c *frontProxyController) Run(ctx context.Context, workers int) {
	go c.ConfigMapCAController.Run(ctx, workers)
	go c.RequestHeaderAuthRequestController.Run(ctx, workers)
	<-ctx.Done()
}
