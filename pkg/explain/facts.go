package explain

import (
	"strconv"

	"github.com/migration-aware/adc/pkg/migration"
)

// facts lists the objects the decision of one pod volume read, in the order the engine
// reads them, and what each said: the claim, the volume, the plugin's mode, the node's
// migration state, the driver's registration on the node, the driver's attachRequired.
func (b *builder) facts(dv migration.DecidedVolume, node migration.NodeObjects) []Fact {
	cfg := &b.opts.Config
	d := dv.Decision
	var out []Fact
	if dv.ClaimName != "" {
		claim := "PersistentVolumeClaim " + strconv.Quote(dv.ClaimName)
		if dv.Pending != nil {
			return append(out, Fact{Object: claim, Says: dv.Pending.Reason})
		}
		out = append(out, Fact{Object: claim, Says: "bound to PersistentVolume " + strconv.Quote(dv.PVName)})
	}
	switch {
	case dv.PV != nil && dv.PV.Spec.CSI != nil:
		out = append(out, Fact{Object: "PersistentVolume " + strconv.Quote(dv.PV.Name), Says: "native CSI volume of driver " + d.Driver + ", handle " + d.VolumeHandle})
	case d.InTreePlugin != "":
		what := "pod volume " + strconv.Quote(dv.Name)
		if dv.PV != nil {
			what = "PersistentVolume " + strconv.Quote(dv.PV.Name)
		}
		says := d.InTreePlugin + " volume"
		if d.VolumeHandle != "" {
			says += "; csi-translation-lib translates it to driver " + d.Driver + ", handle " + d.VolumeHandle
		}
		out = append(out, Fact{Object: what, Says: says})
		mode := cfg.Mode(d.InTreePlugin)
		out = append(out, Fact{Object: "--migration", Says: d.InTreePlugin + "=" + string(mode)})
		if mode != migration.ModeComplete {
			src := cfg.NodeSource
			if src == "" {
				src = migration.NodeSourceCSINode
			}
			nm := migration.NodePluginMigration(src, node, d.InTreePlugin, d.Driver)
			out = append(out, Fact{Object: "node " + strconv.Quote(node.Name) + " (--node-migration-source=" + string(src) + ")",
				Says: d.InTreePlugin + " " + nm.State.String() + ": " + nm.Evidence})
		}
	}
	if csiPath(d) {
		reg := migration.NodeDriverRegistration(node, d.Driver)
		out = append(out, Fact{Object: "CSI driver " + d.Driver + " on node " + strconv.Quote(node.Name), Says: reg.State.String() + ": " + reg.Evidence})
		src := cfg.DriverSource
		if src == "" {
			src = migration.DriverSourceCSIDriver
		}
		a := migration.DriverAttachRequired(src, b.idx, d.Driver)
		out = append(out, Fact{Object: "CSI driver " + d.Driver + " (--driver-info-source=" + string(src) + ")", Says: a.Evidence})
	}
	return out
}

// csiPath says whether the decision sends the volume through its CSI driver, or would but
// for the driver's registration.
func csiPath(d migration.Decision) bool {
	switch d.Mechanism {
	case migration.MechanismCSI, migration.MechanismCSINoAttach:
		return true
	case migration.MechanismWait:
		return d.WaitCause == migration.WaitDriverRegistration
	}
	return false
}
