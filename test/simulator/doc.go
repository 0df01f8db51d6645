// Package simulator simulates what lives outside the control plane and that adc's tests
// and demo need: a CSI driver's external-attacher (it sets VolumeAttachment
// status.attached) and the kubelet's registration and reporting (Node, CSINode,
// status.volumesInUse). Nothing here is used by the controller itself; it is kept out of
// pkg/ so no production path can depend on it.
//
// The real parts (hollow kubelets, the kubernetes-csi external-attacher, the e2e mock CSI
// driver) run in test/e2e and `make demo REAL=1`, and every contract adc has with them is
// shown there. The simulators stay only where a test needs control the real parts do not
// give, and the packages using them say which:
//   - an attach or detach that fails, or takes a chosen time, on a chosen volume
//     (AttachError, DetachError, DetachDelay): the real attacher succeeds or fails as its
//     driver does, and the mock driver cannot be told per volume;
//   - a kubelet that stops reporting, reports a chosen volumesInUse, or writes a CSINode
//     with chosen migrated plugins: the real kubelet lists all seven plugins, and reports on
//     its own schedule;
//   - hundreds to thousands of nodes in one process (benchmarks, chaos churn), which real
//     kubelets (about 80 MiB each) cannot give on a 2-core machine;
//   - a node, CSINode or driver that appears at a chosen moment of a test.
//
// Where they differ from the real parts (measured in test/e2e): the real external-attacher
// calls ControllerPublish twice for most new attachments and again after a failed status
// write; the real kubelet writes its CSINode in two steps (annotation, then the driver), reports
// volumes in use before they are listed as attached, drops unmounted ones briefly after a
// restart, and re-stages its volumes after one; a pod deleted on a dead real kubelet keeps its
// containers reported running until it is force-deleted.
package simulator
