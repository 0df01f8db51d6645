package adc

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// The budget of make test: a fixed set of schedules per world, the same in every run, so a
// failure replays and a pass means the same thing each time. About 60 s under -race on two
// cores: make test's share (TestInterleaveBudgetCatches checks it still catches every fixed
// defect); make interleave explores more (SCHEDULES, SEED, DEPTH).
const (
	// budgetSchedules random schedules per world from budgetSeed.
	budgetSchedules = 700
	budgetSeed      = 1
	// budgetDepth: every schedule of each world to this many chosen steps (states already
	// explored are pruned).
	budgetDepth = 4
)

// identityBudget is the smaller budget of the worlds that name one disk twice (issue 41):
// their schedules are those of twovol and recreate with a second name for the disk, which
// the full budget explores already; these check that every path keys the disk by one name,
// which the pv-key mutant shows they do within their first schedules.
var identityBudget = map[string]struct{ schedules, depth int }{
	"twopv":       {300, 4},
	"recreate-pv": {300, 4},
	"intree-csi":  {300, 4},
}

// budgetOf is the number of random schedules and the exhaustive depth of a world's budget.
func budgetOf(w *worldSpec) (schedules, depth int) {
	if b, ok := identityBudget[w.name]; ok {
		return b.schedules, b.depth
	}
	return budgetSchedules, budgetDepth
}

// budgetConfig is everything the explorer can do, with two workers in flight.
var budgetConfig = exploreConfig{threads: 2, split: true, reads: true, relists: true,
	faults: []outcome{outcomeForbidden, outcomeTimeout, outcomeTimeoutApplied}}

// knownDefects names, per world, a controller defect the explorer finds and that is not fixed
// yet: the budget skips the world rather than fail make test on a known bug. Empty: every
// defect found so far is fixed.
var knownDefects = map[string]string{}

// budgetSchedulesOf runs the budget's schedules of world w in their fixed order: the random
// ones, then the exhaustive search. each is told about every schedule run and stops the
// exploration by returning false.
func budgetSchedulesOf(w *worldSpec, cfg exploreConfig, each func(mode string, res scheduleResult) bool) {
	schedules, depth := budgetOf(w)
	for i := 0; i < schedules; i++ {
		seed := int64(budgetSeed + i)
		res := runSchedule(w, cfg, randomChooser(rand.New(rand.NewSource(seed)), *ilSteps))
		if !each(fmt.Sprintf("random (schedule seed %d)", seed), res) {
			return
		}
	}
	stop := false
	dfs(w, cfg, depth, *ilLimit, func(res scheduleResult) {
		if !stop && !each(fmt.Sprintf("exhaustive depth %d", depth), res) {
			stop = true
		}
	})
}

// TestInterleaveBudget is the explorer's part of make test (no flags): the budget's
// schedules of every world, which must break no invariant.
func TestInterleaveBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("the interleaving explorer's budget takes about 30 s under -race")
	}
	start := time.Now()
	total := &tally{}
	for _, name := range worldOrder {
		w := worlds[name]
		t.Run(name, func(t *testing.T) {
			if d := knownDefects[name]; d != "" {
				t.Skipf("world %s: known controller defect, not fixed yet: %s", name, d)
			}
			a := &tally{}
			begin := time.Now()
			budgetSchedulesOf(w, budgetConfig, func(mode string, res scheduleResult) bool {
				a.record(t, w, budgetConfig, mode, res)
				return true
			})
			a.elapsed = time.Since(begin)
			a.summary(t, w, "budget")
			total.add(a)
			if a.violating > 0 {
				t.Errorf("%d schedules broke an invariant; the first of each kind is printed above with its replay line", a.violating)
			}
		})
	}
	t.Logf("schedules explored: %d, violations: %d in %s", total.runs, total.violating, time.Since(start).Round(time.Millisecond))
	fmt.Printf("schedules explored: %d, violations: %d\n", total.runs, total.violating)
}

// TestInterleaveBudgetCatches checks the explorer itself: with a fixed defect put back
// (interleave_mutants_test.go), the budget's schedules must break the invariant that defect
// breaks. It explores the world the mutant names first and stops at the violation, so it
// costs a fraction of the budget.
func TestInterleaveBudgetCatches(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the interleaving explorer's budget until each mutant is caught")
	}
	for _, m := range mutantNames() {
		spec := mutants[m]
		want := spec.invariant
		order := []string{spec.world}
		for _, name := range worldOrder {
			if name != spec.world {
				order = append(order, name)
			}
		}
		t.Run(string(m), func(t *testing.T) {
			cfg := budgetConfig
			cfg.mutant = m
			runs := 0
			var found []string
			start := time.Now()
			for _, name := range order {
				w := worlds[name]
				budgetSchedulesOf(w, cfg, func(mode string, res scheduleResult) bool {
					runs++
					if len(res.violations) == 0 {
						return true
					}
					v := res.violations[0]
					found = append(found, v.kind)
					if v.kind != want {
						return true
					}
					t.Logf("caught after %d schedules (%s) in world %s, %s: %s: %s\nreplay: %s", runs, time.Since(start).Round(time.Millisecond),
						name, mode, v.kind, v.detail, replayLine(w, cfg, res.choices))
					return false
				})
				if len(found) > 0 && found[len(found)-1] == want {
					return
				}
			}
			t.Errorf("mutant %s not caught by the budget's %d schedules: no %s (found %s)", m, runs, want, strings.Join(found, ", "))
		})
	}
}
