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
// cluster went through, not the few a client happens to observe. Its invariants hold for
// every kind of attachment: a VolumeAttachment of a PersistentVolume (also one whose
// PersistentVolume was deleted since: the checker remembers the last state of every
// PersistentVolume), a VolumeAttachment with spec.source.inlineVolumeSpec (a migrated
// inline volume), and an in-tree attachment, which has no VolumeAttachment and shows only as
// its unique name (kubernetes.io/gce-pd/<disk>) in the node's status.volumesAttached: listed
// is attached, unlisted is detached. A volume is one volume across mechanisms (a gce-pd disk
// attached in-tree and through pd.csi.storage.gke.io). The invariants:
//
//   - detach_while_in_use: a VolumeAttachment is deleted, or an in-tree volume unlisted,
//     while its node lists the volume in status.volumesInUse, the node exists, has no
//     node.kubernetes.io/out-of-service taint and has not been NotReady for at least
//     --max-wait-for-unmount.
//   - detach_order: a VolumeAttachment is deleted while its (existing) node still lists the
//     volume in status.volumesAttached.
//   - multi_attach: a VolumeAttachment is created, or an in-tree volume listed, for a
//     ReadWriteOnce volume on one node while one (in any state, deleting included) exists on
//     another node, or another node lists it in-tree.
//   - convergence: once faults stop, every pod's volume is attached on its node (an attached
//     VolumeAttachment, or the in-tree listing) and listed in the node's status, and nothing
//     is left attached that no pod on its node uses: no VolumeAttachment, no in-tree listing,
//     no CSI listing without an attached VolumeAttachment. A deleted node counts as using
//     nothing: its VolumeAttachments must go (adc detaches from a deleted node) and its pods
//     were deleted with it.
//
// A VolumeAttachment is "deleted" at the first revision where it has a deletionTimestamp, or
// at its DELETE when it never had one (nothing held it with a finalizer).
//
// The churn gives the invariants each kind to check: claims of CSI PersistentVolumes, inline
// gce-pd volumes on nodes that migrated gce-pd (VolumeAttachments with an inline spec), and
// PersistentVolumes deleted under their VolumeAttachments and created again later. adc runs
// here without an in-tree attacher, so in-tree attachments are covered by the checker's unit
// tests only. Every random choice of the harness (churn, faults, attacher failures, unmount
// times) comes from CHAOS_SEED; what differs between two runs of one seed is the timing of
// the processes, not the choices.
package chaos
