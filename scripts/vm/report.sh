#!/bin/sh
# What the cgroup v2 lane's VM left in build/vm/results: the figures, every test with its
# outcome (skips with their reasons), and the verdict: non-zero when a suite of scripts/vm/tests
# failed or has no exit code (it never ended), or the VM never reached userland.
#   scripts/vm/report.sh VM_DIR TESTS_FILE
set -eu
vm="$1"
tests="$2"
results="$vm/results"
if [ ! -f "$results/boot" ]; then
        echo "lane: FAILED: the VM never reached its userland; its console:" >&2
        tail -n 40 "$vm/console.log" >&2 || true
        exit 1
fi
cat "$results/boot" "$results/slowdown"
echo "lane: codecell check as root in the VM:"
sed 's/^/    /' "$results/check.root"
echo "lane: codecell check as nobody in the VM:"
sed 's/^/    /' "$results/check.nobody"
failed=0
for name in $(grep -v '^ *\(#\|$\)' "$tests" | awk '{ print $1 }'); do
        log="$results/$name.log"
        echo "lane: suite $name:"
        if [ -f "$log" ]; then
                # unittest -v: "test_x (module.Class.test_x) ... ok | skipped '...' | FAIL | ERROR"
                grep -E ' \.\.\. |^    took ' "$log" | sed 's/^/    /' || true
                tail -n 3 "$log" | sed 's/^/    /'
        fi
        rc="$(cat "$results/$name.rc" 2>/dev/null || echo none)"
        if [ "$rc" != 0 ]; then
                echo "lane: FAILED: suite $name (exit $rc); its log:" >&2
                [ -f "$log" ] && grep -v ' \.\.\. ok$' "$log" | tail -n 80 >&2
                failed=1
        fi
done
[ -f "$results/done" ] || { echo "lane: FAILED: the VM did not finish its suites" >&2; failed=1; }
exit "$failed"
