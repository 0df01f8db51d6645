package scenario

import (
	"flag"
	"os"
	"time"
)

// AddFlags registers on fs the flags every benchmark command shares: the binaries, the
// phase timeout (default timeout), the simulated attacher, seeding, and the log folder.
func (c *Config) AddFlags(fs *flag.FlagSet, timeout time.Duration) {
	fs.StringVar(&c.ADCPath, "adc", "bin/adc", "the adc binary (make build)")
	fs.StringVar(&c.KCMPath, "kcm", "", "the kube-controller-manager binary (make kcm-assets)")
	fs.StringVar(&c.KCMADCPath, "kcm-adc", "bin/kcm-adc/kube-controller-manager-adc", "kube-controller-manager with adc inside (make kcm-adc), for the controller kcm-adc")
	fs.DurationVar(&c.Timeout, "timeout", timeout, "give up on a phase after")
	fs.IntVar(&c.AttacherWorkers, "attacher-workers", 16, "simulated external-attacher workers")
	fs.IntVar(&c.SeedWorkers, "seed-workers", 64, "creates sent at once while seeding")
	fs.StringVar(&c.SeedCache, "seed-cache", "", "keep the seeded etcd data of each size in this folder and reuse it (default: a temporary folder for this run)")
	fs.StringVar(&c.LogDir, "log-dir", os.TempDir(), "where the controllers' logs are kept")
}

// TempSeedCache makes a temporary seed folder when none was given, so every controller of
// this run starts from the same seed, and returns what removes it.
func (c *Config) TempSeedCache() (cleanup func(), err error) {
	if c.SeedCache != "" {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "adc-bench-seeds-")
	if err != nil {
		return nil, err
	}
	c.SeedCache = dir
	return func() { _ = os.RemoveAll(dir) }, nil
}
