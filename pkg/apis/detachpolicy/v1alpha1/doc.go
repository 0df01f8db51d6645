// Package v1alpha1 is adc's own API for deciding, per volume, what proves that a lost node no
// longer uses its volumes: DetachPolicy, a cluster-scoped object adc only reads (list and
// watch) and reports on in its status.
//
// Upstream's attach/detach controller force-detaches a volume still reported in use after a
// fixed six minutes on a node that is not Ready, or at once on the out-of-service taint an
// operator adds by hand (KEP-2268); the only knob is the cluster-wide
// --disable-force-detach-on-timeout. A DetachPolicy says, for the volumes it selects (by
// StorageClass, CSI driver or in-tree plugin), which evidence is enough to detach them from a
// node that is not Ready (the cloud reports the machine shut down, a fencing operator's taint
// or condition, the out-of-service taint) and whether and after how long a timeout may force a
// detach without evidence. With no DetachPolicy objects adc behaves exactly as before.
//
// The CRD manifest is deploy/crds/adc.migration-aware.io_detachpolicies.yaml; its schema
// rejects what it can, and adc reports the rest in status.conditions (type Valid) and an
// Event, then ignores the policy. The types are hand-written, like the seed APIs next to them.
package v1alpha1
