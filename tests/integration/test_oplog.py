"""The operator's log of codecell serve (--log, --log-level, --log-content): every line is one
JSON object; a call, a refusal and an error each have their line with the fields
docs/operations.md lists; no code, value or output unless --log-content; and the figures
/metrics gained (process_*, build info, host-tool calls and refusals)."""
import json
import os
import re
import subprocess
import time
import unittest

from harness import BIN, become_subreaper, tempdir
from mcp_peer import INIT, Http, write_config

SECRET = "marker_7f3a_never_logged"


def setUpModule():
    become_subreaper()


def call(i, code, **args):
    args["code"] = code
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "ruby", "arguments": args}}


def read_log(path, want, timeout=60):
    """The lines of the log once `want` (a predicate on the parsed lines) holds."""
    deadline = time.monotonic() + timeout
    while True:
        with open(path) as f:
            text = f.read()
        lines = [json.loads(line) for line in text.splitlines()]  # each line is JSON
        if want(lines) or time.monotonic() > deadline:
            return text, lines


class Log(unittest.TestCase):
    def serve(self, *flags):
        self.dir = tempdir(self)
        tool = os.path.join(self.dir, "echo-tool")
        with open(tool, "w") as f:
            f.write("#!/bin/sh\ncat\n")
        os.chmod(tool, 0o755)
        config = write_config(
            self.dir, [{"name": "ruby", "language": "ruby", "pool": 1, "tools": ["echo"],
                        "limits": {"timeout_ms": 20000, "cpu_ms": 5000, "code_bytes": 1000}}],
            [{"name": "echo", "command": [tool]}])
        with open(os.path.join(self.dir, "token"), "w") as f:
            f.write("tok\n")
        self.log = os.path.join(self.dir, "serve.log")
        server = Http(config, "--token-file", os.path.join(self.dir, "token"), "--log", self.log,
                      *flags)
        self.addCleanup(lambda: server.proc.poll() is not None or server.stop())
        self.auth = {"Authorization": "Bearer tok"}
        return server

    def calls(self, server):
        sid = server.initialize(self.auth)
        h = dict(self.auth, **{"Mcp-Session-Id": sid})
        server.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
        ok = server.post(call(1, f'SB.call("echo", x: 1); SB.call("nope") rescue nil; "{SECRET}"'), h)
        self.assertEqual(ok[0], 200, ok)
        err = server.post(call(2, f'puts "{SECRET}"; raise ArgumentError, "bad {SECRET}"',
                               session="s1"), h)
        self.assertEqual(err[0], 200, err)
        # Refusals: no token; code the cell refuses (over its code_bytes).
        self.assertEqual(server.post({"jsonrpc": "2.0", "id": 3, "method": "ping"})[0], 401)
        self.assertEqual(server.post(call(4, "1" * 2000), h)[0], 200)
        return h

    def test_a_call_a_refusal_and_an_error_each_have_a_json_line(self):
        server = self.serve()
        h = self.calls(server)
        text, lines = read_log(self.log, lambda ls: sum(l["event"] == "call" for l in ls) >= 2
                               and sum(l["event"] == "refused" for l in ls) >= 2)
        events = [l["event"] for l in lines]
        self.assertEqual(events[:2], ["start", "config_loaded"], lines)
        for line in lines:
            self.assertRegex(line["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertIn(line["level"], ("debug", "info", "warning", "error"))
        start = lines[0]
        self.assertEqual((start["transport"], start["pid"]), ("http", server.proc.pid))
        calls = [l for l in lines if l["event"] == "call"]
        ok, err = calls
        for c in calls:
            self.assertEqual(c["cell"], "ruby")
            self.assertRegex(c["client"], r"^m\d+$")
            for key in ("duration_ms", "cpu_ms", "memory_peak_bytes", "bytes_in", "bytes_out"):
                self.assertIsInstance(c[key], (int, float), key)
        self.assertEqual(calls[0]["client"], calls[1]["client"])
        self.assertEqual((ok["status"], ok["session"], ok["error_class"]), ("ok", None, None))
        self.assertEqual(ok["bytes_out"], len(f'"{SECRET}"'))
        self.assertEqual((err["status"], err["session"], err["error_class"]),
                         ("error", "s1", "ArgumentError"))
        refused = [l for l in lines if l["event"] == "refused"]
        self.assertEqual([r["reason"] for r in refused], ["unauthorized", "bad_request"])
        # Nothing the code held or wrote reaches the log.
        self.assertNotIn(SECRET, text)

        metrics = server.post("", self.auth, method="GET", path="/metrics")[2]
        for name in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                     "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
                     "process_start_time_seconds"):
            self.assertRegex(metrics, rf"(?m)^{name} [0-9.e+]+$", name)
        version = subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout.split()[1]
        self.assertIn(f'codecell_build_info{{version="{version}"}} 1\n', metrics)
        self.assertIn('codecell_tool_calls_total{cell="ruby"} 2\n', metrics)
        self.assertIn('codecell_tool_refusals_total{cell="ruby"} 1\n', metrics)
        self.assertIn('codecell_refusals_total{reason="unauthorized"} 1\n', metrics)
        self.assertIn('codecell_refusals_total{reason="bad_request"} 1\n', metrics)
        start_time = float(re.search(r"(?m)^process_start_time_seconds (\S+)", metrics).group(1))
        self.assertLess(abs(start_time - time.time()), 3600)

        self.assertEqual(server.stop(), 0)
        _, lines = read_log(self.log, lambda ls: ls and ls[-1]["event"] == "stop")
        self.assertEqual((lines[-1]["event"], lines[-1]["exit_code"]), ("stop", 0))

    def test_an_error_class_is_logged_only_as_a_short_name(self):
        # The class is the guest's text (Python's type() takes any string, a Ruby constant may
        # be any length): without --log-content only a short name reaches the log.
        server = self.serve()
        sid = server.initialize(self.auth)
        h = dict(self.auth, **{"Mcp-Session-Id": sid})
        code = f'E = Object.const_set("E{SECRET}" + "x" * 200, Class.new(StandardError)); raise E'
        self.assertEqual(server.post(call(1, code), h)[0], 200)
        self.assertEqual(server.post(call(2, "raise IOError"), h)[0], 200)
        text, lines = read_log(self.log, lambda ls: sum(l["event"] == "call" for l in ls) >= 2)
        classes = [l["error_class"] for l in lines if l["event"] == "call"]
        self.assertEqual(classes, ["(not a class name)", "IOError"], lines)
        self.assertNotIn(SECRET, text)

    def test_log_content_adds_the_code_and_what_it_produced(self):
        server = self.serve("--log-content")
        self.calls(server)
        text, lines = read_log(self.log, lambda ls: sum(l["event"] == "call" for l in ls) >= 2)
        ok, err = [l for l in lines if l["event"] == "call"]
        self.assertIn(SECRET, ok["code"])
        self.assertEqual(ok["value"], SECRET)
        self.assertEqual(err["stdout"], SECRET + "\n")
        self.assertEqual(err["error"]["class"], "ArgumentError")

    def test_log_content_keeps_a_big_integer_value_as_its_text(self):
        server = self.serve("--log-content")
        sid = server.initialize(self.auth)
        h = dict(self.auth, **{"Mcp-Session-Id": sid})
        server.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
        self.assertEqual(server.post(call(1, "[2**70]"), h)[0], 200)
        text, lines = read_log(self.log, lambda ls: any(l["event"] == "call" for l in ls))
        line = [l for l in lines if l["event"] == "call"][0]
        self.assertEqual(line.get("value_json"), "[1180591620717411303424]", line)

    def test_level_warning_leaves_out_calls(self):
        server = self.serve("--log-level", "warning")
        self.calls(server)
        self.assertEqual(server.stop(), 0)
        with open(self.log) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual([l for l in lines if l["level"] in ("debug", "info")], [])


class StalledStderr(unittest.TestCase):
    def test_a_client_that_never_reads_stderr_still_gets_every_answer(self):
        """The log goes to stderr by default, and many MCP clients start the server with a
        stderr pipe they read now and then or never. One line per call filled that pipe after
        ~250 calls and every later call hung writing its line."""
        from mcp_peer import Stdio
        peer = Stdio(write_config(tempdir(self), [{"name": "ruby", "language": "ruby", "pool": 2}]))
        self.addCleanup(peer.stop_if_running)
        peer.request(INIT)
        for i in range(1, 701):
            m = peer.request({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                              "params": {"name": "ruby", "arguments": {"code": str(i)}}})
            self.assertEqual(m["result"]["structuredContent"].get("value"), i, m)
        # Once the client reads again, the next line is preceded by the count of those lost.
        os.set_blocking(peer.proc.stderr.fileno(), False)
        drained = b""
        while True:
            chunk = peer.proc.stderr.read(65536)
            if not chunk:
                break
            drained += chunk
        self.assertGreater(len(drained), 40000)
        m = peer.request({"jsonrpc": "2.0", "id": 701, "method": "tools/call",
                          "params": {"name": "ruby", "arguments": {"code": "701"}}})
        self.assertEqual(m["result"]["structuredContent"]["value"], 701)
        os.set_blocking(peer.proc.stderr.fileno(), True)
        code, err = peer.close()
        self.assertEqual(code, 0)
        dropped = [json.loads(l) for l in err.splitlines() if '"log_dropped"' in l]
        self.assertEqual(len(dropped), 1, err[:400])
        self.assertGreater(dropped[0]["lines"], 100)


class BadFlags(unittest.TestCase):
    def test_bad_level_and_unwritable_log(self):
        d = tempdir(self)
        config = write_config(d, [{"name": "ruby", "language": "ruby", "pool": 0}])
        r = subprocess.run([BIN, "serve", "--config", config, "--log-level", "loud"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--log-level loud: expected debug, info, warning, error or off", r.stderr)
        r = subprocess.run([BIN, "serve", "--config", config, "--log", "/nonexistent/dir/log"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--log /nonexistent/dir/log: No such file or directory", r.stderr)

    def test_configuration_error_is_logged(self):
        d = tempdir(self)
        config = write_config(d, [{"name": "ruby", "language": "cobol"}])
        log = os.path.join(d, "log")
        r = subprocess.run([BIN, "serve", "--config", config, "--log", log], input="",
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        with open(log) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual([l["event"] for l in lines], ["start", "config_error", "stop"])
        self.assertEqual(lines[1]["level"], "error")
        self.assertIn("cells[0].language", lines[1]["error"])

    def test_stderr_by_default_with_one_json_object_per_line(self):
        d = tempdir(self)
        config = write_config(d, [{"name": "ruby", "language": "ruby", "pool": 0}])
        r = subprocess.run([BIN, "serve", "--config", config], input=json.dumps(INIT) + "\n",
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        logged = [json.loads(l) for l in r.stderr.splitlines() if l.startswith("{")]
        self.assertEqual([l["event"] for l in logged], ["start", "config_loaded", "stop"])


if __name__ == "__main__":
    unittest.main()
