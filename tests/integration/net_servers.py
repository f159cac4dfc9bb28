"""Real web servers on this machine's loopback for the network tests: plain HTTP and HTTPS
(Python's http.server, with a certificate from a throwaway CA made by the openssl program), each
answering what it was asked, so that a test sees what reached the server (the method, the path,
the headers, the body) and can make it slow, redirect or answer large."""
import http.server
import json
import os
import socketserver
import subprocess
import ssl
import threading
import time


def make_ca(folder, names):
    """A CA and a leaf certificate for names (the first is the subject), signed by it, in
    folder: ca.pem, leaf.pem, leaf.key. Returns their paths."""
    ca_key, ca = os.path.join(folder, "ca.key"), os.path.join(folder, "ca.pem")
    key, csr = os.path.join(folder, "leaf.key"), os.path.join(folder, "leaf.csr")
    leaf, ext = os.path.join(folder, "leaf.pem"), os.path.join(folder, "leaf.ext")

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
            "-days", "2", "-subj", "/CN=codecell test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
            "-subj", "/CN=" + names[0])
    with open(ext, "w") as f:
        f.write("subjectAltName=" + ",".join("DNS:" + n for n in names) + "\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
            "-out", leaf, "-days", "2", "-extfile", ext)
    return ca, leaf, key


class Handler(http.server.BaseHTTPRequestHandler):
    """Answers with JSON saying what it received. Paths: /slow/MS waits MS ms first,
    /redirect?to=URL answers 302, /bytes/N answers N bytes, /hold/MS keeps the connection
    MS ms after its answer."""
    protocol_version = "HTTP/1.1"
    # The head and the body are two writes: with Nagle's algorithm the second waits for the
    # client's delayed ACK (40 ms), which would be all a benchmark measured.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def answer(self):
        if self.path in self.server.files:  # a file it serves as it is (a package index)
            kind, data = self.server.files[self.path]
            self.server.seen.append({"method": self.command, "path": self.path,
                                     "headers": dict(self.headers.items()), "body": ""})
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append({"method": self.command, "path": self.path,
                                 "headers": dict(self.headers.items()),
                                 "body": body.decode("utf-8", "replace"),
                                 # over TLS: whether the client resumed an earlier session
                                 "resumed": getattr(self.connection, "session_reused", None)})
        if self.path.startswith("/slow/"):
            time.sleep(int(self.path.split("/")[2]) / 1000)
        if self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", self.path.split("=", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/bytes/"):
            data = b"x" * int(self.path.split("/")[2])
        else:
            data = json.dumps({"method": self.command, "path": self.path,
                               "host": self.headers.get("Host"),
                               "body": body.decode("utf-8", "replace")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if self.path.startswith("/hold/"):  # the answer whole, the connection kept MS ms more
            self.wfile.flush()
            time.sleep(int(self.path.split("/")[2]) / 1000)

    do_GET = do_POST = do_PUT = do_DELETE = answer


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client the proxy cut off (a cap, the run's end) is what the tests make happen


def wheel(name, version):
    """A pure-Python wheel of one module (name/__init__.py), as pip downloads it: its file
    name and bytes."""
    import base64
    import hashlib
    import io
    import zipfile
    dist = "%s-%s.dist-info" % (name, version)
    members = {
        name + "/__init__.py": b"VERSION = %r\n" % version.encode(),
        dist + "/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)).encode(),
        dist + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: codecell-tests\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
    }
    record = "".join("%s,sha256=%s,%d\n" % (
        path, base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode(),
        len(data)) for path, data in members.items()) + dist + "/RECORD,,\n"
    members[dist + "/RECORD"] = record.encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for path, data in members.items():
            z.writestr(path, data)
    return "%s-%s-py3-none-any.whl" % (name, version), out.getvalue()


def add_index(server, name, version):
    """A simple package index (PEP 503) on server holding one wheel of name."""
    import hashlib
    file_name, data = wheel(name, version)
    digest = hashlib.sha256(data).hexdigest()
    server.files["/files/" + file_name] = ("application/octet-stream", data)
    page = '<html><body><a href="/files/%s#sha256=%s">%s</a></body></html>' % (file_name, digest,
                                                                              file_name)
    server.files["/simple/%s/" % name] = ("text/html", page.encode())
    return file_name


def serve(tls=None):
    """A server on 127.0.0.1 and a free port, in a thread; tls=(leaf, key) makes it HTTPS.
    Returns the server (.server_address[1] is its port, .seen what it received); call
    .shutdown() and .server_close() when done."""
    server = Server(("127.0.0.1", 0), Handler)
    server.seen = []
    server.files = {}  # path: (content type, bytes), served as they are
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
