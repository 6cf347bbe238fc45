#!/usr/bin/env bash
# Stops the local cluster started by hack/local-up.sh and every process of
# it, and removes its state.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for dir in "$ROOT"/_output/local/worker-*/; do
	if [[ -d $dir ]]; then
		i=${dir%/}
		"$ROOT/hack/local-worker.sh" down "${i##*-}" || true
	fi
done
export KWOK_WORKDIR=$ROOT/_output/local/kwok
for pidfile in "$ROOT"/_output/local/{berth,berth-*,jobset,lws,ray,trainer,autoscalerdouble}/pid; do
	if [[ -f $pidfile ]]; then
		kill "$(cat "$pidfile")" 2>/dev/null || true
	fi
done
if [[ -x $ROOT/bin/kwokctl ]]; then
	"$ROOT/bin/kwokctl" delete cluster --name berth >/dev/null 2>&1 || true
fi
# Whatever kwokctl did not stop: processes started from this cluster's
# directories.
pkill -f "$KWOK_WORKDIR" 2>/dev/null || true
pkill -f "$ROOT/bin/berth " 2>/dev/null || true
pkill -f "bin/berth --config config/local" 2>/dev/null || true
pkill -f "bin/berth --config $ROOT/config/local" 2>/dev/null || true
pkill -f "bin/berth --config $ROOT/_output/local/berth-" 2>/dev/null || true
pkill -f "bin/jobset-controller --config config/local" 2>/dev/null || true
pkill -f "bin/lws-controller --config config/local" 2>/dev/null || true
pkill -f "bin/ray-operator --enable-leader-election=false" 2>/dev/null || true
pkill -f "bin/trainer-controller-manager --leader-elect=false" 2>/dev/null || true
pkill -f "bin/autoscalerdouble --kubeconfig $ROOT/_output/local" 2>/dev/null || true
rm -rf "$ROOT/_output/local"
echo "local-down: the local cluster is stopped"
