#!/usr/bin/env bash
# Builds the real node the real-node suite runs (npm run test:node), at the versions pinned by the go.mod files
# beside this script, each in a module of its own (their dependencies never meet the product's or each other's):
#   containerd/   containerd, ctr, containerd-shim-runc-v2 (static, without the btrfs/devmapper/zfs snapshotters)
#   cni/          the CNI plugins bridge, host-local, loopback, portmap, and tuning (which switches IPv6 off in
#                 every pod's network namespace: docs/install.md, "Pods without IPv6")
#   kube-router/  kube-router, run as the NetworkPolicy engine only (its firewall)
#   coredns/      CoreDNS, the cluster DNS (run as a pod of the node)
#   kubernetes/   kubelet, kube-proxy, kube-scheduler: the same k8s.io/kubernetes module, versions and flags as
#                 ../kubernetes (the control plane), so Go's build cache of that build is reused
#   traefik/      Traefik, the proxy for HTTP by host name and TLS by SNI (Ingress, IngressRoute, IngressRouteTCP,
#                 Gateway API), run as a pod of the node
# and the test images of ../images (small static programs packed as image tarballs, imported into containerd), and
#   registry/     the suite's image registry and its pusher (go-containerregistry's pkg/registry behind basic auth for
#                 a private prefix: registry/main.go), served on the node's loopback, for the scenarios that pull
#
# Everything lands in a per-machine cache keyed by those versions and reused by later runs:
#   ${NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-hooks/node}/<versions>/{bin,cni}/
#   .../<versions>/images-<hash of ../images>/images.tar   (rebuilt alone, in seconds, when a test image changes)
#   ${REGISTRY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-hooks/registry}/ggcr-<version>-<hash of registry/>/registry
#   (a key of its own, so that changing the registry never changes <versions>, whose rebuild takes the longest)
# The FIRST build takes about 10 to 30 minutes on 2 cores (times per part in <versions>/build-times.txt). Prints
# three lines on stdout, the binaries' directory, the images' directory and the registry's; progress on stderr.
# `build.sh --check` only prints them if all are complete, else fails. runc, iptables, ipset, nftables and
# conntrack are not built: they come from the distribution (apt-get install -y runc iptables ipset nftables conntrack).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
images_src=$(cd "$here/../images" && pwd)

version_of() { awk -v m="$1" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$2"; }
k8s=$(version_of k8s.io/kubernetes "$here/kubernetes/go.mod")
containerd=$(version_of github.com/containerd/containerd/v2 "$here/containerd/go.mod")
cni=$(version_of github.com/containernetworking/plugins "$here/cni/go.mod")
router=$(version_of github.com/cloudnativelabs/kube-router/v2 "$here/kube-router/go.mod")
coredns=$(version_of github.com/coredns/coredns "$here/coredns/go.mod")
traefik=$(version_of github.com/traefik/traefik/v3 "$here/traefik/go.mod")
cache_root=${NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-hooks/node}
dir="$cache_root/k8s-$k8s-containerd-$containerd-cni-$cni-kube-router-$router-coredns-$coredns-traefik-$traefik"
images_hash=$(cd "$images_src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)
images="$dir/images-$images_hash"
ggcr=$(version_of github.com/google/go-containerregistry "$here/registry/go.mod")
registry_hash=$(cd "$here/registry" && cat go.mod go.sum main.go | sha256sum | cut -c1-12)
registry_cache=${REGISTRY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-hooks/registry}
registry="$registry_cache/ggcr-$ggcr-$registry_hash"
binaries=(bin/containerd bin/ctr bin/containerd-shim-runc-v2 bin/kube-router bin/coredns bin/traefik bin/kubelet bin/kube-proxy bin/kube-scheduler
  cni/bridge cni/host-local cni/loopback cni/portmap cni/tuning)

binaries_complete() { for b in "${binaries[@]}"; do [ -x "$dir/$b" ] || return 1; done; [ -s "$dir/traefik-crds.yaml" ]; }
images_complete() { [ -s "$images/images.tar" ] && [ -x "$images/bin/pack" ]; }
registry_complete() { [ -x "$registry/registry" ]; }
if binaries_complete && images_complete && registry_complete; then printf '%s\n%s\n%s\n' "$dir" "$images" "$registry"; exit 0; fi
if [ "${1:-}" = "--check" ]; then
  echo "node: $dir, $images or $registry is not built yet (controlplane/node/build.sh builds them: 10 to 30 minutes the first time)" >&2
  exit 1
fi
if ! command -v go >/dev/null; then
  echo "node: Go >= 1.26 is needed to build the node's binaries" >&2
  exit 2
fi
export CGO_ENABLED=0 GOFLAGS=-mod=mod

# The registry first: a minute or two cold, seconds warm, under a lock of its own (it never waits for the node's).
if ! registry_complete; then
  mkdir -p "$registry_cache"
  (
    flock 8
    if ! registry_complete; then
      started=$(date +%s)
      staging=$(mktemp -d "$registry_cache/.build.XXXXXX")
      trap 'rm -rf "$staging"' EXIT
      echo "node: building the registry (go-containerregistry $ggcr)" >&2
      (cd "$here/registry" && go build -trimpath -ldflags "-s -w" -o "$staging/registry" .) >&2
      echo "registry $(( $(date +%s) - started ))" >"$staging/build-times.txt"
      # Older builds (another version or main.go) go: a checkout that still wants one rebuilds it in seconds.
      rm -rf "$registry" "$registry_cache"/ggcr-*
      chmod 755 "$staging"
      mv "$staging" "$registry"
      trap - EXIT
      echo "node: registry built in $(( $(date +%s) - started )) s" >&2
    fi
  ) 8>"$registry_cache/.lock"
fi
mkdir -p "$cache_root"
# One build per machine at a time: a second caller waits, then finds the cache filled.
exec 9>"$cache_root/.lock"
flock 9

# part NAME DIR GO-BUILD-ARGS...: one `go build` in a module of its own, timed into build-times.txt.
part() {
  local name=$1 module=$2
  shift 2
  local started
  started=$(date +%s)
  echo "node: building $name" >&2
  (cd "$here/$module" && go build -trimpath "$@") >&2
  echo "$name $(( $(date +%s) - started ))" >>"$staging/build-times.txt"
  echo "node: $name built in $(( $(date +%s) - started )) s" >&2
}

# reuse FILE...: a part whose files are all in the cache dir already (built earlier at the same versions) is linked
# into the new build rather than built again: a binary added to the list costs its own part's build only.
reuse() {
  local file
  for file in "$@"; do [ -s "$dir/$file" ] || return 1; done
  for file in "$@"; do ln "$dir/$file" "$staging/$file" 2>/dev/null || cp -p "$dir/$file" "$staging/$file"; done
  echo "node: reusing $* from the previous build" >&2
}

if ! binaries_complete; then
  echo "node: building into $dir (the first build takes 10 to 30 minutes on 2 cores; later runs reuse it)" >&2
  staging=$(mktemp -d "$cache_root/.build.XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  mkdir -p "$staging/bin" "$staging/cni"
  [ ! -s "$dir/build-times.txt" ] || cp "$dir/build-times.txt" "$staging/"
  reuse bin/containerd bin/ctr bin/containerd-shim-runc-v2 ||
    part "containerd $containerd" containerd -tags no_btrfs,no_devmapper,no_zfs \
      -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd" -o "$staging/bin/" \
      github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr \
      github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
  reuse cni/bridge cni/host-local cni/loopback cni/portmap cni/tuning ||
    part "cni-plugins $cni" cni -ldflags "-s -w" -o "$staging/cni/" \
      github.com/containernetworking/plugins/plugins/main/bridge github.com/containernetworking/plugins/plugins/ipam/host-local \
      github.com/containernetworking/plugins/plugins/main/loopback github.com/containernetworking/plugins/plugins/meta/portmap \
      github.com/containernetworking/plugins/plugins/meta/tuning
  reuse bin/kube-router ||
    part "kube-router $router" kube-router -ldflags "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$router" \
      -o "$staging/bin/kube-router" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
  reuse bin/coredns || part "coredns $coredns" coredns -ldflags "-s -w" -o "$staging/bin/coredns" github.com/coredns/coredns
  reuse bin/traefik ||
    part "traefik $traefik" traefik -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$traefik" \
      -o "$staging/bin/traefik" github.com/traefik/traefik/v3/cmd/traefik
  if ! reuse bin/kubelet bin/kube-proxy bin/kube-scheduler; then
    # Upstream's flags, as ../build.sh builds the control plane (same tags and -trimpath: the same compiled packages).
    # A control-plane build under way fills the same build cache: wait for it (its lock) instead of compiling twice.
    cp_cache=${CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-hooks/controlplane}
    mkdir -p "$cp_cache"
    echo "node: waiting for any control-plane build in progress (its Go build cache is this part's)" >&2
    flock "$cp_cache/.lock" true
    IFS=. read -r major minor _ <<<"${k8s#v}"
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags="$ldflags -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    done
    part "kubelet, kube-proxy, kube-scheduler $k8s" kubernetes -tags selinux,notest -ldflags "$ldflags" -o "$staging/bin/" \
      k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kube-scheduler
  fi
  # The CRDs of the Traefik that runs (IngressRoute, IngressRouteTCP, ...), from its module, beside its binary.
  if ! reuse traefik-crds.yaml; then
    traefik_src=$(cd "$here/traefik" && go list -m -f '{{.Dir}}' github.com/traefik/traefik/v3)
    cp "$traefik_src/docs/content/reference/dynamic-configuration/kubernetes-crd-definition-v1.yml" "$staging/traefik-crds.yaml"
  fi
  "$staging/bin/kubelet" --version >&2
  "$staging/bin/containerd" --version >&2
  # The test images of the previous build stay (the same CoreDNS and Traefik are in them).
  for old in "$dir"/images-*; do
    if [ -d "$old" ]; then mv "$old" "$staging/"; fi
  done
  rm -rf "$dir"
  chmod 755 "$staging"
  mv "$staging" "$dir"
  trap - EXIT
fi

if ! images_complete; then
  staging=$(mktemp -d "$dir/.images.XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  started=$(date +%s)
  (cd "$images_src" && go build -trimpath -ldflags "-s -w" -o "$staging/bin/" ./...) >&2
  cp "$dir/bin/coredns" "$dir/bin/traefik" "$staging/bin/"
  "$staging/bin/pack" -list "$images_src/images.txt" -bin "$staging/bin" -out "$staging/images.tar" >&2
  # pack stays: the suite packs the hook server's image with it, from the checkout's dist/ (hook-pod.test.ts).
  find "$staging/bin" -type f ! -name pack -delete
  echo "images $(( $(date +%s) - started ))" >>"$staging/build-times.txt"
  echo "node: test images built in $(( $(date +%s) - started )) s" >&2
  # Older test images (another hash) go: a checkout that still wants them rebuilds them in seconds.
  rm -rf "$images" "$dir"/images-*
  chmod 755 "$staging"
  mv "$staging" "$images"
  trap - EXIT
fi
printf '%s\n%s\n%s\n' "$dir" "$images" "$registry"
