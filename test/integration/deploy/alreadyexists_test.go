package deploy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/migration-aware/adc/pkg/volumeattach"
	"github.com/migration-aware/adc/test/faultproxy"
	"github.com/migration-aware/adc/test/integration/framework"
)

// A create that finds its VolumeAttachment already there (a previous leader created it just
// before handing over, and adc's informer has not shown it yet) is read back with a GET
// (pkg/volumeattach ClientAttachmentWriter.Create), so adc knows which object it waits for.
// As the ServiceAccount, under the shipped role, that GET must be allowed: adc reads the
// existing object once, attaches the volume through it, and gets no 403. Issue #23, "RBAC
// gap".
func TestCreateFindsExistingVolumeAttachment(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cp := framework.Get(t)
	m := applyManifests(ctx, t)
	user := m.serviceAccountUser()
	s := newScenario(ctx, t)
	startAttacher(ctx, t)

	// adc talks to the API server through a fault proxy, so the test can hold back what its
	// VolumeAttachment informer sees; the test's own writes go straight to the API server.
	proxy, err := faultproxy.New(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Not ctx: the proxy must outlive the controller, whose cleanup runs first.
	proxyCtx, stopProxy := context.WithCancel(context.Background())
	if err := proxy.Start(proxyCtx); err != nil {
		stopProxy()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopProxy()
		_ = proxy.Close()
	})
	t.Cleanup(proxy.HealAll)
	rec := &requestRecorder{}
	ctrl := startControllerAs(ctx, t, proxy.Config(), user, rec)
	s.eventually("adc's caches synced", 20*time.Second, func(context.Context) (bool, string) {
		return ctrl.HasSynced(), "not yet"
	})

	// adc's VolumeAttachment watch stalls: what the previous leader created next stays out of
	// its cache until Heal.
	proxy.Freeze("volumeattachments")
	handle := s.ns + "-vol"
	name, unique := vaName(handle, testDriver, s.node), csiUnique(testDriver, handle)
	claim := s.csiVolume("data", handle)
	pv := s.pvs[len(s.pvs)-1]
	previous := volumeattach.NewVolumeAttachment(name, testDriver, s.node, storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv})
	if _, err := s.admin.StorageV1().VolumeAttachments().Create(ctx, previous, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating VolumeAttachment %s as the previous leader: %v", name, err)
	}
	s.pod("app", claim)

	path := "/apis/storage.k8s.io/v1/volumeattachments/" + name
	s.eventually("adc's create of "+name+" answered 409 AlreadyExists", 20*time.Second, func(context.Context) (bool, string) {
		got := rec.responses(http.MethodPost, "/apis/storage.k8s.io/v1/volumeattachments")
		return got[http.StatusConflict] > 0, fmt.Sprintf("create responses by code: %v", got)
	})
	s.eventually("adc reads the existing VolumeAttachment "+name, 20*time.Second, func(context.Context) (bool, string) {
		got := rec.responses(http.MethodGet, path)
		return got[http.StatusOK] > 0, fmt.Sprintf("GET %s responses by code: %v", path, got)
	})

	proxy.Heal("volumeattachments")
	s.eventually("VolumeAttachment "+name+" attached and listed in node status", 20*time.Second, s.attachedAndListed(name, unique))

	if got := rec.forbidden(); len(got) > 0 {
		t.Errorf("the controller got %d forbidden (403) responses as %s; its role lacks:\n%s", len(got), user, strings.Join(got, "\n"))
	}
}
