package preflight

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/preflight"
	"github.com/migration-aware/adc/test/integration/framework"
)

// healthy seeds a node where gce-pd can move to complete: migrated, its driver registered,
// its zone labelled, a CSIDriver, a zonal volume attached through CSI.
func healthy(s *seeder) *seeder {
	return s.node("n1", "v1.36.3", gceZone, zone).csiNode("n1", gcePlugin, registered(gceDriver, 0)).csiDriver(gceDriver).
		gcePV("pv-a", zone).pod("a", "n1", "pv-a").va("pv-a", "n1")
}

var sharedDisk = v1.AzureSharedBlobDisk

// Each case seeds the cluster with one kind of finding and runs `adc preflight -o json`; the
// findings are compared exactly, as "severity check plugin Kind/name @node" lines where {p}
// is the case's name prefix, and so is the exit code (0 only when nothing blocks).
func TestPreflightFindings(t *testing.T) {
	cp := framework.Get(t)
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := framework.WriteKubeconfig(cp.Config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name string
		seed func(s *seeder)
		args []string
		want []string
		code int
	}{
		{name: "nothing found on a healthy cluster", seed: func(s *seeder) { healthy(s) },
			args: []string{"--plugin", gcePlugin, "--to", "complete"}, code: 0},
		{name: "driver not registered on a migrated node blocks, on an empty one warns",
			seed: func(s *seeder) {
				healthy(s).node("n2", "v1.36.3", gceZone, zone).csiNode("n2", gcePlugin).gcePV("pv-b", zone).pod("b", "n2", "pv-b").
					node("n3", "v1.36.3", gceZone, zone).csiNode("n3", gcePlugin)
			},
			args: []string{"--plugin", gcePlugin, "--to", "complete"}, code: 1,
			want: []string{"blocks driver-not-registered kubernetes.io/gce-pd CSINode/{p}-n2 @{p}-n2", "warns driver-not-registered kubernetes.io/gce-pd CSINode/{p}-n3 @{p}-n3"}},
		{name: "no CSIDriver object warns", seed: func(s *seeder) {
			s.node("n1", "v1.36.3", gceZone, zone).csiNode("n1", gcePlugin, registered(gceDriver, 0)).gcePV("pv-a", zone).pod("a", "n1", "pv-a")
		},
			args: []string{"--plugin", "gce-pd"}, code: 0,
			want: []string{"warns no-csidriver kubernetes.io/gce-pd CSIDriver/pd.csi.storage.gke.io"}},
		{name: "a CSIDriver without the Persistent lifecycle mode blocks", seed: func(s *seeder) {
			s.node("n1", "v1.36.3", gceZone, zone).csiNode("n1", gcePlugin, registered(gceDriver, 0)).csiDriver(gceDriver, "Ephemeral").
				gcePV("pv-a", zone).pod("a", "n1", "pv-a")
		},
			args: []string{"--plugin", gcePlugin}, code: 1,
			want: []string{"blocks lifecycle-mode kubernetes.io/gce-pd CSIDriver/pd.csi.storage.gke.io"}},
		{name: "StorageClasses csi-translation-lib rejects block, dropped parameters warn", seed: func(s *seeder) {
			healthy(s).storageClass("zonal", gcePlugin, map[string]string{"zone": zone},
				v1.TopologySelectorTerm{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: v1.LabelTopologyZone, Values: []string{zone}}}}).
				storageClass("fast", vsPlugin, map[string]string{"diskformat": "thin", "nosuchparam": "x"}).
				storageClass("pd", gcePlugin, map[string]string{"type": "pd-ssd"})
		},
			args: []string{"--plugin", gcePlugin, "--plugin", vsPlugin, "--to", "on"}, code: 1,
			want: []string{"blocks storageclass kubernetes.io/gce-pd StorageClass/{p}-zonal", "warns storageclass kubernetes.io/vsphere-volume StorageClass/{p}-fast",
				"warns no-csidriver kubernetes.io/vsphere-volume CSIDriver/csi.vsphere.vmware.com"}},
		{name: "an untranslatable PersistentVolume blocks, one without zone warns", seed: func(s *seeder) {
			healthy(s).gcePV("bad", "us-central1-a__europe-west1-b").gcePV("nozone", "")
		},
			args: []string{"--plugin", gcePlugin}, code: 1,
			want: []string{"blocks untranslatable kubernetes.io/gce-pd PersistentVolume/{p}-bad", "warns placement kubernetes.io/gce-pd PersistentVolume/{p}-nozone"}},
		{name: "a node without the driver's zone label blocks the mount of a zonal volume", seed: func(s *seeder) {
			healthy(s).node("bare", "v1.36.3").csiNode("bare", gcePlugin, registered(gceDriver, 0)).gcePV("pv-c", zone).pod("c", "bare", "pv-c")
		},
			args: []string{"--plugin", gcePlugin}, code: 1,
			want: []string{"blocks placement kubernetes.io/gce-pd PersistentVolume/{p}-pv-c @{p}-bare"}},
		{name: "an inline volume that does not translate blocks", seed: func(s *seeder) {
			s.node("n1", "v1.36.3").csiNode("n1", "kubernetes.io/azure-disk", registered("disk.csi.azure.com", 0)).csiDriver("disk.csi.azure.com").
				podWith("inl", "n1", v1.Volume{Name: "inline", VolumeSource: v1.VolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "https://acct.blob.core.windows.net/vhds/d.vhd", Kind: &sharedDisk}}})
		},
			args: []string{"--plugin", "azure-disk"}, code: 1,
			want: []string{"blocks untranslatable kubernetes.io/azure-disk Pod/preflight/{p}-inl:inline @{p}-n1"}},
		{name: "a node over its driver's attach limit blocks", seed: func(s *seeder) {
			s.node("n1", "v1.36.3", gceZone, zone).csiNode("n1", gcePlugin, registered(gceDriver, 1)).csiDriver(gceDriver).
				gcePV("pv-a", zone).gcePV("pv-b", zone).pod("a", "n1", "pv-a").pod("b", "n1", "pv-b")
		},
			args: []string{"--plugin", gcePlugin}, code: 1,
			want: []string{"blocks attach-limit kubernetes.io/gce-pd CSINode/{p}-n1 @{p}-n1"}},
		{name: "complete with a kubelet too old to migrate and a node not migrated", seed: func(s *seeder) {
			healthy(s).node("old", "v1.13.12", gceZone, zone).csiNode("old", "-", registered(gceDriver, 0)).
				node("later", "v1.22.0", gceZone, zone).csiNode("later", "kubernetes.io/aws-ebs", registered(gceDriver, 0))
		},
			args: []string{"--plugin", gcePlugin, "--to", "complete"}, code: 1,
			want: []string{"blocks kubelet-version kubernetes.io/gce-pd Node/{p}-old @{p}-old", "blocks node-not-migrated kubernetes.io/gce-pd CSINode/{p}-later @{p}-later",
				"blocks node-not-migrated kubernetes.io/gce-pd CSINode/{p}-old @{p}-old"}},
		{name: "off: a kubelet that always migrates, version skew, a path change and the drain it needs", seed: func(s *seeder) { healthy(s) },
			args: []string{"--plugin", gcePlugin, "--to", "off"}, code: 1,
			want: []string{"blocks drain kubernetes.io/gce-pd Node/{p}-n1 @{p}-n1", "blocks kubelet-version kubernetes.io/gce-pd Node/{p}-n1 @{p}-n1",
				"blocks node-migrated kubernetes.io/gce-pd CSINode/{p}-n1 @{p}-n1", "blocks path-change kubernetes.io/gce-pd PersistentVolume/{p}-pv-a @{p}-n1"}},
		{name: "back from complete: a CSI attachment on a node not migrated needs a drain", seed: func(s *seeder) {
			s.node("n1", "v1.24.0", gceZone, zone).csiNode("n1", "-", registered(gceDriver, 0)).csiDriver(gceDriver).
				gcePV("pv-a", zone).pod("a", "n1", "pv-a").va("pv-a", "n1")
		},
			args: []string{"--plugin", gcePlugin, "--to", "on", "--migration", gcePlugin + "=complete"}, code: 1,
			want: []string{"blocks drain kubernetes.io/gce-pd Node/{p}-n1 @{p}-n1", "blocks path-change kubernetes.io/gce-pd PersistentVolume/{p}-pv-a @{p}-n1"}},
		{name: "forward, an in-tree attachment changes path: a warning", seed: func(s *seeder) {
			s.node("n1", "v1.36.3", gceZone, zone).csiNode("n1", gcePlugin, registered(gceDriver, 0)).csiDriver(gceDriver).
				gcePV("pv-a", zone).pod("a", "n1", "pv-a").listing("n1", "kubernetes.io/gce-pd/disk-"+s.name("pv-a"))
		},
			args: []string{"--plugin", gcePlugin, "--migration", gcePlugin + "=off"}, code: 0,
			want: []string{"warns path-change kubernetes.io/gce-pd PersistentVolume/{p}-pv-a @{p}-n1"}},
		{name: "off to on holds the volumes of a node that has not reported", seed: func(s *seeder) {
			s.node("n1", "v1.36.3").csiDriver(gceDriver).gcePV("pv-a", zone).pod("a", "n1", "pv-a")
		},
			args: []string{"--plugin", gcePlugin, "--migration", gcePlugin + "=off"}, code: 1,
			want: []string{"blocks held-after-step kubernetes.io/gce-pd PersistentVolume/{p}-pv-a @{p}-n1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wipe(t)
			prefix := "c" + string(rune('a'+i))
			tc.seed(&seeder{t: t, ctx: t.Context(), c: cp.Client, prefix: prefix})
			out, stderr, code := runADC(t, append([]string{"preflight", "--kubeconfig", kubeconfig, "-o", "json"}, tc.args...)...)
			var r preflight.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("adc preflight -o json is not the documented JSON (%v):\n%s\n%s", err, out, stderr)
			}
			var got, want []string
			for _, f := range r.Findings {
				got = append(got, line(f))
			}
			for _, w := range tc.want {
				want = append(want, strings.ReplaceAll(w, "{p}", prefix))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("findings:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if code != tc.code || r.OK != (tc.code == 0) {
				t.Errorf("exit %d, ok %v; want exit %d\n%s", code, r.OK, tc.code, stderr)
			}
			text, _, textCode := runADC(t, append([]string{"preflight", "--kubeconfig", kubeconfig}, tc.args...)...)
			if textCode != code {
				t.Errorf("text output exits %d, JSON %d", textCode, code)
			}
			t.Logf("adc preflight %s (exit %d):\n%s", strings.Join(tc.args, " "), textCode, text)
		})
	}
}

// Bad input and an API server that does not answer exit 2 with an error saying what to fix.
func TestPreflightBadInput(t *testing.T) {
	cp := framework.Get(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := framework.WriteKubeconfig(cp.Config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	unreachable := *cp.Config
	unreachable.Host = "https://127.0.0.1:1"
	gone := filepath.Join(t.TempDir(), "gone.kubeconfig")
	if err := framework.WriteKubeconfig(&unreachable, gone); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown plugin", []string{"--kubeconfig", kubeconfig, "--plugin", "kubernetes.io/rbd"}, `--plugin: unknown plugin "kubernetes.io/rbd": CSI migration covers kubernetes.io/aws-ebs`},
		{"unknown step", []string{"--kubeconfig", kubeconfig, "--to", "finished"}, `--to: unknown step "finished": a plugin moves to one of off, on, complete`},
		{"bad --migration", []string{"--kubeconfig", kubeconfig, "--migration", "kubernetes.io/gce-pd=sometimes"}, `"--migration" flag: invalid migration setting`},
		{"unknown flag", []string{"--kubeconfig", kubeconfig, "--step", "on"}, "unknown flag: --step"},
		{"API server that does not answer", []string{"--kubeconfig", gone}, "listing pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runADC(t, append([]string{"preflight"}, tc.args...)...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// line renders a finding as the cases compare it.
func line(f preflight.Finding) string {
	s := string(f.Severity) + " " + string(f.Check) + " " + f.Plugin + " " + f.Object.String()
	if f.Node != "" {
		s += " @" + f.Node
	}
	return s
}

// runADC runs the adc binary and returns its stdout, stderr and exit code.
func runADC(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return framework.RunCommand(t, adcBinary, args...)
}
