// Package kcm is adc's half of running inside kube-controller-manager: adc's options as
// kube-controller-manager flags, and the constructor its controller descriptor calls (clients,
// metrics in kube-controller-manager's /metrics). The other half, which must live in
// k8s.io/kubernetes/cmd/kube-controller-manager/app because a controller descriptor's fields are
// unexported there, is the file a kube-controller-manager build adds:
// hack/kcm-adc/_cmd/kube-controller-manager/app/adc.go (see docs/kube-controller-manager.md).
package kcm

import (
	"github.com/spf13/pflag"

	"github.com/migration-aware/adc/pkg/adc"
)

// FlagPrefix starts every flag of adc's in kube-controller-manager, so none can clash with
// kube-controller-manager's own (it has a --controllers and a --concurrent-* family, not a
// --migration).
const FlagPrefix = "adc-"

// Flag names, for documentation and error messages.
const (
	FlagMigration         = FlagPrefix + "migration"
	FlagNodeSource        = FlagPrefix + "node-migration-source"
	FlagDriverSource      = FlagPrefix + "driver-info-source"
	FlagMaxWaitForUnmount = FlagPrefix + "max-wait-for-unmount"
	FlagWorkers           = FlagPrefix + "workers"
	// FlagOtherControllerQuietPeriod is adc controller's --other-controller-quiet-period.
	FlagOtherControllerQuietPeriod = FlagPrefix + "other-controller-quiet-period"
)

// DefaultWorkers is how many nodes adc reconciles in parallel inside kube-controller-manager,
// as `adc controller --workers`.
const DefaultWorkers = adc.DefaultWorkers

// Flags are adc's options as flags of the kube-controller-manager that embeds it: the flags
// of `adc controller` (adc.FlagOptions), prefixed. The zero value is not useful; use AddFlags.
type Flags struct {
	opts *adc.FlagOptions
}

// AddFlags registers adc's flags on fs and returns where their values land. A
// kube-controller-manager build passes pflag.CommandLine from a package-level variable: cobra
// merges that set into the command's flags when it parses them, which is the only way a file
// added to cmd/kube-controller-manager/app can add a flag (the command's flag sets are built
// in cmd/kube-controller-manager/app/options, and kube-controller-manager has no --config file).
func AddFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{opts: adc.NewFlagOptions()}
	f.opts.AddFlags(fs, FlagPrefix, "(adc) ")
	return f
}

// Options returns adc's options as set by the flags; the host's parts (in-tree attacher,
// observer) are left for the constructor.
func (f *Flags) Options() adc.Options {
	opts := adc.DefaultOptions()
	f.opts.ApplyTo(&opts)
	return opts
}

// Workers returns --adc-workers.
func (f *Flags) Workers() int { return f.opts.Workers }
