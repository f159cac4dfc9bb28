#!/usr/bin/env python3
"""Controlled egress (docs/network.md), measured in one run on this machine:

1. an HTTPS GET to a local server (a new connection and TLS handshake each time), from the guest
   of a network cell through the engine's proxy, against the same code on the host going
   straight to the server: the added latency per request; beside it, a peer: the same code on
   the host through tinyproxy (Debian's), a plain forward proxy with no sandbox around it;
2. the same with one tunnel kept open for every request (keep-alive inside TLS);
3. the same as 1 for a host whose TLS the engine terminates to add its headers (terminate_tls:
   two handshakes, the guest's with the engine and the engine's with the server);
4. what a network policy costs a run that makes no connection: `codecell run` of a cell with
   and without one; and, with CODECELL_BASELINE_BIN naming a build without this feature, what
   the feature costs a cell without a policy (the two binaries interleaved).

Medians; the machine is shared and noisy, so the guest's and the host's requests are measured in
alternating rounds, and the added latency is the median of the rounds' differences.
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


def start_tinyproxy(work):
    """tinyproxy in the foreground on a free loopback port: (its process, its URL), or None
    when it is not installed (scripts/bootstrap installs it)."""
    import shutil
    import socket
    if not shutil.which("tinyproxy"):
        print("(tinyproxy is not installed: no peer proxy measured)")
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    conf = os.path.join(work, "tinyproxy.conf")
    with open(conf, "w") as f:
        f.write("Port %d\nListen 127.0.0.1\nTimeout 60\nMaxClients 1024\nLogLevel Critical\n"
                % free)
    proc = subprocess.Popen(["tinyproxy", "-d", "-c", conf], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", free), timeout=1).close()
            return proc, "http://127.0.0.1:%d" % free
        except OSError:
            time.sleep(0.05)
    proc.kill()
    proc.wait()
    print("(tinyproxy did not start: no peer proxy measured)")
    return None


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
    tls = os.path.join(work, "tls.json")
    with open(tls, "w") as f:
        json.dump({"cells": [{"name": "p", "language": "python", "pool": 0, "limits": limits,
                              "network": dict(policy, headers={"api.example.test": {
                                  "Authorization": "Bearer ${CODECELL_BENCH_TOKEN}"}},
                                  terminate_tls=True)}]}, f)
    os.environ["CODECELL_BENCH_TOKEN"] = "bench"
    os.environ["SSL_CERT_FILE"] = ca  # the engine's trust store: the server's test CA
    cases = (("a new connection each", net, "/ca/ca.pem", False),
             ("one tunnel, kept", net, "/ca/ca.pem", True),
             ("the engine's TLS (terminate_tls), a new connection each", tls,
              "/etc/ssl/codecell/ca-bundle.pem", False))
    rounds = 5
    peer = start_tinyproxy(work)

    def host_code(keep, n, through=None):
        # The host reaches the server by its address; the certificate names api.example.test.
        return ("CA=%r\nHOST=%r\nPORT=%d\nN=%d\nKEEP=%r\n" % (ca, "127.0.0.1", port, n, keep)
                + TIMED.replace("ctx = ssl.create_default_context(cafile=CA)",
                                "ctx = ssl.create_default_context(cafile=CA)\n"
                                "ctx.check_hostname = False")
                .replace('proxy = os.environ.get("HTTPS_PROXY")', "proxy = %r" % through))

    for label, config, guest_ca, keep in cases:
        guest, direct, diffs, peer_diffs = [], [], [], []
        for _ in range(rounds):
            head = "CA=%r\nHOST=%r\nPORT=%d\nN=%d\nKEEP=%r\n" % (
                guest_ca, "api.example.test", port, max(N // rounds, 1), keep)
            g = run_guest(config, head + TIMED)
            d = run_host(host_code(keep, max(N // rounds, 1)))
            guest += g
            direct += d
            diffs.append(statistics.median(g) - statistics.median(d))
            if peer and config == net:
                t = run_host(host_code(keep, max(N // rounds, 1), peer[1]))
                peer_diffs.append(statistics.median(t) - statistics.median(d))
        g, d = statistics.median(guest), statistics.median(direct)
        print("HTTPS GET to a local server, %s, median of %d in %d rounds"
              % (label, len(guest), rounds))
        print("  guest, through the engine's proxy   %7.3f ms" % g)
        print("  host, straight to the server        %7.3f ms" % d)
        print("  added per request                   %7.3f ms  (%.2fx; rounds: %s; aim for a "
              "proxied request: <= 0.3 ms)" % (statistics.median(diffs), g / d,
                                               " ".join("%.2f" % x for x in diffs)))
        if peer_diffs:
            print("  peer: host through tinyproxy, added %7.3f ms  (rounds: %s; it relays "
                  "without TCP_NODELAY, so a small write waits for the peer's delayed ACK)"
                  % (statistics.median(peer_diffs), " ".join("%.2f" % x for x in peer_diffs)))
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
    if peer:
        peer[0].terminate()
        peer[0].wait()
    server.shutdown()
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
