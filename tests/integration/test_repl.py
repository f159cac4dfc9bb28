"""codecell repl as people use it: at a real terminal (tmux: keys sent, the screen read), with
line editing, a history file, Ctrl-C that interrupts the code and keeps the session, entries
that go on while a block is open, a banner, .reset and .exit; and from a pipe, the same
entries and exit codes without a terminal."""
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from harness import BIN, codecell

TMUX = shutil.which("tmux")
DEADLINE = 180  # seconds for anything the screen must show: a loaded machine is slow
PROMPT = "codecell> "
CONTINUED = "   ...> "


def values(r):
    return [line for line in r.stdout.splitlines() if line.startswith("=> ")]


def tempdir(test):
    d = tempfile.mkdtemp(prefix="codecell-repl-")
    test.addCleanup(shutil.rmtree, d, True)
    return d


class Terminal:
    """`codecell repl ARGS` in a detached tmux session of its own server (its own socket),
    with HOME at home (so the history file is there). The pane's command says how the REPL
    ended with a line "[exit N]"."""

    made = 0

    def __init__(self, test, home, *args):
        self.test = test
        Terminal.made += 1  # a server of its own each: one killed may still be going
        self.socket = os.path.join(home, "tmux-%d.socket" % Terminal.made)
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "XDG_STATE_HOME")}
        env["HOME"] = home
        command = " ".join(["exec", "sh", "-c", _quote(
            " ".join(_quote(a) for a in [os.path.abspath(BIN), "repl", *args])
            + '; echo "[exit $?]"; exec sleep 3600')])
        subprocess.run(["tmux", "-S", self.socket, "-f", "/dev/null", "new-session", "-d",
                        "-s", "repl", "-x", "120", "-y", "50", command], env=env, check=True)
        test.addCleanup(self.close)

    def close(self):
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)

    def screen(self):
        r = subprocess.run(["tmux", "-S", self.socket, "capture-pane", "-p", "-J", "-S", "-2000",
                            "-t", "repl"], capture_output=True, text=True)
        return r.stdout

    def keys(self, *keys):
        subprocess.run(["tmux", "-S", self.socket, "send-keys", "-t", "repl", *keys], check=True)

    def type(self, text):
        """Literal text (tmux would read "end" as the End key), not yet entered."""
        subprocess.run(["tmux", "-S", self.socket, "send-keys", "-t", "repl", "-l", text],
                       check=True)

    def wait(self, holds, what):
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            text = self.screen()
            if holds(text):
                return text
            time.sleep(0.1)
        self.test.fail(f"the screen never showed {what}:\n{self.screen()}")

    def wait_for(self, pattern):
        return self.wait(lambda t: re.search(pattern, t, re.M), repr(pattern))

    def prompts(self, text=None):
        text = self.screen() if text is None else text
        return sum(1 for line in text.splitlines() if line.startswith(PROMPT))

    def started(self):
        return self.wait(lambda t: self.prompts(t) >= 1, "the first prompt")

    def enter(self, line, prompt=PROMPT):
        """Types a line and Enter, and waits for the next prompt (prompt: which one)."""
        before = self.screen()
        count = lambda t: sum(1 for l in t.splitlines() if l.startswith(prompt))
        n = count(before)
        self.type(line)
        self.keys("Enter")
        return self.wait(lambda t: count(t) > n, f"a prompt {prompt!r} after {line!r}")

    def exit_status(self):
        text = self.wait_for(r"^\[exit \d+\]")
        return int(re.search(r"^\[exit (\d+)\]", text, re.M).group(1))


def setUpModule():
    if not TMUX:
        print("test_repl: the terminal tests are skipped: tmux is not installed "
              "(scripts/bootstrap installs it)", file=sys.stderr)


def _quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


@unittest.skipUnless(TMUX, "tmux is not installed (scripts/bootstrap installs it)")
class AtATerminal(unittest.TestCase):
    def setUp(self):
        self.home = tempdir(self)

    def repl(self, *args):
        t = Terminal(self, self.home, *args)
        t.started()
        return t

    def test_banner_names_language_version_and_session(self):
        for lang, shown in (("ruby", "Ruby"), ("python", "Python")):
            with self.subTest(lang=lang):
                t = self.repl("--lang", lang, "--session", "s1")
                text = t.screen()
                self.assertRegex(text, r'(?m)^codecell \S+: %s \d+\.\d+\.\d+, session "s1" ' % shown)
                banner = [l for l in text.splitlines() if l.startswith("codecell ")]
                self.assertEqual(len(banner), 1, text)
                t.close()

    def test_exit_and_ctrl_d_end_with_status_0(self):
        t = self.repl()
        t.enter("1 + 1")
        t.type(".exit")
        t.keys("Enter")
        self.assertEqual(t.exit_status(), 0)
        t.close()
        t = self.repl("--lang", "python")
        t.keys("C-d")
        self.assertEqual(t.exit_status(), 0)

    def test_arrows_recall_history_also_from_the_file(self):
        t = self.repl()
        t.enter("6 * 7")
        t.enter("1 + 1")
        t.keys("Up", "Up")
        t.keys("Enter")
        text = t.wait(lambda s: s.count("=> 42") == 2, "6 * 7 run again")
        self.assertNotIn("^[[A", text)  # the arrow is not code
        self.assertNotIn("SyntaxError", text)
        t.type(".exit")
        t.keys("Enter")
        self.assertEqual(t.exit_status(), 0)
        t.close()
        # A new REPL reads what the last one kept: .exit, then 6 * 7.
        t = self.repl()
        t.keys("Up", "Up", "Enter")
        t.wait_for(r"^=> 42$")

    def test_ctrl_c_interrupts_running_code_and_keeps_the_session(self):
        cases = {"ruby": ('puts "started"; sleep 30', "Interrupt"),
                 "python": ('print("started"); __import__("time").sleep(30)',
                            "KeyboardInterrupt")}
        for (lang, (code, error)), start in itertools.product(cases.items(), ("exec", "fork")):
            with self.subTest(lang=lang, start=start):
                t = self.repl("--lang", lang, "--start", start)
                t.enter("x = 41")
                n = t.prompts()
                t.type(code)
                t.keys("Enter")
                t.wait_for(r"^started$")  # the code runs: its output is shown as it comes
                t.keys("C-c")
                text = t.wait(lambda s: t.prompts(s) > n, "a prompt after Ctrl-C")
                self.assertRegex(text, r"(?m)^(\^C)?%s\b" % error)
                self.assertNotIn("state", text.split("started")[-1])  # not "was lost"
                text = t.enter("x + 1")
                self.assertRegex(text, r"(?m)^=> 42$")
                t.close()

    def test_ctrl_c_at_the_prompt_drops_the_line_and_the_entry(self):
        t = self.repl()
        n = t.prompts()
        t.type('raise "dropped"')
        t.keys("Left", "Left", "C-c")  # with the cursor inside the line: shown whole
        text = t.wait(lambda s: t.prompts(s) > n, "a fresh prompt after Ctrl-C")
        self.assertIn('codecell> raise "dropped"^C\n', text)
        # An open block is dropped whole: what follows is a new entry.
        t.enter("def f(y)", prompt=CONTINUED)
        n = t.prompts()
        t.keys("C-c")
        t.wait(lambda s: t.prompts(s) > n, "a fresh prompt after Ctrl-C in a block")
        text = t.enter("20 + 22")
        self.assertRegex(text, r"(?m)^=> 42$")
        self.assertNotIn("RuntimeError", text)
        self.assertNotIn("dropped", text.split('raise "dropped"')[-1])
        self.assertNotIn("SyntaxError", text)
        t.type(".exit")
        t.keys("Enter")
        self.assertEqual(t.exit_status(), 0)

    def test_a_ruby_def_goes_on_without_a_backslash(self):
        t = self.repl()
        t.enter("def twice(y)", prompt=CONTINUED)
        t.enter("  y * 2", prompt=CONTINUED)
        text = t.enter("end")
        self.assertRegex(text, r'(?m)^=> "twice"$')
        self.assertRegex(t.enter("twice(21)"), r"(?m)^=> 42$")
        self.assertNotIn("SyntaxError", t.screen())

    def test_a_python_statement_prints_nothing(self):
        t = self.repl("--lang", "python")
        t.enter("x = 1")
        t.enter("def f():", prompt=CONTINUED)
        t.enter("    return x + 41", prompt=CONTINUED)
        t.enter("")
        text = t.enter("f()")
        self.assertRegex(text, r"(?m)^=> 42$")
        self.assertNotIn("=> null", text)
        self.assertEqual(re.findall(r"^=> .*$", text, re.M), ["=> 42"])

    def test_reset_starts_a_fresh_session(self):
        t = self.repl()
        t.enter("x = 5")
        self.assertIn("(session reset)", t.enter(".reset"))
        self.assertRegex(t.enter("defined?(x)"), r"(?m)^=> null$")
        self.assertIn(".reset", t.enter(".help"))


class FromAPipe(unittest.TestCase):
    def test_a_ruby_block_goes_on_until_its_end(self):
        r = codecell("repl", stdin='def twice(y)\n  y * 2\nend\n[1, 2].map do |v|\n  twice(v)\n'
                                   'end\ns = <<~EOS\n  end\nEOS\ns.strip\n')
        self.assertEqual(r.code, 0, r)
        self.assertEqual(values(r), ['=> "twice"', "=> [2,4]", '=> "end\\n"', '=> "end"'], r)
        self.assertEqual(r.stderr, "", r)

    def test_python_brackets_go_on_and_statements_print_nothing(self):
        r = codecell("repl", "--lang", "python",
                     stdin="x = [1,\n     2]\nprint('hi')\ndef f():\n    return sum(x)\n\nf()\nNone\n")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.stdout, "hi\n=> 3\n", r)

    def test_exit_stops_reading_with_status_0(self):
        r = codecell("repl", stdin="1\n.exit\n2\n")
        self.assertEqual((r.code, values(r)), (0, ["=> 1"]), r)
        r = codecell("repl", stdin=".frob\n3\n")
        self.assertIn("unknown command .frob", r.stdout)
        self.assertEqual(values(r), ["=> 3"])

    def test_a_bad_session_name_is_a_usage_error(self):
        r = codecell("repl", "--session", "bad name", stdin="1\n2\n")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(r.stderr.count('session name "bad name"'), 1, r)


    def test_a_backslash_continues_the_line_and_stays_in_the_code(self):
        r = codecell("repl", stdin="a = 1 \\\n+ 2\na\ns = 'x\\\ny'\ns.size\n")
        # Ruby reads backslash-newline in single quotes as the two characters.
        self.assertEqual(values(r), ["=> 3", "=> 3", '=> "x\\\\\\ny"', "=> 4"], r)
        r = codecell("repl", "--lang", "python", stdin="x = 1 + \\\n2\nx\n")
        self.assertEqual(values(r), ["=> 3"], r)

    def test_an_entry_the_engine_refuses_does_not_end_the_repl(self):
        r = subprocess.run([BIN, "repl"], input=b"x = 6\n'\xff'\nx * 7\n", capture_output=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"not valid UTF-8", r.stderr)
        self.assertEqual(r.stdout.decode().splitlines()[-1], "=> 42", r.stdout)


class Warnings(unittest.TestCase):
    def test_a_missing_layer_is_said_once_per_process(self):
        """As nobody this host gives no writable cgroup: each entry's result says so, and the
        REPL says it once, pointing at codecell check."""
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            self.skipTest("needs root and setpriv to run the REPL as nobody")
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            BIN, "repl"], input="1\n2\n3\n", capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        warnings = [l for l in r.stderr.splitlines() if l.startswith("codecell: warning: ")]
        if not warnings:
            self.skipTest("this host gives nobody every layer: no warning to repeat")
        self.assertEqual(len(warnings), 1, r.stderr)
        self.assertIn("(codecell check shows every layer of this host)", warnings[0])


class ACellOfAConfigurationFile(unittest.TestCase):
    def config(self, cells):
        path = os.path.join(tempdir(self), "cells.json")
        with open(path, "w") as f:
            json.dump({"cells": cells}, f)
        return path

    def test_one_cell_needs_no_name(self):
        path = self.config([{"name": "py", "language": "python",
                             "limits": {"timeout_ms": 20000}}])
        r = codecell("repl", "--config", path, stdin="x = 41\nx + 1\n")
        self.assertEqual((r.code, r.stdout), (0, "=> 42\n"), r)

    def test_several_cells_are_named(self):
        path = self.config([{"name": "py", "language": "python"},
                            {"name": "rb", "language": "ruby"}])
        r = codecell("repl", "--config", path, "--cell", "rb", stdin="RUBY_VERSION.class\n")
        self.assertEqual(values(r), ['=> "String"'], r)
        r = codecell("repl", "--config", path, stdin="1\n")
        self.assertEqual(r.code, 2, r)
        self.assertIn("has 2 cells: name one with --cell (it has: py rb)", r.stderr)
        r = codecell("repl", "--config", path, "--cell", "js", stdin="1\n")
        self.assertEqual(r.code, 2, r)
        self.assertIn("--cell js", r.stderr)

    def test_options_the_cell_would_not_apply_are_refused(self):
        path = self.config([{"name": "py", "language": "python"}])
        for option in (["--lang", "ruby"], ["--mount", "/tmp:/x"], ["--allow-subprocesses"],
                       ["--interpreter", "/usr/bin/python3"], ["--start", "fork"]):
            with self.subTest(option=option):
                r = codecell("repl", "--config", path, *option, stdin="1\n")
                self.assertEqual(r.code, 2, r)
                self.assertIn(f"{option[0]}: --config uses the cell as the file shapes it",
                              r.stderr)
        r = codecell("repl", "--config", path, "--timeout", "10m", stdin="1\n")
        self.assertEqual(r.code, 2, r)
        self.assertIn('--timeout 10m: the cell "py" has timeout_ms 30000, and beside --config a '
                      "limit flag only narrows", r.stderr)

    def test_limit_flags_narrow_the_configured_cell(self):
        path = self.config([{"name": "py", "language": "python"}])
        r = codecell("repl", "--config", path, "--timeout", "1s",
                     stdin="x = 41\nimport time; time.sleep(30)\nx + 1\n")
        self.assertEqual(r.code, 0, r)
        self.assertIn("timeout", r.stderr + r.stdout)
        r = codecell("repl", "--cell", "py", stdin="1\n")
        self.assertEqual(r.code, 2, r)
        self.assertIn("--cell NAME names a cell of a --config FILE", r.stderr)

    def test_a_cell_without_sessions_is_refused(self):
        path = self.config([{"name": "py", "language": "python", "sessions": {"enabled": False}}])
        r = codecell("repl", "--config", path, stdin="1\n")
        self.assertEqual(r.code, 2, r)
        self.assertIn("has sessions turned off", r.stderr)


if __name__ == "__main__":
    unittest.main()
