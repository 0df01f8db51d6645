package harness

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdEstablishTimeout bounds the wait for the API server to serve a new CRD.
const crdEstablishTimeout = 30 * time.Second

// installCRDs creates the CRDs of Options.CRDs and waits until each is Established.
func (s *Stack) installCRDs(ctx context.Context) error {
	api := s.cp.Dynamic.Resource(crdResource)
	for _, path := range s.opts.CRDs {
		docs, err := yamlDocs(path)
		if err != nil {
			return err
		}
		for _, doc := range docs {
			crd := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &crd.Object); err != nil {
				return fmt.Errorf("harness: %s: %w", path, err)
			}
			if crd.GetKind() != "CustomResourceDefinition" {
				return fmt.Errorf("harness: %s: a %s, not a CustomResourceDefinition", path, crd.GetKind())
			}
			if _, err := api.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("harness: creating CRD %s (%s): %w", crd.GetName(), path, err)
			}
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
				cur, err := api.Get(ctx, crd.GetName(), metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
				for _, c := range conds {
					m, _ := c.(map[string]any)
					if m["type"] == "Established" && m["status"] == "True" {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				return fmt.Errorf("harness: CRD %s not Established within %s: %w", crd.GetName(), crdEstablishTimeout, err)
			}
		}
	}
	return nil
}

// applyRBAC creates the objects of Options.RBAC.
func (s *Stack) applyRBAC(ctx context.Context) error {
	for _, path := range s.opts.RBAC {
		docs, err := yamlDocs(path)
		if err != nil {
			return err
		}
		for _, doc := range docs {
			if _, err := s.createManifest(ctx, doc); err != nil {
				return fmt.Errorf("harness: %s: %w", path, err)
			}
		}
	}
	return nil
}
