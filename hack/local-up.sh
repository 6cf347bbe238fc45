#!/usr/bin/env bash
# Starts the local cluster: etcd, kube-apiserver, kube-controller-manager
# and Berth's scheduler (kube-scheduler with Berth's plugins) built from
# source, kwok running the simulated nodes of config/local/nodes.yaml, the
# CRDs of Berth, JobSet and LeaderWorkerSet and the ProvisioningRequest CRD
# (standing for cluster-autoscaler's), Berth's validation policy and
# webhooks, the Berth, JobSet and LeaderWorkerSet controllers as local
# processes, and the test double of cluster-autoscaler
# (test/autoscalerdouble), which answers ProvisioningRequests with kwok
# nodes; with WORKERS=N, N worker clusters beside it (hack/local-worker.sh).
# Idempotent: a cluster that is already up is kept; the three
# controllers and the test double are restarted, Berth's controller and the
# test double rebuilt from this tree.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/_output/local
BIN=$ROOT/bin
K8S_BIN=$BIN/k8s
CLUSTER=berth
export KWOK_WORKDIR=$OUT/kwok
export KUBECONFIG=$OUT/kubeconfig
KUBECTL=("$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG")

# shellcheck source=hack/kwok-cluster.sh
source "$ROOT/hack/kwok-cluster.sh"

"$ROOT/hack/toolchain.sh" etcd kube kwok berth-scheduler
mkdir -p "$OUT"

if "${KUBECTL[@]}" get --raw /readyz >/dev/null 2>&1; then
	echo "local-up: the cluster is already up"
else
	echo "local-up: starting the control plane"
	# Aggregator routing: the API server calls a Service's endpoints rather
	# than its ClusterIP, which nothing routes here (no kube-proxy), so that
	# a Service whose EndpointSlice names this machine reaches a process on
	# it (the installed controller's test, test/e2e/installed_test.go), and
	# the visibility API's Service, whose EndpointSlice the leading
	# controller writes, reaches the controller on this machine.
	# The requestheader flags publish how the API server's front proxy
	# authenticates (kwok gives it the administrator's certificate), which
	# the visibility API checks on every request.
	kwok_cluster_up "$CLUSTER" "$KUBECONFIG" "$OUT/kwokctl-create.log" \
		--extra-args kube-apiserver=enable-aggregator-routing=true \
		--extra-args "kube-apiserver=requestheader-client-ca-file=$KWOK_WORKDIR/clusters/$CLUSTER/pki/ca.crt" \
		--extra-args kube-apiserver=requestheader-allowed-names=kwok-admin \
		--extra-args kube-apiserver=requestheader-username-headers=X-Remote-User \
		--extra-args kube-apiserver=requestheader-group-headers=X-Remote-Group \
		--extra-args kube-apiserver=requestheader-extra-headers-prefix=X-Remote-Extra-
fi

echo "local-up: applying the nodes, the CRDs, the validation policy and the webhooks"
"${KUBECTL[@]}" apply -f "$ROOT/config/local/nodes.yaml" >/dev/null
# fabric_nodes prints the second node set, a GPU fabric of 2 blocks of 4
# racks of 4 hosts of 8 H100s (32 nodes), labelled by block, rack and host
# and tainted so that only the fabric's flavor
# (config/samples/topology/topology.yaml) places pods there.
fabric_nodes() {
	local b r h name
	for b in 0 1; do
		for r in 0 1 2 3; do
			for h in 0 1 2 3; do
				name=fabric-b$b-r$r-h$h
				cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: $name
    kubernetes.io/os: linux
    type: kwok
    node.berth.dev/pool: fabric
    cloud.berth.dev/block: block-$b
    cloud.berth.dev/rack: rack-$b-$r
spec:
  taints: [{key: cloud.berth.dev/fabric, value: "true", effect: NoSchedule}]
status:
  allocatable: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8", pods: "110"}
  capacity: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8", pods: "110"}
NODE
			done
		done
	done
}
fabric_nodes | "${KUBECTL[@]}" apply -f - >/dev/null
JOBSET_CRDS=$("$ROOT/hack/moddir.sh" sigs.k8s.io/jobset)/config/components/crd/bases
LWS_CRDS=$("$ROOT/hack/moddir.sh" sigs.k8s.io/lws operators)/config/crd/bases
RAY_CRDS=$("$ROOT/hack/moddir.sh" github.com/ray-project/kuberay/ray-operator operators)/config/crd/bases
# Trainer's CRD directory holds a kustomization too: its three CRDs by name.
TRAINER_CRDS=$("$ROOT/hack/moddir.sh" github.com/kubeflow/trainer/v2 operators)/manifests/base/crds
wait_for() { kubectl_wait "$KUBECONFIG" "$@"; }
# Server-side: the Workload CRD is larger than client-side apply's annotation.
# The ProvisioningRequest CRD stands for cluster-autoscaler's.
for crds in "$ROOT/config/crd/bases" "$ROOT/config/components/provisioningrequest" "$JOBSET_CRDS" "$LWS_CRDS" "$RAY_CRDS"; do
	"${KUBECTL[@]}" apply --server-side --force-conflicts -f "$crds" >/dev/null
	wait_for --for=condition=Established -f "$crds"
done
trainer_crds=()
for crd in trainjobs trainingruntimes clustertrainingruntimes; do
	trainer_crds+=(-f "$TRAINER_CRDS/trainer.kubeflow.org_$crd.yaml")
done
"${KUBECTL[@]}" apply --server-side --force-conflicts "${trainer_crds[@]}" >/dev/null
wait_for --for=condition=Established "${trainer_crds[@]}"
"${KUBECTL[@]}" apply --server-side --force-conflicts -k "$ROOT/config/validation" >/dev/null
"${KUBECTL[@]}" apply -f "$ROOT/config/local/webhooks.yaml" >/dev/null
"${KUBECTL[@]}" create namespace berth-system --dry-run=client -o yaml | "${KUBECTL[@]}" apply -f - >/dev/null
# Trainer's certificate rotator fills this Secret; it does not create it.
"${KUBECTL[@]}" create namespace kubeflow-system --dry-run=client -o yaml | "${KUBECTL[@]}" apply -f - >/dev/null
"${KUBECTL[@]}" create secret generic kubeflow-trainer-webhook-cert -n kubeflow-system --dry-run=client -o yaml |
	"${KUBECTL[@]}" apply -f - >/dev/null
wait_for --for=condition=Ready node --all

# Berth first: its webhooks see every new JobSet and LeaderWorkerSet of the
# managed namespaces (for their default LocalQueue), the controllers' own
# probes among them.
"$ROOT/hack/local-berth.sh"
"$ROOT/hack/local-controller.sh" jobset
"$ROOT/hack/local-controller.sh" lws
"$ROOT/hack/local-controller.sh" ray
"$ROOT/hack/local-controller.sh" trainer

# The test double of cluster-autoscaler (test/autoscalerdouble): it answers
# ProvisioningRequests with kwok nodes.
# A re-run replaces the one it started before, as the controllers are.
mkdir -p "$OUT/autoscalerdouble"
(cd "$ROOT" && go build -o bin/autoscalerdouble ./test/autoscalerdouble)
if [[ -f $OUT/autoscalerdouble/pid ]]; then
	kill "$(cat "$OUT/autoscalerdouble/pid")" 2>/dev/null || true
	while kill -0 "$(cat "$OUT/autoscalerdouble/pid")" 2>/dev/null; do sleep 0.2; done
fi
(cd "$ROOT" && exec nohup bin/autoscalerdouble --kubeconfig "$KUBECONFIG" >>"$OUT/autoscalerdouble/autoscalerdouble.log" 2>&1) &
echo $! >"$OUT/autoscalerdouble/pid"
echo "local-up: started the test double of cluster-autoscaler; its log is ${OUT#"$ROOT"/}/autoscalerdouble/autoscalerdouble.log"

# WORKERS=N starts N worker clusters beside it, worker-1 to worker-N.
for i in $(seq 1 "${WORKERS:-0}"); do
	"$ROOT/hack/local-worker.sh" up "$i"
done

echo "local-up: the cluster is up; logs are under ${OUT#"$ROOT"/}/kwok/clusters/$CLUSTER/logs"
echo "export KUBECONFIG=$KUBECONFIG"
