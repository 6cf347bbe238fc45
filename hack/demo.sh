#!/usr/bin/env bash
# The newcomer's first command: starts the local cluster with Berth, applies
# config/samples and walks through admission, borrowing, reclaim by
# preemption and a waiting job, then an inference Deployment that borrows
# training's GPUs and gives them back, nodes from the cluster autoscaler,
# and a job dispatched to whichever of two worker clusters has GPUs free,
# printing what kubectl shows at each step.
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

# worker I ARGS... runs kubectl against worker cluster I.
worker() {
	local i=$1
	shift
	kubectl --kubeconfig "$ROOT/_output/local/worker-$i/kubeconfig" -n default "$@"
}

# worker_job I NAME PODS GPUS_PER_POD submits a Job to worker I's own queue
# remote, as a team of that cluster would.
worker_job() {
	worker "$1" apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $2, labels: {berth.dev/queue-name: remote}}
spec:
  parallelism: $3
  completions: $3
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.example/$2:latest
        resources:
          requests: {cpu: "4", memory: 32Gi, nvidia.com/gpu: "$4"}
          limits: {nvidia.com/gpu: "$4"}
YAML
}

# active_workers N says whether N WorkerClusters are active.
active_workers() {
	[[ $(kubectl get workerclusters -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Active")].status}{"\n"}{end}' | grep -c '^True$') == "$1" ]]
}

# worker_running I JOB N says whether N pods of the job run in worker I.
worker_running() {
	[[ $(worker "$1" get pods -l job-name="$2" --field-selector=status.phase=Running -o name | grep -c .) == "$3" ]]
}

# dispatched JOB says whether the job's Workload was dispatched to a worker.
dispatched() {
	[[ -n $(kubectl get wl "$(workload_of "$1")" -o jsonpath='{.status.clusterName}') ]]
}

# mirrored JOB N says whether the manager's Job shows N active pods.
mirrored() {
	[[ $(kubectl get job "$1" -o jsonpath='{.status.active}') == "$2" ]]
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

step "Beyond one cluster: two worker clusters, each with its own control plane, nodes and Berth; a job sent to queue remote runs in whichever has GPUs free"
for i in 1 2; do
	"$ROOT/hack/local-worker.sh" up "$i" | grep -v '^local-up: '
	worker "$i" delete jobs --all --wait=false >/dev/null 2>&1 || true
	worker "$i" apply -f "$ROOT/config/samples/multicluster/worker.yaml" -f "$ROOT/config/samples/04-workloadpriorityclasses.yaml" >/dev/null
done
kubectl apply -f "$ROOT/config/samples/multicluster/manager.yaml" >/dev/null
echo "applied config/samples/multicluster: in each worker a flavor, ClusterQueue gpus of 16 H100 GPUs and LocalQueue remote; in the manager the MultiClusterConfig and AdmissionCheck workers and ClusterQueue remote"
poll "both workers active" active_workers 2
show get workerclusters
worker_job 1 busy 2 8
poll "worker-1 busy with its own 16-GPU job" worker_running 1 busy 2
echo "worker-1's own team runs busy there: all its 16 GPUs"
job abroad remote research 2 4 h100
poll "abroad dispatched" dispatched abroad
echo "abroad: $(kubectl get wl "$(workload_of abroad)" -o jsonpath='{.status.admissionChecks[0].name}: {.status.admissionChecks[0].state}, {.status.admissionChecks[0].message}')"
show get wl "$(workload_of abroad)" -o custom-columns='NAME:.metadata.name,QUEUE:.spec.queueName,ADMITTED:.status.conditions[?(@.type=="Admitted")].status,CLUSTER:.status.clusterName'
poll "abroad's pods running in worker-2" worker_running 2 abroad 2
echo "\$ kubectl --kubeconfig _output/local/worker-2/kubeconfig get pods -l job-name=abroad"
worker 2 get pods -l job-name=abroad -o custom-columns='POD:.metadata.name,NODE:.spec.nodeName,STATUS:.status.phase'
poll "abroad's status on the manager's Job" mirrored abroad 2
echo "In the manager, the Job runs no pod here; its status is its copy's:"
show get job abroad -o custom-columns='NAME:.metadata.name,MANAGED BY:.spec.managedBy,ACTIVE:.status.active,READY:.status.ready'

step "The cluster is up"
echo "Use it:   export KUBECONFIG=$KUBECONFIG"
echo "          $ROOT/bin/k8s/kubectl get cq,lq,wl"
echo "Workers:  _output/local/worker-1/kubeconfig, _output/local/worker-2/kubeconfig"
echo "Stop it:  make local-down"
