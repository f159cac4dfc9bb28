#!/bin/sh
# Runs the end-to-end suite again as an unprivileged user (nobody), the way most users run
# codecell: no cgroup to write, no idmapped mounts, everything else the same.
set -eu
bin="$1"
shift # then: the C test programs to run as well, linked against libcodecell.so
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: already running unprivileged; the e2e test covers this case"
        exit 77
fi
dir="$(mktemp -d /tmp/codecell-unprivileged-XXXXXX)"
trap 'rm -rf "$dir"' EXIT
# The build tree may sit under a folder nobody cannot enter (/root): copy what the suite
# needs. The binary embeds its prelude, so it runs from anywhere.
cp "$bin" "$dir/codecell"
cp "$here"/*.py "$here"/expected_description.txt "$here"/../security/*.py "$dir/"
cp "$CODECELL_PROBE" "$dir/probe.so"
cp -r "$here/tools" "$dir/tools"
cp -r "$here/../../guest" "$dir/guest"
mkdir -p "$dir/examples"
cp -r "$here/../../examples/data" "$here/../../examples/tools" "$here/../../examples/tools.json" "$here/../../examples/cells.json" "$dir/examples/"
cp -P "$(dirname "$bin")"/libcodecell.so* "$dir/"
cp "$here/../../packaging/nginx/codecell.conf" "$dir/nginx-codecell.conf"
for program in "$@"; do
        cp "$program" "$dir/"
done
chmod -R a+rX "$dir"
cd "$dir"
as_nobody() {
        setpriv --reuid=65534 --regid=65534 --clear-groups \
                env -i PATH=/usr/bin:/bin HOME="$dir" PYTHONDONTWRITEBYTECODE=1 \
                LD_LIBRARY_PATH="$dir" CODECELL_BIN="$dir/codecell" \
                CODECELL_EXAMPLES="$dir/examples" CODECELL_PROBE="$dir/probe.so" \
                CODECELL_GUEST="$dir/guest" CODECELL_NGINX_CONF="$dir/nginx-codecell.conf" "$@"
}
for program in "$@"; do
        for lang in ruby python; do
                echo "== $(basename "$program") $lang as nobody"
                as_nobody "$dir/$(basename "$program")" "$lang"
        done
done
echo "== test_run.py test_tools.py test_mcp.py test_config.py test_libraries.py test_answers.py test_http_guard.py test_hints.py test_network_wall.py test_network.py test_network_escape.py test_network_tls.py, security tests as nobody"
as_nobody python3 -m unittest test_run test_tools test_mcp test_config test_libraries test_answers \
        test_http_guard test_hints test_network_wall test_network test_network_escape test_network_tls \
        test_probe test_hostile
echo "== security tests as nobody, sandboxes forked from a zygote"
as_nobody env CODECELL_START=fork python3 -m unittest test_probe test_hostile
