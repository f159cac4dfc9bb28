"""Answers are what was sent: output cut on characters, NUL bytes kept, names whole, big
integers exact, one nesting limit, tool calls from signal handlers, a guest's default signal
mask. Each case in both languages and both start modes (exec'd and forked)."""
import json
import os
import unittest

from harness import LANGUAGES, codecell, run_json, tempdir

STARTS = ("exec", "fork")
EURO = "\u20ac"


class EachMode:
    """Mixin: one case in every language and start mode."""

    def each_mode(self, code, check, *flags):
        for lang in LANGUAGES:
            for start in STARTS:
                with self.subTest(lang=lang, start=start):
                    r = run_json(code[lang], "--start", start, *flags, lang=lang)
                    self.assertIsNotNone(r.result, r)
                    check(r, lang)


class CutOnCharacters(EachMode, unittest.TestCase):
    def test_a_long_line_of_euros_is_cut_between_characters(self):
        # 1,001 bytes of cap: its first half (500 bytes) ends inside the 167th euro.
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertTrue(r.result["stdout_truncated"], r)
            out = r.result["stdout"]
            self.assertNotIn("\ufffd", out)
            head, marker, tail = out.partition("\n[… ")
            self.assertTrue(marker, out)
            self.assertEqual(head, EURO * 166)
            self.assertEqual(set(tail.partition(" omitted …]\n")[2]), {EURO})
        self.each_mode({"ruby": '$stdout.write("\u20ac" * 5000); 1',
                        "python": "import sys\nsys.stdout.write('\u20ac' * 5000)\n1"},
                       check, "--max-output", "1001")


class NulBytes(EachMode, unittest.TestCase):
    def test_nul_passes_through_stdout_stderr_values_and_messages(self):
        def check(r, lang):
            self.assertEqual(r.status, "error", r)
            self.assertEqual(r.result["stdout"], "a\0b\ufffd")
            self.assertEqual(r.result["stderr"], "c\0d")
            self.assertEqual(r.result["error"]["message"], "e\0f")
        self.each_mode({"ruby": '$stdout.write("a\\0b\\xff".b); $stderr.write("c\\0d"); '
                                '$stdout.flush; raise "e\\0f"',
                        "python": "import sys\nsys.stdout.flush()\n"
                                  "sys.stdout.buffer.write(b'a\\0b\\xff')\n"
                                  "sys.stderr.write('c\\0d')\nraise ValueError('e\\0f')"},
                       check)

    def test_nul_in_a_value(self):
        self.each_mode({"ruby": '["x\\0y", {"k\\0" => 1}]', "python": "['x\\0y', {'k\\0': 1}]"},
                       lambda r, lang: self.assertEqual(r.result["value"], ["x\0y", {"k\0": 1}], r))

    def test_the_cli_prints_the_whole_message(self):
        for lang, code in (("ruby", 'raise "e\\0f"'), ("python", "raise ValueError('e\\0f')")):
            with self.subTest(lang=lang):
                r = codecell("run", "--lang", lang, "-e", code)
                self.assertEqual(r.code, 1, r)
                self.assertIn("Error: e\0f\n", r.stderr)


if __name__ == "__main__":
    unittest.main()
