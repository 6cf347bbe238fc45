# Sourced by hack/local-up.sh and hack/local-worker.sh: the one way the
# local cluster and its workers start a control plane, and wait for what
# they apply to it.
#
# kwok_cluster_up NAME KUBECONFIG LOG [KWOKCTL_ARGS...] starts kwokctl
# cluster NAME (under $KWOK_WORKDIR) from the binaries in bin/: etcd,
# kube-apiserver and kube-controller-manager built from source,
# berth-scheduler as its kube-scheduler with config/scheduler's profile,
# and kwok with config/local/stages.yaml. A cluster of that name left
# half-started (after a reboot, say) is removed first. kwokctl's output
# goes to LOG, and is printed when it fails.
kwok_cluster_up() {
	local name=$1 kubeconfig=$2 log=$3
	shift 3
	local root bin
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	bin=$root/bin
	"$bin/kwokctl" delete cluster --name "$name" >/dev/null 2>&1 || true
	"$bin/kwokctl" create cluster --name "$name" --runtime binary \
		--etcd-binary "$bin/k8s/etcd" \
		--kube-apiserver-binary "$bin/k8s/kube-apiserver" \
		--kube-controller-manager-binary "$bin/k8s/kube-controller-manager" \
		--kube-scheduler-binary "$bin/berth-scheduler" \
		--kube-scheduler-config "$root/config/scheduler/scheduler-config.yaml" \
		--kwok-controller-binary "$bin/kwok" \
		--kubeconfig "$kubeconfig" \
		--config "$root/config/local/stages.yaml" \
		"$@" \
		--wait 120s >"$log" 2>&1 || {
		cat "$log" >&2
		return 1
	}
	"$bin/k8s/kubectl" --kubeconfig "$kubeconfig" config use-context "kwok-$name" >/dev/null
}

# kubectl_wait KUBECONFIG ARGS... retries `kubectl wait ARGS...` for up to
# a minute: it gives up at once on an object that has no conditions yet,
# as a new CRD or node has for a moment.
kubectl_wait() {
	local kubeconfig=$1 i
	shift
	for i in $(seq 60); do
		"$(dirname "${BASH_SOURCE[0]}")/../bin/k8s/kubectl" --kubeconfig "$kubeconfig" wait --timeout=30s "$@" >/dev/null 2>&1 && return 0
		sleep 1
	done
	echo "timed out on kubectl wait $*" >&2
	return 1
}
