#!/usr/bin/env bash
# Builds the real parts the end-to-end suite (test/e2e) runs, from Go modules, into bin/e2e/:
#   csi-attacher   kubernetes-csi external-attacher v4.13.0 (wrapper module hack/csi-attacher:
#                  it needs k8s.io libraries v0.37.0, adc is on v0.36.3)
#   hollowkubelet  a real kubelet v1.36.3 without containers (hack/envtest/hollowkubelet)
#   csimock        the Kubernetes e2e mock CSI driver with kubelet plugin registration
#                  (hack/envtest/csimock)
# The last two build in the hack/envtest wrapper module with the flags hack/build-envtest.sh
# uses for kube-apiserver, so they share its build cache and dependency versions.
#
# Usage: hack/build-e2e.sh [csi-attacher|hollowkubelet|csimock ...]   (default: all three)
# A binary is rebuilt only when it is missing or older than its sources (its folder, its
# wrapper module's go.mod/go.sum), so a warm run takes well under a second.
# E2E_ASSETS, when set, is the folder to build into instead of bin/e2e (the harness reads the
# binaries from there too, see test/e2e/harness/assets.go).
set -euo pipefail

K8S_VERSION=1.36.3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="${E2E_ASSETS:-${root}/bin/e2e}"
mkdir -p "${out}"

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(csi-attacher hollowkubelet csimock)

# The same version variables hack/build-envtest.sh sets (link-time only: the compiled
# packages stay shared with kube-apiserver's), so the kubelet reports v1.36.3.
build_date=2026-01-01T00:00:00Z
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=v${K8S_VERSION}"
  ldflags+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=36"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
done

# fresh says whether binary exists and no source in the given paths is newer.
fresh() {
  local bin=$1; shift
  [ -x "${bin}" ] && [ -z "$(find "$@" -newer "${bin}" -print -quit)" ]
}

for t in "${targets[@]}"; do
  case "${t}" in
    csi-attacher) mod="${root}/hack/csi-attacher"; pkg="github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher"; flags="-s -w"; src=() ;;
    hollowkubelet) mod="${root}/hack/envtest"; pkg="./hollowkubelet"; flags="${ldflags}"; src=("${mod}/hollowkubelet") ;;
    csimock) mod="${root}/hack/envtest"; pkg="./csimock"; flags="${ldflags}"; src=("${mod}/csimock") ;;
    *) echo "build-e2e: unknown binary ${t}; expected csi-attacher, hollowkubelet or csimock" >&2; exit 2 ;;
  esac
  if fresh "${out}/${t}" "${mod}/go.mod" "${mod}/go.sum" "${src[@]}"; then
    continue
  fi
  echo "build-e2e: building ${t} into ${out} (minutes the first time)"
  TIMEFORMAT="build-e2e: ${t} built in %0Rs (CPU %0Us user + %0Ss sys)"
  time (cd "${mod}" && CGO_ENABLED=0 go build -trimpath -ldflags "${flags}" -o "${out}/${t}.tmp" "${pkg}")
  mv "${out}/${t}.tmp" "${out}/${t}"
done
