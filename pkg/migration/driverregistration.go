package migration

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

// RegistrationState is what a node says about one CSI driver: whether the driver's node
// plugin has registered with the node's kubelet.
type RegistrationState int

const (
	// RegistrationUnknown means the node has no object that lists CSI drivers yet (no CSINode,
	// no CSINodeInfo): it has said nothing.
	RegistrationUnknown RegistrationState = iota
	// DriverNotRegistered means the node's object lists drivers, but not this one (yet).
	DriverNotRegistered
	// DriverRegistered means the node lists the driver: its kubelet knows the driver's node ID,
	// which the external-attacher reads before it attaches anything to the node.
	DriverRegistered
)

// String returns a short lower-case name for logs, JSON and tests.
func (s RegistrationState) String() string {
	switch s {
	case DriverRegistered:
		return "registered"
	case DriverNotRegistered:
		return "not-registered"
	default:
		return "unknown"
	}
}

// DriverRegistration is a node's answer about one CSI driver, with the evidence that Decide
// quotes in its reason.
type DriverRegistration struct {
	// State is registered, not registered or unknown.
	State RegistrationState
	// Evidence names the object and field that gave the answer, e.g.
	// `CSINode "node-1" spec.drivers does not list "pd.csi.storage.gke.io"`.
	Evidence string
}

// NodeDriverRegistration says whether csiDriver is registered on the node. The kubelet adds a
// driver to its CSINode's spec.drivers (with the driver's node ID) once the driver's node
// plugin has registered, and removes it when the plugin goes; the external-attacher reads
// the node ID there and fails every attach to a node whose CSINode does not list the driver
// ("CSINode ... does not contain driver ..."). So:
//   - a CSINode exists: it decides, whatever the node migration source (the external-attacher
//     reads it too);
//   - else a seed-API CSINodeInfo exists: its status.drivers entry for the driver decides
//     (available or not); without one, an entry in spec.drivers (written at registration)
//     means registered;
//   - else: unknown.
//
// It is pure: nothing is modified and any object may be nil.
func NodeDriverRegistration(node NodeObjects, csiDriver string) DriverRegistration {
	if node.CSINode != nil {
		return fromCSINodeDrivers(node.CSINode, csiDriver)
	}
	if node.CSINodeInfo != nil {
		return fromCSINodeInfoDrivers(node.CSINodeInfo, csiDriver)
	}
	q := strconv.Quote(node.Name)
	return DriverRegistration{State: RegistrationUnknown, Evidence: "neither CSINode " + q + " nor CSINodeInfo " + q + " exists yet"}
}

// CSINodeDriver returns the CSINode's entry for driver, or nil.
func CSINodeDriver(csiNode *storagev1.CSINode, driver string) *storagev1.CSINodeDriver {
	if csiNode == nil {
		return nil
	}
	for i := range csiNode.Spec.Drivers {
		if csiNode.Spec.Drivers[i].Name == driver {
			return &csiNode.Spec.Drivers[i]
		}
	}
	return nil
}

func fromCSINodeDrivers(csiNode *storagev1.CSINode, driver string) DriverRegistration {
	// Object and driver names are DNS names: plain quotes suffice.
	if CSINodeDriver(csiNode, driver) != nil {
		return DriverRegistration{State: DriverRegistered, Evidence: "CSINode \"" + csiNode.Name + "\" spec.drivers lists \"" + driver + "\""}
	}
	return DriverRegistration{State: DriverNotRegistered, Evidence: "CSINode \"" + csiNode.Name + "\" spec.drivers does not list \"" + driver + "\""}
}

func fromCSINodeInfoDrivers(info *csinodeinfo.CSINodeInfo, driver string) DriverRegistration {
	obj := "CSINodeInfo \"" + info.Name + "\" "
	for i := range info.Status.Drivers {
		if d := &info.Status.Drivers[i]; d.Name == driver {
			if d.Available {
				return DriverRegistration{State: DriverRegistered, Evidence: obj + "status.drivers[" + driver + "] is available"}
			}
			return DriverRegistration{State: DriverNotRegistered, Evidence: obj + "status.drivers[" + driver + "] is not available"}
		}
	}
	for i := range info.Spec.Drivers {
		if info.Spec.Drivers[i].Name == driver {
			return DriverRegistration{State: DriverRegistered, Evidence: obj + "spec.drivers lists \"" + driver + "\""}
		}
	}
	return DriverRegistration{State: DriverNotRegistered, Evidence: obj + "does not list \"" + driver + "\""}
}

// awaitRegistration turns a decision to attach through a VolumeAttachment into a wait while
// the node does not list the decision's CSI driver: the external-attacher would fail such an
// attach ("CSINode ... does not contain driver ...") and retry only after its backoff, and
// the pod would show a FailedAttachVolume warning meanwhile. The real kubelet writes its
// CSINode with the migrated-plugins annotation first and adds the driver tens to hundreds of
// milliseconds later, and removes a driver whose node plugin restarts. The wait keeps every
// name of the volume (driver, handle, in-tree unique name), so an existing attachment is
// still recognised and kept: it holds the attach, never a detach. A volume the node's status
// already lists as attached is not held (nothing to attach). Other mechanisms pass through
// unchanged.
func awaitRegistration(d Decision, in *Input) Decision {
	if d.Mechanism != MechanismCSI || !driverMissing(in, d.Driver) || listedAttached(in.Node, d.UniqueName, d.InTreeUniqueName) {
		return d
	}
	reg := NodeDriverRegistration(NodeObjects{Name: in.NodeName, Node: in.Node, CSINode: in.CSINode, CSINodeInfo: in.CSINodeInfo}, d.Driver)
	d.Mechanism = MechanismWait
	d.WaitCause = WaitDriverRegistration
	d.Reason = "waiting for CSI driver " + strconv.Quote(d.Driver) + " to register on node " + strconv.Quote(in.NodeName) + ": " + reg.Evidence +
		" (the kubelet lists a driver once its node plugin has registered, and the external-attacher cannot attach to the node before); adc holds the volume (no attach, no detach) and attaches it as soon as the node lists the driver. Once registered: " + d.Reason
	d.UniqueName = ""
	d.VolumeAttachmentName = ""
	d.Source = storagev1.VolumeAttachmentSource{}
	return d
}

// listedAttached reports whether the node's status.volumesAttached lists the volume under
// one of its names: it is attached already, so there is no attach to hold back when its
// driver leaves the CSINode (a node plugin restarting), and no hold, Event or retry either.
func listedAttached(node *v1.Node, names ...string) bool {
	if node == nil {
		return false
	}
	for i := range node.Status.VolumesAttached {
		for _, n := range names {
			if n != "" && string(node.Status.VolumesAttached[i].Name) == n {
				return true
			}
		}
	}
	return false
}

// driverMissing reports whether the node's CSINode (or, without one, its CSINodeInfo) says
// the driver is not registered: NodeDriverRegistration(...).State == DriverNotRegistered,
// without building the evidence, since Decide asks it for every volume it sends through a
// VolumeAttachment. A node with neither object is not held here: a migrated volume whose
// node must be asked already waits for the node to report, and a native CSI volume (or one
// whose plugin is complete) never needed the node's objects to be decided.
func driverMissing(in *Input, driver string) bool {
	switch {
	case in.CSINode != nil:
		return CSINodeDriver(in.CSINode, driver) == nil
	case in.CSINodeInfo != nil:
		return fromCSINodeInfoDrivers(in.CSINodeInfo, driver).State == DriverNotRegistered
	}
	return false
}
