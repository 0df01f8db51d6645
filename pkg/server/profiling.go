package server

import "net/http/pprof"

// EnableProfiling serves Go's runtime profiles under /debug/pprof/ as kube-controller-manager
// does with --profiling: the index and every named profile (heap, goroutine, block, mutex,
// allocs, threadcreate), cmdline, a CPU profile (profile?seconds=N), symbol lookup and an
// execution trace (trace?seconds=N). Profiles read the process, never cluster state, so the
// listener stays read-only; symbol also answers POST because `go tool pprof` posts addresses
// to it.
func (s *Server) EnableProfiling() {
	s.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
