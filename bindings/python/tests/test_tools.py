import datetime
import threading
import time
import unittest
from typing import List, Optional

import codecell


class ToolsTest(unittest.TestCase):
    def setUp(self):
        self.cell = codecell.Cell("python", pool=2, limits={"tool_call_ms": 1500})

        def weather(city, days=1):
            return {"city": city, "days": days, "sky": "clear"}

        def boom():
            raise KeyError("no such key")

        def slow(seconds):
            time.sleep(seconds)
            return "done"

        self.cell.tool("weather.today", weather, description="The weather in a city",
                       input_schema={"type": "object", "properties": {"city": {"type": "string"}},
                                     "required": ["city"]})
        self.cell.tool("boom", boom)
        # A schema that admits anything: the callable's own keyword check speaks.
        self.cell.tool("slow", slow, input_schema={"type": "object"})

        @self.cell.tool("shout")
        def shout(text):
            return text.upper()
        self.shout = shout

    def tearDown(self):
        self.cell.close()

    def test_keyword_arguments_and_the_value_back(self):
        self.assertEqual(self.cell.run("sb.call('weather.today', city='Oslo')").value,
                         {"city": "Oslo", "days": 1, "sky": "clear"})
        self.assertEqual(self.cell.run("sb.call('shout', text='hi')").value, "HI")
        self.assertEqual(self.shout("x"), "X")  # the decorator gives the function back

    def test_ruby_guest_calls_a_python_callable(self):
        with codecell.Cell("ruby", pool=0, tools={"add": lambda a, b: a + b}) as cell:
            self.assertEqual(cell.run("SB.call('add', a: 2, b: 3)").value, 5)

    def test_an_exception_is_a_tool_error_in_the_guest(self):
        r = self.cell.run("try:\n  sb.call('boom')\nexcept sb.ToolError as e:\n"
                          "  out = [type(e).__name__, str(e)]\nout")
        self.assertEqual(r.value[0], "ToolError")
        self.assertIn("KeyError", r.value[1])
        # Arguments its input_schema refuses never reach the callable: the engine says which.
        r = self.cell.run("try:\n  sb.call('weather.today', town='x')\nexcept sb.ToolError as e:\n"
                          "  out = str(e)\nout")
        self.assertIn('arguments: the required "city" is missing', r.value)
        # The schema read from a signature refuses what the callable cannot take.
        r = self.cell.run("try:\n  sb.call('boom', key=1)\nexcept sb.ToolError as e:\n"
                          "  out = str(e)\nout")
        self.assertIn('arguments: unknown key "key"', r.value)
        # Arguments a given schema admits but the callable cannot take: RubyLLM's words, and
        # the callable is not called.
        r = self.cell.run("try:\n  sb.call('slow')\nexcept sb.ToolError as e:\n"
                          "  out = str(e)\nout")
        self.assertEqual(r.value, "Invalid tool arguments: missing keyword: seconds")
        r = self.cell.run("try:\n  sb.call('slow', seconds=0, key=1)\nexcept sb.ToolError as e:\n"
                          "  out = str(e)\nout")
        self.assertEqual(r.value, "Invalid tool arguments: unknown keyword: key")
        # A TypeError raised inside the callable stays the callable's.
        r = self.cell.run("try:\n  sb.call('slow', seconds='x')\nexcept sb.ToolError as e:\n"
                          "  out = str(e)\nout")
        self.assertTrue(r.value.startswith("TypeError: "), r.value)

    def test_answers_json_cannot_hold_come_back_as_their_repr(self):
        class Point:
            def __repr__(self):
                return "Point(1, 2)"

        loop = [1]
        loop.append(loop)
        answer = {"when": datetime.date(2026, 12, 2), "tags": {"a"}, "nan": float("nan"),
                  "inf": [float("-inf")], (1, 2): "a tuple key", 3: "an int key",
                  "point": Point(), "loop": loop, "bytes": b"\x00", "ok": [1, 2.5, None, True]}
        self.cell.tool("odd", lambda: answer)
        self.assertEqual(self.cell.run("sb.call('odd')").value, {
            "when": "datetime.date(2026, 12, 2)", "tags": "{'a'}", "nan": "nan",
            "inf": ["-inf"], "(1, 2)": "a tuple key", "3": "an int key", "point": "Point(1, 2)",
            "loop": [1, "[1, [...]]"], "bytes": "b'\\x00'", "ok": [1, 2.5, None, True]})
        self.cell.tool("plain_repr", lambda: Point())
        self.assertEqual(self.cell.run("sb.call('plain_repr')").value, "Point(1, 2)")
        # Deeper than the guest would take: a clear error, never a crash of the handler.
        deep = []
        for _ in range(300):
            deep = [deep]
        self.cell.tool("deep", lambda: deep)
        r = self.cell.run("try:\n  sb.call('deep')\nexcept sb.ToolError as e:\n"
                          "  out = str(e)\nout")
        self.assertIn("nested deeper than 200 levels", r.value)

    def test_a_slow_callable_is_answered_at_the_limit(self):
        self.assertEqual(self.cell.run("sb.call('slow', seconds=0.2)").value, "done")
        r = self.cell.run("try:\n  sb.call('slow', seconds=5)\nexcept sb.ToolError as e:\n"
                          "  out = str(e)\nout")
        self.assertIn("did not answer within 1500 ms", r.value)

    def test_calls_from_several_threads_at_once(self):
        values = [None] * 6

        def one(i):
            values[i] = self.cell.run(
                "sb.call('slow', seconds=0.3) + sb.call('weather.today', city='c%d')['city']"
                % i).value
        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(values, ["donec%d" % i for i in range(6)])

    def test_a_tool_without_a_schema_is_described_from_its_code(self):
        def shout(text: str, times: int = 1, tags: List[str] = (), loud: Optional[bool] = None):
            """Shouts the text, times over."""
            return (text.upper() if loud is not False else text) * times + "".join(tags)

        class Lookup:
            """Finds a word."""

            def __call__(self, word, exact: bool = False):
                return [word, exact]

        for lang, shout_call, lookup_call in (
                ("python", 'sb.call("shout", text=str, times=int?, tags=list?, loud=bool | None?)',
                 'sb.call("lookup", word=any JSON, exact=bool?)'),
                ("ruby", 'SB.call("shout", text: String, times: Integer?, tags: Array?, '
                         'loud: true | false | nil?)',
                 'SB.call("lookup", word: any JSON, exact: true | false?)')):
            with codecell.Cell(lang, pool=0) as cell:
                cell.tool("shout", shout)
                cell.tool("lookup", Lookup())
                cell.tool("given", shout, description="Says it loud",
                          input_schema={"type": "object", "properties": {"text": {}}})
                d = cell.description
                self.assertIn("### shout\n\nShouts the text, times over.\n\n    %s\n"
                              % shout_call, d)
                self.assertIn("### lookup\n\nFinds a word.\n\n    %s\n" % lookup_call, d)
                # An explicit schema and description still win.
                self.assertIn("### given\n\nSays it loud\n\n    %s\n"
                              % ('sb.call("given", text=any JSON?)' if lang == "python"
                                 else 'SB.call("given", text: any JSON?)'), d)
        with codecell.Cell("python", pool=0) as cell:
            cell.tool("shout", shout)
            self.assertEqual(cell.run("sb.call('shout', text='hi', times=2, tags=['!'])").value,
                             "HIHI!")
            r = cell.run("try:\n  sb.call('shout', text='hi', times='2')\n"
                         "except sb.ToolError as e:\n  out = str(e)\nout")
            self.assertIn('arguments: times: must be an integer', r.value)  # before the call
            cell.tool("untyped", lambda when: when)  # no hints: any JSON
            self.assertEqual(cell.run("sb.call('untyped', when=[1])").value, [1])
            # A hint JSON cannot carry is refused when the tool is added, as codecell.Tool's.
            with self.assertRaisesRegex(TypeError, "tool dated: parameter when"):
                cell.tool("dated", _dated)

    def test_the_description_lists_the_tools(self):
        self.assertIn("## Tools", self.cell.description)
        self.assertIn("The weather in a city", self.cell.description)
        self.assertEqual(self.cell.info()["tools"], 4)

    def test_bad_tools_are_refused(self):
        with self.assertRaises(ValueError):
            self.cell.tool("boom", lambda: 1)
        with self.assertRaises(ValueError):
            self.cell.tool("9lives", lambda: 1)
        with self.assertRaises(TypeError):
            self.cell.tool("nothing", 42)


def _dated(when: datetime.date):
    return when


if __name__ == "__main__":
    unittest.main()
