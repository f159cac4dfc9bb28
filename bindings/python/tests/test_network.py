"""A cell's network policy from the binding (network=): HTTP to an allowed host through the
engine's proxy, a refused host answered 403 with the reason, the connections in the result, and
a bad policy refused naming its place. The server is a real one on this machine's loopback,
reached through the policy's resolve entry."""
import http.server
import threading
import unittest

import codecell

GET = {
    "python": "import urllib.request\n"
              "urllib.request.urlopen('http://shop.example.test/items', timeout=10).read().decode()",
    "ruby": "require 'net/http'\nNet::HTTP.get(URI('http://shop.example.test/items'))",
}
REFUSED = {
    "python": "import urllib.request, urllib.error\n"
              "try:\n    urllib.request.urlopen('http://other.example.test/', timeout=10)\n"
              "except urllib.error.HTTPError as e:\n    r = [e.code, e.read().decode()]\nr",
    "ruby": "require 'net/http'\nr = Net::HTTP.get_response(URI('http://other.example.test/'))\n"
            "[r.code.to_i, r.body]",
}


class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("got " + self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class NetworkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        port = cls.server.server_address[1]
        cls.policy = {"allow": ["shop.example.test"],
                      "resolve": {"shop.example.test": "127.0.0.1:%d" % port}}

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def cell(self, lang):
        cell = codecell.Cell(lang, network=self.policy)
        self.addCleanup(cell.close)
        return cell

    def test_an_allowed_host_answers_and_the_result_names_the_connection(self):
        for lang in GET:
            with self.subTest(lang=lang):
                cell = self.cell(lang)
                r = cell.run(GET[lang])
                self.assertEqual(r.value, "got /items", r.to_dict())
                self.assertEqual([(c["host"], c["port"]) for c in r.network],
                                 [("shop.example.test", 80)])
                self.assertNotIn("refused", r.network[0])

    def test_a_refused_host_gets_403_with_the_reason(self):
        for lang in REFUSED:
            with self.subTest(lang=lang):
                cell = self.cell(lang)
                r = cell.run(REFUSED[lang])
                self.assertEqual(r.value[0], 403, r.to_dict())
                self.assertIn("other.example.test:80 is not allowed", r.value[1])
                self.assertIn("shop.example.test", r.value[1])
                self.assertIn("not allowed", r.network[0]["refused"])
                self.assertIn("network_refused", r.to_dict())

    def test_a_bad_policy_is_refused_naming_its_place(self):
        with self.assertRaisesRegex(ValueError, r"network\.allow\[0\]"):
            codecell.Cell("python", network={"allow": ["https://x.example.test/path"]})
        with self.assertRaisesRegex(ValueError, "network"):
            codecell.Cell("python", network=["x.example.test"])

    def test_terminate_tls_adds_the_secret_over_https(self):
        """terminate_tls through the binding: the engine (in this process) verifies the server
        against SSL_CERT_FILE, here a test CA; the guest trusts the cell's CA by itself."""
        import os
        import shutil
        import ssl
        import subprocess
        import tempfile
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder, True)
        ca, key, leaf = (os.path.join(folder, n) for n in ("ca.pem", "leaf.key", "leaf.pem"))
        run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", os.path.join(folder, "ca.key"), "-out", ca, "-days", "2",
            "-subj", "/CN=binding test CA")
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", leaf, "-days", "2", "-subj", "/CN=secure.example.test",
            "-addext", "subjectAltName=DNS:secure.example.test",
            "-CA", ca, "-CAkey", os.path.join(folder, "ca.key"))
        seen = []

        class Secure(Answer):
            def do_GET(self):
                seen.append(self.headers.get("Authorization"))
                Answer.do_GET(self)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Secure)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(leaf, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        for name, value in (("SSL_CERT_FILE", ca), ("CODECELL_BINDING_SECRET", "b-secret")):
            self.addCleanup(os.environ.__setitem__, name, os.environ[name]) \
                if name in os.environ else self.addCleanup(os.environ.pop, name, None)
            os.environ[name] = value
        policy = {"allow": ["secure.example.test"],
                  "resolve": {"secure.example.test": "127.0.0.1:%d" % server.server_address[1]},
                  "headers": {"secure.example.test": {
                      "Authorization": "Bearer ${CODECELL_BINDING_SECRET}"}},
                  "terminate_tls": True}
        code = {"python": "import urllib.request\nurllib.request.urlopen("
                          "'https://secure.example.test/s', timeout=10).read().decode()",
                "ruby": "require 'net/http'\nNet::HTTP.get(URI('https://secure.example.test/s'))"}
        for lang in code:
            with self.subTest(lang=lang):
                cell = codecell.Cell(lang, network=policy)
                self.addCleanup(cell.close)
                r = cell.run(code[lang])
                self.assertEqual(r.value, "got /s", r.to_dict())
                self.assertEqual(seen[-1], "Bearer b-secret")
                self.assertNotIn("b-secret", repr(r.to_dict()))

    def test_a_cell_without_a_policy_has_no_network(self):
        cell = codecell.Cell("python")
        self.addCleanup(cell.close)
        r = cell.run("import os\nos.environ.get('HTTPS_PROXY')")
        self.assertIsNone(r.value)
        self.assertEqual(r.network, [])


if __name__ == "__main__":
    unittest.main()
