package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Driver is one mock CSI driver of a stack (bin/e2e/csimock): one process serving every node,
// registered with each kubelet through its plugins_registry, and, when it needs attaching,
// its csi-attacher.
type Driver struct {
	// Name is the driver name.
	Name string
	// AttachRequired is the CSIDriver's attachRequired.
	AttachRequired bool
	// ControllerSocket is the CSI controller endpoint csi-attacher uses.
	ControllerSocket string
	// CallLog is the file with one JSON line per CSI call (see Call).
	CallLog string

	proc     *Process
	attacher *Process
}

// Process returns the driver's process.
func (d *Driver) Process() *Process { return d.proc }

// Attacher returns the driver's csi-attacher, nil for a driver without attach.
func (d *Driver) Attacher() *Process { return d.attacher }

// Call is one CSI (or plugin-registration) call the driver served, as csimock logs it.
type Call struct {
	// Time is when the call returned.
	Time time.Time `json:"time"`
	// Start is when it arrived.
	Start time.Time `json:"start"`
	// Method is the gRPC method name, e.g. ControllerPublishVolume, NodeStageVolume, GetInfo.
	Method string `json:"method"`
	// VolumeID is the volume id the caller sent: the PV's volume handle, or the translated
	// handle of a migrated in-tree volume.
	VolumeID string `json:"volumeID,omitempty"`
	// MockVolumeID is the mock's own id for that handle.
	MockVolumeID string `json:"mockVolumeID,omitempty"`
	// NodeID is the request's node id (ControllerPublish/Unpublish): the driver name.
	NodeID string `json:"nodeID,omitempty"`
	// Node is the node whose kubelet made the call; empty for csi-attacher's calls.
	Node string `json:"node,omitempty"`
	// Code is the gRPC code name, OK on success.
	Code string `json:"code"`
	// Error is the message of a failed call.
	Error string `json:"error,omitempty"`
}

// Calls returns every call the driver has served so far, in the order they returned.
func (d *Driver) Calls() ([]Call, error) {
	b, err := os.ReadFile(d.CallLog)
	if err != nil {
		return nil, fmt.Errorf("reading the call log of driver %s: %w", d.Name, err)
	}
	var calls []Call
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var c Call
		if err := json.Unmarshal(line, &c); err != nil {
			// The last line may be half written while the driver writes it.
			continue
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// CallsFor returns the calls of methods (all when none given) about volume handle.
func (d *Driver) CallsFor(handle string, methods ...string) ([]Call, error) {
	all, err := d.Calls()
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, m := range methods {
		want[m] = true
	}
	var out []Call
	for _, c := range all {
		if c.VolumeID == handle && (len(want) == 0 || want[c.Method]) {
			out = append(out, c)
		}
	}
	return out, nil
}

func newDriver(s *Stack, o DriverOptions) (*Driver, error) {
	dir := filepath.Join(s.Dir, "d", o.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("harness: creating the folder of driver %s: %w", o.Name, err)
	}
	d := &Driver{
		Name:             o.Name,
		AttachRequired:   !o.NoAttach,
		ControllerSocket: filepath.Join(dir, "controller.sock"),
		CallLog:          filepath.Join(dir, "calls.jsonl"),
	}
	args := []string{"--driver-name", o.Name, "--controller-socket", d.ControllerSocket, "--call-log", d.CallLog, "--v", "2"}
	if o.NoAttach {
		args = append(args, "--disable-attach")
	}
	for _, n := range s.opts.Nodes {
		args = append(args, "--node", n+"="+s.kubelets[n].RootDir)
		for _, kv := range sortedPairs(o.Topology[n]) {
			args = append(args, "--node-topology", n+"="+kv)
		}
	}
	d.proc = newProcess("driver "+o.Name, s.bin(driverBinary), s.logPath("driver-"+o.Name), args...)
	s.track(d.proc)
	if !o.NoAttach {
		aargs := []string{"--csi-address", d.ControllerSocket, "--kubeconfig", s.kubeconfig,
			"--leader-election=false", "--timeout", "5s",
			// The default 5 QPS / 10 burst alone adds up to a second of client-side
			// throttling to an attach; a test should measure adc, not that.
			"--kube-api-qps", "200", "--kube-api-burst", "400",
			"--v", "2"}
		aargs = append(aargs, s.opts.AttacherArgs...)
		d.attacher = newProcess("csi-attacher "+o.Name, s.bin(attacherBinary), s.logPath("attacher-"+o.Name), aargs...)
		// csi-attacher has no SIGTERM handler: the signal ends it, which is its normal stop.
		d.attacher.diesOnSIGTERM = true
		s.track(d.attacher)
	}
	return d, nil
}

// sortedPairs returns m as sorted key=value strings.
func sortedPairs(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	return strings.Split(joinPairs(m, "="), ",")
}
