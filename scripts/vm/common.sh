# What both guests of the VM lanes share (scripts/vm/guest.sh, scripts/vm/systemd-guest.sh
# source it): the slowdown factor, the lane folder the suites run from, one suite's run.
# Needs $repo and $out (the results folder) set, and build/vm/job read (HOST_RUBY_MS,
# GUEST_DEADLINE_S).

# The slowdown factor: `ruby -e 1`, median of 5, here against the host's (same command).
ruby_ms() {
        for _ in 1 2 3 4 5; do
                s=$(date +%s%N)
                ruby -e 1
                echo $((($(date +%s%N) - s) / 1000000))
        done | sort -n | sed -n 3p
}
measure_slowdown() {
        ruby_ms >/dev/null # warm the 9p cache first, as the host's page cache is
        guest_ms=$(ruby_ms)
        CODECELL_SLOWDOWN=$(awk -v g="$guest_ms" -v h="$HOST_RUBY_MS" \
                'BEGIN { f = g / (h > 0 ? h : 1); printf "%.1f", f < 1 ? 1 : f }')
        export CODECELL_SLOWDOWN
        echo "ruby -e 1: ${guest_ms} ms here, ${HOST_RUBY_MS} ms on the host: slowdown $CODECELL_SLOWDOWN" |
                tee "$out/slowdown"
}

# What the suites need, copied into this VM's tmpfs and opened to every user: the repository
# may sit under a folder nobody cannot enter (/root), and 9p is slow to look up. Sets $lane.
make_lane() {
        lane="$(mktemp -d /tmp/codecell-lane-XXXXXX)"
        cp "$repo/build/codecell" "$repo/build/tests/probe.so" "$lane/"
        cp "$repo"/tests/integration/*.py "$repo"/tests/integration/expected_description.txt "$lane/"
        cp "$repo"/tests/security/*.py "$repo"/tests/vm/*.py "$repo/scripts/vm/run_tests.py" "$lane/"
        cp -r "$repo/tests/integration/tools" "$repo/guest" "$lane/"
        mkdir -p "$lane/examples"
        cp -r "$repo/examples/data" "$repo/examples/tools" "$repo/examples/tools.json" \
                "$repo/examples/cells.json" "$lane/examples/"
        chmod -R a+rX "$lane"
}

# A cgroup v2 subtree delegated to nobody, as systemd's Delegate=yes gives one to a service's
# user: /sys/fs/cgroup/delegated with memory, pids and cpu for its children, its files nobody's;
# the suite runs in its leaf runner/, and each test starts its engines in cgroups of their own
# beside it.
delegated=/sys/fs/cgroup/delegated
delegate_subtree() {
        [ -d "$delegated/runner" ] && return 0
        mkdir -p "$delegated/runner"
        echo "+memory +pids +cpu" >"$delegated/cgroup.subtree_control"
        for dir in "$delegated" "$delegated/runner"; do
                chown 65534:65534 "$dir" "$dir/cgroup.procs" "$dir/cgroup.subtree_control" \
                        "$dir/cgroup.threads"
        done
}

# COMMAND... as USER: root, nobody, or delegated (nobody, in the delegated subtree's runner/).
as_user() {
        user="$1"
        shift
        case "$user" in
        root) "$@" ;;
        nobody) setpriv --reuid=65534 --regid=65534 --clear-groups "$@" ;;
        delegated)
                delegate_subtree
                # shellcheck disable=SC2016 # $$ and $0 are the inner shell's
                sh -c 'echo $$ >"$0/cgroup.procs" &&
                        exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"' \
                        "$delegated/runner" "$@"
                ;;
        *) echo "codecell-vm: no such user kind: $user" >&2 && return 2 ;;
        esac
}

# One suite: NAME USER START MODULES... with the -k patterns of a tests file
# (run_tests.py: unittest -v, and each test's wall time).
run_suite() {
        name="$1" user="$2" start="$3"
        shift 3
        echo "codecell-vm: suite $name ($user, $start) at $(cut -d' ' -f1 /proc/uptime) s"
        (cd "$lane" && as_user "$user" env -i PATH="$PATH" HOME="$lane" PYTHONDONTWRITEBYTECODE=1 \
                CODECELL_BIN="$lane/codecell" CODECELL_PROBE="$lane/probe.so" \
                CODECELL_EXAMPLES="$lane/examples" CODECELL_GUEST="$lane/guest" \
                CODECELL_REPO="$repo" CODECELL_START="$start" CODECELL_LANE_USER="$user" CODECELL_SLOWDOWN="$CODECELL_SLOWDOWN" \
                timeout -k 10 "$GUEST_DEADLINE_S" python3 "$lane/run_tests.py" "$@") >"$out/$name.log" 2>&1
        echo $? >"$out/$name.rc"
}

# Every suite of a tests file: "NAME USER START MODULE... -k PATTERN..." per line, # comments.
run_suites() {
        grep -v '^ *\(#\|$\)' "$1" | while read -r line; do
                # shellcheck disable=SC2086
                run_suite $line </dev/null # not this loop's list
        done
}
