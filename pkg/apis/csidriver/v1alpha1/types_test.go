package v1alpha1

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func boolPtr(b bool) *bool { return &b }

func sampleDriver() *CSIDriver {
	v := "v1"
	return &CSIDriver{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "pd.csi.storage.gke.io", Labels: map[string]string{"a": "b"}},
		Spec:       CSIDriverSpec{AttachRequired: boolPtr(true), PodInfoOnMountVersion: &v},
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	in := sampleDriver()
	out := in.DeepCopy()
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("DeepCopy differs:\n%#v\n%#v", in, out)
	}
	*out.Spec.AttachRequired = false
	*out.Spec.PodInfoOnMountVersion = "changed"
	out.Labels["a"] = "changed"
	if !*in.Spec.AttachRequired || *in.Spec.PodInfoOnMountVersion != "v1" || in.Labels["a"] != "b" {
		t.Fatalf("mutating the copy changed the original: %#v", in)
	}
	var obj runtime.Object = in
	if _, ok := obj.DeepCopyObject().(*CSIDriver); !ok {
		t.Fatalf("DeepCopyObject returned %T", obj.DeepCopyObject())
	}
	list := &CSIDriverList{Items: []CSIDriver{*in}}
	lc := list.DeepCopyObject().(*CSIDriverList)
	*lc.Items[0].Spec.AttachRequired = false
	if !*list.Items[0].Spec.AttachRequired {
		t.Fatalf("list DeepCopy shares memory")
	}
	var nilDriver *CSIDriver
	if nilDriver.DeepCopy() != nil || nilDriver.DeepCopyObject() != nil {
		t.Fatalf("nil DeepCopy must return nil")
	}
}

// An unset attachRequired must survive the round trip as nil, not as false: in this API
// version both mean "no attach", but the reason adc gives differs and the v1 rule is the
// opposite, so the distinction must never be lost on the way.
func TestUnstructuredRoundTrip(t *testing.T) {
	for name, spec := range map[string]CSIDriverSpec{
		"attachRequired set":   {AttachRequired: boolPtr(false)},
		"attachRequired unset": {},
	} {
		t.Run(name, func(t *testing.T) {
			in := sampleDriver()
			in.Spec = spec
			u, err := ToUnstructured(in)
			if err != nil {
				t.Fatal(err)
			}
			if u.GetKind() != Kind || u.GetAPIVersion() != "csi.storage.k8s.io/v1alpha1" {
				t.Fatalf("unstructured kind/apiVersion = %s/%s", u.GetKind(), u.GetAPIVersion())
			}
			out, err := FromUnstructured(u)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(in, out) {
				t.Fatalf("round trip differs:\n%#v\n%#v", in, out)
			}
		})
	}
}

func TestFromUnstructuredRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    *unstructured.Unstructured
	}{
		{"nil object", nil},
		{"a storage.k8s.io/v1 CSIDriver, whose unset attachRequired means the opposite", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": map[string]any{"name": "d"}}}},
		{"spec.attachRequired of the wrong type", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "csi.storage.k8s.io/v1alpha1", "kind": "CSIDriver", "metadata": map[string]any{"name": "d"},
			"spec": map[string]any{"attachRequired": "yes"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := FromUnstructured(tc.u); err == nil {
				t.Error("want an error")
			}
		})
	}
}

func TestSchemeRegistration(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvks, _, err := s.ObjectKinds(&CSIDriver{})
	if err != nil || len(gvks) != 1 || gvks[0] != GroupVersionKind {
		t.Fatalf("ObjectKinds = %v, %v", gvks, err)
	}
	if got := GroupVersionResource.GroupResource().String(); got != "csidrivers.csi.storage.k8s.io" {
		t.Fatalf("GroupResource = %s", got)
	}
}
