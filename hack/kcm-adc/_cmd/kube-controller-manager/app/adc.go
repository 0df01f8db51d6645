// This file is not part of Kubernetes: it is adc's (github.com/migration-aware/adc), added to
// cmd/kube-controller-manager/app of a kube-controller-manager v1.36 build together with
// adc_intree.go and one line in NewControllerDescriptors (controller_descriptor.go):
//
//	register(newADCControllerDescriptor())
//
// See docs/kube-controller-manager.md in adc's repository.

package app

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/kcm"
)

// adcFlags are adc's --adc-* flags. kube-controller-manager builds its flag sets in
// app/options, out of reach of an added file; cobra merges pflag.CommandLine into the command's
// flags when it parses them, so they are registered there, before main runs.
var adcFlags = kcm.AddFlags(pflag.CommandLine)

// newADCControllerDescriptor registers adc, the migration-aware attach/detach controller. It
// is disabled by default so that a build that carries it keeps upstream's behaviour until it
// is switched on with
// --controllers=*,migration-aware-attach-detach-controller,-persistentvolume-attach-detach-controller
func newADCControllerDescriptor() *ControllerDescriptor {
	return &ControllerDescriptor{
		name:                adc.ControllerManagerName,
		constructor:         newADCController,
		isDisabledByDefault: true,
	}
}

func newADCController(ctx context.Context, controllerContext ControllerContext, controllerName string) (Controller, error) {
	builtIn := newPersistentVolumeAttachDetachControllerDescriptor()
	if controllerContext.IsControllerEnabled(builtIn) {
		return nil, fmt.Errorf("%s and the built-in %s must not both run (both would attach and detach the same volumes): "+
			"disable the built-in one by adding -%[2]s to --controllers, e.g. --controllers=*,%[1]s,-%[2]s", controllerName, builtIn.Name())
	}
	config, err := controllerContext.NewClientConfig(kcm.Identity)
	if err != nil {
		return nil, err
	}
	inTree, err := newADCInTreeAttacher(ctx, controllerContext, config)
	if err != nil {
		return nil, err
	}
	embedded, err := kcm.NewController(ctx, kcm.Host{Factory: controllerContext.InformerFactory, Config: config, InTree: inTree}, adcFlags)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", controllerName, err)
	}
	klog.FromContext(ctx).Info("Replacing the built-in attach/detach controller", "disabled", builtIn.Name(), "workers", adcFlags.Workers())
	// Returned as it is, not wrapped in newControllerLoop: kube-controller-manager finds its
	// health check through the controller.HealthCheckable type assertion.
	return embedded, nil
}
