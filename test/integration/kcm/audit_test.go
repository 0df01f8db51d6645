package kcm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/kcm"
	"github.com/migration-aware/adc/test/integration/framework"
)

// adcUser is who adc's requests are made as inside kube-controller-manager with
// --use-service-account-credentials: the ServiceAccount of its client identity.
const adcUser = "system:serviceaccount:kube-system:" + kcm.Identity

// bootstrapRole is the ClusterRole the bootstrap policy binds to that ServiceAccount.
const bootstrapRole = "system:controller:" + kcm.Identity

// checkAudit is the package's check after the tests: no request of adc's ServiceAccount was
// refused (403), and the bootstrap role, or the ClusterRole docs/kube-controller-manager.md
// tells a distribution to add for the seed APIs (deploy/kube-controller-manager), grants
// every request it made (what they did not grant was either refused or granted by another
// binding, such as system:discovery). The informers adc registers on the host's factory are
// not among them: kube-controller-manager's shared informers run as kube-controller-manager
// itself, system:kube-controller-manager, as in a cluster; nothing of that identity may be
// refused either.
func checkAudit(cp *framework.ControlPlane) error {
	reqs, err := framework.ReadAudit(cp)
	if err != nil {
		return err
	}
	role, err := cp.Client.RbacV1().ClusterRoles().Get(context.Background(), bootstrapRole, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the bootstrap ClusterRole %s: %w", bootstrapRole, err)
	}
	seedRole, _, err := readSeedAPIRBAC()
	if err != nil {
		return err
	}
	rules := slices.Concat(role.Rules, seedRole.Rules)
	calls, paths := framework.CallsOf(reqs, adcUser, nil)
	var notGranted []string
	for _, c := range calls {
		if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return framework.RuleAllows(r, c) }) {
			notGranted = append(notGranted, "  "+c.String())
		}
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "kcm: %s made %d kinds of requests:\n", adcUser, len(calls))
		for _, c := range calls {
			fmt.Fprintf(os.Stderr, "  %s\n", c)
		}
		if len(paths) > 0 {
			fmt.Fprintf(os.Stderr, "  non-resource: %s\n", strings.Join(paths, " "))
		}
	}
	errs := []error{framework.CheckNoForbidden(reqs, adcUser), framework.CheckNoForbidden(reqs, kcmUser)}
	if len(notGranted) > 0 {
		errs = append(errs, fmt.Errorf("neither ClusterRole %s nor %s grants requests %s made (docs/kube-controller-manager.md, Permissions, must say what to add):\n%s",
			bootstrapRole, seedAPIRBAC, adcUser, strings.Join(notGranted, "\n")))
	}
	return errors.Join(errs...)
}
