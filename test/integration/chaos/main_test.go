package chaos

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/migration-aware/adc/test/integration/framework"
)

// Settings of a run. The defaults keep the package at about 1.5 minutes on the 2-core CI
// machine; CHAOS_DURATION and CHAOS_SEED (or the flags) make a longer run or replay one.
var (
	chaosDuration = flag.Duration("chaos.duration", envDuration("CHAOS_DURATION", 45*time.Second), "how long faults and churn run (env CHAOS_DURATION)")
	chaosSeed     = flag.Int64("chaos.seed", envInt("CHAOS_SEED", 0), "seed of every random choice; 0 picks one from the clock (env CHAOS_SEED)")
)

// adcBinary is the adc binary built once for the package; adcBuildErr says why it is
// missing, so that the tests that do not run adc still run when it does not build.
var (
	adcBinary   string
	adcBuildErr error
)

func TestMain(m *testing.M) {
	flag.Parse()
	bin, cleanup, err := framework.BuildADC()
	if err != nil {
		adcBuildErr = err
	} else {
		adcBinary = bin
	}
	code := m.Run()
	if cleanup != nil {
		cleanup()
	}
	os.Exit(code)
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
		fmt.Fprintf(os.Stderr, "chaos: ignoring %s=%q: not a duration\n", name, v)
	}
	return def
}

func envInt(name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
		fmt.Fprintf(os.Stderr, "chaos: ignoring %s=%q: not an integer\n", name, v)
	}
	return def
}
