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
        for folder, subfolders, _ in os.walk(self.root):  # a test's unreadable ones too
            for name in subfolders:
                os.chmod(os.path.join(folder, name), 0o755)
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

    def test_what_only_the_whole_declaration_shows_raises_at_definition(self):
        # The engine has room for 34 mounts beside its own: the 40th is refused now, not at
        # the first run.
        many = [codecell.mount("other", "/m%d" % i) for i in range(40)]
        with self.assertRaisesRegex(ValueError,
                                    r"^Invalid declaration of Many: too many mounts \(at most \d+\)"):
            type("Many", (codecell.Tool,), {"mounts": many})
        with self.assertRaisesRegex(ValueError, "^Invalid declaration of Bad: pool"):
            type("Bad", (codecell.Tool,), {"cell_options": {"pool": 1000}})
        with self.assertRaisesRegex(ValueError, "^Invalid declaration of Bad: output folder /nowhere"):
            type("Bad", (codecell.Tool,), {"cell_options": {"image_folder": "/nowhere"}})
        with self.assertRaisesRegex(TypeError, "^Bad.cell_options: .*colour"):
            type("Bad", (codecell.Tool,), {"cell_options": {"colour": "red"}})

    def test_src_is_reserved_as_in_the_seed(self):
        for dest in ("/src", "/src/app", "/src/app/lib"):
            with self.subTest(dest), self.assertRaisesRegex(
                    ValueError, "^Invalid mount '.*/other' => '%s': .*dest overlaps the reserved "
                                "/src$" % dest):
                type("Broken", (codecell.Tool,), {"mounts": [codecell.mount("other", dest)]})
        ok = type("Sources", (codecell.Tool,), {"mounts": [codecell.mount("other", "/srcs")]})
        self.defined.append(ok)

    def test_unreadable_folders_raise_at_definition(self):
        locked = os.path.join(self.root, "locked")
        os.mkdir(locked, 0o000)  # not even its owner may read it
        os.chmod(os.path.join(self.root, "other"), 0o555)

        def refusals():
            for mount, words in ((codecell.mount("locked", "/l"), "is not readable for"),
                                 (codecell.mount_rw("other", "/o"),
                                  "is not readable and writable for")):
                try:
                    type("Broken", (codecell.Tool,), {"mounts": [mount]})
                except ValueError as e:
                    if not str(e).startswith("Invalid mount ") or words not in str(e):
                        return "wrong error: %s" % e
                else:
                    return "accepted %s" % mount.dest
            return "ok"

        # As root the guest gets the owner's bits (an idmapped mount); as a user, the user's.
        self.assertEqual(refusals(), "ok")
        fine = type("Fine", (codecell.Tool,), {"mounts": [codecell.mount("other", "/o")]})
        self.defined.append(fine)
        self.assertEqual(fine()("import os\nos.listdir('/o')")["value"], [])
        if os.geteuid() != 0:
            return
        # And a user who cannot read a folder of root's, in a child that drops to nobody.
        os.chmod(locked, 0o700)
        os.chmod(os.path.join(self.root, "other"), 0o755)
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(reader)
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                answer = refusals()
            except BaseException as e:
                answer = "raised %r" % e
            os.write(writer, answer.encode()[:4000])
            os._exit(0)
        os.close(writer)
        with os.fdopen(reader, "rb") as f:
            answer = f.read().decode()
        os.waitpid(pid, 0)
        self.assertEqual(answer, "ok")

    def test_a_call_never_raises(self):
        gone = os.path.join(self.root, "gone")
        os.mkdir(gone)

        class Fragile(codecell.Tool):
            mounts = [codecell.mount("gone", "/gone")]
        self.defined.append(Fragile)
        os.rmdir(gone)  # after the definition: the cell cannot be made
        result = Fragile()("1 + 1")
        self.assertEqual(sorted(result), ["error", "status"])
        self.assertEqual(result["status"], "sandbox_error")
        self.assertEqual(sorted(result["error"]), ["class", "message"])
        self.assertEqual(result["error"]["class"], "ValueError")
        self.assertIn("does not exist", result["error"]["message"])
        os.mkdir(gone)  # back: the next call makes the cell
        self.assertEqual(Fragile()("1 + 1"), {"status": "ok", "value": 2})
        # Code that is not a string, as a model may send: told, not raised.
        result = Fragile()(42)
        self.assertEqual(result["status"], "error")
        self.assertEqual(result["error"]["class"], "TypeError")
        self.assertIn("code must be a string", result["error"]["message"])

    def test_subclasses_inherit_their_parents_mounts(self):
        parent = self.analytics()

        class Child(parent):
            mounts = [codecell.mount("other", "/other", "more")]
        self.defined.append(Child)
        self.assertEqual([m.dest for m in Child._all_mounts], ["/data", "/workspace", "/other"])
        self.assertEqual([m.dest for m in parent._all_mounts], ["/data", "/workspace"])
        self.assertIn("- `/other` — more", Child().description)
        self.assertEqual(Child()("import os\nlen(os.listdir('/data'))")["value"], 1)
        cell = parent.cell()
        with self.assertRaisesRegex(ValueError, "^Invalid mount "):
            type("Again", (parent,), {"mounts": [codecell.mount("other", "/data")]})
        with self.assertRaisesRegex(ValueError, "^Invalid declaration of Again: too many"):
            type("Again", (parent,), {"mounts": [codecell.mount("other", "/m%d" % i)
                                                 for i in range(40)]})
        # A refused declaration changed nothing: the parent's mounts and cell are as they were.
        self.assertEqual([m.dest for m in parent._all_mounts], ["/data", "/workspace"])
        self.assertIs(parent.cell(), cell)
        self.assertEqual(parent()("import os\nsorted(os.listdir('/'))")["status"], "ok")

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
