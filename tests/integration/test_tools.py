"""Host tools end to end: SB.call from guest code to command tools, through the real binary."""
import json
import os
import unittest

from harness import codecell, run_json, tempdir

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "tools", "tools.json")


def call(code, *flags):
    return run_json(code, "--tools", TOOLS, *flags)


def setUpModule():
    os.environ["CODECELL_TOOL_SECRET"] = "named-so-passed"
    os.environ["CODECELL_ENGINE_SECRET"] = "never-passed"


class Calls(unittest.TestCase):
    def test_kwargs_and_hash_forms(self):
        r = call('[SB.call("echo", q: "x", n: 1), SB.call("echo", {"q" => "y", "list" => [1, 2]}),'
                 ' SB.call("echo", {"a" => 1}, b: 2)]')
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.result["value"], [{"got": {"q": "x", "n": 1}},
                                             {"got": {"q": "y", "list": [1, 2]}},
                                             {"got": {"a": 1, "b": 2}}])

    def test_nested_data_and_unicode_round_trip(self):
        r = call('SB.call("echo", deep: {"a" => [{"b" => nil, "c" => true}, 2.5]}, '
                 'text: "héllo ✓ 🎉 \\u0000 \\"q\\"")')
        self.assertEqual(r.result["value"]["got"],
                         {"deep": {"a": [{"b": None, "c": True}, 2.5]},
                          "text": 'héllo ✓ 🎉 \u0000 "q"'}, r)

    def test_result_is_plain_ruby_data(self):
        r = call('v = SB.call("echo", q: "x"); [v.class.name, v["got"].class.name, v.keys]')
        self.assertEqual(r.result["value"], ["Hash", "Hash", ["got"]])

    def test_unknown_tool(self):
        r = call('begin; SB.call("nope"); rescue SB::UnknownTool => e; [e.class.name, e.message, '
                 'e.is_a?(SB::ToolError)]; end')
        self.assertEqual(r.result["value"], ["SB::UnknownTool", 'unknown tool "nope"', True], r)

    def test_failing_tool_carries_its_stderr(self):
        r = call('begin; SB.call("fail"); rescue SB::ToolError => e; e.message; end')
        self.assertEqual(r.result["value"],
                         'tool "fail" failed (exit code 3): the upstream API said no: quota exceeded')

    def test_unrescued_tool_error_is_a_guest_error(self):
        r = call('SB.call("fail")')
        self.assertEqual(r.status, "error", r)
        self.assertEqual(r.result["error"]["class"], "SB::ToolError")

    def test_call_from_inside_rescue(self):
        r = call('begin; raise "first"; rescue => e; SB.call("echo", q: e.message); end')
        self.assertEqual(r.result["value"], {"got": {"q": "first"}}, r)

    def test_invalid_json_from_a_tool(self):
        r = call('begin; SB.call("badjson"); rescue SB::ToolError => e; e.message; end')
        self.assertIn('tool "badjson" returned invalid JSON', r.result["value"], r)

    def test_many_calls_in_a_loop(self):
        r = call('(1..200).sum { |i| SB.call("echo", n: i)["got"]["n"] }')
        self.assertEqual(r.result["value"], 200 * 201 // 2, r)

    def test_non_json_arguments_are_a_type_error(self):
        for args in ("x: Object.new", "x: [1, 0.0/0]", "x: {1 => 2}", "x: Time.now"):
            with self.subTest(args=args):
                r = call(f'begin; SB.call("echo", {args}); rescue TypeError => e; e.message; end')
                self.assertIn("tool arguments must be JSON", r.result["value"], r)
        r = call('begin; SB.call("echo", [1]); rescue TypeError => e; e.message; end')
        self.assertIn("must be a Hash", r.result["value"])

    def test_tool_environment_is_clean(self):
        r = call('SB.call("secret_env", show_env: true)')
        env = r.result["value"]
        self.assertEqual(env.get("CODECELL_TOOL_SECRET"), "named-so-passed")
        self.assertNotIn("CODECELL_ENGINE_SECRET", env)
        self.assertNotIn("HOME", env)
        r = call('SB.call("echo", show_env: true)')
        self.assertNotIn("CODECELL_TOOL_SECRET", r.result["value"])


class Limits(unittest.TestCase):
    def test_request_at_and_over_the_limit(self):
        # The arguments {"measure":true,"q":"…"} are 23 bytes plus the string.
        limit = 1024 * 1024
        r = call(f'SB.call("echo", measure: true, q: "a" * {limit - 23})["len"]')
        self.assertEqual(r.result["value"], limit - 23, r)
        r = call(f'begin; SB.call("echo", measure: true, q: "a" * {limit - 22}); '
                 'rescue SB::ToolError => e; e.message; end')
        self.assertIn("over the 1048576-byte limit", r.result["value"], r)

    def test_answer_over_the_limit(self):
        r = call('SB.call("echo", repeat: 1024 * 1024 - 2).size')
        self.assertEqual(r.result["value"], 1024 * 1024 - 2, r)  # with its quotes: the limit
        r = call('begin; SB.call("echo", repeat: 1024 * 1024); rescue SB::ToolError => e; '
                 'e.message; end')
        self.assertIn("more than the 1048576-byte limit", r.result["value"], r)

    def test_time_per_call(self):
        r = call('begin; SB.call("hang"); rescue SB::ToolError => e; e.message; end')
        self.assertEqual(r.result["value"], 'tool "hang" did not answer within 300 ms', r)

    def test_hanging_tool_under_the_wall_clock(self):
        r = call('SB.call("hang_long")', "--timeout", "1s")
        self.assertEqual(r.status, "timeout", r)

    def test_calls_per_execution(self):
        r = call('n = 0; begin; loop { begin; SB.call("nope"); rescue SB::UnknownTool; end; '
                 'n += 1 }; rescue SB::ToolError => e; [n, e.message]; end')
        self.assertEqual(r.result["value"], [1000, "too many tool calls: the limit is 1000 per "
                                                   "execution"], r)


class Forgery(unittest.TestCase):
    FRAME = ('io = IO.for_fd(3, autoclose: false); body = %s; '
             'io.write([body.bytesize].pack("N") + body); io.flush; ')

    def test_hand_written_call_frame_is_a_call(self):
        r = call(self.FRAME % 'JSON.generate({t: "call", id: 99, name: "echo", args: {q: "forged"}})'
                 + 'n = io.read(4).unpack1("N"); JSON.parse(io.read(n))')
        self.assertEqual(r.result["value"],
                         {"t": "reply", "id": 99, "ok": True, "result": {"got": {"q": "forged"}}}, r)

    def test_malformed_call_frame_ends_the_run(self):
        for body in ('JSON.generate({t: "call", id: "x", name: "echo", args: {}})',
                     'JSON.generate({t: "call", id: 1, name: "echo", args: [1]})',
                     'JSON.generate({t: "call", id: 1, name: "echo", args: {}, extra: 1})',
                     'JSON.generate({t: "reply", id: 1})'):
            with self.subTest(body=body):
                r = call(self.FRAME % body + "sleep 5")
                self.assertEqual(r.status, "sandbox_error", r)
                self.assertIn("protocol", r.result["error"])


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
            ({"tools": [{"name": "a", "command": ["/bin/true"], "input_schema": {"properties": {"x": {}}, "required": ["y"]}}]}, "\"required\" names a property"),
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


class PythonCalls(unittest.TestCase):
    """The same calls from Python's sb module."""

    def py(self, code):
        return run_json(code, "--tools", TOOLS, lang="python")

    def test_keyword_and_dict_forms_and_plain_data(self):
        r = self.py("[sb.call('echo', q='x', n=1), sb.call('echo', {'q': 'y', 'l': [1, 2]}), "
                    "sb.call('echo', {'a': 1}, b=2)]")
        self.assertEqual(r.result["value"], [{"got": {"q": "x", "n": 1}},
                                             {"got": {"q": "y", "l": [1, 2]}},
                                             {"got": {"a": 1, "b": 2}}], r)

    def test_errors(self):
        r = self.py("out = []\n"
                    "for name in ('fail', 'nope', 'badjson'):\n"
                    "    try:\n        sb.call(name)\n"
                    "    except sb.ToolError as e:\n        out.append([type(e).__name__, str(e)])\n"
                    "out")
        self.assertEqual(r.result["value"][0], ["ToolError", 'tool "fail" failed (exit code 3): '
                                                             "the upstream API said no: quota exceeded"])
        self.assertEqual(r.result["value"][1], ["UnknownTool", 'unknown tool "nope"'])
        self.assertIn("returned invalid JSON", r.result["value"][2][1])
        r = self.py("sb.call('fail')")
        self.assertEqual(r.result["error"]["class"], "sb.ToolError", r)

    def test_non_json_arguments_are_a_type_error(self):
        for args in ("x=object()", "x=float('nan')", "x={1: 2}", "x={1, 2}"):
            with self.subTest(args=args):
                r = self.py(f"try:\n    sb.call('echo', {args})\nexcept TypeError as e:\n    m = str(e)\nm")
                self.assertIn("tool arguments must be JSON", r.result["value"], r)

    def test_many_calls_and_limits(self):
        r = self.py("sum(sb.call('echo', n=i)['got']['n'] for i in range(1, 201))")
        self.assertEqual(r.result["value"], 200 * 201 // 2, r)
        r = self.py("try:\n    sb.call('hang')\nexcept sb.ToolError as e:\n    m = str(e)\nm")
        self.assertEqual(r.result["value"], 'tool "hang" did not answer within 300 ms', r)
        r = run_json("sb.call('hang_long')", "--tools", TOOLS, "--timeout", "1s", lang="python")
        self.assertEqual(r.status, "timeout", r)

    def test_import_sb(self):
        r = self.py("import sb as tools\ntools.call('echo', q='i')")
        self.assertEqual(r.result["value"], {"got": {"q": "i"}}, r)


class Description(unittest.TestCase):
    def test_tools_section_matches_the_expected_text(self):
        examples = os.environ.get("CODECELL_EXAMPLES") or os.path.join(HERE, "..", "..", "examples")
        r = codecell("describe", "--mount", os.path.join(examples, "data") + ":/data",
                     "--tools", os.path.join(examples, "tools.json"))
        self.assertEqual(r.code, 0, r)
        with open(os.path.join(HERE, "expected_description.txt")) as f:
            self.assertEqual(r.stdout, f.read())

    def test_python_description_speaks_python(self):
        examples = os.environ.get("CODECELL_EXAMPLES") or os.path.join(HERE, "..", "..", "examples")
        r = codecell("describe", "--lang", "python", "--tools", os.path.join(examples, "tools.json"))
        self.assertEqual(r.code, 0, r)
        self.assertIn("Pass a complete, self-contained Python script", r.stdout)
        self.assertIn('    sb.call("weather.today", city=str, days=int?)\n', r.stdout)
        self.assertIn("- `city` (str, required) — the city name", r.stdout)
        self.assertNotIn("Ruby", r.stdout)


if __name__ == "__main__":
    unittest.main()
