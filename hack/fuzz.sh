#!/usr/bin/env bash
# Runs every fuzz target of the module for a fixed budget each (FUZZ_TIME,
# default 20s), on top of its corpus in testdata/fuzz. A failure leaves the
# input that failed in the package's testdata/fuzz, to commit with the fix.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

budget=${FUZZ_TIME:-20s}
# "dir name" per fuzz target.
mapfile -t targets < <(grep -rl --include='*_test.go' '^func Fuzz' apis pkg cmd/berth test/performance hack |
	xargs grep -H -o '^func Fuzz[A-Za-z0-9_]*' | sed -E 's#^(.*)/[^/]+_test.go:func (Fuzz[A-Za-z0-9_]*)$#\1 \2#' | LC_ALL=C sort -u)
for t in "${targets[@]}"; do
	read -r dir name <<<"$t"
	echo "fuzz: $name in ./$dir for $budget"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$budget" "./$dir"
done
