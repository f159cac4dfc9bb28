#!/bin/sh
# The cgroup v2 lane inside its VM (scripts/vm/init runs it after switch_root; PID 1 here).
# Measures how much slower than the host this emulated machine is, then runs the suite's
# cgroup-dependent tests (scripts/vm/tests) as root and as nobody, in both start modes, and
# leaves each suite's log and exit code in build/vm/results/ of the shared repository.
# Whatever happens, it ends by powering the VM off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="$repo/build/vm/results"
poweroff_now() {
        sync
        echo o >/proc/sysrq-trigger
        sleep 60 # the power-off is asynchronous; PID 1 must not exit meanwhile (a panic)
}
trap poweroff_now EXIT
. "$repo/build/vm/job" # HOST_RUBY_MS, GUEST_DEADLINE_S, BENCH_RUNS (scripts/vm/lane.sh writes it)
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
hostname codecell-v2
busybox ip link set lo up
mkdir -p "$out"
echo "codecell-vm: userland after $(cut -d' ' -f1 /proc/uptime) s" | tee "$out/boot"

. "$repo/scripts/vm/common.sh"
measure_slowdown
make_lane
"$lane/codecell" check >"$out/check.root" 2>&1
setpriv --reuid=65534 --regid=65534 --clear-groups "$lane/codecell" check >"$out/check.nobody" 2>&1

# CODECELL_VM_SCRIPT: a script of one's own instead of the suites.
if [ -n "${SCRIPT:-}" ]; then
        export lane out repo GUEST_DEADLINE_S
        timeout -k 10 "$GUEST_DEADLINE_S" sh "$SCRIPT" </dev/null >"$out/script.log" 2>&1
        echo "codecell-vm: done at $(cut -d' ' -f1 /proc/uptime) s" | tee "$out/done"
        rm -rf "$lane"
        exit 0
fi
# make bench-v2: bench/cold.sh instead of the suites (BENCH_RUNS runs of each column).
if [ "${BENCH_RUNS:-0}" -gt 0 ]; then
        echo "codecell-vm: bench/cold.sh $BENCH_RUNS at $(cut -d' ' -f1 /proc/uptime) s"
        CODECELL_BIN="$lane/codecell" timeout -k 10 "$GUEST_DEADLINE_S" \
                bash "$repo/bench/cold.sh" "$BENCH_RUNS" </dev/null >"$out/bench" 2>&1
        echo $? >"$out/bench.rc"
        echo "codecell-vm: done at $(cut -d' ' -f1 /proc/uptime) s" | tee "$out/done"
        rm -rf "$lane"
        exit 0
fi
run_suites "$repo/scripts/vm/tests"
echo "codecell-vm: done at $(cut -d' ' -f1 /proc/uptime) s" | tee "$out/done"
rm -rf "$lane"
