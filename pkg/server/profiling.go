package server

import "net/http/pprof"

// EnableProfiling serves Go's runtime profiles under /debug/pprof/ as kube-controller-manager
// does with --profiling: the index and every named profile (heap, goroutine, block, mutex,
// allocs, threadcreate), cmdline, a CPU profile (profile?seconds=N), symbol lookup and an
// execution trace (trace?seconds=N). Profiles read the process, never cluster state, so the
// listener stays read-only; symbol also answers POST because `go tool pprof` posts addresses
// to it.
//
// The profiles are served on the secure port only, behind authorization (get on the
// non-resource URL /debug/*, or /debug/pprof/* for these alone), never on the loopback
// listener: a CPU profile or a trace keeps a core busy for as long as it is asked to.
func (s *Server) EnableProfiling() {
	s.debug.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.debug.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.debug.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.debug.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	s.debug.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	s.debug.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
