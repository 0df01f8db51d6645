// Package deploy tests the manifests of deploy/kubernetes on a real control plane: the
// controller runs as the adc ServiceAccount with exactly the RBAC shipped there, both
// in-process and as the adc binary with the Deployment's arguments and leader election.
// The control plane keeps an audit log, from which the suite checks the RBAC against the
// requests adc made (checkAudit).
package deploy

import (
	"testing"

	"github.com/migration-aware/adc/internal/controlplane"
	"github.com/migration-aware/adc/test/integration/framework"
)

// adcBinary is the adc command, built once for the package.
var adcBinary string

func TestMain(m *testing.M) {
	framework.MainWithADCOptions(m, func(p string) { adcBinary = p }, framework.Options{
		ControlPlane: controlplane.Options{AuditPolicy: framework.AuditPolicy},
		AfterTests:   checkAudit,
	})
}
