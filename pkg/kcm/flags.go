// Package kcm is adc's half of running inside kube-controller-manager: adc's options as
// kube-controller-manager flags, and the constructor its controller descriptor calls (clients,
// metrics in kube-controller-manager's /metrics). The other half, which must live in
// k8s.io/kubernetes/cmd/kube-controller-manager/app because a controller descriptor's fields are
// unexported there, is the file a kube-controller-manager build adds:
// hack/kcm-adc/_cmd/kube-controller-manager/app/adc.go (see docs/kube-controller-manager.md).
package kcm

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
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

// Flags are adc's options as flags of the kube-controller-manager that embeds it. Each value
// is parsed when its flag is set, so kube-controller-manager refuses a bad value at start,
// naming the flag, instead of when it wins the leader election and builds its controllers.
// The zero value is not useful; use AddFlags.
type Flags struct {
	modes             map[string]migration.Mode
	nodeSource        migration.NodeSource
	driverSource      migration.DriverSource
	maxWaitForUnmount time.Duration
	workers           int
	otherQuiet        time.Duration
}

// AddFlags registers adc's flags on fs and returns where their values land. A
// kube-controller-manager build passes pflag.CommandLine from a package-level variable: cobra
// merges that set into the command's flags when it parses them, which is the only way a file
// added to cmd/kube-controller-manager/app can add a flag (the command's flag sets are built
// in cmd/kube-controller-manager/app/options, and kube-controller-manager has no --config file).
func AddFlags(fs *pflag.FlagSet) *Flags {
	d := adc.DefaultOptions()
	f := &Flags{
		modes:             map[string]migration.Mode{},
		nodeSource:        d.Migration.NodeSource,
		driverSource:      d.Migration.DriverSource,
		maxWaitForUnmount: d.MaxWaitForUnmount,
		workers:           DefaultWorkers,
		otherQuiet:        adc.DefaultOtherControllerQuietPeriod,
	}
	setModes := func(s string) error {
		modes, err := migration.ParseModes(s)
		if err == nil {
			f.modes = modes
		}
		return err
	}
	setNodeSource := func(s string) error {
		src, err := migration.ParseNodeSource(s)
		if err == nil {
			f.nodeSource = src
		}
		return err
	}
	setDriverSource := func(s string) error {
		src, err := migration.ParseDriverSource(s)
		if err == nil {
			f.driverSource = src
		}
		return err
	}
	setMaxWait := func(s string) error {
		v, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return err
		case v <= 0:
			return fmt.Errorf("must be positive, got %s", v)
		}
		f.maxWaitForUnmount = v
		return nil
	}
	setOtherQuiet := func(s string) error {
		v, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return err
		case v <= 0:
			return fmt.Errorf("must be positive, got %s", v)
		}
		f.otherQuiet = v
		return nil
	}
	setWorkers := func(s string) error {
		v, err := strconv.Atoi(s)
		switch {
		case err != nil:
			return err
		case v < 1:
			return fmt.Errorf("must be at least 1, got %d", v)
		}
		f.workers = v
		return nil
	}
	fs.Var(parsed("", "string", setModes), FlagMigration,
		"adc (migration-aware-attach-detach-controller): per in-tree plugin migration mode laid over the default (all "+string(migration.ModeOn)+
			"), e.g. kubernetes.io/portworx-volume=complete,kubernetes.io/gce-pd=off; modes: off, on, complete; plugins: "+
			strings.Join(migration.MigratablePlugins, ", ")+".")
	fs.Var(parsed(string(f.nodeSource), "string", setNodeSource), FlagNodeSource,
		"adc: where node migration state is read: csinode, csinodeinfo (seed API) or auto.")
	fs.Var(parsed(string(f.driverSource), "string", setDriverSource), FlagDriverSource,
		"adc: where a CSI driver's attachRequired is read: csidriver (storage.k8s.io/v1), seed (csi.storage.k8s.io/v1alpha1) or auto.")
	fs.Var(parsed(f.maxWaitForUnmount.String(), "duration", setMaxWait), FlagMaxWaitForUnmount,
		"adc: how long a node may be not Ready before its in-use volumes are force-detached.")
	fs.Var(parsed(strconv.Itoa(f.workers), "int", setWorkers), FlagWorkers,
		"adc: number of nodes reconciled in parallel.")
	fs.Var(parsed(f.otherQuiet.String(), "duration", setOtherQuiet), FlagOtherControllerQuietPeriod,
		"adc: how long adc writes nothing after it last saw another attach/detach controller write what it owns (Event reason OtherAttachDetachController).")
	return f
}

// Options returns adc's options as set by the flags; the host's parts (in-tree attacher,
// observer) are left for the constructor.
func (f *Flags) Options() adc.Options {
	opts := adc.DefaultOptions()
	opts.Migration = migration.DefaultConfig().WithModes(f.modes)
	opts.Migration.NodeSource = f.nodeSource
	opts.Migration.DriverSource = f.driverSource
	opts.MaxWaitForUnmount = f.maxWaitForUnmount
	opts.OtherControllerQuietPeriod = f.otherQuiet
	return opts
}

// Workers returns --adc-workers.
func (f *Flags) Workers() int { return f.workers }

// parsedValue is a flag whose value is parsed (and refused, naming the flag) when it is set,
// and which shows what it was set to in kube-controller-manager's FLAG: log lines.
type parsedValue struct {
	value, typ string
	set        func(string) error
}

func parsed(def, typ string, set func(string) error) *parsedValue {
	return &parsedValue{value: def, typ: typ, set: set}
}

func (v *parsedValue) Set(s string) error {
	if err := v.set(s); err != nil {
		return err
	}
	v.value = s
	return nil
}

func (v *parsedValue) String() string { return v.value }
func (v *parsedValue) Type() string   { return v.typ }
