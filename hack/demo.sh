#!/usr/bin/env bash
# The newcomer's first command: starts the local cluster with Berth, applies
# config/samples and walks through admission, borrowing, reclaim by
# preemption and a waiting job, then an inference Deployment that borrows
# training's GPUs and gives them back, printing what kubectl shows at each
# step.
# It leaves the cluster up.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export KUBECONFIG=$ROOT/_output/local/kubeconfig
kubectl() { "$ROOT/bin/k8s/kubectl" "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { echo "\$ kubectl $*"; kubectl "$@"; }

# job NAME QUEUE PRIORITY PODS GPUS_PER_POD [FAMILY] submits a GPU job that
# runs two minutes once admitted, on nodes of the GPU family if one is given.
job() {
	local selector=""
	[[ -n ${6:-} ]] && selector="nodeSelector: {gpu.berth.dev/family: $6}"
	kubectl apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  namespace: default
  labels: {berth.dev/queue-name: $2, berth.dev/priority-class: $3}
spec:
  parallelism: $4
  completions: $4
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "120s"}
    spec:
      restartPolicy: Never
      $selector
      containers:
      - name: main
        image: registry.example/$1:latest
        resources:
          requests: {cpu: "4", memory: 32Gi, nvidia.com/gpu: "$5"}
          limits: {nvidia.com/gpu: "$5"}
YAML
	echo "submitted job $1: $4 pods x $5 ${6:+$6 }GPUs to queue $2, priority $3"
}

# deployment NAME REPLICAS applies an inference Deployment in queue
# inference whose replicas need 2 H100 GPUs each.
deployment() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
  namespace: default
  labels: {berth.dev/queue-name: inference, berth.dev/priority-class: production}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      nodeSelector: {gpu.berth.dev/family: h100}
      containers:
      - name: serve
        image: registry.example/$1:latest
        resources:
          requests: {cpu: "4", memory: 32Gi, nvidia.com/gpu: "2"}
          limits: {nvidia.com/gpu: "2"}
YAML
	echo "applied deployment $1: $2 replicas x 2 H100 GPUs in queue inference"
}

# replicas APP RUNNING GATED says whether that many of the app's pods are
# bound to a node and that many wait behind Berth's scheduling gate.
replicas() {
	local pods
	# DELETION|NODE|GATES, a line per pod; pods being deleted do not count.
	pods=$(kubectl get pods -l "app=$1" -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}|{.spec.nodeName}|{.spec.schedulingGates[*].name}{"\n"}{end}' | grep '^|' || true)
	[[ $(grep -c '^|[^|]' <<<"$pods") == "$2" ]] && [[ $(grep -c 'berth.dev/admission' <<<"$pods") == "$3" ]]
}

# poll WHAT CHECK [ARGS...] runs CHECK until it succeeds, for at most 30
# seconds, and says that WHAT did not happen when it never does.
poll() {
	local what=$1
	shift
	for _ in $(seq 120); do
		"$@" && return 0
		sleep 0.25
	done
	echo "demo: $what did not happen" >&2
	return 1
}

# workload_of JOB prints the name of the job's Workload.
workload_of() {
	kubectl get wl -o jsonpath="{.items[?(@.metadata.ownerReferences[0].name==\"$1\")].metadata.name}"
}

# has_condition JOB CONDITION says whether the job's Workload has the
# condition.
has_condition() {
	local wl
	wl=$(workload_of "$1")
	[[ -n $wl ]] && [[ $(kubectl get wl "$wl" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}") == True ]]
}

# wait_for JOB CONDITION waits until the job's Workload has the condition.
wait_for() { poll "job $1 reaching $2" has_condition "$1" "$2"; }

# counts KIND NAME PENDING ADMITTED says whether the queue's status counts
# that many pending and admitted workloads.
counts() {
	[[ $(kubectl get "$1" "$2" -o jsonpath='{.status.pendingWorkloads} {.status.admittedWorkloads}') == "$3 $4" ]]
}

# counted KIND NAME PENDING ADMITTED waits until the queue's status counts
# them: while only its counts change, Berth writes a queue's status at most
# every 5 seconds.
counted() { poll "$1 $2 counting $3 pending and $4 admitted workloads" counts "$@"; }

# readmission N says whether N workloads are admitted and one of them was
# preempted before: the preempted one is admitted again.
readmission() {
	local states
	states=$(kubectl get wl -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Admitted")].status}/{.status.conditions[?(@.type=="Preempted")].type}{"\n"}{end}')
	[[ $(grep -c '^True/' <<<"$states") == "$1" ]] && grep -q '^True/Preempted$' <<<"$states"
}

# readmitted N waits until the preempted workload is admitted again.
readmitted() { poll "the preempted workload's new admission" readmission "$1"; }

# exists KIND NAME... says whether the object exists.
exists() { kubectl get "$@" >/dev/null 2>&1; }

# on_cloud JOB N says whether N pods of the job run on nodes the
# autoscaler added.
on_cloud() {
	[[ $(kubectl get pods -l job-name="$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c '^cloud-') == "$2" ]]
}

# why JOB prints why the job's Workload waits.
why() {
	echo "$1 waits: $(kubectl get wl "$(workload_of "$1")" -o jsonpath='{.status.conditions[?(@.type=="QuotaReserved")].message}')"
}

"$ROOT/hack/local-up.sh"
(cd "$ROOT" && go build -o bin/ ./cmd/kubectl-berth)
kubectl delete jobs,deployments,events --all -n default --wait=false >/dev/null 2>&1 || true

step "The simulated nodes"
show get nodes -L gpu.berth.dev/family,node.berth.dev/pool,cloud.berth.dev/rack

step "Applying config/samples: flavors, two teams' ClusterQueues in a cohort, LocalQueues, priority classes and a Job"
kubectl apply -f "$ROOT/config/samples"
wait_for train-resnet Admitted
counted cq team-a 0 1
counted lq training 0 1
show get cq,lq,wl
show get pods -o wide

step "Team A borrows team B's idle H100s: a 16-GPU sweep on a queue with 8 of its 16 GPUs in use"
job sweep training research 8 2
wait_for sweep Admitted
counted cq team-a 0 2
show get cq
echo "team-a H100 GPUs in use and borrowed: $(kubectl get cq team-a -o jsonpath='{.status.flavorsUsage[0].resources[2]}')"

step "Team B needs its H100s back: serving reclaims them by preempting the borrower"
job serve inference production 8 2
wait_for serve Admitted
readmitted 3
show get events --field-selector reason=Preempted -o custom-columns='WORKLOAD:.involvedObject.name,MESSAGE:.message'
echo "The preempted workload went back to its queue and was admitted again on A100s, where team A has quota of its own:"
show get wl -o custom-columns='NAME:.metadata.name,QUEUE:.spec.queueName,GPU FLAVOR:.status.admission.podSetAssignments[0].flavors.nvidia\.com/gpu,ADMITTED:.status.conditions[?(@.type=="Admitted")].status,PREEMPTED:.status.conditions[?(@.type=="Preempted")].reason'

step "A job larger than anything free waits, and says why in numbers"
job giant training research 12 8
counted cq team-a 1 2
counted lq training 1 2
counted cq team-b 0 1
why giant
show get cq,lq,wl

step "Inference borrows training's idle H100s: a Deployment in queue inference, each replica a Workload"
kubectl delete jobs --all -n default --wait=false >/dev/null
counted cq team-a 0 0
counted cq team-b 0 0
deployment chat 8
poll "8 replicas of chat running" replicas chat 8 0
kubectl scale deployment chat -n default --replicas=12 >/dev/null
echo "scaled deployment chat to 12 replicas: 24 GPUs, team B has 16 H100 GPUs of its own"
poll "12 replicas of chat running" replicas chat 12 0
counted cq team-b 0 12
show get cq
echo "team-b H100 GPUs in use and borrowed: $(kubectl get cq team-b -o jsonpath='{.status.flavorsUsage[0].resources[2]}')"

step "Training needs its H100s: a job reclaims them, and the replicas beyond inference's quota wait, gated"
job pretrain training research 8 2 h100
wait_for pretrain Admitted
poll "8 replicas of chat running and 4 gated" replicas chat 8 4
show get pods -l app=chat -o custom-columns='POD:.metadata.name,NODE:.spec.nodeName,GATES:.spec.schedulingGates[*].name'
# The first gated pod, cut in the shell: a pipe into head would end kubectl
# with SIGPIPE, which pipefail turns into the demo's failure.
gated=$(kubectl get pods -l app=chat -o jsonpath='{range .items[?(@.spec.schedulingGates[0].name=="berth.dev/admission")]}{.metadata.name}{"\n"}{end}')
gated=${gated%%$'\n'*}
echo "\$ kubectl berth why pod/$gated"
"$ROOT/bin/kubectl-berth" why "pod/$gated" -n default

step "Capacity from the cloud: a queue of 16 cloud H100 GPUs and no such node; a job waits on its admission check while the cluster autoscaler (here its test double) adds nodes"
kubectl apply -f "$ROOT/config/samples/cloud" >/dev/null
echo "applied config/samples/cloud: flavor cloud-h100, its ProvisioningRequestConfig and AdmissionCheck, ClusterQueue cloud, LocalQueue cloud"
job finetune cloud research 2 8
wait_for finetune QuotaReserved
finetune=$(workload_of finetune)
echo "finetune: quota reserved; check $(kubectl get wl "$finetune" -o jsonpath='{.status.admissionChecks[0].name}: {.status.admissionChecks[0].state}, {.status.admissionChecks[0].message}')"
poll "a ProvisioningRequest for finetune" exists provreq "$finetune-cloud-h100-1" -n default
show get provreq -n default
wait_for finetune Admitted
show get nodes -l autoscaling.x-k8s.io/provisioning-request
poll "finetune's pods on the new nodes" on_cloud finetune 2
show get pods -l job-name=finetune -o custom-columns='POD:.metadata.name,NODE:.spec.nodeName,REQUEST:.metadata.annotations.autoscaling\.x-k8s\.io/consume-provisioning-request'

step "The cluster is up"
echo "Use it:   export KUBECONFIG=$KUBECONFIG"
echo "          $ROOT/bin/k8s/kubectl get cq,lq,wl"
echo "Stop it:  make local-down"
