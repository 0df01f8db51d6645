package cached

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// checkCompactForm checks what every compact cache form owes its readers: the cache transform
// turns whole into a C; that C, and its DeepCopyObject, rebuild (through of) exactly what
// TrimInformerObjects leaves of whole; and the transform passes the C through unchanged. It
// returns the trimmed object and the C for the caller's own checks.
func checkCompactForm[T any, C runtime.Object](t *testing.T, whole runtime.Object, of func(interface{}) (*T, bool)) (*T, C) {
	t.Helper()
	trimmedObj, err := TrimInformerObjects(whole.DeepCopyObject())
	if err != nil {
		t.Fatal(err)
	}
	trimmed := trimmedObj.(*T)
	obj, err := Transform(whole.DeepCopyObject())
	if err != nil {
		t.Fatal(err)
	}
	cached, ok := obj.(C)
	if !ok {
		var want C
		t.Fatalf("Transform gave %T, want %T", obj, want)
	}
	if got, _ := of(cached); !reflect.DeepEqual(got, trimmed) {
		t.Errorf("rebuilt %T differs from the trimmed one:\n got  %+v\n want %+v", trimmed, got, trimmed)
	}
	if got, _ := of(cached.DeepCopyObject()); !reflect.DeepEqual(got, trimmed) {
		t.Errorf("DeepCopyObject of the %T lost something", cached)
	}
	if again, _ := Transform(cached); again != obj {
		t.Errorf("Transform is not idempotent on a %T", cached)
	}
	return trimmed, cached
}
