"""A hostile guest against a network cell's proxy (issue 31): what it must not get through it,
in both languages, with real servers on this machine's loopback."""
import http.server
import json
import os
import socketserver
import threading
import unittest

from harness import LANGUAGES, codecell, tempdir

SECRET = "codecell-test-secret-5f0c9a"
SECRET_VAR = "CODECELL_ESCAPE_TEST_TOKEN"

# The whole answer to one request sent raw to the proxy, as text.
RAW = {
    "python": r'''
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
s.sendall(REQUEST)
got = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    got += d
got.decode("utf-8", "replace")
''',
    "ruby": r'''
require "socket"
s = TCPSocket.new("127.0.0.1", 3128)
s.write(REQUEST)
got = s.read
got.force_encoding("UTF-8").scrub
''',
}


def raw_code(lang, request):
    literal = json.dumps(request)  # a JSON string is a string literal in both languages
    if lang == "python":
        literal += ".encode()"
    return RAW[lang].replace("REQUEST", literal)


class TraceEcho(http.server.BaseHTTPRequestHandler):
    """A server that answers TRACE as RFC 9110 says: the request it received, as its body
    (what many servers still do), and GET with a small JSON body."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def echo(self):
        self.server.seen.append(self.command)
        body = (self.requestline + "\r\n" + str(self.headers)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "message/http")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_TRACE = do_TRACK = echo

    def do_GET(self):
        self.server.seen.append(self.command)
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class HeaderSecrets(unittest.TestCase):
    def setUp(self):
        os.environ[SECRET_VAR] = SECRET
        self.addCleanup(os.environ.pop, SECRET_VAR, None)
        self.server = Server(("127.0.0.1", 0), TraceEcho)
        self.server.seen = []
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        port = self.server.server_address[1]
        d = tempdir(self)
        self.config = os.path.join(d, "cells.json")
        cells = []
        for lang in LANGUAGES:
            cells.append({"name": f"net_{lang}", "language": lang, "pool": 0, "network": {
                "allow": ["api.example.test"],
                "resolve": {"api.example.test": f"127.0.0.1:{port}"},
                "headers": {"api.example.test":
                            {"Authorization": "Bearer ${" + SECRET_VAR + "}"}}}})
        with open(self.config, "w") as f:
            json.dump({"cells": cells}, f)

    def run_raw(self, lang, request):
        r = codecell("run", "--json", "--config", self.config, "--cell", f"net_{lang}",
                     "-e", raw_code(lang, request))
        self.assertEqual(r.status, "ok", r)
        return r

    def test_the_secret_reaches_the_server_on_a_get(self):
        # The counterpart of the case below: the header is added, so its absence there is the
        # proxy's refusal, not a header that was never sent.
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                r = self.run_raw(lang, "GET http://api.example.test/ HTTP/1.1\r\n\r\n")
                self.assertIn('{"ok": true}', r.result["value"], r)
                self.assertNotIn(SECRET, r.stdout, r)

    def test_trace_does_not_echo_the_secret_back(self):
        # TRACE's answer is the request as the server got it, the proxy's headers with it: a
        # host the proxy adds a secret to never gets a TRACE (nor TRACK, IIS's own).
        for lang in LANGUAGES:
            for method in ("TRACE", "TRACK", "trace"):
                with self.subTest(lang=lang, method=method):
                    before = list(self.server.seen)
                    r = self.run_raw(lang, f"{method} http://api.example.test/ HTTP/1.1\r\n\r\n")
                    self.assertNotIn(SECRET, r.stdout, r)
                    self.assertTrue(r.result["value"].startswith("HTTP/1.1 405 "), r)
                    self.assertIn(method, r.result["value"], r)
                    self.assertEqual(self.server.seen, before, "it reached the server")

    def test_no_plain_http_to_port_443_of_a_host_with_headers(self):
        # Port 443 is where TLS is expected: plain HTTP there would carry the secret in clear.
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                before = list(self.server.seen)
                r = self.run_raw(lang, "GET http://api.example.test:443/ HTTP/1.1\r\n\r\n")
                self.assertTrue(r.result["value"].startswith("HTTP/1.1 400 "), r)
                self.assertIn("only inside TLS", r.result["value"])
                self.assertEqual(self.server.seen, before, "it reached the server")


if __name__ == "__main__":
    unittest.main()
