#!/usr/bin/env bash
# The newcomer's first command: starts the local cluster, installs Berth's
# API, applies config/samples and shows what kubectl reports. It leaves the
# cluster up.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export KUBECONFIG=$ROOT/_output/local/kubeconfig
kubectl() { "$ROOT/bin/k8s/kubectl" "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

"$ROOT/hack/local-up.sh"

step "The simulated nodes"
kubectl get nodes -L gpu.berth.dev/family,node.berth.dev/pool

step "Applying config/samples: a flavor, a ClusterQueue, a LocalQueue, a priority class and a Job"
kubectl apply -f "$ROOT/config/samples"

step "kubectl get cq,lq,rf,wpc"
kubectl get cq,lq,rf,wpc

step "The API server refuses a ClusterQueue that borrows without a cohort"
kubectl apply -f - <<'YAML' || true
apiVersion: berth.dev/v1alpha1
kind: ClusterQueue
metadata:
  name: lonely
spec:
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
        borrowingLimit: 4
YAML

step "The cluster is up"
echo "Use it:   export KUBECONFIG=$KUBECONFIG"
echo "          $ROOT/bin/k8s/kubectl get cq,lq,wl"
echo "Stop it:  make local-down"
