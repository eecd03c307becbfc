#!/usr/bin/env bash
# Builds promtool, Prometheus' rule tester, at the version pinned by go.mod beside this script, for the tests of the
# monitoring component (its alert rules run through `promtool test rules`, its files through `promtool check`).
#
# The binary lands in a per-machine cache keyed by that version and is reused by every later run:
#   ${PROMTOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-hooks/promtool}/<version>-no-sd/promtool
# The FIRST build takes about 3 minutes and needs the Go module proxy. Built with Prometheus' tag `remove_all_sd`:
# the rule tests read no service discovery, and without the cloud providers' SDKs (AWS, Azure, GCE, ...) the build
# compiles about half as much (6 minutes without the tag). Prints the binary's path on stdout.
# `build.sh --check` only prints the path if it is built, else fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '$1 == "github.com/prometheus/prometheus" { print $2; exit } $1 == "require" && $2 == "github.com/prometheus/prometheus" { print $3; exit }' "$here/go.mod")
cache_root=${PROMTOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-hooks/promtool}
binary="$cache_root/$version-no-sd/promtool"

if [ -x "$binary" ]; then echo "$binary"; exit 0; fi
if [ "${1:-}" = "--check" ]; then
  echo "promtool: $binary is not built yet (controlplane/promtool/build.sh builds it)" >&2
  exit 1
fi
if ! command -v go >/dev/null; then
  echo "promtool: Go >= 1.26 is needed to build promtool" >&2
  exit 2
fi
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9
if [ -x "$binary" ]; then echo "$binary"; exit 0; fi

echo "promtool: building Prometheus $version's promtool into $binary" >&2
staging=$(mktemp -d "$cache_root/.build.XXXXXX")
trap 'rm -rf "$staging"' EXIT
start=$(date +%s)
(cd "$here" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -tags remove_all_sd -trimpath -ldflags "-s -w" -o "$staging/promtool" github.com/prometheus/prometheus/cmd/promtool) >&2
"$staging/promtool" --version >&2 || true
mkdir -p "$(dirname "$binary")"
mv "$staging/promtool" "$binary"
echo "promtool: built in $(( $(date +%s) - start )) s" >&2
echo "$binary"
