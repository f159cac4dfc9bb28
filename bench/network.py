#!/usr/bin/env python3
"""Controlled egress (docs/network.md), measured in one run on this machine:

1. an HTTPS GET to a local server (a new connection and TLS handshake each time), from the guest
   of a network cell through the engine's proxy, against the same code on the host going
   straight to the server: the added latency per request;
2. the same with one tunnel kept open for every request (keep-alive inside TLS);
3. what a network policy costs a run that makes no connection: `codecell run` of a cell with
   and without one; and, with CODECELL_BASELINE_BIN naming a build without this feature, what
   the feature costs a cell without a policy (the two binaries interleaved).

Medians; the machine is shared and noisy, so compare the ratios of one run.
Usage: CODECELL_BIN=build/codecell bench/network.py [requests]"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import net_servers  # noqa: E402

BIN = os.environ.get("CODECELL_BIN") or os.path.join(HERE, "..", "build", "codecell")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200

# Times each GET, in ms. HOST and PORT name the server; the guest's HTTPS_PROXY sends it
# through the proxy, the host's has none. KEEP: one connection for them all.
TIMED = r'''
import http.client, os, ssl, time, urllib.parse
ctx = ssl.create_default_context(cafile=CA)
proxy = os.environ.get("HTTPS_PROXY")
def connect():
    if proxy:
        p = urllib.parse.urlsplit(proxy)
        c = http.client.HTTPSConnection(p.hostname, p.port, context=ctx, timeout=10)
        c.set_tunnel(HOST, PORT)
    else:
        c = http.client.HTTPSConnection(HOST, PORT, context=ctx, timeout=10)
    return c
times, kept = [], connect() if KEEP else None
for i in range(N):
    start = time.perf_counter()
    c = kept or connect()
    c.request("GET", "/x")
    c.getresponse().read()
    if not KEEP:
        c.close()
    times.append((time.perf_counter() - start) * 1000)
times
'''


def run_guest(config, code):
    r = subprocess.run([BIN, "run", "--config", config, "--json", "-e", code],
                       capture_output=True, text=True, timeout=600)
    result = json.loads(r.stdout)
    if result["status"] != "ok":
        raise SystemExit("bench/network: the guest failed: %s" % r.stdout[:2000])
    return result["value"]


def run_host(code):
    scope = {}
    exec(compile(code.replace("\ntimes\n", "\n_result = times\n"), "host", "exec"), scope)
    return scope["_result"]


def cli_runs(config, n=15, binary=BIN):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        r = subprocess.run([binary, "run", "--config", config, "-e", "1+1"], capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
        if r.returncode != 0:
            raise SystemExit("bench/network: codecell run failed: %s" % r.stderr[:500])
    return statistics.median(times)


def main():
    work = tempfile.mkdtemp(prefix="codecell-bench-net-")
    os.chmod(work, 0o755)
    ca, leaf, key = net_servers.make_ca(work, ["api.example.test"])
    os.chmod(ca, 0o644)
    server = net_servers.serve(tls=(leaf, key))
    port = server.server_address[1]
    policy = {"allow": ["api.example.test:%d" % port, "api.example.test"],
              "resolve": {"api.example.test": "127.0.0.1:%d" % port},
              "connections": 1024, "bytes": 1 << 40}
    mounts = [{"source": work, "dest": "/ca", "mode": "ro"}]
    limits = {"timeout_ms": 600000, "cpu_ms": 600000}
    net = os.path.join(work, "net.json")
    plain = os.path.join(work, "plain.json")
    with open(net, "w") as f:
        json.dump({"cells": [{"name": "p", "language": "python", "pool": 0, "mounts": mounts,
                              "limits": limits, "network": policy}]}, f)
    with open(plain, "w") as f:
        json.dump({"cells": [{"name": "p", "language": "python", "pool": 0, "mounts": mounts,
                              "limits": limits}]}, f)
    for keep in (False, True):
        head = "CA=%r\nHOST=%r\nPORT=%d\nN=%d\nKEEP=%r\n" % ("/ca/ca.pem", "api.example.test",
                                                             port, N, keep)
        guest = run_guest(net, head + TIMED)
        # The host reaches the server by its address; the certificate names api.example.test.
        host_code = ("CA=%r\nHOST=%r\nPORT=%d\nN=%d\nKEEP=%r\n" % (ca, "127.0.0.1", port, N, keep)
                     + TIMED.replace("ctx = ssl.create_default_context(cafile=CA)",
                                     "ctx = ssl.create_default_context(cafile=CA)\n"
                                     "ctx.check_hostname = False")
                     .replace('proxy = os.environ.get("HTTPS_PROXY")', "proxy = None"))
        direct = run_host(host_code)
        g, d = statistics.median(guest), statistics.median(direct)
        label = "one tunnel, kept" if keep else "a new connection each"
        print("HTTPS GET to a local server, %s, median of %d" % (label, N))
        print("  guest, through the engine's proxy   %7.3f ms" % g)
        print("  host, straight to the server        %7.3f ms" % d)
        print("  added per request                   %7.3f ms  (%.2fx; aim: <= 0.3 ms)"
              % (g - d, g / d))
    p, n = cli_runs(plain), cli_runs(net)
    print("codecell run -e 1+1 (exec, no pool), median of 15")
    print("  cell without a network policy       %7.1f ms" % p)
    print("  cell with one (no connection made)  %7.1f ms  (%.2fx)" % (n, n / p))
    baseline = os.environ.get("CODECELL_BASELINE_BIN")
    if baseline:
        ours, theirs = [], []
        for _ in range(5):  # interleaved, so that the machine's load falls on both alike
            ours.append(cli_runs(plain, 7))
            theirs.append(cli_runs(plain, 7, baseline))
        o, t = statistics.median(ours), statistics.median(theirs)
        print("  cell without a policy, %s   %7.1f ms" % ("baseline build", t))
        print("  cell without a policy, this build   %7.1f ms  (%.2fx)" % (o, o / t))
    server.shutdown()
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
