"""Host tools end to end: SB.call from guest code to command tools, through the real binary."""
import json
import os
import re
import subprocess
import time
import unittest

from harness import EachLanguage, codecell, run_json, tempdir

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "tools", "tools.json")


def call(code, *flags):
    return run_json(code, "--tools", TOOLS, *flags)


def setUpModule():
    os.environ["CODECELL_TOOL_SECRET"] = "named-so-passed"
    os.environ["CODECELL_ENGINE_SECRET"] = "never-passed"


# c(name, …): the tool's answer, or [error class without its module, message].
HELPER = {
    "ruby": 'def c(*a, **k); SB.call(*a, **k); rescue SB::ToolError, TypeError => e; '
            '[e.class.name.sub("SB::", ""), e.message]; end\n',
    "python": "def c(*a, **k):\n"
              "    try:\n        return sb.call(*a, **k)\n"
              "    except (sb.ToolError, TypeError) as e:\n        return [type(e).__name__, str(e)]\n",
}


class ToolLanguages(EachLanguage):
    def calls(self, ruby, python, check, *flags):
        self.each_language({"ruby": HELPER["ruby"] + ruby, "python": HELPER["python"] + python},
                           check, "--tools", TOOLS, *flags)


class Calls(ToolLanguages, unittest.TestCase):
    def test_keyword_and_hash_forms(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], [{"got": {"q": "x", "n": 1}},
                                                 {"got": {"q": "y", "list": [1, 2]}},
                                                 {"got": {"a": 1, "b": 2}}])
        self.calls('[SB.call("echo", q: "x", n: 1), SB.call("echo", {"q" => "y", "list" => [1, 2]}),'
                   ' SB.call("echo", {"a" => 1}, b: 2)]',
                   "[sb.call('echo', q='x', n=1), sb.call('echo', {'q': 'y', 'list': [1, 2]}), "
                   "sb.call('echo', {'a': 1}, b=2)]", check)

    def test_nested_data_and_unicode_round_trip(self):
        self.calls('SB.call("echo", deep: {"a" => [{"b" => nil, "c" => true}, 2.5]}, '
                   'text: "héllo ✓ 🎉 \\u0000 \\"q\\"")',
                   "sb.call('echo', deep={'a': [{'b': None, 'c': True}, 2.5]}, "
                   "text='héllo ✓ 🎉 \\u0000 \"q\"')",
                   lambda r, lang: self.assertEqual(
                       r.result["value"]["got"], {"deep": {"a": [{"b": None, "c": True}, 2.5]},
                                                  "text": 'héllo ✓ 🎉 \u0000 "q"'}, r))

    def test_result_is_plain_data(self):
        self.calls('v = SB.call("echo", q: "x"); [v.class.name, v["got"].class.name, v.keys]',
                   "v = sb.call('echo', q='x')\n[type(v).__name__, type(v['got']).__name__, list(v)]",
                   lambda r, lang: self.assertEqual(
                       r.result["value"], ["Hash", "Hash", ["got"]] if lang == "ruby"
                       else ["dict", "dict", ["got"]], r))

    def test_unknown_tool_is_a_tool_error(self):
        self.calls('[c("nope"), (SB.call("nope") rescue $!.is_a?(SB::ToolError))]',
                   "def kind():\n    try: sb.call('nope')\n    except sb.ToolError: return True\n"
                   "[c('nope'), kind()]",
                   lambda r, lang: self.assertEqual(
                       r.result["value"], [["UnknownTool", 'unknown tool "nope"'], True], r))

    def test_failing_tool_carries_its_stderr(self):
        self.calls('c("fail")', "c('fail')", lambda r, lang: self.assertEqual(
            r.result["value"], ["ToolError", 'tool "fail" failed (exit code 3): the upstream API '
                                             "said no: quota exceeded"], r))

    def test_uncaught_tool_error_is_a_guest_error(self):
        def check(r, lang):
            self.assertEqual(r.status, "error", r)
            self.assertEqual(r.result["error"]["class"],
                             "SB::ToolError" if lang == "ruby" else "sb.ToolError")
        self.calls('SB.call("fail")', "sb.call('fail')", check)

    def test_call_from_inside_rescue(self):
        self.calls('begin; raise "first"; rescue => e; SB.call("echo", q: e.message); end',
                   "try:\n    raise Exception('first')\nexcept Exception as e:\n"
                   "    v = sb.call('echo', q=str(e))\nv",
                   lambda r, lang: self.assertEqual(r.result["value"], {"got": {"q": "first"}}, r))

    def test_invalid_json_from_a_tool(self):
        def check(r, lang):
            self.assertEqual(r.result["value"][0], "ToolError")
            self.assertIn('tool "badjson" returned invalid JSON', r.result["value"][1], r)
        self.calls('c("badjson")', "c('badjson')", check)

    def test_many_calls_in_a_loop(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], 200 * 201 // 2, r)
        # 200 tool processes started on the host: a wall clock a loaded machine can meet (the
        # calls' time counts in it), so that only the calls' answers are tested.
        self.calls('(1..200).sum { |i| SB.call("echo", n: i)["got"]["n"] }',
                   "sum(sb.call('echo', n=i)['got']['n'] for i in range(1, 201))",
                   check, "--timeout", "300s")

    def test_non_json_arguments_are_a_type_error(self):
        def check(r, lang):
            for kind, message in r.result["value"][:4]:
                self.assertEqual(kind, "TypeError", r)
                self.assertIn("rpc arguments must be JSON-serializable: args", message)
            self.assertEqual(r.result["value"][4][0], "TypeError")
        self.calls('[c("echo", x: Object.new), c("echo", x: [1, 0.0/0]), c("echo", x: {1 => 2}), '
                   'c("echo", x: Time.now), c("echo", [1])]',
                   "import datetime\n[c('echo', x=object()), c('echo', x=[1, float('nan')]), "
                   "c('echo', x={1: 2}), c('echo', x=datetime.datetime.now()), c('echo', [1])]", check)

    def test_tool_environment_is_clean(self):
        def check(r, lang):
            env, plain = r.result["value"]
            self.assertEqual(env.get("CODECELL_TOOL_SECRET"), "named-so-passed")
            self.assertNotIn("CODECELL_ENGINE_SECRET", env)
            self.assertNotIn("HOME", env)
            self.assertNotIn("CODECELL_TOOL_SECRET", plain)
        self.calls('[SB.call("secret_env", show_env: true), SB.call("echo", show_env: true)]',
                   "[sb.call('secret_env', show_env=True), sb.call('echo', show_env=True)]", check)

    def test_import_sb_in_python(self):
        r = run_json("import sb as tools\ntools.call('echo', q='i')", "--tools", TOOLS, lang="python")
        self.assertEqual(r.result["value"], {"got": {"q": "i"}}, r)


class Limits(ToolLanguages, unittest.TestCase):
    def test_request_at_and_over_the_limit(self):
        # The arguments {"measure":true,"q":"…"} are 23 bytes plus the string.
        n = 1024 * 1024 - 23

        def check(r, lang):
            self.assertEqual(r.result["value"][0], n, r)
            self.assertEqual(r.result["value"][1][0], "ToolError")
            self.assertIn("over the 1048576-byte limit", r.result["value"][1][1])
        self.calls(f'[SB.call("echo", measure: true, q: "a" * {n})["len"], '
                   f'c("echo", measure: true, q: "a" * {n + 1})]',
                   f"[sb.call('echo', measure=True, q='a' * {n})['len'], "
                   f"c('echo', measure=True, q='a' * {n + 1})]", check)

    def test_answer_at_and_over_the_limit(self):
        def check(r, lang):
            self.assertEqual(r.result["value"][0], 1024 * 1024 - 2, r)  # with quotes: the limit
            self.assertIn("more than the 1048576-byte limit", r.result["value"][1][1])
        self.calls('[SB.call("echo", repeat: 1024 * 1024 - 2).size, c("echo", repeat: 1024 * 1024)]',
                   "[len(sb.call('echo', repeat=1024 * 1024 - 2)), c('echo', repeat=1024 * 1024)]",
                   check)

    def test_time_per_call(self):
        self.calls('c("hang")', "c('hang')", lambda r, lang: self.assertEqual(
            r.result["value"], ["ToolError", 'tool "hang" did not answer within 300 ms'], r))

    def test_hanging_tool_under_the_wall_clock(self):
        self.calls('SB.call("hang_long")', "sb.call('hang_long')",
                   lambda r, lang: self.assertEqual(r.status, "timeout", r), "--timeout", "1s")

    def test_calls_per_execution(self):
        self.calls('n = 0; n += 1 while c("nope")[0] == "UnknownTool"; [n, c("nope")]',
                   "n = 0\nwhile c('nope')[0] == 'UnknownTool':\n    n += 1\n[n, c('nope')]",
                   lambda r, lang: self.assertEqual(
                       r.result["value"],
                       [1000, ["ToolError", "too many tool calls: the limit is 1000 per execution"]], r))


class Forgery(EachLanguage, unittest.TestCase):
    """Frames written by hand on fd 3: a valid call is a call, anything else ends the run."""

    SEND = {
        "ruby": 'require "json"; io = IO.for_fd(3, autoclose: false); body = JSON.generate(%s); '
                'io.write([body.bytesize].pack("N") + body); io.flush\n',
        "python": "import json, os, struct\nbody = json.dumps(%s).encode()\n"
                  "os.write(3, struct.pack('>I', len(body)) + body)\n",
    }
    READ = {"ruby": 'n = io.read(4).unpack1("N"); JSON.parse(io.read(n))',
            "python": "n = struct.unpack('>I', os.read(3, 4))[0]\njson.loads(os.read(3, n))"}

    def test_hand_written_call_frame_is_a_call(self):
        frame = {"t": "call", "id": 99, "name": "echo", "args": {"q": "forged"}}
        self.each_language({lang: self.SEND[lang] % json.dumps(frame).replace("true", "True")
                            + self.READ[lang] for lang in ("ruby", "python")},
                           lambda r, lang: self.assertEqual(
                               r.result["value"], {"t": "reply", "id": 99, "ok": True,
                                                   "result": {"got": {"q": "forged"}}}, r),
                           "--tools", TOOLS)

    def test_malformed_call_frames_end_the_run(self):
        frames = [{"t": "call", "id": "x", "name": "echo", "args": {}},
                  {"t": "call", "id": 1, "name": "echo", "args": [1]},
                  {"t": "call", "id": 1, "name": "echo", "args": {}, "extra": 1},
                  {"t": "reply", "id": 1}]
        for frame in frames:
            def check(r, lang):
                self.assertEqual(r.status, "sandbox_error", r)
                self.assertIn("protocol", r.result["error"])
            self.each_language({"ruby": self.SEND["ruby"] % json.dumps(frame) + "sleep 5",
                                "python": self.SEND["python"] % json.dumps(frame)
                                + "import time\ntime.sleep(5)"}, check, "--tools", TOOLS)


class ToolsFile(unittest.TestCase):
    def write(self, content):
        d = tempdir(self)
        path = os.path.join(d, "tools.json")
        with open(path, "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        return path

    def test_bad_files_are_usage_errors_naming_the_key(self):
        cases = [
            ("{", "tools.json:1"),
            ({"tools": {}}, "tools: must be an array"),
            ({"toolz": []}, "toolz: unknown key"),
            ({"tools": [{"name": "1x", "command": ["/bin/true"]}]}, "tools[0].name: must start with a letter"),
            ({"tools": [{"name": "a", "command": []}]}, "tools[0].command: must be a non-empty array"),
            ({"tools": [{"name": "a", "command": ["./missing"]}]}, "tools[0].command: ./missing: not found"),
            ({"tools": [{"name": "a", "command": ["/bin/true"], "colour": 1}]}, "tools[0].colour: unknown key"),
            ({"tools": [{"name": "a", "command": ["/bin/true"], "timeout_ms": 0}]}, "tools[0].timeout_ms: must be an integer"),
            ({"tools": [{"name": "a", "command": ["/bin/true"], "input_schema": {"type": "array"}}]}, "tools[0].input_schema: must have \"type\": \"object\""),
            ({"tools": [{"name": "a", "command": ["/bin/true"], "input_schema": {"properties": {"x": {}}, "required": ["y"]}}]}, "\"required\" names \"y\", which \"properties\" does not define"),
            ({"tools": [{"name": "a", "command": ["/bin/true"], "env": ["CODECELL_SURELY_UNSET"]}]}, "tools[0].env: CODECELL_SURELY_UNSET is not set"),
            ({"tools": [{"name": "a", "command": ["/bin/true"]}, {"name": "a", "command": ["/bin/true"]}]}, "tools[1].name: a tool of that name is defined above"),
        ]
        for content, message in cases:
            with self.subTest(content=content):
                path = self.write(content)
                r = codecell("run", "--tools", path, "-e", "1")
                self.assertEqual(r.code, 2, r)
                self.assertIn(message, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)


class Description(unittest.TestCase):
    def test_tools_section_matches_the_expected_text(self):
        examples = os.environ.get("CODECELL_EXAMPLES") or os.path.join(HERE, "..", "..", "examples")
        r = codecell("describe", "--mount", os.path.join(examples, "data") + ":/data",
                     "--tools", os.path.join(examples, "tools.json"))
        self.assertEqual(r.code, 0, r)
        # The interpreter's version and the libraries found are the host's: checked on their
        # own (test_libraries), and kept out of the text compared here.
        version = subprocess.run(["/usr/bin/ruby", "-e", "print RUBY_VERSION"],
                                 capture_output=True, text=True).stdout
        text = r.stdout.replace(f"as a fresh Ruby {version} process",
                                "as a fresh Ruby {version} process")
        text = re.sub(r"\n\n## Libraries\n\n.*?(?=\n\n## )", "", text, flags=re.S)
        with open(os.path.join(HERE, "expected_description.txt")) as f:
            self.assertEqual(text, f.read())

    def test_python_description_speaks_python(self):
        examples = os.environ.get("CODECELL_EXAMPLES") or os.path.join(HERE, "..", "..", "examples")
        r = codecell("describe", "--lang", "python", "--tools", os.path.join(examples, "tools.json"))
        self.assertEqual(r.code, 0, r)
        self.assertIn("Pass a complete, self-contained Python script", r.stdout)
        self.assertIn('    sb.call("weather.today", city=str, days=int?)\n', r.stdout)
        self.assertIn("- `city` (str, required) — the city name", r.stdout)
        self.assertNotIn("Ruby", r.stdout)

    def test_description_says_when_subprocesses_are_allowed(self):
        r = codecell("describe")
        self.assertIn("no network and no subprocesses; threads work", r.stdout)
        r = codecell("describe", "--allow-subprocesses")
        self.assertIn("threads work, and the system's programs (under `/usr`)\n  may be run as "
                      "subprocesses;", r.stdout)
        self.assertNotIn("no subprocesses", r.stdout)

    def test_description_states_the_cells_limits(self):
        path = os.path.join(tempdir(self), "cells.json")
        with open(path, "w") as f:
            json.dump({"cells": [{"name": "r", "language": "ruby", "pool": 0, "limits": {
                "timeout_ms": 5000, "cpu_ms": 1500, "memory_bytes": 128 << 20}}]}, f)
        r = codecell("describe", "--config", path)
        self.assertEqual(r.code, 0, r)
        self.assertIn("- at most 5 s of wall-clock time, 1.5 s of CPU time, 128 MiB of memory\n"
                      "  and 64 processes and threads;", r.stdout)
        self.assertIn("`/work` (the working directory,\n  up to 64 MiB) and `/tmp` (up to 64 MiB)",
                      r.stdout)


class DescriptionHolds(EachLanguage, unittest.TestCase):
    """What the description promises, tried: threads work, /work is the working directory
    and writable, as is /tmp; /usr is readable; the host's other folders are not there; nothing
    is left from the run before."""

    def test_each_promise_holds(self):
        code = {
            "ruby": 'File.write("/tmp/t", "x"); File.write("left", "x")\n'
                    '[Thread.new { 6 * 7 }.value, Dir.pwd, File.read("/tmp/t"), '
                    'File.exist?("/usr/bin/env"), File.exist?("/root"), File.exist?("/home")]',
            "python": 'import os, threading\nout = []\n'
                      't = threading.Thread(target=lambda: out.append(6 * 7)); t.start(); t.join()\n'
                      'open("/tmp/t", "w").write("x"); open("left", "w").write("x")\n'
                      '[out[0], os.getcwd(), open("/tmp/t").read(), os.path.exists("/usr/bin/env"),'
                      ' os.path.exists("/root"), os.path.exists("/home")]',
        }
        self.each_language(code, lambda r, lang: self.assertEqual(
            r.result["value"], [42, "/work", "x", True, False, False], r))
        fresh = {"ruby": 'File.exist?("/work/left")', "python": 'import os; os.path.exists("/work/left")'}
        self.each_language(fresh, lambda r, lang: self.assertEqual(r.result["value"], False, r))


# ---- issue 14: calls from threads, arguments the host cannot take -----------------------------

class CallsFromThreads(ToolLanguages, unittest.TestCase):
    """docs/tools.md: calls run one at a time. Threads queue in the prelude; each gets its own
    answer."""

    def test_four_threads_at_once_each_get_their_own_answers(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], [[t * 100 + i for i in range(25)] for t in range(4)])
        self.calls("4.times.map { |t| Thread.new { 25.times.map { |i| "
                   "SB.call('echo', n: t * 100 + i)['got']['n'] } } }.map(&:value)",
                   "from concurrent.futures import ThreadPoolExecutor\n"
                   "def work(t):\n"
                   "    return [sb.call('echo', n=t * 100 + i)['got']['n'] for i in range(25)]\n"
                   "list(ThreadPoolExecutor(4).map(work, range(4)))", check,
                   # 100 tool processes started on the host: a wall clock a loaded (or
                   # sanitized) machine can meet, so that only the answers are tested.
                   "--timeout", "300s")

    def test_errors_reach_the_thread_that_called(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], [["UnknownTool", "ToolError", "ok"]] * 4)
        self.calls("4.times.map { |t| Thread.new { [c('nope')[0], c('fail')[0], "
                   "SB.call('echo', q: 'ok')['got']['q']] } }.map(&:value)",
                   "from concurrent.futures import ThreadPoolExecutor\n"
                   "def work(t):\n"
                   "    return [c('nope')[0], c('fail')[0], sb.call('echo', q='ok')['got']['q']]\n"
                   "list(ThreadPoolExecutor(4).map(work, range(4)))", check)

    def test_a_session_survives_calls_from_threads(self):
        entries = {
            "ruby": "x = 41\n4.times.map { |t| Thread.new { SB.call('echo', n: t)['got']['n'] } }"
                    ".map(&:value)\nx + 1\n",
            "python": "x = 41\nfrom concurrent.futures import ThreadPoolExecutor\n"
                      "list(ThreadPoolExecutor(4).map(lambda t: sb.call('echo', n=t)['got']['n'], "
                      "range(4)))\nx + 1\n",
        }
        for lang, stdin in entries.items():
            with self.subTest(lang=lang):
                r = codecell("repl", "--lang", lang, "--tools", TOOLS, stdin=stdin)
                values = [line for line in r.stdout.splitlines() if line.startswith("=> ")]
                self.assertEqual(values[-2:], ["=> [0,1,2,3]", "=> 42"], r)


class ArgumentsBeyondTheHost(ToolLanguages, unittest.TestCase):
    """What JSON cannot carry never reaches a tool: the seed's TypeError ("rpc arguments must be
    JSON-serializable"), saying what is wrong and where, raised before anything is sent; the
    code can rescue it and the run goes on. Integers of any size reach it exact
    (test_answers.BigIntegers)."""

    def test_nan_is_a_type_error_big_integers_pass(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            *errors, last = r.result["value"]
            self.assertEqual([kind for kind, _ in errors], ["TypeError"] * 2, r)
            self.assertIn("rpc arguments must be JSON-serializable", errors[0][1])
            self.assertIn("JSON cannot carry", errors[0][1])
            self.assertEqual(last, {"got": {"n": 2**63 - 1, "m": -(2**64), "f": 0.1}})
        self.calls("[c('echo', x: [0.0 / 0]), c('echo', x: {'y' => Float::INFINITY}), "
                   "SB.call('echo', n: 2**63 - 1, m: -(2**64), f: 0.1)]",
                   "[c('echo', x=[float('nan')]), c('echo', x={'y': float('inf')}), "
                   "sb.call('echo', n=2**63 - 1, m=-(2**64), f=0.1)]", check)

    # Each bad call: (what it holds, where the message says it is, Ruby, Python).
    BAD = [
        ("NaN", "args[:x] is NaN", "args['x'] is nan", "c(x: 0.0 / 0)", "c(x=float('nan'))"),
        ("nested Infinity", "args[:x][\"a\"][1][\"b\"] is Infinity",
         "args['x']['a'][1]['b'] is -inf",
         "c(x: {'a' => [1, {'b' => Float::INFINITY}]})", "c(x={'a': [1, {'b': float('-inf')}]})"),
        ("NaN in a list", "args[:x][2] is NaN", "args['x'][2] is nan",
         "c(x: [1, 2, Float::NAN])", "c(x=[1, 2, float('nan')])"),
        ("a non-text key", "args[:x] has a Integer key", "args['x'] has a int key",
         "c(x: {1 => 2})", "c(x={1: 2})"),
        ("invalid UTF-8 text", "args[:x] is text that is not valid UTF-8",
         "args['x'] is text that is not valid UTF-8",
         'c(x: "ok \\xff")', "c(x='ok \\ud800')"),
        ("invalid UTF-8 in a key", "args[:x] has a key that is text that is not valid UTF-8",
         "args['x'] has a key that is text that is not valid UTF-8",
         'c(x: {"\\xfe" => 1})', "c(x={'\\udcff': 1})"),
        ("a binary Symbol key that is not UTF-8", "args has a key that is text that is not",
         "args has a bytes key", 'c({"\\xff".b.to_sym => 1})', "c({b'k': 1})"),
        ("a structure deeper than the host takes", "is nested deeper than 200 levels",
         "is nested deeper than 200 levels", "c(x: deep)", "c(x=deep)"),
        ("one that holds itself", "is nested deeper than 200 levels",
         "is nested deeper than 200 levels", "c(x: itself)", "c(x=itself)"),
        ("an object", "args[:x] is a Object", "args['x'] is a object",
         "c(x: Object.new)", "c(x=object())"),
    ]

    def test_nothing_reaches_the_tool(self):
        d = tempdir(self)
        log = os.path.join(d, "calls.log")
        tools = os.path.join(d, "tools.json")
        with open(tools, "w") as f:
            json.dump({"tools": [{"name": "record", "command": [
                os.path.join(HERE, "tools", "record.py"), log]}]}, f)
        ruby = ('def c(*a, **k); SB.call("record", *a, **k); '
                'rescue Exception => e; [e.class.name, e.message]; end\n'
                "deep = []; cur = deep; 300.times { n = []; cur << n; cur = n }\n"
                "itself = []; itself << itself\n"
                "[" + ", ".join(b[3] for b in self.BAD) + ", SB.call('record', s: :sym, :k => 1)]")
        python = ("def c(*a, **k):\n    try:\n        return sb.call('record', *a, **k)\n"
                  "    except BaseException as e:\n        return [type(e).__name__, str(e)]\n"
                  "deep = cur = []\nfor _ in range(300):\n    cur.append([])\n    cur = cur[0]\n"
                  "itself = []\nitself.append(itself)\n"
                  "[" + ", ".join(b[4] for b in self.BAD) + ", sb.call('record', s='sym', k=1)]")

        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            *errors, last = r.result["value"]
            for (what, rb, py, _, _), (kind, message) in zip(self.BAD, errors):
                self.assertEqual(kind, "TypeError", (what, message))
                self.assertTrue(message.startswith("rpc arguments must be JSON-serializable: "),
                                (what, message))
                self.assertIn(rb if lang == "ruby" else py, message, what)
            # Only the good call reached the tool (a Symbol is text: it goes as a String).
            self.assertEqual(last, {"calls": 1}, r)
            with open(log) as f:
                self.assertEqual([json.loads(line) for line in f], [{"s": "sym", "k": 1}])
            os.unlink(log)
        self.each_language({"ruby": ruby, "python": python}, check, "--tools", tools)


if __name__ == "__main__":
    unittest.main()


# ---- a call whose caller gave up waiting (docs/tools.md) ---------------------------------------

# give_up(name, **args): the call, given up after 0.2 s (its tool takes 5 s: the interruption
# surely comes first); nil/None then, or the call's ToolError message if the host refused it.
GIVE_UP = {
    "ruby": "require 'timeout'\n"
            "def give_up(*a, **k); Timeout.timeout(0.2) { SB.call(*a, **k) }; "
            "rescue Timeout::Error; nil; rescue SB::ToolError => e; e.message; end\n",
    "python": "import signal\n"
              "class GaveUp(Exception): pass\n"
              "def _alarm(*_): raise GaveUp()\n"
              "signal.signal(signal.SIGALRM, _alarm)\n"
              "def give_up(*a, **k):\n"
              "    signal.setitimer(signal.ITIMER_REAL, 0.2)\n"
              "    try:\n        sb.call(*a, **k)\n"
              "    except GaveUp:\n        return None\n"
              "    except sb.ToolError as e:\n        return str(e)\n"
              "    finally:\n        signal.setitimer(signal.ITIMER_REAL, 0)\n",
}
MODES = ("fork", "exec")


class AbandonedCalls(ToolLanguages, unittest.TestCase):
    """A call that comes while an earlier one is in flight, its caller interrupted: the earlier
    call runs to its end, its answer is skipped, the new call is answered. Before, the run ended
    with "a second call while one is in flight"."""

    def each_mode(self, ruby, python, check):
        for mode in MODES:
            with self.subTest(start=mode):
                self.calls(GIVE_UP["ruby"] + ruby, GIVE_UP["python"] + python, check,
                           "--start", mode, "--timeout", "120s")

    def test_the_next_call_is_answered(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], [None, {"got": {"x": 1}}, {"got": {"x": 2}}], r)
        self.each_mode("[give_up('slow'), SB.call('echo', x: 1), SB.call('echo', x: 2)]",
                       "[give_up('slow'), sb.call('echo', x=1), sb.call('echo', x=2)]", check)

    def test_a_handlers_tool_error_escaping_into_the_call(self):
        # The handler's own call is refused (it interrupted a call of its thread): the ToolError
        # leaves the handler and ends the main thread's call, which the host still runs.
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertIn("signal handler", r.result["value"][0], r)
            self.assertEqual(r.result["value"][1], {"got": {"x": 1}}, r)
        self.each_mode(
            "trap('USR1') { SB.call('echo') }\n"
            "Thread.new { sleep 0.2; Process.kill('USR1', Process.pid) }\n"
            "first = begin; SB.call('slow'); rescue SB::ToolError => e; e.message; end\n"
            "[first, SB.call('echo', x: 1)]",
            "signal.signal(signal.SIGALRM, lambda *_: sb.call('echo'))\n"
            "signal.setitimer(signal.ITIMER_REAL, 0.2)\n"
            "try:\n    first = sb.call('slow')\nexcept sb.ToolError as e:\n    first = str(e)\n"
            "[first, sb.call('echo', x=1)]", check)

    def test_giving_up_in_a_loop_runs_the_calls_side_by_side(self):
        # Calls given up on run at once (tool_concurrency 8), none is refused, and the call after
        # them is answered. The bound on calls waiting is FloodOfCalls' to show.
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], [None] * 6 + [{"got": {"x": 1}}], r)
        self.each_mode("6.times.map { give_up('slow') } + [SB.call('echo', x: 1)]",
                       "[give_up('slow') for _ in range(6)] + [sb.call('echo', x=1)]", check)

    def test_given_up_calls_count_against_the_calls_limit(self):
        # The given-up call is the first of the execution's 1000.
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], [
                None, 999, ["ToolError", "too many tool calls: the limit is 1000 per execution"]], r)
        self.each_mode("[give_up('slow'), 999.times.count { c('nope')[0] == 'UnknownTool' }, "
                       "c('nope')]",
                       "[give_up('slow'), sum(c('nope')[0] == 'UnknownTool' for _ in range(999)), "
                       "c('nope')]", check)

    def test_a_session_lives_on(self):
        # Entry 1 gives up on a call and calls again; entry 2 gives up on one and ends once its
        # answer has reached the kernel's socket (which the kernel then reads while it waits for
        # entry 3); entry 3 gives up on calls in a loop (they run side by side: none is refused).
        # The session's state survives them all.
        entries = {
            "ruby": ["x = 41",
                     "[give_up('slow'), SB.call('echo', x: 1)['got']['x']]",
                     "give_up('slow', s: 1); "
                     "IO.select([IO.for_fd(3, autoclose: false)], nil, nil, 60).nil?",
                     "4.times.map { give_up('slow') }.compact.size",
                     "x + 1"],
            "python": ["x = 41",
                       "[give_up('slow'), sb.call('echo', x=1)['got']['x']]",
                       "import select; give_up('slow', s=1); "
                       "select.select([3], [], [], 60)[0] == []",
                       "len([m for m in (give_up('slow') for _ in range(4)) if m])",
                       "x + 1"],
        }
        for lang, lines in entries.items():
            for mode in MODES:
                with self.subTest(lang=lang, start=mode):
                    # The helper's lines as the REPL's entries; a blank line ends its block.
                    stdin = GIVE_UP[lang] + "\n" + "\n".join(lines) + "\n"
                    r = codecell("repl", "--lang", lang, "--tools", TOOLS, "--start", mode,
                                 "--timeout", "120s", stdin=stdin)
                    values = [line for line in r.stdout.splitlines() if line.startswith("=> ")]
                    self.assertEqual(values[-4:], ["=> [null,1]", "=> false", "=> 0", "=> 42"], r)


def at_once_config(directory, **limits):
    """A cell of each language with the test tools and these limits (tool_concurrency, …)."""
    tools = [{"name": name, "command": [os.path.join(HERE, "tools", script)]}
             for name, script in (("slow", "slow.py"), ("echo", "echo.py"),
                                  ("pid_hang", "pid_hang.py"))]
    cells = [{"name": lang, "language": lang, "tools": [t["name"] for t in tools],
              "limits": dict({"timeout_ms": 60000}, **limits)} for lang in ("ruby", "python")]
    path = os.path.join(directory, "cells.json")
    with open(path, "w") as f:
        json.dump({"tools": tools, "cells": cells}, f)
    return path


# Ten calls to a tool that sleeps 300 ms, and the seconds they took, timed in the guest.
TEN_SLOW = {
    "ruby": "t = Process.clock_gettime(Process::CLOCK_MONOTONIC)\n"
            "r = SB.parallel { |p| 10.times { p.call('slow', s: 0.3) } }\n"
            "[r.map { |a| a['slept'] }, Process.clock_gettime(Process::CLOCK_MONOTONIC) - t]",
    "python": "import asyncio, time\nt = time.monotonic()\n"
              "r = await asyncio.gather(*[sb.acall('slow', s=0.3) for _ in range(10)])\n"
              "[[a['slept'] for a in r], time.monotonic() - t]",
}


class CallsAtOnce(unittest.TestCase):
    """Up to tool_concurrency calls run on the host at once (docs/tools.md#calls-at-once)."""

    def run_in(self, config, lang, code, timeout=120):
        r = codecell("run", "--json", "--config", config, "--cell", lang, "-e", code,
                     timeout=timeout)
        self.assertIsNotNone(r.result, r)
        return r

    def test_ten_slow_calls_take_the_time_of_two_at_concurrency_8(self):
        config = at_once_config(tempdir(self), tool_concurrency=8)
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                r = self.run_in(config, lang, TEN_SLOW[lang])
                self.assertEqual(r.status, "ok", r)
                answers, seconds = r.result["value"]
                self.assertEqual(answers, [0.3] * 10, r)
                # Serial, they take 3 s; two rounds of 8 take 0.6 s and the tools' start-up.
                self.assertLess(seconds, 5 * 0.3, r)

    def test_concurrency_1_runs_them_one_after_the_other(self):
        config = at_once_config(tempdir(self), tool_concurrency=1)
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                r = self.run_in(config, lang, TEN_SLOW[lang])
                self.assertEqual(r.status, "ok", r)
                self.assertGreaterEqual(r.result["value"][1], 10 * 0.3, r)

    def test_each_answer_reaches_its_own_caller(self):
        # The later calls sleep less, so the answers come back in the reverse order of the calls.
        config = at_once_config(tempdir(self), tool_concurrency=8)
        code = {
            "ruby": "s = (0...8).map { |i| (8 - i) * 0.05 }\n"
                    "a = SB.parallel { |p| s.each { |x| p.call('slow', s: x) } }\n"
                    "b = SB.parallel { |p| 30.times { |i| p.call('echo', q: i.to_s) } }\n"
                    "[a.map { |x| x['slept'] } == s, b.map { |x| x['got']['q'] } == (0...30).map(&:to_s)]",
            "python": "import asyncio\nfrom concurrent.futures import ThreadPoolExecutor\n"
                      "s = [(8 - i) * 0.05 for i in range(8)]\n"
                      "a = await asyncio.gather(*[sb.acall('slow', s=x) for x in s])\n"
                      "with ThreadPoolExecutor(8) as ex:\n"
                      "    t = list(ex.map(lambda x: sb.call('slow', s=x), s))\n"
                      "async def mixed(i):\n"
                      "    return (await sb.acall('echo', q=str(i)))['got']['q']\n"
                      "b = await asyncio.gather(*[mixed(i) for i in range(30)])\n"
                      "[[x['slept'] for x in a] == s and [x['slept'] for x in t] == s, "
                      "b == [str(i) for i in range(30)]]",
        }
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                r = self.run_in(config, lang, code[lang])
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"], [True, True], r)

    def test_a_failed_call_raises_from_parallel_after_all_finished(self):
        config = at_once_config(tempdir(self), tool_concurrency=8)
        code = {
            "ruby": "fs = []\n"
                    "e = begin\n  SB.parallel { |p| fs << p.call('slow', s: 0.3); "
                    "fs << p.call('nope'); fs << p.call('echo', q: 'x') }\n"
                    "rescue SB::ToolError => x\n  [x.class.name, x.message]\nend\n"
                    "[e, fs[0].value, fs[2].value]",
            "python": "import asyncio\n"
                      "r = await asyncio.gather(sb.acall('slow', s=0.3), sb.acall('nope'), "
                      "sb.acall('echo', q='x'), return_exceptions=True)\n"
                      "[[type(r[1]).__module__ + '.' + type(r[1]).__name__, str(r[1])], r[0], r[2]]",
        }
        expected_class = {"ruby": "SB::UnknownTool", "python": "sb.UnknownTool"}
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                r = self.run_in(config, lang, code[lang])
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"], [[expected_class[lang], 'unknown tool "nope"'],
                                                     {"slept": 0.3}, {"got": {"q": "x"}}], r)

    def test_a_flood_gets_exactly_the_calls_limit_of_answers(self):
        config = at_once_config(tempdir(self), tool_concurrency=8, tool_calls=50)
        code = {
            "ruby": "fs = []\n"
                    "SB.parallel { |p| 200.times { |i| fs << p.call('echo', q: i.to_s) } } "
                    "rescue SB::ToolError\n"
                    "fs.map { |f| begin; f.value['got']['q']; rescue SB::ToolError => e; "
                    "e.message; end }",
            "python": "import asyncio\n"
                      "r = await asyncio.gather(*[sb.acall('echo', q=str(i)) for i in range(200)], "
                      "return_exceptions=True)\n"
                      "[x['got']['q'] if isinstance(x, dict) else str(x) for x in r]",
        }
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                r = self.run_in(config, lang, code[lang])
                self.assertEqual(r.status, "ok", r)
                got = r.result["value"]
                self.assertEqual(len(got), 200, r)
                self.assertEqual(got[:50], [str(i) for i in range(50)], r)
                self.assertEqual(set(got[50:]),
                                 {"too many tool calls: the limit is 50 per execution"}, r)

    def test_many_calls_at_once_whose_answers_outgrow_the_socket(self):
        # SB.parallel and asyncio.gather send every call before reading any answer. Answers
        # the engine gives at once (describe, refusals) then queue up on the guest's socket
        # while it still writes: more than the socket holds must not end the run.
        config = at_once_config(tempdir(self), tool_concurrency=8, tool_calls=900)
        code = {
            "ruby": "d = SB.parallel { |p| 800.times { p.call('$describe', name: 'echo') } }\n"
                    "fs = []\n"
                    "SB.parallel { |p| 3000.times { fs << p.call('no_such_tool') } } "
                    "rescue SB::ToolError\n"
                    "[d.uniq.size, fs.size, fs.count { |f| (f.value rescue $!).is_a?(SB::ToolError) }]",
            "python": "import asyncio\n"
                      "d = await asyncio.gather(*[sb.acall('$describe', name='echo') "
                      "for _ in range(800)])\n"
                      "fs = await asyncio.gather(*[sb.acall('no_such_tool') for _ in range(3000)], "
                      "return_exceptions=True)\n"
                      "[len(set(d)), len(fs), sum(isinstance(f, sb.ToolError) for f in fs)]",
        }
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                r = self.run_in(config, lang, code[lang])
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"], [1, 3000, 3000], r)

    def check_calls_in_flight_are_killed(self, directory, config, code, status):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                files = [os.path.join(directory, "%s-%s-%d" % (status, lang, i)) for i in range(4)]
                started = time.monotonic()
                r = self.run_in(config, lang, code[lang] % json.dumps(files))
                # The tools' own time limit (tool_call_ms, 30 s) is not what ended them.
                self.assertLess(time.monotonic() - started, 15, r)
                self.assertEqual(r.status, status, r)
                # One result: the JSON printed is one object, nothing after it.
                self.assertEqual(r.stdout.count('"status"'), 1, r)
                pids = []
                for f in files:
                    with open(f) as fh:
                        pids += [int(p) for p in fh.read().split()]
                self.assertEqual(len(pids), 8, r)
                for pid in pids:  # the tools and the children left in their process groups
                    self.assertFalse(self.alive_as_tool(pid), "pid %d outlived the run" % pid)

    def test_a_timeout_kills_the_calls_in_flight(self):
        directory = tempdir(self)
        config = at_once_config(directory, tool_concurrency=8, timeout_ms=2000,
                                tool_call_ms=30000)
        self.check_calls_in_flight_are_killed(directory, config, {
            "ruby": "SB.parallel { |p| %s.each { |f| p.call('pid_hang', file: f) } }",
            "python": "import asyncio\n"
                      "await asyncio.gather(*[sb.acall('pid_hang', file=f) for f in %s])",
        }, "timeout")

    def test_the_end_of_the_code_kills_the_calls_in_flight(self):
        # Well before the deadline: the calls are stopped because the run is over, not because
        # their time ran out (a child the tool left in its group would outlive the tool).
        directory = tempdir(self)
        config = at_once_config(directory, tool_concurrency=8, timeout_ms=60000,
                                tool_call_ms=30000)
        self.check_calls_in_flight_are_killed(directory, config, {
            "ruby": "Thread.new { SB.parallel { |p| %s.each { |f| p.call('pid_hang', file: f) } } }\n"
                    "sleep 1.5\n'left'",
            "python": "import asyncio\n"
                      "tasks = [asyncio.create_task(sb.acall('pid_hang', file=f)) for f in %s]\n"
                      "await asyncio.sleep(1.5)\n'left'",
        }, "ok")

    @staticmethod
    def alive_as_tool(pid):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                return b"pid_hang.py" in f.read()
        except OSError:
            return False

    def test_a_guest_that_never_reads_its_answers_cannot_hang_the_engine(self):
        # Thousands of calls written by hand, no answer read: 8 run, 1024 wait, the rest are
        # refused, and those answers fill the guest's socket; the engine gives up on the
        # channel instead of waiting or holding them all.
        config = at_once_config(tempdir(self), tool_concurrency=8, timeout_ms=60000)
        code = {
            "ruby": 'require "json"; io = IO.for_fd(3, autoclose: false)\n'
                    "5000.times { |i| body = JSON.generate({t: 'call', id: i + 2, name: 'slow', "
                    "args: {s: 30, pad: 'x' * 200}}); io.write([body.bytesize].pack('N') + body) }\n"
                    "sleep 60",
            "python": "import json, os, struct, time\n"
                      "for i in range(5000):\n"
                      "    body = json.dumps({'t': 'call', 'id': i + 2, 'name': 'slow', "
                      "'args': {'s': 30, 'pad': 'x' * 200}}).encode()\n"
                      "    os.write(3, struct.pack('>I', len(body)) + body)\n"
                      "time.sleep(60)",
        }
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                started = time.monotonic()
                r = self.run_in(config, lang, code[lang], timeout=90)
                self.assertEqual(r.status, "sandbox_error", r)
                self.assertLess(time.monotonic() - started, 30, r)
