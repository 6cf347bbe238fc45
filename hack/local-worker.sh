#!/usr/bin/env bash
# Worker clusters of the local cluster, for dispatch (berth.dev/multicluster).
#
#   hack/local-worker.sh up I     start worker I (1, 2, ...): its own etcd,
#                                 kube-apiserver, kube-controller-manager,
#                                 berth-scheduler and kwok with two nodes of
#                                 8 simulated GPUs, Berth's and JobSet's CRDs,
#                                 its own Berth (a local process, webhooks on
#                                 port 9470+I); then, in the manager (the
#                                 local cluster), the Secret and WorkerCluster
#                                 worker-I. Idempotent, as local-up is.
#   hack/local-worker.sh stop I   stop every process of worker I, keeping its
#                                 state: a worker lost.
#   hack/local-worker.sh start I  start a stopped worker I again.
#   hack/local-worker.sh down I   stop worker I and remove its state.
#
# The manager reaches a worker as the service account
# berth-system:berth-multicluster, bound there to the ClusterRole of
# config/rbac/multicluster_worker_role.yaml and nothing more. The worker's
# administrator kubeconfig is _output/local/worker-I/kubeconfig.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
verb=${1:?usage: hack/local-worker.sh up|stop|start|down I}
i=${2:?usage: hack/local-worker.sh up|stop|start|down I}
BIN=$ROOT/bin
K8S_BIN=$BIN/k8s
OUT=$ROOT/_output/local/worker-$i
CLUSTER=berth-worker-$i
export KWOK_WORKDIR=$OUT/kwok
WORKER_KUBECONFIG=$OUT/kubeconfig
MANAGER=("$K8S_BIN/kubectl" --kubeconfig "$ROOT/_output/local/kubeconfig")
WORKER=("$K8S_BIN/kubectl" --kubeconfig "$WORKER_KUBECONFIG")
# shellcheck source=hack/kwok-cluster.sh
source "$ROOT/hack/kwok-cluster.sh"

stop_berth() {
	if [[ -f $OUT/berth/pid ]]; then
		kill "$(cat "$OUT/berth/pid")" 2>/dev/null || true
		while kill -0 "$(cat "$OUT/berth/pid")" 2>/dev/null; do sleep 0.2; done
	fi
}

case $verb in
stop)
	stop_berth
	"$BIN/kwokctl" stop cluster --name "$CLUSTER" >/dev/null
	echo "local-worker: worker-$i is stopped"
	exit 0
	;;
start)
	"$BIN/kwokctl" start cluster --name "$CLUSTER" --wait 120s >/dev/null
	# The node leases name the kwok controller that ran before the stop,
	# and the new one does not take them over: without them, the nodes'
	# pods would not start or end. A kubelet that restarts renews its
	# own lease at once.
	"${WORKER[@]}" -n kube-node-lease delete lease --all >/dev/null
	BERTH_WORKER=$i "$ROOT/hack/local-berth.sh"
	echo "local-worker: worker-$i is started again"
	exit 0
	;;
down)
	stop_berth
	"$BIN/kwokctl" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
	pkill -f "$KWOK_WORKDIR" 2>/dev/null || true
	"${MANAGER[@]}" delete workercluster "worker-$i" --ignore-not-found >/dev/null 2>&1 || true
	"${MANAGER[@]}" -n berth-system delete secret "worker-$i" --ignore-not-found >/dev/null 2>&1 || true
	rm -rf "$OUT"
	echo "local-worker: worker-$i is removed"
	exit 0
	;;
up) ;;
*)
	echo "local-worker: unknown verb $verb, want up, stop, start or down" >&2
	exit 2
	;;
esac

mkdir -p "$OUT"
if "${WORKER[@]}" get --raw /readyz >/dev/null 2>&1; then
	echo "local-worker: worker-$i is already up"
else
	echo "local-worker: starting the control plane of worker-$i"
	kwok_cluster_up "$CLUSTER" "$WORKER_KUBECONFIG" "$OUT/kwokctl-create.log"
fi

for n in 0 1; do
	cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: worker-$i-h100-$n
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: worker-$i-h100-$n
    kubernetes.io/os: linux
    type: kwok
    gpu.berth.dev/family: h100
status:
  allocatable: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8", pods: "110"}
  capacity: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8", pods: "110"}
NODE
done | "${WORKER[@]}" apply -f - >/dev/null
JOBSET_CRDS=$("$ROOT/hack/moddir.sh" sigs.k8s.io/jobset)/config/components/crd/bases
for crds in "$ROOT/config/crd/bases" "$JOBSET_CRDS"; do
	"${WORKER[@]}" apply --server-side --force-conflicts -f "$crds" >/dev/null
	kubectl_wait "$WORKER_KUBECONFIG" --for=condition=Established -f "$crds"
done
"${WORKER[@]}" apply --server-side --force-conflicts -k "$ROOT/config/validation" >/dev/null
sed "s#https://127.0.0.1:9443/#https://127.0.0.1:$((9470 + i))/#" "$ROOT/config/local/webhooks.yaml" | "${WORKER[@]}" apply -f - >/dev/null
"${WORKER[@]}" create namespace berth-system --dry-run=client -o yaml | "${WORKER[@]}" apply -f - >/dev/null
BERTH_WORKER=$i "$ROOT/hack/local-berth.sh"

# The manager's account in the worker, and its kubeconfig in the manager.
"${WORKER[@]}" apply -f "$ROOT/config/rbac/multicluster_worker_role.yaml" >/dev/null
"${WORKER[@]}" create clusterrolebinding berth-multicluster --clusterrole=berth-multicluster-worker \
	--serviceaccount=berth-system:berth-multicluster --dry-run=client -o yaml | "${WORKER[@]}" apply -f - >/dev/null
"${WORKER[@]}" config view --raw --minify --flatten |
	sed "/^  user:\$/a\\    as: system:serviceaccount:berth-system:berth-multicluster" >"$OUT/manager-kubeconfig"
"${MANAGER[@]}" create namespace berth-system --dry-run=client -o yaml | "${MANAGER[@]}" apply -f - >/dev/null
"${MANAGER[@]}" -n berth-system create secret generic "worker-$i" --from-file=kubeconfig="$OUT/manager-kubeconfig" \
	--dry-run=client -o yaml | "${MANAGER[@]}" apply -f - >/dev/null
cat <<WC | "${MANAGER[@]}" apply -f - >/dev/null
apiVersion: berth.dev/v1alpha1
kind: WorkerCluster
metadata: {name: worker-$i}
spec:
  kubeConfig: {location: worker-$i, locationType: Secret}
WC
echo "local-worker: worker-$i is up; its kubeconfig is ${WORKER_KUBECONFIG#"$ROOT"/}"
