#!/usr/bin/env bash
# Builds the pinned tools Berth needs from the Go module proxy into bin/.
#
#   hack/toolchain.sh [kube|berth-scheduler|etcd|kwok|jobset|lws|ray|helm|controller-gen|golangci-lint|all]...
#
# Each tool is rebuilt only when its pins change: a stamp under bin/.stamps
# records the hash of what it was built from. No release binaries or images
# are downloaded; everything is compiled here.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
K8S_BIN=$BIN/k8s
STAMPS=$BIN/.stamps

KUBE_VERSION=v1.37.2
CONTROLLER_GEN_VERSION=v0.23.0
GOLANGCI_LINT_VERSION=v2.15.0

export GOFLAGS=${GOFLAGS:--buildvcs=false}
mkdir -p "$K8S_BIN" "$STAMPS"

log() { echo "toolchain: $*" >&2; }

# fresh NAME OUTPUT HASH... succeeds when NAME was built from the same
# inputs and its output is still there: a stamp alone outlives a deleted
# binary.
fresh() {
	local name=$1 output=$2; shift 2
	local want
	want=$(printf '%s\n' "$@" | sha256sum | cut -c1-16)
	[[ -f $STAMPS/$name && -x $output && $(cat "$STAMPS/$name") == "$want" ]] && return 0
	echo "$want" >"$STAMPS/$name.want"
	return 1
}

stamp() { mv "$STAMPS/$1.want" "$STAMPS/$1"; }

filehash() { cat "$@" | sha256sum | cut -c1-16; }

kube_ldflags() {
	local minor=${KUBE_VERSION#v1.}
	minor=${minor%%.*}
	local flags="-s -w" pkg
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$flags"
}

build_kube() {
	local mod=$ROOT/hack/tools/kube
	if fresh kube "$K8S_BIN/kubectl" "$KUBE_VERSION" "$(filehash "$mod/go.mod" "$mod/go.sum")"; then return; fi
	# kube-scheduler is not built: the local cluster runs berth-scheduler,
	# kube-scheduler with Berth's plugins, in its place.
	log "building kube-apiserver, kube-controller-manager, kubectl $KUBE_VERSION (several minutes cold)"
	(cd "$mod" && go build -trimpath -ldflags "$(kube_ldflags)" -o "$K8S_BIN/" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kubectl)
	stamp kube
}

# build_berth_scheduler builds kube-scheduler with Berth's plugins from its
# own module. Its inputs are the module's files rather than pins, so the stamp
# hashes go.mod, go.sum and every .go file with its path.
build_berth_scheduler() {
	local mod=$ROOT/cmd/berth-scheduler files
	mapfile -t files < <(cd "$mod" && find . -name '*.go' -type f | LC_ALL=C sort)
	if fresh berth-scheduler "$BIN/berth-scheduler" "$KUBE_VERSION" "${files[@]}" \
		"$(cd "$mod" && filehash go.mod go.sum "${files[@]}")"; then return; fi
	log "building berth-scheduler (kube-scheduler $KUBE_VERSION with Berth's plugins)"
	(cd "$mod" && go build -trimpath -ldflags "$(kube_ldflags)" -o "$BIN/berth-scheduler" .)
	stamp berth-scheduler
}

build_etcd() {
	local mod=$ROOT/hack/tools/etcd
	if fresh etcd "$K8S_BIN/etcd" "$(filehash "$mod/go.mod" "$mod/go.sum" "$mod/main.go")"; then return; fi
	log "building etcd"
	(cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$K8S_BIN/etcd" .)
	stamp etcd
}

# go_install NAME PACKAGE VERSION installs a tool with its own go.mod.
go_install() {
	local name=$1 pkg=$2 version=$3
	if fresh "$name" "$BIN/$name" "$pkg@$version"; then return; fi
	log "installing $pkg@$version"
	GOBIN=$BIN go install -trimpath -ldflags "-s -w" "$pkg@$version"
	stamp "$name"
}

# compile_berth compiles Berth's controller into the build cache. JobSet's
# and kwok's modules pin the Kubernetes libraries at Berth's versions
# (hack/verify.sh checks), so that, built after it, they reuse most of what
# it compiled instead of compiling those libraries a second time.
compile_berth() {
	(cd "$ROOT" && go build -trimpath -o /dev/null ./cmd/berth)
}

build_jobset() {
	local mod=$ROOT/hack/tools/jobset
	if fresh jobset "$BIN/jobset-controller" "$(filehash "$mod/go.mod" "$mod/go.sum")"; then return; fi
	compile_berth
	log "building the JobSet controller"
	(cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$BIN/jobset-controller" sigs.k8s.io/jobset)
	stamp jobset
}

# build_operators builds the LeaderWorkerSet controller, KubeRay's operator
# and Kubeflow Trainer's controller manager from one module
# (hack/tools/operators): they share Kubernetes libraries of their own,
# compiled once for all three.
build_operators() {
	local mod=$ROOT/hack/tools/operators
	if fresh operators "$BIN/lws-controller" "$(filehash "$mod/go.mod" "$mod/go.sum")" &&
		[[ -x $BIN/ray-operator && -x $BIN/trainer-controller-manager ]]; then return; fi
	log "building the LeaderWorkerSet controller, KubeRay's operator and Kubeflow Trainer's controller"
	(cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$BIN/lws-controller" sigs.k8s.io/lws/cmd)
	(cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$BIN/ray-operator" github.com/ray-project/kuberay/ray-operator)
	(cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$BIN/trainer-controller-manager" github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager)
	stamp operators
}

build_kwok() {
	local mod=$ROOT/hack/tools/kwok
	if fresh kwok "$BIN/kwokctl" "$(filehash "$mod/go.mod" "$mod/go.sum")" && [[ -x $BIN/kwok ]]; then return; fi
	compile_berth
	log "building kwok and kwokctl"
	(cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$BIN/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)
	stamp kwok
}

# build_helm builds the Helm CLI that lints and renders charts/berth. Its
# module pins the Kubernetes libraries at Berth's versions, as JobSet's does.
build_helm() {
	local mod=$ROOT/hack/tools/helm
	if fresh helm "$BIN/helm" "$(filehash "$mod/go.mod" "$mod/go.sum")"; then return; fi
	log "building helm"
	(cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$BIN/helm" helm.sh/helm/v4/cmd/helm)
	stamp helm
}

main() {
	local targets=("$@")
	[[ ${#targets[@]} -gt 0 ]] || targets=(all)
	local t
	for t in "${targets[@]}"; do
		case $t in
		kube) build_kube ;;
		berth-scheduler) build_berth_scheduler ;;
		etcd) build_etcd ;;
		kwok) build_kwok ;;
		jobset) build_jobset ;;
		lws | ray | trainer) build_operators ;;
		helm) build_helm ;;
		controller-gen) go_install controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "$CONTROLLER_GEN_VERSION" ;;
		golangci-lint) go_install golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_LINT_VERSION" ;;
		all) main etcd kube berth-scheduler kwok jobset lws helm controller-gen golangci-lint ;;
		*) log "unknown tool $t"; return 2 ;;
		esac
	done
}

# Sourced (hack/release.sh), it only defines its functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
