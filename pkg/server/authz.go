package server

import (
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/client-go/kubernetes"
)

// authorizer builds what k8s.io/apiserver's DelegatingAuthorizationOptions.ApplyTo builds, in
// the same order: AlwaysAllowGroups, then AlwaysAllowPaths, then a SubjectAccessReview
// (answers cached for AllowCacheTTL and DenyCacheTTL). What none allows is forbidden.
func (o *AuthorizationOptions) authorizer(client kubernetes.Interface) (authorizer.Authorizer, error) {
	var authzs []authorizer.Authorizer
	if len(o.AlwaysAllowGroups) > 0 {
		authzs = append(authzs, privilegedGroups(o.AlwaysAllowGroups))
	}
	if len(o.AlwaysAllowPaths) > 0 {
		a, err := path.NewAuthorizer(o.AlwaysAllowPaths)
		if err != nil {
			return nil, err
		}
		authzs = append(authzs, a)
	}
	authzs = append(authzs, newAccessReviewer(client.AuthorizationV1().SubjectAccessReviews(), o))
	return union.New(authzs...), nil
}
