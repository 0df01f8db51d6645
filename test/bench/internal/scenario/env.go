package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/internal/controlplane"
	"github.com/migration-aware/adc/test/bench/internal/auditcount"
)

// env is one run's control plane: kube-apiserver and etcd on a fresh copy of the seeded
// cluster, with the audit log of the controller's user on, warmed up.
type env struct {
	cp *controlplane.ControlPlane
	// admin is the harness's client (seeding, the attacher, the watches); user is the audited
	// controller's, kubeconfig a file of it.
	admin      kubernetes.Interface
	user       *envtest.AuthenticatedUser
	kubeconfig string
	auditLog   string
	runDir     string
	etcdDir    string
	// seeding is how long seeding took, zero when a cached seed was reused.
	seeding time.Duration
	stop    func()
}

// startEnv seeds (or reuses the seed of) c's size and starts a control plane on a copy of it.
func startEnv(ctx context.Context, c Config) (*env, error) {
	var cleanups []func()
	e := &env{stop: func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}}
	fail := func(err error) (*env, error) {
		e.stop()
		return nil, err
	}
	seedDir, cleanupSeed, seeding, err := seedData(ctx, c)
	if err != nil {
		return nil, err
	}
	cleanups = append(cleanups, cleanupSeed)
	e.seeding = seeding

	if e.runDir, err = os.MkdirTemp("", "adc-bench-run-"); err != nil {
		return fail(fmt.Errorf("creating the run folder: %w", err))
	}
	runDir := e.runDir
	cleanups = append(cleanups, func() { _ = os.RemoveAll(runDir) })
	e.etcdDir = filepath.Join(runDir, "etcd")
	copyStart := time.Now()
	if err := copyTree(seedDir, e.etcdDir); err != nil {
		return fail(fmt.Errorf("copying the seeded etcd data %s: %w", seedDir, err))
	}
	_ = os.Remove(filepath.Join(e.etcdDir, seedComplete))
	fmt.Fprintf(c.Progress, "copied the seeded cluster in %s\n", time.Since(copyStart).Round(time.Millisecond))

	policy := filepath.Join(runDir, "audit-policy.yaml")
	e.auditLog = filepath.Join(runDir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditlog.Policy(auditcount.User)), 0o600); err != nil {
		return fail(fmt.Errorf("writing the audit policy: %w", err))
	}
	cp, stopCP, err := controlplane.StartWithOptions(controlplane.Options{
		EtcdDataDir:    e.etcdDir,
		APIServerFlags: auditlog.APIServerFlags(policy, e.auditLog),
	})
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, stopCP)
	e.cp = cp
	e.admin = kubernetes.NewForConfigOrDie(fastClient(cp.Config))
	if err := warmUp(ctx, e.admin); err != nil {
		return fail(err)
	}
	// The controller under test authenticates as its own user, the only one audited.
	if e.user, err = cp.Env.AddUser(envtest.User{Name: auditcount.User, Groups: []string{"system:masters"}}, nil); err != nil {
		return fail(fmt.Errorf("adding the controller's user: %w", err))
	}
	e.kubeconfig = filepath.Join(runDir, "controller.kubeconfig")
	if err := controlplane.WriteKubeconfig(e.user.Config(), e.kubeconfig); err != nil {
		return fail(err)
	}
	return e, nil
}
