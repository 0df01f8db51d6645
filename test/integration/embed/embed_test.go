package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // as kube-controller-manager does
	"k8s.io/controller-manager/controller"
	controllerhealthz "k8s.io/controller-manager/pkg/healthz"
	"k8s.io/klog/v2/ktesting"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/kcm"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

// kcmControllerName is the rule kube-controller-manager's controller names follow.
var kcmControllerName = regexp.MustCompile(`^[a-z]([-a-z]*[a-z])?-controller$`)

// kcmController is kube-controller-manager's app.Controller (cmd/kube-controller-manager/app,
// not importable): what a controller descriptor's constructor returns.
type kcmController interface {
	Name() string
	Run(context.Context)
}

// host is the part of kube-controller-manager that adc meets: the shared informer factory
// it owns and starts (with the managedFields-trimming transform it installs), one client
// per controller, and the /healthz handler controllers' checks are added to.
type host struct {
	factory informers.SharedInformerFactory
	config  *rest.Config
	healthz *controllerhealthz.MutableHealthzHandler
	server  *httptest.Server
}

func newHost(t *testing.T) *host {
	cp := framework.Get(t)
	shared, err := kubernetes.NewForConfig(userAgent(cp.Config, "kube-controller-manager/shared-informers"))
	if err != nil {
		t.Fatal(err)
	}
	trim := func(obj interface{}) (interface{}, error) {
		if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
			accessor.SetManagedFields(nil)
		}
		return obj, nil
	}
	name, err := cache.NewInformerName("kube-controller-manager-" + t.Name())
	if err != nil {
		t.Fatal(err)
	}
	h := &host{
		factory: informers.NewSharedInformerFactoryWithOptions(shared, 12*time.Hour, informers.WithTransform(trim), informers.WithInformerName(name)),
		config:  cp.Config,
		healthz: controllerhealthz.NewMutableHealthzHandler(),
	}
	h.server = httptest.NewServer(h.healthz)
	t.Cleanup(h.server.Close)
	return h
}

// newClient is ControllerContext.NewClient: a client of the controller's own.
func (h *host) newClient(t *testing.T, name string) kubernetes.Interface {
	c, err := kubernetes.NewForConfig(userAgent(h.config, "kube-controller-manager/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func userAgent(cfg *rest.Config, ua string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.UserAgent = ua
	return c
}

// build is BuildControllers for one descriptor: construct, then register the controller's
// health check (HealthCheckable) under its name.
func (h *host) build(t *testing.T, ctx context.Context, constructor func(ctx context.Context) (kcmController, error)) kcmController {
	t.Helper()
	ctrl, err := constructor(ctx)
	if err != nil {
		t.Fatalf("constructing the controller: %v", err)
	}
	check := controllerhealthz.NamedPingChecker(ctrl.Name())
	if hc, ok := ctrl.(controller.HealthCheckable); ok {
		if real := hc.HealthChecker(); real != nil {
			check = controllerhealthz.NamedHealthChecker(ctrl.Name(), real)
		}
	} else {
		t.Errorf("%T is not controller.HealthCheckable: kube-controller-manager would only ping it", ctrl)
	}
	h.healthz.AddHealthChecker(check)
	return ctrl
}

// healthz returns the status code of GET /healthz/<name> on the host's handler.
func (h *host) healthzCode(ctx context.Context, name string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.server.URL+"/healthz/"+name, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// adc is registered as a kube-controller-manager build would: the descriptor's constructor
// calls adc.NewControllerManagerController with the host's factory and a client of its own,
// and the host starts the factory. adc is unhealthy until its caches have synced on the
// host's factory, never starts the factory itself, attaches a CSI volume, reports its
// workqueue metrics in the host's registry, and its Run returns once the host stops it.
func TestEmbeddedInControllerManager(t *testing.T) {
	for _, tc := range []struct {
		name string
		// runFirst runs the controller before the host starts the factory; adc must then
		// wait for the host rather than start it.
		runFirst bool
	}{
		{name: "informers started, then controllers (kube-controller-manager's order)"},
		{name: "controller running before the host starts the informers", runFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			cp := framework.Get(t)
			h := newHost(t)
			addsBefore := queueAdds(t, "adc_node")
			opts := adc.Options{}
			ctrl := h.build(t, ctx, func(ctx context.Context) (kcmController, error) {
				return kcm.NewEmbedded(ctx, h.factory, h.newClient(t, "adc"), cp.Dynamic, opts, 2)
			})
			// kube-controller-manager's TestControllerNamesConsistency rule for its controllers.
			if name := ctrl.Name(); name != adc.ControllerManagerName || !kcmControllerName.MatchString(name) {
				t.Errorf("Name() = %q, want %q matching %s", name, adc.ControllerManagerName, kcmControllerName)
			}
			name := ctrl.Name()
			if code, err := h.healthzCode(ctx, name); err != nil || code != http.StatusInternalServerError {
				t.Errorf("/healthz/%s before anything runs = %d (err %v), want 500", name, code, err)
			}

			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			runDone := make(chan struct{})
			run := func() {
				go func() {
					defer close(runDone)
					ctrl.Run(runCtx)
				}()
			}
			if tc.runFirst {
				run()
				// adc must not start the host's factory: without the host, its caches
				// never sync and it stays unhealthy.
				err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Second, true, func(ctx context.Context) (bool, error) {
					code, err := h.healthzCode(ctx, name)
					return code == http.StatusOK, err
				})
				if !wait.Interrupted(err) {
					t.Fatalf("adc became healthy (or failed: %v) before the host started the informer factory", err)
				}
			}
			h.factory.Start(runCtx.Done())
			defer h.factory.Shutdown()
			if !tc.runFirst {
				run()
			}

			framework.Eventually(ctx, t, "/healthz/"+name+" 200 once the caches synced", 20*time.Second, func(ctx context.Context) (bool, string) {
				code, err := h.healthzCode(ctx, name)
				return code == http.StatusOK, fmt.Sprintf("%d %v", code, err)
			})
			// adc's informers are the host's: they are the ones the host started.
			started := h.factory.WaitForCacheSync(ctx.Done())
			for _, obj := range []any{&v1.Pod{}, &v1.PersistentVolumeClaim{}, &v1.PersistentVolume{}, &v1.Node{},
				&storagev1.CSINode{}, &storagev1.CSIDriver{}, &storagev1.VolumeAttachment{}} {
				if typ := reflect.TypeOf(obj); !started[typ] {
					t.Errorf("the host's factory did not start a synced %s informer; it started %v", typ.Elem().Name(), typeNames(started))
				}
			}

			attachCSIVolume(ctx, t, cp.Client)

			if after := queueAdds(t, "adc_node"); after <= addsBefore {
				t.Errorf("workqueue_adds_total{name=\"adc_node\"} in the host's metrics registry went from %v to %v, want it to grow", addsBefore, after)
			}

			stop()
			select {
			case <-runDone:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return within 10s of its context ending")
			}
		})
	}
}

// attachCSIVolume shows adc attaching a CSI volume end to end, with the simulated
// external-attacher and kubelet, on objects of its own.
func attachCSIVolume(ctx context.Context, t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	const driver = "csi.embed.example.com"
	a := &simulator.ExternalAttacher{Client: admin, Drivers: []string{driver}}
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "embed-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node, handle := ns.Name+"-node", ns.Name+"-vol"
	kubelet := simulator.Kubelet{Client: admin}
	if _, err := kubelet.RegisterNode(ctx, node, true); err != nil {
		t.Fatal(err)
	}
	if err := kubelet.ReportCSINode(ctx, node, "", driver); err != nil {
		t.Fatal(err)
	}
	claim, err := simulator.BindNewClaim(ctx, admin, ns.Name, "data", &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: handle},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods(ns.Name).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: v1.PodSpec{
			NodeName:   node,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Cluster-scoped leftovers would be reconciled by the next subtest's controller.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		zero := int64(0)
		del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
		for _, d := range []struct {
			what string
			err  error
		}{
			{"pod", admin.CoreV1().Pods(ns.Name).Delete(ctx, "app", del)},
			{"VolumeAttachment", admin.StorageV1().VolumeAttachments().Delete(ctx, vaName(handle, driver, node), del)},
			{"CSINode", admin.StorageV1().CSINodes().Delete(ctx, node, del)},
			{"node", admin.CoreV1().Nodes().Delete(ctx, node, del)},
			{"PersistentVolume", admin.CoreV1().PersistentVolumes().Delete(ctx, handle, del)},
		} {
			if d.err != nil && !apierrors.IsNotFound(d.err) {
				t.Logf("cleanup: %s: %v", d.what, d.err)
			}
		}
	})

	va, unique := vaName(handle, driver, node), "kubernetes.io/csi/"+driver+"^"+handle
	framework.Eventually(ctx, t, "VolumeAttachment "+va+" attached and listed in node status", 20*time.Second, func(ctx context.Context) (bool, string) {
		got, err := admin.StorageV1().VolumeAttachments().Get(ctx, va, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if !got.Status.Attached {
			return false, "not attached yet"
		}
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, av := range n.Status.VolumesAttached {
			if string(av.Name) == unique {
				return true, ""
			}
		}
		return false, fmt.Sprintf("node lists %v", n.Status.VolumesAttached)
	})
}

// queueAdds returns workqueue_adds_total for the named queue from the host's registry.
func queueAdds(t *testing.T, queue string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != "workqueue_adds_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == queue {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// vaName is the VolumeAttachment name of a CSI volume on a node (the upstream rule).
func vaName(handle, driver, node string) string {
	sum := sha256.Sum256([]byte(handle + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}

func typeNames(m map[reflect.Type]bool) []string {
	var out []string
	for typ, synced := range m {
		out = append(out, fmt.Sprintf("%s=%v", typ.Elem().Name(), synced))
	}
	sort.Strings(out)
	return out
}
