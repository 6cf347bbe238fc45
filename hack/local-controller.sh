#!/usr/bin/env bash
# (Re)starts a job framework's own controller in the local cluster as a
# local process, with a CA of its own that the API server trusts for its
# webhooks, and waits until its webhooks answer.
#
#   hack/local-controller.sh jobset|lws|ray|trainer
#
# jobset:  the JobSet controller (config/local/jobset*.yaml).
# lws:     the LeaderWorkerSet controller (config/local/lws*.yaml).
# ray:     KubeRay's operator, with no webhooks of its own (KubeRay's are
#          off by default); it is up once its readiness probe answers.
# trainer: Kubeflow Trainer's controller manager. Its validating webhook
#          is not registered here: its certificate names an in-cluster
#          Service that the API server cannot reach from this machine, so
#          Trainer's own checks of TrainJobs and runtimes do not run (Berth's
#          do). Its certificate rotator needs the Secret local-up creates in
#          kubeflow-system, and its webhook server the certificate in
#          /tmp/k8s-webhook-server/serving-certs, a path Trainer fixes. It
#          is up once its readiness probe answers.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
name=${1:?usage: hack/local-controller.sh jobset|lws|ray|trainer}
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
ray)
	title="KubeRay's operator"
	probePort=18095
	;;
trainer)
	title="Kubeflow Trainer's controller"
	probePort=18097
	;;
*)
	echo "local-controller: unknown controller $name, want jobset, lws, ray or trainer" >&2
	exit 2
	;;
esac
mkdir -p "$OUT"

"$ROOT/hack/toolchain.sh" "$name"
if [[ $name == trainer ]]; then
	# In a cluster, the kubelet mounts the rotator's Secret there, and the
	# rotator waits for the files before it lets the webhook server start.
	# Nothing calls that server here: any certificate does.
	trainerCerts=/tmp/k8s-webhook-server/serving-certs
	if [[ ! -f $trainerCerts/tls.crt ]]; then
		(cd "$ROOT" && go run ./hack/certgen -dir "$trainerCerts")
	fi
fi
if [[ -z ${probePort:-} ]]; then
	if [[ ! -f $OUT/certs/ca.crt ]]; then
		(cd "$ROOT" && go run ./hack/certgen -dir "$OUT/certs")
	fi
	ca=$(base64 -w0 <"$OUT/certs/ca.crt")
	sed "s#CA_BUNDLE#$ca#" "$ROOT/config/local/$name-webhooks.yaml" | "${KUBECTL[@]}" apply -f - >/dev/null
fi

echo "local-up: starting $title"
if [[ -f $OUT/pid ]]; then
	kill "$(cat "$OUT/pid")" 2>/dev/null || true
	while kill -0 "$(cat "$OUT/pid")" 2>/dev/null; do sleep 0.2; done
fi
if [[ $name == ray ]]; then
	(cd "$ROOT" && exec nohup bin/ray-operator --enable-leader-election=false --log-stdout-encoder console \
		--metrics-addr 127.0.0.1:18094 --health-probe-bind-address 127.0.0.1:18095 >>"$OUT/$name.log" 2>&1) &
elif [[ $name == trainer ]]; then
	(cd "$ROOT" && exec nohup bin/trainer-controller-manager --leader-elect=false --metrics-bind-address 0 \
		--health-probe-bind-address 127.0.0.1:18097 --webhook-server-port 18443 >>"$OUT/$name.log" 2>&1) &
else
	(cd "$ROOT" && exec nohup "bin/$name-controller" --config "config/local/$name.yaml" >>"$OUT/$name.log" 2>&1) &
fi
echo $! >"$OUT/pid"

# up reports whether the controller answers: its webhooks, or KubeRay's or
# Trainer's readiness probe (over bash's /dev/tcp: no HTTP client is
# assumed).
up() {
	if [[ -z ${probePort:-} ]]; then
		echo "$probe" | "${KUBECTL[@]}" create --dry-run=server -f - >/dev/null 2>&1
		return
	fi
	local status
	{ exec 3<>/dev/tcp/127.0.0.1/"$probePort"; } 2>/dev/null || return 1
	printf 'GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
	read -r _ status _ <&3 || status=
	exec 3<&-
	[[ $status == 200 ]]
}

for _ in $(seq 120); do
	if up; then
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
echo "local-up: $title did not answer within 60s" >&2
exit 1
