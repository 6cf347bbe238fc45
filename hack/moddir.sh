#!/usr/bin/env bash
# Prints the directory of a module that Berth's go.mod requires, downloading
# it into the module cache first: on a fresh machine nothing has fetched a
# module whose files (rather than packages) a script reads, and
# `go list -m -f '{{.Dir}}'` then prints an empty line.
#
#   hack/moddir.sh MODULE [TOOL]
#
# With TOOL, the module is the one hack/tools/TOOL/go.mod requires.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
module=${1:?usage: hack/moddir.sh MODULE [TOOL]}
cd "$ROOT${2:+/hack/tools/$2}"
if ! out=$(go mod download -json "$module" 2>&1); then
	echo "moddir: cannot download $module, which $PWD/go.mod requires:" >&2
	echo "$out" >&2
	exit 1
fi
dir=$(go list -m -f '{{.Dir}}' "$module")
if [[ -z $dir || ! -d $dir ]]; then
	echo "moddir: $module was downloaded but the module cache has no directory for it ('$dir')" >&2
	exit 1
fi
echo "$dir"
