package kcm

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
)

func TestFlags(t *testing.T) {
	defaults := adc.DefaultOptions()
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // substring of the parse error; empty means success
		check   func(t *testing.T, opts adc.Options, workers int)
	}{
		{
			name: "defaults are adc's",
			check: func(t *testing.T, opts adc.Options, workers int) {
				if opts.Migration.String() != defaults.Migration.String() || opts.MaxWaitForUnmount != defaults.MaxWaitForUnmount || workers != DefaultWorkers {
					t.Errorf("got %s, max wait %s, workers %d; want adc's defaults %s, %s, %d",
						opts.Migration, opts.MaxWaitForUnmount, workers, defaults.Migration, defaults.MaxWaitForUnmount, DefaultWorkers)
				}
			},
		},
		{
			name: "every flag set",
			args: []string{"--adc-migration", "kubernetes.io/gce-pd=complete, kubernetes.io/aws-ebs=off",
				"--adc-node-migration-source=auto", "--adc-driver-info-source=seed", "--adc-max-wait-for-unmount=90s", "--adc-workers=3"},
			check: func(t *testing.T, opts adc.Options, workers int) {
				m := opts.Migration
				if m.Mode("kubernetes.io/gce-pd") != migration.ModeComplete || m.Mode("kubernetes.io/aws-ebs") != migration.ModeOff ||
					m.Mode("kubernetes.io/cinder") != migration.ModeOn {
					t.Errorf("modes %s; want gce-pd complete, aws-ebs off, the rest on", m)
				}
				if m.NodeSource != migration.NodeSourceAuto || m.DriverSource != migration.DriverSourceSeed {
					t.Errorf("sources %s, %s; want auto, seed", m.NodeSource, m.DriverSource)
				}
				if opts.MaxWaitForUnmount != 90*time.Second || workers != 3 {
					t.Errorf("max wait %s, workers %d; want 90s, 3", opts.MaxWaitForUnmount, workers)
				}
				if err := opts.Validate(); err != nil {
					t.Errorf("options do not validate: %v", err)
				}
			},
		},
		{name: "unknown mode", args: []string{"--adc-migration=kubernetes.io/gce-pd=sideways"}, wantErr: `"--adc-migration" flag: invalid migration setting`},
		{name: "unknown plugin", args: []string{"--adc-migration=kubernetes.io/nfs=on"}, wantErr: "unknown plugin"},
		{name: "unknown node source", args: []string{"--adc-node-migration-source=kubelet"}, wantErr: `"--adc-node-migration-source" flag`},
		{name: "unknown driver source", args: []string{"--adc-driver-info-source=v2"}, wantErr: `"--adc-driver-info-source" flag`},
		{name: "zero max wait", args: []string{"--adc-max-wait-for-unmount=0s"}, wantErr: "must be positive"},
		{name: "zero workers", args: []string{"--adc-workers=0"}, wantErr: "must be at least 1"},
		{name: "workers not a number", args: []string{"--adc-workers=many"}, wantErr: `"--adc-workers" flag`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
			f := AddFlags(fs)
			err := fs.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parse error %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, f.Options(), f.Workers())
		})
	}
}

// Every flag carries the prefix, so none can clash with kube-controller-manager's own.
func TestFlagsArePrefixed(t *testing.T) {
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	AddFlags(fs)
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n++
		if !strings.HasPrefix(f.Name, FlagPrefix) {
			t.Errorf("flag --%s lacks the prefix %s", f.Name, FlagPrefix)
		}
	})
	if n != 6 {
		t.Errorf("%d flags registered, want 6", n)
	}
}
