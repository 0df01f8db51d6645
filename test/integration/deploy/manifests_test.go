package deploy

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

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/migration-aware/adc/test/integration/framework"
)

// manifestDir is deploy/kubernetes, the kustomization an operator applies.
var manifestDir = filepath.Join("..", "..", "..", "deploy", "kubernetes")

// manifests are the objects of deploy/kubernetes, parsed strictly (an unknown or misspelt
// field fails the test) into their Go types.
type manifests struct {
	Namespace      *v1.Namespace
	ServiceAccount *v1.ServiceAccount
	// ClusterRole and Role are adc's own (named "adc" and "adc-leader-election"), among all
	// the roles and bindings of the manifests: adc's, and those for its readers (access.yaml).
	ClusterRole         *rbacv1.ClusterRole
	Role                *rbacv1.Role
	ClusterRoles        []*rbacv1.ClusterRole
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
	Roles               []*rbacv1.Role
	RoleBindings        []*rbacv1.RoleBinding
	Deployment          *appsv1.Deployment
	Service             *v1.Service
	// CRDs stay unstructured: the test only installs them.
	CRDs []*unstructured.Unstructured
}

// Names of adc's own roles in deploy/kubernetes/rbac.yaml.
const (
	adcClusterRole = "adc"
	adcRole        = "adc-leader-election"
)

// clusterRole returns the manifests' ClusterRole name, or nil.
func (m *manifests) clusterRole(name string) *rbacv1.ClusterRole {
	for _, r := range m.ClusterRoles {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// role returns the manifests' Role namespace/name, or nil.
func (m *manifests) role(namespace, name string) *rbacv1.Role {
	for _, r := range m.Roles {
		if r.Namespace == namespace && r.Name == name {
			return r
		}
	}
	return nil
}

// serviceAccountUser is the user name the API server gives the manifests' ServiceAccount.
func (m *manifests) serviceAccountUser() string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", m.ServiceAccount.Namespace, m.ServiceAccount.Name)
}

// loadManifests reads every resource the kustomization in dir lists, following folders
// (other kustomizations, such as deploy/crds) the way kustomize does.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	m, err := readManifests()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// readManifests is loadManifests outside a test.
func readManifests() (*manifests, error) {
	m := &manifests{}
	if err := m.loadKustomization(manifestDir); err != nil {
		return nil, err
	}
	m.ClusterRole = m.clusterRole(adcClusterRole)
	for _, r := range m.Roles {
		if r.Name == adcRole {
			m.Role = r
		}
	}
	var errs []error
	for _, kind := range []struct {
		name    string
		missing bool
	}{
		{"Namespace", m.Namespace == nil}, {"ServiceAccount", m.ServiceAccount == nil},
		{"ClusterRole " + adcClusterRole, m.ClusterRole == nil}, {"Role " + adcRole, m.Role == nil},
		{"Deployment", m.Deployment == nil}, {"Service", m.Service == nil}, {"CustomResourceDefinition", len(m.CRDs) == 0},
	} {
		if kind.missing {
			errs = append(errs, fmt.Errorf("%s: no %s in the kustomization", manifestDir, kind.name))
		}
	}
	return m, errors.Join(errs...)
}

func (m *manifests) loadKustomization(dir string) error {
	var raw []byte
	var err error
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if raw, err = os.ReadFile(filepath.Join(dir, name)); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("%s has no kustomization: %w", dir, err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		return fmt.Errorf("parsing the kustomization in %s: %w", dir, err)
	}
	for _, r := range k.Resources {
		path := filepath.Join(dir, r)
		info, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("kustomization in %s lists %s: %w", dir, r, err)
		}
		if info.IsDir() {
			err = m.loadKustomization(path)
		} else {
			err = m.loadFile(path)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// loadFile parses the YAML documents of one file into their Go types.
func (m *manifests) loadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	docs := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		if err := m.add(doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}

func (m *manifests) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	switch tm.GroupVersionKind() {
	case v1.SchemeGroupVersion.WithKind("Namespace"):
		return setOnce(&m.Namespace, doc, tm.Kind)
	case v1.SchemeGroupVersion.WithKind("ServiceAccount"):
		return setOnce(&m.ServiceAccount, doc, tm.Kind)
	case v1.SchemeGroupVersion.WithKind("Service"):
		return setOnce(&m.Service, doc, tm.Kind)
	case rbacv1.SchemeGroupVersion.WithKind("ClusterRole"):
		return addTo(&m.ClusterRoles, doc, tm.Kind)
	case rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"):
		return addTo(&m.ClusterRoleBindings, doc, tm.Kind)
	case rbacv1.SchemeGroupVersion.WithKind("Role"):
		return addTo(&m.Roles, doc, tm.Kind)
	case rbacv1.SchemeGroupVersion.WithKind("RoleBinding"):
		return addTo(&m.RoleBindings, doc, tm.Kind)
	case appsv1.SchemeGroupVersion.WithKind("Deployment"):
		return setOnce(&m.Deployment, doc, tm.Kind)
	case crdResource.GroupVersion().WithKind("CustomResourceDefinition"):
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &crd.Object); err != nil {
			return err
		}
		m.CRDs = append(m.CRDs, crd)
		return nil
	}
	return fmt.Errorf("unexpected object %s %s: teach this test about it", tm.APIVersion, tm.Kind)
}

// setOnce parses doc strictly into a new T and stores it in *slot; a second object of the
// kind is an error (the tests assume one of each).
func setOnce[T any](slot **T, doc []byte, kind string) error {
	if *slot != nil {
		return fmt.Errorf("more than one %s", kind)
	}
	obj := new(T)
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	*slot = obj
	return nil
}

// addTo parses doc strictly into a new T and appends it to *list.
func addTo[T any](list *[]*T, doc []byte, kind string) error {
	obj := new(T)
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	*list = append(*list, obj)
	return nil
}

// crdResource addresses CustomResourceDefinitions through the dynamic client.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// applyManifests creates every object of deploy/kubernetes on the control plane, as an
// operator's `kubectl apply -k deploy/kubernetes` would (nothing runs the Deployment: the
// control plane has no controllers or nodes). Objects a previous test or run already
// created are left as they are; the manifests do not change while the package runs.
func applyManifests(ctx context.Context, t *testing.T) *manifests {
	t.Helper()
	m := loadManifests(t)
	cp := framework.Get(t)
	c := cp.Client
	create := func(what string, err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("applying %s from %s: %v", what, manifestDir, err)
		}
	}
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	var err error
	_, err = c.CoreV1().Namespaces().Create(ctx, m.Namespace, opts)
	create("Namespace "+m.Namespace.Name, err)
	for _, crd := range m.CRDs {
		_, err = cp.Dynamic.Resource(crdResource).Create(ctx, crd.DeepCopy(), opts)
		create("CustomResourceDefinition "+crd.GetName(), err)
	}
	_, err = c.CoreV1().ServiceAccounts(m.ServiceAccount.Namespace).Create(ctx, m.ServiceAccount, opts)
	create("ServiceAccount "+m.ServiceAccount.Name, err)
	for _, r := range m.ClusterRoles {
		_, err = c.RbacV1().ClusterRoles().Create(ctx, r, opts)
		create("ClusterRole "+r.Name, err)
	}
	for _, b := range m.ClusterRoleBindings {
		_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, b, opts)
		create("ClusterRoleBinding "+b.Name, err)
	}
	for _, r := range m.Roles {
		_, err = c.RbacV1().Roles(r.Namespace).Create(ctx, r, opts)
		create("Role "+r.Namespace+"/"+r.Name, err)
	}
	for _, b := range m.RoleBindings {
		_, err = c.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, opts)
		create("RoleBinding "+b.Namespace+"/"+b.Name, err)
	}
	_, err = c.CoreV1().Services(m.Service.Namespace).Create(ctx, m.Service, opts)
	create("Service "+m.Service.Name, err)
	_, err = c.AppsV1().Deployments(m.Deployment.Namespace).Create(ctx, m.Deployment, opts)
	create("Deployment "+m.Deployment.Name, err)
	return m
}
