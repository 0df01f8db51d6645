package adc

import (
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"
)

// The interleaving explorer (issue #23, item 3) drives the real controller code (its event
// handlers, node reconciles, status syncs and expectation checker) through schedules that
// order what client-go and the API server may do: store updates before their handler runs,
// handler lag, lost watch events and relists, every answer an API call can get and when it
// reaches the worker, and the external actors. After every step it checks the invariants
// of interleave_invariants_test.go. make interleave runs it; see TestInterleave for flags.

var (
	ilSchedules = flag.Int("interleave.schedules", 0, "random schedules per world (0: none)")
	ilSeed      = flag.Int64("interleave.seed", 1, "seed of the random schedules; schedule i of a world uses seed+i")
	ilSteps     = flag.Int("interleave.steps", 40, "random steps of a random schedule before the default schedule takes over")
	ilDepth     = flag.Int("interleave.depth", 0, "exhaustive search to this many steps per world (0: none)")
	ilLimit     = flag.Int("interleave.limit", 20000, "at most this many exhaustive schedules per world")
	ilWorlds    = flag.String("interleave.worlds", strings.Join(worldOrder, ","), "worlds to explore")
	ilThreads   = flag.Int("interleave.threads", 2, "workers in flight at once")
	ilSplit     = flag.Bool("interleave.split", true, "API answers reach the worker in a step of their own")
	ilReads     = flag.Bool("interleave.reads", true, "a worker can be preempted right after reading a node's VolumeAttachments")
	ilRelists   = flag.Bool("interleave.relists", true, "the VolumeAttachment watch can break and relist")
	ilFaults    = flag.String("interleave.faults", "FTA", "API faults besides ok: F forbidden, T timeout, A timeout after the write was applied")
	ilReplay    = flag.String("interleave.replay", "", "replay one schedule (world:config:choices, as printed) and print its trace")
	ilShow      = flag.Int("interleave.show", 1, "violating schedules printed in full per world, mode and invariant")
	ilMutant    = flag.String("interleave.mutant", "", "put a fixed defect back to see the explorer catch it (interleave_mutants_test.go)")
)

// TestInterleave explores schedules of the small worlds: -interleave.schedules random ones
// per world, and/or an exhaustive search to -interleave.depth; -interleave.replay replays one.
// Without any of these it is skipped (make interleave sets them).
func TestInterleave(t *testing.T) {
	if *ilReplay != "" {
		replayOne(t, *ilReplay)
		return
	}
	if *ilSchedules == 0 && *ilDepth == 0 {
		t.Skip("no schedules asked for; run make interleave, or set -interleave.schedules / -interleave.depth")
	}
	cfg := exploreConfig{threads: *ilThreads, split: *ilSplit, reads: *ilReads, relists: *ilRelists}
	var err error
	if cfg.faults, err = parseFaults(*ilFaults); err != nil {
		t.Fatal(err)
	}
	if cfg.mutant, err = parseMutant(*ilMutant); err != nil {
		t.Fatal(err)
	}
	total := &tally{}
	for _, name := range strings.Split(*ilWorlds, ",") {
		w := worlds[name]
		if w == nil {
			t.Fatalf("unknown world %q (have %v)", name, worldOrder)
		}
		if *ilSchedules > 0 {
			total.add(exploreRandom(t, w, cfg))
		}
		if *ilDepth > 0 {
			total.add(exploreExhaustive(t, w, cfg))
		}
	}
	t.Logf("schedules explored: %d, violations: %d (%.0f schedules/s)", total.runs, total.violating, float64(total.runs)/total.elapsed.Seconds())
	fmt.Printf("schedules explored: %d, violations: %d\n", total.runs, total.violating)
	if total.violating > 0 {
		t.Errorf("%d schedules broke an invariant; the first of each kind is printed above with its replay line", total.violating)
	}
}

// tally counts one exploration: schedules run, those that broke an invariant, and for each
// invariant the first schedule (1-based) that broke it.
type tally struct {
	runs, violating int
	first           map[string]int
	count           map[string]int
	elapsed         time.Duration
}

func (a *tally) add(b *tally) {
	a.runs += b.runs
	a.violating += b.violating
	a.elapsed += b.elapsed
}

// record counts a schedule and prints the first -interleave.show violating ones of each
// invariant.
func (a *tally) record(t *testing.T, w *worldSpec, cfg exploreConfig, mode string, res scheduleResult) {
	a.runs++
	if len(res.violations) == 0 {
		return
	}
	a.violating++
	v := res.violations[0]
	if a.first == nil {
		a.first, a.count = map[string]int{}, map[string]int{}
	}
	a.count[v.kind]++
	if _, ok := a.first[v.kind]; !ok {
		a.first[v.kind] = a.runs
	}
	if a.count[v.kind] <= *ilShow {
		t.Logf("world %s, %s, schedule %d: %s: %s\nreplay (%s): %s\ntrace:\n%s", w.name, mode, a.runs, v.kind, v.detail,
			verifyReplay(w, cfg, res), replayLine(w, cfg, res.choices), strings.Join(res.trace, "\n"))
	}
}

func (a *tally) summary(t *testing.T, w *worldSpec, mode string) {
	var kinds []string
	for k := range a.first {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s: %d schedules, first at schedule %d", k, a.count[k], a.first[k]))
	}
	found := "none"
	if len(parts) > 0 {
		found = strings.Join(parts, "; ")
	}
	t.Logf("world %s, %s: %d schedules in %s (%.0f/s), %d violating; %s", w.name, mode, a.runs, a.elapsed.Round(time.Millisecond),
		float64(a.runs)/a.elapsed.Seconds(), a.violating, found)
}

func exploreRandom(t *testing.T, w *worldSpec, cfg exploreConfig) *tally {
	a := &tally{}
	mode := fmt.Sprintf("random seed %d", *ilSeed)
	start := time.Now()
	for i := 0; i < *ilSchedules; i++ {
		seed := *ilSeed + int64(i)
		res := runSchedule(w, cfg, randomChooser(rand.New(rand.NewSource(seed)), *ilSteps))
		a.record(t, w, cfg, fmt.Sprintf("%s (schedule seed %d)", mode, seed), res)
	}
	a.elapsed = time.Since(start)
	a.summary(t, w, mode)
	return a
}

func exploreExhaustive(t *testing.T, w *worldSpec, cfg exploreConfig) *tally {
	a := &tally{}
	mode := fmt.Sprintf("exhaustive depth %d", *ilDepth)
	start := time.Now()
	_, pruned, complete := dfs(w, cfg, *ilDepth, *ilLimit, func(res scheduleResult) { a.record(t, w, cfg, mode, res) })
	a.elapsed = time.Since(start)
	a.summary(t, w, mode)
	if complete {
		t.Logf("world %s, %s: complete (%d states pruned as already explored)", w.name, mode, pruned)
	} else {
		t.Logf("world %s, %s: stopped after -interleave.limit=%d schedules (%d pruned), not complete", w.name, mode, *ilLimit, pruned)
	}
	return a
}

// verifyReplay runs a violating schedule again from its replay line's choices: it must break
// the same invariant at the same step.
func verifyReplay(w *worldSpec, cfg exploreConfig, res scheduleResult) string {
	again := runSchedule(w, cfg, replayChooser(res.choices))
	if len(again.violations) == 0 || again.violations[0].kind != res.violations[0].kind || again.violations[0].step != res.violations[0].step {
		return "NOT REPRODUCED: the harness is not deterministic here"
	}
	return "verified"
}

func replayOne(t *testing.T, line string) {
	parts := strings.SplitN(line, ":", 3)
	if len(parts) != 3 {
		t.Fatalf("replay %q: want world:config:choices", line)
	}
	w := worlds[parts[0]]
	if w == nil {
		t.Fatalf("unknown world %q", parts[0])
	}
	cfg, err := decodeConfig(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	choices, err := decodeChoices(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	res := runSchedule(w, cfg, replayChooser(choices))
	t.Logf("world %s (%s), trace:\n%s", w.name, w.about, strings.Join(res.trace, "\n"))
	for _, v := range res.violations {
		t.Errorf("%s at step %d: %s", v.kind, v.step, v.detail)
	}
}

// TestInterleaveDefaultSchedules checks the explorer itself on the schedule every world
// takes with no choices at all (prompt informers, no faults): it ends with every pod deleted,
// no VolumeAttachment and empty memory, breaking nothing. A failure here is a broken harness
// (or a controller that cannot converge), not a race.
func TestInterleaveDefaultSchedules(t *testing.T) {
	for _, name := range worldOrder {
		t.Run(name, func(t *testing.T) {
			res := runSchedule(worlds[name], exploreConfig{threads: 2, split: true, reads: true}, replayChooser(nil))
			for _, v := range res.violations {
				t.Errorf("%s: %s\n%s", v.kind, v.detail, strings.Join(res.trace, "\n"))
			}
			if res.steps < 10 {
				t.Errorf("only %d steps; the world did nothing:\n%s", res.steps, strings.Join(res.trace, "\n"))
			}
		})
	}
}
