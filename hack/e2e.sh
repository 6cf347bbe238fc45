#!/usr/bin/env bash
# Runs the end-to-end tests against the local cluster: starts it if it is
# not up, and stops it afterwards if it started it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KUBECONFIG=$ROOT/_output/local/kubeconfig
was_up=false
if [[ -f $KUBECONFIG ]] && "$ROOT/bin/k8s/kubectl" --kubeconfig "$KUBECONFIG" get --raw /readyz >/dev/null 2>&1; then
	was_up=true
fi
finish() {
	local rc=$?
	if [[ $rc != 0 ]]; then
		echo "e2e: failed; the last lines of the Berth controller's log:" >&2
		tail -40 "$ROOT/_output/local/berth/berth.log" >&2 || true
	fi
	if [[ $was_up == false ]]; then
		"$ROOT/hack/local-down.sh"
	fi
	exit $rc
}
trap finish EXIT

# The dashboard's test drives a real browser.
BERTH_CHROMIUM=$("$ROOT/hack/chromium.sh")
export BERTH_CHROMIUM
"$ROOT/hack/local-up.sh"
cd "$ROOT"
# The tests use kubectl berth as a user would: the plugin on PATH.
go build -o bin/ ./cmd/kubectl-berth
export PATH=$ROOT/bin:$PATH
go test -count=1 -v -timeout 30m -skip TestInstalledController ./test/e2e/
# Last and alone: the controller as berth.yaml installs it, run from the
# release's image for this machine, then uninstalled.
arch=$(go env GOARCH)
PLATFORMS=linux/$arch PLUGIN_PLATFORMS=linux/$arch hack/release.sh
# The release it upgrades to: the same tree, another version.
VERSION=v0.0.1-e2e OUT=$ROOT/_output/release-next PLATFORMS=linux/$arch PLUGIN_PLATFORMS=linux/$arch hack/release.sh
BERTH_E2E_INSTALLED=1 go test -count=1 -v -timeout 20m -run TestInstalledController ./test/e2e/
if [[ $was_up == true ]]; then
	# Berth was uninstalled: the local cluster's is put back.
	"$ROOT/hack/local-up.sh"
fi
