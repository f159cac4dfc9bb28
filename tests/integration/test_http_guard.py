"""codecell serve --http against hostile peers at the HTTP layer, over raw sockets: connections
that never finish their headers (slowloris) must not lock token holders out, and a request whose
framing two parsers could read differently (request smuggling) is refused and its connection
closed, straight and through the shipped nginx configuration. A smuggled request would be a
tools/call that writes a file into a read-write mount: the test looks for the file on the host."""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from harness import become_subreaper, tempdir
from harness import LAUNCHED
from mcp_peer import Http, modern, modern_headers, write_config

HERE = os.path.dirname(os.path.abspath(__file__))
SHIPPED_NGINX = (os.environ.get("CODECELL_NGINX_CONF") or
                 os.path.join(HERE, "..", "..", "packaging", "nginx", "codecell.conf"))
TOKEN = "s3cret-token"
# Loopback has all of 127/8: the attackers come from another address than the token holder, so
# that the per-address cap they meet is not the token holder's.
ATTACKER = "127.0.0.2"


def setUpModule():
    become_subreaper()


def tempdir_class():
    d = tempfile.mkdtemp(prefix="codecell-e2e-")
    unittest.addModuleCleanup(shutil.rmtree, d, True)
    return d


def until(predicate, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def gate_config(d):
    """A Ruby cell with a read-write /gate, where a call leaves its mark."""
    gate = os.path.join(d, "gate")
    os.makedirs(gate)
    os.chmod(gate, 0o777)
    with open(os.path.join(d, "token"), "w") as f:
        f.write(TOKEN + "\n")
    cfg = write_config(d, [{"name": "ruby", "language": "ruby", "pool": 1,
                            "limits": {"timeout_ms": 20000, "cpu_ms": 10000},
                            "mounts": [{"source": gate, "dest": "/gate", "mode": "rw"}]}])
    return cfg, gate, os.path.join(d, "token")


def mark_call(name):
    """(headers, body) of a 2026-07-28 tools/call that writes /gate/NAME, whose value is
    "mark NAME"."""
    message = modern(7, "tools/call", {"name": "ruby", "arguments": {
        "code": f'File.write("/gate/{name}", "ran"); "mark {name}"'}})
    return modern_headers(message), json.dumps(message).encode()


def raw_request(host, headers, body=b"", path="/mcp", method="POST", lengths=True):
    """The bytes of one request: the token, Host, the JSON headers and HEADERS as given (a list
    of (name, value) or raw header lines), then BODY."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"Authorization: Bearer {TOKEN}",
             "Content-Type: application/json", "Accept: application/json, text/event-stream"]
    for h in headers:
        lines.append(h if isinstance(h, str) else f"{h[0]}: {h[1]}")
    if lengths:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def exchange(port, data, timeout=30, source=None):
    """Sends data on a new connection, reads until the server closes it or is quiet for
    `timeout` s: (bytes read, whether the server closed the connection)."""
    s = socket.socket()
    if source:
        s.bind((source, 0))
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return out, False
            except ConnectionResetError:
                return out, True
            if not chunk:
                return out, True
            out += chunk
    finally:
        s.close()


def responses(raw):
    """The responses in raw, in order, as (status, body), read by their framing; what does not
    parse as one more response is left out."""
    out = []
    while raw:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        m = re.match(rb"HTTP/1\.[01] (\d{3}) ", head)
        if not sep or not m:
            break
        length = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
        if length:
            n = int(length.group(1))
            body, raw = rest[:n], rest[n:]
        elif re.search(rb"\r\ntransfer-encoding: *chunked", head, re.I):
            body = b""
            while True:
                size, _, rest = rest.partition(b"\r\n")
                n = int(size.split(b";")[0] or b"0", 16)
                body, rest = body + rest[:n], rest[n + 2:]
                if n == 0:
                    break
            raw = rest
        else:
            body, raw = rest, b""
        out.append((int(m.group(1)), body))
    return out


def statuses(raw):
    return [status for status, _ in responses(raw)]


def closed_by_peer(s):
    """Whether the server has closed s (without blocking)."""
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def slow_connection(port, source=ATTACKER):
    """A connection that sends the start of a request and never its end."""
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\n")
    return s


class Slowloris(unittest.TestCase):
    """Peers without a token that never finish their headers."""

    def start(self, *flags):
        d = tempdir(self)
        cfg, self.gate, token = gate_config(d)
        self.server = Http(cfg, "--token-file", token, *flags)
        self.addCleanup(self.server.stop)

    def hold(self, n, **kw):
        held = [slow_connection(self.server.port, **kw) for _ in range(n)]
        for s in held:
            self.addCleanup(s.close)
        return held

    def token_holder_call(self, name):
        headers, body = mark_call(name)
        headers["Authorization"] = f"Bearer {TOKEN}"
        status, _, text = self.server.post(body, headers)
        self.assertEqual(status, 200, text)
        self.assertEqual(json.loads(text)["result"]["structuredContent"]["status"], "ok", text)

    def test_256_slow_connections_leave_the_token_holder_served_and_are_closed(self):
        # The defaults: 256 such connections used to fill every slot for 10 minutes.
        self.start()
        held = self.hold(256)
        self.token_holder_call("served")
        self.assertTrue(os.path.exists(os.path.join(self.gate, "served")))
        # Within the default header timeout (10 s) and the reaper's second; generous here.
        until(lambda: all(closed_by_peer(s) for s in held), "the slow connections to be closed")

    def test_the_header_deadline_counts_from_the_accept_not_from_the_last_byte(self):
        self.start("--header-timeout", "1s")
        s = slow_connection(self.server.port)
        self.addCleanup(s.close)
        opened = time.monotonic()
        # A byte now and then would keep an idle timeout from ever firing.
        while not closed_by_peer(s):
            self.assertLess(time.monotonic() - opened, 60, "never closed")
            try:
                s.setblocking(True)
                s.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.2)

    def test_the_per_address_cap_refuses_the_next_connection(self):
        self.start("--max-connections-per-address", "4", "--header-timeout", "10m")
        held = self.hold(4)
        extra = slow_connection(self.server.port)
        self.addCleanup(extra.close)
        until(lambda: closed_by_peer(extra), "the fifth connection to be refused")
        self.assertFalse(any(closed_by_peer(s) for s in held), "a connection under the cap closed")
        # Another address is not held back by this one's cap.
        self.token_holder_call("other-address")

    def test_past_half_the_connections_the_oldest_without_a_token_goes(self):
        # Attackers from many addresses (no per-address cap here): the pending half is full, and
        # each new connection pushes the oldest pending one out, so none holds its slot.
        self.start("--max-connections", "8", "--max-connections-per-address", "0",
                   "--header-timeout", "10m")
        first = self.hold(4)
        later = self.hold(4)
        until(lambda: all(closed_by_peer(s) for s in first), "the oldest four to be closed")
        self.assertFalse(any(closed_by_peer(s) for s in later))
        self.token_holder_call("evicting")

    def test_an_answer_without_a_token_closes_its_connection(self):
        self.start()
        host = f"127.0.0.1:{self.server.port}"
        for path, method, status in [("/healthz", "GET", 200), ("/mcp", "POST", 401),
                                     ("/metrics", "GET", 401), ("/nope", "GET", 404)]:
            with self.subTest(path=path):
                req = (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n"
                       ).encode()
                # A second request behind it is never read.
                raw, closed = exchange(self.server.port, req + req)
                self.assertEqual(statuses(raw), [status], raw)
                self.assertTrue(closed)

    def test_a_token_holder_keeps_its_connection_and_its_stream(self):
        self.start("--header-timeout", "1s")
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=60)
        self.addCleanup(s.close)
        host = f"127.0.0.1:{self.server.port}"
        for i in range(2):
            headers, body = mark_call(f"kept-{i}")
            message = json.loads(body)
            message["params"]["_meta"]["progressToken"] = "p"  # answered as an event stream
            body = json.dumps(message).encode()
            # Past the header timeout between requests: the connection stays.
            s.sendall(raw_request(host, list(headers.items()), body))
            got = b""
            while b"data: " not in got or not got.endswith(b"0\r\n\r\n"):
                chunk = s.recv(65536)
                self.assertTrue(chunk, got)
                got += chunk
            self.assertIn(b"HTTP/1.1 200", got)
            self.assertIn(b'"status":"ok"', got)
            time.sleep(1.5)  # longer than the header timeout: what is tested, not a wait
        self.assertTrue(os.path.exists(os.path.join(self.gate, "kept-1")))


# Each shape: (name, extra header lines, body framing). The smuggled call follows each request on
# its connection; it must never run.
def chunked(body, ext=""):
    return f"{len(body):x}{ext}\r\n".encode() + body + b"\r\n0\r\n\r\n"


def shapes(ping):
    n = len(ping)
    return [
        ("duplicate Content-Length, same", [f"Content-Length: {n}", f"Content-Length: {n}"],
         ping),
        ("duplicate Content-Length, different", [f"Content-Length: {n}",
                                                 f"Content-Length: {n + 40}"], ping),
        ("Content-Length list", [f"Content-Length: {n}, {n}"], ping),
        ("Content-Length with a sign", [f"Content-Length: +{n}"], ping),
        ("Content-Length in hex", [f"Content-Length: 0x{n:x}"], ping),
        ("Content-Length with trailing junk", [f"Content-Length: {n}x"], ping),
        ("Content-Length and chunked", [f"Content-Length: {n}", "Transfer-Encoding: chunked"],
         chunked(ping)),
        ("chunked and Content-Length", ["Transfer-Encoding: chunked", f"Content-Length: {n}"],
         chunked(ping)),
        ("TE chunked, identity", ["Transfer-Encoding: chunked, identity"], chunked(ping)),
        ("TE identity", ["Transfer-Encoding: identity"], ping),
        ("TE gzip, chunked", ["Transfer-Encoding: gzip, chunked"], chunked(ping)),
        ("TE chunked twice", ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
         chunked(ping)),
        ("TE with trailing space", ["Transfer-Encoding: chunked "], chunked(ping)),
        ("TE with a tab", ["Transfer-Encoding:\tchunked\t"], chunked(ping)),
        ("TE folded", ["X-A: a", "Transfer-Encoding:", " chunked"], chunked(ping)),
        ("Content-Length folded", ["X-A: a", "Content-Length:", f" {n}"], ping),
        ("Content-Length folded on", [f"Content-Length: {n}", "\t0"], ping),
        ("space before the colon", [f"Content-Length : {n}"], ping),
        ("tab before the colon", [f"Content-Length\t: {n}"], ping),
        ("space before the colon of TE", ["Transfer-Encoding : chunked", f"Content-Length: {n}"],
         chunked(ping)),
        ("bare CR in a value", [f"Content-Length: {n}\rX-A: b"], ping),
        ("control character in a value", [f"Content-Length: {n}", "X-A: a\x01b"], ping),
        ("huge chunk size", ["Transfer-Encoding: chunked"],
         b"ffffffffffffffffffff\r\n" + ping + b"\r\n0\r\n\r\n"),
        ("repeated Host", [], ping),  # Host is added once more below
        ("repeated Authorization", [f"Authorization: Bearer {TOKEN}"], ping),
    ]


def shape_request(host, name, lines, body):
    extra = [f"Host: {host}"] if name == "repeated Host" else []
    has_length = any(line.lower().startswith(("content-length", "transfer-encoding"))
                     for line in lines)
    lines = list(lines)
    if not has_length:
        lines.append(f"Content-Length: {len(body)}")
    headers, _ = mark_call("unused")
    return raw_request(host, list(headers.items()) + extra + lines, body, lengths=False)


class Framing(unittest.TestCase):
    """Straight to the server: every ambiguous shape is refused, its connection closed, and the
    call behind it never runs."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempdir_class()
        cfg, cls.gate, token = gate_config(cls.dir)
        cls.server = Http(cfg, "--token-file", token)
        cls.host = f"127.0.0.1:{cls.server.port}"

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0

    def smuggled(self, i):
        headers, body = mark_call(f"smuggled-{i}")
        return raw_request(self.host, list(headers.items()), body)

    def test_every_ambiguous_shape_is_refused_and_nothing_behind_it_runs(self):
        headers, ping = mark_call("carrier")
        for i, (name, lines, body) in enumerate(shapes(ping)):
            with self.subTest(shape=name):
                data = shape_request(self.host, name, lines, body) + self.smuggled(i)
                raw, closed = exchange(self.server.port, data)
                got = statuses(raw)
                # One answer, an error; libmicrohttpd writes its own refusal's head twice
                # (0.9.75) ahead of one body: the first is the answer a client reads.
                self.assertTrue(got and got[0] in (400, 413), raw[:300])
                self.assertTrue(all(s == got[0] for s in got), raw[:300])
                self.assertTrue(closed, f"connection left open after: {raw[:300]!r}")
        # Each case waited for the server to close the connection: a call read from it would
        # have run, on that connection's one thread, before the close.
        self.assertEqual(sorted(f for f in os.listdir(self.gate) if f.startswith("smuggled")), [])
        self.assertFalse(os.path.exists(os.path.join(self.gate, "carrier")))

    def test_sound_shapes_are_served(self):
        headers, ping = mark_call("sound")
        cases = [
            ("plain", [f"Content-Length: {len(ping)}"], ping),
            ("chunked", ["Transfer-Encoding: chunked"], chunked(ping)),
            ("Chunked in another case", ["Transfer-Encoding: CHUNKED"], chunked(ping)),
            ("a chunk extension", ["Transfer-Encoding: chunked"], chunked(ping, ";a=b")),
            ("spaces around the length", [f"Content-Length:   {len(ping)}"], ping),
        ]
        for name, lines, body in cases:
            with self.subTest(shape=name):
                os.path.exists(os.path.join(self.gate, "sound")) and os.unlink(
                    os.path.join(self.gate, "sound"))
                raw, _ = exchange(self.server.port,
                                  shape_request(self.host, name, lines, body), timeout=5)
                self.assertEqual(statuses(raw), [200], raw[:300])
                self.assertTrue(os.path.exists(os.path.join(self.gate, "sound")))


def find_nginx():
    for p in [os.environ.get("NGINX"), "/usr/sbin/nginx", "/usr/bin/nginx"]:
        if p and os.access(p, os.X_OK):
            return p
    return shutil.which("nginx")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class FramingThroughNginx(unittest.TestCase):
    """The same shapes through the shipped nginx configuration in front of one instance."""

    @classmethod
    def setUpClass(cls):
        nginx = find_nginx()
        if not nginx:
            raise unittest.SkipTest("nginx is not installed (scripts/bootstrap installs it)")
        if not os.path.exists(SHIPPED_NGINX):
            raise unittest.SkipTest(f"no shipped nginx configuration at {SHIPPED_NGINX} "
                                    "(set CODECELL_NGINX_CONF)")
        cls.dir = tempdir_class()
        cfg, cls.gate, token = gate_config(cls.dir)
        listen = free_port()
        cls.host = f"127.0.0.1:{listen}"
        cls.server = Http(cfg, "--token-file", token, "--instance", "a", "--allow-host", cls.host)
        with open(SHIPPED_NGINX) as f:
            text = f.read()
        # The shipped file's instances at 8101-8103: the first is this one, the others are
        # left out of the pool (their own upstreams stay, unused).
        text = text.replace("127.0.0.1:8101", f"127.0.0.1:{cls.server.port}")
        for p in (8102, 8103):
            text = text.replace(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;\n", "")
        text = text.replace("listen 127.0.0.1:8080;", f"listen {cls.host};")
        with open(os.path.join(cls.dir, "codecell.conf"), "w") as f:
            f.write(text)
        user = "user root;\n" if os.getuid() == 0 else ""
        with open(os.path.join(cls.dir, "nginx.conf"), "w") as f:
            f.write(f"""{user}daemon off;
worker_processes 1;
pid {cls.dir}/nginx.pid;
error_log {cls.dir}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {cls.dir}/client_body;
    proxy_temp_path {cls.dir}/proxy;
    fastcgi_temp_path {cls.dir}/fastcgi;
    uwsgi_temp_path {cls.dir}/uwsgi;
    scgi_temp_path {cls.dir}/scgi;
    include {cls.dir}/codecell.conf;
}}
""")
        cls.nginx = subprocess.Popen([nginx, "-p", cls.dir, "-e", f"{cls.dir}/error.log", "-c",
                                      f"{cls.dir}/nginx.conf"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        LAUNCHED.append(cls.nginx.pid)
        cls.port = listen

        def listening():
            if cls.nginx.poll() is not None:
                raise AssertionError("nginx exited: " + cls.nginx.stderr.read().decode())
            try:
                socket.create_connection(("127.0.0.1", listen), timeout=1).close()
                return True
            except OSError:
                return False
        until(listening, "nginx to listen")

    @classmethod
    def tearDownClass(cls):
        cls.nginx.terminate()
        cls.nginx.wait(30)
        cls.nginx.stderr.close()
        assert cls.server.stop() == 0

    def smuggled(self, i):
        headers, body = mark_call(f"via-nginx-{i}")
        return raw_request(self.host, list(headers.items()), body)

    def test_nothing_smuggles_through_the_proxy(self):
        # nginx serves some of the shapes itself (it reads a chunked coding with a space after
        # it as chunked, and sends the instance a request of its own framing): the call behind
        # such a request is then the client's next request, and is answered to it.
        headers, ping = mark_call("carrier")
        answered = set()
        for i, (name, lines, body) in enumerate(shapes(ping)):
            with self.subTest(shape=name):
                data = shape_request(self.host, name, lines, body) + self.smuggled(i)
                # nginx may serve a request it reads unambiguously (then the one behind it is
                # the client's own next request on its own connection, which is not smuggling:
                # it is the server's verdict on the first that must not be 2xx).
                raw, _ = exchange(self.port, data, timeout=10)
                got = responses(raw)
                self.assertTrue(got, f"no answer: {raw[:300]!r}")
                answered.update(i for _, body in got if f'"mark via-nginx-{i}"'.encode() in body)
        # A run whose answer did not come back to its sender was hidden from nginx (smuggled):
        # every call that ran must have been answered on the connection that sent it. Poll a
        # while, for a smuggled run to land.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            ran = {int(f.rsplit("-", 1)[1]) for f in os.listdir(self.gate)
                   if f.startswith("via-nginx-")}
            self.assertLessEqual(ran, answered, "a call ran that nginx did not pass as one")
            time.sleep(0.1)

    def test_a_sound_call_goes_through(self):
        headers, body = mark_call("through-nginx")
        raw, _ = exchange(self.port, raw_request(self.host, list(headers.items()), body),
                          timeout=10)
        self.assertEqual(statuses(raw)[:1], [200], raw[:300])
        self.assertTrue(os.path.exists(os.path.join(self.gate, "through-nginx")))


if __name__ == "__main__":
    unittest.main()
