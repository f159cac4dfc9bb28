#!/bin/sh
# The live cgroup v2 lane (make test-v2, .ci/run): boots Debian 12's own kernel in a VM under
# qemu (software emulation when the host has no KVM), on a unified cgroup v2 tree, over the
# host's / shared read-only, and runs the suite's cgroup-dependent tests there
# (scripts/vm/tests). Prints which tests ran, which were skipped and why; exits non-zero when
# a test failed, a suite did not finish, or the VM did not come up.
#   scripts/vm/lane.sh [BUILD_DIR]      (default build; the binary must be built)
#   CODECELL_VM_BENCH_RUNS=N scripts/vm/lane.sh   bench/cold.sh N there instead (make bench-v2)
#   CODECELL_VM_SCRIPT=FILE scripts/vm/lane.sh    a shell script of your own there instead, as
#                                   root, with $repo, $lane and $out set (a case to look into by hand)
#   CODECELL_VM_MODE=systemd scripts/vm/lane.sh   the systemd lane: the host's systemd as PID 1
#                                   (scripts/vm/systemd-guest.sh, scripts/vm/tests.systemd)
# Figures of the last run: build/vm/results/ (build/vm-systemd/results/ for the systemd lane:
# boot, slowdown, check.*, one log per suite).
set -eu
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$repo/build}" && pwd)"
[ "$build" = "$repo/build" ] || { echo "lane.sh: the VM runs $repo/build only" >&2; exit 2; }
[ -x "$build/codecell" ] && [ -f "$build/tests/probe.so" ] ||
        { echo "lane.sh: build first (make build; cmake --build build --target probe)" >&2; exit 2; }
MODE="${CODECELL_VM_MODE:-plain}"
case "$MODE" in
plain) vm="$build/vm" tests="$repo/scripts/vm/tests" append="" ;;
systemd) vm="$build/vm-systemd" tests="$repo/scripts/vm/tests.systemd"
        append="codecell.mode=systemd systemd.unit=codecell-vm.target systemd.unified_cgroup_hierarchy=1" ;;
*) echo "lane.sh: CODECELL_VM_MODE is plain or systemd" >&2; exit 2 ;;
esac
cache="$build/vm-cache"
# The whole VM's budget, and each suite's inside it: the VM is killed at the first.
VM_LIMIT_S="${CODECELL_VM_LIMIT_S:-1500}"
SUITE_LIMIT_S="${CODECELL_VM_SUITE_LIMIT_S:-900}"

kernel="$("$repo/scripts/vm/kernel.sh" "$cache")"
version="$(ls "$kernel/lib/modules")"
rm -rf "$vm"
mkdir -p "$vm"
"$repo/scripts/vm/initramfs.sh" "$kernel" "$vm/initramfs.cpio.gz"
# The host's side of the slowdown factor: the same command, median of 5, after a warm-up.
host_ms=$(for _ in 0 1 2 3 4 5; do
        s=$(date +%s%N)
        ruby -e 1
        echo $((($(date +%s%N) - s) / 1000000))
done | tail -n 5 | sort -n | sed -n 3p)
# CODECELL_VM_BENCH_RUNS (make bench-v2): bench/cold.sh in the VM instead of the suites.
BENCH_RUNS="${CODECELL_VM_BENCH_RUNS:-0}"
SCRIPT=""
if [ -n "${CODECELL_VM_SCRIPT:-}" ]; then
        SCRIPT="$vm/script.sh"
        cp "$CODECELL_VM_SCRIPT" "$SCRIPT"
fi
cat >"$vm/job" <<JOB
HOST_RUBY_MS=$host_ms
GUEST_DEADLINE_S=$SUITE_LIMIT_S
BENCH_RUNS=$BENCH_RUNS
SCRIPT=$SCRIPT
JOB

# Software emulation (TCG), always: this machine's /dev/kvm opens but a guest on it never
# boots (nested virtualisation without the CPU features qemu asks for), and the lane must run
# the same way wherever CI runs it. The slowdown factor the guest measures covers the cost.
accel=tcg
echo "lane: $MODE, kernel $version, accelerator $accel, ruby -e 1 on the host ${host_ms} ms"
start=$(date +%s)
# -no-reboot with panic=-1: any end of PID 1 (a trap that did not power off) stops qemu too.
# multidevs=remap: the host's / spans several file systems (/proc, /sys...), whose inode
# numbers would otherwise collide in the guest (/proc showed sysfs' files).
timeout -k 10 "$VM_LIMIT_S" qemu-system-x86_64 -accel "$accel" -m 3072 -smp 2 \
        -nodefaults -display none -no-reboot -serial "file:$vm/console.log" \
        -kernel "$kernel/boot/vmlinuz-$version" -initrd "$vm/initramfs.cpio.gz" \
        -append "console=ttyS0 quiet panic=-1 codecell.repo=$repo $append" \
        -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
        -virtfs "local,path=$repo,mount_tag=repo,security_model=none,multidevs=remap" \
        </dev/null >"$vm/qemu.log" 2>&1 &
qemu=$!
# A lane stopped from outside (Ctrl-C, CI's limit) stops its VM: timeout passes TERM on.
trap 'kill "$qemu" 2>/dev/null || true; wait "$qemu" 2>/dev/null || true' INT TERM HUP
rc=0
wait "$qemu" || rc=$?
trap - INT TERM HUP
wall=$(($(date +%s) - start))
echo "lane: VM ran ${wall} s (qemu exit $rc)"
if [ -n "$SCRIPT" ]; then
        cat "$vm/results/script.log" 2>/dev/null || echo "lane: the script left no output" >&2
elif [ "$BENCH_RUNS" -gt 0 ]; then
        cat "$vm/results/boot" "$vm/results/slowdown" "$vm/results/bench" 2>/dev/null || true
        [ "$(cat "$vm/results/bench.rc" 2>/dev/null)" = 0 ] ||
                { echo "lane: FAILED: bench/cold.sh in the VM" >&2; tail -n 20 "$vm/console.log" >&2; exit 1; }
else
        "$repo/scripts/vm/report.sh" "$vm" "$tests" || exit 1
fi
[ "$rc" -eq 0 ] || { echo "lane: FAILED: the VM was stopped after ${VM_LIMIT_S} s, or qemu failed:" >&2
        tail -n 20 "$vm/qemu.log" "$vm/console.log" >&2; exit 1; }
