#!/usr/bin/env bash
# Runs Berth's scheduler benchmark: builds the controller and the runner,
# then runs the scenario named by the first argument (baseline or large)
# against a real kube-apiserver and etcd from bin/k8s. Further arguments
# go to `perf run`, e.g. `hack/perf.sh baseline --scale 0.3`, `--profile` or
# `--restart-every 30s` (site/content/performance.md has them all).
# The summary lands in _output/perf/<scenario>/summary.json.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scenario=${1:-baseline}
shift || true

hack/toolchain.sh etcd kube
export GOFLAGS=${GOFLAGS:--buildvcs=false}
export KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$root/bin/k8s}
# Not bin/berth: other scripts (make local-down) stop processes by that path.
mkdir -p _output/perf/bin
go build -o _output/perf/bin/berth ./cmd/berth
go build -o _output/perf/bin/perf ./test/performance/scheduler/cmd/perf
exec _output/perf/bin/perf run --berth _output/perf/bin/berth --config "test/performance/scheduler/configs/$scenario.yaml" "$@"
