"""What a run is given besides its code, as `codecell run` gives it: its own wall clock, stdin,
argv, environment variables, files written into /work and its output as it comes."""
import unittest

import codecell

SLEEP = {"python": "import time\ntime.sleep(%s)\n1", "ruby": "sleep %s; 1"}

# Reads back what files= wrote: the CSV as text, the binary file as hex, the nested folder.
READ_FILES = {
    "python": "import os\n[open('/work/sales.csv').read(), open('/work/all.bin', 'rb').read().hex(),"
              " sorted(os.listdir('/work/in/deep')), os.path.isdir('/work/in')]",
    "ruby": "[File.read('/work/sales.csv'), File.binread('/work/all.bin').unpack1('H*'),"
            " Dir.children('/work/in/deep').sort, File.directory?('/work/in')]"}
EXISTS = {"python": "import os\nos.path.exists('/work/%s')", "ruby": "File.exist?('/work/%s')"}
CSV = "city,sales\nOslo,12\nZ\u00fcrich,7\n"
ALL_BYTES = bytes(range(256))


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

    def test_files_are_written_into_work_before_the_code_runs(self):
        files = {"sales.csv": CSV, "all.bin": ALL_BYTES, "in/deep/notes.txt": b"",
                 "in/deep/r\u00e9sum\u00e9.md": "# hi"}
        want = [CSV, ALL_BYTES.hex(), ["notes.txt", "r\u00e9sum\u00e9.md"], True]
        for lang, cell in self.cells.items():
            r = cell.run(READ_FILES[lang], files=files)
            self.assertEqual(r.status, "ok", r.to_dict())
            self.assertEqual(r.value, want, lang)
            # The same as a list of pairs, with a bytearray and a memoryview for content.
            r = cell.run(READ_FILES[lang], files=[
                ("sales.csv", CSV.encode()), ("all.bin", bytearray(ALL_BYTES)),
                ("in/deep/notes.txt", memoryview(b"")), ("in/deep/r\u00e9sum\u00e9.md", "# hi")])
            self.assertEqual(r.value, want, lang)
            # A run is a fresh sandbox: the last run's files are gone.
            self.assertIs(cell.run(EXISTS[lang] % "sales.csv").value, False, lang)

    def test_a_sessions_files_stay_for_the_next_eval(self):
        for lang, cell in self.cells.items():
            session = cell.session("files")
            self.assertEqual(session.eval("1", files={"sales.csv": CSV}).status, "ok")
            r = session.eval(READ_FILES[lang], files={"all.bin": ALL_BYTES,
                                                      "in/deep/x": "x"})
            self.assertEqual(r.value, [CSV, ALL_BYTES.hex(), ["x"], True], lang)
            # Cell.eval reaches the same session's /work.
            self.assertIs(cell.eval(EXISTS[lang] % "in/deep/x", session="files").value, True)
            cell.close_all()

    def test_a_bad_file_is_refused_naming_the_entry(self):
        for lang, cell in self.cells.items():
            for name in ("../x", "/etc/passwd", "a//b", "a/./b", "x\n"):
                with self.assertRaises(ValueError) as raised:
                    cell.run("1", files={name: "x"})
                self.assertIn("files[0].name", str(raised.exception), name)
                with self.assertRaises(ValueError) as raised:
                    cell.session("bad").eval("1", files=[("ok.txt", "x"), (name, "x")])
                self.assertIn("files[1].name", str(raised.exception), name)
            with self.assertRaises(ValueError) as raised:  # a C string would end at the NUL
                cell.run("1", files={"a\0b": "x"})
            self.assertIn("files[0].name", str(raised.exception))
            # Nothing of a refused eval was written: the good entry before the bad one is not
            # in the session either.
            self.assertIs(cell.session("bad").eval(EXISTS[lang] % "ok.txt").value, False, lang)
            cell.close_all()
        cell = self.cells["python"]
        for files, message in (("sales.csv", "files: a dict"), (b"x", "files: a dict"),
                               ([("a", "x", "y")], "files[0]: a (name, content) pair"),
                               (["ab"], "files[0]: a (name, content) pair"),
                               ({b"a": "x"}, "files[0].name: a str"),
                               ({"a": 1}, "files[0].content: str or bytes, not int"),
                               ([("a", "x"), ("b", None)], "files[1].content")):
            with self.assertRaises(TypeError) as raised:
                cell.run("1", files=files)
            self.assertIn(message, str(raised.exception))
        with self.assertRaises(ValueError) as raised:  # a lone surrogate has no UTF-8
            cell.run("1", files={"a": "\ud800"})
        self.assertIn("files[0].content", str(raised.exception))

    def test_more_files_than_the_cells_limit_are_refused(self):
        for lang in SLEEP:
            with codecell.Cell(lang, pool=0, limits={"files_in": 2, "files_in_bytes": 10}) as cell:
                two = {"a": "1", "b/c": "2"}
                self.assertEqual(cell.run(EXISTS[lang] % "b/c", files=two).value, True)
                for run in (cell.run, cell.eval):
                    with self.assertRaises(ValueError) as raised:
                        run("1", files=dict(two, d="3"))
                    self.assertIn("more than 2 files", str(raised.exception))
                    self.assertIn("files_in", str(raised.exception))
                    with self.assertRaises(ValueError) as raised:  # 11 bytes in all
                        run("1", files={"a": "12345", "b": b"123456"})
                    self.assertIn("files[1]", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
