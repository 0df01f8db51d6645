// Package embed runs adc the way kube-controller-manager embeds it
// (docs/kube-controller-manager.md): the test is the host, owning one shared informer
// factory that it starts itself, a health check per controller and the metrics registry.
package embed

import (
	"testing"

	"github.com/migration-aware/adc/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
