package preflight

import (
	"time"
)

// Run checks the step the options describe against a cluster read (List) and returns every
// finding. It is pure: the same cluster read gives the same report, and nothing is written.
// It fails only on invalid options (an unknown plugin or step, an invalid configuration).
func Run(opts Options, cl Cluster, now time.Time) (Report, error) {
	steps, err := opts.steps()
	if err != nil {
		return Report{}, err
	}
	w := newWorld(steps, opts.Config, cl)
	w.checkNodes()
	w.checkDrivers()
	w.checkStorageClasses()
	w.checkVolumes()
	w.checkPaths()
	w.checkOtherController()
	r := Report{GeneratedAt: now, Config: opts.Config.String(), Steps: steps, NodesManaged: len(w.managed), Findings: w.findings}
	r.finish()
	return r, nil
}
