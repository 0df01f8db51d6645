// Command csimock serves the Kubernetes e2e mock CSI driver
// (k8s.io/kubernetes/test/e2e/storage/drivers/csi-test, v1.36.3) to real kubelets and the real
// external-attacher, for adc's end-to-end suite.
//
// One process is one driver for all nodes, so a volume the controller service publishes is the
// volume the node service stages. It listens on:
//   - --controller-socket: CSI Identity and Controller, for csi-attacher's --csi-address;
//   - per --node NAME=ROOTDIR: CSI Identity and Node on ROOTDIR/plugins/<driver>/csi.sock (every
//     Node* call is so tagged with the node it came from), and the kubelet plugin-registration
//     service (pluginregistration v1) on ROOTDIR/plugins_registry/<driver>-reg.sock, so the
//     kubelet with that root dir registers the driver and writes CSINode itself.
//
// Volume handles: the mock knows only volumes it created, with sequence-number ids. With
// --map-handles (the default) every volume id a caller sends (a PV's volumeHandle such as
// vol-7, or a translated in-tree handle such as projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d1)
// is mapped to a mock volume of that name, created on first sight, and ids in responses are
// mapped back; so tests use stable handles and never call CreateVolume. --volume pre-creates
// handles. Ids returned by CreateVolume map to themselves.
//
// Every call is appended to --call-log as one JSON line, written per call (see callRecord).
// SIGTERM or SIGINT stops the servers and removes every socket and folder it created.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"k8s.io/klog/v2"
)

// options are what the command line sets.
type options struct {
	driverName       string
	controllerSocket string
	nodes            nodeList
	callLog          string
	disableAttach    bool
	mapHandles       bool
	volumes          stringList
	topology         topologyList
}

func main() {
	var o options
	fs := flag.CommandLine
	klog.InitFlags(fs)
	fs.StringVar(&o.driverName, "driver-name", "", "CSI driver name returned by GetPluginInfo; also the node ID of every node (required).")
	fs.StringVar(&o.controllerSocket, "controller-socket", "", "Unix socket of the CSI Identity and Controller services, for csi-attacher (required).")
	fs.Var(&o.nodes, "node", "NAME=KUBELET_ROOT_DIR of a node whose kubelet registers this driver; repeat for each node.")
	fs.StringVar(&o.callLog, "call-log", "", "File that receives one JSON line per CSI and registration call (required).")
	fs.BoolVar(&o.disableAttach, "disable-attach", false, "Serve a driver without ControllerPublish/Unpublish (for a CSIDriver with attachRequired=false).")
	fs.BoolVar(&o.mapHandles, "map-handles", true, "Map every volume id a caller sends to a mock volume of that name, created on first sight.")
	fs.Var(&o.volumes, "volume", "A volume handle to create at start (with --map-handles); repeatable.")
	fs.Var(&o.topology, "node-topology", "NAME=KEY=VALUE: NodeGetInfo on node NAME reports accessible topology KEY=VALUE (the kubelet copies it to the Node's labels and CSINode's topologyKeys), as a zonal driver's node plugin does; repeatable.")
	flag.Parse()
	if err := run(o); err != nil {
		klog.ErrorS(err, "csimock failed", "driver", o.driverName)
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func (o options) validate() error {
	switch {
	case o.driverName == "":
		return errors.New("--driver-name is required")
	case o.controllerSocket == "":
		return errors.New("--controller-socket is required")
	case o.callLog == "":
		return errors.New("--call-log is required")
	case len(o.volumes) > 0 && !o.mapHandles:
		return errors.New("--volume needs --map-handles")
	}
	return nil
}

func run(o options) error {
	if err := o.validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := klog.FromContext(ctx).WithValues("driver", o.driverName)

	calls, err := openCallLog(o.callLog)
	if err != nil {
		return err
	}
	defer calls.close()
	d, err := newDriver(ctx, o, calls)
	if err != nil {
		return err
	}
	defer d.stop()
	if err := d.serve(); err != nil {
		return err
	}
	logger.Info("Mock CSI driver serving", "controllerSocket", o.controllerSocket, "nodes", len(o.nodes), "mapHandles", o.mapHandles, "disableAttach", o.disableAttach)
	<-ctx.Done()
	logger.Info("Mock CSI driver stopping")
	return nil
}

// node is one --node flag.
type node struct{ name, rootDir string }

// nodeList is a repeatable NAME=ROOTDIR flag.
type nodeList []node

func (l *nodeList) String() string {
	parts := make([]string, len(*l))
	for i, n := range *l {
		parts[i] = n.name + "=" + n.rootDir
	}
	return strings.Join(parts, ",")
}

func (l *nodeList) Set(v string) error {
	name, dir, ok := strings.Cut(v, "=")
	if !ok || name == "" || !strings.HasPrefix(dir, "/") {
		return fmt.Errorf("want NAME=ABSOLUTE_KUBELET_ROOT_DIR, got %q", v)
	}
	*l = append(*l, node{name: name, rootDir: dir})
	return nil
}

// topologyList is the repeatable NAME=KEY=VALUE flag --node-topology: segments per node.
type topologyList map[string]map[string]string

func (l *topologyList) String() string {
	var parts []string
	for n, segs := range *l {
		for k, v := range segs {
			parts = append(parts, n+"="+k+"="+v)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (l *topologyList) Set(v string) error {
	name, kv, ok := strings.Cut(v, "=")
	key, value, ok2 := strings.Cut(kv, "=")
	if !ok || !ok2 || name == "" || key == "" {
		return fmt.Errorf("want NAME=KEY=VALUE, got %q", v)
	}
	if *l == nil {
		*l = topologyList{}
	}
	if (*l)[name] == nil {
		(*l)[name] = map[string]string{}
	}
	(*l)[name][key] = value
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
