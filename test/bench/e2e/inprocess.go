package main

import (
	"context"
	"flag"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/volumeattach"
	"github.com/migration-aware/adc/test/bench/internal/scenario"
)

// inProcessOptions are adc options without a flag of `adc controller`, for experiments with
// -controller=adc-in-process (adc then shares the benchmark's process: no RSS or CPU figures).
type inProcessOptions struct {
	workers         int
	statusDelay     time.Duration
	createsInFlight int
}

func (o *inProcessOptions) addFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.workers, "workers", 10, "adc-in-process: controller workers")
	fs.DurationVar(&o.statusDelay, "node-status-max-delay", 0, "adc-in-process: Options.NodeStatusMaxDelay (0: default)")
	fs.IntVar(&o.createsInFlight, "creates-in-flight", 0, "adc-in-process: Options.CreatesInFlight (0: default, sized by the client budget)")
}

// start returns the function that starts adc in-process with c's client budget.
func (o *inProcessOptions) start(c scenario.Config) func(context.Context, *rest.Config) error {
	return func(ctx context.Context, cfg *rest.Config) error {
		// The same budget as `adc controller`, so the status delay and the create gate see it.
		ctrlCfg, statusCfg, budget := volumeattach.PrioritizedBudget(cfg, float32(c.QPS), c.Burst)
		ctrlClient := kubernetes.NewForConfigOrDie(ctrlCfg)
		opts := adc.Options{
			NodeStatusMaxDelay: o.statusDelay,
			CreatesInFlight:    o.createsInFlight,
			APIBudget:          budget,
			NodeStatus:         &volumeattach.ClientStatusWriter{Client: kubernetes.NewForConfigOrDie(statusCfg)},
		}
		factory := informers.NewSharedInformerFactory(ctrlClient, 0)
		ctrl, err := adc.New(ctrlClient, nil, factory, opts)
		if err != nil {
			return err
		}
		factory.Start(ctx.Done())
		go ctrl.Run(ctx, o.workers)
		return nil
	}
}
