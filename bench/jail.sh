#!/bin/sh
# Installs the gem (as its README says) into build/bench-gem and runs bench/jail.rb: the
# CodeCell.jail round trip beside the seed agent_jail's mechanism (bench/seed_jail.rb) and a
# bare fork, as root and as nobody. Usage: bench/jail.sh [RUNS [ROUNDS]]
# BENCH_GEMS=dir runs an already installed gem instead (another build of it, to compare).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
gems=${BENCH_GEMS:-}
if [ -z "$gems" ]; then
        gems=$root/build/bench-gem
        rm -rf "$gems"
        mkdir -p "$gems"
        (cd "$root/bindings/ruby" && gem build codecell.gemspec >/dev/null &&
                gem install --local --install-dir "$gems" codecell-*.gem >/dev/null &&
                rm -f codecell-*.gem)
fi
GEM_HOME=$gems GEM_PATH=$gems ruby "$root/bench/jail.rb" "$@"
# As nobody too, where the host allows it (no cgroup there: rlimits instead).
if [ "$(id -u)" -eq 0 ]; then
        chmod -R a+rX "$gems"
        setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp GEM_HOME="$gems" \
                GEM_PATH="$gems" ruby "$root/bench/jail.rb" "$@" || true
fi
