package cached

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/migration-aware/adc/pkg/migration"
)

// cachedPod is what adc's own pod informer keeps of a trimmed pod. Pods are most of a
// cluster's objects and a v1.Pod costs about 1.2 KiB however empty (its spec and status
// structs are large) plus 256 bytes per volume; adc reads only the pod's identity, node,
// phase, whether a container still runs and its volumes. A cachedPod holds exactly that, and
// object() rebuilds the trimmed v1.Pod it came from for the code that reads pods (the decision
// engine works on v1 objects in every mode, and inside kube-controller-manager the host's
// informers hold whole pods).
//
// It is a runtime.Object so that client-go's generic paths (the mutation detector,
// tombstones) treat it as any other cached object.
type cachedPod struct {
	compactMeta
	nodeName string
	phase    v1.PodPhase
	// running: some container (init, app or ephemeral) is neither waiting nor terminated,
	// which keeps a deleted pod's volumes wanted.
	running bool
	volumes []cachedVolume
}

// cachedVolume is one pod volume: a claim by name, one of the kinds whose source trimming
// empties (kept as the kind alone), or any other source as it is.
type cachedVolume struct {
	name     string
	claim    string
	source   *v1.VolumeSource
	kind     volumeKind
	readOnly bool
}

type volumeKind uint8

const (
	volumeOther volumeKind = iota
	volumeClaim
	volumeConfigMap
	volumeSecret
	volumeProjected
	volumeDownwardAPI
)

var (
	_ runtime.Object      = &cachedPod{}
	_ compactForm[v1.Pod] = &cachedPod{}
)

// GetObjectKind implements runtime.Object; a cachedPod carries no type metadata.
func (p *cachedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (p *cachedPod) DeepCopyObject() runtime.Object {
	out := *p
	out.compactMeta = p.compactMeta.deepCopy()
	out.volumes = make([]cachedVolume, len(p.volumes))
	copy(out.volumes, p.volumes)
	for i := range out.volumes {
		if s := out.volumes[i].source; s != nil {
			out.volumes[i].source = s.DeepCopy()
		}
	}
	return &out
}

// compactPod turns a pod trimmed by TrimInformerObjects into its cached form; object() gives
// the same trimmed pod back.
func compactPod(p *v1.Pod) *cachedPod {
	cp := &cachedPod{
		compactMeta: compactMetaOf(&p.ObjectMeta),
		nodeName:    p.Spec.NodeName,
		phase:       p.Status.Phase,
		running:     migration.AnyContainerRunning(p),
	}
	if n := len(p.Spec.Volumes); n > 0 {
		cp.volumes = make([]cachedVolume, n)
		for i := range p.Spec.Volumes {
			cp.volumes[i] = compactVolume(&p.Spec.Volumes[i])
		}
	}
	return cp
}

func compactVolume(v *v1.Volume) cachedVolume {
	s := &v.VolumeSource
	cv := cachedVolume{name: v.Name}
	switch {
	case s.PersistentVolumeClaim != nil && *s == v1.VolumeSource{PersistentVolumeClaim: s.PersistentVolumeClaim}:
		cv.kind, cv.claim, cv.readOnly = volumeClaim, s.PersistentVolumeClaim.ClaimName, s.PersistentVolumeClaim.ReadOnly
	case *s == v1.VolumeSource{ConfigMap: s.ConfigMap} && emptied(s):
		cv.kind = volumeConfigMap
	case *s == v1.VolumeSource{Secret: s.Secret} && emptied(s):
		cv.kind = volumeSecret
	case *s == v1.VolumeSource{Projected: s.Projected} && emptied(s):
		cv.kind = volumeProjected
	case *s == v1.VolumeSource{DownwardAPI: s.DownwardAPI} && emptied(s):
		cv.kind = volumeDownwardAPI
	default:
		src := *s
		cv.source = &src
	}
	return cv
}

// emptied reports whether s is one of the sources trimVolumeSource empties, as it leaves it.
func emptied(s *v1.VolumeSource) bool {
	switch {
	case s.ConfigMap != nil:
		return reflect.DeepEqual(s.ConfigMap, &v1.ConfigMapVolumeSource{})
	case s.Secret != nil:
		return reflect.DeepEqual(s.Secret, &v1.SecretVolumeSource{})
	case s.Projected != nil:
		return reflect.DeepEqual(s.Projected, &v1.ProjectedVolumeSource{})
	case s.DownwardAPI != nil:
		return reflect.DeepEqual(s.DownwardAPI, &v1.DownwardAPIVolumeSource{})
	}
	return false
}

// object rebuilds the trimmed pod. The result is the caller's: it shares only strings and the
// object metadata's maps and slices, which nothing in adc changes.
func (p *cachedPod) object() *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: p.objectMeta(),
		Spec:       v1.PodSpec{NodeName: p.nodeName},
		Status:     v1.PodStatus{Phase: p.phase},
	}
	if p.running {
		pod.Status.ContainerStatuses = []v1.ContainerStatus{{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	}
	pod.Spec.Volumes = p.v1Volumes()
	return pod
}

// v1Volumes rebuilds the trimmed pod's spec.volumes.
func (p *cachedPod) v1Volumes() []v1.Volume {
	if len(p.volumes) == 0 {
		return nil
	}
	out := make([]v1.Volume, len(p.volumes))
	for i := range p.volumes {
		out[i] = p.volumes[i].volume()
	}
	return out
}

func (v *cachedVolume) volume() v1.Volume {
	out := v1.Volume{Name: v.name}
	s := &out.VolumeSource
	switch v.kind {
	case volumeClaim:
		s.PersistentVolumeClaim = &v1.PersistentVolumeClaimVolumeSource{ClaimName: v.claim, ReadOnly: v.readOnly}
	case volumeConfigMap:
		s.ConfigMap = &v1.ConfigMapVolumeSource{}
	case volumeSecret:
		s.Secret = &v1.SecretVolumeSource{}
	case volumeProjected:
		s.Projected = &v1.ProjectedVolumeSource{}
	case volumeDownwardAPI:
		s.DownwardAPI = &v1.DownwardAPIVolumeSource{}
	default:
		if v.source != nil {
			*s = *v.source.DeepCopy()
		}
	}
	return out
}

// compactForm is a compact cache form that rebuilds the trimmed v1 object T.
type compactForm[T any] interface {
	object() *T
}

// objectOf gives the v1 object an informer event or store entry holds, whole (a host's
// informer) or in its compact form (adc's own); false for anything else.
func objectOf[T any](obj interface{}) (*T, bool) {
	switch o := obj.(type) {
	case *T:
		return o, o != nil
	case compactForm[T]:
		return o.object(), true
	}
	return nil, false
}

func PodOf(obj interface{}) (*v1.Pod, bool) { return objectOf[v1.Pod](obj) }

// Placement is what the pod event handlers compare, read without rebuilding a cached pod.
type Placement struct {
	Node     string
	Phase    v1.PodPhase
	Deleting bool
	Running  bool
}

// active is migration.PodIsActive, read off the placement.
func (p Placement) Active() bool {
	return p.Node != "" && migration.PodActive(p.Phase, p.Deleting, p.Running)
}

func PlacementOf(obj interface{}) (Placement, bool) {
	switch p := obj.(type) {
	case *v1.Pod:
		if p == nil {
			return Placement{}, false
		}
		return Placement{Node: p.Spec.NodeName, Phase: p.Status.Phase, Deleting: p.DeletionTimestamp != nil,
			Running: migration.AnyContainerRunning(p)}, true
	case *cachedPod:
		if p == nil {
			return Placement{}, false
		}
		return Placement{Node: p.nodeName, Phase: p.phase, Deleting: p.deletionTimestamp != nil, Running: p.running}, true
	}
	return Placement{}, false
}
