"""A network cell's wall (issue 31): the sandbox's only way out is one listener on
127.0.0.1:3128 in its own network namespace, made before the guest runs and held by the engine
alone. Here nobody answers on it yet (the engine's proxy is another part): only that the guest
reaches it, and nothing else, in both languages and both start modes, as whoever runs the suite
(root, and nobody through as_unprivileged.sh)."""
import json
import os
import subprocess
import time
import unittest

from harness import BIN, LANGUAGES, codecell, descendants, tempdir

PORT = 3128
PROXY = f"http://127.0.0.1:{PORT}"
PROXY_VARS = {name: PROXY for name in
              ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")}
PROXY_VARS.update({"NO_PROXY": "", "no_proxy": ""})
# A refused connect answers at once with one of these: no route (the namespace has only its
# loopback), nobody listening, or Landlock (ABI 4 on: connect reaches the proxy's port only).
REFUSED = {"ENETUNREACH", "ECONNREFUSED", "EACCES", "EHOSTUNREACH", "EADDRNOTAVAIL"}
STARTS = ("exec", "fork")

# Every case, written once per language: each answers a JSON object of the same keys.
CODE = {
    "python": r'''
import errno, json, os, socket, time
def t(f):
    start = time.monotonic()
    try:
        v = f()
    except OSError as e:
        v = errno.errorcode.get(e.errno, type(e).__name__)
    return [v, round(time.monotonic() - start, 3)]
def connect(family, host, port):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(20)
    try:
        s.connect((host, port))
        return "connected"
    finally:
        s.close()
def bind(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, port))
        s.listen()
        return "bound"
    finally:
        s.close()
def make(family, kind, proto=0):
    socket.socket(family, kind, proto).close()
    return "made"
def lookup(name):
    try:
        socket.getaddrinfo(name, 80)
        return "resolved"
    except socket.gaierror:
        return "failed"
def listeners():
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if target.startswith("socket:"):
            s = socket.socket(fileno=int(fd))
            try:
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                    found.append(target)
            finally:
                s.detach()
    return found
A4, A6 = socket.AF_INET, socket.AF_INET6
out = {
    "env": {k: v for k, v in os.environ.items() if "proxy" in k.lower()},
    "proxy": t(lambda: connect(A4, "127.0.0.1", PORT)),
    "elsewhere": {h + ":" + str(p): t(lambda: connect(f, h, p)) for f, h, p in [
        (A4, "1.1.1.1", 80), (A4, "10.0.0.1", 80), (A4, "1.1.1.1", PORT), (A4, "10.0.0.1", PORT),
        (A4, "127.0.0.1", 80), (A4, "127.0.0.2", PORT), (A4, "169.254.169.254", 80),
        (A6, "::1", PORT), (A6, "::1", 80), (A6, "2606:4700::1111", 443),
        (A6, "::ffff:1.1.1.1", 80)]},
    "bind": {h: t(lambda: bind(h, p)) for h, p in [("127.0.0.1", PORT), ("0.0.0.0", PORT)]},
    "sockets": {name: t(lambda: make(*args)) for name, args in [
        ("udp", (A4, socket.SOCK_DGRAM)), ("udp6", (A6, socket.SOCK_DGRAM)),
        ("raw", (A4, socket.SOCK_RAW, socket.IPPROTO_ICMP)), ("sctp", (A4, socket.SOCK_STREAM, 132)),
        ("packet", (17, socket.SOCK_RAW)), ("netlink", (16, socket.SOCK_RAW)),
        ("unix", (socket.AF_UNIX, socket.SOCK_STREAM))]},
    "tcp": t(lambda: make(A4, socket.SOCK_STREAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC, 6)),
    "tcp6": t(lambda: make(A6, socket.SOCK_STREAM)),
    "dns": {n: t(lambda: lookup(n)) for n in ("example.test", "example.com")},
    "listeners": listeners(),
}
time.sleep(float(os.environ.get("HOLD", "0")))
out
'''.replace("PORT", str(PORT)),
    "ruby": r'''
require "socket"
def t
  start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  v = begin
    yield
  rescue SystemCallError => e
    e.class.name.sub("Errno::", "")
  end
  [v, (Process.clock_gettime(Process::CLOCK_MONOTONIC) - start).round(3)]
end
def connect(family, host, port)
  s = Socket.new(family, :STREAM)
  begin
    s.connect(Socket.pack_sockaddr_in(port, host))
    "connected"
  ensure
    s.close
  end
end
def bind(host, port)
  s = Socket.new(:INET, :STREAM)
  begin
    s.bind(Socket.pack_sockaddr_in(port, host))
    s.listen(1)
    "bound"
  ensure
    s.close
  end
end
def make(family, kind, proto = 0)
  Socket.new(family, kind, proto).close
  "made"
end
def lookup(name)
  Addrinfo.getaddrinfo(name, 80)
  "resolved"
rescue SocketError
  "failed"
end
def listeners
  Dir.children("/proc/self/fd").filter_map do |fd|
    target = File.readlink("/proc/self/fd/#{fd}") rescue next
    next unless target.start_with?("socket:")
    s = Socket.for_fd(fd.to_i)
    s.autoclose = false
    target if s.getsockopt(:SOCKET, :ACCEPTCONN).int != 0
  end
end
out = {
  "env" => ENV.to_h.select { |k, _| k.downcase.include?("proxy") },
  "proxy" => t { connect(:INET, "127.0.0.1", PORT) },
  "elsewhere" => [[:INET, "1.1.1.1", 80], [:INET, "10.0.0.1", 80], [:INET, "1.1.1.1", PORT],
                  [:INET, "10.0.0.1", PORT], [:INET, "127.0.0.1", 80], [:INET, "127.0.0.2", PORT],
                  [:INET, "169.254.169.254", 80], [:INET6, "::1", PORT], [:INET6, "::1", 80],
                  [:INET6, "2606:4700::1111", 443], [:INET6, "::ffff:1.1.1.1", 80]]
                 .to_h { |f, h, p| ["#{h}:#{p}", t { connect(f, h, p) }] },
  "bind" => [["127.0.0.1", PORT], ["0.0.0.0", PORT]].to_h { |h, p| [h, t { bind(h, p) }] },
  "sockets" => {"udp" => [:INET, :DGRAM], "udp6" => [:INET6, :DGRAM],
                "raw" => [:INET, :RAW, Socket::IPPROTO_ICMP], "sctp" => [:INET, :STREAM, 132],
                "packet" => [17, :RAW], "netlink" => [16, :RAW], "unix" => [:UNIX, :STREAM]}
               .transform_values { |args| t { make(*args) } },
  "tcp" => t { make(:INET, Socket::SOCK_STREAM | Socket::SOCK_NONBLOCK | Socket::SOCK_CLOEXEC, 6) },
  "tcp6" => t { make(:INET6, :STREAM) },
  "dns" => ["example.test", "example.com"].to_h { |n| [n, t { lookup(n) }] },
  "listeners" => listeners,
}
sleep(Float(ENV.fetch("HOLD", "0")))
out
'''.replace("PORT", str(PORT)),
}


def cells(test, start, network=True):
    """A configuration file with a cell per language (net_ruby, net_python)."""
    d = tempdir(test)
    path = os.path.join(d, "cells.json")
    entries = []
    for lang in LANGUAGES:
        cell = {"name": f"net_{lang}", "language": lang, "start": start, "pool": 0}
        if network:
            cell["network"] = {"allow": ["example.test"]}
        entries.append(cell)
    with open(path, "w") as f:
        json.dump({"cells": entries}, f)
    return path


def run_cell(path, lang, code, *flags, timeout=120):
    return codecell("run", "--json", "--config", path, "--cell", f"net_{lang}", *flags, "-e", code,
                    timeout=timeout)


def listening_inode(pid):
    """The inode of the socket listening on 127.0.0.1:PORT in pid's network namespace, by
    its /proc/PID/net/tcp, or None."""
    want = f"0100007F:{PORT:04X}"
    try:
        with open(f"/proc/{pid}/net/tcp") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if fields[1] == want and fields[3] == "0A":  # 0A: LISTEN
            return fields[9]
    return None


def fd_targets(pid):
    """What pid's descriptors are, or None when /proc does not let us look."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    found = set()
    for name in names:
        try:
            found.add(os.readlink(f"/proc/{pid}/fd/{name}"))
        except OSError:
            pass
    return found


class NetworkCell(unittest.TestCase):
    def check_wall(self, r, lang):
        self.assertEqual(r.status, "ok", r)
        v = r.result["value"]
        self.assertEqual(v["env"], PROXY_VARS, r)
        # The listener is there: the connect succeeds (nobody accepts yet, which it needs not).
        self.assertEqual(v["proxy"][0], "connected", r)
        for where, (answer, seconds) in v["elsewhere"].items():
            with self.subTest(connect=where):
                self.assertIn(answer, REFUSED, r)
                self.assertLess(seconds, 2, r)  # refused at once, never a timeout
        for where, (answer, _) in v["bind"].items():
            with self.subTest(bind=where):
                self.assertIn(answer, {"EACCES", "EADDRINUSE"}, r)
        for kind, (answer, _) in v["sockets"].items():
            with self.subTest(socket=kind):
                self.assertIn(answer, {"EPERM", "EAFNOSUPPORT", "EACCES"}, r)
        # TCP over IPv4 and IPv6 is what the filter admits, flags and IPPROTO_TCP included.
        self.assertEqual(v["tcp"][0], "made", r)
        self.assertEqual(v["tcp6"][0], "made", r)
        for name, (answer, seconds) in v["dns"].items():
            with self.subTest(dns=name):
                self.assertEqual(answer, "failed", r)
                self.assertLess(seconds, 2, r)
        # The guest holds no listening socket: not the proxy's, not one of its own.
        self.assertEqual(v["listeners"], [], r)

    def test_the_only_way_out_is_the_engines_listener(self):
        for start in STARTS:
            path = cells(self, start)
            for lang in LANGUAGES:
                with self.subTest(start=start, lang=lang):
                    self.check_wall(run_cell(path, lang, CODE[lang]), lang)

    def test_the_engine_holds_the_listener_and_no_process_of_the_sandbox_does(self):
        # Seen from the host while the guest waits: the listener in the guest's namespace is
        # one of the engine's descriptors, and no process of the sandbox has it.
        for start in STARTS:
            path = cells(self, start)
            for lang in LANGUAGES:
                with self.subTest(start=start, lang=lang):
                    self.check_holders(path, lang)

    def check_holders(self, path, lang):
        env = dict(os.environ)
        args = [BIN, "run", "--json", "--config", path, "--cell", f"net_{lang}",
                "--env", "HOLD=8", "-e", CODE[lang]]
        with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) as proc:
            try:
                inode, sandbox = None, []
                deadline = time.monotonic() + 20
                while inode is None and time.monotonic() < deadline and proc.poll() is None:
                    sandbox = descendants(proc.pid)
                    for pid in sandbox:
                        inode = inode or listening_inode(pid)
                    time.sleep(0.05)
                self.assertIsNotNone(inode, "no listener seen in the sandbox's namespace")
                socket_name = f"socket:[{inode}]"
                # The listener is made inside the sandbox's namespace (by the zygote, in a
                # forked cell) and handed to the engine: on a loaded machine it may be seen
                # on its way. What must hold once the guest runs: the engine has it, and no
                # process of the sandbox does.
                holders, looked = None, 0
                while time.monotonic() < deadline and proc.poll() is None:
                    holders, looked = [], 0
                    for pid in descendants(proc.pid):
                        targets = fd_targets(pid)
                        if targets is None:
                            continue  # undumpable (the sandbox's init, as nobody)
                        looked += 1
                        if socket_name in targets:
                            holders.append(pid)
                    if not holders and socket_name in (fd_targets(proc.pid) or set()):
                        break
                    time.sleep(0.05)
                self.assertIn(socket_name, fd_targets(proc.pid) or set())
                self.assertEqual(holders, [], "a process of the sandbox holds the listener")
                self.assertGreater(looked, 0)
            finally:
                out, err = proc.communicate(timeout=60)
        self.assertEqual(json.loads(out)["status"], "ok", err)

    def test_each_sandbox_has_a_listener_of_its_own(self):
        # Two runs at once: each reaches a listener, in a namespace of its own (so a second
        # listener on the same port could be made at all).
        for start in STARTS:
            path = cells(self, start)
            with self.subTest(start=start):
                procs = [subprocess.Popen(
                    [BIN, "run", "--json", "--config", path, "--cell", "net_python", "--env",
                     "HOLD=2", "-e", CODE["python"]], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True) for _ in range(2)]
                for p in procs:
                    out, err = p.communicate(timeout=120)
                    result = json.loads(out)
                    self.assertEqual(result["value"]["proxy"][0], "connected", err)


class CellWithoutNetwork(unittest.TestCase):
    def test_exactly_as_before(self):
        # No proxy variables, no TCP socket at all, nothing listening.
        code = {
            "python": "import os, socket, errno\n"
                      "def t(f):\n"
                      "    try:\n        return f()\n"
                      "    except OSError as e:\n        return errno.errorcode[e.errno]\n"
                      "[sorted(k for k in os.environ if 'proxy' in k.lower()),"
                      " t(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM) and 'made'),"
                      " t(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) and 'made')]",
            "ruby": 'require "socket"\n'
                    'def t; yield; rescue SystemCallError => e; e.class.name.sub("Errno::", ""); end\n'
                    '[ENV.keys.select { |k| k.downcase.include?("proxy") }.sort,'
                    ' t { Socket.new(:INET, :STREAM) && "made" },'
                    ' t { Socket.new(:UNIX, :STREAM) && "made" }]',
        }
        for start in STARTS:
            path = cells(self, start, network=False)
            for lang in LANGUAGES:
                with self.subTest(start=start, lang=lang):
                    r = run_cell(path, lang, code[lang])
                    self.assertEqual(r.status, "ok", r)
                    self.assertEqual(r.result["value"], [[], "EAFNOSUPPORT", "made"], r)


class Configuration(unittest.TestCase):
    def test_network_must_be_an_object(self):
        d = tempdir(self)
        path = os.path.join(d, "cells.json")
        with open(path, "w") as f:
            json.dump({"cells": [{"name": "net_python", "language": "python",
                                  "network": ["example.test"]}]}, f)
        r = codecell("run", "--json", "--config", path, "-e", "1")
        self.assertEqual(r.code, 2, r)
        self.assertIn("cells[0].network: must be an object", r.stderr, r)


if __name__ == "__main__":
    unittest.main()
