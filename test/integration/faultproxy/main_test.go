package faultproxy

import (
	"testing"

	"github.com/migration-aware/adc/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
