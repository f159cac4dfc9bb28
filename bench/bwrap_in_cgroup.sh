#!/bin/sh
# bubblewrap placed in a cgroup v2 the usual way, for bench/cold.sh's bwrap_cgroup column: a
# fresh cgroup with a memory limit, this shell written into its cgroup.procs, then bwrap run
# there (what `systemd-run --scope -p MemoryMax=` does); afterwards back out and removed.
#   bench/bwrap_in_cgroup.sh BWRAP-ARGS...   (root, on a v2 tree that delegates memory)
set -eu
root=/sys/fs/cgroup
own="$root$(sed -n 's/^0:://p' /proc/self/cgroup)"
cg="$root/codecell-bench-$$"
mkdir "$cg"
echo 128M >"$cg/memory.max"
echo $$ >"$cg/cgroup.procs"
rc=0
bwrap "$@" || rc=$?
echo $$ >"$own/cgroup.procs"
rmdir "$cg"
exit "$rc"
