#!/usr/bin/env bash
# Prints the path of Debian's chromium, which the dashboard's browser test
# drives headless; installs the package first when it is missing and this
# user may (root, or sudo without a password).
set -euo pipefail

if path=$(command -v chromium); then
	echo "$path"
	exit 0
fi
if [[ $(id -u) == 0 ]]; then
	sudo=()
elif sudo -n true 2>/dev/null; then
	sudo=(sudo -n)
else
	echo "chromium: not installed, and installing it needs root: apt-get install chromium" >&2
	exit 1
fi
echo "chromium: installing Debian's package chromium" >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
command -v chromium
