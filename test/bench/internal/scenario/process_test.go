package scenario

import (
	"slices"
	"strings"
	"testing"
)

// Each controller that runs as a process gets its binary and the controllers it must run:
// kube-controller-manager only its attach/detach controller, kube-controller-manager with adc
// inside only adc (the built-in one must not run beside it), adc its own command.
func TestControllerCommand(t *testing.T) {
	base := Config{QPS: 1000, Burst: 2000, KCMPath: "kcm", KCMADCPath: "kcm-adc", ADCPath: "adc"}
	cases := []struct {
		name     string
		kind     Kind
		clear    func(*Config)
		wantBin  string
		wantArgs []string
		wantErr  string
	}{
		{name: "kube-controller-manager runs its attach/detach controller", kind: KCM, wantBin: "kcm",
			wantArgs: []string{"--controllers persistentvolume-attach-detach-controller", "--kube-api-qps 1000", "--kube-api-burst 2000"}},
		{name: "kube-controller-manager with adc inside runs adc alone", kind: KCMADC, wantBin: "kcm-adc",
			wantArgs: []string{"--controllers migration-aware-attach-detach-controller", "--kube-api-qps 1000", "--kube-api-burst 2000"}},
		{name: "adc runs its controller command", kind: ADC, wantBin: "adc",
			wantArgs: []string{"controller --kubeconfig", "--kube-api-qps 1000", "--secure-port 8443"}},
		{name: "no kcm-adc binary", kind: KCMADC, clear: func(c *Config) { c.KCMADCPath = "" }, wantErr: "make kcm-adc"},
		{name: "in-process adc has no command", kind: ADCInProcess, wantErr: "does not run as a process"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Controller = tc.kind
			if tc.clear != nil {
				tc.clear(&c)
			}
			bin, args, err := controllerCommand(c, "/run/kubeconfig", "127.0.0.1:8443")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one that says %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if bin != tc.wantBin {
				t.Errorf("binary %q, want %q", bin, tc.wantBin)
			}
			line := strings.Join(args, " ")
			for _, want := range tc.wantArgs {
				if !strings.Contains(line, want) {
					t.Errorf("command line %q lacks %q", line, want)
				}
			}
			if tc.kind == KCMADC && slices.Contains(args, "persistentvolume-attach-detach-controller") {
				t.Errorf("command line %q also runs the built-in attach/detach controller", line)
			}
		})
	}
}
