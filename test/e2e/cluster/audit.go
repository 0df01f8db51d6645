package cluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// AuditPolicy is the audit policy of the scenarios that judge a controller by what it wrote
// (handover_test.go): every request at Metadata level, and the writes of node status,
// VolumeAttachments and Leases with their bodies, so that every revision of a node's
// status.volumesAttached is in the log (the response to each write is the whole Node after
// it), as is every VolumeAttachment created or deleted and every holder of a Lease.
var AuditPolicy = auditlog.PolicyAllWithBodies(
	auditlog.Bodies{Resources: []string{"nodes/status"}},
	auditlog.Bodies{Group: "storage.k8s.io", Resources: []string{"volumeattachments"}},
	auditlog.Bodies{Group: "coordination.k8s.io", Resources: []string{"leases"}},
)

// Audit is the API server's audit log, read at one moment.
type Audit struct {
	Reqs []auditlog.Request
}

// ReadAudit reads the stack's audit log (the API server runs with an audit policy:
// Options.AuditPolicy, or the standalone mode's).
func ReadAudit(s *harness.Stack) (*Audit, error) {
	path := s.ControlPlane().AuditLogPath
	if path == "" {
		return nil, fmt.Errorf("cluster: the API server keeps no audit log (Options.AuditPolicy)")
	}
	return readAuditFile(path)
}

func readAuditFile(path string) (*Audit, error) {
	reqs, err := auditlog.Read(path)
	if err != nil {
		return nil, err
	}
	return &Audit{Reqs: reqs}, nil
}

// Succeeded says whether the API server answered r with a 2xx.
func Succeeded(r auditlog.Request) bool { return r.Code >= 200 && r.Code < 300 }

// IsWrite says whether verb changes objects.
func IsWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Within says whether r was received in [from, to] (a zero to is open).
func Within(r auditlog.Request, from, to time.Time) bool {
	return !r.Received.Before(from) && (to.IsZero() || !r.Received.After(to))
}

// VolumeAttachmentChanges returns the creates and deletes of VolumeAttachments received in
// [from, to], whatever the answer (a refused create still says a controller decided to
// attach).
func (a *Audit) VolumeAttachmentChanges(from, to time.Time) []auditlog.Request {
	var out []auditlog.Request
	for _, r := range a.Reqs {
		if r.Resource == "volumeattachments" && r.Subresource == "" && (r.Verb == "create" || r.Verb == "delete" || r.Verb == "deletecollection") && Within(r, from, to) {
			out = append(out, r)
		}
	}
	return out
}

// Writes returns the writes received in [from, to] of user (any when empty) to the resources
// named as ResourcePath spells them ("volumeattachments", "nodes/status"; any when none).
func (a *Audit) Writes(user string, from, to time.Time, resources ...string) []auditlog.Request {
	var out []auditlog.Request
	for _, r := range a.Reqs {
		if !IsWrite(r.Verb) || (user != "" && r.User != user) || !Within(r, from, to) {
			continue
		}
		if len(resources) > 0 && !slices.Contains(resources, r.ResourcePath()) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// StatusWrite is one successful write of a node's status and the node's
// status.volumesAttached after it (from the response).
type StatusWrite struct {
	Node string
	// RV is the Node's resourceVersion after the write: it orders the revisions.
	RV uint64
	// Request is the write.
	Request auditlog.Request
	// Attached are the names of status.volumesAttached after the write, in the Node's order.
	Attached []string
}

// node is the part of a Node the checks read from a response.
type node struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Status struct {
		VolumesAttached []struct {
			Name string `json:"name"`
		} `json:"volumesAttached"`
	} `json:"status"`
}

// NodeStatusWrites returns every successful write of a node's status (nodes/status, and the
// Node's create, which carries a status too) with the volumesAttached after it, by node and
// then by resourceVersion: the revisions of each node's status.volumesAttached, one per
// write. It fails on a successful write logged without its response (a policy that does not
// log nodes/status at RequestResponse level).
func (a *Audit) NodeStatusWrites() ([]StatusWrite, error) {
	var out []StatusWrite
	for _, r := range a.Reqs {
		if r.Resource != "nodes" || !IsWrite(r.Verb) || !Succeeded(r) || r.Verb == "delete" {
			continue
		}
		if r.Subresource != "status" && r.Verb != "create" {
			continue // a write of the Node itself cannot change its status
		}
		if r.ResponseObject == nil {
			if r.Verb == "create" {
				continue // a new node has attached nothing
			}
			return nil, fmt.Errorf("cluster: audit log: %s logged without its response: the audit policy must log nodes/status at RequestResponse level (AuditPolicy)", r)
		}
		var n node
		if err := json.Unmarshal(r.ResponseObject, &n); err != nil {
			return nil, fmt.Errorf("cluster: audit log: the response to %s: %w", r, err)
		}
		rv, err := strconv.ParseUint(n.Metadata.ResourceVersion, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cluster: audit log: the response to %s: resourceVersion %q: %w", r, n.Metadata.ResourceVersion, err)
		}
		w := StatusWrite{Node: n.Metadata.Name, RV: rv, Request: r}
		for _, v := range n.Status.VolumesAttached {
			w.Attached = append(w.Attached, v.Name)
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].RV < out[j].RV
	})
	return out, nil
}

// Dropped is a volume one write removed from a node's status.volumesAttached: listed in the
// revision before, not in the write's.
type Dropped struct {
	Volume string
	Write  StatusWrite
	// Before is the revision the volume was listed in.
	Before StatusWrite
}

func (d Dropped) String() string {
	return fmt.Sprintf("%s dropped from node %s's status.volumesAttached at %s by %s (%s %s, resourceVersion %d -> %d; attached before %v, after %v)",
		d.Volume, d.Write.Node, d.Write.Request.Received.Format(time.StampMilli), d.Write.Request.User, d.Write.Request.UserAgent,
		d.Write.Request.Verb, d.Before.RV, d.Write.RV, d.Before.Attached, d.Write.Attached)
}

// DroppedVolumes returns, for every node, each volume a write received in [from, to] removed
// from status.volumesAttached, compared with the revision before it (which may be older than
// from).
func DroppedVolumes(writes []StatusWrite, from, to time.Time) []Dropped {
	var out []Dropped
	for i := 1; i < len(writes); i++ {
		prev, w := writes[i-1], writes[i]
		if prev.Node != w.Node || !Within(w.Request, from, to) {
			continue
		}
		for _, v := range prev.Attached {
			if !slices.Contains(w.Attached, v) {
				out = append(out, Dropped{Volume: v, Write: w, Before: prev})
			}
		}
	}
	return out
}

// WritersOf counts the writes by user (and User-Agent up to its first "/") among writes.
func WritersOf(writes []auditlog.Request) string {
	count := map[string]int{}
	for _, r := range writes {
		agent, _, _ := strings.Cut(r.UserAgent, "/")
		count[r.User+" ("+agent+")"]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d by %s", count[k], k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// LeaseWrite is a successful write of a Lease and its holder after it.
type LeaseWrite struct {
	Request auditlog.Request
	// Holder is spec.holderIdentity after the write ("" once released).
	Holder string
}

// LeaseWrites returns the successful creates and updates of Lease namespace/name, in the
// order the log has them, with the holder after each (the policy logs leases at
// RequestResponse level: AuditPolicy).
func (a *Audit) LeaseWrites(namespace, name string) ([]LeaseWrite, error) {
	var out []LeaseWrite
	for _, r := range a.Reqs {
		if r.Resource != "leases" || r.Namespace != namespace || r.Name != name || !Succeeded(r) || (r.Verb != "create" && r.Verb != "update" && r.Verb != "patch") {
			continue
		}
		if r.ResponseObject == nil {
			return nil, fmt.Errorf("cluster: audit log: %s logged without its response: the audit policy must log leases at RequestResponse level (AuditPolicy)", r)
		}
		var l struct {
			Spec struct {
				HolderIdentity *string `json:"holderIdentity"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(r.ResponseObject, &l); err != nil {
			return nil, fmt.Errorf("cluster: audit log: the response to %s: %w", r, err)
		}
		w := LeaseWrite{Request: r}
		if l.Spec.HolderIdentity != nil {
			w.Holder = *l.Spec.HolderIdentity
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Request.Received.Before(out[j].Request.Received) })
	return out, nil
}
