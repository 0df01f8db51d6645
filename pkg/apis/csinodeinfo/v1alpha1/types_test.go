package v1alpha1

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func sampleInfo() *CSINodeInfo {
	return &CSINodeInfo{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"a": "b"}},
		Spec: CSINodeInfoSpec{Drivers: []CSIDriverInfoSpec{
			{Name: "pd.csi.storage.gke.io", NodeID: "projects/p/zones/z/instances/node-1", TopologyKeys: []string{"topology.gke.io/zone"}},
		}},
		Status: CSINodeInfoStatus{Drivers: []CSIDriverInfoStatus{
			{Name: "pd.csi.storage.gke.io", Available: true, VolumePluginMechanism: VolumePluginMechanismCSI},
		}},
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	in := sampleInfo()
	out := in.DeepCopy()
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("DeepCopy differs:\n%#v\n%#v", in, out)
	}
	out.Spec.Drivers[0].TopologyKeys[0] = "changed"
	out.Status.Drivers[0].Available = false
	out.Labels["a"] = "changed"
	if in.Spec.Drivers[0].TopologyKeys[0] != "topology.gke.io/zone" || !in.Status.Drivers[0].Available || in.Labels["a"] != "b" {
		t.Fatalf("mutating the copy changed the original: %#v", in)
	}
	var obj runtime.Object = in
	if _, ok := obj.DeepCopyObject().(*CSINodeInfo); !ok {
		t.Fatalf("DeepCopyObject returned %T", obj.DeepCopyObject())
	}
	list := &CSINodeInfoList{Items: []CSINodeInfo{*in}}
	lc := list.DeepCopyObject().(*CSINodeInfoList)
	lc.Items[0].Status.Drivers[0].Name = "x"
	if list.Items[0].Status.Drivers[0].Name == "x" {
		t.Fatalf("list DeepCopy shares memory")
	}
	var nilInfo *CSINodeInfo
	if nilInfo.DeepCopy() != nil || nilInfo.DeepCopyObject() != nil {
		t.Fatalf("nil DeepCopy must return nil")
	}
}

func TestUnstructuredRoundTrip(t *testing.T) {
	in := sampleInfo()
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
}

func TestFromUnstructuredRejectsBadInput(t *testing.T) {
	if _, err := FromUnstructured(nil); err == nil {
		t.Error("nil object: want error")
	}
	wrongKind := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n"}}}
	if _, err := FromUnstructured(wrongKind); err == nil {
		t.Error("Node object: want error")
	}
	badField := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "csi.storage.k8s.io/v1alpha1", "kind": "CSINodeInfo",
		"metadata": map[string]any{"name": "n"},
		"status":   map[string]any{"drivers": "not-a-list"},
	}}
	if _, err := FromUnstructured(badField); err == nil {
		t.Error("status.drivers of the wrong type: want error")
	}
}

func TestSchemeRegistration(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvks, _, err := s.ObjectKinds(&CSINodeInfo{})
	if err != nil || len(gvks) != 1 || gvks[0] != GroupVersionKind {
		t.Fatalf("ObjectKinds = %v, %v", gvks, err)
	}
	if GroupResource(Resource).String() != "csinodeinfos.csi.storage.k8s.io" {
		t.Fatalf("GroupResource = %s", GroupResource(Resource))
	}
}
