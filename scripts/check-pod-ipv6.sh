#!/usr/bin/env bash
# Does a pod of the challenges namespace get an IPv6 address? Run it against your own cluster, once per kind of
# node that runs challenges (docs/install.md, "Pods without IPv6").
#
#   scripts/check-pod-ipv6.sh [--image IMAGE] [--node NODE] [--timeout SECONDS] NAMESPACE
#
# Starts one throwaway pod in NAMESPACE (the Restricted profile's settings, no service account token, a small
# footprint), which prints /proc/net/if_inet6: the kernel's list of the pod's IPv6 addresses, link-local ones
# included. Then deletes it. IMAGE is any image with `cat` on its PATH (default busybox:1.37: use your registry's
# mirror if nodes cannot pull from Docker Hub); NODE pins the pod to one node (default: where the scheduler puts it).
#
# Exit status and last line:
#   0  "ok: ..."    no IPv6 address in the pod (IPv6 switched off in pod namespaces, or not in the kernel at all)
#   1  "IPv6: ..."  the pod has IPv6 addresses, listed above it: NetworkPolicy holds only if your policy engine
#                   enforces IPv6, link-local traffic included (docs/security.md, "IPv6 in pods")
#   2  the check could not run (the pod's events or log say why)
# kubectl comes from PATH (or $KUBECTL) with its usual configuration (KUBECONFIG, current context).
set -euo pipefail
kubectl=${KUBECTL:-kubectl}
image=busybox:1.37
node=""
timeout=120
usage() {
  echo "usage: $0 [--image IMAGE] [--node NODE] [--timeout SECONDS] NAMESPACE" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --image) [ $# -ge 2 ] || usage; image=$2; shift 2 ;;
    --node) [ $# -ge 2 ] || usage; node=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || usage; timeout=$2; shift 2 ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || usage
namespace=$1
case $timeout in '' | *[!0-9]*) usage ;; esac

node_field=""
[ -z "$node" ] || node_field="\"nodeName\": \"$node\","
# Restricted: not root, no privilege escalation, no capability, the runtime's seccomp profile. Exec form, so
# the image needs no shell.
pod=$("$kubectl" create -n "$namespace" -o name -f - <<EOF
{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": { "generateName": "ipv6-check-", "labels": { "app.kubernetes.io/name": "ipv6-check" } },
  "spec": {
    $node_field
    "restartPolicy": "Never",
    "automountServiceAccountToken": false,
    "enableServiceLinks": false,
    "terminationGracePeriodSeconds": 1,
    "securityContext": {
      "runAsNonRoot": true, "runAsUser": 65534, "runAsGroup": 65534, "seccompProfile": { "type": "RuntimeDefault" }
    },
    "containers": [
      {
        "name": "check",
        "image": "$image",
        "command": ["cat", "/proc/net/if_inet6"],
        "securityContext": {
          "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": { "drop": ["ALL"] }
        },
        "resources": {
          "requests": { "cpu": "10m", "memory": "16Mi", "ephemeral-storage": "8Mi" },
          "limits": { "cpu": "100m", "memory": "32Mi", "ephemeral-storage": "8Mi" }
        }
      }
    ]
  }
}
EOF
)
trap '"$kubectl" delete -n "$namespace" "$pod" --wait=false --ignore-not-found >/dev/null 2>&1 || true' EXIT

phase=""
for _ in $(seq 1 "$timeout"); do
  phase=$("$kubectl" get -n "$namespace" "$pod" -o 'jsonpath={.status.phase}')
  case $phase in Succeeded | Failed) break ;; esac
  sleep 1
done
log=$("$kubectl" logs -n "$namespace" "$pod" 2>&1 || true)
on=$("$kubectl" get -n "$namespace" "$pod" -o 'jsonpath={.spec.nodeName}')
case $phase in
  Succeeded)
    if [ -z "$log" ]; then
      echo "ok: a pod of $namespace on node $on has no IPv6 address (IPv6 is off in its network namespace)"
      exit 0
    fi
    # /proc/net/if_inet6: ADDRESS(32 hex) IFINDEX PREFIXLEN SCOPE FLAGS NAME
    while read -r hex _ prefix _ _ name; do
      [ ${#hex} -eq 32 ] || continue
      echo "  $name $(echo "$hex" | sed 's/..../&:/g; s/:$//')/$((16#$prefix))"
    done <<<"$log"
    echo "IPv6: a pod of $namespace on node $on has IPv6 addresses; NetworkPolicy holds only if the policy engine enforces IPv6, link-local included"
    exit 1
    ;;
  Failed)
    if [[ $log == *"No such file"* ]]; then
      echo "ok: a pod of $namespace on node $on has no IPv6 address (the kernel has no IPv6)"
      exit 0
    fi
    echo "the check pod failed: $log" >&2
    exit 2
    ;;
  *)
    echo "the check pod did not finish in ${timeout} s (phase '${phase}'); its events:" >&2
    "$kubectl" get events -n "$namespace" --field-selector "involvedObject.name=${pod#pod/}" >&2 || true
    exit 2
    ;;
esac
