"""TLS termination for the secrets of a network cell's headers (docs/network.md, terminate_tls):
HTTPS to a host with headers is answered by the engine with a certificate from the cell's own
CA, which the guest trusts through the bundle its environment names; the engine adds the
headers and speaks TLS to the real server, verifying it against the engine's trust store (here
the test CA, through the engine's own SSL_CERT_FILE). In both languages and both start modes,
with Net::HTTP, open-uri, urllib, requests and pip, unchanged; over the CLI and MCP. The secret
reaches the server and never the sandbox; a host without headers is still only tunneled, the
guest checking the server itself; every refusal is an answer the model can act on."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import codecell, tempdir
from mcp_peer import INIT, Stdio, write_config
import net_servers

LANGUAGES = ("ruby", "python")
STARTS = ("exec", "fork")
SECRET = "tls-s3cr3t-for-the-test-only"
ENV_NAME = "CODECELL_TEST_TLS_SECRET"

# GETs and a POST over HTTPS with the guest's usual clients and no CA of its own: the
# environment's bundle is all they trust. The guest sends an Authorization of its own, which
# the operator's replaces.
GET_POST = {
    "ruby": 'require "net/http"\nrequire "open-uri"\n'
            'u = URI("https://api.example.test/nethttp")\n'
            'got = Net::HTTP.start(u.host, u.port, use_ssl: true) { |h| '
            'h.get(u.path, {"Authorization" => "guest-made-up"}).body }\n'
            '[got, URI.open("https://api.example.test/openuri").read, '
            'Net::HTTP.post(URI("https://api.example.test/form"), "a=1").body]',
    "python": 'import urllib.request, requests\n'
              'req = urllib.request.Request("https://api.example.test/urllib", '
              'headers={"Authorization": "guest-made-up"})\n'
              'got = urllib.request.urlopen(req, timeout=10).read().decode()\n'
              's = requests.Session()\n'
              '[got, s.get("https://api.example.test/requests", timeout=10).text, '
              's.post("https://api.example.test/form", data={"a": "1"}, timeout=10).text]',
}
PATHS = {"ruby": ["/nethttp", "/openuri", "/form"], "python": ["/urllib", "/requests", "/form"]}
# Everything of its sandbox the guest can read, searched for the secret: the environment, every
# readable /proc file of its processes, and every file under the folders it may list (the
# bundle with the cell's CA among them; links are skipped: they lead into /usr, where programs
# hold the words "PRIVATE KEY" as text); then one request, so the secret has been used.
SEARCH = {
    "ruby": 'require "net/http"\n'
            'Net::HTTP.get(URI("https://api.example.test/search"))\n'
            'hits = ENV.to_h.to_s.include?(ARGV_SECRET) ? ["env"] : []\n'
            'files = Dir.glob("/proc/[0-9]*/{environ,cmdline,status}") + '
            'Dir.glob("/{etc,work,tmp,codecell}/**/*", File::FNM_DOTMATCH)\n'
            'files.each { |f| next if !File.file?(f) || File.symlink?(f)\n'
            '  data = (File.binread(f) rescue "")\n'
            '  hits << f if data.include?(ARGV_SECRET) || data.include?("PRIVATE KEY") }\n'
            'hits',
    "python": 'import glob, os, urllib.request\n'
              'urllib.request.urlopen("https://api.example.test/search", timeout=10).read()\n'
              'hits = ["env"] if ARGV_SECRET in repr(dict(os.environ)) else []\n'
              'files = glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline")\n'
              'for top in ("/etc", "/work", "/tmp", "/codecell"):\n'
              '    for root, dirs, names in os.walk(top):\n'
              '        files += [os.path.join(root, n) for n in names\n'
              '                  if not os.path.islink(os.path.join(root, n))]\n'
              'for f in files:\n'
              '    try:\n        data = open(f, "rb").read()\n    except OSError:\n        continue\n'
              '    if ARGV_SECRET.encode() in data or b"PRIVATE KEY" in data:\n'
              '        hits.append(f)\n'
              'hits',
}


# The guest's own tunnels through the proxy, for the hostile cases: CONNECT by hand, then TLS
# with the environment's bundle (which trusts the cell's CA).
TUNNEL = ('import socket, ssl, struct, time\n'
          'def tunnel():\n'
          '    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)\n'
          '    s.sendall(b"CONNECT api.example.test:443 HTTP/1.1\\r\\n'
          'Host: api.example.test:443\\r\\n\\r\\n")\n'
          '    assert s.recv(1000).startswith(b"HTTP/1.1 200")\n'
          '    return s\n'
          'def read_all(t):\n'
          '    data = b""\n'
          '    while True:\n'
          '        try:\n            got = t.recv(65536)\n'
          '        except (ssl.SSLError, OSError):\n            break\n'
          '        if not got:\n            break\n'
          '        data += got\n'
          '    return data.decode("utf-8", "replace")\n'
          'ctx = ssl.create_default_context()\n')


def answer_of(lang, url, method="GET", cafile=None):
    """The guest's code for [status, body] of one HTTPS request (cafile: trust only it)."""
    if lang == "ruby":
        ca = 'h.ca_file = "%s"\n' % cafile if cafile else ""
        return ('require "net/http"\nu = URI("%s")\nh = Net::HTTP.new(u.host, u.port)\n'
                'h.use_ssl = true\n%s'
                'begin\n  r = h.send_request("%s", u.path)\n  [r.code.to_i, r.body]\n'
                'rescue OpenSSL::SSL::SSLError, SystemCallError, IOError => e\n'
                '  [0, e.message]\nend' % (url, ca, method))
    ctx = ('ctx = ssl.create_default_context(cafile="%s")\n' % cafile if cafile
           else "ctx = ssl.create_default_context()\n")
    return ('import http.client, urllib.request, urllib.error, ssl\n' + ctx +
            'try:\n    r = urllib.request.urlopen(urllib.request.Request("%s", method="%s"), '
            'timeout=10, context=ctx)\n    out = [r.status, r.read().decode()]\n'
            'except urllib.error.HTTPError as e:\n    out = [e.code, e.read().decode()]\n'
            'except (urllib.error.URLError, OSError, http.client.HTTPException) as e:\n'
            '    out = [0, str(e)]\nout'
            % (url, method))


class Servers:
    """Two HTTPS servers with certificates from a test CA: api.example.test, whose headers the
    engine adds (terminated), and other.example.test, which has none (tunneled)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="codecell-tls-")
        self.ca_dir = os.path.join(self.dir, "ca")
        os.mkdir(self.ca_dir)
        os.chmod(self.dir, 0o755)
        os.chmod(self.ca_dir, 0o755)
        self.ca, leaf, key = net_servers.make_ca(self.ca_dir,
                                                 ["api.example.test", "other.example.test"])
        os.chmod(self.ca, 0o644)
        self.api = net_servers.serve(tls=(leaf, key))
        self.other = net_servers.serve(tls=(leaf, key))

    def policy(self, **more):
        p = {"allow": ["api.example.test", "other.example.test"],
             "resolve": {"api.example.test": "127.0.0.1:%d" % self.api.server_address[1],
                         "other.example.test": "127.0.0.1:%d" % self.other.server_address[1]},
             "headers": {"api.example.test": {"Authorization": "Bearer ${%s}" % ENV_NAME}},
             "terminate_tls": True}
        p.update(more)
        return p

    def cell(self, lang, start="exec", timeout_ms=20000, **more):
        return {"name": lang, "language": lang, "pool": 1, "start": start,
                "limits": {"timeout_ms": timeout_ms, "cpu_ms": 10000},
                "mounts": [{"source": self.ca_dir, "dest": "/ca", "mode": "ro"}],
                "network": self.policy(**more)}

    def close(self):
        for s in (self.api, self.other):
            s.shutdown()
            s.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)


def setUpModule():
    global SERVERS, SAVED
    SERVERS = Servers()
    # The engine's own trust store: it verifies the servers against the test CA.
    SAVED = {k: os.environ.get(k) for k in ("SSL_CERT_FILE", ENV_NAME)}
    os.environ["SSL_CERT_FILE"] = SERVERS.ca
    os.environ[ENV_NAME] = SECRET


def tearDownModule():
    SERVERS.close()
    for k, v in SAVED.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


class Cli(unittest.TestCase):
    def run_cell(self, lang, code, start="exec", timeout_ms=20000, **policy):
        path = write_config(tempdir(self), [SERVERS.cell(lang, start, timeout_ms, **policy)])
        r = codecell("run", "--config", path, "--json", "-e", code, timeout=120)
        self.assertIsNotNone(r.result, r)
        self.assertNotIn(SECRET, r.stdout + r.stderr)
        return r

    def seen_since(self, server, before):
        return server.seen[before:]

    def test_the_headers_reach_an_https_server_through_the_usual_clients(self):
        for lang in LANGUAGES:
            for start in STARTS:
                with self.subTest(lang=lang, start=start):
                    before = len(SERVERS.api.seen)
                    r = self.run_cell(lang, GET_POST[lang], start)
                    self.assertEqual(r.status, "ok", r)
                    bodies = [json.loads(b) for b in r.result["value"]]
                    self.assertEqual([b["path"] for b in bodies], PATHS[lang])
                    self.assertEqual(bodies[2]["body"], "a=1")
                    seen = self.seen_since(SERVERS.api, before)
                    self.assertEqual([s["path"] for s in seen], PATHS[lang])
                    self.assertEqual([s["headers"].get("Authorization") for s in seen],
                                     ["Bearer " + SECRET] * 3)
                    self.assertEqual([s["headers"].get("Host") for s in seen],
                                     ["api.example.test"] * 3)
                    self.assertEqual([c["host"] for c in r.result["network"]],
                                     ["api.example.test"] * 3, r.result["network"])
                    self.assertFalse([c for c in r.result["network"] if c.get("refused")])

    def test_the_engine_resumes_its_tls_session_with_the_server(self):
        # The server's ticket from the first connection is offered on the next: an
        # abbreviated handshake, no new signature, the same headers.
        code = ('import urllib.request\n'
                '[urllib.request.urlopen("https://api.example.test/r%d" % i, timeout=10).read() '
                'for i in range(3)] and None')
        before = len(SERVERS.api.seen)
        r = self.run_cell("python", code)
        self.assertEqual(r.status, "ok", r)
        seen = self.seen_since(SERVERS.api, before)
        self.assertEqual([s["path"] for s in seen], ["/r0", "/r1", "/r2"])
        self.assertEqual([s["resumed"] for s in seen[1:]], [True, True], seen)
        self.assertEqual({s["headers"].get("Authorization") for s in seen}, {"Bearer " + SECRET})

    def test_pip_downloads_from_a_terminated_index_with_its_credentials(self):
        file_name = net_servers.add_index(SERVERS.api, "tlspkg", "1.0")
        code = ('import os\nfrom pip._internal.cli.main import main as pip\n'
                'status = pip(["download", "--no-deps", "--no-cache-dir", '
                '"--disable-pip-version-check", "--index-url", '
                '"https://api.example.test/simple/", "-d", "/work/dl", "tlspkg"])\n'
                '[status, sorted(os.listdir("/work/dl"))]')
        before = len(SERVERS.api.seen)
        r = self.run_cell("python", code)
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.result["value"], [0, [file_name]], r)
        seen = self.seen_since(SERVERS.api, before)
        self.assertEqual([s["path"] for s in seen], ["/simple/tlspkg/", "/files/" + file_name])
        self.assertTrue(all(s["headers"].get("Authorization") == "Bearer " + SECRET
                            for s in seen), seen)

    def test_the_secret_and_the_ca_key_are_nowhere_in_the_sandbox(self):
        for lang in LANGUAGES:
            for start in STARTS:
                with self.subTest(lang=lang, start=start):
                    code = SEARCH[lang].replace("ARGV_SECRET", json.dumps(SECRET))
                    r = self.run_cell(lang, code, start)
                    self.assertEqual(r.status, "ok", r)
                    self.assertEqual(r.result["value"], [], r.result["value"])
                    self.assertNotIn(SECRET, json.dumps(r.result))

    def test_the_cell_ca_is_a_constrained_ca_of_this_cell_only(self):
        code = 'open("/etc/ssl/codecell/ca-bundle.pem").read()'
        r = self.run_cell("python", code)
        self.assertEqual(r.status, "ok", r)
        bundle = r.result["value"]
        last = "-----BEGIN CERTIFICATE-----" + bundle.split("-----BEGIN CERTIFICATE-----")[-1]
        text = subprocess.run(["openssl", "x509", "-noout", "-text"], input=last, text=True,
                              capture_output=True, check=True).stdout
        self.assertIn("CA:TRUE, pathlen:0", text)
        self.assertIn("Permitted:", text)
        self.assertIn("DNS:api.example.test", text)
        self.assertNotIn("other.example.test", text)
        # The system's roots come first, so that hosts the engine does not terminate verify.
        system = "/etc/ssl/certs/ca-certificates.crt"
        if os.path.exists(system):
            with open(system) as f:
                self.assertTrue(bundle.startswith(f.read()[:2000]))
        # Another cell has another CA.
        again = self.run_cell("python", code)
        self.assertNotEqual(again.result["value"], bundle)

    def test_a_host_without_headers_is_tunneled_and_checked_by_the_guest(self):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                before = len(SERVERS.other.seen)
                # The guest trusting the test CA reaches the real server: no engine in between.
                r = self.run_cell(lang, answer_of(lang, "https://other.example.test/t",
                                                  cafile="/ca/ca.pem"))
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"][0], 200, r.result["value"])
                seen = self.seen_since(SERVERS.other, before)
                self.assertEqual([s["headers"].get("Authorization") for s in seen], [None])
                # With the environment's bundle only, the test CA is not trusted: the
                # certificate it saw was the server's, not one of the engine's.
                r = self.run_cell(lang, answer_of(lang, "https://other.example.test/t"))
                self.assertEqual(r.result["value"][0], 0, r.result["value"])
                self.assertIn("certificate verify failed", r.result["value"][1])

    def test_the_engine_verifies_the_server(self):
        saved = os.environ.pop("SSL_CERT_FILE")
        self.addCleanup(os.environ.__setitem__, "SSL_CERT_FILE", saved)
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                before = len(SERVERS.api.seen)
                r = self.run_cell(lang, answer_of(lang, "https://api.example.test/v"))
                self.assertEqual(r.result["value"][0], 502, r.result["value"])
                self.assertIn("TLS to api.example.test failed: the certificate of "
                              "api.example.test is not trusted by the engine",
                              r.result["value"][1])
                self.assertEqual(self.seen_since(SERVERS.api, before), [])

    def test_the_engine_looks_roots_up_by_hash_in_a_folder(self):
        # SSL_CERT_DIR (and the default folder, where it has its hash links): only the roots
        # a chain needs are read.
        folder = tempdir(self)
        shutil.copy(SERVERS.ca, os.path.join(folder, "test-ca.pem"))
        subprocess.run(["openssl", "rehash", folder], check=True, capture_output=True)
        saved = os.environ.pop("SSL_CERT_FILE")
        self.addCleanup(os.environ.__setitem__, "SSL_CERT_FILE", saved)
        os.environ["SSL_CERT_DIR"] = folder
        self.addCleanup(os.environ.pop, "SSL_CERT_DIR")
        before = len(SERVERS.api.seen)
        r = self.run_cell("python", answer_of("python", "https://api.example.test/dir"))
        self.assertEqual(r.result["value"][0], 200, r.result["value"])
        self.assertEqual([s["path"] for s in self.seen_since(SERVERS.api, before)], ["/dir"])

    def test_a_guest_that_does_not_trust_the_cell_ca_is_told_why(self):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                before = len(SERVERS.api.seen)
                r = self.run_cell(lang, answer_of(lang, "https://api.example.test/n",
                                                  cafile="/ca/ca.pem"))
                self.assertEqual(r.result["value"][0], 0, r.result["value"])
                self.assertIn("certificate verify failed", r.result["value"][1])
                refused = [c["refused"] for c in r.result["network"] if c.get("refused")]
                self.assertEqual(len(refused), 1, r.result["network"])
                self.assertIn("the guest must trust the cell's CA, which SSL_CERT_FILE names",
                              refused[0])
                self.assertEqual(self.seen_since(SERVERS.api, before), [])

    def test_the_policy_holds_inside_the_tunnel(self):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                before = len(SERVERS.api.seen)
                r = self.run_cell(lang, answer_of(lang, "https://api.example.test/m", "POST"),
                                  methods=["GET"])
                self.assertEqual(r.result["value"][0], 405, r.result["value"])
                self.assertIn("method POST is not allowed for this cell; allowed: GET",
                              r.result["value"][1])
                r = self.run_cell(lang, answer_of(lang, "https://api.example.test/t", "TRACE"))
                self.assertEqual(r.result["value"][0], 405, r.result["value"])
                self.assertIn("its answer is the request as the server got it",
                              r.result["value"][1])
                self.assertEqual(self.seen_since(SERVERS.api, before), [])

    def test_a_request_for_another_host_inside_the_tunnel_is_refused(self):
        code = ('import http.client, socket, ssl\n'
                'c = http.client.HTTPSConnection("127.0.0.1", 3128, timeout=10)\n'
                'c.set_tunnel("api.example.test", 443)\n'
                'c.putrequest("GET", "/h", skip_host=True)\n'
                'c.putheader("Host", "evil.example.org")\nc.endheaders()\n'
                'r = c.getresponse()\nhost = [r.status, r.read().decode()]\n'
                # A hello for another name in a tunnel opened for api.example.test.
                's = socket.create_connection(("127.0.0.1", 3128), timeout=10)\n'
                's.sendall(b"CONNECT api.example.test:443 HTTP/1.1\\r\\n'
                'Host: api.example.test:443\\r\\n\\r\\n")\n'
                's.recv(1000)\n'
                'ctx = ssl.create_default_context()\nctx.check_hostname = False\n'
                'ctx.verify_mode = ssl.CERT_NONE\n'
                't = ctx.wrap_socket(s, server_hostname="evil.example.org")\n'
                't.sendall(b"GET / HTTP/1.1\\r\\nHost: api.example.test\\r\\n\\r\\n")\n'
                'sni = t.recv(1000).decode().split("\\r\\n")[0]\n'
                '[host, sni]')
        before = len(SERVERS.api.seen)
        r = self.run_cell("python", code)
        self.assertEqual(r.status, "ok", r)
        host, sni = r.result["value"]
        self.assertEqual(host[0], 400, host)
        self.assertIn("the Host header does not name the host and port of the tunnel", host[1])
        self.assertEqual(sni, "HTTP/1.1 400 Bad Request")
        refused = [c["refused"] for c in r.result["network"] if c.get("refused")]
        self.assertTrue(any("names evil.example.org, not api.example.test" in x
                            for x in refused), refused)
        self.assertEqual(self.seen_since(SERVERS.api, before), [])

    def test_the_byte_cap_holds_inside_the_tunnel(self):
        r = self.run_cell("python", answer_of("python", "https://api.example.test/bytes/200000"),
                          bytes=20000)
        self.assertEqual(r.status, "ok", r)
        refused = [c["refused"] for c in r.result["network"] if c.get("refused")]
        self.assertEqual(refused, ["over 20000 bytes in this run"], r.result["network"])

    def test_the_description_says_which_hosts_get_credentials(self):
        path = write_config(tempdir(self), [SERVERS.cell("python")])
        r = codecell("describe", "--config", path)
        self.assertEqual(r.code, 0, r)
        self.assertIn("The proxy adds the credentials these hosts need (never visible to the "
                      "code):\napi.example.test, over HTTP and HTTPS.", r.stdout)
        self.assertNotIn(SECRET, r.stdout)

    def test_a_slow_server_ends_with_the_run(self):
        r = self.run_cell("python", answer_of("python", "https://api.example.test/slow/30000"),
                          timeout_ms=3000)
        self.assertEqual(r.status, "timeout", r)


class Hostile(unittest.TestCase):
    """What a hostile review of TLS termination tried: guest code that wants the secret, the
    engine down, or the secret somewhere it does not belong."""

    def run_cell(self, lang, code, timeout_ms=20000, **policy):
        return Cli.run_cell(self, lang, code, "exec", timeout_ms, **policy)

    def test_plain_http_never_carries_the_secret_of_a_terminated_host(self):
        # The operator asked for the secret inside TLS, to a server the engine verified: a
        # guest that asks for http:// instead must not get it sent in the clear (to whoever
        # is on the path, or answers the engine's lookup).
        plain = net_servers.serve()
        self.addCleanup(plain.server_close)
        self.addCleanup(plain.shutdown)
        resolve = {"api.example.test": "127.0.0.1:%d" % plain.server_address[1]}
        code = {"ruby": 'require "net/http"\n'
                        'r = Net::HTTP.get_response(URI("http://api.example.test/plain"))\n'
                        '[r.code.to_i, r.body]',
                "python": 'import urllib.request, urllib.error\n'
                          'try:\n'
                          '    r = urllib.request.urlopen("http://api.example.test/plain", '
                          'timeout=10)\n    out = [r.status, r.read().decode()]\n'
                          'except urllib.error.HTTPError as e:\n'
                          '    out = [e.code, e.read().decode()]\nout'}
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                r = self.run_cell(lang, code[lang], resolve=resolve)
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"][0], 400, r.result["value"])
                self.assertIn("plain HTTP to api.example.test is refused", r.result["value"][1])
                self.assertIn("https://", r.result["value"][1])
        self.assertEqual(plain.seen, [])

    def test_a_second_request_in_the_tunnel_and_a_reset_mid_answer(self):
        # One TLS stream: a POST whose body has a second request after it, a head over the
        # limit, and a guest that resets the connection while the engine writes a long
        # answer (OpenSSL writes with write(2): SIGPIPE, unless the engine blocks it).
        code = (TUNNEL +
                'out = []\n'
                't = ctx.wrap_socket(tunnel(), server_hostname="api.example.test")\n'
                't.sendall(b"POST /first HTTP/1.1\\r\\nHost: api.example.test\\r\\n'
                'Content-Length: 5\\r\\n\\r\\nhelloGET /smuggled HTTP/1.1\\r\\n'
                'Host: api.example.test\\r\\n\\r\\n")\n'
                'out.append(read_all(t))\n'
                't = ctx.wrap_socket(tunnel(), server_hostname="api.example.test")\n'
                't.sendall(b"GET /big HTTP/1.1\\r\\nHost: api.example.test\\r\\nX: " + '
                'b"a" * 20000 + b"\\r\\n\\r\\n")\n'
                'out.append(read_all(t).split("\\r\\n")[0])\n'
                't = ctx.wrap_socket(tunnel(), server_hostname="api.example.test")\n'
                't.sendall(b"GET /bytes/30000000 HTTP/1.1\\r\\nHost: api.example.test\\r\\n'
                '\\r\\n")\n'
                't.recv(1000)\n'
                # A FIN first: the reset then finds the engine's side in CLOSE_WAIT, and its
                # next write fails with EPIPE (and SIGPIPE), not ECONNRESET.
                't.shutdown(socket.SHUT_WR)\n'
                'time.sleep(0.2)\n'
                't.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))\n'
                't.close()\n'
                'time.sleep(0.5)\n'
                'import urllib.request\n'
                'out.append(urllib.request.urlopen("https://api.example.test/after", '
                'timeout=10).read().decode())\n'
                'out')
        before = len(SERVERS.api.seen)
        r = self.run_cell("python", code)
        self.assertEqual(r.status, "ok", r)
        first, big, after = r.result["value"]
        self.assertTrue(first.startswith("HTTP/1.1 200"), first)
        self.assertIn('"body": "hello"', first)
        self.assertNotIn("smuggled", first)
        self.assertEqual(big, "HTTP/1.1 400 Bad Request")
        self.assertEqual(json.loads(after)["path"], "/after")
        seen = [s["path"] for s in self.seen_since(before)]
        self.assertEqual(seen, ["/first", "/bytes/30000000", "/after"])

    def test_a_tunnel_the_run_ends_is_not_blamed_on_the_cell_ca(self):
        # A guest that opened a tunnel and never shook hands did nothing wrong with the CA:
        # the model must not be told to fix its trust store.
        r = self.run_cell("python", TUNNEL + 'held = tunnel()\n1')
        self.assertEqual(r.status, "ok", r)
        refused = [c.get("refused") for c in r.result["network"]]
        self.assertEqual(refused, ["the run ended"], r.result["network"])

    def test_an_answer_read_whole_before_the_server_closes_is_no_refusal(self):
        # The guest has its whole answer (Content-Length) and ends its run while the server
        # still holds the connection: nothing was refused, and the model must not read so.
        r = self.run_cell("python", 'import urllib.request\n'
                          'urllib.request.urlopen("https://api.example.test/hold/3000", '
                          'timeout=10).read().decode()')
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(json.loads(r.result["value"])["path"], "/hold/3000")
        self.assertEqual([c.get("refused") for c in r.result["network"]], [None],
                         r.result["network"])

    # The engine closes each terminated connection after one answer, and says so in the
    # answer's head, whatever the server said (Python's http.server says nothing): a client
    # that kept the connection would send its next request into a closing socket.
    def test_the_answer_says_the_connection_closes(self):
        code = ('import http.client\n'
                'c = http.client.HTTPSConnection("api.example.test", 443, timeout=10)\n'
                'c.set_tunnel("api.example.test", 443)\n'
                'c.request("GET", "/hold/500")\nr = c.getresponse()\nr.read()\n'
                'r.getheader("Connection")')
        r = self.run_cell("python", code.replace('"api.example.test", 443, timeout',
                                                 '"127.0.0.1", 3128, timeout'))
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.result["value"], "close", r)

    def seen_since(self, before):
        return SERVERS.api.seen[before:]



class Mcp(unittest.TestCase):
    """Over MCP, in a session: each eval's connections in its own record, the secret in no
    answer and no line of the operator's log."""

    def test_hostile_tunnels_leave_no_fd_or_thread_in_the_engine(self):
        # Half-open tunnels (a 200 and nothing, half a ClientHello, half a head after the
        # handshake), a reset mid-answer and a close without close_notify, each run ending
        # with some of them still open: the serving engine's fds and threads come back.
        cells = [SERVERS.cell("python", timeout_ms=4000)]
        server = Stdio(write_config(tempdir(self), cells))
        self.addCleanup(server.stop_if_running)
        server.request(INIT)
        # The tunnels that reach the server come first: the test server shakes hands in its
        # accept, and the engine's idle connection of a half-open tunnel would hold it there.
        hostile = (TUNNEL +
                   't = ctx.wrap_socket(tunnel(), server_hostname="api.example.test")\n'
                   't.sendall(b"GET /bytes/5000000 HTTP/1.1\\r\\nHost: api.example.test'
                   '\\r\\n\\r\\n")\n'
                   't.recv(1000)\n'
                   't.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))\n'
                   't.close()\n'
                   't = ctx.wrap_socket(tunnel(), server_hostname="api.example.test")\n'
                   'socket.socket.close(t)\n'
                   'held = [tunnel() for _ in range(3)]\n'
                   's = tunnel()\ns.sendall(b"\\x16\\x03\\x01\\x02\\x00\\x01\\x00\\x01\\xfc")\n'
                   'held.append(s)\n'
                   't = ctx.wrap_socket(tunnel(), server_hostname="api.example.test")\n'
                   't.sendall(b"GET /half HTTP/1.1\\r\\nHo")\nheld.append(t)\n'
                   'len(held)')
        pid = server.proc.pid

        def counts():
            return (len(os.listdir("/proc/%d/fd" % pid)), len(os.listdir("/proc/%d/task" % pid)))

        def call(i, code):
            return server.request({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                   "params": {"name": "python", "arguments": {"code": code}}})

        call(10, hostile)  # the first: the pool and its threads are made
        base = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the pool refills after each run
            base = counts()
            time.sleep(0.5)
            if counts() == base:
                break
        for i in range(3):
            answer = call(20 + i, hostile)
            structured = answer["result"]["structuredContent"]
            self.assertEqual(structured.get("value"), 5, answer)
        # A leak stays; a sandbox the pool is making now and then comes and goes.
        def back(now):
            return now[0] <= base[0] and now[1] <= base[1]
        now = counts()
        deadline = time.monotonic() + 60
        while not back(now) and time.monotonic() < deadline:
            time.sleep(0.2)
            now = counts()
        self.assertTrue(back(now), "fds and threads of the engine: %s before, %s after"
                        % (base, now))
        server.close()

    def test_a_session_over_mcp_and_the_log(self):
        folder = tempdir(self)
        log = os.path.join(folder, "serve.log")
        cells = [SERVERS.cell("python")]
        server = Stdio(write_config(folder, cells), "--log", log)
        self.addCleanup(server.stop_if_running)
        server.request(INIT)
        answers = []
        for i, path in enumerate(("/s1", "/s2")):
            code = ('import urllib.request\n'
                    'urllib.request.urlopen("https://api.example.test%s", timeout=10).read()'
                    '.decode()' % path)
            answers.append(server.request({"jsonrpc": "2.0", "id": i + 10, "method": "tools/call",
                                           "params": {"name": "python",
                                                      "arguments": {"code": code,
                                                                    "session": "s"}}}))
        server.close()
        for answer, path in zip(answers, ("/s1", "/s2")):
            self.assertNotIn(SECRET, json.dumps(answer))
            structured = answer["result"]["structuredContent"]
            self.assertEqual(json.loads(structured["value"])["path"], path, structured)
            self.assertEqual([c["host"] for c in structured["network"]], ["api.example.test"])
        with open(log) as f:
            text = f.read()
        self.assertNotIn(SECRET, text)
        self.assertIn("api.example.test", text)


if __name__ == "__main__":
    unittest.main()
