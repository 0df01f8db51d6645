// Package harness runs adc end to end against the real parts it talks to in a cluster: a
// test control plane (kube-apiserver + etcd through envtest), real kubelets (kubemark's
// hollow kubelet with controller attach/detach on, one process per node), the Kubernetes e2e
// mock CSI driver registered with each kubelet through the plugin-registration API, the
// kubernetes-csi external-attacher, and the adc binary run as users run it. Nothing in it
// plays the kubelet or the attacher: that is the point, a contract mistake shared by adc and
// its simulators (test/simulator) shows up here.
//
// The binaries come from `make e2e-assets` (bin/e2e, or $E2E_ASSETS) and `make
// envtest-assets`. A Stack lives in one temporary folder (kubelet root dirs, sockets, logs,
// call logs) and Stop leaves nothing behind: no process, socket, folder or listening port,
// which Leftovers checks. $E2E_KEEP_LOGS=<folder> keeps a copy of every log for debugging.
//
// Use:
//
//	s, err := harness.Start(ctx, harness.Options{ADCBinary: bin}) // 3 nodes, 1 attachable driver
//	defer s.Stop()
//	s.CreateNamespace(ctx, "ns")
//	s.CreateVolume(ctx, "ns", harness.Volume{Name: "data", Driver: harness.DefaultDriver, Handle: "vol-1"})
//	s.CreatePod(ctx, "ns", "app", s.Nodes()[0], "data")
//	s.WaitPodsRunning(ctx, "ns", []string{"app"}, time.Minute)
//	calls, _ := s.Driver(harness.DefaultDriver).CallsFor("vol-1") // CSI calls, in order
//
// Options choose the nodes (DeferredKubelets start later, with Kubelet(name).Start), the
// drivers (NoAttach for attachRequired=false), adc's extra flags (ADCArgs; DeferADC), the
// kubelets' status period (default 1 s), a restartable kube-apiserver
// (ControlPlane().RestartAPIServer), and ShippedRBAC: adc as the ServiceAccount of
// deploy/kubernetes under exactly its RBAC, with an audit log to check what was refused to
// ADCUser() (ControlPlane().NotReady says when a restarted server was not ready yet), and
// CRDs and RBAC manifests created before kube-controller-manager and adc start (e.g.
// deploy/crds' DetachPolicy). ADC(), Kubelet(name).Process(), Driver(name).Process()
// and Driver(name).Attacher() are Processes a test can Stop (SIGTERM), Kill (SIGKILL) and
// Start again with the same flags (SetArgs changes them). A kubelet's root dir survives its
// restarts, as /var/lib/kubelet does, so the drivers' sockets in it stay and the restarted
// kubelet registers them again. Every driver serves every node of the stack, including
// deferred ones; nodes cannot be added to a running stack.
//
// Call logs: csimock appends one JSON line per call (Call): the method, the volume id as the
// caller sent it (the PV's handle; a migrated gce-pd volume's translated handle), the node
// whose kubelet called (empty for csi-attacher), the gRPC code and the time. The mock maps
// each handle to a mock volume on first sight, so tests use any stable handle.
// DetachOrderViolations checks a log for detaches of volumes a kubelet still had mounted.
//
// Quirks of envtest the harness covers for tests: there is no PV controller (CreateVolume
// binds the PV and PVC itself), no scheduler (pods carry spec.nodeName), no node lifecycle
// controller (the kubelet's node.kubernetes.io/not-ready:NoSchedule taint stays, and a
// stopped kubelet's node is not marked NotReady/Unknown by anyone), and no namespace or
// garbage collector controller (namespaces and PVs stay until the control plane stops).
// Pods have no service account token and the kubelets' fake runtime "runs" any image.
// Options.Cluster runs what is missing instead, kube-scheduler and kube-controller-manager
// with all its controllers, for a whole cluster with nothing staged (package
// test/e2e/cluster chooses their modes and flags; NoADC when kube-controller-manager attaches).
//
// Start order, as on a cluster: control plane (and kube-scheduler and kube-controller-manager),
// then the kubelets, then, once their Nodes exist, the CSI drivers (a node plugin's DaemonSet
// pod starts on a registered node; a kubelet that finds a registration socket before its Node
// exists retries with a backoff of up to two minutes), their attachers and adc. Ports are picked
// below the kernel's ephemeral range, where a hundred kubelets' outgoing connections cannot take
// them first.
package harness
