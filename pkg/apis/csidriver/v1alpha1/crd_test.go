package v1alpha1

import (
	"path/filepath"
	"testing"

	"github.com/migration-aware/adc/pkg/apis/internal/crdtest"
)

func TestCRDManifestMatchesGoTypes(t *testing.T) {
	schema := crdtest.Check(t, crdtest.Want{
		Path:  filepath.Join("..", "..", "..", "..", "deploy", "crds", "csi.storage.k8s.io_csidrivers.yaml"),
		Group: GroupName, Version: GroupVersionResource.Version, Plural: Resource,
		Kind: Kind, ListKind: ListKind, NamedAfter: "driver",
	})
	// An unset attachRequired means false in this API version; a schema default would turn
	// "unset" into a value on every write and hide what the installer declared.
	props, _ := schema["properties"].(map[string]any)
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
