#!/usr/bin/env bash
# Builds a release of Berth into _output/release (make release):
#
#   VERSION=v0.1.0 hack/release.sh
#
# the static binaries for each platform, then hack/release packages them:
# images/berth and images/berth-scheduler (OCI image layouts, one index of
# PLATFORMS each), berth.yaml and berth-scheduler.yaml (the install, images
# pinned by digest under REGISTRY), kubectl-berth's archives for
# PLUGIN_PLATFORMS, the krew manifest berth-krew.yaml, and checksums.txt.
# Two runs on one commit write the same bytes.
#
# IMAGES_ONLY=1 builds the images alone (make images); PUSH=1 pushes the
# images built before to REGISTRY, tagged VERSION (make push).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/toolchain.sh
source "$ROOT/hack/toolchain.sh"

VERSION=${VERSION:-v0.0.0-dev}
REGISTRY=${REGISTRY:-ghcr.io/berth-dev}
PLATFORMS=${PLATFORMS:-linux/amd64,linux/arm64}
PLUGIN_PLATFORMS=${PLUGIN_PLATFORMS:-linux/amd64,linux/arm64,darwin/amd64,darwin/arm64}
OUT=${OUT:-$ROOT/_output/release}

commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
epoch=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)
if [[ $commit != unknown && -n $(git -C "$ROOT" status --porcelain --untracked-files=no) ]]; then
	commit+=-dirty
fi
args=(-version "$VERSION" -commit "$commit" -epoch "$epoch" -registry "$REGISTRY" -out "$OUT" -bin "$OUT/bin"
	-platforms "$PLATFORMS" -plugin-platforms "$PLUGIN_PLATFORMS" -kubectl "$K8S_BIN/kubectl" -root "$ROOT")

if [[ -n ${IMAGES_ONLY:-} ]]; then
	args+=(-images-only)
	PLUGIN_PLATFORMS=
fi
if [[ -n ${PUSH:-} ]]; then
	exec go -C "$ROOT" run ./hack/release -push "${args[@]}"
fi

build_kube # kubectl renders config/ with its kustomize

# gobuild OS/ARCH OUTPUT DIR PACKAGE LDFLAGS builds a static binary.
gobuild() {
	local platform=$1 output=$2 dir=$3 pkg=$4 ldflags=$5
	(cd "$dir" && CGO_ENABLED=0 GOOS=${platform%/*} GOARCH=${platform#*/} \
		go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$output" "$pkg")
}

version_flags="-s -w -X main.version=$VERSION"
IFS=, read -r -a platforms <<<"$PLATFORMS"
IFS=, read -r -a plugin_platforms <<<"$PLUGIN_PLATFORMS"
for p in "${platforms[@]}"; do
	dir=$OUT/bin/${p/\//_}
	log "building berth and berth-scheduler for $p"
	gobuild "$p" "$dir/berth" "$ROOT" ./cmd/berth "$version_flags"
	gobuild "$p" "$dir/berth-scheduler" "$ROOT/cmd/berth-scheduler" . "$(kube_ldflags)"
done
for p in "${plugin_platforms[@]}"; do
	log "building kubectl-berth for $p"
	gobuild "$p" "$OUT/bin/${p/\//_}/kubectl-berth" "$ROOT" ./cmd/kubectl-berth "$version_flags"
done

go -C "$ROOT" run ./hack/release "${args[@]}"
