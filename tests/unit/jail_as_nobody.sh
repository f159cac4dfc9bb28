#!/bin/sh
# Runs the jail's C test as nobody, the way most users call it: no cgroup (rlimits instead),
# the child's uid the caller's own. The build tree may sit where nobody cannot enter (/root):
# the program and the library are copied first.
set -eu
program=$1
if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: already running unprivileged; jail_c covers this case"
        exit 77
fi
dir=$(mktemp -d /tmp/codecell-jail-nobody-XXXXXX)
trap 'rm -rf "$dir"' EXIT
cp "$program" "$dir/"
cp -P "$(dirname "$program")"/../libcodecell.so* "$dir/"
chmod -R a+rX "$dir"
cd "$dir"
setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin \
        LD_LIBRARY_PATH="$dir" "$dir/$(basename "$program")"
