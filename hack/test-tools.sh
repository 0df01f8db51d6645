#!/usr/bin/env bash
# Makes sure the programs make test's tests drive are installed, so that no test is skipped
# for want of them: Chromium (the dashboard's browser test, TestDashboardRollout/browser) and
# Prometheus (the Grafana board's test, TestPrometheusBoard), both from Debian.
#
# Found: $CHROMIUM / $PROMETHEUS, else the Debian paths, else on PATH (as the tests look).
# Missing, as root with apt-get (CI, a fresh container): installed, as .ci/run does.
# Missing otherwise: fails naming the one command to run.
set -euo pipefail

have() {
  local env=$1; shift
  if [ -n "${!env:-}" ]; then
    [ -x "${!env}" ] && return 0
    echo "test-tools: \$${env}=${!env} is not an executable" >&2
    return 1
  fi
  local p
  for p in "$@"; do
    if command -v "${p}" >/dev/null 2>&1; then
      return 0
    fi
  done
  return 1
}

missing=()
have CHROMIUM /usr/bin/chromium chromium chromium-browser || missing+=(chromium)
have PROMETHEUS /usr/bin/prometheus prometheus || missing+=(prometheus)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test-tools: installing Debian's ${missing[*]} (the dashboard's browser test and the Grafana board's test drive them)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "test-tools: make test needs ${missing[*]} (TestDashboardRollout/browser drives Chromium, TestPrometheusBoard a real" >&2
echo "  Prometheus); install them with:  sudo apt-get install -y ${missing[*]}" >&2
echo "  (or point CHROMIUM / PROMETHEUS at the binaries)" >&2
exit 1
