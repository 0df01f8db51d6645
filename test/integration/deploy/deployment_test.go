package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/test/integration/framework"
)

// The Deployment is what the issue asks for and agrees with the rest of the manifests, the
// binary and the image: it runs as the bound ServiceAccount with flags the binary accepts,
// probes and the Service use the secure port over HTTPS, plain HTTP is on the Pod's loopback
// only, and its Pod passes the "restricted" Pod Security Standard the namespace enforces.
func TestDeploymentManifest(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	m := applyManifests(ctx, t)
	d := m.Deployment
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	psc, csc := ptr.Deref(pod.SecurityContext, v1.PodSecurityContext{}), ptr.Deref(c.SecurityContext, v1.SecurityContext{})
	port := containerPort(c, "https")
	dockerUser := dockerfileUser(t)

	for _, tc := range []struct {
		name string
		ok   bool
		got  any
	}{
		{"2 replicas", ptr.Deref(d.Spec.Replicas, 1) == 2, d.Spec.Replicas},
		{"runs as the ServiceAccount", pod.ServiceAccountName == m.ServiceAccount.Name, pod.ServiceAccountName},
		{"a ClusterRoleBinding binds the ClusterRole to the ServiceAccount", m.bindsClusterRole(adcClusterRole), m.ClusterRoleBindings},
		{"a RoleBinding binds the Role to the ServiceAccount", m.bindsRole(m.Role.Namespace, "Role", adcRole), m.RoleBindings},
		{"the secure port may review tokens and access (system:auth-delegator)", m.bindsClusterRole("system:auth-delegator"), m.ClusterRoleBindings},
		{"the secure port may read the client CA (kube-system extension-apiserver-authentication-reader)", m.bindsRole("kube-system", "Role", "extension-apiserver-authentication-reader"), m.RoleBindings},
		{"no other role is bound", len(m.ClusterRoleBindings) == 2 && len(m.RoleBindings) == 2, []any{m.ClusterRoleBindings, m.RoleBindings}},
		{"runs the controller", len(c.Args) > 0 && c.Args[0] == "controller", c.Args},
		{"elects in the Role's namespace", slices.Contains(c.Args, "--leader-elect-namespace="+m.Role.Namespace), c.Args},
		{"serves HTTPS on 8443", slices.Contains(c.Args, "--secure-port=8443") && port == 8443 && len(c.Ports) == 1, c.Args},
		{"plain HTTP on the Pod's loopback only", slices.Contains(c.Args, "--http-addr=127.0.0.1:8080") && !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--profiling") }), c.Args},
		{"liveness probe GET /healthz over HTTPS", httpsProbe(c.LivenessProbe, "/healthz"), c.LivenessProbe},
		{"readiness probe GET /readyz over HTTPS", httpsProbe(c.ReadinessProbe, "/readyz"), c.ReadinessProbe},
		{"resource requests and limits", !c.Resources.Requests.Cpu().IsZero() && !c.Resources.Requests.Memory().IsZero() && !c.Resources.Limits.Cpu().IsZero() && !c.Resources.Limits.Memory().IsZero(), c.Resources},
		{"non-root", ptr.Deref(psc.RunAsNonRoot, false) && ptr.Deref(csc.RunAsNonRoot, false), []any{psc.RunAsNonRoot, csc.RunAsNonRoot}},
		{"runs as the image's user 65532", ptr.Deref(csc.RunAsUser, 0) == 65532 && ptr.Deref(psc.RunAsUser, 0) == 65532 && dockerUser == "65532", []any{psc.RunAsUser, csc.RunAsUser, "Dockerfile USER " + dockerUser}},
		{"read-only root filesystem", ptr.Deref(csc.ReadOnlyRootFilesystem, false), csc.ReadOnlyRootFilesystem},
		{"no privilege escalation", csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation, csc.AllowPrivilegeEscalation},
		{"drops all capabilities", csc.Capabilities != nil && slices.Equal(csc.Capabilities.Drop, []v1.Capability{"ALL"}) && len(csc.Capabilities.Add) == 0, csc.Capabilities},
		{"RuntimeDefault seccomp profile", csc.SeccompProfile != nil && csc.SeccompProfile.Type == v1.SeccompProfileTypeRuntimeDefault, csc.SeccompProfile},
		{"Service adc-metrics on 8443 to the https port", m.Service.Name == "adc-metrics" && len(m.Service.Spec.Ports) == 1 && m.Service.Spec.Ports[0].Port == 8443 && m.Service.Spec.Ports[0].TargetPort.String() == "https", m.Service.Spec.Ports},
		{"Service selects the Deployment's pods", len(m.Service.Spec.Selector) > 0 && labels.SelectorFromSet(m.Service.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)), m.Service.Spec.Selector},
		{"namespace enforces the restricted Pod Security Standard", m.Namespace.Labels["pod-security.kubernetes.io/enforce"] == "restricted", m.Namespace.Labels},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Errorf("got %+v", tc.got)
			}
		})
	}

	t.Run("the binary accepts the arguments", func(t *testing.T) {
		args := append(append(append([]string{}, c.Command...), c.Args...), "--help")
		if out, err := exec.Command(adcBinary, args...).CombinedOutput(); err != nil {
			t.Errorf("adc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})

	t.Run("its Pod is admitted in the namespace", func(t *testing.T) {
		// Server-side dry run: Pod Security admission (restricted), ServiceAccount admission
		// and validation, without running anything.
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: d.Name + "-", Namespace: d.Namespace, Labels: d.Spec.Template.Labels}, Spec: *pod.DeepCopy()}
		_, err := framework.Get(t).Client.CoreV1().Pods(d.Namespace).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
		if err != nil {
			t.Errorf("the Deployment's Pod is refused: %v", err)
		}
	})
}

// httpsProbe reports whether p GETs path on the https port over HTTPS.
func httpsProbe(p *v1.Probe, path string) bool {
	return p != nil && p.HTTPGet != nil && p.HTTPGet.Path == path && p.HTTPGet.Port.String() == "https" && p.HTTPGet.Scheme == v1.URISchemeHTTPS
}

// bindsClusterRole reports whether a ClusterRoleBinding binds ClusterRole name to adc's
// ServiceAccount.
func (m *manifests) bindsClusterRole(name string) bool {
	return slices.ContainsFunc(m.ClusterRoleBindings, func(b *rbacv1.ClusterRoleBinding) bool {
		return b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == name && bindsServiceAccount(b.Subjects, m)
	})
}

// bindsRole reports whether a RoleBinding in namespace binds the role (kind Role or
// ClusterRole) to adc's ServiceAccount.
func (m *manifests) bindsRole(namespace, kind, name string) bool {
	return slices.ContainsFunc(m.RoleBindings, func(b *rbacv1.RoleBinding) bool {
		return b.Namespace == namespace && b.RoleRef.Kind == kind && b.RoleRef.Name == name && bindsServiceAccount(b.Subjects, m)
	})
}

func containerPort(c v1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func bindsServiceAccount(subjects []rbacv1.Subject, m *manifests) bool {
	for _, s := range subjects {
		if s.Kind == "ServiceAccount" && s.Name == m.ServiceAccount.Name && s.Namespace == m.ServiceAccount.Namespace {
			return true
		}
	}
	return false
}

// dockerfileUser returns the USER of the Dockerfile's final stage (uid only).
func dockerfileUser(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "Dockerfile"))
	if err != nil {
		t.Fatalf("reading the Dockerfile: %v", err)
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\d+)`).FindAllStringSubmatch(string(raw), -1)
	if len(users) == 0 {
		return fmt.Sprintf("none in %d bytes", len(raw))
	}
	return users[len(users)-1][1]
}
