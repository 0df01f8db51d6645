package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
)

// protobufMagic starts every value kube-apiserver stores as protobuf.
var protobufMagic = []byte("k8s\x00")

// prefixes maps the etcd key prefixes kube-apiserver uses to the kinds the checker follows.
var prefixes = []struct {
	prefix string
	kind   Kind
}{
	{"/registry/minions/", KindNode},
	{"/registry/volumeattachments/", KindVolumeAttachment},
	{"/registry/persistentvolumes/", KindPersistentVolume},
	{"/registry/pods/", KindPod},
	{"/registry/persistentvolumeclaims/", KindClaim},
}

// EtcdFeed reads kube-apiserver's storage directly and feeds a Checker every change of the
// followed kinds in revision order, from the revision it started at. Reading etcd rather than
// the API is what lets the checker see every intermediate state, across API server restarts.
type EtcdFeed struct {
	client  *clientv3.Client
	checker *Checker
	codec   runtime.Decoder

	observed atomic.Int64 // highest revision the watch has reported (events or progress)
	events   atomic.Int64
	mu       sync.Mutex
	err      error
	done     chan struct{}
}

// StartEtcdFeed connects to etcd at url, loads the current state of the followed kinds into
// checker and follows every later change until ctx ends. It returns the revision it started
// at.
func StartEtcdFeed(ctx context.Context, url string, checker *Checker) (*EtcdFeed, int64, error) {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, 0, fmt.Errorf("connecting to etcd at %s: %w", url, err)
	}
	f := &EtcdFeed{client: client, checker: checker, codec: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), done: make(chan struct{})}
	start, err := f.load(ctx)
	if err != nil {
		_ = client.Close()
		return nil, 0, err
	}
	f.observed.Store(start)
	wch := client.Watch(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(start+1), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	go f.follow(ctx, wch)
	return f, start, nil
}

// load applies the current state of every followed prefix, at one revision.
func (f *EtcdFeed) load(ctx context.Context) (int64, error) {
	head, err := f.client.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading the etcd revision: %w", err)
	}
	rev := head.Header.Revision
	for _, p := range prefixes {
		resp, err := f.client.Get(ctx, p.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
		if err != nil {
			return 0, fmt.Errorf("listing %s at rev %d: %w", p.prefix, rev, err)
		}
		for _, kv := range resp.Kvs {
			obj, err := f.decode(kv.Value)
			if err != nil {
				return 0, fmt.Errorf("decoding %s: %w", kv.Key, err)
			}
			// The initial state is applied at the listing revision, so it stays in order.
			if err := f.checker.Apply(Event{Rev: rev, Kind: p.kind, Name: strings.TrimPrefix(string(kv.Key), p.prefix), Object: obj, Seen: time.Now()}); err != nil {
				return 0, err
			}
		}
	}
	return rev, nil
}

func (f *EtcdFeed) follow(ctx context.Context, wch clientv3.WatchChan) {
	defer close(f.done)
	logger := klog.FromContext(ctx)
	for resp := range wch {
		if err := resp.Err(); err != nil {
			if ctx.Err() == nil {
				f.fail(fmt.Errorf("etcd watch from the checker ended at rev %d (compacted at %d): %w", f.observed.Load(), resp.CompactRevision, err))
			}
			return
		}
		for _, ev := range resp.Events {
			if err := f.apply(ev); err != nil {
				f.fail(err)
				return
			}
			f.events.Add(1)
		}
		if resp.Header.Revision > f.observed.Load() && (resp.IsProgressNotify() || len(resp.Events) > 0) {
			if resp.IsProgressNotify() {
				f.observed.Store(resp.Header.Revision)
			} else {
				f.observed.Store(resp.Events[len(resp.Events)-1].Kv.ModRevision)
			}
		}
	}
	if ctx.Err() == nil {
		f.fail(errors.New("etcd watch from the checker closed early"))
	}
	logger.V(2).Info("Checker etcd feed stopped", "events", f.events.Load(), "observedRev", f.observed.Load())
}

func (f *EtcdFeed) apply(ev *clientv3.Event) error {
	key := string(ev.Kv.Key)
	for _, p := range prefixes {
		if !strings.HasPrefix(key, p.prefix) {
			continue
		}
		value, deleted := ev.Kv.Value, ev.Type == clientv3.EventTypeDelete
		if deleted {
			if ev.PrevKv == nil {
				return fmt.Errorf("DELETE of %s at rev %d came without its previous value", key, ev.Kv.ModRevision)
			}
			value = ev.PrevKv.Value
		}
		obj, err := f.decode(value)
		if err != nil {
			return fmt.Errorf("decoding %s at rev %d: %w", key, ev.Kv.ModRevision, err)
		}
		return f.checker.Apply(Event{Rev: ev.Kv.ModRevision, Kind: p.kind, Name: strings.TrimPrefix(key, p.prefix), Deleted: deleted, Object: obj, Seen: time.Now()})
	}
	return nil
}

func (f *EtcdFeed) decode(value []byte) (runtime.Object, error) {
	if !bytes.HasPrefix(value, protobufMagic) {
		return nil, fmt.Errorf("value is not protobuf (starts with %q)", value[:min(len(value), 8)])
	}
	obj, _, err := f.codec.Decode(value, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("protobuf decode: %w", err)
	}
	return obj, nil
}

func (f *EtcdFeed) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

// Err returns why the feed stopped early, if it did: the checker then missed changes and its
// verdict is void.
func (f *EtcdFeed) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Events returns how many changes the feed has read from etcd (of every kind).
func (f *EtcdFeed) Events() int64 { return f.events.Load() }

// Head returns etcd's current revision.
func (f *EtcdFeed) Head(ctx context.Context) (int64, error) {
	resp, err := f.client.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading the etcd revision: %w", err)
	}
	return resp.Header.Revision, nil
}

// CatchUp waits until the feed has seen every change up to etcd's current revision, so the
// checker's state is etcd's and a compaction cannot cut the feed's watch short. It returns
// that revision.
func (f *EtcdFeed) CatchUp(ctx context.Context, timeout time.Duration) (int64, error) {
	head, err := f.Head(ctx)
	if err != nil {
		return 0, err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := f.Err(); err != nil {
			return false, err
		}
		if f.observed.Load() >= head {
			return true, nil
		}
		return false, f.client.RequestProgress(ctx)
	})
	if err != nil {
		return 0, fmt.Errorf("checker catching up with etcd rev %d (at %d): %w", head, f.observed.Load(), err)
	}
	return head, nil
}

// Compact compacts etcd's history up to rev, as the API server's periodic compaction does;
// watches (the API server's, after a restart) from before rev then get 410 Gone.
func (f *EtcdFeed) Compact(ctx context.Context, rev int64) error {
	if _, err := f.client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return fmt.Errorf("compacting etcd to rev %d: %w", rev, err)
	}
	return nil
}

// Close stops the feed.
func (f *EtcdFeed) Close() {
	_ = f.client.Close()
	<-f.done
}
