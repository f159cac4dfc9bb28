"""The real servers behind test_egress_proxy: plain HTTP and HTTPS (a throwaway certificate
made by `openssl req` for tls.example.test) on 127.0.0.1. Prints "HTTP_PORT HTTPS_PORT CERT"
on one line and serves until stdin closes.

  GET  /hello      "hello from <scheme>"
  POST /echo       the method, the headers and the body, as JSON (with X-Read-Rest: what
                   followed the body)
  GET  /big?n=N    N bytes of 'x'
  GET  /slow       answers after 5 seconds
"""
import http.server
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, body, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def echo(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("latin-1")
        rest = b""
        if self.headers.get("X-Read-Rest"):
            # What came after the body within 300 ms: a request smuggled past the proxy's checks.
            self.connection.settimeout(0.3)
            try:
                rest = self.rfile.read1(65536)
            except OSError:
                pass
        self.answer(json.dumps({"method": self.command, "path": self.path, "body": body,
                                "rest": rest.decode("latin-1"),
                                "headers": [[k, v] for k, v in self.headers.items()]}).encode(),
                    "application/json")

    def do_GET(self):
        if self.path == "/hello":
            self.answer(("hello from %s" % self.server.scheme).encode())
        elif self.path.startswith("/big?n="):
            self.answer(b"x" * int(self.path[7:]))
        elif self.path == "/slow":
            time.sleep(5)
            self.answer(b"slow")
        else:
            self.echo()

    do_POST = echo
    do_DELETE = echo


def serve(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main():
    tmp = tempfile.mkdtemp(prefix="egress-test-")
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=tls.example.test",
                    "-addext", "subjectAltName=DNS:tls.example.test"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    plain.scheme = "http"
    tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tls.scheme = "https"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    serve(plain)
    serve(tls)
    print(plain.server_address[1], tls.server_address[1], cert, flush=True)
    sys.stdin.read()


main()
