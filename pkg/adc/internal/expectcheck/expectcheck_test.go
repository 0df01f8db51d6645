package expectcheck

import (
	"context"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
)

func testVA(name, uid, rv string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), ResourceVersion: rv},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv1")}},
	}
}

func TestJudge(t *testing.T) {
	created := testVA("csi-a", "uid-1", "100")
	for _, tc := range []struct {
		name    string
		inStore *storagev1.VolumeAttachment
		storeRV string
		age     time.Duration
		// inAPI: the API server still has the created object (for the fallback's GET).
		inAPI bool
		want  verdict
	}{
		{"store behind the create: pending", nil, "90", 0, false, pending},
		{"store synced past the create without the object: gone", nil, "120", 0, false, gone},
		{"store exactly at the create without the object: gone", nil, "100", 0, false, gone},
		{"store holds the very object: seen", created, "100", 0, true, seen},
		{"store holds a newer object under the name: gone", testVA("csi-a", "uid-2", "130"), "130", 0, false, gone},
		{"store holds an older object under the name: pending", testVA("csi-a", "uid-0", "50"), "90", 0, false, pending},
		{"no store resourceVersion, young: pending", nil, "", time.Second, false, pending},
		{"no store resourceVersion, old, the API server has it: pending", nil, "", 2 * ttl, true, pending},
		{"no store resourceVersion, old, the API server has none: gone", nil, "", 2 * ttl, false, gone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
			store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			client := fake.NewClientset()
			if tc.inStore != nil {
				if err := store.Add(tc.inStore); err != nil {
					t.Fatal(err)
				}
			}
			if tc.inAPI {
				inAPI := created
				if tc.inStore != nil {
					inAPI = tc.inStore
				}
				if _, err := client.StorageV1().VolumeAttachments().Create(context.Background(), inAPI, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			c := New(Options{Memory: attachstate.New(attachstate.Options{Clock: clk}), Store: store, Client: client, Clock: clk})
			e := attachstate.Expectation{VA: created, Stored: true, Since: clk.Now().Add(-tc.age)}
			_, ctx := ktesting.NewTestContext(t)
			if got := c.judge(ctx, e, tc.storeRV, clk.Now()); got != tc.want {
				t.Errorf("verdict = %d, want %d", got, tc.want)
			}
		})
	}
}
