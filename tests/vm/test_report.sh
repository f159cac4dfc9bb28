#!/bin/sh
# The cgroup v2 lane's verdict (scripts/vm/report.sh) on results made by hand: it passes only
# when the VM reached its userland, every suite of the list ended with exit code 0 and the VM
# said it was done; otherwise it fails, naming why.
set -eu
report="$(cd "$(dirname "$0")/../.." && pwd)/scripts/vm/report.sh"
dir="$(mktemp -d /tmp/codecell-lane-report-XXXXXX)"
trap 'rm -rf "$dir"' EXIT
printf '# a comment\none root exec test_run -k x\ntwo nobody exec test_run -k y\n' >"$dir/tests"
results() {
        rm -rf "$dir/vm"
        mkdir -p "$dir/vm/results"
        cd "$dir/vm/results"
        echo "codecell-vm: userland after 7 s" >boot
        echo "slowdown 40" >slowdown
        echo "cgroup yes" >check.root
        echo "cgroup MISSING" >check.nobody
        printf 'test_a (test_run.A.test_a) ... ok\n    took 1.0 s: test_run.A.test_a\n\nOK\n' >one.log
        echo 0 >one.rc
        printf "test_b (test_run.B.test_b) ... skipped 'no cgroup'\n\nOK (skipped=1)\n" >two.log
        echo 0 >two.rc
        echo "done" >done
        cd - >/dev/null
}
expect() { # expect PASS|FAIL WORDS-IN-OUTPUT what
        want="$1" words="$2" what="$3"
        if out="$("$report" "$dir/vm" "$dir/tests" 2>&1)"; then got=PASS; else got=FAIL; fi
        if [ "$got" != "$want" ] || ! printf '%s\n' "$out" | grep -q -- "$words"; then
                echo "FAIL: $what: expected $want with \"$words\", got $got:"
                printf '%s\n' "$out"
                exit 1
        fi
        echo "ok: $what"
}
results
expect PASS "skipped 'no cgroup'" "every suite passed; the skip and its reason are printed"
results
echo 1 >"$dir/vm/results/two.rc"
expect FAIL "suite two (exit 1)" "a suite that failed"
results
rm "$dir/vm/results/two.rc"
expect FAIL "suite two (exit none)" "a suite that never ended"
results
rm "$dir/vm/results/done"
expect FAIL "did not finish its suites" "a VM that stopped before the end"
results
rm "$dir/vm/results/boot"
expect FAIL "never reached its userland" "a VM that never booted"
