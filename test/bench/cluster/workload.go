package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// namespace is the benchmark's namespace (and StorageClass) in each cluster.
const namespace = "bench"

// result is what one mode measured.
type result struct {
	running, detached int
	// startup is pod created -> Running per pod, both seen by watch.
	startup []time.Duration
	// detach is pod delete call -> its VolumeAttachment gone (seen by watch), per pod.
	detach []time.Duration
	// allRunning is the first pod created -> the last Running; allDetached the first delete
	// call -> the last VolumeAttachment gone.
	allRunning, allDetached time.Duration
	controllerCPU           time.Duration
}

// workload seeds the PVs and claims (bound by the PV controller), creates the pods at the
// rate, waits until they run, deletes them at the same rate and waits until every volume is
// detached.
func workload(ctx context.Context, s *harness.Stack, rec *cluster.Recorder, o config, logf func(string, ...any)) (result, error) {
	var res result
	client := s.Client
	if err := cluster.CreateNamespace(ctx, client, namespace); err != nil {
		return res, err
	}
	if err := cluster.CreateStorageClass(ctx, client, namespace); err != nil {
		return res, err
	}
	handles := map[string]string{} // PV -> volume handle
	for i := range o.pods {
		pv := cluster.PV{Name: fmt.Sprintf("bench-pv-%d", i), Class: namespace, Driver: harness.DefaultDriver, Handle: handle(i)}
		handles[pv.Name] = pv.Handle
		if _, err := cluster.CreatePV(ctx, client, pv); err != nil {
			return res, err
		}
		if err := createClaim(ctx, client, claim(i)); err != nil {
			return res, err
		}
	}
	bound := func(e cluster.Event) bool { return e.What == cluster.ClaimBound && e.Namespace == namespace }
	if err := waitCount(ctx, rec, "claims bound", o.pods, o.timeout, bound); err != nil {
		return res, err
	}
	logf("%d claims bound by the PV controller; creating the pods", o.pods)

	created := map[string]bool{}
	tick := time.NewTicker(time.Duration(float64(time.Second) / o.rate))
	defer tick.Stop()
	for i := range o.pods {
		if _, err := client.CoreV1().Pods(namespace).Create(ctx, podSpec(i), metav1.CreateOptions{}); err != nil {
			return res, fmt.Errorf("creating pod %d: %w", i, err)
		}
		created[pod(i)] = true
		<-tick.C
	}
	ours := func(what string) func(cluster.Event) bool {
		return func(e cluster.Event) bool { return e.What == what && e.Namespace == namespace && created[e.Name] }
	}
	runErr := waitCount(ctx, rec, "pods Running", o.pods, o.timeout, ours(cluster.PodRunning))
	first := time.Time{}
	var last time.Time
	for _, r := range rec.Events(ours(cluster.PodRunning)) {
		c, ok := rec.First(cluster.Is(cluster.PodCreated, namespace, r.Name))
		if !ok {
			continue
		}
		res.startup = append(res.startup, r.At.Sub(c.At))
		res.running++
		if first.IsZero() || c.At.Before(first) {
			first = c.At
		}
		if r.At.After(last) {
			last = r.At
		}
	}
	res.allRunning = last.Sub(first)
	if runErr != nil {
		return res, runErr
	}
	logf("%d pods Running; deleting them", res.running)

	// The PV the PV controller bound to each claim, and the node the scheduler put each pod
	// on, name the pod's VolumeAttachment.
	handleOf := map[string]string{} // claim -> volume handle
	for _, e := range rec.Events(bound) {
		handleOf[e.Name] = handles[e.Detail]
	}
	vaOf := map[string]string{}
	for _, e := range rec.Events(ours(cluster.PodScheduled)) {
		vaOf[e.Name] = harness.VAName(handleOf[claim(ordinal(e.Name))], harness.DefaultDriver, e.Node)
	}
	deleted := map[string]time.Time{}
	var firstDelete time.Time
	for i := range o.pods {
		at := time.Now()
		if err := client.CoreV1().Pods(namespace).Delete(ctx, pod(i), metav1.DeleteOptions{}); err != nil {
			return res, fmt.Errorf("deleting pod %d: %w", i, err)
		}
		deleted[vaOf[pod(i)]] = at
		if firstDelete.IsZero() {
			firstDelete = at
		}
		<-tick.C
	}
	gone := func(e cluster.Event) bool { _, ok := deleted[e.Name]; return e.What == cluster.VADeleted && ok }
	detachErr := waitCount(ctx, rec, "volumes detached", o.pods, o.timeout, gone)
	last = time.Time{}
	for _, e := range rec.Events(gone) {
		res.detach = append(res.detach, e.At.Sub(deleted[e.Name]))
		res.detached++
		if e.At.After(last) {
			last = e.At
		}
	}
	res.allDetached = last.Sub(firstDelete)
	logf("%d volumes detached", res.detached)
	if detachErr != nil {
		return res, fmt.Errorf("%w; still there: %s", detachErr, remaining(ctx, client))
	}
	return res, nil
}

// waitCount waits until n recorded events match.
func waitCount(ctx context.Context, rec *cluster.Recorder, what string, n int, timeout time.Duration, match func(cluster.Event) bool) error {
	got := 0
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		got = len(rec.Events(match))
		return got >= n, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %d of %d within %s: %w", what, got, n, timeout, err)
	}
	return nil
}

func handle(i int) string  { return fmt.Sprintf("bench-vol-%d", i) }
func claim(i int) string   { return fmt.Sprintf("claim-%d", i) }
func pod(i int) string     { return fmt.Sprintf("pod-%d", i) }
func ordinal(p string) int { var i int; _, _ = fmt.Sscanf(p, "pod-%d", &i); return i }

func createClaim(ctx context.Context, client kubernetes.Interface, name string) error {
	class := namespace
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating claim %s: %w", name, err)
	}
	return nil
}

// podSpec is pod i with claim i, placed by the scheduler, with the service account token
// volume every pod gets.
func podSpec(i int) *v1.Pod {
	grace := int64(1)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod(i), Namespace: namespace},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: harness.PauseImage, ImagePullPolicy: v1.PullIfNotPresent,
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim(i)}}}},
		},
	}
}

// remaining describes the pods and VolumeAttachments left, for an error.
func remaining(ctx context.Context, client kubernetes.Interface) string {
	var parts []string
	if pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			parts = append(parts, fmt.Sprintf("pod %s on %s (%s, deleting %v)", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil))
		}
	}
	if vas, err := client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{}); err == nil {
		for _, va := range vas.Items {
			parts = append(parts, fmt.Sprintf("VolumeAttachment %s of %s on %s (attached %v, deleting %v)", va.Name, *va.Spec.Source.PersistentVolumeName, va.Spec.NodeName, va.Status.Attached, va.DeletionTimestamp != nil))
		}
	}
	return strings.Join(parts, "; ")
}
