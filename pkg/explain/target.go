package explain

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Target kinds.
const (
	// KindPod explains every volume of one pod.
	KindPod = "pod"
	// KindPV explains one PersistentVolume: the pods using it, and where it is attached.
	KindPV = "pv"
)

// Target is what to explain: a pod (namespace and name) or a PersistentVolume (name).
type Target struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the target as the command line names it: "pod ns/name" or "pv name".
func (t Target) String() string {
	if t.Kind == KindPod {
		return "pod " + t.Namespace + "/" + t.Name
	}
	return t.Kind + " " + t.Name
}

// ParseTarget reads `explain pod NAMESPACE/NAME` and `explain pv NAME`.
func ParseTarget(kind, ref string) (Target, error) {
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		ns, name, ok := strings.Cut(ref, "/")
		if !ok || ns == "" || name == "" {
			return Target{}, fmt.Errorf("pod %q: name it as NAMESPACE/NAME", ref)
		}
		for _, part := range []string{ns, name} {
			if errs := validation.IsDNS1123Subdomain(part); len(errs) > 0 {
				return Target{}, fmt.Errorf("pod %q: %q is not a valid name: %s", ref, part, strings.Join(errs, "; "))
			}
		}
		return Target{Kind: KindPod, Namespace: ns, Name: name}, nil
	case "pv", "pvs", "persistentvolume", "persistentvolumes":
		if errs := validation.IsDNS1123Subdomain(ref); len(errs) > 0 {
			return Target{}, fmt.Errorf("PersistentVolume %q is not a valid name: %s", ref, strings.Join(errs, "; "))
		}
		return Target{Kind: KindPV, Name: ref}, nil
	}
	return Target{}, fmt.Errorf("cannot explain %q: explain a pod (pod NAMESPACE/NAME) or a PersistentVolume (pv NAME)", kind)
}
