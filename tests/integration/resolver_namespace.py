"""Private network namespaces for this test process, in which names resolve as the test says.

The engine's side ("this host"): a mount and network namespace that the whole process enters
(enter()), codecell with it. /etc/resolv.conf (bind-mounted) names 127.0.0.1, where a DNS server
of the test's (dns_server.py) answers; /etc/hosts knows only localhost; its lo carries the
refused addresses the tests listen on (private, metadata, ...) and two public-looking addresses
of this host's own. The rest of the world ("outside"): a second network namespace, joined to
the first by a veth pair, holding the public addresses where the tests' servers answer, so that
an allowed connection really goes out of the engine's host and is seen arriving on the other
side. Nothing routes beyond the two.

enter() must be called while the process has one thread (namespaces are per thread, and the
threads made afterwards inherit them). It needs root; it raises unittest.SkipTest with the
reason when the namespaces cannot be made (a kernel without veth, say)."""
import ctypes
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000

# Public by src/lib/egress/egress_addr.c's tables (198.18.0.0/15 is refused, 198.20/16 is not;
# 2001:db8::/32 is refused, 2001:db9:: is not). PUBLIC* are outside, LOCAL* this host's own.
PUBLIC4 = "198.20.0.10"
PUBLIC6 = "2001:db9::10"
LINK4, LINK6 = "198.20.0.1/24", "2001:db9::1/64"  # this host's end of the veth pair
LOCAL4 = "198.20.9.99"
LOCAL6 = "2001:db9:9::99"
PRIVATE4 = "10.20.0.10"
METADATA4 = "169.254.169.254"
METADATA6 = "fd00:ec2::254"  # AWS's IPv6 metadata address
LINKLOCAL4 = "169.254.10.10"
CGNAT4 = "100.64.0.10"
ON_LO = (LOCAL4 + "/32", LOCAL6 + "/128", PRIVATE4 + "/32", METADATA4 + "/32",
         METADATA6 + "/128", LINKLOCAL4 + "/32", CGNAT4 + "/32")
LIBC = ctypes.CDLL(None, use_errno=True)


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
    if LIBC.unshare(CLONE_NEWNS | CLONE_NEWNET) != 0:
        raise unittest.SkipTest("unshare(CLONE_NEWNS|CLONE_NEWNET): "
                                + os.strerror(ctypes.get_errno()))
    _run("mount", "--make-rprivate", "/")
    folder = tempfile.mkdtemp(prefix="codecell-resolve-")
    try:
        _configure(folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def _configure(folder):
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
    _make_outside()


OUTSIDE = {}  # "tid": a thread living in the outside namespace, "fd": that namespace


def _make_outside():
    """The outside namespace, held by a thread that stays in it (its tid names it to ip and
    nsenter), joined to this one by a veth pair."""
    ready = threading.Event()

    def hold():
        if LIBC.unshare(CLONE_NEWNET) != 0:  # this thread only
            OUTSIDE["error"] = os.strerror(ctypes.get_errno())
        else:
            OUTSIDE["tid"] = threading.get_native_id()
            OUTSIDE["fd"] = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        ready.set()
        threading.Event().wait()

    threading.Thread(target=hold, daemon=True).start()
    ready.wait()
    if "error" in OUTSIDE:
        raise unittest.SkipTest("unshare(CLONE_NEWNET) in a thread: " + OUTSIDE["error"])
    tid = str(OUTSIDE["tid"])
    outside = ("nsenter", "--net=/proc/%s/ns/net" % tid)
    _run("ip", "link", "add", "cc-host", "type", "veth", "peer", "name", "cc-out", "netns", tid)
    _run("ip", "addr", "add", LINK4, "dev", "cc-host")
    _run("ip", "addr", "add", LINK6, "dev", "cc-host", "nodad")
    _run("ip", "link", "set", "cc-host", "up")
    _run(*outside, "ip", "link", "set", "lo", "up")
    _run(*outside, "ip", "addr", "add", PUBLIC4 + "/24", "dev", "cc-out")
    _run(*outside, "ip", "addr", "add", PUBLIC6 + "/64", "dev", "cc-out", "nodad")
    _run(*outside, "ip", "link", "set", "cc-out", "up")


def outside(make):
    """make() called in a thread that joined the outside namespace: sockets it creates live
    there (and stay there, whichever thread uses them). Returns what make() returned."""
    box = {}

    def run():
        if LIBC.setns(OUTSIDE["fd"], CLONE_NEWNET) != 0:
            box["error"] = OSError(ctypes.get_errno(), "setns into the outside namespace")
            return
        try:
            box["value"] = make()
        except Exception as e:  # handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def listening(host, port):
    """A socket bound and listening on (host, port), IPv4 or IPv6 by the host's form."""
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
