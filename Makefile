# adc: migration-aware attach/detach controller.
#
# make test             unit tests (-race, with the interleaving explorer's budget), the chaos
#                       test, then the integration and end-to-end suites side by side
# make envtest-assets   build kube-apiserver + etcd from Go modules (cached)
# make demo [REAL=1]    the mid-rollout demo, simulated (fast) or on real kubelets/attacher/driver
# make e2e-assets       build csi-attacher, a hollow kubelet and the mock CSI driver (cached)
# make kcm-adc          build kube-controller-manager v1.36.3 with adc inside (cached)
# make cluster-assets   build kube-scheduler and the stock kube-controller-manager v1.36.3 (cached)
# make test-cluster     the TestCluster scenarios alone, the stock controller's 6 minutes in full
# make bench-cluster    pod startup with volumes on the whole cluster, the three modes side by side
# make bench-failover   SIGKILL adc's leader on a converged cluster (BENCH_NODES x BENCH_PODS),
#                       the standby's takeover next to kube-controller-manager's start
# make cluster [MODE=kcm-adc|stock|standalone] [NODES=3]
#                       a whole cluster on this machine (scheduler, kube-controller-manager with
#                       all its controllers, hollow kubelets, CSI driver); prints its kubeconfig,
#                       stays up until Ctrl-C
# make lint             gofmt, go vet, staticcheck
# make kubectl-plugin   bin/kubectl-adc, a symlink to bin/adc: put bin/ on PATH (or copy both)
#                       and `kubectl adc explain pod NAME -n NS`, `kubectl adc preflight` work
# make chaos            a longer chaos run (CHAOS_DURATION, default 10m; CHAOS_SEED replays one)
# make interleave       the interleaving explorer (-race): SCHEDULES random schedules per world
#                       (default 1500, 20-40 s), SEED, DEPTH for an exhaustive search too

SHELL := /usr/bin/env bash
GO ?= go
K8S_VERSION := 1.36.3
ENVTEST_DIR := $(CURDIR)/bin/envtest/$(K8S_VERSION)
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/bin/tools/staticcheck-$(STATICCHECK_VERSION)
# Integration tests use KUBEBUILDER_ASSETS when it is set, otherwise the binaries built here.
KUBEBUILDER_ASSETS ?= $(ENVTEST_DIR)
export KUBEBUILDER_ASSETS

UNIT_PKGS = $$($(GO) list ./... | grep -v -e /test/integration -e /test/e2e)

.PHONY: all build demo-build demo test test-assets unit-test integration-test chaos-test integration-rest envtest-assets kcm-assets e2e-assets e2e-test lint clean chaos interleave cluster-assets cluster kubectl-plugin

all: build

# Built as the image builds it (Dockerfile): static, no cgo. The benchmarks measure this
# binary; a cgo build also maps libc (about 1.5 MB more resident memory). grpcnotrace keeps
# gRPC (reached through k8s.io/apiserver's TokenReview and SubjectAccessReview clients) from
# linking golang.org/x/net/trace, whose templates would grow the binary from 62 to 96 MB
# (cmd/adc/deps_test.go).
ADC_BUILD_TAGS := grpcnotrace
build:
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(ADC_BUILD_TAGS) -o bin/adc ./cmd/adc

# The binary is its own kubectl plugin when started as kubectl-adc (cmd/adc/kubectlplugin.go).
kubectl-plugin: build
	ln -sf adc bin/kubectl-adc

# The demo is its own program: it links envtest, which the controller's binary should not carry.
demo-build:
	$(GO) build -o bin/adc-demo ./cmd/adc-demo

# The one-command tour: a local control plane seeded mid-rollout, the controller converging,
# with simulated kubelets and attachers (seconds). REAL=1 tells the same story on a whole
# cluster on this machine (kube-scheduler, kube-controller-manager, hollow kubelets,
# csi-attacher, the mock CSI driver) with the adc binary (test/e2e/demo).
demo: envtest-assets build $(if $(REAL),e2e-assets cluster-assets,demo-build)
ifeq ($(REAL),)
	bin/adc-demo $(DEMO_FLAGS)
else
	$(GO) run ./test/e2e/demo --adc bin/adc $(DEMO_FLAGS)
endif

# The unit tests, then, once every binary is built, the chaos test alone (its fault timings want
# the CPU), then the other integration suites and the end-to-end suite side by side (they wait
# on their control planes far more than they compute; output kept per suite). The unit tests
# run alone too: side by side with the suites (-j3, 7 min 13 s warm instead of 8 min 24 s) they
# starved the whole-cluster scenarios' kubelets on a fresh clone.
test: test-tools unit-test test-assets
	$(MAKE) --no-print-directory chaos-test
	$(MAKE) --no-print-directory -j2 --output-sync=target integration-rest e2e-test

test-assets: envtest-assets kcm-adc e2e-assets cluster-assets

# Chromium and Prometheus, which the dashboard's browser test and the Grafana board's test
# drive: installed from Debian when make runs as root with apt-get (as .ci/run), else make test
# stops at once naming the command to run, rather than skipping those tests.
.PHONY: test-tools
test-tools:
	@hack/test-tools.sh

unit-test:
	$(GO) test -race -count=1 $(UNIT_PKGS)

# The chaos test on its own (its fault timings want the CPU), then the other integration
# packages two at a time (each waits on its own control plane far more than it computes).
INTEGRATION_PKGS = $$($(GO) list ./test/integration/... | grep -v /test/integration/chaos)
integration-test: chaos-test integration-rest

chaos-test: envtest-assets
	$(GO) test -count=1 -timeout 30m -v ./test/integration/chaos/

integration-rest: envtest-assets kcm-adc
	$(GO) test -count=1 -p 2 -timeout 30m -v $(INTEGRATION_PKGS)

# The chaos test of make test (about 1.5 minutes) for longer: churn, leader SIGKILLs, API server
# restarts with etcd compaction, a lagging Node watch, node failures, attacher failures;
# invariants checked from etcd's revision order.
CHAOS_DURATION ?= 10m
chaos: envtest-assets
	CHAOS_DURATION=$(CHAOS_DURATION) $(GO) test -count=1 -v -timeout 60m -run 'TestChaos$$' ./test/integration/chaos/

# The interleaving explorer (pkg/adc/interleave_*_test.go): the real handlers, reconciles,
# status syncs and expectation checker under schedules that reorder informer stores, handler
# deliveries, watch gaps and relists, API answers and worker turns, with invariants checked
# after every step. SCHEDULES random schedules per world from SEED; DEPTH > 0 adds an
# exhaustive search to that many steps per world (DEPTH=8 is about 1.5 minutes more with
# -race). It fails when an invariant breaks and prints a one-line replay command per
# violation. make test runs a fixed budget of it (TestInterleaveBudget in pkg/adc: 700 random
# schedules per world and an exhaustive depth of 4, less for the three worlds that name one
# disk twice: about 1 minute under -race) and checks that the budget still
# catches five fixed defects put back in the harness
# (TestInterleaveBudgetCatches); this target is for longer runs. THREADS workers in flight at
# once; INTERLEAVE_FLAGS=-interleave.mutant=NAME explores with a fixed defect put back.
SCHEDULES ?= 1500
SEED ?= 1
DEPTH ?= 0
THREADS ?= 2
interleave:
	$(GO) test -race -count=1 -v -timeout 60m -run 'TestInterleave$$' ./pkg/adc/ \
		-interleave.schedules=$(SCHEDULES) -interleave.seed=$(SEED) -interleave.depth=$(DEPTH) \
		-interleave.threads=$(THREADS) $(INTERLEAVE_FLAGS)

envtest-assets:
	@if [ "$(KUBEBUILDER_ASSETS)" != "$(ENVTEST_DIR)" ]; then \
		echo "envtest-assets: using KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS)"; \
	else \
		hack/build-envtest.sh kube-apiserver etcd; \
	fi

kcm-assets:
	hack/build-envtest.sh kube-controller-manager

# The rest of a cluster's control plane, into bin/envtest/$(K8S_VERSION) (hack/build-envtest.sh:
# the same wrapper module and build cache as kube-apiserver, so after it about 35 s for
# kube-scheduler and 55 s for kube-controller-manager on 2 cores). test/e2e/cluster runs them.
cluster-assets: envtest-assets
	hack/build-envtest.sh kube-scheduler kube-controller-manager

# The TestCluster scenarios alone (make test runs them with the end-to-end suite), with the
# stock attach/detach controller's six-minute wait awaited in full (make test checks the first
# 45 s of it, then ends the outage with the out-of-service taint) and the node-loss scenario's
# DetachPolicy timeout at the issue's 2 minutes (make test: 1 minute): about 7.5 minutes.
.PHONY: test-cluster
test-cluster: envtest-assets e2e-assets cluster-assets kcm-adc
	CLUSTER_STOCK_FULL_WAIT=1 CLUSTER_POLICY_FULL_TIMEOUT=1 $(GO) test -count=1 -timeout 20m -v ./test/e2e/cluster/

# A whole cluster on this machine, in one of the three modes of test/e2e/cluster: kcm-adc (adc
# inside kube-controller-manager), stock (its own attach/detach controller) or standalone (adc
# as its own process). It prints the kubeconfig (also in bin/cluster/kubeconfig) and stays up
# until Ctrl-C; a default StorageClass "mock" holds 20 pre-created PVs of the mock CSI driver.
MODE ?= kcm-adc
NODES ?= 3
cluster: envtest-assets e2e-assets cluster-assets kcm-adc build
	$(GO) run ./test/e2e/cluster/up --mode $(MODE) --nodes $(NODES) --adc bin/adc --kubeconfig-out bin/cluster/kubeconfig

# The real parts of the end-to-end suite, into bin/e2e (see hack/build-e2e.sh). After
# envtest-assets: the hollow kubelet and the mock driver reuse kube-apiserver's build cache.
e2e-assets: envtest-assets
	hack/build-e2e.sh

# End to end on real kubelets, the real external-attacher and a real CSI driver (test/e2e),
# and on a whole cluster in three modes (test/e2e/cluster, the TestCluster scenarios).
e2e-test: envtest-assets e2e-assets cluster-assets kcm-adc
	$(GO) test -count=1 -timeout 15m -v ./test/e2e/...

# kube-controller-manager v1.36.3 with adc inside, as a distribution carries it, into
# bin/kcm-adc/kube-controller-manager-adc (see hack/build-kcm-adc.sh, docs/kube-controller-manager.md).
.PHONY: kcm-adc
kcm-adc:
	hack/build-kcm-adc.sh

$(STATICCHECK):
	mkdir -p $(dir $@)
	GOBIN=$(CURDIR)/bin/tools/tmp $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv bin/tools/tmp/staticcheck $@ && rmdir bin/tools/tmp

lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	cd hack/envtest && $(GO) vet ./etcd
	$(GO) run ./internal/mdlinks README.md docs/*.md

clean:
	rm -rf bin

# End-to-end attach benchmarks on the test control plane (docs/performance.md): N nodes x M
# pods, one CSI PersistentVolume each, a simulated external-attacher, and the controller as
# its own process (bin/adc, or kube-controller-manager 1.36.3 with only its attach/detach
# controller), measured the same way: watches for latencies, /proc for RSS and CPU, the API
# server's audit log for requests. BENCH_NODES/BENCH_PODS change the size; seeded clusters
# are kept in BENCH_SEED_CACHE (empty: seed into a temporary folder every time), the
# controllers' logs in bin/bench-logs.
BENCH_SEED_CACHE ?= $(CURDIR)/bin/bench-seed
KCM_BIN := $(ENVTEST_DIR)/kube-controller-manager
BENCH_FLAGS = -seed-cache "$(BENCH_SEED_CACHE)" -log-dir $(CURDIR)/bin/bench-logs -adc bin/adc -kcm $(KCM_BIN) $(if $(ADC_FLAGS),-adc-flags "$(ADC_FLAGS)")
BENCH_ROUNDS ?= 1
.PHONY: bench-e2e bench-e2e-upstream bench-compare bench-scale bench-failover
bench-e2e: envtest-assets build
	$(GO) run ./test/bench/e2e $(BENCH_FLAGS) -nodes $(or $(BENCH_NODES),100) -pods $(or $(BENCH_PODS),20) -qps 20 -burst 30
	$(GO) run ./test/bench/e2e $(BENCH_FLAGS) -nodes $(or $(BENCH_NODES),100) -pods $(or $(BENCH_PODS),20) -qps 1000 -burst 2000

# The same scenario attached by upstream's kube-controller-manager 1.36.3.
bench-e2e-upstream: envtest-assets kcm-assets
	$(GO) run ./test/bench/e2e $(BENCH_FLAGS) -controller kcm -nodes $(or $(BENCH_NODES),100) -pods $(or $(BENCH_PODS),20) -qps 20 -burst 30
	$(GO) run ./test/bench/e2e $(BENCH_FLAGS) -controller kcm -nodes $(or $(BENCH_NODES),100) -pods $(or $(BENCH_PODS),20) -qps 1000 -burst 2000

# kube-controller-manager 1.36.3 and adc back to back, per scenario on the same seeded
# cluster, after a calibration of the control plane's write rate (same seed, watches and
# attacher): one line per measure with both figures, adc/kcm, each one's efficiency (ideal
# time at the calibrated rate / measured) and the goals of issues #13 and #28, then a summary
# table (about 25 minutes on 2 cores). BENCH_SCENARIOS=NODESxPODS@QPS/BURST,...
# BENCH_CONTROLLERS=kcm,kcm-adc puts kube-controller-manager with adc inside (make kcm-adc)
# in adc's place.
BENCH_SCENARIOS ?= 100x20@1000/2000,1000x10@1000/2000,100x20@20/30
BENCH_CONTROLLERS ?= kcm,adc
BENCH_KCM_ADC = $(if $(findstring kcm-adc,$(BENCH_CONTROLLERS)),kcm-adc)
bench-compare: envtest-assets kcm-assets build $(BENCH_KCM_ADC)
	$(GO) run ./test/bench/compare $(BENCH_FLAGS) -controllers "$(BENCH_CONTROLLERS)" -rounds $(BENCH_ROUNDS) -scenarios "$(BENCH_SCENARIOS)"

# 5000 nodes x 10 pods = 50,000 volumes for both (BENCH_NODES=1000 BENCH_PODS=10 for a quick
# one). Seeding the first time takes minutes; later runs reuse BENCH_SEED_CACHE.
bench-scale: envtest-assets kcm-assets build $(BENCH_KCM_ADC)
	$(GO) run ./test/bench/compare $(BENCH_FLAGS) -controllers "$(BENCH_CONTROLLERS)" -rounds $(BENCH_ROUNDS) -timeout 60m -scenarios "$(or $(BENCH_NODES),5000)x$(or $(BENCH_PODS),10)@1000/2000"

# Restart at scale: two adc replicas converge BENCH_NODES x BENCH_PODS (default 5000 x 10), the
# leader is SIGKILLed and the standby takes over; then kube-controller-manager 1.36.3 starts
# on the same cluster. Time to lead, to ready, to the first decision; API requests and writes
# during the start; peak RSS.
bench-failover: envtest-assets kcm-assets build
	$(GO) run ./test/bench/failover $(BENCH_FLAGS) -nodes $(or $(BENCH_NODES),5000) -pods $(or $(BENCH_PODS),10)

# Pod startup with volumes on a whole cluster (test/e2e/cluster), the three modes side by side
# in one invocation (docs/performance.md, "Pod startup with volumes"): 30 hollow nodes per mode,
# what this machine sustains three times over (the host's 128 inotify instances per user: one
# per kubelet, six per control plane), 150 pods with one volume each created at 10/s then
# deleted; then upstream's storage experiment's shape, 100 pods with one volume each on one
# node. Each reports pod created -> Running and pod deleted -> volume detached p50/p90/p99.
BENCH_CLUSTER_NODES ?= 30
BENCH_CLUSTER_PODS ?= 150
.PHONY: bench-cluster
bench-cluster: envtest-assets e2e-assets cluster-assets kcm-adc build
	$(GO) run ./test/bench/cluster -adc bin/adc -nodes $(BENCH_CLUSTER_NODES) -pods $(BENCH_CLUSTER_PODS) -rate 10
	$(GO) run ./test/bench/cluster -adc bin/adc -nodes 1 -pods 100 -rate 10

# Attached -> listed in node status when several volumes of one node attach together, on the
# real stack of the end-to-end suite (hollow kubelets, csi-attacher, the mock CSI driver, adc
# with default flags), three ways: 10 volumes of one node at once on a quiet cluster (the case
# of issue 13); 8 volumes on each of 3 nodes at once, also on a quiet cluster (24 creates and
# their status patches against adc's default burst of 30 requests); the same rounds back to
# back, each round's attaches meeting the previous round's detaches in adc's client budget.
# ADC_ARGS adds adc flags, e.g. "--kube-api-qps=200 --kube-api-burst=400".
ATTACH_LATENCY = $(GO) run ./test/bench/attachlatency $(if $(ADC_ARGS),-adc-args "$(ADC_ARGS)")
.PHONY: bench-attach-latency
bench-attach-latency: envtest-assets e2e-assets
	$(ATTACH_LATENCY) -nodes 1 -per-node 10 -rounds 10
	$(ATTACH_LATENCY) -nodes 3 -per-node 8 -rounds 5
	$(ATTACH_LATENCY) -nodes 3 -per-node 8 -rounds 5 -quiet 0
