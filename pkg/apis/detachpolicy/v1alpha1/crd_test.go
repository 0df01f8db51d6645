package v1alpha1

import (
	"path/filepath"
	"testing"

	"github.com/migration-aware/adc/pkg/apis/internal/crdtest"
)

func TestCRDManifestMatchesGoTypes(t *testing.T) {
	crdtest.Check(t, crdtest.Want{
		Path:  filepath.Join("..", "..", "..", "..", "deploy", "crds", "adc.migration-aware.io_detachpolicies.yaml"),
		Group: GroupName, Version: Version, Plural: Resource,
		Kind: Kind, ListKind: ListKind, NamedAfter: "the policy", Own: true,
	})
}
