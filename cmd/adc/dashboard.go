package main

import (
	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/server"
)

// registerDashboard adds the rollout dashboard for ctrl to srv.
func registerDashboard(srv *server.Server, ctrl *adc.Controller) {}
