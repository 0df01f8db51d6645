package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/migration-aware/adc/internal/controlplane"
)

// shippedRBACFiles are the files of deploy/kubernetes that give adc its identity: the
// namespace, then the ServiceAccount and its ClusterRole, Role and bindings.
var shippedRBACFiles = []string{"namespace.yaml", "rbac.yaml"}

// deployDir returns deploy/kubernetes in the source tree this package was built from.
func deployDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "kubernetes")
}

// applyShippedRBAC creates the objects of shippedRBACFiles, as an operator's apply would,
// writes a kubeconfig that authenticates as the admin and impersonates the ServiceAccount
// (so adc gets exactly its permissions), and returns that kubeconfig and the user.
func (s *Stack) applyShippedRBAC(ctx context.Context) (kubeconfig, user string, err error) {
	var sa *v1.ServiceAccount
	for _, name := range shippedRBACFiles {
		path := filepath.Join(deployDir(), name)
		docs, err := yamlDocs(path)
		if err != nil {
			return "", "", err
		}
		for _, doc := range docs {
			obj, err := s.createManifest(ctx, doc)
			if err != nil {
				return "", "", fmt.Errorf("harness: %s: %w", path, err)
			}
			if a, ok := obj.(*v1.ServiceAccount); ok {
				sa = a
			}
		}
	}
	if sa == nil {
		return "", "", fmt.Errorf("harness: no ServiceAccount in %v of %s", shippedRBACFiles, deployDir())
	}
	user = "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	cfg := rest.CopyConfig(s.cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	kubeconfig = filepath.Join(s.Dir, "adc.kubeconfig")
	if err := controlplane.WriteKubeconfig(cfg, kubeconfig); err != nil {
		return "", "", fmt.Errorf("harness: %w", err)
	}
	return kubeconfig, user, nil
}

// createManifest creates one object of the RBAC files, parsed strictly into its Go type.
func (s *Stack) createManifest(ctx context.Context, doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	opts := metav1.CreateOptions{}
	var obj any
	var err error
	switch tm.Kind {
	case "Namespace":
		o := &v1.Namespace{}
		if err = yaml.UnmarshalStrict(doc, o); err == nil {
			obj, err = s.Client.CoreV1().Namespaces().Create(ctx, o, opts)
		}
	case "ServiceAccount":
		o := &v1.ServiceAccount{}
		if err = yaml.UnmarshalStrict(doc, o); err == nil {
			obj = o
			_, err = s.Client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, opts)
		}
	case "ClusterRole":
		o := &rbacv1.ClusterRole{}
		if err = yaml.UnmarshalStrict(doc, o); err == nil {
			obj, err = s.Client.RbacV1().ClusterRoles().Create(ctx, o, opts)
		}
	case "ClusterRoleBinding":
		o := &rbacv1.ClusterRoleBinding{}
		if err = yaml.UnmarshalStrict(doc, o); err == nil {
			obj, err = s.Client.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
		}
	case "Role":
		o := &rbacv1.Role{}
		if err = yaml.UnmarshalStrict(doc, o); err == nil {
			obj, err = s.Client.RbacV1().Roles(o.Namespace).Create(ctx, o, opts)
		}
	case "RoleBinding":
		o := &rbacv1.RoleBinding{}
		if err = yaml.UnmarshalStrict(doc, o); err == nil {
			obj, err = s.Client.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, opts)
		}
	default:
		return nil, fmt.Errorf("unexpected %s %s: teach the harness about it", tm.APIVersion, tm.Kind)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating %s: %w", tm.Kind, err)
	}
	return obj, nil
}

// yamlDocs returns the non-empty YAML documents of a file.
func yamlDocs(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
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
			return nil, fmt.Errorf("harness: reading %s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}
