"""A raw MCP peer for the protocol tests: codecell serve over stdio or HTTP, spoken to byte by
byte (no SDK in between, so malformed input reaches the server exactly as written)."""
import http.client
import json
import os
import re
import select
import signal
import subprocess
import tempfile
import time

from harness import BIN, LAUNCHED

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.environ.get("CODECELL_EXAMPLES") or os.path.join(HERE, "..", "..", "examples")

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}


MODERN = "2026-07-28"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN,
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}


def modern(i, method, params=None, **meta):
    """A 2026-07-28 request: no initialize, its era and client in params._meta."""
    params = dict(params or {})
    params["_meta"] = dict(MODERN_META, **meta)
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def modern_headers(message):
    """The headers a 2026-07-28 request carries over HTTP, mirroring its body."""
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": message["method"]}
    if message["method"] == "tools/call":
        h["Mcp-Name"] = message["params"]["name"]
        # The tools' schemas mark "session" x-mcp-header: "Session", so clients mirror it.
        session = (message["params"].get("arguments") or {}).get("session")
        if isinstance(session, str):
            h["Mcp-Param-Session"] = session
    return h


def write_config(directory, cells, tools=()):
    path = os.path.join(directory, "cells.json")
    with open(path, "w") as f:
        json.dump({"tools": list(tools), "cells": cells}, f)
    return path


def small_config(directory, **cell):
    base = {"name": "ruby", "language": "ruby", "pool": 1,
            "limits": {"timeout_ms": 5000, "cpu_ms": 2000}}
    base.update(cell)
    return write_config(directory, [base])


class Stdio:
    """codecell serve on pipes: send lines, read answers by id."""

    def __init__(self, config, *flags):
        self.proc = subprocess.Popen([BIN, "serve", "--config", config, *flags],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        LAUNCHED.append(self.proc.pid)
        self.buffer = b""
        self.seen = []

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message):
        self.send_raw(json.dumps(message).encode() + b"\n")

    def read(self, timeout=30):
        """The next message the server writes."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            if self.proc.stdout.closed:
                raise EOFError("the server has exited")
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise TimeoutError("no message from the server")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise EOFError("the server closed stdout")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def answer(self, message_id, timeout=30):
        """Reads until the answer to message_id; other messages are kept in self.seen."""
        while True:
            m = self.read(timeout)
            if m.get("id") == message_id and "method" not in m:
                return m
            self.seen.append(m)

    def request(self, message):
        self.send(message)
        return self.answer(message.get("id"))

    def close(self, timeout=30):
        self.proc.stdin.close()
        code = self.proc.wait(timeout)
        err = self.proc.stderr.read().decode()
        self.buffer += self.proc.stdout.read()  # what it wrote before exiting stays readable
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code, err


    def stop_if_running(self, timeout=60):
        """For addCleanup: a server a failed case left running is closed, or, when it does not
        end in time (a loaded machine, a case that failed mid-call), killed and reaped, so
        that it cannot fail the cases after it as a stray process."""
        if self.proc.poll() is not None:
            return
        try:
            self.close(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Http:
    """codecell serve --http 127.0.0.1:0, with a client for its endpoint."""

    def __init__(self, config, *flags, port_only=False):
        address = "0" if port_only else "127.0.0.1:0"
        self.proc = subprocess.Popen([BIN, "serve", "--config", config, "--http", address,
                                      *flags], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        LAUNCHED.append(self.proc.pid)
        line = b""
        deadline = time.monotonic() + 30
        while b"listening on" not in line:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("serve did not start: " + line.decode(errors="replace"))
            line += os.read(self.proc.stderr.fileno(), 4096)
        self.port = int(re.search(rb"127\.0\.0\.1:(\d+)/mcp", line).group(1))
        self.host = f"127.0.0.1:{self.port}"

    def post(self, body, headers=None, path="/mcp", method="POST"):
        """(status, headers, body text) of one request on a fresh connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        h.update(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        text = r.read().decode()
        conn.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, text

    def initialize(self, headers=None):
        status, h, text = self.post(INIT, headers)
        assert status == 200, (status, text)
        return h["mcp-session-id"]

    def stop(self, sig=signal.SIGTERM, timeout=30):
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        self.proc.stderr.close()
        return code


def sse_messages(text):
    return [json.loads(line[len("data: "):]) for line in text.splitlines()
            if line.startswith("data: ")]
