// Command demo is `make demo REAL=1`: the mid-rollout story of `adc-demo` on hollow kubelets,
// the e2e mock CSI driver, csi-attacher and the adc binary (see package realdemo).
//
// It is a program of its own, not `adc-demo --real`, so that the adc binary users run does
// not link the end-to-end harness. It needs `make build`, `make envtest-assets` and
// `make e2e-assets`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/migration-aware/adc/test/e2e/demo/realdemo"
)

func main() {
	o := realdemo.Options{Out: os.Stdout}
	flag.StringVar(&o.ADCBinary, "adc", "bin/adc", "The adc binary to run (make build).")
	flag.DurationVar(&o.LateKubelet, "late-kubelet-after", 3*time.Second, "How long after adc started the late node's kubelet starts.")
	flag.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "Give up (exit non-zero) if the pods have not settled by then.")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := realdemo.Run(ctx, o)
	interrupted := ctx.Err() != nil
	stop()
	switch {
	case err != nil && interrupted:
		fmt.Fprintln(os.Stderr, "demo: interrupted; everything it started is stopped")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
