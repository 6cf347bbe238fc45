#!/usr/bin/env bash
# (Re)starts a job framework's own controller in the local cluster as a
# local process, with a CA of its own that the API server trusts for its
# webhooks, and waits until its webhooks answer.
#
#   hack/local-controller.sh jobset|lws
#
# jobset: the JobSet controller (config/local/jobset*.yaml).
# lws:    the LeaderWorkerSet controller (config/local/lws*.yaml).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
name=${1:?usage: hack/local-controller.sh jobset|lws}
OUT=$ROOT/_output/local/$name
export KUBECONFIG=$ROOT/_output/local/kubeconfig
KUBECTL=("$ROOT/bin/k8s/kubectl" --kubeconfig "$KUBECONFIG")

case $name in
jobset)
	title="the JobSet controller"
	probe='{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"probe","namespace":"default"},
"spec":{"replicatedJobs":[{"name":"r","template":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}]}}'
	;;
lws)
	title="the LeaderWorkerSet controller"
	probe='{"apiVersion":"leaderworkerset.x-k8s.io/v1","kind":"LeaderWorkerSet","metadata":{"name":"probe","namespace":"default"},
"spec":{"leaderWorkerTemplate":{"size":1,"workerTemplate":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}}'
	;;
*)
	echo "local-controller: unknown controller $name, want jobset or lws" >&2
	exit 2
	;;
esac
mkdir -p "$OUT"

"$ROOT/hack/toolchain.sh" "$name"
if [[ ! -f $OUT/certs/ca.crt ]]; then
	(cd "$ROOT" && go run ./hack/certgen -dir "$OUT/certs")
fi
ca=$(base64 -w0 <"$OUT/certs/ca.crt")
sed "s#CA_BUNDLE#$ca#" "$ROOT/config/local/$name-webhooks.yaml" | "${KUBECTL[@]}" apply -f - >/dev/null

echo "local-up: starting $title"
if [[ -f $OUT/pid ]]; then
	kill "$(cat "$OUT/pid")" 2>/dev/null || true
	while kill -0 "$(cat "$OUT/pid")" 2>/dev/null; do sleep 0.2; done
fi
(cd "$ROOT" && exec nohup "bin/$name-controller" --config "config/local/$name.yaml" >>"$OUT/$name.log" 2>&1) &
echo $! >"$OUT/pid"

for _ in $(seq 120); do
	if echo "$probe" | "${KUBECTL[@]}" create --dry-run=server -f - >/dev/null 2>&1; then
		echo "local-up: $title is up; its log is _output/local/$name/$name.log"
		exit 0
	fi
	if ! kill -0 "$(cat "$OUT/pid")" 2>/dev/null; then
		tail -20 "$OUT/$name.log" >&2
		echo "local-up: $title exited" >&2
		exit 1
	fi
	sleep 0.5
done
tail -20 "$OUT/$name.log" >&2
echo "local-up: the webhooks of $title did not answer within 60s" >&2
exit 1
