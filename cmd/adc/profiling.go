package main

import (
	"runtime"

	"github.com/spf13/pflag"

	"github.com/migration-aware/adc/pkg/server"
)

// profilingFlags are --profiling and --contention-profiling, named as in
// kube-controller-manager so operators find the same switches. Unlike there, --profiling is
// off by default: a CPU profile or a trace keeps a core busy for as long as it is asked to,
// so it is served only when asked for, and then only on the secure port, to whoever may get
// the non-resource URL /debug/*.
type profilingFlags struct {
	profiling  bool
	contention bool
}

func (p *profilingFlags) add(fs *pflag.FlagSet) {
	fs.BoolVar(&p.profiling, "profiling", false, "Serve Go runtime profiles (CPU, heap, goroutines, traces) under /debug/pprof/ on the secure port (--secure-port), to users the API server allows get on the non-resource URL /debug/*; never on --http-addr.")
	fs.BoolVar(&p.contention, "contention-profiling", false, "Record block and mutex contention for /debug/pprof/block and /debug/pprof/mutex, if --profiling is on (costs a little on every contended lock and channel).")
}

// install serves the profiles on srv when --profiling is on and, with --contention-profiling,
// turns on the runtime's block and mutex profiling, which are off unless asked for because
// they cost on every contended operation. Contention profiling without the endpoints would
// only cost, so it follows --profiling as in kube-controller-manager.
func (p profilingFlags) install(srv *server.Server) {
	if !p.profiling {
		return
	}
	srv.EnableProfiling()
	if p.contention {
		runtime.SetBlockProfileRate(1)
		runtime.SetMutexProfileFraction(1)
	}
}
