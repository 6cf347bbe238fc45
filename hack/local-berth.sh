#!/usr/bin/env bash
# (Re)starts the Berth controller of the local cluster as a local process,
# built from this tree, and waits until its webhooks answer.
#
# BERTH_CONFIG=FILE starts it with that configuration instead of
# config/local/berth.yaml (a test that needs another one).
#
# BERTH_REPLICA=N starts another replica beside it instead, with its own
# ports (webhook 9450+N, metrics 18080+2N, probes 18081+2N, visibility
# 8460+N), log and pid
# under _output/local/berth-N: the high-availability tests run two, behind
# a proxy on 9443 that stands in for the Service of a cluster.
#
# BERTH_WORKER=I starts the Berth of worker cluster I instead
# (hack/local-worker.sh), with its own ports (webhook 9470+I, metrics
# 18180+2I, probes 18181+2I, visibility 8470+I), for Jobs, JobSets and pods, its
# log and pid under _output/local/worker-I/berth.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPLICA=${BERTH_REPLICA:-}
WORKER=${BERTH_WORKER:-}
OUT=$ROOT/_output/local/berth${REPLICA:+-$REPLICA}
CONFIG=${BERTH_CONFIG:-$ROOT/config/local/berth.yaml}
export KUBECONFIG=$ROOT/_output/local/kubeconfig
if [[ -n $WORKER ]]; then
	OUT=$ROOT/_output/local/worker-$WORKER/berth
	KUBECONFIG=$ROOT/_output/local/worker-$WORKER/kubeconfig
fi
KUBECTL=("$ROOT/bin/k8s/kubectl" --kubeconfig "$KUBECONFIG")
mkdir -p "$OUT"

# The controller runs as its service account, with config/rbac/role.yaml
# and nothing more, so that the end-to-end tests and the demo fail when the
# role lacks a permission the code uses. The API server takes the
# administrator's credentials as that account's (impersonation).
"${KUBECTL[@]}" apply -f "$ROOT/config/rbac/role.yaml" >/dev/null
account=berth-system:berth-controller
"${KUBECTL[@]}" create clusterrolebinding berth-controller --clusterrole=berth-controller --serviceaccount=$account --dry-run=client -o yaml |
	"${KUBECTL[@]}" apply -f - >/dev/null
"${KUBECTL[@]}" create rolebinding berth-controller -n berth-system --role=berth-controller --serviceaccount=$account --dry-run=client -o yaml |
	"${KUBECTL[@]}" apply -f - >/dev/null
# The visibility API: its APIService, its Service (no selector) and the
# controller's reading of the API server's front-proxy configuration.
"${KUBECTL[@]}" apply -k "$ROOT/config/visibility" >/dev/null
# The roles Berth ships for people, as an install has them.
"${KUBECTL[@]}" apply -f "$ROOT/config/rbac/user_roles.yaml" >/dev/null
# Its Lease requests get the API server's leader-election priority level,
# as in a cluster that config/default installed Berth in.
"${KUBECTL[@]}" apply -k "$ROOT/config/flowcontrol" >/dev/null
# kubectl config has no command for "as"; its minified output has one user.
"${KUBECTL[@]}" config view --raw --minify | sed "/^  user:\$/a\\    as: system:serviceaccount:${account}" >"$OUT/kubeconfig"
grep -q "^    as: system:serviceaccount:${account}\$" "$OUT/kubeconfig"
if [[ -n $REPLICA ]]; then
	CONFIG=$OUT/berth.yaml
	sed -e "s#port: 9443#port: $((9450 + REPLICA))#" \
		-e "s#127.0.0.1:18080#127.0.0.1:$((18080 + 2 * REPLICA))#" \
		-e "s#127.0.0.1:18081#127.0.0.1:$((18081 + 2 * REPLICA))#" \
		-e "s#bindAddress: :8444#bindAddress: :$((8460 + REPLICA))#" \
		-e "s#certDir: _output/local/berth/certs#certDir: ${OUT#"$ROOT"/}/certs#" \
		"$ROOT/config/local/berth.yaml" >"$CONFIG"
fi
if [[ -n $WORKER ]]; then
	CONFIG=$OUT/berth.yaml
	sed -e "s#port: 9443#port: $((9470 + WORKER))#" \
		-e "s#127.0.0.1:18080#127.0.0.1:$((18180 + 2 * WORKER))#" \
		-e "s#127.0.0.1:18081#127.0.0.1:$((18181 + 2 * WORKER))#" \
		-e "s#bindAddress: :8444#bindAddress: :$((8470 + WORKER))#" \
		-e "s#certDir: _output/local/berth/certs#certDir: ${OUT#"$ROOT"/}/certs#" \
		-e "/^  - [a-z]/{/batch\/job\|jobset\|- pod$/!d}" \
		"$ROOT/config/local/berth.yaml" >"$CONFIG"
fi

echo "local-up: building and starting the Berth controller"
(cd "$ROOT" && go build -o bin/berth ./cmd/berth)
if [[ -f $OUT/pid ]]; then
	kill "$(cat "$OUT/pid")" 2>/dev/null || true
	while kill -0 "$(cat "$OUT/pid")" 2>/dev/null; do sleep 0.2; done
fi
# BERTH_LOG_LEVEL=3 logs every scheduling decision.
(cd "$ROOT" && KUBECONFIG=$OUT/kubeconfig exec nohup bin/berth --config "$CONFIG" --zap-log-level="${BERTH_LOG_LEVEL:-info}" >>"$OUT/berth.log" 2>&1) &
echo $! >"$OUT/pid"

# Ready when a queued Job is held by the webhook: the controller runs, has
# written its CA into the webhook configuration and serves the webhook.
probe='{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"probe","namespace":"default","labels":{"berth.dev/queue-name":"probe"}},
"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}'
for _ in $(seq 120); do
	if suspend=$(echo "$probe" | "${KUBECTL[@]}" create --dry-run=server -o jsonpath='{.spec.suspend}' -f - 2>/dev/null) && [[ $suspend == true ]]; then
		echo "local-up: the Berth controller is up; its log is ${OUT#"$ROOT"/}/berth.log"
		exit 0
	fi
	if ! kill -0 "$(cat "$OUT/pid")" 2>/dev/null; then
		tail -20 "$OUT/berth.log" >&2
		echo "local-up: the Berth controller exited" >&2
		exit 1
	fi
	sleep 0.5
done
tail -20 "$OUT/berth.log" >&2
echo "local-up: the Berth controller's webhook did not answer within 60s" >&2
exit 1
