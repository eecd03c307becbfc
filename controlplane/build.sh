#!/usr/bin/env bash
# Builds the real control plane the cluster suite runs against: etcd, kube-apiserver,
# kube-controller-manager and kubectl, at the versions pinned by the go.mod files beside this script.
#
# The binaries land in a per-machine cache keyed by those versions and are reused by every later run:
#   ${CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-hooks/controlplane}/<k8s>-etcd-<etcd>/
# The FIRST build takes 10 to 25 minutes on 2 cores (about 2 GiB of memory per link) and needs the Go
# module proxy; later runs print the cached directory at once. Prints the directory on stdout, the
# build's progress on stderr. `build.sh --check` only prints the directory if it is complete, else fails.
# It also downloads the route CRD modules of route-crds.txt into the Go module cache (sources only).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

version_of() { awk -v m="$1" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$2"; }
k8s=$(version_of k8s.io/kubernetes "$here/kubernetes/go.mod")
etcd=$(version_of go.etcd.io/etcd/server/v3 "$here/etcd/go.mod")
cache_root=${CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-hooks/controlplane}
dir="$cache_root/$k8s-etcd-$etcd"
binaries=(etcd kube-apiserver kube-controller-manager kubectl)

complete() { for b in "${binaries[@]}"; do [ -x "$dir/$b" ] || return 1; done; }
# The pinned route CRDs (Gateway API, Traefik) into the Go module cache: only their sources, quick once cached.
fetch_route_crds() {
  if command -v go >/dev/null; then
    (cd "$here" && GOFLAGS=-mod=mod go mod download $(grep -v '^#' route-crds.txt)) >&2 || echo "controlplane: could not download the route CRD modules" >&2
  fi
}
if complete; then fetch_route_crds; echo "$dir"; exit 0; fi
if [ "${1:-}" = "--check" ]; then
  echo "controlplane: $dir is not built yet (controlplane/build.sh builds it: 10 to 25 minutes the first time)" >&2
  exit 1
fi

if ! command -v go >/dev/null; then
  echo "controlplane: Go >= 1.26 is needed to build Kubernetes' binaries (or run the cluster suite against an existing cluster: TEST_KUBECONFIG)" >&2
  exit 2
fi
mkdir -p "$cache_root"
# One build per machine at a time: a second caller waits, then finds the cache filled.
exec 9>"$cache_root/.lock"
flock 9
if complete; then echo "$dir"; exit 0; fi

echo "controlplane: building Kubernetes $k8s and etcd $etcd into $dir" >&2
echo "controlplane: the first build takes 10 to 25 minutes on 2 cores; later runs reuse it" >&2
staging=$(mktemp -d "$cache_root/.build.XXXXXX")
trap 'rm -rf "$staging"' EXIT
export CGO_ENABLED=0 GOFLAGS=-mod=mod
start=$(date +%s)
# Upstream's flags: static, stripped, tags selinux,notest; the version stamped so /version and kubectl say it.
IFS=. read -r major minor _ <<<"${k8s#v}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
done
(cd "$here/kubernetes" && go build -trimpath -tags selinux,notest -ldflags "$ldflags" -o "$staging/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl) >&2
(cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$staging/etcd" go.etcd.io/etcd/server/v3) >&2
"$staging/kube-apiserver" --version >&2
# sed, not head: head exits after the first line, etcd gets SIGPIPE writing the next, and pipefail ends the build.
"$staging/etcd" --version | sed -n 1p >&2
rm -rf "$dir"
chmod 755 "$staging"
mv "$staging" "$dir"
trap - EXIT
echo "controlplane: built in $(( $(date +%s) - start )) s" >&2
fetch_route_crds
echo "$dir"
