"""What a run is given besides its code, as `codecell run` gives it: its own wall clock, stdin,
argv, environment variables and its output as it comes."""
import unittest

import codecell

SLEEP = {"python": "import time\ntime.sleep(%s)\n1", "ruby": "sleep %s; 1"}


class RunInputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cells = {lang: codecell.Cell(lang, pool=1, timeout_ms=5_000) for lang in SLEEP}

    @classmethod
    def tearDownClass(cls):
        for cell in cls.cells.values():
            cell.close()

    def test_a_runs_timeout_narrows_the_cells(self):
        for lang, cell in self.cells.items():
            code = SLEEP[lang] % 1
            self.assertEqual(cell.run(code).status, "ok")
            for r in (cell.run(code, timeout_ms=300), cell.eval(code, timeout_ms=300),
                      cell.session("t").eval(code, timeout_ms=300)):
                self.assertEqual(r.status, "timeout", r.to_dict())
                self.assertIn("timed out after 300 ms", r.error)
            cell.close_all()

    def test_a_runs_timeout_never_widens_the_cells(self):
        with codecell.Cell("python", pool=0, timeout_ms=1_000) as cell:
            r = cell.run(SLEEP["python"] % 10, timeout_ms=60_000)
            self.assertEqual(r.status, "timeout")
            self.assertIn("timed out after 1000 ms", r.error)

    def test_stdin_argv_and_env(self):
        code = {"python": "import sys, os\n[sys.stdin.buffer.read().hex(), sys.argv[1:], "
                          "os.environ.get('CITY'), os.environ.get('HOME')]",
                "ruby": "[$stdin.binmode.read.unpack1('H*'), ARGV, ENV['CITY'], ENV['HOME']]"}
        for lang, cell in self.cells.items():
            r = cell.run(code[lang], stdin=b"\x00\xffab", argv=["one", "z\u00fcrich"],
                         env={"CITY": "Oslo"})
            self.assertEqual(r.value[:3], ["00ff6162", ["one", "z\u00fcrich"], "Oslo"], lang)
            r = cell.eval(code[lang], stdin="h\u00e9", argv=[], env={})
            self.assertEqual(r.value[:3], ["68c3a9", [], None], lang)
            r = cell.run(code[lang])  # none given: empty stdin, no arguments
            self.assertEqual(r.value[:3], ["", [], None], lang)
            cell.close_all()

    def test_bad_input_is_refused_before_the_run(self):
        cell = self.cells["python"]
        with self.assertRaises(ValueError):
            cell.run("1", env={"1BAD": "x"})  # the engine's rule for names
        with self.assertRaises(ValueError):
            cell.run("1", env={"A=B": "x"})
        with self.assertRaises(TypeError):
            cell.run("1", argv="one")
        with self.assertRaises(TypeError):
            cell.run("1", stdin=1)
        with self.assertRaises(ValueError):
            cell.run("1", timeout_ms=0)
        with self.assertRaises(TypeError):
            cell.run("1", timeout_ms=1.5)
        with self.assertRaises(TypeError):
            cell.run("1", on_output="print")
        with self.assertRaises(TypeError):
            cell.eval("1", timeout=3)

    def test_output_comes_as_the_code_writes_it(self):
        # The guest asks a host tool what on_output has seen so far: its first line, before
        # the run ends.
        code = {"python": "import sys\nprint('one', flush=True)\nsys.stderr.write('two\\n')\n"
                          "sys.stderr.flush()\nseen = sb.call('seen')\ninput()\n"
                          "print('\u00e9' * 3)\nseen",
                "ruby": "$stdout.sync = true\nputs 'one'\n$stderr.puts 'two'\n"
                        "seen = SB.call('seen')\n$stdin.gets\nputs '\u00e9' * 3\nseen"}
        for lang in SLEEP:
            pieces = []
            with codecell.Cell(lang, pool=0) as cell:
                cell.tool("seen", lambda: [[s, t] for s, t in pieces])
                for run in (cell.run, cell.eval):
                    r = run(code[lang], stdin="\n", on_output=lambda *p: pieces.append(p))
                    self.assertEqual(r.status, "ok", r.to_dict())
                    self.assertEqual(sorted(r.value), [["stderr", "two\n"], ["stdout", "one\n"]])
                    by_stream = {s: "".join(t for st, t in pieces if st == s)
                                 for s in ("stdout", "stderr")}
                    self.assertEqual(by_stream, {"stdout": "one\n\u00e9\u00e9\u00e9\n",
                                                 "stderr": "two\n"}, lang)
                    self.assertEqual(by_stream["stdout"], r.stdout)  # what the result holds
                    del pieces[:]

    def test_an_exception_in_on_output_cancels_the_run_and_is_raised(self):
        cell = self.cells["python"]

        def on_output(stream, text):
            raise KeyError(text)

        with self.assertRaises(KeyError) as raised:
            cell.run("import time\nprint('x', flush=True)\ntime.sleep(30)", on_output=on_output)
        self.assertEqual(raised.exception.args, ("x\n",))
        # The cell goes on.
        self.assertEqual(cell.run("1 + 1").value, 2)


if __name__ == "__main__":
    unittest.main()
