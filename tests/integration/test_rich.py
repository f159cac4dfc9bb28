"""Rich values (issue 30): what the last value says it looks like (Python's _repr_markdown_ and
the others, Ruby's to_markdown and the others) comes back beside its plain value, checked by the
host and cut within the model's budget; over MCP as text, an embedded HTML resource and images.
tests/mcp/rich.test.mjs has the same through the official SDK clients."""
import base64
import json
import unittest

from harness import EachLanguage, run_json, tempdir
from mcp_peer import INIT, Http, Stdio, sse_messages, write_config
from test_pictures import png_size

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>'
# A 1×1 PNG, every chunk's CRC right.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
                       "awAAAABJRU5ErkJggg==")
PNG_B64 = base64.b64encode(PNG).decode()

# One object of each language with every rich form.
RICH = {
    "python": "import base64\n"
              "class Rich:\n"
              "    def _repr_markdown_(self): return '# Sales\\n\\n| région | € |\\n|---|---|\\n| Nord | 3 |'\n"
              "    def _repr_html_(self): return ('<table><tr><td>Nord</td></tr></table>', {'isolated': True})\n"
              "    def _repr_svg_(self): return %r\n"
              "    def _repr_png_(self): return base64.b64decode(%r)\n"
              "    def _repr_json_(self): return {'rows': [1, 2]}\n"
              "    def __repr__(self): return 'Rich()'\n"
              "Rich()" % (SVG, PNG_B64),
    "ruby": "class Rich\n"
            "  def to_markdown = \"# Sales\\n\\n| région | € |\\n|---|---|\\n| Nord | 3 |\"\n"
            "  def to_html = '<table><tr><td>Nord</td></tr></table>'\n"
            "  def to_svg = %s\n"
            "  def to_png = %s.unpack1('m')\n"
            "  def inspect = 'Rich()'\n"
            "end\n"
            "Rich.new" % (json.dumps(SVG), json.dumps(PNG_B64)),
}
MARKDOWN = "# Sales\n\n| région | € |\n|---|---|\n| Nord | 3 |"
HTML = "<table><tr><td>Nord</td></tr></table>"

# Methods that raise, loop, or return what is not their kind: the run goes on, a note says why.
HOSTILE = {
    "python": "class Bad:\n"
              "    def _repr_markdown_(self): raise RuntimeError('no table today')\n"
              "    def _repr_html_(self): return 42\n"
              "    def _repr_svg_(self): return '<html>not svg</html>'\n"
              "    def _repr_png_(self): return b'GIF89a not a png'\n"
              "Bad()",
    "ruby": "class Bad\n"
            "  def to_markdown = raise('no table today')\n"
            "  def to_html = 42\n"
            "  def to_svg = '<html>not svg</html>'\n"
            "  def to_png = 'GIF89a not a png'\n"
            "end\n"
            "Bad.new",
}
LOOPING = {
    "python": "class Slow:\n"
              "    def _repr_markdown_(self):\n"
              "        while True:\n"
              "            try:\n                pass\n"
              "            except Exception:\n                pass\n"
              "Slow()",
    "ruby": "class Slow\n  def to_markdown\n    loop { begin; rescue; end }\n  end\nend\nSlow.new",
}
# 29700 three-byte characters, 300 four-byte ones and 300 newlines: over the 20000-character budget.
HUGE = {
    "python": "class Huge:\n"
              "    def _repr_markdown_(self): return ('€' * 99 + '😀\\n') * 300\n"
              "Huge()",
    "ruby": "class Huge\n  def to_markdown = ('€' * 99 + \"😀\\n\") * 300\nend\nHuge.new",
}


def display_of(r):
    return {k: v for k, v in r.result.items() if k.startswith("display")}


class RunRich(unittest.TestCase, EachLanguage):
    def test_each_rich_form_comes_back_beside_the_value(self):
        def check(r, lang):
            self.assertEqual(r.result["status"], "ok", r)
            self.assertEqual(r.result["value"], "Rich()")
            d = r.result["display"]
            self.assertEqual(d["markdown"], MARKDOWN)
            self.assertEqual(d["html"], HTML)
            self.assertEqual(d["svg"], {"bytes": len(SVG)})
            self.assertEqual(d["png"], {"bytes": len(PNG)})
            if lang == "python":
                self.assertEqual(d["json"], {"rows": [1, 2]})
            self.assertNotIn("display_notes", r.result)
        self.each_language(RICH, check)

    def test_plain_values_have_no_display(self):
        self.each_language({"python": "[1, 'a']", "ruby": "[1, 'a']"},
                           lambda r, lang: self.assertEqual(display_of(r), {}, r))

    def test_a_method_that_fails_is_left_out_with_a_note(self):
        def check(r, lang):
            self.assertEqual(r.result["status"], "ok", r)
            self.assertNotIn("display", r.result)
            notes = r.result["display_notes"]
            self.assertEqual(len(notes), 4, notes)
            self.assertRegex(notes[0], r"^markdown: .*failed: RuntimeError: no table today$")
            self.assertRegex(notes[1], r"^html: .*not a (str|String)")
            # The host checks the bytes whatever the guest called them.
            self.assertRegex(notes[2], r"^svg: not SVG text")
            self.assertRegex(notes[3], r"^png: its bytes are not a PNG")
        self.each_language(HOSTILE, check)

    def test_a_method_that_loops_is_stopped_and_the_run_goes_on(self):
        def check(r, lang):
            self.assertEqual(r.result["status"], "ok", r)
            self.assertRegex(r.result["display_notes"][0], r"^markdown: .* ran over 2 s$")
            self.assertLess(r.result["duration_ms"], 4000)
        self.each_language(LOOPING, check)

    def test_a_huge_one_is_cut_on_a_character_boundary(self):
        def check(r, lang):
            self.assertEqual(r.result["status"], "ok", r)
            text = r.result["display"]["markdown"]
            self.assertEqual(len(text), 20000)  # the cell's model_chars, in characters
            self.assertEqual(text, (("€" * 99 + "😀\n") * 300)[:20000])
            self.assertEqual(r.result["display_notes"],
                             ["markdown: cut at 20000 of 30300 characters"])
        self.each_language(HUGE, check)

    def test_a_dataframe_is_a_markdown_table_with_head_tail_and_shape(self):
        r = run_json("import pandas as pd\n"
                     "pd.DataFrame({'n': range(1000), 'sq': [i * i for i in range(1000)],"
                     " 'a|b': ['x'] * 1000})", lang="python")
        self.assertEqual(r.result["status"], "ok", r)
        md = r.result["display"]["markdown"].split("\n")
        self.assertEqual(md[0], "|  | n | sq | a\\|b |")
        self.assertEqual(md[1], "|---|---|---|---|")
        self.assertEqual(md[2], "| 0 | 0 | 0 | x |")
        self.assertEqual(md[6], "| 4 | 4 | 16 | x |")
        self.assertEqual(md[7], "| … | … | … | … |")
        self.assertEqual(md[12], "| 999 | 999 | 998001 | x |")
        self.assertEqual(md[-1], "1000 rows × 3 columns")
        self.assertIn("<table", r.result["display"]["html"])  # pandas' own _repr_html_


class McpRich(unittest.TestCase):
    """The answer's content: markdown as text, HTML as a resource, SVG and PNG as images."""

    CELLS = [{"name": "py", "language": "python", "pool": 1,
              "limits": {"model_chars": 4000}},
             {"name": "rb", "language": "ruby", "pool": 1, "limits": {"model_chars": 4000}}]

    def check_rich(self, r):
        self.assertIs(r["isError"], False, r)
        content = r["content"]
        lean = json.loads(content[0]["text"])
        self.assertEqual(lean["value"], "Rich()")
        # The text forms are content of their own, not repeated in the JSON.
        self.assertEqual(lean["display"]["markdown"], {"chars": len(MARKDOWN)})
        self.assertEqual(lean["display"]["html"], {"chars": len(HTML)})
        self.assertEqual(content[1], {"type": "text", "text": MARKDOWN})
        self.assertEqual(content[2], {"type": "resource", "resource": {
            "uri": "codecell://result/display.html", "mimeType": "text/html", "text": HTML}})
        self.assertEqual(content[3]["type"], "image")
        self.assertEqual(content[3]["mimeType"], "image/svg+xml")
        self.assertEqual(base64.b64decode(content[3]["data"], validate=True).decode(), SVG)
        self.assertEqual(content[4]["mimeType"], "image/png")
        self.assertEqual(png_size(base64.b64decode(content[4]["data"], validate=True)), (1, 1))
        self.assertEqual(len(content), 5)
        self.assertEqual(r["structuredContent"]["display"], lean["display"])

    def check_huge(self, r):
        content = r["content"]
        lean = json.loads(content[0]["text"])
        self.assertIs(lean["display_truncated"], True)
        markdown = content[1]["text"]
        # Both texts within the cell's 4000 characters, the cut on character boundaries
        # (json.loads above and the text's own decoding would fail otherwise).
        self.assertLessEqual(len(content[0]["text"]) + len(markdown), 4000)
        self.assertGreater(len(markdown), 2000)
        self.assertEqual(lean["display"]["markdown"], {"chars": len(markdown)})
        self.assertTrue(markdown.startswith("€" * 99 + "😀\n"), markdown[:120])
        # The tail of what the prelude sent: its first model_chars characters.
        self.assertTrue(markdown.endswith((("€" * 99 + "😀\n") * 300)[:4000][-50:]),
                        markdown[-120:])
        self.assertIn("omitted", markdown)

    def call(self, i, name, code):
        return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": name, "arguments": {"code": code}}}

    def test_over_stdio(self):
        peer = Stdio(write_config(tempdir(self), self.CELLS))
        self.addCleanup(lambda: peer.proc.poll() is not None or peer.close())
        peer.request(INIT)
        for i, (cell, lang) in enumerate((("py", "python"), ("rb", "ruby"))):
            with self.subTest(lang=lang):
                self.check_rich(peer.request(self.call(10 + i, cell, RICH[lang]))["result"])
                self.check_huge(peer.request(self.call(20 + i, cell, HUGE[lang]))["result"])
                r = peer.request(self.call(30 + i, cell, HOSTILE[lang]))["result"]
                self.assertIs(r["isError"], False, r)
                self.assertEqual(len(r["content"]), 1, r)
                self.assertEqual(len(json.loads(r["content"][0]["text"])["display_notes"]), 4)

    def test_the_result_frame_stays_within_frame_bytes(self):
        """Rich forms that would push the result frame over the engine's limit are left out
        (a note says so): the run stays "ok" instead of breaking the protocol."""
        limits = {"frame_bytes": 200000, "model_chars": 200000}
        cells = [dict(c, limits=limits) for c in self.CELLS]
        peer = Stdio(write_config(tempdir(self), cells))
        self.addCleanup(lambda: peer.proc.poll() is not None or peer.close())
        peer.request(INIT)
        code = {"python": "class Big:\n    def _repr_markdown_(self): return '€' * 100000\n"
                          "    def _repr_html_(self): return '<p>small</p>'\nBig()",
                "ruby": "class Big\n  def to_markdown = '€' * 100000\n"
                        "  def to_html = '<p>small</p>'\nend\nBig.new"}
        for i, (cell, lang) in enumerate((("py", "python"), ("rb", "ruby"))):
            with self.subTest(lang=lang):
                r = peer.request(self.call(40 + i, cell, code[lang]))["result"]
                lean = json.loads(r["content"][0]["text"])
                self.assertEqual(lean["status"], "ok", lean)
                self.assertEqual(lean["display_notes"],
                                 ["markdown: left out: the result would be over frame_bytes"])
                self.assertEqual(lean["display"], {"html": {"chars": 12}})

    def test_a_session_goes_on_after_a_looping_method(self):
        """The display's deadline leaves nothing behind in a session: no stray alarm or raise
        reaches the next eval's code, and (Python) the guest's own alarm still fires."""
        peer = Stdio(write_config(tempdir(self), self.CELLS))
        self.addCleanup(lambda: peer.proc.poll() is not None or peer.close())
        peer.request(INIT)
        first = {"python": "import signal, time\nfired = []\n"
                           "signal.signal(signal.SIGALRM, lambda *a: fired.append(1))\n"
                           "signal.setitimer(signal.ITIMER_REAL, 2.5)\n" + LOOPING["python"],
                 "ruby": LOOPING["ruby"]}
        second = {"python": "time.sleep(1.5)\nfired", "ruby": "sleep 2.5\n'after'"}
        for i, (cell, lang) in enumerate((("py", "python"), ("rb", "ruby"))):
            with self.subTest(lang=lang):
                args = {"code": first[lang], "session": "s"}
                r = peer.request({"jsonrpc": "2.0", "id": 50 + i, "method": "tools/call",
                                  "params": {"name": cell, "arguments": args}})["result"]
                lean = json.loads(r["content"][0]["text"])
                self.assertEqual(lean["status"], "ok", lean)
                self.assertRegex(lean["display_notes"][0], r"ran over 2 s$")
                args = {"code": second[lang], "session": "s"}
                r = peer.request({"jsonrpc": "2.0", "id": 60 + i, "method": "tools/call",
                                  "params": {"name": cell, "arguments": args}})["result"]
                lean = json.loads(r["content"][0]["text"])
                self.assertEqual(lean["status"], "ok", lean)
                self.assertEqual(lean["value"], [1] if lang == "python" else "after")

    def test_over_http(self):
        server = Http(write_config(tempdir(self), self.CELLS))
        self.addCleanup(lambda: server.proc.poll() is not None or server.stop())
        session = server.initialize()
        headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        server.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
        for i, (cell, lang) in enumerate((("py", "python"), ("rb", "ruby"))):
            with self.subTest(lang=lang):
                for j, (code, check) in enumerate(((RICH[lang], self.check_rich),
                                                   (HUGE[lang], self.check_huge))):
                    status, h, text = server.post(self.call(10 * j + i, cell, code), headers)
                    self.assertEqual(status, 200, text)
                    body = (sse_messages(text)[-1] if "event-stream" in h["content-type"]
                            else json.loads(text))
                    check(body["result"])


if __name__ == "__main__":
    unittest.main()
