"""codecell run hands the code what a sandbox CLI user expects to hand it: stdin, arguments
after the code (ARGV, sys.argv), --env variables, and a configured cell (--config --cell)."""
import json
import os
import subprocess
import unittest

from harness import BIN, tempdir
from mcp_peer import write_config

SHOW = {
    "ruby": '[ARGV, ENV["GREETING"], STDIN.binmode.read.bytes.to_a]',
    "python": 'import os, sys\n[sys.argv[1:], os.environ.get("GREETING"), '
              'list(sys.stdin.buffer.read())]',
}


def run(*args, stdin=b"", **kw):
    return subprocess.run([BIN, "run", *args], input=stdin, capture_output=True, timeout=120,
                          **kw)


class Input(unittest.TestCase):
    def test_stdin_arguments_and_environment_reach_the_code(self):
        for lang, code in SHOW.items():
            with self.subTest(lang=lang):
                r = run("--lang", lang, "--env", "GREETING=hé llo", "-e", code, "--", "a",
                        "b c", "--json", stdin=b"in\x00\xff")
                self.assertEqual(r.returncode, 0, r.stderr)
                # Human mode (the "--json" is the code's): the value on the "=> " line.
                value = r.stdout.decode().splitlines()[-1]
                self.assertTrue(value.startswith("=> "), r.stdout)
                self.assertEqual(json.loads(value[3:]),
                                 [["a", "b c", "--json"], "hé llo", [105, 110, 0, 255]])

    def test_a_script_file_takes_its_arguments_with_or_without_dashes(self):
        d = tempdir(self)
        script = os.path.join(d, "args.py")
        with open(script, "w") as f:
            f.write("import sys\nsys.argv[1:]\n")
        for extra in (["--", "-x", "y"], ["-x", "y"]):
            r = run("--json", script, *extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["value"], ["-x", "y"])

    def test_nothing_given_means_empty(self):
        r = run("--json", "-e", "[ARGV, STDIN.read]")
        self.assertEqual(json.loads(r.stdout)["value"], [[], ""])

    def test_code_from_stdin_leaves_the_code_no_stdin(self):
        r = run("--json", "-", stdin=b"STDIN.read")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["value"], "")

    def test_bad_input_is_refused_before_anything_runs(self):
        cases = [
            (["--env", "NOVALUE", "-e", "1"], "--env NOVALUE: expected NAME=VALUE"),
            (["--env", "1A=x", "-e", "1"], 'environment variable "1A=x": expected NAME=VALUE'),
            ([b"-e", b"1", b"--", b"\xff"], "argument 1 is not UTF-8"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                r = run(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr.decode())


class Files(unittest.TestCase):
    READ = {"ruby": '[File.binread("blob.bin").bytes, File.read("in/table.csv")]',
            "python": '[list(open("blob.bin", "rb").read()), open("in/table.csv").read()]'}

    def test_files_are_copied_into_work_under_their_names(self):
        d = tempdir(self)
        blob, table = os.path.join(d, "blob.bin"), os.path.join(d, "t.csv")
        with open(blob, "wb") as f:
            f.write(b"\x00\xff\n")
        with open(table, "w") as f:
            f.write("a,é\n")
        for lang, code in self.READ.items():
            with self.subTest(lang=lang):
                r = run("--lang", lang, "--json", "--file", blob, "--file",
                        "in/table.csv=" + table, "-e", code)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(json.loads(r.stdout)["value"], [[0, 255, 10], "a,é\n"])

    def test_bad_files_are_refused_before_anything_runs(self):
        d = tempdir(self)
        ok = os.path.join(d, "ok.txt")
        with open(ok, "w") as f:
            f.write("1")
        os.mkfifo(os.path.join(d, "fifo"))
        cases = [(["--file", "../up=" + ok], 'files[0].name: "../up" has a "." or ".." part'),
                 (["--file", "/etc/x=" + ok], 'files[0].name: "/etc/x" is absolute'),
                 (["--file", ok, "--file", "ok.txt=" + ok], 'files[1].name: "ok.txt" is given '
                                                            'twice'),
                 (["--file", os.path.join(d, "missing")], "No such file or directory"),
                 (["--file", d], "not a regular file"),
                 (["--file", os.path.join(d, "fifo")], "not a regular file")]
        for args, message in cases:
            with self.subTest(args=args):
                r = run(*args, "-e", 'File.write("/work/ran", "1")')
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr.decode())
                self.assertEqual(r.stdout, b"")


class ConfiguredCell(unittest.TestCase):
    def setUp(self):
        self.dir = tempdir(self)
        data = os.path.join(self.dir, "data")
        os.mkdir(data)
        with open(os.path.join(data, "n.txt"), "w") as f:
            f.write("41")
        self.config = write_config(self.dir, [
            {"name": "calc", "language": "python", "mounts": [{"source": "data", "dest": "/d"}],
             "limits": {"timeout_ms": 20000}},
            {"name": "other", "language": "ruby"}])

    def test_runs_in_the_cell_as_configured(self):
        r = run("--json", "--config", self.config, "--cell", "calc", "-e",
                "int(open('/d/n.txt').read()) + 1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["value"], 42)

    def test_unknown_cell_and_mixed_flags(self):
        r = run("--config", self.config, "--cell", "nope", "-e", "1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("has no such cell (it has: calc other)", r.stderr.decode())
        r = run("--config", self.config, "-e", "1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("has 2 cells: name one with --cell (it has: calc other)", r.stderr.decode())
        r = run("--cell", "calc", "-e", "1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--cell NAME needs --config FILE", r.stderr.decode())

    def test_flags_that_shape_a_cell_are_refused_by_name(self):
        shaping = [("--lang", "ruby"), ("--mount", "/tmp:/x"), ("--tools", "t.json"),
                   ("--allow-subprocesses",), ("--interpreter", "/usr/bin/python3"),
                   ("--library", "/nonexistent"), ("--start", "fork"),
                   ("--image-folder", "/work")]
        for flag in shaping:
            with self.subTest(flag=flag[0]):
                r = run("--config", self.config, "--cell", "calc", *flag, "-e", "1")
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(f"{flag[0]}: --config runs the cell as the file shapes it",
                              r.stderr.decode())
        for policy in ("warn", "ignore"):
            r = run("--config", self.config, "--cell", "calc", "--on-unsupported", policy, "-e", "1")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(f"--on-unsupported {policy}: beside --config", r.stderr.decode())

    def test_limit_flags_narrow_the_cell(self):
        r = run("--json", "--config", self.config, "--cell", "calc", "--timeout", "1s", "-e",
                "import time; time.sleep(30)")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(json.loads(r.stdout)["status"], "timeout")
        r = run("--json", "--config", self.config, "--cell", "calc", "--memory", "64M", "-e",
                "len(bytearray(150 * 1024 * 1024))")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(json.loads(r.stdout)["status"], "memory_limit")
        r = run("--json", "--config", self.config, "--cell", "calc", "--max-output", "1K", "-e",
                "print('x' * 5000)")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(json.loads(r.stdout)["stdout_truncated"])
        r = run("--json", "--config", self.config, "--cell", "calc", "--cpu", "200ms", "-e",
                "while True: pass")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(json.loads(r.stdout)["status"], "fuel_exhausted")

    def test_a_limit_flag_never_widens(self):
        r = run("--config", self.config, "--cell", "calc", "--timeout", "60s", "-e", "1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn('--timeout 60s: the cell "calc" has timeout_ms 20000, and beside --config '
                      "a limit flag only narrows", r.stderr.decode())

    def test_a_file_of_one_cell_needs_no_cell_flag(self):
        config = write_config(tempdir(self), [{"name": "only", "language": "ruby"}])
        r = run("--json", "--config", config, "-e", "6 * 7")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["value"], 42)


if __name__ == "__main__":
    unittest.main()
