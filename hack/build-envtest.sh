#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, etcd and, on request, the stock
# kube-controller-manager and kube-scheduler) from Go modules into bin/envtest/<version>/,
# through the wrapper module hack/envtest (k8s.io/kubernetes v1.36.3 with its staging modules
# replaced by their published v0.36.3), so every binary shares one build cache: after
# kube-apiserver, kube-scheduler compiles about 64 more packages (about 35 s on 2 cores) and
# kube-controller-manager about 390.
#
# Usage: hack/build-envtest.sh [kube-apiserver|etcd|kube-controller-manager|kube-scheduler ...]
# With no arguments it builds kube-apiserver and etcd, the two binaries envtest needs; `make
# cluster-assets` adds kube-scheduler and kube-controller-manager (test/e2e/cluster).
# A binary that already exists is not rebuilt, so a warm run takes well under a second.
set -euo pipefail

K8S_VERSION=1.36.3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="${root}/bin/envtest/${K8S_VERSION}"
mod="${root}/hack/envtest"
mkdir -p "${out}"

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kube-apiserver etcd)

# The same version variables the Kubernetes release build sets, so /version reports v1.36.3.
build_date=2026-01-01T00:00:00Z
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=v${K8S_VERSION}"
  ldflags+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=36"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
done

for t in "${targets[@]}"; do
  if [ -x "${out}/${t}" ]; then
    continue
  fi
  case "${t}" in
    kube-apiserver|kube-controller-manager|kube-scheduler) pkg="k8s.io/kubernetes/cmd/${t}" ;;
    etcd) pkg="./etcd" ;;
    *) echo "build-envtest: unknown binary ${t}; expected kube-apiserver, etcd, kube-controller-manager or kube-scheduler" >&2; exit 2 ;;
  esac
  echo "build-envtest: building ${t} (for Kubernetes v${K8S_VERSION}) into ${out} (a few minutes the first time)"
  TIMEFORMAT="build-envtest: ${t} built in %0Rs (CPU %0Us user + %0Ss sys)"
  time (cd "${mod}" && CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${out}/${t}.tmp" "${pkg}")
  mv "${out}/${t}.tmp" "${out}/${t}"
done
