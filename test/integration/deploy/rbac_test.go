package deploy

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
	"github.com/migration-aware/adc/test/integration/framework"
)

// The controller runs as the ServiceAccount of deploy/kubernetes with exactly its RBAC: it
// attaches and detaches a CSI volume end to end, records Events (and counts a repeated one),
// reads the seed-API CSINodeInfos and CSIDrivers, and never gets a 403; writes outside its
// role are forbidden. Whether the role grants exactly what adc uses is checked from the
// audit log after the suite (checkAudit), against the requests adc made here and in the
// package's other tests.
func TestControllerRunsAsServiceAccount(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cp := framework.Get(t)
	m := applyManifests(ctx, t)
	user := m.serviceAccountUser()

	s := newScenario(ctx, t)
	startAttacher(ctx, t)
	rec := &requestRecorder{}
	startControllerAs(ctx, t, cp.Config, user, rec)

	handle := s.ns + "-vol"
	name, unique := vaName(handle, testDriver, s.node), csiUnique(testDriver, handle)

	t.Run("records Events", func(t *testing.T) {
		// The claim does not exist yet: adc holds the volume and says why on the pod.
		s.pod("app", "data")
		s.eventually("a "+adc.ReasonWaitingForClaim+" Event from adc on the pod", 10*time.Second, func(ctx context.Context) (bool, string) {
			list, err := s.admin.CoreV1().Events(s.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			var seen []string
			for _, ev := range list.Items {
				if ev.InvolvedObject.Name == "app" && ev.Reason == adc.ReasonWaitingForClaim && ev.Source.Component == adc.ComponentName {
					return true, ""
				}
				seen = append(seen, ev.Source.Component+"/"+ev.Reason)
			}
			return false, fmt.Sprintf("Events %v", seen)
		})
	})

	t.Run("counts a repeated Event", func(t *testing.T) {
		// adc sends an Event once per pod, reason and message while the condition lasts; when
		// it clears and comes back, client-go's recorder patches the Event it sent (count 2)
		// instead of creating another.
		s.pod("waiting", "pending")
		claims := s.admin.CoreV1().PersistentVolumeClaims(s.ns)
		claim, err := claims.Create(ctx, &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "pending"},
			Spec: v1.PersistentVolumeClaimSpec{
				AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setPhase := func(phase v1.PersistentVolumeClaimPhase) {
			t.Helper()
			claim.Status.Phase = phase
			if claim, err = claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("setting claim pending to %s: %v", phase, err)
			}
		}
		const unbound = "is not bound yet"
		setPhase(v1.ClaimPending)
		s.eventually("a "+adc.ReasonWaitingForClaim+" Event on pod waiting", 10*time.Second, s.podEvent("waiting", adc.ReasonWaitingForClaim, unbound, 1))
		// Lost: another reason; the waiting condition clears.
		setPhase(v1.ClaimLost)
		s.eventually("an "+adc.ReasonDecisionError+" Event on pod waiting", 10*time.Second, s.podEvent("waiting", adc.ReasonDecisionError, "is Lost", 1))
		setPhase(v1.ClaimPending)
		s.eventually("the "+adc.ReasonWaitingForClaim+" Event on pod waiting counted twice", 10*time.Second, s.podEvent("waiting", adc.ReasonWaitingForClaim, unbound, 2))
	})

	t.Run("attaches a CSI volume", func(t *testing.T) {
		s.csiVolume("data", handle)
		s.eventually("VolumeAttachment "+name+" attached and listed in node status", 20*time.Second, s.attachedAndListed(name, unique))
	})

	t.Run("reads CSINodeInfos", func(t *testing.T) {
		// --node-migration-source=auto reads the seed-API objects too, once discovery shows
		// the CRD (applied with the manifests) is served.
		s.eventually("a successful list of csinodeinfos as the ServiceAccount", 20*time.Second, func(context.Context) (bool, string) {
			return rec.succeeded(http.MethodGet, "/apis/csi.storage.k8s.io/v1alpha1/csinodeinfos"), "not yet"
		})
	})

	t.Run("reads seed CSIDrivers", func(t *testing.T) {
		// --driver-info-source=auto reads the seed-API CSIDrivers too (their CRD is applied
		// with the manifests, so the controller lists them before it starts deciding).
		s.eventually("a successful list of seed csidrivers as the ServiceAccount", 20*time.Second, func(context.Context) (bool, string) {
			return rec.succeeded(http.MethodGet, "/apis/csi.storage.k8s.io/v1alpha1/csidrivers"), "not yet"
		})
	})

	t.Run("detaches when the pod is deleted", func(t *testing.T) {
		s.deletePod("app")
		s.eventually("VolumeAttachment "+name+" deleted and unlisted", 20*time.Second, s.detached(name, unique))
	})

	t.Run("writes outside the role are forbidden", func(t *testing.T) {
		checkForbiddenWrites(ctx, t, cp.Config, user, s)
	})

	if got := rec.forbidden(); len(got) > 0 {
		t.Errorf("the controller got %d forbidden (403) responses as %s; its role lacks:\n%s", len(got), user, strings.Join(got, "\n"))
	}
}

// startControllerAs runs adc in-process the way `adc controller` does (cmd/adc: one client
// budget split into a normal and a node status client, a dynamic client, one shared informer
// factory started after New, then Run), as user, impersonated by the admin (admin is the
// admin's rest.Config, or a fault proxy's). Every response goes through rec. It stops when
// the test ends.
func startControllerAs(ctx context.Context, t *testing.T, admin *rest.Config, user string, rec *requestRecorder) *adc.Controller {
	t.Helper()
	base := rest.CopyConfig(admin)
	base.Impersonate = rest.ImpersonationConfig{UserName: user}
	base.UserAgent = "adc-controller"
	base.Wrap(rec.wrap)
	cfg, statusCfg, _ := volumeattach.PrioritizedBudget(base, 50, 100)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	statusClient, err := kubernetes.NewForConfig(statusCfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := adc.DefaultOptions()
	// auto also reads CSINodeInfos and seed CSIDrivers, so the test covers every read the
	// role grants.
	opts.Migration.NodeSource = migration.NodeSourceAuto
	opts.Migration.DriverSource = migration.DriverSourceAuto
	opts.NodeStatus = &volumeattach.ClientStatusWriter{Client: statusClient}
	opts.CRDPollInterval = 200 * time.Millisecond

	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := adc.New(client, dyn, factory, opts)
	if err != nil {
		cancel()
		t.Fatalf("creating the controller: %v", err)
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctrl.Run(ctx, 2)
		factory.Shutdown()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ctrl
}

// requestRecorder sees every response the controller's clients get.
type requestRecorder struct {
	mu        sync.Mutex
	denied    []string
	successes map[string]bool        // "METHOD path"
	codes     map[string]map[int]int // "METHOD path" -> status code -> responses
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (r *requestRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			r.record(req, resp.StatusCode)
		}
		return resp, err
	})
}

func (r *requestRecorder) record(req *http.Request, code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := req.Method + " " + req.URL.Path
	if r.codes == nil {
		r.codes = map[string]map[int]int{}
	}
	if r.codes[key] == nil {
		r.codes[key] = map[int]int{}
	}
	r.codes[key][code]++
	switch {
	case code == http.StatusForbidden:
		r.denied = append(r.denied, req.Method+" "+req.URL.RequestURI())
	case code < 300:
		if r.successes == nil {
			r.successes = map[string]bool{}
		}
		r.successes[req.Method+" "+req.URL.Path] = true
	}
}

func (r *requestRecorder) forbidden() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.denied)
}

// responses returns how many responses of each status code requests method path got.
func (r *requestRecorder) responses(method, path string) map[int]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.codes[method+" "+path])
}

func (r *requestRecorder) succeeded(method, path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.successes[method+" "+path]
}

// checkForbiddenWrites tries, as the ServiceAccount, writes adc never makes, and checks the
// API server refuses each with 403 and nothing changed.
func checkForbiddenWrites(ctx context.Context, t *testing.T, admin *rest.Config, user string, s *scenario) {
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cfg.UserAgent = forbiddenProbeAgent // refused on purpose: not adc's
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.pod("bystander", "")
	pv := s.pvs[0]
	for _, tc := range []struct {
		name  string
		write func() error
	}{
		{"delete a PersistentVolume", func() error {
			return sa.CoreV1().PersistentVolumes().Delete(ctx, pv, metav1.DeleteOptions{})
		}},
		{"create a Secret", func() error {
			_, err := sa.CoreV1().Secrets(s.ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stolen"}}, metav1.CreateOptions{})
			return err
		}},
		{"delete a pod", func() error {
			return sa.CoreV1().Pods(s.ns).Delete(ctx, "bystander", metav1.DeleteOptions{})
		}},
		{"label a node", func() error {
			_, err := sa.CoreV1().Nodes().Patch(ctx, s.node, types.MergePatchType, []byte(`{"metadata":{"labels":{"adc":"was-here"}}}`), metav1.PatchOptions{})
			return err
		}},
		{"set a VolumeAttachment's status", func() error {
			_, err := sa.StorageV1().VolumeAttachments().Patch(ctx, "any", types.MergePatchType, []byte(`{"status":{"attached":true}}`), metav1.PatchOptions{}, "status")
			return err
		}},
		{"update a VolumeAttachment", func() error {
			_, err := sa.StorageV1().VolumeAttachments().Patch(ctx, "any", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			return err
		}},
		{"take kube-controller-manager's lease", func() error {
			_, err := sa.CoordinationV1().Leases("kube-system").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager"}}, metav1.CreateOptions{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.write(); !apierrors.IsForbidden(err) {
				t.Errorf("got %v, want Forbidden", err)
			}
		})
	}
	if _, err := s.admin.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{}); err != nil {
		t.Errorf("PersistentVolume %s after the forbidden delete: %v", pv, err)
	}
	if _, err := s.admin.CoreV1().Pods(s.ns).Get(ctx, "bystander", metav1.GetOptions{}); err != nil {
		t.Errorf("pod bystander after the forbidden delete: %v", err)
	}
}
