// Package chaos runs adc, as users run it, against a control plane under faults (a
// kube-apiserver restart with etcd compacted while it is down, NotReady and out-of-service
// nodes, a deleted node, failing attaches and detaches, leader kills) while simulated
// kubelets, a simulated external-attacher and pod churn keep volumes moving, and checks the
// safety rules of the README against what etcd recorded, in revision order. The kubelets and
// the attacher are simulated because the chaos schedule decides which attaches and detaches
// fail, which nodes stop reporting and which pods churn, and because many nodes must fit on a
// 2-core machine; test/e2e runs the same kinds of faults (adc killed, API server restarted,
// kubelet restarted or stopped) on the real parts.
//
// The checker (Checker) is the point: it reads etcd directly, so it sees every state the
// cluster went through, not the few a client happens to observe. Its invariants:
//
//   - detach_while_in_use: a VolumeAttachment is deleted while its node lists the volume in
//     status.volumesInUse, the node exists, has no node.kubernetes.io/out-of-service taint and
//     has not been NotReady for at least --max-wait-for-unmount.
//   - detach_order: a VolumeAttachment is deleted while its (existing) node still lists the
//     volume in status.volumesAttached.
//   - multi_attach: a VolumeAttachment is created for a ReadWriteOnce PersistentVolume on one
//     node while one (in any state, deleting included) exists on another node.
//   - convergence: once faults stop, every pod's volume has an attached VolumeAttachment on
//     its node and is listed in the node's status, and no VolumeAttachment is left that no pod
//     on its node uses. A deleted node counts as using nothing: its VolumeAttachments must go
//     (adc detaches from a deleted node) and its pods were deleted with it.
//
// A VolumeAttachment is "deleted" at the first revision where it has a deletionTimestamp, or
// at its DELETE when it never had one (nothing held it with a finalizer).
package chaos
