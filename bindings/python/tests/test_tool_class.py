"""codecell.Tool: the seed's mount declarations in Python."""
import os
import shutil
import tempfile
import unittest

import codecell


class ToolClassTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        os.chmod(self.root, 0o755)
        for d in ("data/input", "workspace", "other"):
            os.makedirs(os.path.join(self.root, d))
        with open(os.path.join(self.root, "data/input/sales.csv"), "w") as f:
            f.write("month,total\njan,10\n")
        os.chmod(os.path.join(self.root, "workspace"), 0o777)
        self.cwd = os.getcwd()
        os.chdir(self.root)  # the seed's relative sources are relative to it
        self.defined = []

    def tearDown(self):
        os.chdir(self.cwd)
        for cls in self.defined:
            cls.close()
        shutil.rmtree(self.root)

    def analytics(self):
        class Analytics(codecell.Tool):
            mounts = [
                codecell.mount("data/input", "/data", "CSV files with the raw data (read only)"),
                codecell.mount_rw("workspace", "/workspace",
                                  "Write generated reports and artifacts here"),
            ]
        self.defined.append(Analytics)
        return Analytics

    def test_the_seeds_example(self):
        cls = self.analytics()
        tool = cls()
        self.assertEqual(tool.name, "analytics")
        self.assertEqual(cls.mounts[0].source, os.path.join(self.root, "data/input"))
        os.chdir(self.cwd)  # expanded at definition: the working directory no longer matters
        result = tool("open('/workspace/r.md', 'w').write(str(len(open('/data/sales.csv')"
                      ".readlines())))\n'done'")
        self.assertEqual(result, {"status": "ok", "value": "done"})
        with open(os.path.join(self.root, "workspace/r.md")) as f:
            self.assertEqual(f.read(), "2")
        self.assertEqual(tool("open('/data/x', 'w')")["status"], "error")
        self.assertEqual(tool.input_schema["required"], ["code"])

    def test_the_description_is_the_seeds(self):
        text = self.analytics()().description
        self.assertTrue(text.startswith(
            "Executes Python code inside a secure sandbox and returns what it produced.\n\n"
            "## How to use\n"))
        self.assertIn("\n\n## Read-only folders (readable, never writable)\n"
                      "- `/data` — CSV files with the raw data (read only)", text)
        self.assertIn("\n\n## Read-write folders (readable and writable)\n"
                      "- `/workspace` — Write generated reports and artifacts here", text)
        self.assertNotIn("## Tools", text)

        class WithTools(self.analytics()):
            tools = {"lookup": lambda key: key.upper()}
        self.defined.append(WithTools)
        self.assertIn("## Tools", WithTools().description)
        self.assertEqual(WithTools()("sb.call('lookup', key='k')")["value"], "K")

    def test_names_from_class_names(self):
        for name, expected in (("SalesAnalytics", "sales_analytics"), ("WeatherTool", "weather"),
                               ("HTMLReport", "html_report")):
            self.assertEqual(codecell.tool_name(name), expected)
            self.assertEqual(type(name, (codecell.Tool,), {})().name, expected)

    def test_bad_declarations_raise_at_class_definition(self):
        cases = {
            "missing folder": [codecell.mount("nope", "/data")],
            "reserved dest": [codecell.mount("other", "/usr/share/x")],
            "relative dest": [codecell.mount("other", "data")],
            "overlapping dest": [codecell.mount("other", "/data"),
                                 codecell.mount("workspace", "/data/sub")],
            "duplicate dest": [codecell.mount("other", "/data"),
                               codecell.mount_rw("workspace", "/data")],
        }
        for what, mounts in cases.items():
            with self.subTest(what), self.assertRaisesRegex(ValueError, "^Invalid mount "):
                type("Broken", (codecell.Tool,), {"mounts": mounts})
        with self.assertRaises(ValueError):
            type("Broken", (codecell.Tool,), {"mounts": ["/data"]})
        with self.assertRaises(ValueError):
            type("Broken", (codecell.Tool,), {"language": "cobol"})
        with self.assertRaisesRegex(ValueError, "cannot be set by hand"):
            type("Broken", (codecell.Tool,), {"description": "by hand"})

    def test_subclasses_inherit_their_parents_mounts(self):
        parent = self.analytics()

        class Child(parent):
            mounts = [codecell.mount("other", "/other", "more")]
        self.defined.append(Child)
        self.assertEqual([m.dest for m in Child._all_mounts], ["/data", "/workspace", "/other"])
        self.assertEqual([m.dest for m in parent._all_mounts], ["/data", "/workspace"])
        self.assertIn("- `/other` — more", Child().description)
        self.assertEqual(Child()("import os\nlen(os.listdir('/data'))")["value"], 1)
        with self.assertRaisesRegex(ValueError, "^Invalid mount "):
            type("Again", (parent,), {"mounts": [codecell.mount("other", "/data")]})

    def test_limits_default_to_the_seeds_and_apply(self):
        cls = self.analytics()
        self.assertEqual((cls.timeout_ms, cls.fuel_ms), (30_000, 10_000))

        class Quick(cls):
            fuel_ms = 300
        self.defined.append(Quick)
        self.assertEqual(Quick.timeout_ms, 30_000)
        self.assertEqual(Quick()("while True: pass")["status"], "fuel_exhausted")

    def test_warmup_and_ruby(self):
        class RubyAnalytics(codecell.Tool):
            language = "ruby"
            mounts = [codecell.mount("data/input", "/data")]
        self.defined.append(RubyAnalytics)
        self.assertIs(RubyAnalytics.warmup(), RubyAnalytics)
        self.assertGreater(RubyAnalytics.cell().info()["pool_ready"], 0)
        self.assertEqual(RubyAnalytics()("Dir.children('/data')")["value"], ["sales.csv"])
        self.assertIn("Executes Ruby code", RubyAnalytics().description)


if __name__ == "__main__":
    unittest.main()
