#!/usr/bin/env bash
# Removes everything a real-node run made: teardown.sh HOLDER_PID MNT_NS NET_NS CGROUP_ROOT TEMP_DIR
#   1. every process in the holder's mount or network namespace (the node's daemons, containerd's shims, the test
#      runner) and every process in the pods' cgroups (containers have namespaces of their own): TERM, then KILL
#   2. the holder itself, which takes its namespaces with it (the bridge, veths, iptables rules, ipsets, mounts)
#   3. the pods' cgroups under CGROUP_ROOT in every cgroup hierarchy, deepest first
#   4. the temp dir
# Run by the suite when it stops, and by its reaper when the suite dies first. Safe to run twice.
set -u
holder=$1 mntns=$2 netns=$3 cgroup=${4#/} dir=$5
# Never anything but this suite's own: its cgroup and temp dir carry the suite's prefix.
case "$cgroup" in challenge-hooks-node-?*) ;; *) echo "teardown.sh: refusing cgroup root '$cgroup'" >&2; exit 2 ;; esac
case "$dir" in */challenge-hooks-node-?*) ;; *) echo "teardown.sh: refusing temp dir '$dir'" >&2; exit 2 ;; esac
case "$mntns$netns" in *mnt:\[*net:\[*) ;; *) echo "teardown.sh: namespaces '$mntns' '$netns' are not namespace ids" >&2; exit 2 ;; esac

cgroup_dirs() {
  awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { t = $(i + 1); break } } t == "cgroup" || t == "cgroup2" { print $5 }' /proc/self/mountinfo |
    while read -r mount; do
      [ -d "$mount/$cgroup" ] && echo "$mount/$cgroup"
    done
}
members() {
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$holder" ] && continue
    mnt=$(readlink "$p/ns/mnt" 2>/dev/null) || continue
    net=$(readlink "$p/ns/net" 2>/dev/null) || continue
    if [ "$mnt" = "$mntns" ] || [ "$net" = "$netns" ]; then echo "$pid"; fi
  done
  cgroup_dirs | while read -r d; do find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null; done
}

for signal in TERM TERM TERM KILL KILL KILL KILL; do
  pids=$(members | sort -u | tr '\n' ' ')
  [ -z "${pids// /}" ] && break
  # shellcheck disable=SC2086
  kill "-$signal" $pids 2>/dev/null
  sleep 1
done
if [ -n "$holder" ] && kill -0 "$holder" 2>/dev/null; then
  kill -KILL "$holder" 2>/dev/null
  for _ in $(seq 50); do grep -q '^State:.*Z' "/proc/$holder/status" 2>/dev/null || [ ! -e "/proc/$holder" ] && break; sleep 0.1; done
fi
# A cgroup goes only once its last process has exited: a few tries.
for _ in $(seq 20); do
  left=$(cgroup_dirs)
  [ -z "$left" ] && break
  echo "$left" | while read -r d; do find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done
  [ -z "$(cgroup_dirs)" ] && break
  sleep 0.5
done
[ -n "$dir" ] && rm -rf "$dir"
exit 0
