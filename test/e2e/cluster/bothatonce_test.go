package cluster_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// Two attach/detach controllers at once (issue 42, item 2, on the whole cluster): adc is
// started (standalone, as the Deployment runs it) while kube-controller-manager's own
// attach/detach controller is still on, a step an operator gets wrong by switching in the
// wrong order. A pod with new volumes makes the built-in controller write (its
// VolumeAttachments, its node's status.volumesAttached); adc must notice, say so (a Warning
// Event OtherAttachDetachController on the node, adc_other_controller_fenced 1,
// adc_other_controller_writes_total counting the writes, readiness still 200 with
// /readyz?verbose saying why) and from then on write nothing: the audit log shows no
// VolumeAttachment create, delete or update and no node status write by adc after the log
// line that says it noticed, over a 10 s watch and until the built-in controller is switched
// off. Then adc resumes by itself once the built-in controller has been quiet for
// --other-controller-quiet-period (45 s here, longer than the test takes from the notice to
// the switch-off even on a busy machine; a Normal Event OtherAttachDetachControllerGone,
// the gauge back to 0), and a new pod attaches through it. Over the whole scenario no volume
// in use is detached, and none is dropped from a node's status by a write of adc; the
// built-in controller's writes may drop some while both run (it lists only what it attached
// itself): counted in a figure.
func TestClusterHandoverBothAtOnce(t *testing.T) {
	t.Parallel()
	if clusters[cluster.Standalone] == nil {
		t.Skipf("adc beside kube-controller-manager's own controller is the standalone way: mode %s not selected", cluster.Standalone)
	}
	md := cluster.Standalone
	h := startHandover(t, md, "both", cluster.Stock.Controllers())
	ctx := t.Context()
	s := h.mc.stack
	h.deploy(ctx, t, h.builtIn())

	const quiet = 45 * time.Second
	s.ADC().SetArgs(append(s.ADC().Args(), "--other-controller-quiet-period", quiet.String())...)
	from := time.Now()
	if err := s.ADC().Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitADCReady(ctx); err != nil {
		t.Fatal(err)
	}
	adcUp := time.Now()

	// A new pod with three new volumes: the built-in controller attaches them and writes
	// their node's status.volumesAttached. adc sees that write when it changes the list, which
	// it does unless the built-in controller happened to write it in adc's (sorted) order: with
	// four or more volumes on the node that is one chance in 24 or less per write, so a
	// second and a third pod follow if adc has not noticed within attemptWindow.
	const attemptWindow = 15 * time.Second
	var created []hoVol
	var warning *v1.Event
	var firstCreated time.Time
	var err error
	for attempt := 1; attempt <= 3 && warning == nil; attempt++ {
		pod := fmt.Sprintf("new-both-%d", attempt)
		var vols []hoVol
		var claims []string
		for _, c := range []string{"a", "b", "c"} {
			v := h.createVolume(ctx, t, pod+c, h.nodes[0], harness.DefaultDriver)
			v.pod = pod
			vols = append(vols, v)
			claims = append(claims, pod+c)
		}
		spec := harness.PodSpec(h.ns, pod, h.nodes[0], claims...)
		grace := int64(1)
		spec.Spec.TerminationGracePeriodSeconds = &grace
		at := time.Now()
		if _, err := s.Client.CoreV1().Pods(h.ns).Create(ctx, spec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if firstCreated.IsZero() {
			firstCreated = at
		}
		created = append(created, vols...)
		if warning, err = findNodeEvent(ctx, h, "OtherAttachDetachController", firstCreated, attemptWindow); err != nil {
			t.Logf("attempt %d: %v", attempt, err)
		}
		// Either may have created the VolumeAttachments, before adc noticed.
		for _, v := range vols {
			h.waitAttached(ctx, t, fmt.Sprintf("both at once (pod %d)", attempt), v, at, "")
		}
	}
	if warning == nil {
		t.Fatalf("adc never noticed the built-in controller's writes\n%s", tailLines(s.ADC().Log(), 40))
	}
	t.Logf("Event %s %s on node %s: %s", warning.Type, warning.Reason, warning.InvolvedObject.Name, warning.Message)
	if warning.Type != v1.EventTypeWarning {
		t.Errorf("Event %s is %s, want Warning", warning.Reason, warning.Type)
	}
	noticed, err := loggedAt(s.ADC().Log(), "Another attach/detach controller is writing what adc owns")
	if err != nil {
		t.Fatal(err)
	}
	figure(t, md, "both at once: first pod created -> adc noticed (log)", since(firstCreated, noticed))
	if m := scrape(ctx, t, s.ADCAddr()); m["adc_other_controller_fenced"] != 1 {
		t.Errorf("adc_other_controller_fenced = %v while fenced, want 1", m["adc_other_controller_fenced"])
	} else {
		t.Logf("while fenced: adc_other_controller_fenced 1, %s", describeWrites(m))
	}
	// Readiness stays true while fenced; ?verbose says why adc writes nothing.
	code, body := get(ctx, t, "http://"+s.ADCAddr()+"/readyz?verbose")
	line := ""
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, "other-attach-detach-controller") {
			line = l
		}
	}
	if code != http.StatusOK || !strings.Contains(line, "fenced") {
		t.Errorf("/readyz?verbose while fenced: %d, other-attach-detach-controller line %q; want 200 and why adc is fenced\n%s", code, line, body)
	} else {
		t.Logf("/readyz?verbose while fenced: %d, %s", code, line)
	}
	// Both on for a while: adc stays fenced, nothing flaps.
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Second, true, func(context.Context) (bool, error) {
		// The test's context, not the poll's: a scrape near the window's end must not fail.
		if m := scrape(ctx, t, s.ADCAddr()); m["adc_other_controller_fenced"] != 1 {
			return false, fmt.Errorf("adc_other_controller_fenced = %v while the built-in controller is still on, want 1", m["adc_other_controller_fenced"])
		}
		return false, nil
	}); err != nil && !wait.Interrupted(err) {
		t.Fatal(err)
	}

	// The operator switches the built-in controller off; adc resumes after the quiet period.
	off := time.Now()
	if err := s.RestartControllerManager(ctx, cluster.Standalone.Controllers()); err != nil {
		t.Fatal(err)
	}
	// Since the notice: on a machine slow enough to take longer than the quiet period to get
	// here, adc resumed while the built-in controller was on but idle, which is right too.
	gone, err := findNodeEvent(ctx, h, "OtherAttachDetachControllerGone", noticed, 2*time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, tailLines(s.ADC().Log(), 40))
	}
	resumed, err := loggedAt(s.ADC().Log(), "adc writes again")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Event %s %s on node %s: %s", gone.Type, gone.Reason, gone.InvolvedObject.Name, gone.Message)
	figure(t, md, "both at once: built-in switched off -> adc resumes (quiet period "+quiet.String()+")", since(off, resumed))
	if m := scrape(ctx, t, s.ADCAddr()); m["adc_other_controller_fenced"] != 0 {
		t.Errorf("adc_other_controller_fenced = %v after adc resumed, want 0", m["adc_other_controller_fenced"])
	}

	audit, err := cluster.ReadAudit(s.Stack)
	if err != nil {
		t.Fatal(err)
	}
	// adc's writes between its start and the notice, and none from the notice to the resume.
	const inFlight = 100 * time.Millisecond // a request sent just before the notice
	writes := audit.Writes(s.ADCUser(), from, resumed, "volumeattachments", "nodes/status")
	var before int
	for _, r := range writes {
		if r.Received.Before(noticed.Add(inFlight)) {
			before++
			t.Logf("adc's write before it noticed: %s at %s", r, r.Received.Format(time.StampMilli))
			continue
		}
		t.Errorf("adc wrote while fenced: %s at %s (noticed at %s)", r, r.Received.Format(time.StampMilli), noticed.Format(time.StampMilli))
	}
	builtIn := audit.Writes("", adcUp, off, "volumeattachments", "nodes/status")
	var kcmWrites int
	var lastKCM time.Time
	for _, r := range builtIn {
		if strings.HasPrefix(r.UserAgent, "kube-controller-manager") {
			kcmWrites++
			lastKCM = r.Received
		}
	}
	if !lastKCM.IsZero() {
		figure(t, md, "both at once: built-in's last write -> adc resumes", since(lastKCM, resumed))
	}
	figure(t, md, "both at once: adc's writes before noticing, while fenced", fmt.Sprintf("%d, %d", before, len(writes)-before))
	figure(t, md, "both at once: built-in controller's writes while both ran", strconv.Itoa(kcmWrites))

	// adc attaches again.
	h.attachNew(ctx, t, "both at once (resumed)", "new-resumed", h.nodes[1], harness.DefaultDriver, "adc")
	to := time.Now().Add(settle)
	time.Sleep(settle)
	if audit, err = cluster.ReadAudit(s.Stack); err != nil {
		t.Fatal(err)
	}
	// adc's node status writes never drop a volume. The built-in controller's may: it writes
	// the volumes it attached itself, and while both run those may be fewer than adc had
	// written (seen: the three volumes of the first new pod listed by adc, one by the
	// built-in controller's next write, before its other two attaches completed). That is the
	// fight the fence keeps adc out of, not adc's doing: reported, not judged.
	adcUser := s.ADCUser()
	checkAuditOf(t, md, "both at once", audit, from, to, append(created, h.vols["new-resumed"]), nil,
		func(r auditlog.Request) bool { return r.User == adcUser })
	statusWrites, err := audit.NodeStatusWrites()
	if err != nil {
		t.Fatal(err)
	}
	var builtInDrops int
	for _, d := range cluster.DroppedVolumes(statusWrites, from, to) {
		if d.Write.Request.User != adcUser {
			builtInDrops++
		}
	}
	figure(t, md, "both at once: volumes the built-in controller's writes dropped from node status", strconv.Itoa(builtInDrops))
	h.checkPods(ctx, t)
}

// findNodeEvent waits up to timeout for an Event with reason on a Node, first seen after
// since, and returns it.
func findNodeEvent(ctx context.Context, h *handover, reason string, since time.Time, timeout time.Duration) (*v1.Event, error) {
	var found *v1.Event
	sel := fields.Set{"reason": reason, "involvedObject.kind": "Node"}.AsSelector().String()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := h.mc.stack.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, nil
		}
		for i := range list.Items {
			e := &list.Items[i]
			at := e.LastTimestamp.Time
			if at.IsZero() {
				at = e.EventTime.Time
			}
			// LastTimestamp has whole seconds.
			if !at.Before(since.Truncate(time.Second)) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("no Event %s on a node since %s within %s: %w", reason, since.Format(time.StampMilli), timeout, err)
	}
	return found, nil
}

// loggedAt returns the time of the first klog line of log that contains msg (klog's header
// has the local time to the microsecond, without the year).
func loggedAt(log, msg string) (time.Time, error) {
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, msg) {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || len(f[0]) != 5 {
			continue
		}
		now := time.Now()
		at, err := time.ParseInLocation("2006 0102 15:04:05.000000", fmt.Sprintf("%d %s %s", now.Year(), f[0][1:], f[1]), time.Local)
		if err != nil {
			return time.Time{}, fmt.Errorf("the time of log line %q: %w", line, err)
		}
		return at, nil
	}
	return time.Time{}, fmt.Errorf("adc never logged %q", msg)
}

// get returns the status code and body of a GET of url.
func get(ctx context.Context, t *testing.T, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// scrape returns adc's metrics of the other-controller guard, by name, and the writes counter
// by its labels (name{labels}).
func scrape(ctx context.Context, t *testing.T, addr string) map[string]float64 {
	t.Helper()
	_, body := get(ctx, t, "http://"+addr+"/metrics")
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "adc_other_controller_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

func describeWrites(m map[string]float64) string {
	var parts []string
	for k, v := range m {
		if strings.HasPrefix(k, "adc_other_controller_writes_total") {
			parts = append(parts, fmt.Sprintf("%s %v", k, v))
		}
	}
	if len(parts) == 0 {
		return "no adc_other_controller_writes_total"
	}
	return strings.Join(parts, ", ")
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
