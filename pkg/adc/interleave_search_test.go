package adc

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
)

// scheduleResult is one schedule run: its chosen prefix (the rest is the default schedule),
// what it broke, and its trace.
type scheduleResult struct {
	choices    []int
	violations []violation
	trace      []string
	pruned     bool
	steps      int
}

// chooser picks the next move of a schedule's prefix: an index into ms, stopPrefix to hand
// over to the default schedule, or prune to drop the schedule (its state was explored).
type chooser func(step int, ms []move, h *harness) int

const (
	stopPrefix = -1
	prune      = -2
)

// completionSteps bounds the default schedule; a world that does not quiesce by then is a
// violation (the controller keeps itself busy).
const completionSteps = 400

// runSchedule runs one schedule of world w: the prefix the chooser picks, then the default
// schedule until the world quiesces (where no pod may be left waiting), then every pod is
// deleted and the world quiesces again, which must leave no VolumeAttachment and an empty
// controller memory. It stops at the first violation.
func runSchedule(w *worldSpec, cfg exploreConfig, choose chooser) (res scheduleResult) {
	h := newHarness(w, cfg)
	defer func() {
		h.close()
		res.violations, res.trace, res.steps = h.violations, h.trace, len(h.trace)
	}()
	for step := 0; ; step++ {
		ms := h.moves()
		if len(ms) == 0 {
			break
		}
		i := choose(step, ms, h)
		if i == prune {
			res.pruned = true
			return res
		}
		if i == stopPrefix {
			break
		}
		res.choices = append(res.choices, i)
		h.step(ms[i])
		if len(h.violations) > 0 {
			return res
		}
	}
	h.trace = append(h.trace, "     -- default schedule from here")
	settled := false
	for n := 0; n < completionSteps; n++ {
		ms := h.moves()
		i := h.defaultMove(ms)
		if i < 0 {
			if !settled {
				settled = true
				if h.checkSettled(); len(h.violations) > 0 {
					return res
				}
			}
			if key := h.anyPod(); key != "" {
				h.step(move{classPodChurn, "clean-up: delete pod " + key, func() { h.api.deletePod(key) }})
			} else {
				h.checkQuiescent()
				return res
			}
		} else {
			h.step(ms[i])
		}
		if len(h.violations) > 0 {
			return res
		}
	}
	h.violate(invNoQuiescence, fmt.Sprintf("the world did not quiesce within %d default steps", completionSteps))
	return res
}

// anyPod returns a pod of the truth, the first by key, or "".
func (h *harness) anyPod() string {
	first := ""
	for k := range h.api.pods {
		if first == "" || k < first {
			first = k
		}
	}
	return first
}

// randomChooser picks moves at random for the first steps moves: an API call is answered ok
// more often than with any one fault.
func randomChooser(rng *rand.Rand, steps int) chooser {
	return func(step int, ms []move, _ *harness) int {
		if step >= steps {
			return stopPrefix
		}
		total := 0
		for _, m := range ms {
			total += moveWeight(m)
		}
		r := rng.Intn(total)
		for i, m := range ms {
			if r -= moveWeight(m); r < 0 {
				return i
			}
		}
		return len(ms) - 1
	}
}

func moveWeight(m move) int {
	switch m.class {
	case classApply:
		return 6
	case classFault, classRelist:
		return 1
	}
	return 2
}

// replayChooser follows recorded choices, then hands over to the default schedule.
func replayChooser(choices []int) chooser {
	return func(step int, ms []move, _ *harness) int {
		if step >= len(choices) {
			return stopPrefix
		}
		if choices[step] >= len(ms) {
			panic(fmt.Sprintf("replay diverged at step %d: choice %d of %d moves", step, choices[step], len(ms)))
		}
		return choices[step]
	}
}

// dfs explores every schedule of w up to depth choices (each followed by the default
// schedule), skipping states already explored at the same or a smaller depth. It calls
// report for each schedule run to its end and stops after limit of them (pruned ones are
// not counted).
func dfs(w *worldSpec, cfg exploreConfig, depth, limit int, report func(scheduleResult)) (runs, pruned int, complete bool) {
	type level struct{ n, i int }
	var stack []level
	visited := map[uint64]int{}
	for runs < limit {
		replayed := len(stack)
		res := runSchedule(w, cfg, func(step int, ms []move, h *harness) int {
			if step < replayed {
				if len(ms) != stack[step].n {
					panic(fmt.Sprintf("exhaustive search diverged at step %d: %d moves, %d before", step, len(ms), stack[step].n))
				}
				return stack[step].i
			}
			key := h.stateKey()
			if d, seen := visited[key]; seen && d <= step {
				stack = stack[:step]
				return prune
			}
			visited[key] = step
			if step >= depth {
				return stopPrefix
			}
			stack = append(stack, level{n: len(ms)})
			return 0
		})
		if res.pruned {
			pruned++
		} else {
			runs++
			report(res)
		}
		// The schedule may have ended (a violation, a quiet world) above the stack's top.
		if len(stack) > len(res.choices) && !res.pruned {
			stack = stack[:len(res.choices)]
		}
		for len(stack) > 0 && stack[len(stack)-1].i+1 >= stack[len(stack)-1].n {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return runs, pruned, true
		}
		stack[len(stack)-1].i++
	}
	return runs, pruned, false
}

// A replay line names the world, the configuration and the prefix's choices:
// world:config:choices, the config as t<threads> plus s (split answers), r (read
// preemption), l (relists), then -f and the faults (F forbidden, T timeout, A
// timeout-applied); choices in base 36, one character each, {n} above 35.

var faultLetters = map[outcome]string{outcomeForbidden: "F", outcomeTimeout: "T", outcomeTimeoutApplied: "A"}

func encodeConfig(cfg exploreConfig) string {
	s := "t" + strconv.Itoa(cfg.threads)
	for _, f := range []struct {
		on bool
		c  string
	}{{cfg.split, "s"}, {cfg.reads, "r"}, {cfg.relists, "l"}} {
		if f.on {
			s += f.c
		}
	}
	s += "-f"
	for _, f := range cfg.faults {
		s += faultLetters[f]
	}
	if cfg.mutant != "" {
		s += "-m" + string(cfg.mutant)
	}
	return s
}

func decodeConfig(s string) (exploreConfig, error) {
	var cfg exploreConfig
	s, mut, _ := strings.Cut(s, "-m")
	var err error
	if cfg.mutant, err = parseMutant(mut); err != nil {
		return cfg, err
	}
	head, faults, ok := strings.Cut(s, "-f")
	if !ok || !strings.HasPrefix(head, "t") {
		return cfg, fmt.Errorf("bad configuration %q", s)
	}
	i := 1
	for i < len(head) && head[i] >= '0' && head[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(head[1:i])
	if err != nil {
		return cfg, fmt.Errorf("bad thread count in %q", s)
	}
	cfg.threads = n
	for _, c := range head[i:] {
		switch c {
		case 's':
			cfg.split = true
		case 'r':
			cfg.reads = true
		case 'l':
			cfg.relists = true
		default:
			return cfg, fmt.Errorf("unknown option %q in %q", c, s)
		}
	}
	cfg.faults, err = parseFaults(faults)
	return cfg, err
}

func parseFaults(s string) ([]outcome, error) {
	var out []outcome
	for _, c := range s {
		found := false
		for o, l := range faultLetters {
			if l == string(c) {
				out, found = append(out, o), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown fault %q (F, T or A)", c)
		}
	}
	return out, nil
}

func encodeChoices(choices []int) string {
	var b strings.Builder
	for _, c := range choices {
		if c < 36 {
			b.WriteString(strconv.FormatInt(int64(c), 36))
		} else {
			fmt.Fprintf(&b, "{%d}", c)
		}
	}
	return b.String()
}

func decodeChoices(s string) ([]int, error) {
	var out []int
	for i := 0; i < len(s); i++ {
		if s[i] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("unclosed { in %q", s)
			}
			n, err := strconv.Atoi(s[i+1 : i+end])
			if err != nil {
				return nil, err
			}
			out, i = append(out, n), i+end
			continue
		}
		n, err := strconv.ParseInt(s[i:i+1], 36, 0)
		if err != nil {
			return nil, fmt.Errorf("bad choice %q in %q", s[i], s)
		}
		out = append(out, int(n))
	}
	return out, nil
}

func replayLine(w *worldSpec, cfg exploreConfig, choices []int) string {
	return fmt.Sprintf("go test ./pkg/adc/ -count=1 -run 'TestInterleave$' -interleave.replay='%s:%s:%s'", w.name, encodeConfig(cfg), encodeChoices(choices))
}
