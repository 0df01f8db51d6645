package adc

import (
	"context"
	"sync"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"
)

// createJob is one VolumeAttachment a node reconcile decided to create.
type createJob struct {
	pair  *pair
	state *PairState
	va    *storagev1.VolumeAttachment
}

// runCreates sends the node's VolumeAttachment creates in parallel (up to
// MaxParallelCreatesPerNode at once) inside an attach batch. At most AttachBatches nodes
// send creates at the same time, so when the client budget is the bottleneck nodes finish
// one after another and their pods start early, instead of every node finishing at the end.
func (r *nodeRun) runCreates(ctx context.Context) {
	if len(r.creates) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	select {
	case r.c.attachBatches <- struct{}{}:
	case <-ctx.Done():
		for _, j := range r.creates {
			r.c.mem.CreateFailed(j.va, j.pair.ids.sourceKey)
		}
		// Shutting down: nobody waits any more.
		return
	}
	defer func() { <-r.c.attachBatches }()

	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		slot = make(chan struct{}, r.c.opts.MaxParallelCreatesPerNode)
	)
	for _, j := range r.creates {
		wg.Add(1)
		slot <- struct{}{}
		go func(j createJob) {
			defer wg.Done()
			defer func() { <-slot }()
			r.c.startOp(OperationAttach, j.va, j.pair, r.now)
			stored, err := r.c.attachments.Create(ctx, j.va)
			r.c.mem.DecCreating(r.node.Name)
			if err == nil && stored != nil {
				r.c.mem.Created(stored)
			}
			if err != nil {
				r.c.abortOp(j.va.Name)
				if createMayHaveHappened(err) {
					// A timeout may come after the API server stored the object: keep the
					// expectation and its ReadWriteOnce reservation until a read says
					// (checkExpectations), or the informer shows it.
					r.c.mem.CreateUncertain(j.va, r.now)
				} else {
					for _, n := range r.c.mem.CreateFailed(j.va, j.pair.ids.sourceKey) {
						r.c.enqueueNode(n)
					}
				}
				mu.Lock()
				r.errs = append(r.errs, err)
				j.state.Reason = "creating the VolumeAttachment failed, will retry: " + err.Error()
				mu.Unlock()
				return
			}
			logger.V(2).Info("Created VolumeAttachment", "volumeAttachment", klog.KRef("", j.va.Name),
				"pod", j.pair.podRef(), "volume", j.pair.volume, "driver", j.pair.d.Driver)
		}(j)
	}
	wg.Wait()
}
