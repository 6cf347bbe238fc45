#!/usr/bin/env bash
# Regenerates everything that is generated and fails when the tree then
# differs from what is committed: generated code, CRDs, RBAC, formatting
# and go.mod.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

make --no-print-directory generate manifests apiref
# The chart's static templates are generated from config/default.
hack/toolchain.sh kube
go run ./hack/chart
go mod tidy
for mod in hack/tools/*/ cmd/berth-scheduler/; do
	[[ -f $mod/go.mod ]] && (cd "$mod" && go mod tidy)
done
# JobSet and kwok build against Berth's Kubernetes libraries, so that a
# cold build compiles them once (hack/toolchain.sh).
same_pins() {
	local mod=$1 want got
	shift
	want=$(go list -m -f '{{.Path}} {{.Version}}' "$@")
	if ! got=$(cd "$mod" && go list -m -f '{{.Path}} {{.Version}}' "$@") || [[ $got != "$want" ]]; then
		echo "verify: $mod pins other Kubernetes libraries than Berth's; want:" >&2
		echo "$want" >&2
		exit 1
	fi
}
same_pins hack/tools/jobset k8s.io/api k8s.io/apimachinery k8s.io/client-go sigs.k8s.io/controller-runtime
# kwok does not import controller-runtime.
same_pins hack/tools/kwok k8s.io/api k8s.io/apimachinery k8s.io/client-go
same_pins hack/tools/helm k8s.io/api k8s.io/apimachinery k8s.io/client-go
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [[ -n $unformatted ]]; then
	echo "verify: gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
if ! git diff --exit-code --stat; then
	echo "verify: generated files or go.mod differ from what is committed; run make generate manifests and go mod tidy" >&2
	exit 1
fi
untracked=$(git ls-files --others --exclude-standard apis config hack go.mod go.sum)
if [[ -n $untracked ]]; then
	echo "verify: generated files are not committed:" >&2
	echo "$untracked" >&2
	exit 1
fi
echo "verify: everything generated is up to date"
