#!/bin/sh
# The systemd lane inside its VM: the host's systemd 252 booted as PID 1 from an overlay over the
# host's / (scripts/vm/init) and runs this as codecell-vm.service. Measures the slowdown, then
# runs scripts/vm/tests.systemd (the shipped codecell.socket and codecell.service, and a user's
# own systemd) and leaves each suite's log and exit code in build/vm-systemd/results/. The unit
# powers the VM off when this ends, whatever happens.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="$repo/build/vm-systemd/results"
. "$repo/build/vm-systemd/job" # HOST_RUBY_MS, GUEST_DEADLINE_S (scripts/vm/lane.sh writes it)
mkdir -p "$out"
echo "codecell-vm: systemd started the lane after $(cut -d' ' -f1 /proc/uptime) s" | tee "$out/boot"
systemctl --version | head -n 1 | tee "$out/systemd"

. "$repo/scripts/vm/common.sh"
measure_slowdown
make_lane
# As the lane's own unit (not delegated) and as nobody: what check says outside the service.
"$lane/codecell" check >"$out/check.root" 2>&1
setpriv --reuid=65534 --regid=65534 --clear-groups "$lane/codecell" check >"$out/check.nobody" 2>&1
run_suites "$repo/scripts/vm/tests.systemd"
echo "codecell-vm: done at $(cut -d' ' -f1 /proc/uptime) s" | tee "$out/done"
rm -rf "$lane"
