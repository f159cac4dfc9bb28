"""Controlled egress against names the test resolves itself (docs/network.md, issue 31): the
engine's proxy looks names up with getaddrinfo, so here the whole test process, codecell with
it, runs in a namespace of its own (resolver_namespace.py) whose resolv.conf names a DNS server
of the test's (dns_server.py). An allowed name that resolves to loopback, a private address or
a cloud metadata address (and their IPv6 and IPv4-mapped forms) is refused with the 403 text,
and a listener on that address sees no connection; a rebinding name (public first, loopback
after, TTL 0) reaches only the address the proxy checked; a name with a public and refused
addresses reaches only the public one; the guest itself gets no DNS, over UDP or TCP, while the
resolver runs. The "public" addresses sit on a dummy interface of the namespace, where real
HTTP and HTTPS servers answer, so an allowed connection is seen arriving on the host side.
Both languages, both start modes, over the CLI."""
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
import unittest

from harness import BIN, LAUNCHED, Run, codecell, tempdir
from mcp_peer import write_config
import dns_server
import net_servers
import resolver_namespace as ns

LANGUAGES = ("ruby", "python")
STARTS = ("exec", "fork")
# As root and as nobody (setpriv; the engine then makes the sandbox's namespaces as a user).
USERS = ("root", "nobody")
EACH = [(lang, start, user) for lang in LANGUAGES for start in STARTS for user in USERS]

# Names of the test's resolver whose every address the proxy must refuse.
REFUSED_NAMES = {
    "loop4.example.test": {"a": ["127.0.0.1"]},
    "loop6.example.test": {"aaaa": ["::1"]},
    "private.example.test": {"a": [ns.PRIVATE4]},
    "meta.example.test": {"a": [ns.METADATA4]},
    "meta6.example.test": {"aaaa": [ns.METADATA6]},
    "mapped.example.test": {"aaaa": ["::ffff:127.0.0.1", "::ffff:" + ns.METADATA4,
                                     "64:ff9b::a9fe:a9fe"]},  # NAT64 form of the metadata
    # IPv4-compatible, SIIT-translated and 6to4 forms of loopback.
    "embedded.example.test": {"aaaa": ["::127.0.0.1", "::ffff:0:7f00:1", "2002:7f00:1::1"]},
    # connect() to 0.0.0.0 reaches this host's own listeners.
    "zero.example.test": {"a": ["0.0.0.0"], "aaaa": ["::"]},
    "linklocal.example.test": {"a": [ns.LINKLOCAL4], "aaaa": ["fe80::1"]},
    "cgnat.example.test": {"a": [ns.CGNAT4]},
    # Public-looking, but this host's own: its services are behind them as behind loopback.
    "self.example.test": {"a": [ns.LOCAL4], "aaaa": [ns.LOCAL6, "::ffff:" + ns.LOCAL4]},
}
TRAPPED = ("127.0.0.1", "::1", ns.PRIVATE4, ns.METADATA4, ns.METADATA6, ns.LINKLOCAL4, ns.CGNAT4,
           ns.LOCAL4, ns.LOCAL6)

# ask(url): [status, body] through the proxy the sandbox's variables name; a refused CONNECT
# gives the proxy's status and the library's message. tunnel(host): the proxy's whole answer
# to a CONNECT host:443, read until it closes (only for hosts it refuses).
ASK = {
    "ruby": 'require "net/http"\nrequire "socket"\n'
            'def ask(url)\n  u = URI(url)\n'
            '  Net::HTTP.start(u.host, u.port, use_ssl: u.scheme == "https", ca_file: "/ca/ca.pem",\n'
            '                  open_timeout: 20, read_timeout: 20) { |h|\n'
            '    r = h.get(u.request_uri)\n    [r.code.to_i, r.body] }\n'
            'rescue Net::HTTPClientException, Net::HTTPFatalError => e\n'
            '  [e.response.code.to_i, "tunnel: " + e.message]\n'
            'rescue StandardError => e\n  [0, e.class.name + ": " + e.message]\nend\n'
            'def tunnel(host)\n  s = TCPSocket.new("127.0.0.1", 3128)\n'
            '  s.write("CONNECT #{host}:443 HTTP/1.1\\r\\nHost: #{host}:443\\r\\n\\r\\n")\n'
            '  out = +""\n  begin\n    loop { out << s.readpartial(4096) }\n'
            '  rescue EOFError, SystemCallError\n  end\n  s.close\n  out\nend\n',
    "python": 'import re, socket, ssl, urllib.request, urllib.error\n'
              'ctx = ssl.create_default_context(cafile="/ca/ca.pem")\n'
              'def ask(url):\n    try:\n'
              '        r = urllib.request.urlopen(url, timeout=20, context=ctx)\n'
              '        return [r.status, r.read().decode()]\n'
              '    except urllib.error.HTTPError as e:\n        return [e.code, e.read().decode()]\n'
              '    except urllib.error.URLError as e:\n'
              '        m = re.search(r"Tunnel connection failed: (\\d+)", str(e.reason))\n'
              '        return [int(m.group(1)) if m else 0, "tunnel: " + str(e.reason)]\n'
              'def tunnel(host):\n'
              '    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)\n'
              '    s.sendall(("CONNECT %s:443 HTTP/1.1\\r\\nHost: %s:443\\r\\n\\r\\n" % (host, host)).encode())\n'
              '    out = b""\n    while True:\n        more = s.recv(4096)\n'
              '        if not more:\n            break\n        out += more\n'
              '    s.close()\n    return out.decode()\n',
}


def call(lang, fn, *args):
    """A call of the guest's helper, in the language's syntax."""
    return "%s(%s)" % (fn, ", ".join(json.dumps(a) for a in args))


def guest_list(lang, calls):
    return "[" + ", ".join(calls) + "]"


class PublicServer(net_servers.Server):
    """net_servers' handler on a fixed address of the namespace, counting the connections it
    accepts (.accepted) as well as the requests it answers (.seen)."""

    def __init__(self, host, port, tls=None):
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), net_servers.Handler)
        self.seen, self.files, self.accepted = [], {}, 0
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.socket = context.wrap_socket(self.socket, server_side=True)

    def verify_request(self, request, client_address):
        self.accepted += 1
        return True


def setUpModule():
    global FOLDER
    FOLDER = ns.enter()
    try:
        start_servers()
    except BaseException:
        shutil.rmtree(FOLDER, ignore_errors=True)
        raise


def start_servers():
    global DNS, TRAP, PUBLIC, CA_DIR, NOBODY_BIN
    os.chmod(FOLDER, 0o755)
    NOBODY_BIN = os.path.join(FOLDER, "codecell")
    shutil.copy(BIN, NOBODY_BIN)
    os.chmod(NOBODY_BIN, 0o755)
    DNS = dns_server.DnsServer("0.0.0.0", 53)
    for name, addresses in REFUSED_NAMES.items():
        DNS.table.set(name, addresses.get("a", ()), addresses.get("aaaa", ()))
    DNS.table.set("pub.example.test", [ns.PUBLIC4])
    DNS.table.set("pub6.example.test", (), [ns.PUBLIC6])
    DNS.table.set("mixed.example.test", ["127.0.0.1", ns.PUBLIC4, ns.PRIVATE4],
                  ["::1", "::ffff:" + ns.METADATA4])
    TRAP = ns.Trap(TRAPPED)
    CA_DIR = os.path.join(FOLDER, "ca")
    os.mkdir(CA_DIR)
    os.chmod(CA_DIR, 0o755)
    _, leaf, key = net_servers.make_ca(CA_DIR, ["*.example.test"])
    os.chmod(os.path.join(CA_DIR, "ca.pem"), 0o644)
    PUBLIC = {}
    for host in (ns.PUBLIC4, ns.PUBLIC6):
        PUBLIC[host, 80] = ns.outside(lambda: PublicServer(host, 80))
        PUBLIC[host, 443] = ns.outside(lambda: PublicServer(host, 443, tls=(leaf, key)))
    for s in PUBLIC.values():
        threading.Thread(target=s.serve_forever, daemon=True).start()
    check_the_namespace()


def check_the_namespace():
    """What the cases rely on, seen from the host side first: the resolver answers over UDP
    and TCP, glibc here asks it, every trap listener records a connection, and the public
    servers outside answer from here (IPv6 neighbours may take a moment)."""
    assert dns_server.ask("pub.example.test", dns_server.A) == [ns.PUBLIC4]
    assert dns_server.ask("loop6.example.test", dns_server.AAAA, tcp=True) == ["::1"]
    assert dns_server.ask("nothing.example.test", dns_server.A) is None
    got = {a[4][0] for a in socket.getaddrinfo("mixed.example.test", 80, type=socket.SOCK_STREAM)}
    assert ns.PUBLIC4 in got and "127.0.0.1" in got, got
    assert TRAP.reached() == []
    for (host, port), server in PUBLIC.items():
        deadline = time.monotonic() + 60
        while True:
            try:
                c = socket.create_connection((host, port), timeout=10)
                if port == 443:  # the TLS server counts a connection once its handshake is done
                    tls = ssl.create_default_context(cafile=os.path.join(CA_DIR, "ca.pem"))
                    c = tls.wrap_socket(c, server_hostname="pub.example.test")
                c.close()
                break
            except OSError:
                assert time.monotonic() < deadline, "%s:%d does not answer" % (host, port)
                time.sleep(0.1)
    deadline = time.monotonic() + 60
    while sum(s.accepted for s in PUBLIC.values()) < len(PUBLIC):
        assert time.monotonic() < deadline, "the public servers did not see the probes"
        time.sleep(0.05)
    for s in PUBLIC.values():
        s.accepted = 0
    DNS.table.asked.clear()


def tearDownModule():
    for s in PUBLIC.values():
        s.shutdown()
        s.server_close()
    TRAP.close()
    DNS.close()
    shutil.rmtree(FOLDER, ignore_errors=True)


def as_nobody(*args, timeout=180):
    """codecell run as nobody, from a copy of the binary nobody can read (the build tree may
    sit in a folder it cannot enter)."""
    with subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           "env", "-i", "PATH=/usr/bin:/bin", "HOME=" + FOLDER, NOBODY_BIN, *args],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        LAUNCHED.append(proc.pid)
        proc.stdout_text, proc.stderr_text = proc.communicate(timeout=timeout)
    return Run(proc)


def cell(lang, start):
    return {"name": lang, "language": lang, "pool": 1, "start": start,
            "limits": {"timeout_ms": 30000, "cpu_ms": 10000},
            "mounts": [{"source": CA_DIR, "dest": "/ca", "mode": "ro"}],
            "network": {"allow": ["*.example.test"], "connections": 64}}


class Resolved(unittest.TestCase):
    def setUp(self):
        TRAP.reached()  # what an earlier case let through is that case's failure, not this one's

    def run_cell(self, lang, start, user, code):
        folder = tempdir(self)
        os.chmod(folder, 0o755)
        path = write_config(folder, [cell(lang, start)])
        os.chmod(path, 0o644)
        args = ("run", "--config", path, "--json", "-e", code)
        if user == "root":
            r = codecell(*args, timeout=180)
        else:
            r = as_nobody(*args)
        self.assertIsNotNone(r.result, r)
        self.assertEqual(r.status, "ok", r)
        return r

    def test_names_that_resolve_only_to_refused_addresses_reach_nothing(self):
        names = sorted(REFUSED_NAMES)
        for lang, start, user in EACH:
            with self.subTest(lang=lang, start=start, user=user):
                calls = []
                for name in names:
                    calls += [call(lang, "ask", "http://%s/" % name),
                              call(lang, "ask", "https://%s/" % name),
                              call(lang, "tunnel", name)]
                r = self.run_cell(lang, start, user, ASK[lang] + guest_list(lang, calls))
                answers = r.result["value"]
                for i, name in enumerate(names):
                    plain, secure, raw = answers[3 * i:3 * i + 3]
                    text = "%s resolves only to private addresses" % name
                    self.assertEqual(plain[0], 403, (name, plain))
                    self.assertIn(text, plain[1])
                    self.assertEqual(secure[0], 403, (name, secure))
                    self.assertTrue(raw.startswith("HTTP/1.1 403"), (name, raw))
                    self.assertIn(text, raw)
                    for address in REFUSED_NAMES[name].get("a", []) + REFUSED_NAMES[name].get("aaaa", []):
                        self.assertIn(address, plain[1])
                network = r.result["network"]
                self.assertEqual(len(network), 3 * len(names))
                self.assertTrue(all(c.get("refused") for c in network), network)
                self.assertEqual(TRAP.reached(), [])
                # Each connection's name was really looked up, here.
                for name in names:
                    self.assertGreaterEqual(DNS.table.questions(name), 3, name)

    def test_a_public_address_is_reached_and_refused_ones_beside_it_are_not(self):
        for lang, start, user in EACH:
            with self.subTest(lang=lang, start=start, user=user):
                before = {k: s.accepted for k, s in PUBLIC.items()}
                calls = [call(lang, "ask", "http://pub.example.test/p4"),
                         call(lang, "ask", "https://pub.example.test/s4"),
                         call(lang, "ask", "http://pub6.example.test/p6"),
                         call(lang, "ask", "https://pub6.example.test/s6"),
                         call(lang, "ask", "http://mixed.example.test/pm"),
                         call(lang, "ask", "https://mixed.example.test/sm")]
                r = self.run_cell(lang, start, user, ASK[lang] + guest_list(lang, calls))
                for answer, path in zip(r.result["value"], ("/p4", "/s4", "/p6", "/s6", "/pm", "/sm")):
                    self.assertEqual(answer[0], 200, answer)
                    self.assertEqual(json.loads(answer[1])["path"], path)
                got = {k: s.accepted - before[k] for k, s in PUBLIC.items()}
                self.assertEqual(got, {(ns.PUBLIC4, 80): 2, (ns.PUBLIC4, 443): 2,
                                       (ns.PUBLIC6, 80): 1, (ns.PUBLIC6, 443): 1})
                self.assertEqual(TRAP.reached(), [])
                self.assertFalse([c for c in r.result["network"] if c.get("refused")], r.result)

    def test_a_rebinding_name_reaches_only_the_address_checked(self):
        for lang, start, user in EACH:
            with self.subTest(lang=lang, start=start, user=user):
                name = "rebind-%s-%s-%s.example.test" % (lang, start, user)
                DNS.table.set_rebinding(name, {"A": [ns.PUBLIC4]},
                                        {"A": ["127.0.0.1"], "AAAA": ["::1"]})
                before = PUBLIC[ns.PUBLIC4, 80].accepted
                calls = [call(lang, "ask", "http://%s/first" % name)]
                calls += [call(lang, "ask", "http://%s/again" % name)] * 3
                calls += [call(lang, "ask", "https://%s/again" % name), call(lang, "tunnel", name)]
                r = self.run_cell(lang, start, user, ASK[lang] + guest_list(lang, calls))
                first, *again = r.result["value"]
                self.assertEqual(first[0], 200, first)
                self.assertEqual(json.loads(first[1])["path"], "/first")
                for answer in again[:4]:
                    self.assertEqual(answer[0], 403, answer)
                self.assertIn("resolves only to private addresses (", again[0][1])
                self.assertIn("127.0.0.1", again[0][1])
                self.assertTrue(again[4].startswith("HTTP/1.1 403"), again[4])
                self.assertEqual(PUBLIC[ns.PUBLIC4, 80].accepted - before, 1)
                self.assertEqual(TRAP.reached(), [])
                # The resolver did hand out loopback: a lookup for each connection after the first.
                self.assertGreaterEqual(DNS.table.questions(name, "A"), 6)

    def test_a_lookup_that_never_ends_does_not_hold_the_run(self):
        # getaddrinfo waits a minute for this name (resolver_namespace.py's resolv.conf); the
        # run's wall clock is 3 s: the run must end then, the lookup left to its thread.
        for lang, start, user in EACH:
            with self.subTest(lang=lang, start=start, user=user):
                name = "silent-%s-%s-%s.example.test" % (lang, start, user)
                DNS.table.set_silent(name)
                folder = tempdir(self)
                os.chmod(folder, 0o755)
                path = write_config(folder, [dict(cell(lang, start),
                                                  limits={"timeout_ms": 3000, "cpu_ms": 3000})])
                os.chmod(path, 0o644)
                began = time.monotonic()
                args = ("run", "--config", path, "--json", "-e",
                        ASK[lang] + call(lang, "ask", "http://%s/" % name))
                r = codecell(*args, timeout=180) if user == "root" else as_nobody(*args)
                took = time.monotonic() - began
                self.assertIsNotNone(r.result, r)
                self.assertEqual(r.status, "timeout", r)
                self.assertLess(took, 45, "the run waited for the lookup")
                self.assertGreaterEqual(DNS.table.questions(name), 1)
                network = r.result["network"]
                self.assertEqual([c["host"] for c in network], [name])
                self.assertTrue(network[0].get("refused"), network)

    NO_ANSWER = {"Errno::EPERM", "Errno::EACCES", "Errno::ENETUNREACH", "Errno::ECONNREFUSED",
                 "Errno::ETIMEDOUT", "RuntimeError", "SocketError", "Resolv::ResolvError",
                 "PermissionError", "ConnectionRefusedError", "TimeoutError", "gaierror", "OSError"}

    def test_the_guest_has_no_dns_while_the_resolver_runs(self):
        code = {
            "ruby": 'require "socket"\nrequire "resolv"\n'
                    'def t\n  "answered: #{yield}"\nrescue StandardError, SocketError => e\n  e.class.name\nend\n'
                    'q = ["\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x03pub\\x07example\\x04test\\x00\\x00\\x01\\x00\\x01"].pack("a*")\n'
                    'udp = ->(h) { s = UDPSocket.new(h.include?(":") ? Socket::AF_INET6 : Socket::AF_INET); s.send(q, 0, h, 53)\n'
                    '  raise "no answer" unless IO.select([s], nil, nil, 3); s.recv(512).bytesize }\n'
                    'tcp = ->(h) { Socket.tcp(h, 53, connect_timeout: 3) { |s| s.write([q.bytesize].pack("n") + q); s.read(2).bytesize } }\n'
                    '["127.0.0.1", "PUBLIC4", "::1"].flat_map { |h| [t { udp.(h) }, t { tcp.(h) }] } +\n'
                    '  [t { Addrinfo.getaddrinfo("pub.example.test", 80).size }, '
                    't { Resolv.getaddress("pub.example.test") }]'.replace("PUBLIC4", ns.PUBLIC4),
            "python": 'import socket\n'
                      'def t(f):\n    try:\n        return "answered: %r" % (f(),)\n'
                      '    except Exception as e:\n        return type(e).__name__\n'
                      'q = b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x03pub\\x07example\\x04test\\x00\\x00\\x01\\x00\\x01"\n'
                      'def udp(h):\n'
                      '    s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET, socket.SOCK_DGRAM)\n'
                      '    s.settimeout(3)\n    s.sendto(q, (h, 53))\n    return len(s.recv(512))\n'
                      'def tcp(h):\n    s = socket.create_connection((h, 53), timeout=3)\n'
                      '    s.sendall(len(q).to_bytes(2, "big") + q)\n    return len(s.recv(2))\n'
                      'out = []\nfor h in ("127.0.0.1", "PUBLIC4", "::1"):\n'
                      '    out += [t(lambda: udp(h)), t(lambda: tcp(h))]\n'
                      'out + [t(lambda: socket.getaddrinfo("pub.example.test", 80)), '
                      't(lambda: socket.gethostbyname("pub.example.test"))]'.replace("PUBLIC4", ns.PUBLIC4),
        }
        for lang, start, user in EACH:
            with self.subTest(lang=lang, start=start, user=user):
                asked = len(DNS.table.asked)
                r = self.run_cell(lang, start, user, code[lang])
                self.assertEqual(len(r.result["value"]), 8, r.result)
                # Each a failure of the guest's own making (not a slip of the test's code, such
                # as a NameError): refused by the sandbox, unreachable, unanswered or unknown.
                self.assertEqual([v for v in r.result["value"] if v not in self.NO_ANSWER], [],
                                 r.result["value"])
                self.assertEqual(len(DNS.table.asked), asked, DNS.table.asked[asked:])
                self.assertFalse(r.result.get("network"), r.result)


if __name__ == "__main__":
    unittest.main()
