"""The configuration file of `codecell serve` and `codecell describe --config`: every bad key is
refused with its JSON path, the server does not start on a bad file, and a good file gives the
tools the model sees."""
import json
import os
import shutil
import tempfile
import unittest

from harness import codecell, tempdir
from mcp_peer import EXAMPLES

GOOD_CELL = {"name": "ruby", "language": "ruby", "pool": 0}
TOOL = {"name": "echo", "command": ["/bin/cat"], "description": "Returns its arguments."}


def cell(**changes):
    c = dict(GOOD_CELL)
    c.update(changes)
    return c


class BadFiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempdir(self)
        os.mkdir(os.path.join(self.dir, "data"))

    def refused(self, content, expected):
        path = os.path.join(self.dir, "cells.json")
        with open(path, "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        for verb in (["serve", "--config", path], ["describe", "--config", path]):
            r = codecell(*verb, stdin="")
            self.assertEqual(r.code, 2, r)
            self.assertEqual(r.stdout, "", "the server must not start on a bad file")
            self.assertIn(f"{path}: {expected}" if not expected.startswith(":") else
                          f"{path}{expected}", r.stderr)

    def test_each_bad_key_names_its_path(self):
        cases = [
            ([], "must be a JSON object"),
            ({"cells": [GOOD_CELL], "extra": 1}, "extra: unknown key (known: $schema, tools, mcp_servers, cells)"),
            ({}, "cells: must be an array of 1 to 64 cells"),
            ({"cells": []}, "cells: must be an array of 1 to 64 cells"),
            ({"cells": [7]}, "cells[0]: must be an object"),
            ({"cells": [cell(colour="red")]}, "cells[0].colour: unknown key"),
            ({"cells": [cell(name="")]}, "cells[0].name: "),
            ({"cells": [cell(name="a b")]}, "cells[0].name: "),
            ({"cells": [GOOD_CELL, GOOD_CELL]}, 'cells[1].name: "ruby" is the name of cells[0]'),
            ({"cells": [cell(language="cobol")]}, 'cells[0].language: unknown language "cobol"'),
            ({"cells": [cell(language=1)]}, "cells[0].language: must be a string"),
            ({"cells": [cell(description=5)]}, "cells[0].description: must be a string"),
            ({"cells": [cell(mounts=[{"source": "data", "dest": "/d", "description": 1}])]},
             "cells[0].mounts[0].description: must be a string"),
            ({"cells": [cell(mounts={})]}, "cells[0].mounts: must be an array"),
            ({"cells": [cell(mounts=[{"dest": "/d"}])]}, "cells[0].mounts[0].source: must be a string"),
            ({"cells": [cell(mounts=[{"source": "data"}])]}, "cells[0].mounts[0].dest: must be a string"),
            ({"cells": [cell(mounts=[{"source": "data", "dest": "/work"}])]},
             "cells[0].mounts[0].dest: overlaps the reserved /work"),
            ({"cells": [cell(mounts=[{"source": "data", "dest": "data"}])]},
             "cells[0].mounts[0].dest: must be absolute"),
            ({"cells": [cell(mounts=[{"source": "data", "dest": "/d"},
                                     {"source": "data", "dest": "/d/e"}])]},
             "cells[0].mounts[1].dest: overlaps the mount at /d"),
            ({"cells": [cell(mounts=[{"source": "missing", "dest": "/d"}])]},
             "cells[0].mounts[0].source: "),
            ({"cells": [cell(mounts=[{"source": "data", "dest": "/d", "mode": "wr"}])]},
             'cells[0].mounts[0].mode: must be "ro", "rw" or "exec"'),
            ({"cells": [cell(mounts=[{"source": "data", "dest": "/d", "mode": "rw"},
                                     {"source": "data", "dest": "/lib2", "mode": "exec"}])]},
             "cells[0].mounts[1].source: "),
            ({"cells": [cell(mounts=[{"source": "data", "dest": "/d", "size": 1}])]},
             "cells[0].mounts[0].size: unknown key"),
            ({"cells": [cell(limits=[])]}, "cells[0].limits: must be an object"),
            ({"cells": [cell(limits={"speed": 1})]}, "cells[0].limits.speed: unknown limit"),
            ({"cells": [cell(limits={"timeout_ms": -5})]}, "cells[0].limits.timeout_ms: must be a positive integer"),
            ({"cells": [cell(limits={"timeout_ms": "5s"})]}, "cells[0].limits.timeout_ms: must be a positive integer"),
            ({"cells": [cell(limits={"memory_bytes": 1000})]},
             "cells[0].limits.memory_bytes: 1000 is below the minimum"),
            ({"cells": [cell(pool=65)]}, "cells[0].pool: must be an integer from 0 to 64"),
            ({"cells": [cell(sessions={"max": 0})]}, "cells[0].sessions.max: must be a positive integer"),
            ({"cells": [cell(sessions={"enabled": "no"})]}, "cells[0].sessions.enabled: must be true or false"),
            ({"cells": [cell(sessions={"ttl": 1})]}, "cells[0].sessions.ttl: unknown key"),
            ({"cells": [cell(allow_subprocesses=1)]}, "cells[0].allow_subprocesses: must be true or false"),
            ({"cells": [cell(on_unsupported="panic")]}, 'cells[0].on_unsupported: must be "warn"'),
            ({"cells": [cell(tools="echo")]}, "cells[0].tools: must be an array of tool names"),
            ({"cells": [cell(tools=["echo"])]}, 'cells[0].tools[0]: no host tool named "echo"'),
            ({"tools": [TOOL], "cells": [cell(tools=["echo", "echo"])]},
             'cells[0].tools[1]: "echo" is listed twice'),
            ({"tools": {}, "cells": [GOOD_CELL]}, "tools: must be an array"),
            ({"tools": [dict(TOOL, command=[])], "cells": [GOOD_CELL]},
             "tools[0].command: must be a non-empty array of strings"),
            ({"tools": [dict(TOOL, command=["no-such-program-x"])], "cells": [GOOD_CELL]},
             "tools[0].command: no-such-program-x: not found on PATH, or not executable there"),
            ({"tools": [dict(TOOL, command=["./missing.py"])], "cells": [GOOD_CELL]},
             "tools[0].command: ./missing.py: not found (looked for "),
            ({"tools": [dict(TOOL, command=["./data"])], "cells": [GOOD_CELL]},
             "tools[0].command: ./data: not a regular file"),
            ({"tools": [TOOL, TOOL], "cells": [GOOD_CELL]},
             "tools[1].name: a tool of that name is defined above"),
            ({"tools": [dict(TOOL, input_schema={"type": "array"})], "cells": [GOOD_CELL]},
             "tools[0].input_schema: "),
        ]
        for content, expected in cases:
            with self.subTest(expected=expected):
                self.refused(content, expected)

    def test_a_tool_entry_is_checked_the_same_at_every_entry_point(self):
        """serve, describe, run --config and run --tools refuse the same entries, and nothing
        is cut or widened in silence."""
        script = os.path.join(self.dir, "tool.py")
        with open(script, "w") as f:
            f.write("#!/bin/sh\ncat\n")
        schema = {"type": "object", "properties": {"x": {"type": "float"}}}
        cases = [
            (dict(TOOL, timeout_ms=60000),
             ('tool "echo" has timeout_ms 60000, over the cell\'s tool_call_ms 10000',
              "tools[0].timeout_ms: 60000 is over the cell's tool_call_ms 10000")),
            (dict(TOOL, input_schema=schema),
             ('tools[0].input_schema: properties.x.type: "float" is not a JSON Schema type',) * 2),
            (dict(TOOL, input_schema={"type": "object", "properties": {"x": {"type": "strng"}}}),
             ('did you mean "string"?',) * 2),
            (dict(TOOL, input_schema={"type": "object", "properties": {"x": {}},
                                      "required": ["y"]}),
             ('tools[0].input_schema: "required" names "y", which "properties" does not '
              "define",) * 2),
            (dict(TOOL, inputSchema={}),
             ('tools[0].inputSchema: unknown key (did you mean "input_schema"?',) * 2),
            (dict(TOOL, timout_ms=5),
             ('tools[0].timout_ms: unknown key (did you mean "timeout_ms"?',) * 2),
            (dict(TOOL, command=["./tool.py"]),
             (f"tools[0].command: ./tool.py: not executable (chmod +x {os.path.realpath(self.dir)}/tool.py)",) * 2),
        ]
        for tool, (in_config, in_tools_file) in cases:
            with self.subTest(tool=tool):
                config = {"tools": [tool], "cells": [cell(tools=["echo"])]}
                self.refused(config, "")
                path = os.path.join(self.dir, "cells.json")
                for verb in (["serve", "--config", path], ["describe", "--config", path],
                             ["run", "--config", path, "-e", "1"]):
                    r = codecell(*verb, stdin="")
                    self.assertEqual(r.code, 2, r)
                    self.assertIn(in_config, r.stderr)
                tools = os.path.join(self.dir, "tools.json")
                with open(tools, "w") as f:
                    json.dump({"tools": [tool]}, f)
                r = codecell("run", "--tools", tools, "-e", "1")
                self.assertEqual(r.code, 2, r)
                self.assertIn(in_tools_file, r.stderr)

    def test_a_tool_timeout_within_the_cell_limit_is_kept(self):
        config = {"tools": [dict(TOOL, timeout_ms=60000)],
                  "cells": [cell(tools=["echo"], limits={"tool_call_ms": 60000})]}
        path = os.path.join(self.dir, "cells.json")
        with open(path, "w") as f:
            json.dump(config, f)
        r = codecell("describe", "--config", path)
        self.assertEqual(r.code, 0, r)

    def test_keys_put_in_the_wrong_place_or_mistyped_get_a_guess(self):
        cases = [
            ({"cells": [cell(mounst=[])]}, 'cells[0].mounst: unknown key (did you mean "mounts"?'),
            ({"cells": [cell(timout_ms=5)]},
             'cells[0].timout_ms: unknown key (a limit goes inside "limits": did you mean '
             '"limits": {"timeout_ms": …}?)'),
            ({"cells": [cell(limits={"timout_ms": 5})]},
             'cells[0].limits.timout_ms: unknown limit (did you mean "timeout_ms"?'),
            ({"cells": [cell(zzz=1)]}, "cells[0].zzz: unknown key (known: name, language"),
            ({"cells": [GOOD_CELL], "mcp_server": {}},
             'mcp_server: unknown key (did you mean "mcp_servers"?'),
        ]
        for content, expected in cases:
            with self.subTest(expected=expected):
                self.refused(content, expected)

    def test_an_exec_folder_another_cell_writes_is_refused(self):
        # What a guest writes through one cell's read-write mount would run in the other.
        os.chmod(self.dir, 0o755)
        os.chmod(os.path.join(self.dir, "data"), 0o755)
        data = os.path.realpath(os.path.join(self.dir, "data"))
        rw = {"source": "data", "dest": "/d", "mode": "rw"}
        ex = {"source": "data", "dest": "/x", "mode": "exec"}
        why = "a folder a guest can write cannot hold code that runs"
        cases = [
            ([cell(name="a", mounts=[rw]), cell(name="b", mounts=[ex])],
             f"cells[1].mounts[0]: {data} overlaps the read-write mount of cells[0] at /d: {why}"),
            ([cell(name="a", mounts=[ex]), cell(name="b", mounts=[rw])],
             f"cells[0].mounts[0]: {data} overlaps the read-write mount of cells[1] at /d: {why}"),
            ([cell(name="a", mounts=[dict(rw, source=".")]),
              cell(name="b", libraries=[{"path": "data", "mode": "exec"}])],
             f"cells[1].libraries[0]: {data} overlaps the read-write mount of cells[0] at /d: {why}"),
        ]
        for cells, expected in cases:
            with self.subTest(expected=expected):
                self.refused({"cells": cells}, expected)

    def test_not_json(self):
        self.refused('{"cells": [', ":1: ")
        self.refused('{"cells": [], "cells": []}', ":1: duplicate object key")

    def test_missing_file(self):
        r = codecell("serve", "--config", os.path.join(self.dir, "none.json"), stdin="")
        self.assertEqual(r.code, 2, r)
        self.assertIn("none.json", r.stderr)


class NothingCreatedOnError(unittest.TestCase):
    """The whole file is checked before any cell is created: a bad second cell leaves the
    good first one uncreated. Creating a cell that names an interpreter probes it (runs it on
    the host), which this interpreter records in a file."""

    def setUp(self):
        # Not under /tmp: the interpreter's folder is bound into the sandbox, whose /tmp is its
        # own.
        d = tempfile.mkdtemp(prefix="codecell-e2e-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        # As root the probe runs as nobody: it must reach the wrapper and write the record.
        os.chmod(d, 0o777)
        os.mkdir(os.path.join(d, "bin"), 0o755)
        self.record = os.path.join(d, "probed")
        self.interpreter = os.path.join(d, "bin", "python3")
        with open(self.interpreter, "w") as f:
            f.write(f'#!/bin/sh\necho run >> {self.record}\nexec /usr/bin/python3 "$@"\n')
        os.chmod(self.interpreter, 0o755)
        self.path = os.path.join(d, "cells.json")

    def describe(self, *cells):
        with open(self.path, "w") as f:
            json.dump({"cells": [{"name": "first", "language": "python", "pool": 0,
                                  "interpreter": self.interpreter}, *cells]}, f)
        return codecell("describe", "--config", self.path)

    def test_a_bad_second_cell_leaves_the_first_uncreated(self):
        # Good, the file creates the first cell, whose probe leaves its record.
        r = self.describe(cell(name="second"))
        self.assertEqual(r.code, 0, r)
        self.assertTrue(os.path.exists(self.record), "creating the cell probes its interpreter")
        os.unlink(self.record)
        r = self.describe(cell(name="second", colour="red"))
        self.assertEqual(r.code, 2, r)
        self.assertIn(f"{self.path}: cells[1].colour: unknown key", r.stderr)
        self.assertFalse(os.path.exists(self.record), "the first cell was created")


class GoodFiles(unittest.TestCase):
    def test_relative_sources_resolve_against_the_file(self):
        d = tempdir(self)
        os.mkdir(os.path.join(d, "data"))
        with open(os.path.join(d, "data", "f.txt"), "w") as f:
            f.write("found")
        path = os.path.join(d, "cells.json")
        with open(path, "w") as f:
            json.dump({"tools": [TOOL], "cells": [cell(
                description="Reads f.txt.",
                mounts=[{"source": "data", "dest": "/data", "description": "the folder"}],
                tools=["echo"], limits={"timeout_ms": 5000},
                sessions={"max": 3, "idle_ms": 120000})]}, f)
        r = codecell("describe", "--config", path, "--json")
        self.assertEqual(r.code, 0, r)
        # The cell's tool, then the companion tool of its sessions.
        tool, companion = json.loads(r.stdout)
        self.assertEqual(companion["name"], "sessions")
        self.assertEqual(tool["name"], "ruby")
        self.assertTrue(tool["description"].startswith("Reads f.txt.\n\n"))
        self.assertIn("- `/data` — the folder", tool["description"])
        self.assertIn("### echo", tool["description"])
        self.assertIn("after\n120 s unused it is parked", tool["description"])
        self.assertIn("At most 3 are open at once.", tool["description"])
        self.assertEqual(tool["inputSchema"]["required"], ["code"])
        text = codecell("describe", "--config", path)
        self.assertEqual(text.code, 0, text)
        self.assertTrue(text.stdout.startswith('# tool "ruby"\n\nReads f.txt.'))

    def test_describe_config_refuses_cell_flags(self):
        r = codecell("describe", "--config", "x.json", "--mount", "/tmp:/d")
        self.assertEqual(r.code, 2)
        self.assertIn("no --lang, --mount", r.stderr)
        r = codecell("describe", "--json")
        self.assertEqual(r.code, 2)
        self.assertIn("--json needs --config", r.stderr)
        r = codecell("describe", "--cell", "ruby")
        self.assertEqual(r.code, 2)
        self.assertIn("--cell NAME needs --config FILE", r.stderr)

    def test_describe_one_cell_of_a_file(self):
        path = os.path.join(EXAMPLES, "cells.json")
        r = codecell("describe", "--config", path, "--cell", "python", "--json")
        self.assertEqual(r.code, 0, r)
        self.assertEqual([t["name"] for t in json.loads(r.stdout)], ["python"])
        r = codecell("describe", "--config", path, "--cell", "python")
        self.assertEqual(r.code, 0, r)
        self.assertTrue(r.stdout.startswith('# tool "python"\n'), r.stdout[:200])
        self.assertNotIn('# tool "ruby"', r.stdout)
        r = codecell("describe", "--config", path, "--cell", "cobol")
        self.assertEqual(r.code, 2)
        self.assertIn("--cell cobol: ", r.stderr)
        self.assertIn("has no such cell (it has: ruby python", r.stderr)


if __name__ == "__main__":
    unittest.main()
