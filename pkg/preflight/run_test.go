package preflight

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

var testNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

var sharedDisk = v1.AzureSharedBlobDisk

// gceZone is the node label the GCE PD CSI driver's topology puts on its nodes, which a
// translated zonal gce-pd PersistentVolume requires.
const gceZone = "topology.gke.io/zone"

// line renders a finding as the tests compare it: severity, check, plugin, object, node.
func line(f Finding) string {
	s := string(f.Severity) + " " + string(f.Check) + " " + f.Plugin + " " + f.Object.String()
	if f.Node != "" {
		s += " @" + f.Node
	}
	return s
}

// healthy is a cluster where gce-pd can move to complete: one migrated node with the driver
// registered and the zone label, a CSIDriver, and a zonal volume attached through CSI.
func healthy() *cluster {
	return newCluster().
		node("n1", "v1.36.3", gceZone, zone).
		csiNode("n1", gcePlugin, registered(gceDriver, 0)).
		csiDriver(gceDriver).
		gcePV("db", "pv-a", zone).pod("db", "a", "n1", "pv-a").
		va(gceHandle(zone, "disk-pv-a"), gceDriver, "n1", "pv-a")
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		cl   *cluster
		opts Options
		want []string
		// why holds substrings the Why of the first finding must contain.
		why []string
	}{
		{name: "a healthy cluster moves gce-pd to complete with nothing found",
			cl: healthy(), opts: Options{Config: config(), Plugins: []string{gcePlugin}}},
		{name: "native CSI volumes are no plugin's step, whatever their driver's registration",
			cl:   healthy().csiPV("db", "pv-native", "other.csi.example.com").pod("db", "native", "n1", "pv-native"),
			opts: Options{Config: config(), Plugins: []string{gcePlugin}}},
		{name: "a migrated node whose CSINode lacks the driver blocks, an empty one warns",
			cl: healthy().node("n2", "v1.36.3", gceZone, zone).csiNode("n2", gcePlugin).gcePV("db", "pv-b", zone).pod("db", "b", "n2", "pv-b").
				node("n3", "v1.36.3", gceZone, zone).csiNode("n3", gcePlugin),
			opts: Options{Config: config(), Plugins: []string{gcePlugin}, To: migration.ModeComplete},
			want: []string{"blocks driver-not-registered kubernetes.io/gce-pd CSINode/n2 @n2", "warns driver-not-registered kubernetes.io/gce-pd CSINode/n3 @n3"},
			why:  []string{`CSINode "n2" spec.drivers does not list "pd.csi.storage.gke.io"`, "1 volume of kubernetes.io/gce-pd"}},
		{name: "no CSIDriver object warns with the default attachRequired",
			cl:   healthy().withoutCSIDrivers(),
			opts: Options{Config: config(), Plugins: []string{"gce-pd"}},
			want: []string{"warns no-csidriver kubernetes.io/gce-pd CSIDriver/pd.csi.storage.gke.io"},
			why:  []string{`no CSIDriver "pd.csi.storage.gke.io" exists in storage.k8s.io/v1`, "defaults to true"}},
		{name: "a CSIDriver without the Persistent lifecycle mode blocks migrated volumes",
			cl:   healthy().withoutCSIDrivers().csiDriver(gceDriver, storagev1.VolumeLifecycleEphemeral),
			opts: Options{Config: config(), Plugins: []string{gcePlugin}},
			want: []string{"blocks lifecycle-mode kubernetes.io/gce-pd CSIDriver/pd.csi.storage.gke.io"},
			why:  []string{"1 PersistentVolume and 0 inline volumes"}},
		{name: "a StorageClass csi-translation-lib rejects blocks",
			cl: healthy().storageClass("zonal", gcePlugin, map[string]string{"zone": zone},
				v1.TopologySelectorTerm{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: v1.LabelTopologyZone, Values: []string{zone}}}}),
			opts: Options{Config: config(), Plugins: []string{gcePlugin}},
			want: []string{"blocks storageclass kubernetes.io/gce-pd StorageClass/zonal"},
			why:  []string{"cannot simultaneously set allowed topologies and zone/zones parameters"}},
		{name: "a StorageClass whose parameters are dropped warns, a translated one is fine",
			cl: healthy().storageClass("fast", vsPlugin, map[string]string{"diskformat": "thin", "nosuchparam": "x"}).
				storageClass("pd", gcePlugin, map[string]string{"type": "pd-ssd", "zone": zone}),
			opts: Options{Config: config(), Plugins: []string{gcePlugin, vsPlugin}, To: migration.ModeOn},
			want: []string{"warns storageclass kubernetes.io/vsphere-volume StorageClass/fast", "warns no-csidriver kubernetes.io/vsphere-volume CSIDriver/csi.vsphere.vmware.com"},
			why:  []string{"drops the parameter(s) nosuchparam"}},
		{name: "an untranslatable PersistentVolume blocks",
			cl:   healthy().gcePV("db", "pv-bad", "us-central1-a__europe-west1-b"),
			opts: Options{Config: config(), Plugins: []string{gcePlugin}},
			want: []string{"blocks untranslatable kubernetes.io/gce-pd PersistentVolume/pv-bad"},
			why:  []string{"regions"}},
		{name: "a zonal PersistentVolume without zone label warns",
			cl:   healthy().gcePV("db", "pv-nozone", ""),
			opts: Options{Config: config(), Plugins: []string{gcePlugin}},
			want: []string{"warns placement kubernetes.io/gce-pd PersistentVolume/pv-nozone"},
			why:  []string{"no zone label", "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-pv-nozone"}},
		{name: "a node without the driver's zone label blocks the mount of a zonal volume",
			cl: healthy().node("bare", "v1.36.3").csiNode("bare", gcePlugin, registered(gceDriver, 0)).
				gcePV("db", "pv-c", zone).pod("db", "c", "bare", "pv-c"),
			opts: Options{Config: config(), Plugins: []string{gcePlugin}},
			want: []string{"blocks placement kubernetes.io/gce-pd PersistentVolume/pv-c @bare"},
			why:  []string{"topology.gke.io/zone in (us-central1-a)", "volume node affinity conflict"}},
		{name: "a node over its driver's attach limit blocks",
			cl: newCluster().node("n1", "v1.36.3", gceZone, zone).csiNode("n1", gcePlugin, registered(gceDriver, 1)).csiDriver(gceDriver).
				gcePV("db", "pv-a", zone).gcePV("db", "pv-b", zone).pod("db", "a", "n1", "pv-a").pod("db", "b", "n1", "pv-b"),
			opts: Options{Config: config(), Plugins: []string{gcePlugin}},
			want: []string{"blocks attach-limit kubernetes.io/gce-pd CSINode/n1 @n1"},
			why:  []string{"2 volumes attached through pd.csi.storage.gke.io", "over the 1"}},
		{name: "complete with a node too old to migrate and one not migrated blocks both",
			cl: healthy().node("old", "v1.13.12", gceZone, zone).csiNode("old", "-", registered(gceDriver, 0)).
				node("later", "v1.22.0", gceZone, zone).csiNode("later", ebsPlugin, registered(gceDriver, 0)),
			opts: Options{Config: config(), Plugins: []string{gcePlugin}, To: migration.ModeComplete},
			want: []string{"blocks kubelet-version kubernetes.io/gce-pd Node/old @old", "blocks node-not-migrated kubernetes.io/gce-pd CSINode/later @later",
				"blocks node-not-migrated kubernetes.io/gce-pd CSINode/old @old"},
			why: []string{"v1.13.12", "CSIMigrationGCE: alpha in 1.14"}},
		{name: "off with a kubelet that always migrates blocks",
			cl:   healthy(),
			opts: Options{Config: config(), Plugins: []string{gcePlugin}, To: migration.ModeOff},
			want: []string{"blocks drain kubernetes.io/gce-pd Node/n1 @n1", "blocks kubelet-version kubernetes.io/gce-pd Node/n1 @n1",
				"blocks node-migrated kubernetes.io/gce-pd CSINode/n1 @n1", "blocks path-change kubernetes.io/gce-pd PersistentVolume/pv-a @n1"},
			why: []string{"kubernetes/community#3072"}},
		{name: "going forward an in-tree attachment changes path: a warning",
			cl: newCluster().node("n1", "v1.36.3", gceZone, zone).csiNode("n1", gcePlugin, registered(gceDriver, 0)).csiDriver(gceDriver).
				gcePV("db", "pv-a", zone).pod("db", "a", "n1", "pv-a").listing("n1", "kubernetes.io/gce-pd/disk-pv-a"),
			opts: Options{Config: config(gcePlugin, "off"), Plugins: []string{gcePlugin}},
			want: []string{"warns path-change kubernetes.io/gce-pd PersistentVolume/pv-a @n1"},
			why:  []string{"attached to node n1 in-tree", "next attach goes through CSI"}},
		{name: "going back from complete a CSI attachment on a not-migrated node needs a drain",
			cl: newCluster().node("n1", "v1.24.0", gceZone, zone).csiNode("n1", "-", registered(gceDriver, 0)).csiDriver(gceDriver).
				gcePV("db", "pv-a", zone).pod("db", "a", "n1", "pv-a").va(gceHandle(zone, "disk-pv-a"), gceDriver, "n1", "pv-a"),
			opts: Options{Config: config(gcePlugin, "complete"), Plugins: []string{gcePlugin}, To: migration.ModeOn},
			want: []string{"blocks drain kubernetes.io/gce-pd Node/n1 @n1", "blocks path-change kubernetes.io/gce-pd PersistentVolume/pv-a @n1"},
			why:  []string{"going complete -> on"}},
		{name: "off to on holds the volumes of a node that has not reported",
			cl: newCluster().node("n1", "v1.36.3").csiDriver(gceDriver).
				gcePV("db", "pv-a", zone).pod("db", "a", "n1", "pv-a"),
			opts: Options{Config: config(gcePlugin, "off"), Plugins: []string{gcePlugin}},
			want: []string{"blocks held-after-step kubernetes.io/gce-pd PersistentVolume/pv-a @n1"},
			why:  []string{`CSINode "n1" does not exist yet`}},
		{name: "an untranslatable inline volume blocks",
			cl: healthy().csiNode("n1", "kubernetes.io/azure-disk", registered("disk.csi.azure.com", 0)).csiDriver("disk.csi.azure.com").
				inlinePod("web", "inl", "n1", v1.VolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "uri", Kind: &sharedDisk}}),
			opts: Options{Config: config(), Plugins: []string{"kubernetes.io/azure-disk"}},
			want: []string{"blocks untranslatable kubernetes.io/azure-disk Pod/web/inl:inline @n1"},
			why:  []string{"not supported in csi migration"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(tc.opts, tc.cl.Cluster, testNow)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range r.Findings {
				got = append(got, line(f))
				if f.Why == "" || f.Fix == "" {
					t.Errorf("finding %s lacks why or fix: %+v", line(f), f)
				}
			}
			want := slices.Clone(tc.want)
			slices.Sort(want)
			sorted := slices.Clone(got)
			slices.Sort(sorted)
			if !slices.Equal(sorted, want) {
				t.Errorf("findings:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			blocks := 0
			for _, w := range want {
				if strings.HasPrefix(w, "blocks ") {
					blocks++
				}
			}
			if r.Blocking != blocks || r.OK != (blocks == 0) {
				t.Errorf("blocking = %d, ok = %v; want %d, %v", r.Blocking, r.OK, blocks, blocks == 0)
			}
			if len(tc.why) > 0 && len(r.Findings) > 0 {
				all := ""
				for _, f := range r.Findings {
					all += f.Why + "\n"
				}
				for _, s := range tc.why {
					if !strings.Contains(all, s) {
						t.Errorf("no finding's why contains %q:\n%s", s, all)
					}
				}
			}
		})
	}
}

func (c *cluster) withoutCSIDrivers() *cluster {
	c.Objects.CSIDrivers = nil
	return c
}

// TestRenderText checks the terminal layout: the header and steps, each finding on its own
// line with indented why, translated class and fix lines, the verdict; and that cluster data
// with line breaks stays on its line.
func TestRenderText(t *testing.T) {
	cl := healthy().node("n2", "v1.36.3", gceZone, zone).csiNode("n2", gcePlugin).gcePV("db", "pv-b", zone).pod("db", "b", "n2", "pv-b").
		storageClass("fast\nFORGED line", vsPlugin, map[string]string{"diskformat": "thin", "nosuchparam": "x"})
	r, err := Run(Options{Config: config(), Plugins: []string{gcePlugin, vsPlugin}, To: migration.ModeOn}, cl.Cluster, testNow)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := RenderText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"Preflight at 2026-11-25T12:00:00Z of 2 managed nodes (migration=",
		"\n  step kubernetes.io/gce-pd: on -> on (CSI driver pd.csi.storage.gke.io)\n",
		"\nBLOCKS driver-not-registered kubernetes.io/gce-pd CSINode/n2\n    why: CSINode \"n2\" spec.drivers does not list",
		"\nWARNS storageclass kubernetes.io/vsphere-volume StorageClass/fast FORGED line\n",
		"\n    translated: provisioner csi.vsphere.vmware.com, parameters {csimigration=true, diskformat-migrationparam=thin}\n    fix: ",
		"\nNOT SAFE: 1 finding blocks, 2 warnings; fix what blocks first\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q", want)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "FORGED") {
			t.Errorf("a name with a line break forged a line: %q", l)
		}
	}
}
