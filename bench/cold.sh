#!/usr/bin/env bash
# Cold start: median wall time of one `codecell run -e '1+1'` beside the bare interpreter and
# beside bubblewrap with a comparable lockdown, measured in the same run, interleaved, so the
# machine's noise hits every column alike. Usage: bench/cold.sh [RUNS] (default 30).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"
bin=${CODECELL_BIN:-build/codecell}
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 2; }

declare -A cmds
order=(bare bare_json bwrap codecell codecell_fork)
cmds[bare]="ruby --disable-gems -e 1+1"
# The prelude loads json before it is ready: this is the interpreter work codecell cannot skip.
cmds[bare_json]="ruby --disable-gems -e require('json');1+1"
cmds[bwrap]="bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --hostname codecell \
 --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin \
 --proc /proc --dev /dev --tmpfs /tmp --tmpfs /work --chdir /work \
 ruby --disable-gems -e require('json');1+1"
cmds[codecell]="$bin run -e 1+1"
cmds[codecell_fork]="$bin run --start fork -e 1+1"

# On a cgroup v2 tree whose root cgroup we may write (the v2 lane's VM, as root): bubblewrap
# placed in a memory-limited cgroup the usual way, beside codecell's own cgroup, which on v2
# its init is born in (docs/operations.md).
bwrap_args="${cmds[bwrap]#bwrap }"
cmds[bwrap_cgroup]="bench/bwrap_in_cgroup.sh $bwrap_args"
if [ "$(id -u)" -eq 0 ] && [ "$(sed -n 's/^0:://p' /proc/self/cgroup)" = / ] &&
        grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
        order+=(bwrap_cgroup)
fi

if ! command -v bwrap >/dev/null; then
        echo "bwrap not installed: skipping those columns" >&2
        order=(bare bare_json codecell codecell_fork)
fi

declare -A samples
for name in "${order[@]}"; do ${cmds[$name]} >/dev/null 2>&1 || true; done # warm the page cache
for ((i = 0; i < runs; i++)); do
        for name in "${order[@]}"; do
                start=$EPOCHREALTIME
                # shellcheck disable=SC2086
                ${cmds[$name]} >/dev/null 2>&1
                end=$EPOCHREALTIME
                samples[$name]+="$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", (b - a) * 1000 }') "
        done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf 'cold start, %d runs each, interleaved (%s, %s)\n' "$runs" "$(uname -r)" "$(id -un)"
printf '%-10s %12s %12s\n' "how" "median ms" "x bare"
base=$(echo "${samples[bare]}" | median)
for name in "${order[@]}"; do
        m=$(echo "${samples[$name]}" | median)
        printf '%-10s %12.2f %12.2f\n' "$name" "$m" "$(awk -v m="$m" -v b="$base" 'BEGIN { print m / b }')"
done
json=$(echo "${samples[bare_json]}" | median)
cc=$(echo "${samples[codecell]}" | median)
printf 'sandbox overhead (codecell - bare_json): %.2f ms\n' "$(awk -v a="$cc" -v b="$json" 'BEGIN { print a - b }')"
if [ -n "${samples[bwrap_cgroup]:-}" ]; then
        bc=$(echo "${samples[bwrap_cgroup]}" | median)
        printf 'codecell / bwrap in a cgroup v2: %.2f\n' "$(awk -v a="$cc" -v b="$bc" 'BEGIN { print a / b }')"
fi
