package deploy

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/test/integration/framework"
)

// The package's control plane keeps an audit log (TestMain), and after the tests checkAudit
// reads every request the ServiceAccount made, in-process and as the adc binary, and checks
// the shipped RBAC against them: nothing was refused, every call is granted by a role the
// manifests bind to the ServiceAccount (adc's ClusterRole and Role, and the built-in
// system:auth-delegator and extension-apiserver-authentication-reader of its secure port),
// and every verb those grant was used by the suite or is listed in grantsNotExercised with
// the code that uses it.

// forbiddenProbeAgent is the User-Agent of the tests' own requests as the ServiceAccount
// that must be refused (checkForbiddenWrites); the audit checks leave them out.
const forbiddenProbeAgent = "deploy-test-forbidden-probe"

// shippedRBAC names the manifests' RBAC in failure messages.
const shippedRBAC = "deploy/kubernetes/rbac.yaml"

// grantsNotExercised are the grants of the shipped role the suite cannot make adc use,
// each with the code that does. A grant neither used nor listed here fails the suite: drop
// it from deploy/kubernetes/rbac.yaml, or say here which code needs it.
var grantsNotExercised = map[string]string{
	// The suite reads the seed APIs only in-process (TestControllerRunsAsServiceAccount, with
	// both sources auto), whose client-go streams its lists (WatchListClient: verb watch); the
	// binary, which lists plainly, runs the Deployment's default sources (csinode, csidriver).
	"list csinodeinfos.csi.storage.k8s.io": "pkg/adc csinodeinfo.go: the dynamic informer of --node-migration-source=csinodeinfo|auto lists where the API server does not stream lists",
	"list csidrivers.csi.storage.k8s.io":   "pkg/adc seedcsidriver.go: the dynamic informer of --driver-info-source=seed|auto lists where the API server does not stream lists",
	// Only when an operator opens the dashboard's /preflight page.
	"list storageclasses.storage.k8s.io": "pkg/preflight List (internal/serving Checks): the /preflight page and /api/v1/preflight check in-tree StorageClasses",
}

// checkAudit is the package's AfterTests: the RBAC checks over the whole suite's audit log.
// The check that every grant is used runs only when every test of the package ran and passed.
func checkAudit(cp *framework.ControlPlane, passed bool) error {
	m, err := readManifests()
	if err != nil {
		return err
	}
	reqs, err := framework.ReadAudit(cp)
	if err != nil {
		return err
	}
	user := m.serviceAccountUser()
	grants, err := m.boundGrants(context.Background(), cp.Client)
	if err != nil {
		return err
	}
	calls, paths := framework.CallsOf(reqs, user, grants.namedResource, forbiddenProbeAgent)
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "deploy: %s made %d kinds of requests:\n", user, len(calls))
		for _, c := range calls {
			fmt.Fprintf(os.Stderr, "  %s\n", c)
		}
		fmt.Fprintf(os.Stderr, "  non-resource (built-in system:discovery role): %s\n", strings.Join(paths, " "))
	}
	errs := []error{
		framework.CheckNoForbidden(reqs, user, forbiddenProbeAgent),
		m.checkCallsGranted(grants, calls),
	}
	switch {
	case !wholeSuite():
		fmt.Fprintln(os.Stderr, "deploy: not every test ran (-run or -skip): the check that every granted verb is used is skipped")
	case !passed:
		fmt.Fprintln(os.Stderr, "deploy: a test failed: the check that every granted verb is used is skipped")
	default:
		errs = append(errs, checkGrantsUsed(grants, calls))
	}
	return errors.Join(errs...)
}

// wholeSuite reports whether every test of the package ran (no -run, no -skip).
func wholeSuite() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}

// grant is one verb on one resource that a rule of the shipped RBAC grants.
type grant struct {
	role      string // "ClusterRole adc" or "Role adc-system/adc-leader-election"
	namespace string // the RoleBinding's namespace; empty for a ClusterRoleBinding
	rule      rbacv1.PolicyRule
}

// grants are what the manifests' bindings grant adc's ServiceAccount.
type grants []grant

func (g grant) String() string {
	c := framework.Call{Verb: g.rule.Verbs[0], APIGroup: g.rule.APIGroups[0], Resource: g.rule.Resources[0], Namespace: g.namespace}
	s := c.String()
	if len(g.rule.ResourceNames) > 0 {
		s += " (names " + strings.Join(g.rule.ResourceNames, ",") + ")"
	}
	return s
}

func (g grant) allows(c framework.Call) bool {
	return (g.namespace == "" || g.namespace == c.Namespace) && framework.RuleAllows(g.rule, c)
}

// boundGrants resolves every binding of the manifests whose subjects include adc's
// ServiceAccount to its role (from the manifests, or from the API server for the built-in
// roles they bind) and splits the role's resource rules into one grant per verb, group and
// resource. A binding to a role that exists nowhere is an error.
func (m *manifests) boundGrants(ctx context.Context, client kubernetes.Interface) (grants, error) {
	var out grants
	add := func(role, ns string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			for _, v := range r.Verbs {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						out = append(out, grant{role: role, namespace: ns, rule: rbacv1.PolicyRule{
							Verbs: []string{v}, APIGroups: []string{g}, Resources: []string{res}, ResourceNames: r.ResourceNames}})
					}
				}
			}
		}
	}
	rules := func(ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, error) {
		if ref.Kind == "ClusterRole" {
			if r := m.clusterRole(ref.Name); r != nil {
				return r.Rules, nil
			}
			r, err := client.RbacV1().ClusterRoles().Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("%s binds ClusterRole %s, which neither it nor the API server has: %w", shippedRBAC, ref.Name, err)
			}
			return r.Rules, nil
		}
		if r := m.role(ns, ref.Name); r != nil {
			return r.Rules, nil
		}
		r, err := client.RbacV1().Roles(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s binds Role %s/%s, which neither it nor the API server has: %w", shippedRBAC, ns, ref.Name, err)
		}
		return r.Rules, nil
	}
	for _, b := range m.ClusterRoleBindings {
		if !bindsServiceAccount(b.Subjects, m) {
			continue
		}
		r, err := rules(b.RoleRef, "")
		if err != nil {
			return nil, err
		}
		add(b.RoleRef.Kind+" "+b.RoleRef.Name, "", r)
	}
	for _, b := range m.RoleBindings {
		if !bindsServiceAccount(b.Subjects, m) {
			continue
		}
		r, err := rules(b.RoleRef, b.Namespace)
		if err != nil {
			return nil, err
		}
		add(b.RoleRef.Kind+" "+b.Namespace+"/"+b.RoleRef.Name, b.Namespace, r)
	}
	return out, nil
}

// namedResource reports whether a rule of the shipped RBAC names the resources of the call's
// kind, so that the call's object name matters.
func (gs grants) namedResource(c framework.Call) bool {
	return slices.ContainsFunc(gs, func(g grant) bool {
		if len(g.rule.ResourceNames) == 0 {
			return false
		}
		r := g.rule
		r.ResourceNames, r.Verbs = nil, []string{c.Verb}
		return framework.RuleAllows(r, c)
	})
}

// checkCallsGranted checks that a role the manifests bind grants every call: what the
// server's authorizer decided (and CheckNoForbidden saw) could also have come from another
// binding.
func (m *manifests) checkCallsGranted(gs grants, calls []framework.Call) error {
	var missing []string
	for _, c := range calls {
		if !slices.ContainsFunc(gs, func(g grant) bool { return g.allows(c) }) {
			missing = append(missing, "  "+c.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s made requests that no role bound to it in %s grants:\n%s",
			m.serviceAccountUser(), shippedRBAC, strings.Join(missing, "\n"))
	}
	return nil
}

// checkGrantsUsed checks that every grant was used by a call of the suite, or is listed in
// grantsNotExercised; and that every entry there still names a grant.
func checkGrantsUsed(gs grants, calls []framework.Call) error {
	var unused, stale []string
	listed := map[string]bool{}
	for _, g := range gs {
		key := g.String()
		if _, ok := grantsNotExercised[key]; ok {
			listed[key] = true
			continue
		}
		if !slices.ContainsFunc(calls, g.allows) {
			unused = append(unused, fmt.Sprintf("  %s (%s)", key, g.role))
		}
	}
	for key := range grantsNotExercised {
		if !listed[key] {
			stale = append(stale, "  "+key)
		}
	}
	var errs []error
	if len(unused) > 0 {
		errs = append(errs, fmt.Errorf("%s grants what adc never used in this suite; drop it, or list it in grantsNotExercised with the code that uses it:\n%s",
			shippedRBAC, strings.Join(unused, "\n")))
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		errs = append(errs, fmt.Errorf("grantsNotExercised lists what %s no longer grants:\n%s", shippedRBAC, strings.Join(stale, "\n")))
	}
	return errors.Join(errs...)
}
