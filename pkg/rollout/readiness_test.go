package rollout_test

import (
	"reflect"
	"testing"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
)

func TestVolumesByPath(t *testing.T) {
	r := rollout.FromController(rollouttest.Fixture(), rollouttest.Now)
	tests := []struct {
		plugin string
		want   rollout.VolumePaths
	}{
		// csi: pg-0 on a, pg-1 and the multi-attach app-2 on b; held: the in-tree pair on c
		// (no in-tree attacher) and the wait pair on d.
		{"kubernetes.io/gce-pd", rollout.VolumePaths{CSI: 3, InTree: 0, Held: 2, Total: 5}},
		{"kubernetes.io/aws-ebs", rollout.VolumePaths{Held: 1, Total: 1}},
		{"kubernetes.io/portworx-volume", rollout.VolumePaths{}},
	}
	for _, tt := range tests {
		t.Run(tt.plugin, func(t *testing.T) {
			if got := plugin(t, r, tt.plugin).VolumesByPath; got != tt.want {
				t.Errorf("volumesByPath = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadinessForComplete(t *testing.T) {
	r := rollout.FromController(rollouttest.Fixture(), rollouttest.Now)
	tests := []struct {
		name, plugin string
		want         rollout.Readiness
	}{
		{"mode on: the unmigrated and the silent node block, with their volumes", "kubernetes.io/gce-pd", rollout.Readiness{
			NodesNotMigrated: []rollout.NodeBlocker{{Node: "node-c", State: "not-migrated"}, {Node: "node-d", State: "unknown"}},
			VolumesChangingPath: []rollout.PathChange{
				{Node: "node-c", Pod: "web/app-1", Volume: "cache", PV: "pv-c", From: migration.MechanismInTree},
				{Node: "node-d", Pod: "db/pg-2", Volume: "data", PV: "pv-d", From: migration.MechanismWait},
			}}},
		{"mode off: the skew pair's node already expects CSI, so it is no blocker", "kubernetes.io/aws-ebs", rollout.Readiness{
			NodesNotMigrated:    []rollout.NodeBlocker{{Node: "node-b", State: "not-migrated"}, {Node: "node-c", State: "not-migrated"}, {Node: "node-d", State: "unknown"}},
			VolumesChangingPath: []rollout.PathChange{}}},
		{"mode complete: lagging kubelets are listed, no volume changes path", "kubernetes.io/portworx-volume", rollout.Readiness{
			NodesNotMigrated: []rollout.NodeBlocker{{Node: "node-a", State: "not-migrated"}, {Node: "node-b", State: "not-migrated"},
				{Node: "node-c", State: "not-migrated"}, {Node: "node-d", State: "unknown"}},
			VolumesChangingPath: []rollout.PathChange{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plugin(t, r, tt.plugin).Readiness; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("readiness =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestReadyWhenEveryNodeReportsMigrated(t *testing.T) {
	view := rollouttest.Fixture()
	view.Nodes = view.Nodes[:2] // node-a and node-b both list gce-pd
	var pairs = view.Pairs[:0]
	for _, p := range view.Pairs {
		if p.Node == "node-a" || p.Node == "node-b" {
			pairs = append(pairs, p)
		}
	}
	view.Pairs = pairs
	r := rollout.FromController(view, rollouttest.Now)
	gce := plugin(t, r, "kubernetes.io/gce-pd")
	if !gce.Readiness.Ready || len(gce.Readiness.NodesNotMigrated) != 0 || len(gce.Readiness.VolumesChangingPath) != 0 {
		t.Errorf("gce-pd readiness = %+v, want ready", gce.Readiness)
	}
	if ebs := plugin(t, r, "kubernetes.io/aws-ebs"); ebs.Readiness.Ready {
		t.Errorf("aws-ebs is ready although node-b does not report it migrated: %+v", ebs.Readiness)
	}
}

func TestStandbyIsNeverReady(t *testing.T) {
	for _, p := range rollout.Standby(migration.DefaultConfig(), rollouttest.Now).Plugins {
		if p.Readiness.Ready || p.Readiness.NodesNotMigrated == nil || p.Readiness.VolumesChangingPath == nil {
			t.Errorf("%s: standby readiness = %+v, want not ready with empty lists", p.Plugin, p.Readiness)
		}
	}
}
