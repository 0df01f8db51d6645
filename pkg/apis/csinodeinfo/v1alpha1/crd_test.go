package v1alpha1

import (
	"path/filepath"
	"testing"

	"github.com/migration-aware/adc/pkg/apis/internal/crdtest"
)

func TestCRDManifestMatchesGoTypes(t *testing.T) {
	crdtest.Check(t, crdtest.Want{
		Path:  filepath.Join("..", "..", "..", "..", "deploy", "crds", "csi.storage.k8s.io_csinodeinfos.yaml"),
		Group: GroupName, Version: GroupVersionResource.Version, Plural: GroupVersionResource.Resource,
		Kind: Kind, ListKind: ListKind, NamedAfter: "node",
	})
}
