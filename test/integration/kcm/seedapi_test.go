package kcm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/migration-aware/adc/pkg/kcm"
	"github.com/migration-aware/adc/test/integration/framework"
)

// repoDir is the repository's root, from this package's folder.
var repoDir = filepath.Join("..", "..", "..")

// seedAPIRBAC is the RBAC docs/kube-controller-manager.md tells a distribution to add for
// adc's seed-API sources.
var seedAPIRBAC = filepath.Join(repoDir, "deploy", "kube-controller-manager", "seed-api-rbac.yaml")

// With the seed-API sources (--adc-node-migration-source=auto, --adc-driver-info-source=auto)
// adc reads CSINodeInfos and seed CSIDrivers as the attachdetach-controller ServiceAccount,
// which the bootstrap role does not let list them. With the CRDs and the RBAC of
// deploy/kube-controller-manager applied, as the docs say, it reads both and attaches, and
// the package's audit check finds no 403.
func TestSeedAPISourcesWithDocumentedRBAC(t *testing.T) {
	// Its own instance, with other flags: adc must be alone on the cluster.
	stopOperatorKCM()
	cp := framework.Get(t)
	ctx := t.Context()
	installSeedCRDs(ctx, t, cp)
	applySeedAPIRBAC(ctx, t, cp)

	c := newCluster(t)
	const driver = "seed.csi.kcm.example.com"
	c.attacher(driver)
	node := c.node("n1", driver)
	i := startT(t, "seed", options{lease: c.ns, extra: []string{
		"--" + kcm.FlagNodeSource + "=auto", "--" + kcm.FlagDriverSource + "=auto"}})

	for _, resource := range []string{"csinodeinfos", "csidrivers"} {
		framework.Eventually(ctx, t, "adc reading csi.storage.k8s.io "+resource+" as "+adcUser, 60*time.Second, func(context.Context) (bool, string) {
			return seedReads(cp, resource)
		})
	}
	framework.Eventually(ctx, t, "kube-controller-manager "+i.name+" leading, adc healthy", 60*time.Second, i.runsADC)
	c.pod("app", node, csiPV(c.ns+"-vol", driver, c.ns+"-handle"))
	c.attachedCSI(node, driver, c.ns+"-handle", 30*time.Second)
}

// seedReads reports whether adc's ServiceAccount has listed or watched the seed-API resource
// (csi.storage.k8s.io) successfully, and what it got so far.
func seedReads(cp *framework.ControlPlane, resource string) (bool, string) {
	reqs, err := framework.ReadAudit(cp)
	if err != nil {
		return false, err.Error()
	}
	codes := map[int]int{}
	for _, r := range reqs {
		if r.User == adcUser && r.APIGroup == "csi.storage.k8s.io" && r.Resource == resource && (r.Verb == "list" || r.Verb == "watch") {
			codes[r.Code]++
		}
	}
	return codes[200] > 0, fmt.Sprintf("list and watch responses by code: %v", codes)
}

// installSeedCRDs creates the CRDs of deploy/crds (left in place: the other tests do not read
// them, and other runs of this one reuse them).
func installSeedCRDs(ctx context.Context, t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoDir, "deploy", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("finding deploy/crds/*.yaml: %v (%d files)", err, len(files))
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, f := range files {
		docs, err := yamlDocs(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docs {
			crd := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &crd.Object); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if _, err := cp.Dynamic.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("creating CRD %s from %s: %v", crd.GetName(), f, err)
			}
		}
	}
}

// readSeedAPIRBAC parses seedAPIRBAC: a ClusterRole and a ClusterRoleBinding of it.
func readSeedAPIRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, error) {
	docs, err := yamlDocs(seedAPIRBAC)
	if err != nil {
		return nil, nil, err
	}
	if len(docs) != 2 {
		return nil, nil, fmt.Errorf("%s: %d objects, want a ClusterRole and a ClusterRoleBinding", seedAPIRBAC, len(docs))
	}
	role, binding := &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}
	for i, obj := range []any{role, binding} {
		if err := yaml.UnmarshalStrict(docs[i], obj); err != nil {
			return nil, nil, fmt.Errorf("%s object %d: %w", seedAPIRBAC, i+1, err)
		}
	}
	if role.Kind != "ClusterRole" || binding.Kind != "ClusterRoleBinding" || binding.RoleRef.Name != role.Name {
		return nil, nil, fmt.Errorf("%s: want a ClusterRole and a ClusterRoleBinding of it, got %s %s and %s %s of %s",
			seedAPIRBAC, role.Kind, role.Name, binding.Kind, binding.Name, binding.RoleRef.Name)
	}
	return role, binding, nil
}

// applySeedAPIRBAC creates the ClusterRole and ClusterRoleBinding of seedAPIRBAC, and
// deletes them when the test ends (after its kube-controller-manager stopped).
func applySeedAPIRBAC(ctx context.Context, t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	role, binding, err := readSeedAPIRBAC()
	if err != nil {
		t.Fatal(err)
	}
	rbac := cp.Client.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ClusterRole %s: %v", role.Name, err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ClusterRoleBinding %s: %v", binding.Name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = rbac.ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
}

// yamlDocs returns the non-empty YAML documents of a file.
func yamlDocs(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}
