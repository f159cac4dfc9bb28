"""codecell serve spoken to raw, over stdio and HTTP: the JSON-RPC error codes, malformed
input, the HTTP checks (Host, Origin, token, sessions, sizes), metrics and shutdown."""
import json
import os
import re
import signal
import subprocess
import threading
import time
import unittest

from harness import become_subreaper, comm_of, descendants, stray_children, tempdir
from harness import BIN, LAUNCHED
from mcp_peer import (INIT, MODERN, Http, Stdio, modern, modern_headers, small_config,
                      sse_messages, write_config)


def setUpModule():
    become_subreaper()


def kill_gone_too(kill, target):
    """SIGKILLs target; one already gone (an earlier kill's end of init took it) is fine."""
    try:
        kill(target, signal.SIGKILL)
    except ProcessLookupError:
        pass


class InitializedStdio:
    """setUp: a server on stdio, initialized; it must end cleanly (exit 0) after the test."""

    def setUp(self):
        self.dir = tempdir(self)
        self.peer = Stdio(small_config(self.dir))
        self.addCleanup(self.finish)
        self.peer.request(INIT)

    def finish(self):
        code, err = self.peer.close()
        self.assertEqual(code, 0, err)


def call(i, code, **extra):
    args = {"code": code}
    args.update(extra.pop("args", {}))
    params = {"name": extra.pop("name", "ruby"), "arguments": args}
    params.update(extra)
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}


class StdioProtocol(unittest.TestCase):
    def setUp(self):
        self.dir = tempdir(self)
        self.peer = Stdio(small_config(self.dir), "--max-body", "2K")
        self.addCleanup(self.finish)
        self.assertEqual(self.peer.request(INIT)["result"]["protocolVersion"], "2025-11-25")

    def finish(self):
        if self.peer.proc.poll() is None:
            code, err = self.peer.close()
            self.assertEqual(code, 0, err)
        self.assertEqual(stray_children(), [], "a sandbox outlived the server")

    def error_of(self, raw):
        self.peer.send_raw(raw)
        m = self.peer.read()
        self.assertIn("error", m, m)
        return m["id"], m["error"]["code"], m["error"]["message"]

    def test_malformed_messages_get_their_error_and_never_stop_the_server(self):
        cases = [
            (b"not json\n", -32700, "parse error"),
            (b'{"jsonrpc":"2.0","id":1,"method":"ping"\n', -32700, "parse error"),
            (b'{"jsonrpc":"2.0","id":1,"method":"ping","id":2}\n', -32700, "duplicate"),
            (b'{"jsonrpc":"2.0","id":1,"method":"\xff"}\n', -32700, "parse error"),
            (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n', -32600, "batches are not supported"),
            (b'"hello"\n', -32600, "must be a JSON object"),
            (b'{"jsonrpc":"1.0","id":1,"method":"ping"}\n', -32600, '"jsonrpc" must be "2.0"'),
            (b'{"jsonrpc":"2.0","id":true,"method":"ping"}\n', -32600, '"id" must be'),
            (b'{"jsonrpc":"2.0","id":1,"method":7}\n', -32600, '"method" must be a string'),
            (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}\n', -32600, '"params" must'),
            (b'{"jsonrpc":"2.0","id":1,"method":"' + b"x" * 3000 + b'"}\n', -32700, "over 2048"),
        ]
        for raw, code, text in cases:
            with self.subTest(raw=raw[:60]):
                _, got_code, message = self.error_of(raw)
                self.assertEqual(got_code, code, message)
                self.assertIn(text, message)
        self.assertEqual(self.peer.request({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
                         {"jsonrpc": "2.0", "id": "p", "result": {}})

    def test_unknown_method_and_bad_params(self):
        m = self.peer.request({"jsonrpc": "2.0", "id": 5, "method": "prompts/list"})
        self.assertEqual((m["id"], m["error"]["code"]), (5, -32601))
        # Only an unknown tool or a request that is not a CallToolRequest stays a protocol
        # error (SEP-1303); bad arguments are tool results, in ToolErrors below.
        cases = [
            (call(1, "1", name="nope"), 'unknown tool "nope"'),
            ({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "ruby", "arguments": "1+1"}}, "params.arguments an object"),
            ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}},
             "params.name must be a string"),
            ({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
              "params": {"level": "loud"}}, "params.level must be one of"),
            ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
             "params.protocolVersion"),
        ]
        for message, text in cases:
            with self.subTest(text=text):
                m = self.peer.request(message)
                self.assertEqual(m["error"]["code"], -32602, m)
                self.assertIn(text, m["error"]["message"])

    def test_version_negotiation(self):
        for asked, agreed in [("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-03-26"),
                              ("2024-11-05", "2025-11-25"), ("banana", "2025-11-25")]:
            init = dict(INIT, params=dict(INIT["params"], protocolVersion=asked))
            self.assertEqual(self.peer.request(init)["result"]["protocolVersion"], agreed)

    def test_notifications_and_client_responses_get_no_answer(self):
        self.peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.peer.send({"jsonrpc": "2.0", "method": "notifications/unknown", "params": {}})
        self.peer.send({"jsonrpc": "2.0", "id": 99, "result": {}})
        self.peer.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        self.assertEqual(self.peer.read()["id"], 1)

    def test_results_match_the_run(self):
        m = self.peer.request(call(1, "puts 'hi'; [1, 'two']"))
        r = m["result"]
        self.assertEqual(r["structuredContent"]["value"], [1, "two"])
        self.assertEqual(r["structuredContent"]["stdout"], "hi\n")
        # The text is what the model acts on; the sandbox's facts are in structuredContent.
        self.assertEqual(r["content"][0]["text"], '{"status":"ok","value":[1,"two"],"stdout":"hi\\n"}')
        lean = json.loads(r["content"][0]["text"])
        self.assertEqual({k: v for k, v in r["structuredContent"].items() if k in lean}, lean)
        self.assertIn("seccomp", r["structuredContent"]["sandbox"])
        self.assertIn("duration_ms", r["structuredContent"])
        self.assertIs(r["isError"], False)
        m = self.peer.request(call(2, "raise 'no'"))
        self.assertIs(m["result"]["isError"], True)
        self.assertEqual(m["result"]["structuredContent"]["error"]["class"], "RuntimeError")

    def test_log_messages_follow_the_level(self):
        self.peer.request(call(1, "1"))
        self.assertEqual([m for m in self.peer.seen if m.get("method") == "notifications/message"],
                         [], "before setLevel only warnings and worse are sent")
        self.peer.request({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                           "params": {"level": "info"}})
        self.peer.request(call(3, "1"))
        logs = [m["params"] for m in self.peer.seen if m.get("method") == "notifications/message"]
        self.assertEqual(len(logs), 1, logs)
        self.assertEqual((logs[0]["level"], logs[0]["data"]), ("info", "ruby: ok"))

    def test_end_of_input_answers_what_runs_then_exits_0(self):
        self.peer.send(call(7, "sleep 0.5; :late"))
        code, err = self.peer.close()
        self.assertEqual(code, 0, err)
        self.assertEqual(self.peer.answer(7)["result"]["structuredContent"]["value"], "late")


class StdioLimits(unittest.TestCase):
    def test_runs_past_the_cap_get_a_clear_error(self):
        d = tempdir(self)
        peer = Stdio(small_config(d), "--max-runs", "1")
        peer.request(INIT)
        peer.send(call(1, "sleep 2; 1"))
        time.sleep(0.5)
        m = peer.request(call(2, "2"))
        self.assertEqual(m["error"]["code"], -32000, m)
        self.assertIn("too many runs at once (at most 1", m["error"]["message"])
        self.assertEqual(peer.answer(1)["result"]["structuredContent"]["value"], 1)
        self.assertEqual(peer.close()[0], 0)

    def test_sigterm_cancels_runs_and_leaves_nothing(self):
        become_subreaper()
        d = tempdir(self)
        peer = Stdio(small_config(d, limits={"timeout_ms": 60000}))
        peer.request(INIT)
        peer.request(call(1, "x = 1", args={"session": "s"}))
        peer.send(call(2, "sleep 50"))
        time.sleep(0.5)
        started = time.monotonic()
        peer.proc.send_signal(signal.SIGTERM)
        self.assertEqual(peer.proc.wait(30), 0)
        self.assertLess(time.monotonic() - started, 20, "the run was not cancelled")
        peer.proc.stdin.close()
        peer.proc.stdout.close()
        peer.proc.stderr.close()
        self.assertEqual(stray_children(), [])


    def test_server_killed_mid_run_and_mid_session_leaves_nothing(self):
        become_subreaper()
        d = tempdir(self)
        for transport in ("stdio", "http"):
            with self.subTest(transport=transport):
                if transport == "stdio":
                    peer = Stdio(small_config(d, limits={"timeout_ms": 60000}))
                    peer.request(INIT)
                    peer.request(call(1, "x = 1", args={"session": "s"}))
                    peer.send(call(2, "sleep 50"))
                    proc = peer.proc
                else:
                    peer = Http(small_config(d, limits={"timeout_ms": 60000}))
                    sid = peer.initialize()
                    peer.post(call(1, "x = 1", args={"session": "s"}), {"Mcp-Session-Id": sid})
                    proc = peer.proc
                    threading.Thread(target=lambda: self.post_ignoring_errors(peer, sid),
                                     daemon=True).start()
                time.sleep(0.5)
                proc.kill()
                proc.wait(30)
                deadline = time.monotonic() + 10
                while stray_children() and time.monotonic() < deadline:
                    time.sleep(0.1)
                self.assertEqual(stray_children(), [], "a sandbox outlived the killed server")
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream:
                        stream.close()

    @staticmethod
    def post_ignoring_errors(peer, sid):
        try:
            peer.post(call(2, "sleep 50"), {"Mcp-Session-Id": sid})
        except OSError:
            pass


class HttpProtocol(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempdir_class(cls)
        with open(os.path.join(cls.dir, "token"), "w") as f:
            f.write("s3cret-token\n")
        cls.server = Http(small_config(cls.dir), "--token-file", os.path.join(cls.dir, "token"),
                          "--max-body", "4K", "--allow-origin", "https://app.example",
                          "--allow-host", "mcp.internal:9")
        cls.auth = {"Authorization": "Bearer s3cret-token"}

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0

    def post(self, body, headers=None, **kw):
        h = dict(self.auth)
        h.update(headers or {})
        return self.server.post(body, h, **kw)

    def session(self):
        return self.server.initialize(self.auth)

    def test_session_ids_are_random_and_required(self):
        a, b = self.session(), self.session()
        self.assertRegex(a, r"^[0-9a-f]{32}$")
        self.assertNotEqual(a, b)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        self.assertEqual(self.post(ping)[0], 400)
        self.assertEqual(self.post(ping, {"Mcp-Session-Id": "0" * 32})[0], 404)
        status, _, text = self.post(ping, {"Mcp-Session-Id": a})
        self.assertEqual((status, json.loads(text)["result"]), (200, {}))

    def test_delete_ends_the_session_and_its_code_sessions(self):
        sid = self.session()
        h = {"Mcp-Session-Id": sid}
        status, _, text = self.post(call(1, "v = 5", args={"session": "k"}), h)
        self.assertEqual(status, 200, text)
        self.assertIn('codecell_sessions_open{cell="ruby"} 1', self.metrics())
        self.assertEqual(self.post("", h, method="DELETE")[0], 200)
        self.assertIn('codecell_sessions_open{cell="ruby"} 0', self.metrics())
        self.assertEqual(self.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, h)[0], 404)
        self.assertEqual(self.post("", h, method="DELETE")[0], 404)

    def metrics(self):
        status, headers, text = self.post("", method="GET", path="/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("text/plain"))
        return text

    def test_dns_rebinding_host_and_origin(self):
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        sid = self.session()
        cases = [
            ({"Host": "evil.example"}, 403),
            ({"Host": f"localhost:{self.server.port}"}, 200),
            ({"Host": "mcp.internal:9"}, 200),
            ({"Origin": "http://evil.example"}, 403),
            ({"Origin": f"http://localhost:{self.server.port}"}, 200),
            ({"Origin": "https://app.example"}, 200),
        ]
        for headers, status in cases:
            with self.subTest(headers=headers):
                h = {"Mcp-Session-Id": sid}
                h.update(headers)
                self.assertEqual(self.post(ping, h)[0], status)

    def test_bearer_token(self):
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for auth in [None, "Bearer wrong", "Bearer s3cret-toke", "Bearer s3cret-tokenX",
                     "Basic s3cret-token", "s3cret-token"]:
            with self.subTest(auth=auth):
                h = {"Authorization": auth} if auth else {}
                status, headers, _ = self.server.post(INIT, h)
                self.assertEqual(status, 401)
                self.assertEqual(headers["www-authenticate"], "Bearer")
        self.assertEqual(self.server.post("", {}, method="GET", path="/metrics")[0], 401)
        self.assertEqual(self.server.post("", {}, method="GET", path="/healthz")[0], 200)
        self.assertEqual(self.server.post(ping, {"Authorization": "bearer s3cret-token",
                                                 "Mcp-Session-Id": self.session()})[0], 200)

    def test_http_level_refusals(self):
        sid = self.session()
        h = {"Mcp-Session-Id": sid}
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        big = call(1, "x" * 5000)
        cases = [
            (big, h, "POST", "/mcp", 413, -32600),
            (ping, dict(h, **{"Content-Type": "text/plain"}), "POST", "/mcp", 415, -32600),
            (ping, dict(h, Accept="text/html"), "POST", "/mcp", 406, -32600),
            (ping, dict(h, **{"MCP-Protocol-Version": "1999-01-01"}), "POST", "/mcp", 400, -32600),
            ("{nope", h, "POST", "/mcp", 400, -32700),
            ([ping], h, "POST", "/mcp", 400, -32600),
            ("", h, "GET", "/mcp", 405, -32600),
            ("", h, "PUT", "/mcp", 405, -32600),
            ("", h, "GET", "/other", 404, -32600),
        ]
        for body, headers, method, path, status, code in cases:
            with self.subTest(method=method, path=path, status=status):
                got, _, text = self.post(body, headers, method=method, path=path)
                self.assertEqual(got, status, text)
                self.assertEqual(json.loads(text)["error"]["code"], code)
        ok = self.post(ping, dict(h, **{"MCP-Protocol-Version": "2025-06-18"}))
        self.assertEqual(ok[0], 200)

    def test_notifications_are_accepted_without_a_body(self):
        sid = self.session()
        status, _, text = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                    {"Mcp-Session-Id": sid})
        self.assertEqual((status, text), (202, ""))

    def test_calls_answer_json_or_a_stream_with_progress(self):
        sid = self.session()
        h = {"Mcp-Session-Id": sid}
        status, headers, text = self.post(call(1, "6 * 7"), h)
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(json.loads(text)["result"]["structuredContent"]["value"], 42)
        status, headers, text = self.post(
            call(2, "puts 'working'; sleep 2.2; 1", _meta={"progressToken": "tok"}), h)
        self.assertEqual(headers["content-type"], "text/event-stream")
        messages = sse_messages(text)
        progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
        self.assertTrue(progress, text)
        self.assertEqual(progress[0]["progressToken"], "tok")
        self.assertEqual(progress[0]["message"], "working")
        self.assertEqual(messages[-1]["id"], 2)
        self.assertEqual(messages[-1]["result"]["structuredContent"]["value"], 1)

    def test_metrics_count_runs_by_cell_and_status(self):
        sid = self.session()
        before = self.metrics()
        self.post(call(1, "raise 'x'"), {"Mcp-Session-Id": sid})
        after = self.metrics()

        def count(text):
            m = re.search(r'^codecell_runs_total\{cell="ruby",status="error"\} (\d+)$', text, re.M)
            return int(m.group(1))
        self.assertEqual(count(after), count(before) + 1)
        self.assertRegex(after, r'codecell_pool_ready\{cell="ruby"\} \d')
        self.assertRegex(after, r'codecell_run_duration_seconds_bucket\{cell="ruby",le="\+Inf"\}')
        self.assertRegex(after, r"codecell_mcp_sessions \d+")


def tempdir_class(cls):
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="codecell-e2e-")
    unittest.addModuleCleanup(shutil.rmtree, d, True)
    return d


class HttpIdle(unittest.TestCase):
    def test_an_unused_mcp_session_ends_with_its_code_sessions(self):
        d = tempdir(self)
        server = Http(small_config(d), "--client-idle", "2s")
        self.addCleanup(server.stop)
        sid = server.initialize()
        h = {"Mcp-Session-Id": sid}
        status, _, text = server.post(call(1, "v = 1", args={"session": "k"}), h)
        self.assertEqual(status, 200, text)
        # A call longer than the idle time keeps its session: it is in use.
        status, _, text = server.post(call(2, "sleep 3; v", args={"session": "k"}), h)
        self.assertEqual(json.loads(text)["result"]["structuredContent"]["value"], 1, text)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            metrics = server.post("", {}, method="GET", path="/metrics")[2]
            # The reaper ends the code sessions and the MCP session one after the other.
            if ('codecell_sessions_open{cell="ruby"} 0' in metrics
                    and "codecell_mcp_sessions 0" in metrics):
                break
            time.sleep(0.2)
        self.assertIn('codecell_sessions_open{cell="ruby"} 0', metrics)
        self.assertIn("codecell_mcp_sessions 0", metrics)
        ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
        self.assertEqual(server.post(ping, h)[0], 404)


class HttpListen(unittest.TestCase):
    def test_a_bare_port_listens_on_loopback(self):
        d = tempdir(self)
        server = Http(small_config(d), port_only=True)
        status, _, text = server.post("", {}, method="GET", path="/healthz")
        self.assertEqual((status, text), (200, "ok\n"))
        self.assertEqual(server.stop(), 0)

    def test_bad_address_and_flags(self):
        from harness import codecell
        d = tempdir(self)
        cfg = small_config(d)
        cases = [
            (["--http", "nowhere"], "expected [ADDR:]PORT"),
            (["--http", "example.com:80"], "expected [ADDR:]PORT"),
            (["--http", "127.0.0.1:99999"], "expected [ADDR:]PORT"),
            (["--http", "99999"], "expected [ADDR:]PORT"),
            (["--token-file", "/nonexistent"], "--max-connections-per-address need --http"),
            (["--client-idle", "1h"], "--max-connections-per-address need --http"),
            (["--cors-origin", "https://app.example"], "--max-connections-per-address need --http"),
            (["--drain-timeout", "5s"], "--max-connections-per-address need --http"),
            (["--http", "0", "--drain-timeout", "later"], "--drain-timeout later: expected a"),
            (["--instance", "B"], "--instance B: expected 1 to 16 of a-z, 0-9"),
            (["--instance", "a.b"], "--instance a.b: expected"),
            (["--instance", "-a"], "--instance -a: expected"),
            (["--instance", "a" * 17], "expected 1 to 16"),
            (["--http", "0", "--client-idle", "soon"], "--client-idle soon: expected a duration"),
            (["--http", "127.0.0.1:0", "--token-file", "/nonexistent/t"], "No such file"),
            (["--max-runs", "0"], "--max-runs 0: must be a whole number"),
            (["--max-body", "1"], "--max-body 1: expected a size"),
            (["--header-timeout", "5s"], "--max-connections-per-address need --http"),
            (["--max-connections", "9"], "--max-connections-per-address need --http"),
            (["--http", "0", "--header-timeout", "10ms"], "--header-timeout 10ms: expected a"),
            (["--http", "0", "--max-connections", "1"], "--max-connections 1: must be at least 2"),
            (["--http", "0", "--max-connections-per-address", "-1"], "must be a whole number"),
            (["--bogus"], "unknown option"),
        ]
        for flags, text in cases:
            with self.subTest(flags=flags):
                r = codecell("serve", "--config", cfg, *flags, stdin="")
                self.assertEqual(r.code, 2, r)
                self.assertIn(text, r.stderr)
        r = codecell("serve", stdin="")
        self.assertEqual(r.code, 2)
        self.assertIn("--config FILE is required", r.stderr)


if __name__ == "__main__":
    unittest.main()


# ---- issue 14: every request answered, nothing cut in half ---------------------------------

EURO = "\u20ac"  # three bytes in UTF-8: a cut by bytes lands inside one


def frame_from_ruby(t):
    """Ruby that writes a frame of type t on the control socket, as a broken guest would."""
    return ('require "json"; b = JSON.generate({"t" => %s}); '
            'IO.for_fd(3, "r+b", autoclose: false).syswrite([b.bytesize].pack("N") + b); '
            'sleep 1; 1'
            % json.dumps(t))


class Utf8Answers(InitializedStdio, unittest.TestCase):
    """Text that names what the client or the guest sent is cut on a character boundary, and
    every request gets its answer."""

    def test_multibyte_names_and_keys_are_answered_over_stdio(self):
        cases = [
            ({"jsonrpc": "2.0", "id": 1, "method": EURO * 40}, -32601, EURO * 33 + '" not found'),
            (call(2, "1", name=EURO * 30), -32602, 'unknown tool "' + EURO * 21 + '"'),
            # An unknown argument is a tool result (SEP-1303) that names it, cut the same way.
            (call(3, "1", args={EURO * 40: 1}), None, 'argument "' + EURO * 21 + '":'),
            # 62 bytes, then a character that would end past the 64th: it goes whole.
            (call(4, "1", args={"\u00e9" * 31 + EURO * 20: 1}), None,
             'argument "' + "\u00e9" * 31 + '":'),
        ]
        for message, code, text in cases:
            with self.subTest(text=text):
                m = self.peer.request(message)
                if code is None:
                    self.assertIs(m["result"]["isError"], True, m)
                    said = m["result"]["content"][0]["text"]
                else:
                    self.assertEqual(m["error"]["code"], code, m)
                    said = m["error"]["message"]
                self.assertIn(text, said)
                self.assertNotIn("\ufffd", said)
        self.assertEqual(self.peer.request({"jsonrpc": "2.0", "id": 9, "method": "ping"})["id"], 9)

    def test_a_multibyte_tool_name_raises_unknown_tool_in_the_guest(self):
        code = ('begin; SB.call("%s" * 100); rescue SB::UnknownTool => e; '
                '[e.class.name, e.message]; end' % EURO)
        m = self.peer.request(call(1, code))
        r = m["result"]["structuredContent"]
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["value"][0], "SB::UnknownTool")
        self.assertIn(EURO * 60, r["value"][1])

    def test_a_multibyte_frame_type_is_named_in_the_error(self):
        m = self.peer.request(call(1, frame_from_ruby(EURO * 30)))
        r = m["result"]["structuredContent"]
        self.assertEqual(r["status"], "sandbox_error", r)
        self.assertIn("unexpected \"" + EURO * 13, r.get("error", ""))

    def test_progress_goes_on_through_multibyte_lines(self):
        code = "$stdout.sync = true; 3.times { |i| puts 'x' + '%s' * 100; sleep 1.5 }; :done" % EURO
        message = call(1, code)
        message["params"]["_meta"] = {"progressToken": "p"}
        m = self.peer.request(message)
        self.assertEqual(m["result"]["structuredContent"]["value"], "done")
        notes = [n["params"]["message"] for n in self.peer.seen
                 if n.get("method") == "notifications/progress"]
        self.assertTrue(any(EURO * 10 in text for text in notes), notes)
        self.assertTrue(all("\ufffd" not in text for text in notes), notes)


class Utf8AnswersHttp(unittest.TestCase):
    def test_a_multibyte_tool_name_is_unknown_not_cancelled(self):
        d = tempdir(self)
        server = Http(small_config(d))
        self.addCleanup(server.stop)
        h = {"Mcp-Session-Id": server.initialize()}
        status, _, text = server.post(call(1, "1", name=EURO * 30), h)
        m = json.loads(text)
        self.assertEqual((status, m["error"]["code"]), (200, -32602), text)
        self.assertIn("unknown tool", m["error"]["message"])
        status, _, text = server.post({"jsonrpc": "2.0", "id": 2, "method": EURO * 40}, h)
        self.assertEqual(json.loads(text)["error"]["code"], -32601, text)


# ---- issue 14: sessions are fair and say what happened -------------------------------------

class FairSessions(unittest.TestCase):
    """Four sessions in the cell, several MCP clients over HTTP."""

    def setUp(self):
        d = tempdir(self)
        self.server = Http(small_config(d, sessions={"max": 4}))
        self.addCleanup(self.server.stop)

    def client(self):
        return {"Mcp-Session-Id": self.server.initialize()}

    def run_in(self, h, session, code, i=1):
        status, _, text = self.server.post(call(i, code, args={"session": session}), h)
        self.assertEqual(status, 200, text)
        return json.loads(text)["result"]

    def test_one_client_cannot_lock_the_others_out(self):
        a, b = self.client(), self.client()
        for k in range(4):
            self.assertIs(self.run_in(a, f"a{k}", f"v = {k}")["isError"], False)
        # b gets room: a holds more than its share and gives up its least recently used.
        self.assertEqual(self.run_in(b, "b0", "w = 10")["structuredContent"]["value"], 10)
        self.assertEqual(self.run_in(b, "b1", "w = 11")["structuredContent"]["value"], 11)
        # Two each now: b is at its share, and is told so without internal names.
        r = self.run_in(b, "b2", "1")
        self.assertIs(r["isError"], True, r)
        text = r["content"][0]["text"]
        self.assertNotRegex(text, r'm\d+-', "an internal session name was shown")
        self.assertIn('"b0"', text)
        self.assertIn('"b1"', text)
        self.assertIn('without "session"', text)
        self.assertIn("close one with the sessions tool", text)
        # a's untouched sessions kept their state; its oldest were parked (issue 33), and come
        # back with theirs once there is room.
        self.assertEqual(self.run_in(a, "a3", "v")["structuredContent"]["value"], 3)
        self.server.post("", b, method="DELETE")
        r = self.run_in(a, "a0", "v")
        self.assertEqual(r["structuredContent"]["value"], 0, r)
        self.assertEqual(r["structuredContent"]["restored"]["evals"], 1, r)
        self.assertIs(r["structuredContent"]["session"]["created"], False, r)
        self.assertNotIn("closed to make room", json.dumps(r["content"]))

    def test_a_busy_session_is_never_taken(self):
        """Four sessions of a are running at once (each says so in a shared folder and waits to
        be released): b's call is refused, and none of a's busy sessions is taken or disturbed."""
        out = tempdir(self)
        os.chmod(out, 0o777)
        self.server.stop()
        self.server = Http(small_config(
            tempdir(self), sessions={"max": 4},
            limits={"timeout_ms": 120000, "cpu_ms": 60000},
            mounts=[{"source": out, "dest": "/out", "mode": "rw"}]))
        self.addCleanup(self.server.stop)
        a, b = self.client(), self.client()
        for k in range(4):
            self.run_in(a, f"a{k}", "1")
        results = {}
        wait = ('File.write("/out/a%d", ""); t = Time.now; '
                'sleep 0.05 until File.exist?("/out/release") || Time.now - t > 100; :kept')

        def busy(k):
            results[k] = self.run_in(a, f"a{k}", wait % k, i=10 + k)
        threads = [threading.Thread(target=busy, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(os.listdir(out)) < 4:
                time.sleep(0.05)
            self.assertEqual(sorted(os.listdir(out)), ["a0", "a1", "a2", "a3"])
            refused = self.run_in(b, "b0", "1")
        finally:
            open(os.path.join(out, "release"), "w").close()
            for t in threads:
                t.join()
        self.assertIs(refused["isError"], True, refused)
        for k in range(4):
            self.assertEqual(results[k]["structuredContent"]["value"], "kept", results[k])
        self.assertIn("No new session can be opened", refused["content"][0]["text"])
        self.assertNotRegex(refused["content"][0]["text"], r'm\d+-')


def rw_config(test, **cell):
    """A cell with a read-write mount: its sessions cannot be parked (a replay would write to
    the host twice), so room is made by closing them."""
    out = tempdir(test)
    os.chmod(out, 0o777)  # the sandbox's user may be another
    return small_config(tempdir(test), mounts=[{"source": out, "dest": "/out", "mode": "rw"}],
                        **cell)


class EvictedSessionsAreSaid(unittest.TestCase):
    """A session closed to make room (one that cannot be parked) says so on its next call, even
    when that call is refused or comes with a handle; one parked says it is kept."""

    def test_a_refused_call_says_its_session_is_parked(self):
        server = Http(small_config(tempdir(self), sessions={"max": 4}))
        self.addCleanup(server.stop)
        a, b = ({"Mcp-Session-Id": server.initialize()} for _ in range(2))

        def run_in(h, session, code):
            status, _, text = server.post(call(1, code, args={"session": session}), h)
            self.assertEqual(status, 200, text)
            return json.loads(text)["result"]
        for k in range(4):
            run_in(a, f"a{k}", f"v = {k}")
        run_in(b, "b0", "1")
        run_in(b, "b1", "1")  # a0 and a1 were parked to make room: two running each now
        r = run_in(a, "a0", "v")
        self.assertIs(r["isError"], True, r)
        self.assertIn('Session "a0" is parked (it was idle): what it held is kept',
                      r["content"][0]["text"])
        self.assertIn('2 of them yours ("a2", "a3")', r["content"][0]["text"])
        server.post("", b, method="DELETE")
        self.assertEqual(run_in(a, "a0", "v")["structuredContent"]["value"], 0)

    def test_a_refused_call_says_its_session_was_closed_to_make_room(self):
        server = Http(rw_config(self, sessions={"max": 4}))
        self.addCleanup(server.stop)
        a, b = ({"Mcp-Session-Id": server.initialize()} for _ in range(2))

        def run_in(h, session, code):
            status, _, text = server.post(call(1, code, args={"session": session}), h)
            self.assertEqual(status, 200, text)
            return json.loads(text)["result"]
        for k in range(4):
            run_in(a, f"a{k}", f"v = {k}")
        run_in(b, "b0", "1")
        run_in(b, "b1", "1")  # a0 and a1 were closed to make room: two each now
        r = run_in(a, "a0", "v")
        self.assertIs(r["isError"], True, r)
        self.assertIn('Session "a0" was closed to make room', r["content"][0]["text"])
        self.assertIn("No new session can be opened", r["content"][0]["text"])
        self.assertNotRegex(r["content"][0]["text"], r'm\d+-')

    def test_a_handle_closed_to_make_room_says_so(self):
        peer = Stdio(rw_config(self, sessions={"max": 4, "idle_ms": 60000}))
        self.addCleanup(peer.close)
        handles = []
        for k in range(4):
            r = peer.request(modern(k, "tools/call",
                                    {"name": "ruby", "arguments": {"code": "1", "session": "new"}}))
            handles.append(r["result"]["structuredContent"]["session"]["id"])
        # A 2025-11-25 client on the same process is another client: it takes two.
        peer.request(INIT)
        for k in range(2):
            peer.request(call(10 + k, "1", args={"session": f"b{k}"}))
        r = peer.request(modern(20, "tools/call", {"name": "ruby", "arguments": {
            "code": "1", "session": handles[0]}}))["result"]
        self.assertIs(r["isError"], True, r)
        self.assertIn("was closed to make room for another client", text_of(r))
        self.assertIn('"session": "new"', text_of(r))


class ParkedSessions(unittest.TestCase):
    """Issue 33: a session idle for idle_ms is parked (its kernel ends) and its next call
    restores it, state and /work files, within the output schema; close ends it for good."""

    def test_an_idle_session_is_parked_and_restored(self):
        peer = Stdio(small_config(tempdir(self), pool=0, start="exec",
                                  sessions={"idle_ms": 1000}))
        self.addCleanup(peer.close)
        peer.request(INIT)

        def kernels():  # a session's sandbox: its init and interpreter
            return [p for p in descendants(peer.proc.pid)
                    if comm_of(p) in ("ruby", "codecell-init")]
        r = peer.request(call(1, 'x = 41; File.write("/work/f", "kept")', args={"session": "p"}))
        self.assertIs(r["result"]["isError"], False, r)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and kernels():
            time.sleep(0.1)
        self.assertEqual(kernels(), [], "the idle session's kernel is still there")
        r = peer.request(call(2, '[x + 1, File.read("/work/f")]', args={"session": "p"}))["result"]
        sc = r["structuredContent"]
        self.assertEqual(sc["value"], [42, "kept"], r)
        self.assertEqual(sc["restored"]["evals"], 1, r)
        self.assertIs(sc["session"]["created"], False, r)
        self.assertIn("restored", peer.request({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})[
            "result"]["tools"][0]["outputSchema"]["properties"])
        # Listed while parked; closed, it is gone for good.
        peer.request({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "sessions", "arguments": {"action": "close", "session": "p"}}})
        r = peer.request(call(5, "defined?(x).inspect", args={"session": "p"}))["result"]
        self.assertEqual(r["structuredContent"]["value"], "nil", r)
        self.assertNotIn("restored", r["structuredContent"])


class SessionsSayLostState(unittest.TestCase):
    """Whatever ends a session's kernel between calls is said in the next answer, and what
    only disturbs it keeps the state and is said too; both languages, both start modes."""

    def server(self, lang, start):
        out = tempdir(self)
        os.chmod(out, 0o777)
        peer = Stdio(small_config(tempdir(self), name="t", language=lang, pool=0, start=start,
                                  limits={"timeout_ms": 20000, "cpu_ms": 10000},
                                  mounts=[{"source": out, "dest": "/out", "mode": "rw"}]))
        self.addCleanup(peer.close)
        peer.request(INIT)
        return peer, out

    def run_in(self, peer, code, i=1):
        return peer.request(call(i, code, name="t", args={"session": "s"}))["result"]

    def kernel(self, peer):
        pids = [p for p in descendants(peer.proc.pid) if comm_of(p) in ("ruby", "python3")]
        self.assertEqual(len(pids), 1, pids)
        return pids[0]

    def wait(self, done):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not done():
            time.sleep(0.02)
        self.assertTrue(done(), "it never happened")

    def sandbox_of(self, peer, pid):
        """The processes of the sandbox whose interpreter is pid (those in its pid namespace):
        its init and the interpreter."""
        ns = ns_of(pid)
        return [p for p in descendants(peer.proc.pid) if ns_of(p) == ns]

    def groups_of(self, peer, pid):
        groups = {os.getpgid(p) for p in self.sandbox_of(peer, pid)}
        # Never the test's own group or the server's.
        self.assertFalse(groups & {os.getpgid(0), os.getpgid(peer.proc.pid)}, groups)
        return groups

    # How a kernel is killed from outside: its interpreter alone, its init (whose end takes
    # the interpreter with it), or every process group of the sandbox.
    KILLS = {
        "interpreter": lambda self, peer, pid: os.kill(pid, signal.SIGKILL),
        "init": lambda self, peer, pid: [kill_gone_too(os.kill, p)
                                         for p in self.sandbox_of(peer, pid)
                                         if comm_of(p) == "codecell-init"],
        # Killing one group ends init, which may take the next group before it is reached.
        "group": lambda self, peer, pid: [kill_gone_too(os.killpg, g)
                                          for g in self.groups_of(peer, pid)],
    }

    def test_a_kernel_killed_from_outside(self):
        for lang in ("ruby", "python"):
            for start in ("exec", "fork"):
                for how, kill in self.KILLS.items():
                    with self.subTest(lang=lang, start=start, kill=how):
                        peer, _ = self.server(lang, start)
                        self.run_in(peer, "x = 1")
                        pid = self.kernel(peer)
                        kill(self, peer, pid)
                        self.wait(lambda: not os.path.exists(f"/proc/{pid}"))
                        r = self.run_in(peer, "1 + 1", 2)
                        sc = r["structuredContent"]
                        self.assertEqual(sc["value"], 2, r)
                        self.assertIn("killed by signal 9", sc["state_lost"])
                        self.assertIs(sc["session"]["created"], True, r)
                        self.assertEqual(sc["session"]["id"], "s")
                        self.assertIn("killed by signal 9", sc["session"]["lost"], r)
                        self.assertIn("had ended since your last call", text_of(r))
                        r = self.run_in(peer, "1", 3)
                        self.assertNotIn("state_lost", r["structuredContent"])
                        self.assertEqual(r["structuredContent"]["session"],
                                         {"id": "s", "created": False})

    def test_a_kernel_killed_as_the_code_goes_to_it(self):
        # Stopped, it cannot read the code; killed once the call is under way (its first
        # progress report), it never ran any of it: the code runs on a fresh kernel.
        for lang in ("ruby", "python"):
            for start in ("exec", "fork"):
                with self.subTest(lang=lang, start=start):
                    peer, _ = self.server(lang, start)
                    self.run_in(peer, "x = 1")
                    pid = self.kernel(peer)
                    os.kill(pid, signal.SIGSTOP)
                    self.wait(lambda: state_of(pid) == "T")
                    message = call(2, "41 + 1", name="t", args={"session": "s"},
                                   _meta={"progressToken": "p"})
                    peer.send(message)
                    while True:
                        m = peer.read(60)
                        if m.get("method") == "notifications/progress":
                            os.kill(pid, signal.SIGKILL)
                            continue
                        if m.get("id") == 2:
                            break
                    sc = m["result"]["structuredContent"]
                    self.assertEqual(sc["value"], 42, m)
                    self.assertIs(sc["session"]["created"], True, m)
                    self.assertIn("before it took this eval's code (its interpreter was killed "
                                  "by signal 9", sc["session"]["lost"], m)
                    self.assertEqual(sc["session"]["lost"], sc["state_lost"])

    def test_both_eras_carry_the_lost_state_within_the_output_schema(self):
        try:
            import jsonschema
        except ImportError:
            self.skipTest("jsonschema is not installed: the answers are not checked against "
                          "the outputSchema")
        def schema_of(peer, listed):
            schema = next(t["outputSchema"] for t in listed["result"]["tools"] if t["name"] == "t")
            jsonschema.Draft202012Validator.check_schema(schema)
            self.assertIn("lost", schema["properties"]["session"]["properties"])
            return schema

        for era in ("2025-11-25", MODERN):
            with self.subTest(era=era):
                peer, _ = self.server("ruby", "exec")
                if era == MODERN:
                    schema = schema_of(peer, peer.request(modern(1, "tools/list")))
                    def ask(i, code, session):
                        return peer.request(modern(i, "tools/call", {"name": "t", "arguments": {
                            "code": code, "session": session}}))["result"]
                    r = ask(2, "x = 1", "new")
                    handle = r["structuredContent"]["session"]["id"]
                else:
                    schema = schema_of(peer, peer.request(
                        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                    def ask(i, code, session):
                        return self.run_in(peer, code, i)
                    r = ask(2, "x = 1", None)
                    handle = "s"
                jsonschema.validate(r["structuredContent"], schema)
                self.assertNotIn("lost", r["structuredContent"]["session"])
                pid = self.kernel(peer)
                os.kill(pid, signal.SIGKILL)
                self.wait(lambda: not os.path.exists(f"/proc/{pid}"))
                r = ask(3, "defined?(x).inspect", handle)
                jsonschema.validate(r["structuredContent"], schema)
                sc = r["structuredContent"]
                self.assertEqual(sc["value"], "nil", r)
                self.assertEqual(sc["session"]["id"], handle, r)
                self.assertIs(sc["session"]["created"], True, r)
                self.assertIn("killed by signal 9", sc["session"]["lost"], r)

    def test_a_cancelled_call_that_ended_the_kernel(self):
        # A cancelled request is not answered (the MCP rule), so the result that said the
        # state was lost never reached the client: the next call says it.
        code = {"ruby": 'File.write("/out/started", ""); sleep 60',
                "python": "import time\nopen('/out/started', 'w').close()\ntime.sleep(60)"}
        for lang in ("ruby", "python"):
            for start in ("exec", "fork"):
                with self.subTest(lang=lang, start=start):
                    peer, out = self.server(lang, start)
                    self.run_in(peer, "x = 1")
                    peer.send(call(2, code[lang], name="t", args={"session": "s"}))
                    self.wait(lambda: os.path.exists(os.path.join(out, "started")))
                    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": 2, "reason": "the test"}})
                    r = self.run_in(peer, "1 + 1", 3)
                    sc = r["structuredContent"]
                    self.assertEqual(sc["value"], 2, r)
                    self.assertIn("cancelled", sc.get("state_lost", ""), r)
                    self.assertIs(sc["session"]["created"], True, r)
                    self.assertIn("cancelled", sc["session"]["lost"], r)
                    r = self.run_in(peer, "1", 4)
                    self.assertNotIn("state_lost", r["structuredContent"])
                    self.assertNotIn(2, [m.get("id") for m in peer.seen], "a cancelled call was answered")

    def test_a_raise_into_the_idle_main_thread_keeps_the_state(self):
        codes = {
            "ruby": ("x = 6; t = Thread.new { sleep 0.3; Thread.main.raise 'boom' }; "
                     "Thread.new { t.join; File.write('/out/acted', '') }; 1", "RuntimeError"),
            "python": ("import threading, time, _thread\nx = 6\ndef act():\n"
                       "    time.sleep(0.3)\n    _thread.interrupt_main()\n"
                       "    open('/out/acted', 'w').close()\n"
                       "threading.Thread(target=act).start()\n1", "KeyboardInterrupt"),
        }
        for lang, (code, cls) in codes.items():
            for start in ("exec", "fork"):
                with self.subTest(lang=lang, start=start):
                    peer, out = self.server(lang, start)
                    self.run_in(peer, code)
                    self.wait(lambda: os.path.exists(os.path.join(out, "acted")))
                    r = self.run_in(peer, "x", 2)
                    sc = r["structuredContent"]
                    self.assertEqual(sc["value"], 6, r)
                    self.assertEqual(sc["idle_interrupts"][0]["class"], cls, r)
                    self.assertNotIn("state_lost", sc)
                    self.assertIn("idle_interrupts", r["content"][0]["text"])


def ns_of(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def state_of(pid):
    """pid's state letter (R, S, T, Z…), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


class FailedInitialize(unittest.TestCase):
    def test_a_failed_initialize_opens_nothing(self):
        d = tempdir(self)
        server = Http(small_config(d), "--max-sessions", "1")
        self.addCleanup(server.stop)
        bad = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        for _ in range(3):
            status, headers, text = server.post(bad)
            self.assertEqual(json.loads(text)["error"]["code"], -32602, text)
            self.assertNotIn("mcp-session-id", headers)
        metrics = server.post("", {}, method="GET", path="/metrics")[2]
        self.assertIn("codecell_mcp_sessions 0", metrics)
        # The one slot is still free.
        self.assertRegex(server.initialize(), r"^[0-9a-f]{32}$")


class SetUpFailures(unittest.TestCase):
    @unittest.skipUnless(os.geteuid() == 0, "idmapped mounts are made only by a root engine")
    def test_a_pool_that_cannot_start_leaks_no_descriptor(self):
        """A mount whose source vanished fails the set-up after the first mount's idmapped
        tree was opened; the pool retries about once a second, and each try leaked it."""
        import shutil
        d = tempdir(self)
        for name in ("a", "b"):
            os.makedirs(os.path.join(d, name))
        cfg = small_config(d, mounts=[{"source": os.path.join(d, "a"), "dest": "/a"},
                                      {"source": os.path.join(d, "b"), "dest": "/b"}])
        peer = Stdio(cfg)
        self.addCleanup(peer.stop_if_running)
        peer.request(INIT)
        self.assertEqual(peer.request(call(1, "1"))["result"]["structuredContent"]["value"], 1)
        # The pool's next sandbox is made from both mounts before one goes (a refill still
        # under way then would only make this test weaker, never fail it).
        time.sleep(2)
        shutil.rmtree(os.path.join(d, "b"))
        # The run takes the sandbox made before; the pool's refills now fail, one a second.
        peer.request(call(2, "1"))
        fds = f"/proc/{peer.proc.pid}/fd"
        counts = []
        for _ in range(8):
            counts.append(len(os.listdir(fds)))
            time.sleep(1)
        self.assertLessEqual(max(counts[2:]) - min(counts[2:]), 2, counts)
        self.assertEqual(peer.close()[0], 0)


# ---- issue 14: the server's memory is bounded -----------------------------------------------

FRAME_CAP = 16 << 20  # the default frame_bytes limit


def vm_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def sanitized():
    """Whether the binary is built with a sanitizer, whose allocator keeps freed memory."""
    from harness import BIN
    with open(BIN, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


class ServerMemory(unittest.TestCase):
    def setUp(self):
        if sanitized():
            self.skipTest("built with a sanitizer: its quarantine keeps freed memory, so the "
                          "server's RSS says nothing about ours")

    def test_a_result_at_the_frame_cap_costs_a_bounded_multiple_of_it(self):
        """[0] * 8_000_000 is a 16 MiB result frame of tiny elements. The value stays one text
        from the frame to the answer (the server held it as a tree twice before, about 40
        bytes per element, and kept most of it after answering)."""
        d = tempdir(self)
        # The whole value for the model too (model_chars): the cell asked for it.
        peer = Stdio(small_config(d, limits={"timeout_ms": 60000, "cpu_ms": 60000,
                                             "memory_bytes": 1 << 30,
                                             "model_chars": 40_000_000}))
        self.addCleanup(peer.stop_if_running)
        peer.request(INIT)
        before = vm_kib(peer.proc.pid, "VmHWM")
        peer.send(call(1, "[0] * 8_000_000"))
        # Generous: a 16 MiB value built, framed, checked and answered beside two CPU hogs.
        m = peer.answer(1, timeout=600)
        r = m["result"]["structuredContent"]
        self.assertEqual(r["status"], "ok", {k: v for k, v in r.items() if k != "value"})
        self.assertEqual(len(r["value"]), 8_000_000)
        self.assertEqual(json.loads(m["result"]["content"][0]["text"])["value"][-1], 0)
        peak = vm_kib(peer.proc.pid, "VmHWM") * 1024
        after = vm_kib(peer.proc.pid, "VmRSS") * 1024
        self.assertLess(before * 1024, FRAME_CAP)
        self.assertLess(peak, 8 * FRAME_CAP, f"peak {peak >> 20} MiB for one call")
        self.assertLess(after, 4 * FRAME_CAP, f"{after >> 20} MiB still held after the answer")
        self.assertEqual(peer.close()[0], 0)


# ---- issue 14: facts in the result are true -------------------------------------------------

HWM_RUBY_PRIVATE = ('s = File.read("/proc/self/status"); r = File.read("/proc/self/smaps_rollup"); '
                    '{"VmHWM" => s[/VmHWM:\\s+(\\d+)/, 1].to_i * 1024, '
                    '"RssAnon" => s[/RssAnon:\\s+(\\d+)/, 1].to_i * 1024, '
                    '"Private_Dirty" => r[/Private_Dirty:\\s+(\\d+)/, 1].to_i * 1024}')


class MemoryPeak(unittest.TestCase):
    def peaks(self, start):
        """Five runs, cold and from the pool, of a cell made the start way: each result's peak
        and what the interpreter said of its own memory (None without a memory cgroup)."""
        d = tempdir(self)
        peer = Stdio(small_config(d, pool=0, start=start))
        self.addCleanup(peer.stop_if_running)
        peer.request(INIT)
        found = []
        for i in range(5):
            r = peer.request(call(i, HWM_RUBY_PRIVATE))["result"]["structuredContent"]
            self.assertEqual(r["status"], "ok", r)
            if "cgroup_v1" not in r["sandbox"] and "cgroup_v2" not in r["sandbox"]:
                # No memory cgroup (an unprivileged user without delegation): nothing is
                # measured, and nothing is claimed.
                self.assertNotIn("memory_peak_bytes", r)
                continue
            found.append((r["memory_peak_bytes"], r["value"], r))
        self.assertEqual(peer.close()[0], 0)
        return found

    def test_the_peak_covers_the_interpreter_from_its_start(self):
        """The cgroup's peak holds at least the anonymous memory the interpreter has (all of
        it made inside the sandbox), and not much more than its high-water mark. The
        interpreter used to boot before its cgroup move completed, so the peak missed what it
        held then (262,144 bytes for 1+1)."""
        for peak, own, r in self.peaks("exec"):
            self.assertGreaterEqual(peak, own["RssAnon"], r)
            self.assertLessEqual(peak, own["VmHWM"] + (64 << 20), r)

    def test_a_forked_peak_covers_what_the_run_made(self):
        """A forked sandbox shares the booted interpreter's pages with its zygote until it
        writes them; those are charged once, to the zygote, and are not this run's (nor the few
        its set-up writes before its cgroup move, which comes before any guest code). Every
        page the run itself made (its private dirty memory) is in its peak."""
        for peak, own, r in self.peaks("fork"):
            self.assertGreaterEqual(peak, own["Private_Dirty"], r)
            self.assertLessEqual(peak, own["VmHWM"] + (64 << 20), r)


class ServerMemoryHttp(unittest.TestCase):
    setUp = ServerMemory.setUp

    def test_over_http_the_answer_is_not_copied_again(self):
        """Over HTTP the answer was also deep-copied as a tree for the JSON body (951 MiB peak
        for this call on the previous binary)."""
        d = tempdir(self)
        server = Http(small_config(d, limits={"timeout_ms": 60000, "cpu_ms": 60000,
                                              "memory_bytes": 1 << 30,
                                              "model_chars": 40_000_000}))
        self.addCleanup(server.stop)
        h = {"Mcp-Session-Id": server.initialize()}
        status, _, text = server.post(call(1, "[0] * 8_000_000"), h)
        self.assertEqual(status, 200)
        self.assertEqual(len(json.loads(text)["result"]["structuredContent"]["value"]), 8_000_000)
        peak = vm_kib(server.proc.pid, "VmHWM") * 1024
        after = vm_kib(server.proc.pid, "VmRSS") * 1024
        self.assertLess(peak, 8 * FRAME_CAP, f"peak {peak >> 20} MiB for one call")
        self.assertLess(after, 4 * FRAME_CAP, f"{after >> 20} MiB still held after the answer")


class CallFrames(unittest.TestCase):
    def test_a_call_frame_without_args_is_answered_and_frees_what_it_made(self):
        """A call frame may leave out "args". The engine made an empty object for it and never
        freed it: one leak per call, which the sanitizer build of this test reports when the
        server exits (its exit code is then not 0)."""
        from mcp_peer import write_config
        d = tempdir(self)
        echo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools", "echo.py")
        cell = {"name": "py", "language": "python", "pool": 1, "tools": ["echo"]}
        cfg = write_config(d, [cell], tools=[{"name": "echo", "command": [echo]}])
        peer = Stdio(cfg)
        peer.request(INIT)
        code = "\n".join([
            "import json, os, struct",
            "def frame(o):",
            "    b = json.dumps(o).encode()",
            "    os.write(3, struct.pack('>I', len(b)) + b)",
            "def reply():",
            "    n = struct.unpack('>I', os.read(3, 4))[0]",
            "    data = b''",
            "    while len(data) < n:",
            "        data += os.read(3, n - len(data))",
            "    return json.loads(data)",
            "answers = []",
            "for i in range(3):",
            "    frame({'t': 'call', 'id': 100 + i, 'name': 'echo'})",
            "    answers.append(reply().get('result'))",
            "answers",
        ])
        r = peer.request(call(1, code, name="py"))["result"]["structuredContent"]
        self.assertEqual(r.get("value"), [{"got": {}}] * 3, r)
        code, err = peer.close()
        self.assertEqual(code, 0, err)


class CappedOutput(unittest.TestCase):
    def test_output_cut_at_its_cap_ends_on_a_character(self):
        d = tempdir(self)
        peer = Stdio(small_config(d, limits={"timeout_ms": 5000, "output_bytes": 1024}))
        self.addCleanup(peer.stop_if_running)
        peer.request(INIT)
        # 2 + 3k bytes: the 1024-byte cap falls inside a euro sign.
        r = peer.request(call(1, "print 'ab' + '%s' * 1000; 1" % EURO))["result"]
        r = r["structuredContent"]
        self.assertIs(r.get("stdout_truncated"), True, r)
        # The first half of the cap and the last bytes, each ending on a character.
        head, marker, tail = r["stdout"].partition("\n[… ")
        self.assertEqual(head, "ab" + EURO * 170)
        self.assertRegex(marker + tail, r"^\n\[… 2\.\d kB omitted …\]\n(€){170}$")
        self.assertEqual(peer.close()[0], 0)


# ---- issue 16: what the model reads -----------------------------------------------------------

TWO_CELLS = [{"name": "ruby", "language": "ruby", "pool": 1,
              "limits": {"timeout_ms": 30000, "cpu_ms": 20000}},
             {"name": "python", "language": "python", "pool": 1,
              "limits": {"timeout_ms": 30000, "cpu_ms": 20000}}]
MANY_LINES_THEN_FAIL = {
    "ruby": '200_000.times { |i| puts "line #{i}" }\nraise ArgumentError, "the end"',
    "python": 'for i in range(200000): print("line", i)\nraise ValueError("the end")',
}


class LeanResults(unittest.TestCase):
    def setUp(self):
        from mcp_peer import write_config
        self.peer = Stdio(write_config(tempdir(self), TWO_CELLS))
        self.addCleanup(lambda: self.peer.proc.poll() is not None or self.peer.close())
        self.peer.request(INIT)

    def test_the_text_of_1_plus_1_is_what_the_model_acts_on(self):
        for lang in ("ruby", "python"):
            r = self.peer.request(call(1, "1+1", name=lang))["result"]
            self.assertEqual(r["content"], [{"type": "text", "text": '{"status":"ok","value":2}'}])
            s = r["structuredContent"]
            self.assertIn("seccomp", s["sandbox"])
            self.assertIn("duration_ms", s)
            self.assertNotIn("warnings", s)

    def test_a_long_output_keeps_its_end_and_the_error_under_the_cap(self):
        for lang, code in MANY_LINES_THEN_FAIL.items():
            self.peer.send(call(1, code, name=lang))
            r = self.peer.answer(1, timeout=120)["result"]
            text = r["content"][0]["text"]
            self.assertLessEqual(len(text), 20000, lang)
            lean = json.loads(text)
            self.assertEqual(lean["status"], "error", lang)
            self.assertEqual(lean["error"]["message"], "the end")
            self.assertIs(lean["stdout_truncated"], True)
            out = lean["stdout"]
            self.assertTrue(out.startswith("line 0\nline 1\n"), out[:40])
            self.assertTrue(out.endswith("line 199999\n"), out[-40:])
            self.assertTrue(re.search(r"\n\[… 19\d,\d{3} lines, 2\.\d MB omitted …\]\nline \d+\n",
                                      out), out[len(out) // 2 - 200:len(out) // 2 + 200])
            self.assertEqual(r["structuredContent"]["stdout"], out)

    def test_a_cut_at_a_multibyte_character(self):
        # 5,000 euro signs on one line: the model's cut lands between characters, not bytes.
        for lang, code in {"ruby": 'print "\u20ac" * 50_000; 1',
                           "python": 'print("\u20ac" * 50000, end=""); 1'}.items():
            r = self.peer.request(call(1, code, name=lang))["result"]
            out = json.loads(r["content"][0]["text"])["stdout"]
            head, _, tail = out.partition("\n[… ")
            self.assertTrue(head and set(head) == {EURO}, lang)
            self.assertRegex(tail, r"^\d+\.\d kB omitted …\]\n(€)+$")
            self.assertLess(len(out), 20000)

    def test_an_unprivileged_server_warns_its_operator_once_not_the_model(self):
        if os.geteuid() != 0:
            self.skipTest("checks the cgroup warning of a normal user, made with setpriv as root")
        from mcp_peer import write_config
        d = tempdir(self)
        os.chmod(d, 0o755)
        cfg = write_config(d, TWO_CELLS[:1])
        os.chmod(cfg, 0o644)
        p = subprocess.Popen(["setpriv", "--reuid", "65534", "--regid", "65534",
                              "--clear-groups", BIN, "serve", "--config", cfg],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        LAUNCHED.append(p.pid)
        lines = [INIT, call(1, "1"), call(2, "2")]
        out, err = p.communicate("".join(json.dumps(m) + "\n" for m in lines).encode(), 120)
        answers = [json.loads(x) for x in out.decode().splitlines()]
        for a in answers[1:]:
            self.assertNotIn("warning", json.dumps(a["result"]))
        warnings = [x for x in err.decode().splitlines() if ": warning: " in x]
        # One line per missing layer, once; none when this host delegates cgroups to nobody.
        self.assertEqual(len(warnings), len(set(warnings)), err)
# ---- issue 21: 2026-07-28 beside 2025-11-25, tool errors a model can fix, sessions it manages --

def text_of(result):
    return "\n".join(c["text"] for c in result["content"])


class ToolErrors(InitializedStdio, unittest.TestCase):
    """SEP-1303: every argument problem is a result with isError and a message that says what to
    send instead, in both eras; the arguments never reach a sandbox."""

    CASES = [
        ({}, 'Missing argument "code"'),
        ({"code": ""}, '"code" must be a non-empty string'),
        ({"code": 7}, '"code" must be a non-empty string'),
        ({"code": "1", "cmd": "x"}, 'Unknown argument "cmd"'),
        ({"code": "1", "reset": True}, '"reset": true needs "session"'),
    ]
    LEGACY = [
        ({"code": "1", "session": "a", "reset": "yes"}, '"reset" must be true or false'),
        ({"code": "1", "session": "../x"}, '"session" must be a name of 1 to 40'),
        ({"code": "1", "session": "s" * 41}, '"session" must be a name of 1 to 40'),
        ({"code": "1", "session": 5}, '"session" must be a name'),
    ]
    MODERN = [
        ({"code": "1", "session": "new", "reset": 1}, '"reset" must be true or false'),
        ({"code": "1", "session": "analysis"}, '"session" must be "new"'),
        ({"code": "1", "session": "cs_" + "0" * 31}, '"session" must be "new"'),
        ({"code": "1", "session": "cs_" + "0" * 32},
         "is not one this server gave you"),
    ]

    def check(self, message, text):
        m = self.peer.request(message)
        self.assertNotIn("error", m, m)
        self.assertIs(m["result"]["isError"], True, m)
        self.assertIn(text, text_of(m["result"]))
        self.assertNotIn("structuredContent", m["result"])
        return m["result"]

    def test_each_bad_argument_is_a_tool_error_for_the_model(self):
        for args, text in self.CASES + self.LEGACY:
            with self.subTest(args=args):
                self.check({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "ruby", "arguments": args}}, text)
        # A request without arguments is a call with none: "code" is missing.
        self.check({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "ruby"}}, 'Missing argument "code"')

    def test_the_same_in_2026_07_28(self):
        for args, text in self.CASES + self.MODERN:
            with self.subTest(args=args):
                r = self.check(modern(1, "tools/call", {"name": "ruby", "arguments": args}), text)
                self.assertEqual(r["resultType"], "complete")


class ModernStdio(unittest.TestCase):
    """2026-07-28 over stdio, with no initialize, beside a client of 2025-11-25 on the same
    process."""

    def setUp(self):
        self.dir = tempdir(self)
        self.peer = Stdio(small_config(self.dir, sessions={"max": 4, "idle_ms": 60000}))
        self.addCleanup(self.finish)

    def finish(self):
        code, err = self.peer.close()
        self.assertEqual(code, 0, err)
        self.assertEqual(stray_children(), [], "a sandbox outlived the server")

    def run_code(self, i, code, **args):
        m = self.peer.request(modern(i, "tools/call",
                                     {"name": "ruby", "arguments": dict(args, code=code)}))
        self.assertIn("result", m, m)
        return m["result"]

    def test_discover_and_list_without_initialize(self):
        r = self.peer.request(modern("d", "server/discover"))["result"]
        self.assertEqual(r["resultType"], "complete")
        self.assertIn(MODERN, r["supportedVersions"])
        self.assertIn("2025-11-25", r["supportedVersions"])
        self.assertIn("tools", r["capabilities"])
        self.assertEqual(r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "codecell")
        self.assertEqual((r["cacheScope"], r["ttlMs"] > 0), ("public", True))
        r = self.peer.request(modern(1, "tools/list"))["result"]
        self.assertEqual((r["resultType"], r["cacheScope"]), ("complete", "public"))
        self.assertGreater(r["ttlMs"], 0)
        self.assertEqual([t["name"] for t in r["tools"]], ["ruby", "sessions"])
        session = r["tools"][0]["inputSchema"]["properties"]["session"]
        self.assertEqual(session["pattern"], "^(new|cs_[0-9a-f]{32})$")
        self.assertIn("After 60 s unused a session is\nparked", r["tools"][0]["description"])

    def test_version_and_meta_errors(self):
        m = self.peer.request(modern(1, "tools/list",
                                     **{"io.modelcontextprotocol/protocolVersion": "1900-01-01"}))
        self.assertEqual(m["error"]["code"], -32022, m)
        self.assertEqual(m["error"]["data"]["requested"], "1900-01-01")
        self.assertIn(MODERN, m["error"]["data"]["supported"])
        no_caps = modern(2, "tools/list")
        del no_caps["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        m = self.peer.request(no_caps)
        self.assertEqual(m["error"]["code"], -32602, m)
        self.assertIn("clientCapabilities", m["error"]["message"])
        m = self.peer.request(modern(3, "tools/list",
                                     **{"io.modelcontextprotocol/logLevel": "loud"}))
        self.assertEqual(m["error"]["code"], -32602, m)
        # Removed in 2026-07-28: ping, logging/setLevel; initialize is not of this era.
        for i, method in enumerate(["ping", "logging/setLevel", "initialize"]):
            m = self.peer.request(modern(10 + i, method))
            self.assertEqual(m["error"]["code"], -32601, m)
        # The legacy era still works on the same process.
        self.assertEqual(self.peer.request(INIT)["result"]["protocolVersion"], "2025-11-25")
        r = self.peer.request(call(20, "1 + 1"))["result"]
        self.assertNotIn("resultType", r)
        self.assertEqual(r["structuredContent"]["value"], 2)

    def test_a_handle_carries_a_session_and_expires_with_it(self):
        r = self.run_code(1, "x = 41", session="new")
        self.assertIs(r["isError"], False, r)
        self.assertEqual(r["resultType"], "complete")
        handle = r["structuredContent"]["session"]["id"]
        self.assertRegex(handle, r"^cs_[0-9a-f]{32}$")
        self.assertIs(r["structuredContent"]["session"]["created"], True)
        self.assertIn("created by this call", text_of(r))
        r = self.run_code(2, "x + 1", session=handle)
        self.assertEqual(r["structuredContent"]["value"], 42, r)
        self.assertEqual(r["structuredContent"]["session"], {"id": handle, "created": False})
        self.assertNotIn("created by this call", text_of(r))
        # Another "new" is another session: handles are not reused.
        other = self.run_code(3, "defined?(x).inspect", session="new")
        self.assertEqual(other["structuredContent"]["value"], "nil")
        self.assertNotEqual(other["structuredContent"]["session"]["id"], handle)
        # A legacy client on the same process cannot reach a handle: to it, it is a new name.
        self.peer.request(INIT)
        r = self.peer.request(call(4, "defined?(x).inspect", args={"session": handle}))["result"]
        self.assertEqual(r["structuredContent"]["value"], "nil", r)
        self.assertIs(r["structuredContent"]["session"]["created"], True)
        # A session that hits a limit ends; its handle then says it expired.
        r = self.run_code(5, "loop {}", session=handle)
        self.assertIn(r["structuredContent"]["status"], ("timeout", "fuel_exhausted"), r)
        self.assertIn("ended with this call and its handle has expired", text_of(r))
        r = self.run_code(6, "x", session=handle)
        self.assertIs(r["isError"], True, r)
        self.assertIn("has expired", text_of(r))
        self.assertIn('"session": "new"', text_of(r))
        self.assertNotIn("structuredContent", r)

    def test_a_name_whose_session_a_limit_ended_is_created_again(self):
        self.peer.request(INIT)
        r = self.peer.request(call(1, "x = 1", args={"session": "s"}))["result"]
        self.assertIs(r["structuredContent"]["session"]["created"], True)
        r = self.peer.request(call(2, "loop {}", args={"session": "s"}))["result"]
        self.assertIs(r["structuredContent"]["session"]["created"], False)
        r = self.peer.request(call(3, "defined?(x).inspect", args={"session": "s"}))["result"]
        self.assertEqual(r["structuredContent"]["value"], "nil", r)
        self.assertEqual(r["structuredContent"]["session"], {"id": "s", "created": True})

    def test_logs_only_for_a_request_that_asks(self):
        self.run_code(1, "1")
        self.run_code(2, "1", session="new")
        self.assertEqual([m for m in self.peer.seen if m.get("method") == "notifications/message"],
                         [], "a 2026-07-28 request without logLevel hears nothing")
        m = modern(3, "tools/call", {"name": "ruby", "arguments": {"code": "1"}},
                   **{"io.modelcontextprotocol/logLevel": "info"})
        self.peer.request(m)
        logs = [m["params"] for m in self.peer.seen if m.get("method") == "notifications/message"]
        self.assertEqual([(x["level"], x["data"]) for x in logs], [("info", "ruby: ok")])


class SessionTool(unittest.TestCase):
    """The sessions companion tool: list, close one, close all, only ever the caller's own."""

    def setUp(self):
        d = tempdir(self)
        cells = [{"name": "ruby", "language": "ruby", "pool": 1, "sessions": {"max": 6}},
                 {"name": "py", "language": "python", "pool": 0,
                  "sessions": {"default": True}},
                 {"name": "plain", "language": "ruby", "pool": 0,
                  "sessions": {"enabled": False}}]
        self.server = Http(write_config(d, cells))
        self.addCleanup(self.server.stop)

    def post(self, h, message):
        status, _, text = self.server.post(message, h)
        self.assertEqual(status, 200, text)
        return json.loads(text)["result"]

    def sessions(self, h, i=1, **args):
        return self.post(h, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                             "params": {"name": "sessions", "arguments": args}})

    def test_list_and_close(self):
        a = {"Mcp-Session-Id": self.server.initialize()}
        b = {"Mcp-Session-Id": self.server.initialize()}
        tools = json.loads(self.server.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                            a)[2])["result"]["tools"]
        self.assertEqual([t["name"] for t in tools], ["ruby", "py", "plain", "sessions"])
        self.assertEqual(tools[3]["inputSchema"]["properties"]["tool"]["enum"], ["ruby", "py"])
        for name in ["one", "two"]:
            r = self.post(a, call(1, "v = 1", args={"session": name}))
            self.assertIs(r["structuredContent"]["session"]["created"], True, r)
        self.post(b, call(1, "w = 1", args={"session": "one"}))
        # py has a default session: a call without "session" runs there, and says so.
        r = self.post(a, call(2, "z = 5", name="py"))
        self.assertEqual(r["structuredContent"]["session"], {"id": "default", "created": True})
        self.assertIn("Your default session was created by this call", text_of(r))
        r = self.post(a, call(3, "z", name="py"))
        self.assertEqual(r["structuredContent"]["value"], 5, r)
        self.assertIs(r["structuredContent"]["session"]["created"], False)
        r = self.sessions(a, action="list")
        self.assertIs(r["isError"], False, r)
        self.assertEqual(sorted((s["tool"], s["session"]) for s in r["structuredContent"]["sessions"]),
                         [("py", "default"), ("ruby", "one"), ("ruby", "two")])
        self.assertNotRegex(text_of(r), r"m\d+-")
        # Close one: gone for a, b's session of the same name untouched.
        r = self.sessions(a, action="close", tool="ruby", session="one")
        self.assertEqual(r["structuredContent"]["closed"], [{"tool": "ruby", "session": "one"}])
        r = self.post(a, call(4, "defined?(v).inspect", args={"session": "one"}))
        self.assertEqual(r["structuredContent"]["value"], "nil")
        self.assertIs(r["structuredContent"]["session"]["created"], True)
        self.assertIn('Session "one" was created by this call', text_of(r))
        r = self.post(b, call(5, "w", args={"session": "one"}))
        self.assertEqual(r["structuredContent"]["value"], 1, r)
        # Closing what is not there says so, for the model.
        r = self.sessions(a, action="close", session="nothing")
        self.assertIs(r["isError"], True, r)
        self.assertIn("no open session", text_of(r))
        # Close all of a's: b keeps its own.
        r = self.sessions(a, action="close")
        self.assertEqual(len(r["structuredContent"]["closed"]), 3, r)
        self.assertEqual(self.sessions(a, action="list")["structuredContent"]["sessions"], [])
        self.assertEqual(len(self.sessions(b, action="list")["structuredContent"]["sessions"]), 1)

    def test_bad_arguments_are_tool_errors(self):
        a = {"Mcp-Session-Id": self.server.initialize()}
        for args, text in [({}, '"action": "list"'), ({"action": "drop"}, '"action": "list"'),
                           ({"action": "close", "tool": "plain"}, '"tool" must name a tool'),
                           ({"action": "list", "what": 1}, 'Unknown argument "what"'),
                           ({"action": "close", "session": ""}, '"session" must be')]:
            with self.subTest(args=args):
                r = self.sessions(a, **args)
                self.assertIs(r["isError"], True, r)
                self.assertIn(text, text_of(r))


class ModernHttp(unittest.TestCase):
    """2026-07-28 over HTTP: no session, headers that must match the body, status by error."""

    def setUp(self):
        d = tempdir(self)
        self.server = Http(small_config(d))
        self.addCleanup(self.server.stop)

    def send(self, message, headers=None, drop=(), **extra):
        h = modern_headers(message)
        h.update(headers or {})
        for k in drop:
            del h[k]
        status, got, text = self.server.post(message, h, **extra)
        return status, got, json.loads(text) if text else None

    def test_calls_without_initialize(self):
        status, h, m = self.send(modern(1, "server/discover"))
        self.assertEqual(status, 200, m)
        self.assertNotIn("mcp-session-id", h)
        self.assertEqual(m["result"]["resultType"], "complete")
        message = modern(2, "tools/call",
                         {"name": "ruby", "arguments": {"code": "x = 41", "session": "new"}})
        status, h, m = self.send(message)
        self.assertEqual(status, 200, m)
        handle = m["result"]["structuredContent"]["session"]["id"]
        # Any connection, any Mcp-Session-Id (ignored): the handle is what carries the state.
        message = modern(3, "tools/call",
                         {"name": "ruby", "arguments": {"code": "x + 1", "session": handle}})
        status, _, m = self.send(message, {"Mcp-Session-Id": "whatever"})
        self.assertEqual(m["result"]["structuredContent"]["value"], 42, m)
        # A legacy client of the same server has its own sessions and its Mcp-Session-Id.
        sid = self.server.initialize()
        status, _, text = self.server.post(call(4, "defined?(x).inspect",
                                                args={"session": "s"}), {"Mcp-Session-Id": sid})
        self.assertEqual(json.loads(text)["result"]["structuredContent"]["value"], "nil")

    def test_without_tokens_no_client_lists_or_closes_the_handles_of_others(self):
        # Every client of a server without bearer tokens is the same context to it: a handle is
        # the only thing that sets one client's session apart, so none is ever listed.
        def tool(i, name, args):
            status, _, m = self.send(modern(i, "tools/call", {"name": name, "arguments": args}))
            self.assertEqual(status, 200, m)
            return m["result"]
        handle = tool(1, "ruby", {"code": "secret = 41", "session": "new"})[
            "structuredContent"]["session"]["id"]
        for i, args in enumerate(({"action": "list"}, {"action": "close"},
                                  {"action": "close", "tool": "ruby"})):
            with self.subTest(args=args):
                r = tool(10 + i, "sessions", args)
                self.assertIs(r["isError"], True, r)
                self.assertNotIn(handle, json.dumps(r))
                self.assertIn("lists no session handles", r["content"][0]["text"])
        self.assertEqual(tool(20, "ruby", {"code": "secret + 1", "session": handle})
                         ["structuredContent"]["value"], 42)
        # Named, it closes: the handle is the capability.
        r = tool(21, "sessions", {"action": "close", "session": handle})
        self.assertEqual(r["structuredContent"]["closed"], [{"tool": "ruby", "session": handle}], r)

    def test_headers_must_match_the_body(self):
        message = modern(1, "tools/call", {"name": "ruby", "arguments": {"code": "1"}})
        cases = [
            ({}, ["MCP-Protocol-Version"], "MCP-Protocol-Version header missing"),
            ({"MCP-Protocol-Version": "2025-11-25"}, [], "MCP-Protocol-Version header does not"),
            ({}, ["Mcp-Method"], "Mcp-Method header missing"),
            ({"Mcp-Method": "tools/list"}, [], "Mcp-Method header does not match"),
            ({}, ["Mcp-Name"], "Mcp-Name header missing"),
            ({"Mcp-Name": "python"}, [], "Mcp-Name header does not match"),
            ({"Mcp-Name": "=?base64?cHl0aG9u?="}, [], "Mcp-Name header does not match"),
            ({"Mcp-Name": "=?base64?!!!?="}, [], "is not valid Base64"),
            ({"Mcp-Param-Session": "new"}, [], "header sent, but params.arguments has no session"),
        ]
        for headers, drop, text in cases:
            with self.subTest(text=text):
                status, _, m = self.send(message, headers, drop)
                self.assertEqual((status, m["error"]["code"], m["id"]), (400, -32020, 1), m)
                self.assertIn(text, m["error"]["message"])
        # The session argument is mirrored (x-mcp-header): a proxy routes on the header, so it
        # must be the body's.
        with_session = modern(2, "tools/call",
                              {"name": "ruby", "arguments": {"code": "1", "session": "new"}})
        for headers, drop, text in [
                ({}, ["Mcp-Param-Session"], "Mcp-Param-Session header missing: it must repeat"),
                ({"Mcp-Param-Session": "cs_" + "0" * 32}, [], "Mcp-Param-Session header does not"),
                ({"Mcp-Param-Session": "=?base64?bmV3?="}, [], None)]:
            with self.subTest(text=text):
                status, _, m = self.send(with_session, headers, drop)
                if text is None:  # the Base64 form of "new" is "new"
                    self.assertEqual(m["result"]["structuredContent"]["value"], 1, m)
                    continue
                self.assertEqual((status, m["error"]["code"]), (400, -32020), m)
                self.assertIn(text, m["error"]["message"])
        tools = self.send(modern(3, "tools/list"))[2]["result"]["tools"]
        self.assertEqual([t["inputSchema"]["properties"]["session"]["x-mcp-header"]
                          for t in tools if "session" in t["inputSchema"]["properties"]],
                         ["Session", "Session"])
        # The Base64 sentinel form of the right name is the name.
        status, _, m = self.send(message, {"Mcp-Name": "=?base64?cnVieQ==?="})
        self.assertEqual((status, m["result"]["structuredContent"]["value"]), (200, 1), m)

    def test_status_follows_the_error(self):
        status, _, m = self.send(modern(1, "prompts/list"))
        self.assertEqual((status, m["error"]["code"]), (404, -32601), m)
        message = modern(2, "tools/list", **{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})
        status, _, m = self.send(message, {"MCP-Protocol-Version": "2099-01-01"})
        self.assertEqual((status, m["error"]["code"]), (400, -32022), m)
        self.assertIn(MODERN, m["error"]["data"]["supported"])
        # The modern header without the body's _meta is a modern request missing its fields.
        status, _, m = self.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                                 {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
        self.assertEqual((status, m["error"]["code"]), (400, -32602), m)
        # A tool error is still a 200 with a result.
        status, _, m = self.send(modern(4, "tools/call", {"name": "ruby", "arguments": {}}))
        self.assertEqual((status, m["result"]["isError"]), (200, True), m)
        status, _, _ = self.server.post(None, {}, method="GET")
        self.assertEqual(status, 405)

    def test_a_stream_with_progress_and_logs(self):
        message = modern(1, "tools/call",
                         {"name": "ruby", "arguments": {"code": "sleep 1.2; :done"}},
                         progressToken="p", **{"io.modelcontextprotocol/logLevel": "info"})
        status, h, text = self.server.post(message, modern_headers(message))
        self.assertEqual((status, h["content-type"]), (200, "text/event-stream"), text)
        messages = sse_messages(text)
        self.assertEqual(messages[-1]["result"]["structuredContent"]["value"], "done")
        self.assertIn("notifications/message", [m.get("method") for m in messages])


class Cors(unittest.TestCase):
    """Browsers: off by default; with --cors-origin, the preflight and the answers say so."""

    ORIGIN = "https://app.example"

    def start(self, *flags):
        d = tempdir(self)
        server = Http(small_config(d), *flags)
        self.addCleanup(server.stop)
        return server

    def preflight(self, server, origin):
        h = {"Origin": origin, "Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "content-type, mcp-protocol-version"}
        return server.post(None, h, method="OPTIONS")

    def test_off_by_default(self):
        server = self.start()
        status, h, _ = self.preflight(server, self.ORIGIN)
        self.assertEqual(status, 403)
        self.assertNotIn("access-control-allow-origin", h)
        # A page of the server's own origin is not cross-origin: no CORS headers either.
        status, h, _ = server.post(INIT, {"Origin": f"http://{server.host}"})
        self.assertEqual(status, 200)
        self.assertNotIn("access-control-allow-origin", h)
        status, h, _ = server.post(None, {}, method="OPTIONS")
        self.assertEqual(status, 204)
        self.assertIn("OPTIONS", h["allow"])

    def test_allowed_origin(self):
        server = self.start("--cors-origin", self.ORIGIN, "--token-file", self.token())
        status, h, _ = self.preflight(server, self.ORIGIN)
        self.assertEqual(status, 204)  # before the token: browsers send preflights without it
        self.assertEqual(h["access-control-allow-origin"], self.ORIGIN)
        self.assertIn("POST", h["access-control-allow-methods"])
        for name in ["Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name",
                     "Authorization", "Content-Type"]:
            self.assertIn(name, h["access-control-allow-headers"])
        auth = {"Authorization": "Bearer sesame", "Origin": self.ORIGIN}
        status, h, _ = server.post(INIT, auth)
        self.assertEqual(status, 200)
        self.assertEqual(h["access-control-allow-origin"], self.ORIGIN)
        self.assertIn("Mcp-Session-Id", h["access-control-expose-headers"])
        # Refusals carry the header too, so the page can read why.
        status, h, _ = server.post(INIT, {"Origin": self.ORIGIN})
        self.assertEqual((status, h["access-control-allow-origin"]), (401, self.ORIGIN))

    def test_a_disallowed_origin(self):
        server = self.start("--cors-origin", self.ORIGIN)
        status, h, text = self.preflight(server, "https://evil.example")
        self.assertEqual(status, 403, text)
        self.assertNotIn("access-control-allow-origin", h)
        status, h, text = server.post(INIT, {"Origin": "https://evil.example"})
        self.assertEqual(status, 403, text)
        self.assertIn("--cors-origin", json.loads(text)["error"]["message"])

    def token(self):
        path = os.path.join(tempdir(self), "token")
        with open(path, "w") as f:
            f.write("sesame\n")
        return path


class CellNames(unittest.TestCase):
    def test_a_dotted_cell_name_is_refused_at_load_with_a_fix(self):
        from harness import codecell
        d = tempdir(self)
        for name, fix in [("weather.today", "weather_today"), ("1st", "c_1st"),
                          ("x" * 65, "x" * 64), ("r\u00e9sum\u00e9", "r_sum_")]:
            with self.subTest(name=name):
                cfg = write_config(d, [{"name": name, "language": "ruby", "pool": 0}])
                r = codecell("serve", "--config", cfg, stdin="")
                self.assertEqual(r.code, 2, r)
                self.assertIn("cells[0].name", r.stderr)
                self.assertIn("^[a-zA-Z0-9_-]{1,64}$", r.stderr)
                self.assertIn(f'try "{fix}"', r.stderr)


class TokenScopes(unittest.TestCase):
    """Each line of --token-file is one client's token: the MCP sessions and the 2026-07-28
    session handles it opens are reached only with it."""

    def setUp(self):
        d = tempdir(self)
        path = os.path.join(d, "tokens")
        with open(path, "w") as f:
            f.write("alpha-token\n\nbeta-token\r\n")
        self.server = Http(small_config(d), "--token-file", path)
        self.addCleanup(self.server.stop)
        self.a = {"Authorization": "Bearer alpha-token"}
        self.b = {"Authorization": "Bearer beta-token"}

    def modern_call(self, auth, i, args, name="ruby"):
        message = modern(i, "tools/call", {"name": name, "arguments": args})
        status, _, text = self.server.post(message, dict(modern_headers(message), **auth))
        self.assertEqual(status, 200, text)
        return json.loads(text)["result"]

    def test_handles_belong_to_their_token(self):
        r = self.modern_call(self.a, 1, {"code": "x = 41", "session": "new"})
        handle = r["structuredContent"]["session"]["id"]
        self.assertEqual(self.modern_call(self.a, 2, {"code": "x + 1", "session": handle})
                         ["structuredContent"]["value"], 42)
        r = self.modern_call(self.b, 3, {"code": "x", "session": handle})
        self.assertIs(r["isError"], True, r)
        self.assertIn("not one this server gave you", text_of(r))
        listed = self.modern_call(self.b, 4, {"action": "list"}, name="sessions")
        self.assertEqual(listed["structuredContent"]["sessions"], [])
        listed = self.modern_call(self.a, 5, {"action": "list"}, name="sessions")
        self.assertEqual(listed["structuredContent"]["sessions"],
                         [{"tool": "ruby", "session": handle}])

    def test_an_mcp_session_belongs_to_its_token(self):
        sid = self.server.initialize(self.a)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        self.assertEqual(self.server.post(ping, dict(self.a, **{"Mcp-Session-Id": sid}))[0], 200)
        status, _, _ = self.server.post(ping, dict(self.b, **{"Mcp-Session-Id": sid}))
        self.assertEqual(status, 404)
        status, _, _ = self.server.post("", dict(self.b, **{"Mcp-Session-Id": sid}),
                                        method="DELETE")
        self.assertEqual(status, 404)
        self.assertEqual(self.server.post(ping, dict(self.a, **{"Mcp-Session-Id": sid}))[0], 200)

    def test_a_file_without_a_token_is_refused(self):
        from harness import codecell
        d = tempdir(self)
        path = os.path.join(d, "empty")
        with open(path, "w") as f:
            f.write("\n \n")
        r = codecell("serve", "--config", small_config(d), "--http", "127.0.0.1:0",
                     "--token-file", path, stdin="")
        self.assertEqual(r.code, 2, r)
        self.assertIn("the file holds no token", r.stderr)


class ModernHttpCancel(unittest.TestCase):
    """2026-07-28 over HTTP: closing a call's event stream cancels that call, and only it (a
    stateless client sharing the request id goes on)."""

    def test_closing_the_stream_cancels_the_call(self):
        import http.client
        d = tempdir(self)
        out = os.path.join(d, "out")
        os.mkdir(out)
        os.chmod(out, 0o777)
        server = Http(small_config(d, mounts=[{"source": out, "dest": "/out", "mode": "rw"}]))
        self.addCleanup(server.stop)

        def open_call(name):
            code = f"sleep 2; File.write('/out/{name}', 'ran'); :{name}"
            message = modern(1, "tools/call", {"name": "ruby", "arguments": {"code": code}},
                             progressToken=name)
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            h = dict(modern_headers(message), **{"Content-Type": "application/json",
                                                  "Accept": "application/json, text/event-stream"})
            conn.request("POST", "/mcp", body=json.dumps(message), headers=h)
            r = conn.getresponse()
            self.assertEqual(r.getheader("Content-Type"), "text/event-stream")
            return conn, r

        kept, kept_r = open_call("kept")
        dropped, _ = open_call("dropped")
        dropped.sock.shutdown(2)
        dropped.close()
        messages = sse_messages(kept_r.read().decode())
        kept.close()
        self.assertEqual(messages[-1]["result"]["structuredContent"]["value"], "kept", messages)
        # Once no run is in progress, the dropped call has ended one way or the other: it never
        # wrote.
        deadline = time.monotonic() + 60
        while "codecell_runs_in_progress 0\n" not in server.post(None, {}, "/metrics", "GET")[2]:
            self.assertLess(time.monotonic(), deadline, "the dropped call never ended")
            time.sleep(0.05)
        self.assertTrue(os.path.exists(os.path.join(out, "kept")))
        self.assertFalse(os.path.exists(os.path.join(out, "dropped")), "the closed call ran on")


# ---- issue 22: instances behind a proxy ----------------------------------------------------

def gated_config(d, **limits):
    """A Ruby cell with sessions and a read-write /gate: a run that waits for /gate/open runs
    until the test opens it."""
    gate = os.path.join(d, "gate")
    os.makedirs(gate)
    os.chmod(gate, 0o777)
    lim = {"timeout_ms": 60000, "cpu_ms": 20000}
    lim.update(limits)
    cfg = write_config(d, [{"name": "ruby", "language": "ruby", "pool": 1, "limits": lim,
                            "sessions": {"max": 4, "idle_ms": 60000},
                            "mounts": [{"source": gate, "dest": "/gate", "mode": "rw"}]}])
    return cfg, gate


WAIT_FOR_GATE = 'until File.exist?("/gate/open"); sleep 0.05; end; 42'


class Instances(unittest.TestCase):
    """--instance NAME: the name leads every Mcp-Session-Id and handle, and what names another
    instance is answered as lost (the proxy brings it here only when that one is gone)."""

    def setUp(self):
        d = tempdir(self)
        self.server = Http(gated_config(d)[0], "--instance", "a")
        self.addCleanup(self.server.stop)

    def modern_call(self, i, args):
        message = modern(i, "tools/call", {"name": "ruby", "arguments": args})
        status, _, text = self.server.post(message, modern_headers(message))
        self.assertEqual(status, 200, text)
        return json.loads(text)["result"]

    def test_names_and_what_is_lost(self):
        sid = self.server.initialize()
        self.assertRegex(sid, r"^a\.[0-9a-f]{32}$")
        r = self.modern_call(1, {"code": "x = 41", "session": "new"})
        handle = r["structuredContent"]["session"]["id"]
        self.assertRegex(handle, r"^cs_a\.[0-9a-f]{32}$")
        self.assertEqual(self.modern_call(2, {"code": "x + 1", "session": handle})
                         ["structuredContent"]["value"], 42)
        lost = self.modern_call(3, {"code": "x", "session": "cs_b." + "0" * 32})
        self.assertTrue(lost["isError"])
        self.assertIn('was lost: it lived on the codecell instance "b"', lost["content"][0]["text"])
        unknown = self.modern_call(4, {"code": "x", "session": "cs_a." + "0" * 32})
        self.assertIn('lost when the codecell instance "a" restarted', unknown["content"][0]["text"])
        ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        status, _, text = self.server.post(ping, {"Mcp-Session-Id": "b." + "0" * 32})
        self.assertEqual(status, 404)
        self.assertIn('MCP session lost: it lived on the codecell instance \\"b\\"', text)
        status, _, text = self.server.post(ping, {"Mcp-Session-Id": "a." + "0" * 32})
        self.assertEqual(status, 404)
        self.assertIn("unknown or ended MCP session", text)
        tools = self.server.post(modern(6, "tools/list"), modern_headers(modern(6, "tools/list")))
        session = json.loads(tools[2])["result"]["tools"][0]["inputSchema"]["properties"]["session"]
        self.assertEqual(session["pattern"], r"^(new|cs_[a-z0-9][a-z0-9-]{0,15}\.[0-9a-f]{32})$")
        metrics = self.server.post("", {}, method="GET", path="/metrics")[2]
        self.assertIn('codecell_instance_info{instance="a"} 1', metrics)
        self.assertIn("codecell_draining 0", metrics)


class Drain(unittest.TestCase):
    """SIGTERM over HTTP drains: new work gets 503 (a proxy sends it elsewhere), /healthz says
    draining, the requests in flight finish, then the server exits 0."""

    def running(self, server, n):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            metrics = server.post("", {}, method="GET", path="/metrics")[2]
            if f"codecell_runs_in_progress {n}" in metrics:
                return
            time.sleep(0.05)
        self.fail("the run did not start")

    def test_in_flight_calls_finish_and_new_work_is_turned_away(self):
        import http.client
        d = tempdir(self)
        cfg, gate = gated_config(d)
        server = Http(cfg, "--instance", "a", "--drain-timeout", "60s")
        # A failure below must not leave the server (and its gated runs) to the next tests.
        self.addCleanup(lambda: server.proc.poll() is not None or server.proc.kill())
        sid = server.initialize()
        answers = {}

        def post(key, message, headers):
            answers[key] = server.post(message, headers)
        threads = [threading.Thread(target=post, args=("legacy", call(1, WAIT_FOR_GATE),
                                                       {"Mcp-Session-Id": sid}))]
        modern_call = modern(2, "tools/call", {"name": "ruby", "arguments": {"code": WAIT_FOR_GATE}})
        threads.append(threading.Thread(target=post, args=("modern", modern_call,
                                                           modern_headers(modern_call))))
        for t in threads:
            t.start()
        self.running(server, 2)
        # Connections opened before the drain (as a proxy keeps them alive) are served on.
        kept = []
        for _ in range(6):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            conn.request("GET", "/healthz", headers={"Host": server.host})
            self.assertEqual(conn.getresponse().read(), b"ok\n")
            kept.append(conn)

        def on(conn, method, path, body=None, headers=None):
            h = {"Host": server.host, "Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream"}
            h.update(headers or {})
            conn.request(method, path, body=json.dumps(body) if body else None, headers=h)
            r = conn.getresponse()
            return r.status, r.getheader("Connection"), r.read().decode()
        server.proc.send_signal(signal.SIGTERM)
        # The drain begins by refusing new connections: a proxy passes those on.
        deadline = time.monotonic() + 30
        while True:
            try:
                server.post("", {}, method="GET", path="/healthz")
            except ConnectionRefusedError:
                break
            except (ConnectionResetError, http.client.RemoteDisconnected):
                # Accepted by the kernel a moment before the listener was shut (a proxy
                # retries those too): the drain has begun; the next try is refused.
                pass
            self.assertLess(time.monotonic(), deadline, "the drain did not begin")
            time.sleep(0.05)
        self.assertEqual(on(kept[0], "GET", "/healthz"), (503, "close", "draining\n"))
        one_shot = modern(3, "tools/call", {"name": "ruby", "arguments": {"code": "1"}})
        for conn, message, headers in [(kept[1], one_shot, modern_headers(one_shot)),
                                       (kept[2], INIT, {}),
                                       (kept[3], call(4, "1"), {"Mcp-Session-Id": sid})]:
            status, _, text = on(conn, "POST", "/mcp", message, headers)
            self.assertEqual(status, 503, text)
            self.assertIn("draining", json.loads(text)["error"]["message"])
        # What starts no run, in an MCP session open here, is still answered.
        status, _, text = on(kept[4], "POST", "/mcp", {"jsonrpc": "2.0", "id": 5, "method": "ping"},
                             {"Mcp-Session-Id": sid})
        self.assertEqual(status, 200, text)
        self.assertIn("codecell_draining 1", on(kept[5], "GET", "/metrics")[2])
        self.assertIsNone(server.proc.poll(), "the server stopped with calls in flight")
        open(os.path.join(gate, "open"), "w").close()
        for t in threads:
            t.join(60)
        for key in ("legacy", "modern"):
            status, _, text = answers[key]
            self.assertEqual(status, 200, text)
            self.assertEqual(json.loads(text)["result"]["structuredContent"]["value"], 42, text)
        self.assertEqual(server.proc.wait(30), 0)
        for conn in kept:
            conn.close()
        err = server.proc.stderr.read().decode()
        server.proc.stderr.close()
        self.assertIn('"event":"drain"', err)

    def test_the_drain_deadline_cancels_what_still_runs(self):
        d = tempdir(self)
        cfg, _ = gated_config(d)
        server = Http(cfg, "--drain-timeout", "1s")
        message = modern(1, "tools/call", {"name": "ruby", "arguments": {"code": WAIT_FOR_GATE}})
        answer = {}
        t = threading.Thread(target=lambda: answer.update(
            r=server.post(message, modern_headers(message))))
        t.start()
        self.running(server, 1)
        server.proc.send_signal(signal.SIGTERM)
        # The run would wait 60 s for its gate: the drain's deadline ends it long before.
        self.assertEqual(server.proc.wait(40), 0)
        server.proc.stderr.close()
        t.join(30)
        status, _, text = answer["r"]
        self.assertEqual(json.loads(text)["error"]["code"], -32800, text)
