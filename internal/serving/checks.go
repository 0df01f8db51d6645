package serving

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/pkg/explain"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
	"github.com/migration-aware/adc/pkg/preflight"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/server"
)

// preflightCacheFor is how long a preflight's cluster read is reused: a preflight lists the
// whole cluster, and a page left open refreshes it.
const preflightCacheFor = 30 * time.Second

// Checks publishes the preflight and explain pages and their JSON on srv (dashboard.
// RegisterChecks), in the configuration the controller runs with. Explanations read the
// leading controller's informer caches (when view returns one that can: ClusterReader) and
// add its memory; preflights, and explanations on a standby replica (view returns nil),
// read the cluster with clients of their own (base's identity, client-go's default 5 QPS,
// so they never take from the controller's API budget).
func Checks(srv *server.Server, base *rest.Config, cfg migration.Config, maxWaitForUnmount time.Duration, view func() rollout.ControllerView) error {
	rc := rest.CopyConfig(base)
	rc.UserAgent = "adc-dashboard"
	rc.QPS, rc.Burst = 0, 0
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("building the dashboard's Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("building the dashboard's dynamic client: %w", err)
	}
	clients := plan.Clients{Kube: kube, Dynamic: dyn}
	cache := &clusterCache{}
	pre := func(ctx context.Context, opts preflight.Options) (preflight.Report, error) {
		cl, at, err := cache.get(ctx, func(ctx context.Context) (preflight.Cluster, error) { return preflight.List(ctx, clients, cfg) })
		if err != nil {
			return preflight.Report{}, err
		}
		opts.Config = cfg
		return preflight.Run(opts, cl, at)
	}
	exp := func(ctx context.Context, t explain.Target) (explain.Report, error) {
		// The leader reads its informer caches; a standby, which has none, the API server.
		var from plan.Reader = clients
		v := view()
		if c, ok := v.(cacheReader); ok && c.HasSynced() {
			from = c.ClusterReader()
		}
		cl, err := explain.Read(ctx, from, cfg, t)
		if err != nil {
			return explain.Report{}, err
		}
		now := time.Now()
		opts := explain.Options{Config: cfg, MaxWaitForUnmount: maxWaitForUnmount, ControllerAddress: "in-process"}
		if v != nil {
			r := rollout.FromController(v, now)
			opts.Controller = &r
		} else {
			r := rollout.Standby(cfg, now)
			opts.Controller = &r
		}
		return explain.Build(opts, t, cl, now), nil
	}
	dashboard.RegisterChecks(srv, pre, exp)
	return nil
}

// cacheReader is a controller view that can also read its informer caches (*adc.Controller).
type cacheReader interface {
	HasSynced() bool
	ClusterReader() plan.Reader
}

// clusterCache keeps the last preflight cluster read for preflightCacheFor; one read at a
// time.
type clusterCache struct {
	mu sync.Mutex
	cl preflight.Cluster
	at time.Time
}

func (c *clusterCache) get(ctx context.Context, read func(context.Context) (preflight.Cluster, error)) (preflight.Cluster, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < preflightCacheFor {
		return c.cl, c.at, nil
	}
	cl, err := read(ctx)
	if err != nil {
		return preflight.Cluster{}, time.Time{}, err
	}
	c.cl, c.at = cl, time.Now()
	return c.cl, c.at, nil
}
