#!/usr/bin/env bash
# (Re)starts the JobSet controller of the local cluster as a local process,
# with a CA of its own that the API server trusts for its webhooks, and
# waits until its webhooks answer.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/_output/local/jobset
export KUBECONFIG=$ROOT/_output/local/kubeconfig
KUBECTL=("$ROOT/bin/k8s/kubectl" --kubeconfig "$KUBECONFIG")
mkdir -p "$OUT"

"$ROOT/hack/toolchain.sh" jobset
if [[ ! -f $OUT/certs/ca.crt ]]; then
	(cd "$ROOT" && go run ./hack/certgen -dir "$OUT/certs")
fi
ca=$(base64 -w0 <"$OUT/certs/ca.crt")
sed "s#CA_BUNDLE#$ca#" "$ROOT/config/local/jobset-webhooks.yaml" | "${KUBECTL[@]}" apply -f - >/dev/null

echo "local-up: starting the JobSet controller"
if [[ -f $OUT/pid ]]; then
	kill "$(cat "$OUT/pid")" 2>/dev/null || true
	while kill -0 "$(cat "$OUT/pid")" 2>/dev/null; do sleep 0.2; done
fi
(cd "$ROOT" && exec nohup bin/jobset-controller --config config/local/jobset.yaml >>"$OUT/jobset.log" 2>&1) &
echo $! >"$OUT/pid"

probe='{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"probe","namespace":"default"},
"spec":{"replicatedJobs":[{"name":"r","template":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}]}}'
for _ in $(seq 120); do
	if echo "$probe" | "${KUBECTL[@]}" create --dry-run=server -f - >/dev/null 2>&1; then
		echo "local-up: the JobSet controller is up; its log is _output/local/jobset/jobset.log"
		exit 0
	fi
	if ! kill -0 "$(cat "$OUT/pid")" 2>/dev/null; then
		tail -20 "$OUT/jobset.log" >&2
		echo "local-up: the JobSet controller exited" >&2
		exit 1
	fi
	sleep 0.5
done
tail -20 "$OUT/jobset.log" >&2
echo "local-up: the JobSet controller's webhooks did not answer within 60s" >&2
exit 1
