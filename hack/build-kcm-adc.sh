#!/usr/bin/env bash
# Builds kube-controller-manager v1.36.3 with adc inside, as a distribution would carry it:
# k8s.io/kubernetes's source, copied from the Go module cache, plus adc's two files in
# cmd/kube-controller-manager/app and one line in NewControllerDescriptors, built through the
# wrapper module hack/kcm-adc (replace k8s.io/kubernetes => that copy, replace adc => this tree).
#
# Output: bin/kcm-adc/kube-controller-manager-adc (--version says v1.36.3).
# Cached: the binary is rebuilt only when it is missing or older than adc's sources (pkg/,
# go.mod, go.sum) or this build's files; then `go build` recompiles only what changed. The copy
# of k8s.io/kubernetes (bin/kcm-adc/kubernetes, ~115 MB) is made once.
# KCM_ADC_GOFLAGS adds `go build` flags, e.g. -v to list the packages compiled.
set -euo pipefail

K8S_VERSION=1.36.3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="${root}/hack/kcm-adc"
out="${root}/bin/kcm-adc"
src="${out}/kubernetes"   # hack/kcm-adc/go.mod: replace k8s.io/kubernetes => ../../bin/kcm-adc/kubernetes
bin="${out}/kube-controller-manager-adc"
app="cmd/kube-controller-manager/app"

if [ -x "${bin}" ] && [ -z "$(find "${root}/pkg" "${root}/go.mod" "${root}/go.sum" "${mod}" "${BASH_SOURCE[0]}" \
    -newer "${bin}" -print -quit)" ]; then
  exit 0
fi
start=$(date +%s)

# 1. The copy of k8s.io/kubernetes v1.36.3, from the module cache (downloaded through
#    hack/envtest, whose go.sum pins the module). Made writable: the module cache is read-only.
if [ ! -f "${src}/.adc-copy-complete" ]; then
  dir=$(cd "${root}/hack/envtest" && go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  if [ -z "${dir}" ] || [ ! -f "${dir}/go.mod" ]; then
    echo "build-kcm-adc: could not find k8s.io/kubernetes@v${K8S_VERSION} in the module cache" >&2
    exit 1
  fi
  echo "build-kcm-adc: copying ${dir} to ${src}"
  rm -rf "${src}" "${src}.tmp"
  mkdir -p "${out}"
  cp -R "${dir}" "${src}.tmp"
  chmod -R u+w "${src}.tmp"
  mv "${src}.tmp" "${src}"
  touch "${src}/.adc-copy-complete"
fi

# 2. adc's files in cmd/kube-controller-manager/app (copied on every build, so edits show).
install -m 0644 "${mod}/_cmd/kube-controller-manager/app/"*.go "${src}/${app}/"

# 3. The one line a descriptor needs: NewControllerDescriptors registers a fixed list (the
#    descriptor's fields are unexported, there is no registration hook). Added once, after the
#    built-in attach/detach controller's line, and checked.
desc="${src}/${app}/controller_descriptor.go"
anchor=$'\tregister(newPersistentVolumeAttachDetachControllerDescriptor())'
line=$'\tregister(newADCControllerDescriptor()) // added by adc (hack/build-kcm-adc.sh)'
if ! grep -qxF "${line}" "${desc}"; then
  if [ "$(grep -cxF "${anchor}" "${desc}")" != 1 ]; then
    echo "build-kcm-adc: ${desc} does not have exactly one line '${anchor#$'\t'}' to register adc after" >&2
    exit 1
  fi
  awk -v anchor="${anchor}" -v line="${line}" '{ print } $0 == anchor { print line }' "${desc}" >"${desc}.tmp"
  mv "${desc}.tmp" "${desc}"
fi
if [ "$(grep -cxF "${line}" "${desc}")" != 1 ]; then
  echo "build-kcm-adc: registering adc in ${desc} failed" >&2
  exit 1
fi

# 4. Build, with the flags of hack/build-envtest.sh (same -trimpath, CGO_ENABLED=0 and version
#    variables), so the packages shared with its kube-apiserver come from the build cache and
#    /version says v1.36.3.
build_date=2026-01-01T00:00:00Z
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=v${K8S_VERSION}"
  ldflags+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=36"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
done
echo "build-kcm-adc: building kube-controller-manager v${K8S_VERSION} with adc into ${bin} (a few minutes the first time)"
(cd "${mod}" && CGO_ENABLED=0 go build ${KCM_ADC_GOFLAGS:-} -trimpath -ldflags "${ldflags}" -o "${bin}" k8s.io/kubernetes/cmd/kube-controller-manager)
touch "${bin}"
echo "build-kcm-adc: built in $(( $(date +%s) - start ))s"
