package preflight

import (
	"strings"
	"testing"

	"github.com/migration-aware/adc/pkg/migration"
)

func TestOptionsSteps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		want    []string // plugin from->to
		wantErr string
	}{
		{name: "no plugin means all seven, each to its next step",
			opts: Options{Config: config(gcePlugin, "off", ebsPlugin, "complete")},
			want: []string{"kubernetes.io/aws-ebs complete->complete", "kubernetes.io/azure-disk on->complete", "kubernetes.io/azure-file on->complete",
				"kubernetes.io/cinder on->complete", "kubernetes.io/gce-pd off->on", "kubernetes.io/portworx-volume on->complete", "kubernetes.io/vsphere-volume on->complete"}},
		{name: "a short plugin name and an explicit step", opts: Options{Config: config(), Plugins: []string{"gce-pd", "kubernetes.io/gce-pd"}, To: migration.ModeOff},
			want: []string{"kubernetes.io/gce-pd on->off"}},
		{name: "an unknown plugin is refused with the valid ones", opts: Options{Config: config(), Plugins: []string{"kubernetes.io/rbd"}},
			wantErr: `unknown plugin "kubernetes.io/rbd": CSI migration covers kubernetes.io/aws-ebs,`},
		{name: "an unknown step is refused with the valid ones", opts: Options{Config: config(), To: "finished"},
			wantErr: `unknown step "finished": a plugin moves to one of off, on, complete`},
		{name: "an invalid configuration is refused", opts: Options{Config: migration.Config{NodeSource: "kubelet"}},
			wantErr: `node migration source "kubelet" is not valid`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps, err := tc.opts.steps()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range steps {
				got = append(got, s.Plugin+" "+string(s.From)+"->"+string(s.To))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("steps = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseStep(t *testing.T) {
	for in, want := range map[string]migration.Mode{"": "", "on": migration.ModeOn, " complete ": migration.ModeComplete, "off": migration.ModeOff} {
		if got, err := ParseStep(in); err != nil || got != want {
			t.Errorf("ParseStep(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseStep("half"); err == nil {
		t.Error("ParseStep(half) succeeded")
	}
}

func TestCapability(t *testing.T) {
	for _, tc := range []struct {
		plugin, version string
		want            KubeletCapability
	}{
		{gcePlugin, "v1.13.12", KubeletCannotMigrate},
		{gcePlugin, "v1.14.0", KubeletMigratesWithGate},
		{gcePlugin, "v1.22.17-gke.100", KubeletMigratesWithGate},
		{gcePlugin, "v1.23.0", KubeletMigratesByDefault},
		{gcePlugin, "v1.25.0", KubeletAlwaysMigrates},
		{"kubernetes.io/portworx-volume", "v1.30.2", KubeletMigratesWithGate},
		{"kubernetes.io/portworx-volume", "v1.31.0", KubeletMigratesByDefault},
		{"kubernetes.io/portworx-volume", "v1.33.1", KubeletAlwaysMigrates},
		{"kubernetes.io/cinder", "v1.18.0", KubeletMigratesByDefault},
		{gcePlugin, "v0.0.0-master+$Format:%H$", KubeletVersionUnknown},
		{gcePlugin, "", KubeletVersionUnknown},
		{gcePlugin, "latest", KubeletVersionUnknown},
		{"kubernetes.io/rbd", "v1.20.0", KubeletVersionUnknown},
	} {
		if got := Capability(tc.plugin, tc.version); got != tc.want {
			t.Errorf("Capability(%s, %q) = %s, want %s", tc.plugin, tc.version, got, tc.want)
		}
	}
	for _, p := range migration.MigratablePlugins {
		if _, ok := KubeletSupportTable[p]; !ok {
			t.Errorf("KubeletSupportTable lacks %s", p)
		}
	}
}
