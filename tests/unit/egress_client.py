"""A real HTTPS client through the proxy for test_egress_proxy: argv = proxy port, CA file,
mode. Prints one line: the status and body, or "ERROR <class>: <message>".

  get        urllib.request GET https://tls.example.test/hello through the proxy
  post       urllib.request POST of "payload" to https://tls.example.test/echo
  mismatch   CONNECT tls.example.test:443, then a TLS handshake naming other.example.test
"""
import socket
import ssl
import sys
import urllib.request

port, ca, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
try:
    if mode in ("get", "post"):
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"https": "http://127.0.0.1:%d" % port}),
            urllib.request.HTTPSHandler(context=ctx))
        url = "https://tls.example.test/" + ("hello" if mode == "get" else "echo")
        data = b"payload" if mode == "post" else None
        with opener.open(url, data=data, timeout=10) as r:
            print(r.status, r.read().decode())
    else:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"CONNECT tls.example.test:443 HTTP/1.1\r\nHost: tls.example.test:443\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        ctx.check_hostname = False
        t = ctx.wrap_socket(s, server_hostname="other.example.test")
        print("HANDSHAKE DONE", t.version())
except Exception as e:
    print("ERROR %s: %s" % (type(e).__name__, e))
