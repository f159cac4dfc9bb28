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

# The slowdown factor: `ruby -e 1`, median of 5, here against the host's (same command).
ruby_ms() {
        for _ in 1 2 3 4 5; do
                s=$(date +%s%N)
                ruby -e 1
                echo $((($(date +%s%N) - s) / 1000000))
        done | sort -n | sed -n 3p
}
ruby_ms >/dev/null # warm the 9p cache first, as the host's page cache is
guest_ms=$(ruby_ms)
CODECELL_SLOWDOWN=$(awk -v g="$guest_ms" -v h="$HOST_RUBY_MS" \
        'BEGIN { f = g / (h > 0 ? h : 1); printf "%.1f", f < 1 ? 1 : f }')
export CODECELL_SLOWDOWN
echo "ruby -e 1: ${guest_ms} ms here, ${HOST_RUBY_MS} ms on the host: slowdown $CODECELL_SLOWDOWN" |
        tee "$out/slowdown"

# What the suites need, copied into this VM's tmpfs and opened to every user: the repository
# may sit under a folder nobody cannot enter (/root), and 9p is slow to look up.
lane="$(mktemp -d /tmp/codecell-lane-XXXXXX)"
cp "$repo/build/codecell" "$repo/build/tests/probe.so" "$lane/"
cp "$repo"/tests/integration/*.py "$repo"/tests/integration/expected_description.txt "$lane/"
cp "$repo"/tests/security/*.py "$repo/scripts/vm/run_tests.py" "$lane/"
cp -r "$repo/tests/integration/tools" "$repo/guest" "$lane/"
mkdir -p "$lane/examples"
cp -r "$repo/examples/data" "$repo/examples/tools" "$repo/examples/tools.json" \
        "$repo/examples/cells.json" "$lane/examples/"
chmod -R a+rX "$lane"
"$lane/codecell" check >"$out/check.root" 2>&1
setpriv --reuid=65534 --regid=65534 --clear-groups "$lane/codecell" check >"$out/check.nobody" 2>&1

# One suite: NAME USER START MODULES... with the -k patterns of scripts/vm/tests
# (run_tests.py: unittest -v, and each test's wall time).
run_suite() {
        name="$1" user="$2" start="$3"
        shift 3
        as=""
        [ "$user" = nobody ] && as="setpriv --reuid=65534 --regid=65534 --clear-groups"
        echo "codecell-vm: suite $name ($user, $start) at $(cut -d' ' -f1 /proc/uptime) s"
        (cd "$lane" && $as env -i PATH="$PATH" HOME="$lane" PYTHONDONTWRITEBYTECODE=1 \
                CODECELL_BIN="$lane/codecell" CODECELL_PROBE="$lane/probe.so" \
                CODECELL_EXAMPLES="$lane/examples" CODECELL_GUEST="$lane/guest" \
                CODECELL_START="$start" CODECELL_SLOWDOWN="$CODECELL_SLOWDOWN" \
                timeout -k 10 "$GUEST_DEADLINE_S" python3 "$lane/run_tests.py" "$@") >"$out/$name.log" 2>&1
        echo $? >"$out/$name.rc"
}
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
# scripts/vm/tests: "NAME USER START MODULE... -k PATTERN..." per line, # for comments.
grep -v '^ *\(#\|$\)' "$repo/scripts/vm/tests" | while read -r line; do
        # shellcheck disable=SC2086
        run_suite $line </dev/null # not this loop's list
done
echo "codecell-vm: done at $(cut -d' ' -f1 /proc/uptime) s" | tee "$out/done"
rm -rf "$lane"
