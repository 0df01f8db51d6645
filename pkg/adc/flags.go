package adc

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/migration-aware/adc/pkg/migration"
)

// FlagOptions are the options an operator sets on adc's command line, wherever adc runs:
// `adc controller`, kube-controller-manager (each name prefixed with adc-, so none can clash
// with its own flags) and, for the migration flags, the read tools (plan, status, explain,
// preflight), which must decide exactly as the controller would. One definition, so that a
// name, a default or a check cannot differ between them. Each value is parsed when its flag
// is set: a bad value is refused at start, naming the flag, not when the replica wins the
// leader election and builds its controller.
type FlagOptions struct {
	// Modes are --migration's per-plugin modes, laid over the default (all on).
	Modes map[string]migration.Mode
	// NodeSource is --node-migration-source.
	NodeSource migration.NodeSource
	// DriverSource is --driver-info-source.
	DriverSource migration.DriverSource
	// MaxWaitForUnmount is --max-wait-for-unmount.
	MaxWaitForUnmount time.Duration
	// Workers is --workers: nodes reconciled in parallel (and node status writers).
	Workers int
	// OtherControllerQuietPeriod is --other-controller-quiet-period.
	OtherControllerQuietPeriod time.Duration
}

// NewFlagOptions returns the flags' defaults: adc's defaults (DefaultOptions, DefaultWorkers).
func NewFlagOptions() *FlagOptions {
	d := DefaultOptions()
	return &FlagOptions{
		Modes:             map[string]migration.Mode{},
		NodeSource:        d.Migration.NodeSource,
		DriverSource:      d.Migration.DriverSource,
		MaxWaitForUnmount: d.MaxWaitForUnmount,
		Workers:           DefaultWorkers,

		OtherControllerQuietPeriod: DefaultOtherControllerQuietPeriod,
	}
}

// AddMigrationFlags registers --<prefix>migration, --<prefix>node-migration-source and
// --<prefix>driver-info-source on fs, each help text starting with helpPrefix (a host names
// whose flags they are).
func (o *FlagOptions) AddMigrationFlags(fs *pflag.FlagSet, prefix, helpPrefix string) {
	fs.Var(parsed("", "string", func(s string) error {
		modes, err := migration.ParseModes(s)
		if err == nil {
			o.Modes = modes
		}
		return err
	}), prefix+"migration", helpPrefix+"Per in-tree plugin migration mode laid over the default (all "+migration.ModeOn.String()+
		"), e.g. kubernetes.io/portworx-volume=complete,kubernetes.io/gce-pd=off; modes: off, on, complete; plugins: "+
		strings.Join(migration.MigratablePlugins, ", ")+".")
	fs.Var(parsed(string(o.NodeSource), "string", func(s string) error {
		src, err := migration.ParseNodeSource(s)
		if err == nil {
			o.NodeSource = src
		}
		return err
	}), prefix+"node-migration-source", helpPrefix+"Where node migration state is read: csinode, csinodeinfo (seed API) or auto.")
	fs.Var(parsed(string(o.DriverSource), "string", func(s string) error {
		src, err := migration.ParseDriverSource(s)
		if err == nil {
			o.DriverSource = src
		}
		return err
	}), prefix+"driver-info-source", helpPrefix+"Where a CSI driver's attachRequired is read: csidriver (storage.k8s.io/v1; unset means true), "+
		"seed (csi.storage.k8s.io/v1alpha1; unset means false) or auto (the v1 object if it exists, else the seed one). No object means attach required.")
}

// AddFlags registers every flag a host of the controller shares: the migration flags,
// --<prefix>max-wait-for-unmount, --<prefix>workers and --<prefix>other-controller-quiet-period.
func (o *FlagOptions) AddFlags(fs *pflag.FlagSet, prefix, helpPrefix string) {
	o.AddMigrationFlags(fs, prefix, helpPrefix)
	fs.Var(positiveDuration(&o.MaxWaitForUnmount), prefix+"max-wait-for-unmount",
		helpPrefix+"How long a node may be not Ready before its in-use volumes are force-detached.")
	fs.Var(parsed(strconv.Itoa(o.Workers), "int", func(s string) error {
		v, err := strconv.Atoi(s)
		switch {
		case err != nil:
			return err
		case v < 1:
			return fmt.Errorf("must be at least 1, got %d", v)
		}
		o.Workers = v
		return nil
	}), prefix+"workers", helpPrefix+"Number of nodes reconciled in parallel (and of node status writers).")
	fs.Var(positiveDuration(&o.OtherControllerQuietPeriod), prefix+"other-controller-quiet-period",
		helpPrefix+"How long adc writes nothing (no attach, no detach, no node status) after it last saw another attach/detach controller "+
			"write what it owns, such as kube-controller-manager's own left on (Event reason OtherAttachDetachController).")
}

// positiveDuration is a duration flag that refuses zero and negative values.
func positiveDuration(d *time.Duration) *parsedValue {
	return parsed(d.String(), "duration", func(s string) error {
		v, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return err
		case v <= 0:
			return fmt.Errorf("must be positive, got %s", v)
		}
		*d = v
		return nil
	})
}

// Config is the migration configuration the migration flags describe.
func (o *FlagOptions) Config() migration.Config {
	cfg := migration.DefaultConfig().WithModes(o.Modes)
	cfg.NodeSource, cfg.DriverSource = o.NodeSource, o.DriverSource
	return cfg
}

// ApplyTo sets the flags' options on opts (Workers is Run's argument, not an option).
func (o *FlagOptions) ApplyTo(opts *Options) {
	opts.Migration = o.Config()
	opts.MaxWaitForUnmount = o.MaxWaitForUnmount
	opts.OtherControllerQuietPeriod = o.OtherControllerQuietPeriod
}

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
