package migration

import (
	"reflect"
	"strings"
	"testing"

	csitrans "k8s.io/csi-translation-lib"
)

func TestMigratablePluginsMatchTranslationLibrary(t *testing.T) {
	tr := csitrans.New()
	if len(MigratablePlugins) != 7 {
		t.Fatalf("MigratablePlugins has %d entries, want the 7 of the translation table", len(MigratablePlugins))
	}
	for _, p := range MigratablePlugins {
		if !tr.IsMigratableIntreePluginByName(p) {
			t.Errorf("csi-translation-lib does not know plugin %q", p)
		}
	}
	for i := 1; i < len(MigratablePlugins); i++ {
		if MigratablePlugins[i-1] >= MigratablePlugins[i] {
			t.Errorf("MigratablePlugins is not sorted at %q", MigratablePlugins[i])
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.NodeSource != NodeSourceCSINode {
		t.Errorf("NodeSource = %q, want csinode", c.NodeSource)
	}
	if len(c.Modes) != 7 {
		t.Errorf("Modes has %d entries, want 7", len(c.Modes))
	}
	for _, p := range MigratablePlugins {
		if c.Modes[p] != ModeOn {
			t.Errorf("mode of %s = %q, want on", p, c.Modes[p])
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("DefaultConfig does not validate: %v", err)
	}
}

func TestParseModes(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    map[string]Mode
		wantErr []string
	}{
		{name: "empty string is no settings", in: "", want: map[string]Mode{}},
		{name: "only separators and spaces", in: " , ,, ", want: map[string]Mode{}},
		{name: "example from the issue", in: "kubernetes.io/portworx-volume=complete,kubernetes.io/gce-pd=off",
			want: map[string]Mode{"kubernetes.io/portworx-volume": ModeComplete, "kubernetes.io/gce-pd": ModeOff}},
		{name: "spaces around items and equals sign", in: " kubernetes.io/aws-ebs = on , kubernetes.io/cinder=complete ",
			want: map[string]Mode{"kubernetes.io/aws-ebs": ModeOn, "kubernetes.io/cinder": ModeComplete}},
		{name: "all seven plugins", in: "kubernetes.io/gce-pd=on,kubernetes.io/aws-ebs=on,kubernetes.io/azure-disk=off,kubernetes.io/azure-file=complete,kubernetes.io/cinder=on,kubernetes.io/vsphere-volume=off,kubernetes.io/portworx-volume=complete",
			want: map[string]Mode{"kubernetes.io/gce-pd": ModeOn, "kubernetes.io/aws-ebs": ModeOn, "kubernetes.io/azure-disk": ModeOff, "kubernetes.io/azure-file": ModeComplete,
				"kubernetes.io/cinder": ModeOn, "kubernetes.io/vsphere-volume": ModeOff, "kubernetes.io/portworx-volume": ModeComplete}},
		{name: "unknown plugin lists valid plugins", in: "kubernetes.io/rbd=on", wantErr: []string{`"kubernetes.io/rbd"`, "kubernetes.io/gce-pd", "kubernetes.io/portworx-volume"}},
		{name: "plugin without kubernetes.io prefix", in: "gce-pd=on", wantErr: []string{"unknown plugin"}},
		{name: "unknown mode lists valid modes", in: "kubernetes.io/gce-pd=enabled", wantErr: []string{`"enabled"`, "off, on, complete"}},
		{name: "mode is case sensitive", in: "kubernetes.io/gce-pd=On", wantErr: []string{"unknown mode"}},
		{name: "empty mode", in: "kubernetes.io/gce-pd=", wantErr: []string{"unknown mode"}},
		{name: "missing equals sign", in: "kubernetes.io/gce-pd", wantErr: []string{"<plugin>=<mode>"}},
		{name: "plugin named twice", in: "kubernetes.io/gce-pd=on,kubernetes.io/gce-pd=off", wantErr: []string{"more than once"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseModes(tc.in)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ParseModes(%q) = %v, want error", tc.in, got)
				}
				for _, sub := range tc.wantErr {
					if !strings.Contains(err.Error(), sub) {
						t.Errorf("error %q does not contain %q", err, sub)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseModes(%q): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseModes(%q) = %v, want %v", tc.in, got, tc.want)
			}
			// FormatModes output parses back to the same map.
			back, err := ParseModes(FormatModes(got))
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Errorf("round trip of %q via %q = %v, %v", tc.in, FormatModes(got), back, err)
			}
		})
	}
}

func TestParseNodeSource(t *testing.T) {
	for in, want := range map[string]NodeSource{"": NodeSourceCSINode, "csinode": NodeSourceCSINode, " csinodeinfo ": NodeSourceCSINodeInfo, "auto": NodeSourceAuto} {
		got, err := ParseNodeSource(in)
		if err != nil || got != want {
			t.Errorf("ParseNodeSource(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"CSINode", "node", "csinodeinfos", "auto,csinode"} {
		if _, err := ParseNodeSource(in); err == nil || !strings.Contains(err.Error(), "csinode, csinodeinfo, auto") {
			t.Errorf("ParseNodeSource(%q) error = %v, want one listing the valid sources", in, err)
		}
	}
}

func TestParseDriverSource(t *testing.T) {
	for in, want := range map[string]DriverSource{"": DriverSourceCSIDriver, "csidriver": DriverSourceCSIDriver, " seed ": DriverSourceSeed, "auto": DriverSourceAuto} {
		got, err := ParseDriverSource(in)
		if err != nil || got != want {
			t.Errorf("ParseDriverSource(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"CSIDriver", "v1alpha1", "csidrivers", "seed,csidriver"} {
		if _, err := ParseDriverSource(in); err == nil || !strings.Contains(err.Error(), "csidriver, seed, auto") {
			t.Errorf("ParseDriverSource(%q) error = %v, want one listing the valid sources", in, err)
		}
	}
	if !DriverSourceSeed.ReadsSeed() || !DriverSourceAuto.ReadsSeed() || DriverSourceCSIDriver.ReadsSeed() || DriverSource("").ReadsSeed() {
		t.Errorf("ReadsSeed must be true for seed and auto only")
	}
}

func TestWithModesDoesNotModifyReceiver(t *testing.T) {
	base := DefaultConfig()
	c := base.WithModes(map[string]Mode{"kubernetes.io/gce-pd": ModeOff})
	if base.Modes["kubernetes.io/gce-pd"] != ModeOn {
		t.Errorf("WithModes modified the receiver's map")
	}
	if c.Modes["kubernetes.io/gce-pd"] != ModeOff || c.Modes["kubernetes.io/aws-ebs"] != ModeOn {
		t.Errorf("WithModes = %v, want gce-pd off and the rest kept", c.Modes)
	}
	if c.NodeSource != base.NodeSource {
		t.Errorf("WithModes changed NodeSource")
	}
}

func TestConfigValidateAndString(t *testing.T) {
	bad := []Config{
		{Modes: map[string]Mode{"kubernetes.io/rbd": ModeOn}},
		{Modes: map[string]Mode{"kubernetes.io/gce-pd": "maybe"}},
		{NodeSource: "kubelet"},
		{DriverSource: "v1alpha1"},
	}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want error", c)
		}
	}
	var nilCfg *Config
	if err := nilCfg.Validate(); err == nil {
		t.Errorf("Validate(nil) = nil, want error")
	}
	s := Config{Modes: map[string]Mode{"kubernetes.io/gce-pd": ModeOff, "kubernetes.io/aws-ebs": ModeComplete}}.String()
	if s != "migration=kubernetes.io/aws-ebs=complete,kubernetes.io/gce-pd=off; node-migration-source=csinode; driver-info-source=csidriver" {
		t.Errorf("String() = %q", s)
	}
	if nilCfg.Mode("kubernetes.io/gce-pd") != ModeOn {
		t.Errorf("nil config mode should default to on")
	}
}
