package adc

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	storagev1client "k8s.io/client-go/kubernetes/typed/storage/v1"
)

// The controller writes through volumeattach.ClientAttachmentWriter and ClientStatusWriter
// and reads Nodes fresh through its clientset. interleaveClient wraps a (never used) fake
// clientset so that exactly those calls (VolumeAttachment create, get, delete; Node get and
// status patch) become API calls of the explorer: the calling worker parks, the schedule
// picks when the API server applies the call and with which answer, and when the answer
// reaches the worker. The real writers stay in the loop, with their handling of
// AlreadyExists, NotFound and Conflict.

// outcome is how the API server answers one call.
type outcome string

const (
	// outcomeOK: the API server applies the call; the answer is what the truth gives
	// (including AlreadyExists, NotFound and Conflict).
	outcomeOK outcome = "ok"
	// outcomeForbidden: refused (admission, RBAC); nothing is applied.
	outcomeForbidden outcome = "forbidden"
	// outcomeTimeout: the request never reached storage; the client sees a timeout.
	outcomeTimeout outcome = "timeout"
	// outcomeTimeoutApplied: applied, but the answer is lost; the client sees a timeout.
	outcomeTimeoutApplied outcome = "timeout-applied"
)

// apiCall is one call a worker is making.
type apiCall struct {
	id       int
	verb     string // create, get, delete, patch
	resource string
	name     string
	va       *storagev1.VolumeAttachment // create
	uid      types.UID                   // delete precondition
	volumes  []v1.AttachedVolume         // patch
	thread   *thread
	// detaching are, for a status patch, the volumes (node|unique) the status sync saw
	// marked detaching, with the step of the fresh read each decision was made on.
	detaching map[string]int

	applied bool
	outcome outcome
	ret     runtime.Object
	err     error
	// resultUID is the object a create identified: the one it created, or the one that
	// already had the name.
	resultUID types.UID
}

func (c *apiCall) label() string {
	s := fmt.Sprintf("%s %s/%s", c.verb, c.resource, c.name)
	switch {
	case c.verb == "delete" && c.uid != "":
		s += " uid=" + string(c.uid)
	case c.verb == "patch":
		s += fmt.Sprintf(" volumesAttached=%v", avNames(c.volumes))
	}
	return s
}

// result is the answer as the worker will see it, for traces and state keys.
func (c *apiCall) result() string {
	if !c.applied {
		return "pending"
	}
	if c.err != nil {
		return string(c.outcome) + ": " + errReason(c.err)
	}
	if m, ok := c.ret.(metav1.Object); ok {
		return fmt.Sprintf("%s uid=%s rv=%s", c.outcome, m.GetUID(), m.GetResourceVersion())
	}
	return string(c.outcome)
}

func errReason(err error) string {
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return string(r)
	}
	return err.Error()
}

func avNames(vols []v1.AttachedVolume) []string {
	out := make([]string, len(vols))
	for i, v := range vols {
		out[i] = string(v.Name)
	}
	return out
}

// applicableOutcomes are the answers the schedule may give a call. Reads are never applied
// "and lost": a lost read is a timeout.
func applicableOutcomes(c *apiCall, faults []outcome) []outcome {
	out := []outcome{outcomeOK}
	for _, f := range faults {
		if f == outcomeTimeoutApplied && c.verb == "get" {
			continue
		}
		out = append(out, f)
	}
	return out
}

// apply makes the API server process the call with the given outcome.
func (h *harness) apply(c *apiCall, o outcome) {
	c.applied, c.outcome = true, o
	gr := schema.GroupResource{Resource: c.resource}
	switch o {
	case outcomeForbidden:
		c.err = apierrors.NewForbidden(gr, c.name, fmt.Errorf("the schedule refused it"))
		return
	case outcomeTimeout:
		c.err = apierrors.NewTimeoutError("the schedule lost the request", 1)
		return
	}
	switch c.verb + " " + c.resource {
	case "create " + resVAs:
		va, err := h.api.createVA(c.va)
		c.ret, c.err = va, err
		if err == nil {
			c.resultUID = va.UID
		} else if old := h.api.vas[c.name]; old != nil {
			c.resultUID = old.UID
		}
	case "get " + resVAs:
		if va := h.api.vas[c.name]; va != nil {
			c.ret = va.DeepCopy()
		} else {
			c.err = apierrors.NewNotFound(gr, c.name)
		}
	case "delete " + resVAs:
		h.checkDelete(c)
		c.err = h.api.deleteVA(c.name, c.uid)
	case "get " + resNodes:
		if c.thread != nil {
			c.thread.freshReadStep = h.stepCount
		}
		if n := h.api.nodes[c.name]; n != nil {
			c.ret = n.DeepCopy()
			if stale, ok := h.mutateNodeRead(c.name); ok {
				c.ret = stale
			}
		} else {
			c.err = apierrors.NewNotFound(gr, c.name)
		}
	case "patch " + resNodes:
		if h.api.nodes[c.name] == nil {
			c.err = apierrors.NewNotFound(gr, c.name)
			break
		}
		h.checkStatusPatch(c)
		c.ret = h.api.updateNode(c.name, func(n *v1.Node) { n.Status.VolumesAttached = c.volumes })
	default:
		panic("interleave: unmodelled API call " + c.label())
	}
	if o == outcomeTimeoutApplied {
		c.ret, c.err = nil, apierrors.NewTimeoutError("the schedule lost the answer", 1)
	}
}

// call is what the wrapped clientset does: park the calling worker until the schedule has
// answered the call and lets the answer through. Outside a worker (set-up) it is answered at
// once.
func (h *harness) call(c *apiCall) (runtime.Object, error) {
	t := h.current
	if t == nil || h.abandoning {
		if h.abandoning {
			return nil, context.Canceled
		}
		h.apply(c, outcomeOK)
		return c.ret, c.err
	}
	h.nextCallID++
	c.id, c.thread = h.nextCallID, t
	h.onCall(t, c)
	t.call = c
	h.yield(t)
	t.call = nil
	if !c.applied {
		// Abandoned schedule: the worker only has to finish.
		return nil, context.Canceled
	}
	t.history = append(t.history, c.label()+" -> "+c.result())
	h.onReturn(t, c)
	return c.ret, c.err
}

type interleaveClient struct {
	kubernetes.Interface
	h *harness
}

func (c interleaveClient) CoreV1() corev1client.CoreV1Interface {
	return interleaveCore{c.Interface.CoreV1(), c.h}
}

func (c interleaveClient) StorageV1() storagev1client.StorageV1Interface {
	return interleaveStorage{c.Interface.StorageV1(), c.h}
}

type interleaveCore struct {
	corev1client.CoreV1Interface
	h *harness
}

func (c interleaveCore) Nodes() corev1client.NodeInterface {
	return interleaveNodes{c.CoreV1Interface.Nodes(), c.h}
}

type interleaveNodes struct {
	corev1client.NodeInterface
	h *harness
}

func (n interleaveNodes) Get(_ context.Context, name string, _ metav1.GetOptions) (*v1.Node, error) {
	ret, err := n.h.call(&apiCall{verb: "get", resource: resNodes, name: name})
	if err != nil {
		return nil, err
	}
	return ret.(*v1.Node), nil
}

// Patch models the one patch adc sends: a merge patch of status.volumesAttached.
func (n interleaveNodes) Patch(_ context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions, sub ...string) (*v1.Node, error) {
	var p struct {
		Status struct {
			VolumesAttached []v1.AttachedVolume `json:"volumesAttached"`
		} `json:"status"`
	}
	if pt != types.MergePatchType || len(sub) != 1 || sub[0] != "status" {
		panic(fmt.Sprintf("interleave: unmodelled node patch %s %v", pt, sub))
	}
	if err := json.Unmarshal(data, &p); err != nil {
		panic(err)
	}
	ret, err := n.h.call(&apiCall{verb: "patch", resource: resNodes, name: name, volumes: p.Status.VolumesAttached})
	if err != nil {
		return nil, err
	}
	return ret.(*v1.Node), nil
}

type interleaveStorage struct {
	storagev1client.StorageV1Interface
	h *harness
}

func (s interleaveStorage) VolumeAttachments() storagev1client.VolumeAttachmentInterface {
	return interleaveVAs{s.StorageV1Interface.VolumeAttachments(), s.h}
}

type interleaveVAs struct {
	storagev1client.VolumeAttachmentInterface
	h *harness
}

func (v interleaveVAs) Create(_ context.Context, va *storagev1.VolumeAttachment, _ metav1.CreateOptions) (*storagev1.VolumeAttachment, error) {
	ret, err := v.h.call(&apiCall{verb: "create", resource: resVAs, name: va.Name, va: va.DeepCopy()})
	if err != nil {
		return nil, err
	}
	return ret.(*storagev1.VolumeAttachment), nil
}

func (v interleaveVAs) Get(_ context.Context, name string, _ metav1.GetOptions) (*storagev1.VolumeAttachment, error) {
	ret, err := v.h.call(&apiCall{verb: "get", resource: resVAs, name: name})
	if err != nil {
		return nil, err
	}
	return ret.(*storagev1.VolumeAttachment), nil
}

func (v interleaveVAs) Delete(_ context.Context, name string, opts metav1.DeleteOptions) error {
	c := &apiCall{verb: "delete", resource: resVAs, name: name}
	if opts.Preconditions != nil && opts.Preconditions.UID != nil {
		c.uid = *opts.Preconditions.UID
	}
	_, err := v.h.call(c)
	return err
}
