"""Controlled egress end to end (docs/network.md): a cell's network policy lets its code reach
the hosts it allows, over HTTP and HTTPS, through the engine's proxy and nothing else; in both
languages, both start modes, over the CLI and over MCP (a session too). The servers are real
ones on this machine's loopback (net_servers.py), reached through the policy's "resolve"
entries; the guest's libraries are the usual ones (Net::HTTP and open-uri, urllib and
http.client) with the proxy variables the sandbox sets."""
import json
import os
import shutil
import socket
import time
import unittest

import tempfile

from harness import codecell, tempdir
from mcp_peer import INIT, Http, Stdio, write_config
import net_servers

LANGUAGES = ("ruby", "python")
STARTS = ("exec", "fork")
SECRET = "s3cr3t-token-for-the-test-only"

GET_BOTH = {
    "ruby": 'require "net/http"\nrequire "open-uri"\n'
            'h = Net::HTTP.new("api.example.test", 443)\nh.use_ssl = true\n'
            'h.ca_file = "/ca/ca.pem"\n'
            'post = Net::HTTP.post(URI("http://plain.example.test/form"), "a=1")\n'
            '[h.get("/secure").body, URI.open("http://plain.example.test/plain").read, post.body]',
    "python": 'import urllib.request, ssl\n'
              'ctx = ssl.create_default_context(cafile="/ca/ca.pem")\n'
              'get = lambda url, **kw: urllib.request.urlopen(url, timeout=10, **kw).read().decode()\n'
              '[get("https://api.example.test/secure", context=ctx), '
              'get("http://plain.example.test/plain"), '
              'get(urllib.request.Request("http://plain.example.test/form", data=b"a=1"))]',
}
# What the proxy answers for a host or address the policy does not allow: [status, body].
REFUSED = {
    "ruby": 'require "net/http"\ndef ask(url)\n  r = Net::HTTP.get_response(URI(url))\n'
            '  [r.code.to_i, r.body]\n'
            # Net::HTTP goes around the proxy for a loopback address (URI#find_proxy), and
            # then nothing in the sandbox answers.
            'rescue SystemCallError => e\n  [0, e.class.name]\nend\n',
    "python": 'import urllib.request, urllib.error\ndef ask(url):\n    try:\n'
              '        r = urllib.request.urlopen(url, timeout=10)\n'
              '        return [r.status, r.read().decode()]\n'
              '    except urllib.error.HTTPError as e:\n        return [e.code, e.read().decode()]\n',
}
# A tunnel to an allowed host whose TLS hello names another (SNI): the proxy must not relay it.
SNI_MISMATCH = {
    "ruby": 'require "socket"\nrequire "openssl"\n'
            's = TCPSocket.new("127.0.0.1", 3128)\n'
            's.write("CONNECT api.example.test:443 HTTP/1.1\\r\\nHost: api.example.test:443\\r\\n\\r\\n")\n'
            'head = s.readpartial(1000)\n'
            'ctx = OpenSSL::SSL::SSLContext.new\nctx.verify_mode = OpenSSL::SSL::VERIFY_NONE\n'
            'tls = OpenSSL::SSL::SSLSocket.new(s, ctx)\ntls.hostname = "evil.example.org"\n'
            'begin\n  tls.connect\n  "handshake went through"\n'
            'rescue OpenSSL::SSL::SSLError, SystemCallError, IOError => e\n'
            '  "refused: " + head.lines.first.to_s.strip\nend',
    "python": 'import socket, ssl\n'
              's = socket.create_connection(("127.0.0.1", 3128))\n'
              's.sendall(b"CONNECT api.example.test:443 HTTP/1.1\\r\\nHost: api.example.test:443\\r\\n\\r\\n")\n'
              'head = s.recv(1000).decode()\n'
              'ctx = ssl.create_default_context()\nctx.check_hostname = False\n'
              'ctx.verify_mode = ssl.CERT_NONE\n'
              'try:\n    ctx.wrap_socket(s, server_hostname="evil.example.org")\n'
              '    r = "handshake went through"\n'
              'except (ssl.SSLError, OSError) as e:\n    r = "refused: " + head.splitlines()[0]\nr',
}
# What the guest can see of its own sandbox: the environment and every readable /proc file
# of its processes, searched for the secret the proxy adds.
SEARCH_SECRET = {
    "ruby": 'hits = ENV.to_h.to_s.include?("%s") ? ["env"] : []\n'
            'Dir.glob("/proc/[0-9]*/{environ,cmdline}").each { |f| '
            'hits << f if (File.binread(f) rescue "").include?("%s") }\n'
            'require "net/http"\nNet::HTTP.get(URI("http://plain.example.test/echo"))\nhits',
    "python": 'import glob, os, urllib.request\n'
              'hits = ["env"] if "%s" in repr(dict(os.environ)) else []\n'
              'for f in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):\n'
              '    try:\n        data = open(f, "rb").read()\n    except OSError:\n        continue\n'
              '    hits += [f] if b"%s" in data else []\n'
              'urllib.request.urlopen("http://plain.example.test/echo", timeout=10).read()\nhits',
}
# A server that keeps the connection open past the end of the run.
SLOW = {
    "ruby": 'require "net/http"\nh = Net::HTTP.new("plain.example.test", 80)\nh.read_timeout = 60\n'
            'h.get("/slow/30000")',
    "python": 'import urllib.request\n'
              'urllib.request.urlopen("http://plain.example.test/slow/30000", timeout=60)',
}
# More connections than the policy allows in one run: how many got through.
FLOOD = {
    "ruby": 'require "net/http"\n(1..6).map { |i| Net::HTTP.get_response(URI("http://plain.example.test/#{i}")).code.to_i }',
    "python": 'import urllib.request, urllib.error\ndef code(i):\n    try:\n'
              '        return urllib.request.urlopen("http://plain.example.test/%d" % i, timeout=10).status\n'
              '    except urllib.error.HTTPError as e:\n        return e.code\n'
              '[code(i) for i in range(1, 7)]',
}
BIG = {
    "ruby": 'require "net/http"\nbegin\n  Net::HTTP.get(URI("http://plain.example.test/bytes/400000")).bytesize\n'
            'rescue StandardError => e\n  e.class.name\nend',
    "python": 'import urllib.request\ntry:\n'
              '    r = len(urllib.request.urlopen("http://plain.example.test/bytes/400000", timeout=10).read())\n'
              'except Exception as e:\n    r = type(e).__name__\nr',
}


class Servers:
    """An HTTPS server for api.example.test and a plain HTTP one for plain.example.test, with a
    test CA the guest reads from /ca."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="codecell-net-")
        self.ca_dir = os.path.join(self.dir, "ca")
        os.mkdir(self.ca_dir)
        os.chmod(self.dir, 0o755)
        os.chmod(self.ca_dir, 0o755)
        _, leaf, key = net_servers.make_ca(self.ca_dir, ["api.example.test"])
        os.chmod(os.path.join(self.ca_dir, "ca.pem"), 0o644)
        self.https = net_servers.serve(tls=(leaf, key))
        self.http = net_servers.serve()

    def policy(self, **more):
        p = {"allow": ["api.example.test", "plain.example.test", "localhost"],
             "resolve": {"api.example.test": "127.0.0.1:%d" % self.https.server_address[1],
                         "plain.example.test": "127.0.0.1:%d" % self.http.server_address[1]}}
        p.update(more)
        return p

    def cell(self, lang, start="exec", **more):
        return {"name": lang, "language": lang, "pool": 1, "start": start,
                "limits": {"timeout_ms": 20000, "cpu_ms": 10000},
                "mounts": [{"source": self.ca_dir, "dest": "/ca", "mode": "ro"}],
                "network": self.policy(**more)}

    def close(self):
        for s in (self.https, self.http):
            s.shutdown()
            s.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)


def setUpModule():
    global SERVERS
    SERVERS = Servers()


def tearDownModule():
    SERVERS.close()


class Cli(unittest.TestCase):
    def run_cell(self, lang, code, start="exec", **policy):
        path = write_config(tempdir(self), [SERVERS.cell(lang, start, **policy)])
        r = codecell("run", "--config", path, "--json", "-e", code, timeout=120)
        self.assertIsNotNone(r.result, r)
        return r

    def test_allowed_hosts_over_http_and_https_in_both_modes(self):
        for lang in LANGUAGES:
            for start in STARTS:
                with self.subTest(lang=lang, start=start):
                    r = self.run_cell(lang, GET_BOTH[lang], start)
                    self.assertEqual(r.status, "ok", r)
                    secure, plain, form = (json.loads(v) for v in r.result["value"])
                    self.assertEqual((secure["path"], secure["host"]), ("/secure", "api.example.test"))
                    self.assertEqual((plain["method"], plain["path"]), ("GET", "/plain"))
                    self.assertEqual((form["method"], form["body"]), ("POST", "a=1"))
                    hosts = sorted((c["host"], c["port"]) for c in r.result["network"])
                    self.assertEqual(hosts, [("api.example.test", 443), ("plain.example.test", 80),
                                             ("plain.example.test", 80)])
                    self.assertTrue(all("refused" not in c and c["bytes_in"] > 0
                                        for c in r.result["network"]))

    def test_what_the_policy_does_not_allow_is_refused_with_the_reason(self):
        asks = ('[ask("http://example.org/"), ask("http://127.0.0.1:%d/"), ask("http://localhost/"),'
                ' ask("http://[::1]:%d/"), ask("http://169.254.169.254/latest/meta-data/")]'
                % ((SERVERS.http.server_address[1],) * 2))
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                r = self.run_cell(lang, REFUSED[lang] + asks)
                self.assertEqual(r.status, "ok", r)
                org, literal, local, v6, metadata = r.result["value"]
                self.assertEqual(org[0], 403)
                self.assertIn("example.org:80 is not allowed for this cell", org[1])
                self.assertIn("allowed: api.example.test, plain.example.test, localhost", org[1])
                self.assertEqual(metadata[0], 403, metadata)
                for answer in (literal, local, v6):
                    self.assertIn(answer[0], (403, 0), answer)
                if lang == "python":  # urllib asks the proxy for loopback addresses too
                    self.assertEqual([literal[0], local[0], v6[0]], [403, 403, 403])
                    # localhost is allowed by name, but it is loopback: never reached.
                    self.assertIn("private", local[1])
                answered = sum(a[0] == 403 for a in r.result["value"])
                self.assertEqual(len(r.result["network"]), answered)
                self.assertTrue(all(c.get("refused") for c in r.result["network"]))
                # The server behind those addresses saw none of it.
                self.assertFalse([s for s in SERVERS.http.seen if s["path"] == "/"])

    def test_requests_and_pip_download_go_through_the_proxy(self):
        file_name = net_servers.add_index(SERVERS.https, "tinypkg", "1.0")
        code = ('import requests, os\n'
                'got = requests.get("https://api.example.test/req", verify="/ca/ca.pem", timeout=10).json()\n'
                'from pip._internal.cli.main import main as pip\n'
                'status = pip(["download", "--no-deps", "--no-cache-dir", "--disable-pip-version-check",\n'
                '              "--cert", "/ca/ca.pem", "--index-url", "https://api.example.test/simple/",\n'
                '              "-d", "/work/dl", "tinypkg"])\n'
                '[got["path"], status, sorted(os.listdir("/work/dl"))]')
        for start in STARTS:
            with self.subTest(start=start):
                r = self.run_cell("python", code, start)
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"], ["/req", 0, [file_name]], r)

    def test_a_redirect_to_a_refused_host_is_refused_when_followed(self):
        # The server's redirect is the guest's to follow, through the proxy again, where the
        # new host is checked as any other.
        code = {"python": 'import urllib.request, urllib.error\ntry:\n'
                          '    urllib.request.urlopen("http://plain.example.test/redirect?to='
                          'http://example.org/x", timeout=10)\n'
                          'except urllib.error.HTTPError as e:\n    r = [e.code, e.read().decode()]\nr',
                "ruby": 'require "open-uri"\nbegin\n'
                        '  URI.open("http://plain.example.test/redirect?to=http://example.org/x")\n'
                        'rescue OpenURI::HTTPError => e\n  [e.io.status[0].to_i, e.io.read]\nend'}
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                r = self.run_cell(lang, code[lang])
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"][0], 403, r.result["value"])
                self.assertIn("network access to example.org:80 is not allowed",
                              r.result["value"][1])
                self.assertEqual([(c["host"], bool(c.get("refused")))
                                  for c in r.result["network"]],
                                 [("plain.example.test", False), ("example.org", True)])

    def test_a_plain_answer_says_the_connection_closes(self):
        # The proxy closes a plain-HTTP connection after one answer and says so in its head,
        # whatever the server said: a client must not send its next request there.
        code = {"python": 'import urllib.request\n'
                          'r = urllib.request.urlopen("http://plain.example.test/hold/300", '
                          'timeout=10)\nr.read()\nr.headers.get("Connection")',
                "ruby": 'require "net/http"\n'
                        'Net::HTTP.get_response(URI("http://plain.example.test/hold/300"))["Connection"]'}
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                r = self.run_cell(lang, code[lang])
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"], "close", r)

    def test_a_tls_hello_for_another_host_is_not_relayed(self):
        before = len(SERVERS.https.seen)
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                r = self.run_cell(lang, SNI_MISMATCH[lang])
                self.assertEqual(r.status, "ok", r)
                self.assertTrue(r.result["value"].startswith("refused: "), r.result["value"])
                refused = [c for c in r.result["network"] if c.get("refused")]
                self.assertEqual(len(refused), 1, r.result["network"])
                self.assertIn("evil.example.org", refused[0]["refused"])
        self.assertEqual(len(SERVERS.https.seen), before)

    def test_the_secret_reaches_the_server_and_never_the_sandbox(self):
        os.environ["CODECELL_TEST_NETWORK_SECRET"] = SECRET
        self.addCleanup(os.environ.pop, "CODECELL_TEST_NETWORK_SECRET")
        headers = {"plain.example.test": {"Authorization": "Bearer ${CODECELL_TEST_NETWORK_SECRET}"}}
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                before = len(SERVERS.http.seen)
                r = self.run_cell(lang, SEARCH_SECRET[lang].replace("%s", SECRET), headers=headers)
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"], [])
                seen = SERVERS.http.seen[before:]
                self.assertEqual([s["headers"].get("Authorization") for s in seen],
                                 ["Bearer " + SECRET])
                self.assertNotIn(SECRET, r.stdout)
                self.assertNotIn(SECRET, r.stderr)

    def test_a_connection_never_outlives_its_run(self):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                path = write_config(tempdir(self), [dict(SERVERS.cell(lang), limits={"timeout_ms": 2000})])
                start = time.monotonic()
                r = codecell("run", "--config", path, "--json", "-e", SLOW[lang], timeout=120)
                self.assertEqual(r.status, "timeout", r)
                self.assertLess(time.monotonic() - start, 25, "the run ended at its wall clock")
                self.assertEqual(r.result["network"][0]["host"], "plain.example.test")

    def test_the_connection_cap_and_the_byte_cap(self):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                r = self.run_cell(lang, FLOOD[lang], connections=3)
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"][:3], [200, 200, 200])
                self.assertEqual(r.result["value"][3:], [429, 429, 429])
                self.assertEqual(sum(bool(c.get("refused")) for c in r.result["network"]), 1)
                self.assertIn("over 3 connections", json.dumps(r.result["network"]))
                r = self.run_cell(lang, BIG[lang], bytes=100000)
                self.assertEqual(r.status, "ok", r)
                self.assertNotEqual(r.result["value"], 400000)
                self.assertIn("over 100000 bytes", json.dumps(r.result["network"]))

    def test_a_direct_connection_fails_with_a_hint_naming_the_proxy(self):
        code = {"ruby": 'require "socket"\nTCPSocket.new("93.184.215.14", 80)',
                "python": 'import socket\nsocket.create_connection(("93.184.215.14", 80), timeout=5)'}
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                r = self.run_cell(lang, code[lang])
                self.assertEqual(r.status, "error", r)
                hint = r.result["error"].get("hint", "")
                self.assertIn("only through its proxy", hint, r)
                self.assertIn("api.example.test, plain.example.test", hint)

    def test_a_bad_policy_is_refused_at_load_naming_its_place(self):
        for bad, words in (({"allow": ["https://x.example.test/"]}, "cells[0].network.allow[0]"),
                           ({"allow": ["*"]}, "cells[0].network.allow[0]"),
                           ({"allow": ["x.example.test:70000"]}, "cells[0].network.allow[0]"),
                           ({"allow": []}, "cells[0].network.allow"),
                           ({"allow": ["x.example.test"], "speed": 1}, "cells[0].network")):
            with self.subTest(bad=bad):
                cell = {"name": "ruby", "language": "ruby", "network": bad}
                r = codecell("run", "--config", write_config(tempdir(self), [cell]), "-e", "1")
                self.assertNotEqual(r.code, 0)
                self.assertIn(words, r.stderr)

    def test_allow_net_flag(self):
        r = codecell("run", "--json", "--lang", "python", "--allow-net", "example.test:8443",
                     "-e", "import os\nos.environ['HTTPS_PROXY']")
        self.assertEqual(r.result["value"], "http://127.0.0.1:3128", r)
        r = codecell("run", "--lang", "python", "--allow-net", "https://x/", "-e", "1")
        self.assertEqual(r.code, 2, r)
        self.assertIn("--allow-net", r.stderr)
        self.assertIn("scheme", r.stderr)

    def test_a_cell_without_a_policy_is_as_before(self):
        r = codecell("run", "--json", "--lang", "python", "-e",
                     "import os, socket\n[os.environ.get('HTTPS_PROXY'), "
                     "socket.socket(socket.AF_INET, socket.SOCK_STREAM) and 1]")
        self.assertEqual(r.status, "error", r)
        self.assertNotIn("network", r.result)


class OverMcp(unittest.TestCase):
    """A session's evals each get the policy; the description lists the hosts; what the proxy
    refused reaches the model's text in one line."""

    def setUp(self):
        cells = [dict(SERVERS.cell(lang), name=lang) for lang in LANGUAGES]
        self.peer = Stdio(write_config(tempdir(self), cells))
        self.peer.request(INIT)
        self.next_id = 1

    def tearDown(self):
        self.peer.close()

    def call(self, tool, code, **args):
        self.next_id += 1
        return self.peer.request({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                                  "params": {"name": tool,
                                             "arguments": {"code": code, **args}}})["result"]

    def test_the_description_lists_the_allowed_hosts(self):
        tools = self.peer.request({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
        cells = [t for t in tools["result"]["tools"] if t["name"] in LANGUAGES]
        self.assertEqual(len(cells), 2)
        for tool in cells:
            self.assertIn("## Network", tool["description"])
            self.assertIn("api.example.test, plain.example.test, localhost", tool["description"])
            self.assertTrue(tool["annotations"]["openWorldHint"])

    def test_a_connection_opened_between_evals_is_closed_unanswered(self):
        # A thread of the session's first eval connects once that eval is over, and says so in
        # a folder the test reads; the next eval must not serve it.
        code = {
            "ruby": ('require "socket"\n$t = Thread.new do\n  sleep 0.3 until File.exist?("/out/go")\n'
                     '  s = TCPSocket.new("127.0.0.1", 3128)\n'
                     '  s.write("GET http://plain.example.test/between HTTP/1.1\\r\\nHost: plain.example.test\\r\\n\\r\\n")\n'
                     '  File.write("/out/connected", "1")\n  (s.read || "").bytesize\n'
                     'rescue SystemCallError => e\n  e.class.name\nend\nnil', '$t.value'),
            "python": ('import socket, threading, os, time\nbox = []\ndef later():\n'
                       '    while not os.path.exists("/out/go"):\n        time.sleep(0.3)\n'
                       '    s = socket.create_connection(("127.0.0.1", 3128))\n'
                       '    s.sendall(b"GET http://plain.example.test/between HTTP/1.1\\r\\nHost: plain.example.test\\r\\n\\r\\n")\n'
                       '    open("/out/connected", "w").write("1")\n'
                       '    try:\n        box.append(len(s.recv(65536)))\n'
                       '    except OSError as e:\n        box.append(type(e).__name__)\n'
                       't = threading.Thread(target=later)\nt.start()',
                       't.join(30)\nbox[0]'),
        }
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                out = tempdir(self)
                os.chmod(out, 0o777)
                cells = [dict(SERVERS.cell(lang), name=lang,
                              mounts=[{"source": out, "dest": "/out", "mode": "rw"}])]
                peer = Stdio(write_config(tempdir(self), cells))
                self.addCleanup(peer.close)
                peer.request(INIT)
                first, second = code[lang]
                call = lambda i, c: peer.request({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                                  "params": {"name": lang, "arguments": {
                                                      "code": c, "session": "between"}}})["result"]
                self.assertFalse(call(2, first).get("isError"))
                open(os.path.join(out, "go"), "w").close()
                deadline = time.monotonic() + 60
                while not os.path.exists(os.path.join(out, "connected")):
                    self.assertLess(time.monotonic(), deadline, "the guest never connected")
                    time.sleep(0.05)
                before = len(SERVERS.http.seen)
                r = call(3, second)
                self.assertIn(r["structuredContent"]["value"], (0, "ConnectionResetError",
                                                                "Errno::ECONNRESET"), r)
                self.assertNotIn("network", r["structuredContent"])
                self.assertEqual(len(SERVERS.http.seen), before)

    def test_each_eval_of_a_session_gets_the_policy_and_its_own_record(self):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                code = REFUSED[lang] + 'ask("http://plain.example.test/s")'
                first = self.call(lang, code, session="net")
                self.assertEqual(first["structuredContent"]["value"][0], 200, first)
                refused = self.call(lang, REFUSED[lang] + 'ask("http://example.org/")', session="net")
                self.assertEqual(refused["structuredContent"]["value"][0], 403)
                text = refused["content"][0]["text"]
                self.assertIn("network_refused", text)
                self.assertIn("example.org:80", text)
                self.assertEqual(len(refused["structuredContent"]["network"]), 1)
                self.assertNotIn("network_refused", first["content"][0]["text"])


class LogAndMetrics(unittest.TestCase):
    """The operator's record: each call's connections and refusals in the log, counted in
    /metrics."""

    def test_the_log_and_metrics_count_connections_and_refusals(self):
        folder = tempdir(self)
        log = os.path.join(folder, "serve.log")
        with open(os.path.join(folder, "token"), "w") as f:
            f.write("tok\n")
        cells = [dict(SERVERS.cell("python"), name="python")]
        server = Http(write_config(folder, cells), "--token-file", os.path.join(folder, "token"),
                      "--log", log)
        self.addCleanup(lambda: server.proc.poll() is not None or server.stop())
        auth = {"Authorization": "Bearer tok"}
        h = dict(auth, **{"Mcp-Session-Id": server.initialize(auth)})
        server.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
        code = REFUSED["python"] + '[ask("http://plain.example.test/m"), ask("http://example.org/")]'
        status, _, text = server.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": {"name": "python", "arguments": {"code": code}}}, h)
        self.assertEqual(status, 200, text)
        status, _, metrics = server.post("", auth, method="GET", path="/metrics")
        self.assertEqual(status, 200, metrics)
        self.assertIn('codecell_network_connections_total{cell="python",outcome="made"} 1', metrics)
        self.assertIn('codecell_network_connections_total{cell="python",outcome="refused"} 1', metrics)
        server.stop()
        with open(log) as f:
            lines = [json.loads(line) for line in f if line.strip()]
        calls = [line for line in lines if line.get("event") == "call"]
        self.assertEqual(len(calls), 1, lines)
        network = calls[0]["network"]
        self.assertEqual([(c["host"], bool(c.get("refused"))) for c in network],
                         [("plain.example.test", False), ("example.org", True)])


if __name__ == "__main__":
    unittest.main()
