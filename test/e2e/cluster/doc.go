// Package cluster runs a whole Kubernetes cluster on one machine from the parts a real one
// has, and adc's end-to-end scenarios on it with nothing staged: kube-apiserver and etcd
// (envtest), kube-scheduler v1.36.3, kube-controller-manager v1.36.3 with its default
// controllers (the PV binder, node lifecycle, taint eviction, pod garbage collector,
// StatefulSet, service account and root CA publisher controllers), hollow kubelets (real
// kubelets without containers), the Kubernetes e2e mock CSI driver and csi-attacher v4.13.0
// (package harness starts and stops each of them), and a cloud: k8s.io/cloud-provider's cloud
// node lifecycle controller, run in this process with a test cloud (TestCloud).
//
// The test cloud knows each hollow node's machine: running, shut down or gone. A test shuts a
// machine down (Cluster.ShutDownMachine: kubelet killed, machine shut down), partitions a node
// (Cluster.PartitionNode: kubelet killed, machine running), deletes a machine
// (Cluster.DeleteMachine) or starts it again (Cluster.StartMachine), never a Node: the
// node.cloudprovider.kubernetes.io/shutdown taint on a shut-down machine's NotReady node, its
// removal once the node is Ready again, and the deletion of a gone machine's Node come from the
// real controller, every --node-monitor-period (Timings.NodeMonitorPeriod), in every mode.
//
// The attach/detach controller comes in three modes (Mode), the same scenarios in each:
//   - kcm-adc: kube-controller-manager with adc inside (`make kcm-adc`), adc in place of the
//     built-in attach/detach controller;
//   - stock: the stock kube-controller-manager with its own attach/detach controller;
//   - standalone: the stock kube-controller-manager without its attach/detach controller,
//     and the adc binary as a process of its own, as its ServiceAccount under the RBAC
//     deploy/kubernetes ships.
//
// Every cluster has adc's DetachPolicy CRD (deploy/crds) installed before
// kube-controller-manager starts, in every mode (the stock controller ignores it), and in the
// kcm-adc mode the seed-API RBAC of deploy/kube-controller-manager (adc inside
// kube-controller-manager reads policies as the attachdetach-controller ServiceAccount). With no
// policy object adc applies the built-in rule, so only the node-loss scenarios
// (nodeloss_test.go), whose policies select their own StorageClasses, see a difference: a
// machine shut down under a policy accepting the cloud's shutdown taint (detached on the
// taint, the pod still on the node; the delay is reported), a partition under timeout Never
// (held past --max-wait-for-unmount, visibly) and its timeout changed while the node is down (detached at
// NotReady + the timeout, no restart), and invalid policies (Valid=False and an Event).
//
// The handover scenarios (issue 42) each start a small cluster of their own instead of a mode's
// shared one, because they change the attach/detach controller under running pods: adopting
// adc from kube-controller-manager's own controller and rolling back, with pods coming and
// going in the gap (handover_test.go, kcm-adc and standalone), a rolling upgrade of adc's two
// leader-elected replicas (upgrade_test.go) and adc started beside the built-in controller
// (bothatonce_test.go). They are judged from the API server's audit log, whose policy
// (AuditPolicy) keeps the response to every write of node status, VolumeAttachments and
// Leases: every revision of each node's status.volumesAttached is there (audit.go).
//
// Volumes come from the real PV controller: each scenario pre-creates PersistentVolumes of a
// StorageClass of its own (provisioner kubernetes.io/no-provisioner, binding Immediate), and
// the PV controller binds them to the claims of StatefulSet volumeClaimTemplates. Pods are
// placed by kube-scheduler; NotReady, the unreachable taints and the eviction of pods from a
// lost node come from the node lifecycle and taint eviction controllers; pod GC
// force-deletes the pods of an out-of-service node.
//
// Timings are shortened by flags, never by staging (Timings): the kubelets' node Lease lasts
// 10 s (default 40 s), so --node-monitor-grace-period can be 15 s (default 50 s, the same
// ratio) with --node-monitor-period 1 s (default 5 s; the cloud node lifecycle controller's
// period too); the API server's default not-ready and
// unreachable tolerations are 5 s (default 300 s); adc's --max-wait-for-unmount is 30 s
// (default 6 min). The stock attach/detach controller's 6 minutes are a constant
// (ReconcilerMaxWaitForUnmountDuration, no flag), so the stock mode keeps them.
//
// The binaries come from `make cluster-assets` (kube-scheduler and the stock
// kube-controller-manager, into bin/envtest/1.36.3 or $CLUSTER_ASSETS), `make kcm-adc`,
// `make e2e-assets` and `make envtest-assets`. `make cluster` starts one (Start) and prints
// its kubeconfig; `make bench-cluster` measures pod startup with volumes on all three modes.
package cluster
