#!/usr/bin/env bash
# Checks the release and the chart (make test-release): builds the release
# for this machine's platform twice, into two folders, and fails unless both
# hold the same bytes (images, manifests, archives); then lints the chart
# and checks it against berth.yaml (test/chart). `make release` builds every
# platform; the cross-compilation is Go's, the packaging is what is tested.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
arch=$(go env GOARCH)
export PLATFORMS=linux/$arch PLUGIN_PLATFORMS=linux/$arch
OUT=$ROOT/_output/release-check/a hack/release.sh
OUT=$ROOT/_output/release-check/b hack/release.sh
digests() {
	(cd "$1" && cat checksums.txt && sha256sum images/*/index.json)
}
if ! diff <(digests _output/release-check/a) <(digests _output/release-check/b); then
	echo "test-release: two builds of one commit differ" >&2
	exit 1
fi
echo "test-release: two builds gave the same bytes:"
digests _output/release-check/a

hack/toolchain.sh helm
go test -count=1 ./test/chart/
