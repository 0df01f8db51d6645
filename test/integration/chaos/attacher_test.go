package chaos

import (
	"fmt"
	"hash/fnv"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/test/simulator"
)

// flakyAttacher is the simulated external-attacher of the chaos run: it keeps the real one's
// finalizer, a detach takes 50-300 ms, about one attach in five fails for its first two
// seconds and about one detach in four fails for its first second. Which ones is a function
// of the seed and the VolumeAttachment's name, so a run can be replayed.
func flakyAttacher(client kubernetes.Interface, seed uint64) *simulator.ExternalAttacher {
	roll := func(va *storagev1.VolumeAttachment, salt string) uint64 {
		h := fnv.New64a()
		_, _ = fmt.Fprintf(h, "%d/%s/%s/%s", seed, salt, va.Name, va.UID)
		return h.Sum64()
	}
	return &simulator.ExternalAttacher{
		Client:            client,
		Drivers:           []string{driver},
		Workers:           8,
		Finalizer:         true,
		RetryAttachErrors: true,
		AttachError: func(va *storagev1.VolumeAttachment) string {
			if roll(va, "attach")%5 == 0 && time.Since(va.CreationTimestamp.Time) < 2*time.Second {
				return "simulated: rpc error: code = Unavailable desc = ControllerPublishVolume timed out"
			}
			return ""
		},
		DetachError: func(va *storagev1.VolumeAttachment) string {
			if roll(va, "detach")%4 == 0 && va.DeletionTimestamp != nil && time.Since(va.DeletionTimestamp.Time) < time.Second {
				return "simulated: rpc error: code = Internal desc = ControllerUnpublishVolume failed"
			}
			return ""
		},
		DetachDelay: func(va *storagev1.VolumeAttachment) time.Duration {
			return 50*time.Millisecond + time.Duration(roll(va, "delay")%250)*time.Millisecond
		},
	}
}
