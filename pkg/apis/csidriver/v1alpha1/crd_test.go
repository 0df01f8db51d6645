package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// crdManifest is the minimal subset of an apiextensions.k8s.io/v1 CRD this test checks.
type crdManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Scope string `json:"scope"`
		Names struct {
			Plural   string `json:"plural"`
			Singular string `json:"singular"`
			Kind     string `json:"kind"`
			ListKind string `json:"listKind"`
		} `json:"names"`
		Versions []struct {
			Name         string         `json:"name"`
			Served       bool           `json:"served"`
			Storage      bool           `json:"storage"`
			Subresources map[string]any `json:"subresources"`
			Schema       struct {
				OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

func TestCRDManifestMatchesGoTypes(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "deploy", "crds", "csi.storage.k8s.io_csidrivers.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading CRD manifest: %v", err)
	}
	var crd crdManifest
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatalf("parsing CRD manifest: %v", err)
	}
	if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" {
		t.Errorf("manifest is %s %s, want apiextensions.k8s.io/v1 CustomResourceDefinition", crd.APIVersion, crd.Kind)
	}
	if want := Resource + "." + GroupName; crd.Metadata.Name != want {
		t.Errorf("metadata.name = %q, want %q", crd.Metadata.Name, want)
	}
	if crd.Metadata.Annotations["api-approved.kubernetes.io"] == "" {
		t.Errorf("metadata.annotations lacks api-approved.kubernetes.io, which the API server requires for *.k8s.io groups")
	}
	if crd.Spec.Group != GroupName {
		t.Errorf("spec.group = %q, want %q", crd.Spec.Group, GroupName)
	}
	if crd.Spec.Scope != "Cluster" {
		t.Errorf("spec.scope = %q, want Cluster (the object is named after its driver)", crd.Spec.Scope)
	}
	if crd.Spec.Names.Plural != GroupVersionResource.Resource {
		t.Errorf("spec.names.plural = %q, want %q", crd.Spec.Names.Plural, GroupVersionResource.Resource)
	}
	if crd.Spec.Names.Kind != Kind || crd.Spec.Names.ListKind != ListKind {
		t.Errorf("spec.names kind/listKind = %q/%q, want %q/%q", crd.Spec.Names.Kind, crd.Spec.Names.ListKind, Kind, ListKind)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("spec.versions has %d entries, want 1", len(crd.Spec.Versions))
	}
	v := crd.Spec.Versions[0]
	if v.Name != GroupVersionResource.Version || !v.Served || !v.Storage {
		t.Errorf("version %q served=%v storage=%v, want %q served and stored", v.Name, v.Served, v.Storage, Version)
	}
	if _, ok := v.Subresources["status"]; ok {
		t.Errorf("status subresource is enabled; it must stay disabled so spec and status can be created in one call")
	}
	if v.Schema.OpenAPIV3Schema["type"] != "object" {
		t.Errorf("openAPIV3Schema.type = %v, want object (structural schema)", v.Schema.OpenAPIV3Schema["type"])
	}
	// An unset attachRequired means false in this API version; a schema default would turn
	// "unset" into a value on every write and hide what the installer declared.
	props, _ := v.Schema.OpenAPIV3Schema["properties"].(map[string]any)
	spec, _ := props["spec"].(map[string]any)
	specProps, _ := spec["properties"].(map[string]any)
	attach, ok := specProps["attachRequired"].(map[string]any)
	if !ok {
		t.Fatalf("openAPIV3Schema has no spec.attachRequired property: %v", specProps)
	}
	if attach["type"] != "boolean" {
		t.Errorf("spec.attachRequired type = %v, want boolean", attach["type"])
	}
	if d, has := attach["default"]; has {
		t.Errorf("spec.attachRequired has default %v; it must have none (unset has its own meaning)", d)
	}
}
