package realdemo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/internal/demo"
	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// outcome is where a story pod must end on real parts.
type outcome int

const (
	// outcomeRunning: the pod reaches phase Running.
	outcomeRunning outcome = iota
	// outcomeHeldInTree: adc holds the in-tree volume; no in-tree attacher exists among the
	// real parts (v1.36 has none), where the simulated demo attaches it.
	outcomeHeldInTree
	// outcomeRunningOrMultiAttach: one of two pods wanting a ReadWriteOnce volume runs, adc
	// reports the other as a multi-attach problem.
	outcomeRunningOrMultiAttach
)

// realOutcome maps the story's expectation to the real parts.
func realOutcome(p demo.StoryPod) outcome {
	switch {
	case p.Want.Mechanism == migration.MechanismInTree:
		return outcomeHeldInTree
	case p.WantAlt.Phase == readmodel.PhaseMultiAttach:
		return outcomeRunningOrMultiAttach
	default:
		return outcomeRunning
	}
}

// observation is one look at the pods and at adc's own report.
type observation struct {
	pods        map[string]*v1.Pod // by name
	report      rollout.Report
	held        map[string]rollout.HeldPair // by namespace/pod
	multiAttach map[string]bool             // by namespace/pod
	rows        map[string]row              // by pod name, filled by readRows
	running     int
	settled     int
}

// watcher polls until every pod is where it must end, starting the late kubelets on time.
type watcher struct {
	stack       *harness.Stack
	story       *story
	adcStart    time.Time
	lateStarted bool
	// running is when each pod was first seen Running, after adc started.
	running   map[string]time.Duration
	settledAt time.Duration
	last      observation
}

// wait returns true once every pod settled, false when o.Timeout passed first.
func (w *watcher) wait(ctx context.Context, o Options) (bool, error) {
	out := o.Out
	deadline := time.After(o.Timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		since := time.Since(w.adcStart)
		if !w.lateStarted && since >= o.LateKubelet {
			for _, n := range w.story.late {
				if err := w.stack.Kubelet(n).Start(); err != nil {
					return false, err
				}
				fmt.Fprintf(out, "  %+6.1fs  %s: kubelet started\n", since.Seconds(), n)
			}
			w.lateStarted = true
		}
		if obs, err := w.observe(ctx); err == nil {
			w.last = obs
		}
		obs := w.last
		line := fmt.Sprintf("%d/%d pods settled: %d Running, %d held by adc", obs.settled, len(w.story.pods), obs.running, obs.settled-obs.running)
		if line != last {
			const width = 26
			filled := obs.settled * width / len(w.story.pods)
			fmt.Fprintf(out, "  %+6.1fs  [%s%s] %s\n", since.Seconds(), strings.Repeat("#", filled), strings.Repeat(".", width-filled), line)
			last = line
		}
		if obs.settled == len(w.story.pods) {
			w.settledAt = since
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline:
			return false, nil
		case <-tick.C:
		}
	}
}

// observe reads the pods and adc's report and counts the settled pods.
func (w *watcher) observe(ctx context.Context) (observation, error) {
	obs := observation{pods: map[string]*v1.Pod{}, held: map[string]rollout.HeldPair{}, multiAttach: map[string]bool{}}
	list, err := w.stack.Client.CoreV1().Pods(demo.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return obs, fmt.Errorf("listing the demo's pods: %w", err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		obs.pods[p.Name] = p
		if _, seen := w.running[p.Name]; !seen && p.Status.Phase == v1.PodRunning {
			w.running[p.Name] = time.Since(w.adcStart)
		}
	}
	if obs.report, err = fetchReport(ctx, w.stack); err != nil {
		return obs, err
	}
	for _, h := range obs.report.Held {
		obs.held[h.Pod] = h
	}
	for _, p := range obs.report.Problems {
		if p.Kind == rollout.ProblemMultiAttach {
			obs.multiAttach[p.Pod] = true
		}
	}
	for _, sp := range w.story.pods {
		key := demo.Namespace + "/" + sp.Name
		running := obs.pods[sp.Name] != nil && obs.pods[sp.Name].Status.Phase == v1.PodRunning
		if running {
			obs.running++
		}
		switch realOutcome(sp) {
		case outcomeHeldInTree:
			if h, ok := obs.held[key]; ok && h.Mechanism == migration.MechanismInTree {
				obs.settled++
			}
		case outcomeRunningOrMultiAttach:
			if running || obs.multiAttach[key] {
				obs.settled++
			}
		default:
			if running {
				obs.settled++
			}
		}
	}
	return obs, nil
}

// fetchReport reads adc's own rollout report (GET /dashboard/api/v1/rollout, as the dashboard does).
func fetchReport(ctx context.Context, s *harness.Stack) (rollout.Report, error) {
	var r rollout.Report
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.ADCAddr()+dashboard.APIPath, nil)
	if err != nil {
		return r, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return r, fmt.Errorf("reading adc's report: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("reading adc's report: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return r, fmt.Errorf("decoding adc's report: %w", err)
	}
	return r, nil
}
