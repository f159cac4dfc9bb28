"""What a new user meets first: a missing configuration file named as such, make run and make
build asking only for the runtime packages, make demo printing commands that can be pasted."""
import json
import os
import shlex
import socket
import subprocess
import unittest

from harness import BIN, tempdir

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TEST_TOOLS = {"bubblewrap", "python3-yaml", "lintian", "debhelper", "nodejs", "npm", "clang"}


class MissingFile(unittest.TestCase):
    def test_each_command_says_the_file_is_missing(self):
        d = tempdir(self)
        missing = os.path.join(d, "cells.json")
        for args in (["serve", "--config", missing], ["describe", "--config", missing],
                     ["run", "--tools", missing, "-e", "1"]):
            with self.subTest(command=args[0]):
                r = subprocess.run([BIN, *args, "--log-level", "off"] if args[0] == "serve"
                                   else [BIN, *args], capture_output=True, text=True,
                                   stdin=subprocess.DEVNULL, timeout=60)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(f"{missing}: cannot open: No such file or directory", r.stderr)
                self.assertNotIn(":-1:", r.stderr)

    def test_a_file_that_is_not_json_names_the_line(self):
        d = tempdir(self)
        path = os.path.join(d, "cells.json")
        with open(path, "w") as f:
            f.write('{"cells": [\n')
        r = subprocess.run([BIN, "describe", "--config", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertRegex(r.stderr, rf"{path}:\d+: ")


class Bootstrap(unittest.TestCase):
    def packages(self, *mode):
        r = subprocess.run([os.path.join(ROOT, "scripts", "bootstrap"), *mode, "--list"],
                           capture_output=True, text=True, check=True)
        return set(r.stdout.split())

    def test_run_needs_only_the_runtime(self):
        run = self.packages("--run")
        self.assertLessEqual({"libseccomp-dev", "libjansson-dev", "ruby", "python3"}, run)
        self.assertEqual(run & TEST_TOOLS, set())
        full = self.packages()
        self.assertLess(run, full)
        self.assertLessEqual({"bubblewrap", "lintian", "debhelper"}, full)

    def test_make_build_run_and_demo_ask_for_the_runtime_only(self):
        for target in ("build", "run", "demo"):
            r = subprocess.run(["make", "-n", "-C", ROOT, target], capture_output=True,
                               text=True, check=True)
            calls = [l.strip() for l in r.stdout.splitlines() if "scripts/bootstrap" in l]
            self.assertEqual(calls, ["scripts/bootstrap --run"], target)


@unittest.skipUnless(os.path.exists(os.path.join(ROOT, "build", "codecell")),
                     "make demo runs build/codecell, which is not built")
class Demo(unittest.TestCase):
    def test_printed_commands_paste_back_to_what_ran(self):
        r = subprocess.run([os.path.join(ROOT, "examples", "demo")], capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        commands = [shlex.split(l[2:]) for l in r.stdout.splitlines() if l.startswith("$ ")]
        self.assertIn(["build/codecell", "run", "--json", "-e", 'File.read("/etc/hostname")'],
                      commands)
        self.assertIn(["build/codecell", "run", "--tools", "examples/tools.json", "-e",
                       'SB.call("weather.today", city: "Lisbon", days: 2)'], commands)


@unittest.skipUnless(os.path.exists(os.path.join(ROOT, "build", "codecell")),
                     "make run runs build/codecell, which is not built")
class Run(unittest.TestCase):
    def test_the_stdio_demo_lists_the_tools_and_answers_every_call(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        r = subprocess.run([os.path.join(ROOT, "examples", "run")], capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=600,
                           env=dict(os.environ, RUN_SECONDS="1", PORT=str(port)))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('> {"jsonrpc":"2.0","id":2,"method":"tools/list"}', r.stdout)
        self.assertIn("< (id 2) tools/list: 4 tools", r.stdout)
        self.assertIn("    ruby(code, files, session, reset): ", r.stdout)
        self.assertIn("their answers come back in the order\nthey finish", r.stdout)
        answers = [json.loads(l[2:]) for l in r.stdout.splitlines() if l.startswith("< {")]
        self.assertEqual(sorted(a["id"] for a in answers), [1, 3, 4])
        for a in answers[1:]:
            self.assertEqual(a["result"]["structuredContent"]["status"], "ok", a)
        self.assertIn("npx @modelcontextprotocol/inspector -- build/codecell serve --config "
                      "examples/cells.json", r.stdout)


if __name__ == "__main__":
    unittest.main()
