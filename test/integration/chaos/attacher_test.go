package chaos

import (
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/test/simulator"
)

// attacherFaults decides which attaches and detaches of the simulated external-attacher fail
// and how long a detach takes. Every decision is a function of the seed, the
// VolumeAttachment's name, its incarnation (the how-manieth object of that name this is) and
// the attempt: nothing comes from UIDs or the clock, so CHAOS_SEED replays the same choices
// for the same sequence of VolumeAttachments.
//
// About one attach in five fails its first 4-9 attempts (the attacher retries with backoff,
// about 2 s for 9), about one detach in four fails its first 3-8 attempts, and a detach takes
// 50-300 ms.
type attacherFaults struct {
	seed uint64

	mu  sync.Mutex
	vas map[string]*vaFaults // VolumeAttachment name -> its current incarnation
}

// vaFaults is what the fault plan remembers of one VolumeAttachment name.
type vaFaults struct {
	uid         types.UID // identifies the incarnation, never feeds a decision
	incarnation int
	attaches    int // attach attempts of this incarnation so far
	detaches    int
}

func newAttacherFaults(seed uint64) *attacherFaults {
	return &attacherFaults{seed: seed, vas: map[string]*vaFaults{}}
}

// roll is the fault plan's only source of randomness: a hash of the seed and the decision's
// coordinates.
func (f *attacherFaults) roll(salt, name string, incarnation, attempt int) uint64 {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%d/%s/%s/%d/%d", f.seed, salt, name, incarnation, attempt)
	return h.Sum64()
}

// record returns the state of va's incarnation, starting a new one when its UID changed.
func (f *attacherFaults) record(va *storagev1.VolumeAttachment) *vaFaults {
	r := f.vas[va.Name]
	if r == nil {
		r = &vaFaults{uid: va.UID}
		f.vas[va.Name] = r
	} else if r.uid != va.UID {
		r.uid, r.incarnation, r.attaches, r.detaches = va.UID, r.incarnation+1, 0, 0
	}
	return r
}

// attachFails says whether this attach attempt of va fails.
func (f *attacherFaults) attachFails(va *storagev1.VolumeAttachment) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.record(va)
	attempt := r.attaches
	r.attaches++
	return f.fails("attach", va.Name, r.incarnation, attempt, 5, 4, 6)
}

// detachFails says whether this detach attempt of va fails.
func (f *attacherFaults) detachFails(va *storagev1.VolumeAttachment) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.record(va)
	attempt := r.detaches
	r.detaches++
	return f.fails("detach", va.Name, r.incarnation, attempt, 4, 3, 6)
}

// fails: one incarnation in oneIn is faulty, and a faulty one fails its first
// minFail+roll%spread attempts.
func (f *attacherFaults) fails(salt, name string, incarnation, attempt int, oneIn, minFail, spread uint64) bool {
	if f.roll(salt, name, incarnation, -1)%oneIn != 0 {
		return false
	}
	return uint64(attempt) < minFail+f.roll(salt+"-count", name, incarnation, -1)%spread
}

// detachDelay is how long the detach of va takes.
func (f *attacherFaults) detachDelay(va *storagev1.VolumeAttachment) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.record(va)
	return 50*time.Millisecond + time.Duration(f.roll("delay", va.Name, r.incarnation, r.detaches)%250)*time.Millisecond
}

// flakyAttacher is the simulated external-attacher of the chaos run: it keeps the real one's
// finalizer and fails and delays attaches and detaches as faults decides. It serves the
// chaos drivers and the gce-pd CSI driver (migrated inline volumes).
func flakyAttacher(client kubernetes.Interface, faults *attacherFaults) *simulator.ExternalAttacher {
	return &simulator.ExternalAttacher{
		Client:            client,
		Drivers:           []string{driver, spareDriver, gceDriver},
		Workers:           8,
		Finalizer:         true,
		RetryAttachErrors: true,
		AttachError: func(va *storagev1.VolumeAttachment) string {
			if faults.attachFails(va) {
				return "simulated: rpc error: code = Unavailable desc = ControllerPublishVolume timed out"
			}
			return ""
		},
		DetachError: func(va *storagev1.VolumeAttachment) string {
			if va.DeletionTimestamp != nil && faults.detachFails(va) {
				return "simulated: rpc error: code = Internal desc = ControllerUnpublishVolume failed"
			}
			return ""
		},
		DetachDelay: faults.detachDelay,
	}
}
