"""A private mount and network namespace for this test process, in which names resolve as the
test says: /etc/resolv.conf (bind-mounted) names 127.0.0.1, where a DNS server of the test's
(dns_server.py) answers, /etc/hosts knows only localhost, and its lo carries the addresses
the tests serve: some the engine's proxy calls public, some it must refuse. Nothing routes out of the namespace, so a "public" address here reaches only the test's own server.
The addresses are on the namespace's lo (a dummy interface needs a kernel module that hosts
may lack); what matters to the proxy is the address, not the interface.

enter() moves the whole process (it must still have one thread: namespaces are per thread, and
the threads made after it inherit them) and every process it starts afterwards, codecell
included. It needs root; it raises unittest.SkipTest with the reason when it cannot be made."""
import ctypes
import os
import socket
import subprocess
import tempfile
import threading
import time
import unittest

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000

# Public by src/lib/egress/egress_addr.c's tables (198.18.0.0/15 is refused, 198.20/16 is not;
# 2001:db8::/32 is refused, 2001:db9:: is not).
PUBLIC4 = "198.20.0.10"
PUBLIC6 = "2001:db9::10"
PRIVATE4 = "10.20.0.10"
METADATA4 = "169.254.169.254"
METADATA6 = "fd00:ec2::254"  # AWS's IPv6 metadata address
LINKLOCAL4 = "169.254.10.10"
CGNAT4 = "100.64.0.10"
ON_LO = (PUBLIC4 + "/32", PUBLIC6 + "/128", PRIVATE4 + "/32", METADATA4 + "/32",
         METADATA6 + "/128", LINKLOCAL4 + "/32", CGNAT4 + "/32")


def _run(*argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise unittest.SkipTest("cannot set up the test's namespace: %s: %s"
                                % (" ".join(argv), r.stderr.strip()))


def enter():
    """Unshares, mounts and configures; returns the folder holding the mounted files (gone
    with the namespace's process)."""
    if os.geteuid() != 0:
        raise unittest.SkipTest("a private network namespace with a resolver of the test's "
                                "needs root (unshare --mount --net)")
    if threading.active_count() != 1:
        raise unittest.SkipTest("the process already has threads: they would stay outside")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS | CLONE_NEWNET) != 0:
        raise unittest.SkipTest("unshare(CLONE_NEWNS|CLONE_NEWNET): "
                                + os.strerror(ctypes.get_errno()))
    _run("mount", "--make-rprivate", "/")
    folder = tempfile.mkdtemp(prefix="codecell-resolve-")
    files = {# A question unanswered keeps getaddrinfo for a minute (the
             # longest wait glibc allows, twice), far past a test's run.
             "resolv.conf": "nameserver 127.0.0.1\noptions timeout:30 attempts:2\n",
             "hosts": "127.0.0.1 localhost\n::1 localhost\n",
             "nsswitch.conf": "hosts: files dns\n"}
    for name, text in files.items():
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o644)
        _run("mount", "--bind", path, os.path.join("/etc", name))
    _run("ip", "link", "set", "lo", "up")
    for address in ON_LO:
        _run("ip", "addr", "add", address, "dev", "lo")
    return folder


def listening(host, port):
    """A socket bound and listening on (host, port), IPv4 or IPv6 by the host's form; an
    IPv6 address on an interface may take a moment to be usable, so binding is retried."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((host, port))
    s.listen(64)
    return s


class Trap:
    """Listeners on addresses nothing may reach: each accepted connection is recorded (its
    local address and port, and its peer) and closed. reached() says what came in."""

    def __init__(self, addresses, ports=(80, 443)):
        self.seen = []
        self.lock = threading.Lock()
        self.socks = [listening(a, p) for a in addresses for p in ports]
        for s in self.socks:
            threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, s):
        while True:
            try:
                conn, _ = s.accept()
            except OSError:
                return
            with self.lock:
                self.seen.append((conn.getsockname()[:2], conn.getpeername()[:2]))
            conn.close()

    def reached(self, timeout=60):
        """The (address, port) of every connection that came in since the last call, but the
        trap's own probes. Each listener is probed first and the probe waited for: a listener
        accepts in order, so whatever reached it before has been recorded by then (and a
        listener that records nothing fails here, not silently)."""
        probes = set()
        for s in self.socks:
            c = socket.create_connection(s.getsockname()[:2], timeout=10)
            probes.add(c.getsockname()[:2])
            c.close()
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                peers = {peer for _, peer in self.seen}
                if probes <= peers:
                    found = [local for local, peer in self.seen if peer not in probes]
                    self.seen = []
                    return found
            if time.monotonic() > deadline:
                raise AssertionError("the trap listeners did not record their probes")
            time.sleep(0.05)

    def close(self):
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
