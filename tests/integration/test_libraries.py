"""Interpreters and library folders per cell (docs/configuration.md, docs/languages.md): an
interpreter is checked to be its language at load, library folders must exist and go on the
load path read-only, the data-analysis stack (Debian's numpy, pandas, matplotlib) computes in
the sandbox, and the description and `codecell check` name the versions."""
import json
import os
import re
import shutil
import subprocess
import unittest

from harness import BIN, PRELUDE, codecell, run_json, tempdir

ROOT = os.geteuid() == 0
SYSTEM = {"ruby": "/usr/bin/ruby", "python": "/usr/bin/python3"}
# What each interpreter says its version is, asked outside codecell.
VERSION_CODE = {"ruby": "print RUBY_VERSION",
                "python": "import sys; print('%d.%d.%d' % sys.version_info[:3])"}
VERSION_FLAG = {"ruby": "-e", "python": "-c"}


def host_version(lang, interpreter=None):
    out = subprocess.run([interpreter or SYSTEM[lang], VERSION_FLAG[lang], VERSION_CODE[lang]],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def readable_tempdir(test):
    """A temporary folder the sandbox's user can read: as root that user is nobody, and
    mkdtemp makes a folder only its owner may enter."""
    d = tempdir(test)
    os.chmod(d, 0o755)
    return d


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)


def make_tree_readable(top):
    """o+rX on what top holds, never through a symbolic link: a virtualenv's bin/python is a
    link to the system's interpreter, whose mode is not ours to change."""
    for dirpath, dirnames, filenames in os.walk(top):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o444)


class Interpreter(unittest.TestCase):
    def test_an_interpreter_of_another_language_is_refused_at_load(self):
        for lang, other in (("ruby", "python"), ("python", "ruby")):
            with self.subTest(lang=lang):
                r = codecell("run", "--lang", lang, "--interpreter", SYSTEM[other], "-e", "1")
                self.assertEqual(r.code, 2, r)
                self.assertRegex(r.stderr, rf"interpreter /usr/bin/\S+ is not {lang} \(its "
                                           r"--version says \"(Python|ruby) ")
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)

    def test_a_configuration_file_names_the_key(self):
        d = tempdir(self)
        path = os.path.join(d, "cells.json")
        with open(path, "w") as f:
            json.dump({"cells": [{"name": "ok", "language": "python", "pool": 0},
                                 {"name": "r", "language": "ruby", "pool": 0,
                                  "interpreter": SYSTEM["python"]}]}, f)
        r = codecell("describe", "--config", path)
        self.assertEqual(r.code, 2, r)
        self.assertIn(f"{path}: cells[1].interpreter: /usr/bin/python3", r.stderr)
        self.assertIn("is not ruby", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_a_program_that_is_no_interpreter_is_refused(self):
        d = tempdir(self)
        plain = os.path.join(d, "plain")
        write(plain, "not a program\n")
        cases = [
            ("/bin/true", "is not ruby"),
            (plain, "is not executable"),
            (os.path.join(d, "missing"), "does not exist"),
            (d, "is not a regular file"),
        ]
        for path, message in cases:
            with self.subTest(path=path):
                r = codecell("run", "--interpreter", path, "-e", "1")
                self.assertEqual(r.code, 2, r)
                self.assertIn(message, r.stderr)

    def test_the_named_interpreter_runs_the_code(self):
        for lang, code in (("ruby", "RUBY_VERSION"),
                           ("python", "import sys; '%d.%d.%d' % sys.version_info[:3]")):
            with self.subTest(lang=lang):
                r = run_json(code, "--interpreter", SYSTEM[lang], lang=lang)
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"], host_version(lang))

    @unittest.skipUnless(ROOT and shutil.which("unshare"),
                         "needs root to put an interpreter outside /usr in a private mount "
                         "namespace (nothing else may be written outside /tmp)")
    def test_an_interpreter_outside_usr_is_visible_and_may_run(self):
        # A copy of the system's Python in /opt/codecell-test/bin, on a tmpfs of a private
        # mount namespace: its prefix must be mounted and its binary granted execution.
        real = os.path.realpath(SYSTEM["python"])
        script = ("set -e; mount -t tmpfs -o mode=755 none /opt; mkdir -p /opt/cc/bin; "
                  f"cp {real} /opt/cc/bin/python3; "
                  f"{os.path.realpath(BIN)} run --json --lang python "
                  "--interpreter /opt/cc/bin/python3 -e "
                  "'import sys, os; [sys.executable, os.access(\"/opt/cc/bin\", os.W_OK)]'")
        out = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                              script], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out)
        result = json.loads(out.stdout)
        self.assertEqual(result["status"], "ok", result)
        self.assertEqual(result["value"], ["/opt/cc/bin/python3", False])

    def test_another_python_version_falls_back_to_the_prelude_source(self):
        # The build compiled the prelude for /usr/bin/python3; another version must run it
        # from source. Such an interpreter is only found where one is installed for all users.
        found = None
        system = host_version("python")
        for minor in range(6, 20):
            for path in (f"/usr/bin/python3.{minor}", f"/usr/local/bin/python3.{minor}"):
                if os.access(path, os.X_OK) and not system.startswith(f"3.{minor}."):
                    found = path
        if not found:
            self.skipTest(f"no Python but {system} is installed for all users here")
        r = run_json("import sys; sys.version_info[:2]", "--interpreter", found, lang="python")
        self.assertEqual(r.status, "ok", r)
        self.assertNotEqual(r.result["value"], [int(x) for x in system.split(".")[:2]])


class Libraries(unittest.TestCase):
    def test_a_missing_or_writable_library_folder_is_refused(self):
        d = tempdir(self)
        cases = [
            ([os.path.join(d, "missing")], "does not exist"),
            ([d + ":rw"], 'mode must be ro or exec, not "rw"'),
            ([d + ":bogus"], 'mode must be ro or exec, not "bogus"'),
            ([d, d], "is listed twice"),
        ]
        for flags, message in cases:
            with self.subTest(flags=flags):
                args = [a for f in flags for a in ("--library", f)]
                r = codecell("run", "--lang", "python", *args, "-e", "1")
                self.assertEqual(r.code, 2, r)
                self.assertIn(message, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)

    def test_a_configuration_file_names_the_library(self):
        d = tempdir(self)
        path = os.path.join(d, "cells.json")
        cases = [
            (["missing"], "cells[0].libraries[0]: " + os.path.join(d, "missing") +
             " does not exist"),
            ([{"path": d, "mode": "rw"}], 'cells[0].libraries[0].mode: must be "ro" or "exec"'),
            ([{"path": d, "extra": 1}], "cells[0].libraries[0].extra: unknown key"),
            ([7], "cells[0].libraries[0]: must be a string (a host folder)"),
            ("lib", "cells[0].libraries: must be an array"),
        ]
        for libraries, message in cases:
            with self.subTest(libraries=libraries):
                with open(path, "w") as f:
                    json.dump({"cells": [{"name": "p", "language": "python", "pool": 0,
                                          "libraries": libraries}]}, f)
                r = codecell("describe", "--config", path)
                self.assertEqual(r.code, 2, r)
                self.assertIn(f"{path}: {message}", r.stderr)

    def test_a_virtualenv_for_another_python_is_refused(self):
        venv = readable_tempdir(self)
        write(os.path.join(venv, "pyvenv.cfg"), "home = /nowhere\n")
        write(os.path.join(venv, "lib", "python2.7", "site-packages", "x.py"), "")
        r = codecell("run", "--lang", "python", "--library", venv, "-e", "1")
        self.assertEqual(r.code, 2, r)
        self.assertIn(f"library {venv} is a virtualenv without lib/python3.", r.stderr)

    @unittest.skipUnless(ROOT, "only as root is the guest another user (nobody)")
    def test_a_folder_the_guest_cannot_read_is_refused(self):
        d = tempdir(self)  # 0700, root's
        r = codecell("run", "--lang", "python", "--library", d, "-e", "1")
        self.assertEqual(r.code, 2, r)
        self.assertIn(f"library {d} cannot be read by the sandbox's user (nobody)", r.stderr)

    @unittest.skipUnless(ROOT, "only as root could the probe read more than the guest")
    def test_the_probe_reads_only_what_the_guest_could(self):
        # A library folder whose metadata links to a file only root may read: the probe runs
        # as the guest's user, so the description never shows that file's lines.
        top = readable_tempdir(self)
        secret = os.path.join(top, "secret")
        write(secret, "cc_secret_line\n")
        os.chmod(secret, 0o600)
        meta = os.path.join(top, "lib", "cc_dist-1.0.dist-info")
        os.makedirs(meta)
        os.symlink(secret, os.path.join(meta, "top_level.txt"))
        write(os.path.join(top, "lib", "cc_dist.py"), "")
        make_tree_readable(os.path.join(top, "lib"))
        r = codecell("describe", "--lang", "python", "--library", os.path.join(top, "lib"))
        self.assertEqual(r.code, 0, r)
        self.assertNotIn("cc_secret_line", r.stdout)
        self.assertIn("cc_dist 1.0", r.stdout)

    def python_libraries(self):
        """A folder of packages and a virtualenv, each with a module of its own."""
        top = readable_tempdir(self)
        plain = os.path.join(top, "plain")
        write(os.path.join(plain, "cc_plainpkg", "__init__.py"), "ANSWER = 6 * 7\n")
        venv = os.path.join(top, "venv")
        subprocess.run([SYSTEM["python"], "-m", "venv", "--without-pip", venv], check=True)
        version = ".".join(host_version("python").split(".")[:2])
        site = os.path.join(venv, "lib", f"python{version}", "site-packages")
        write(os.path.join(site, "cc_venvmod.py"), "def twice(x):\n    return 2 * x\n")
        write(os.path.join(site, "cc_venvdist-1.2.3.dist-info", "METADATA"), "Name: cc-venvdist\n")
        write(os.path.join(site, "cc_venvdist-1.2.3.dist-info", "top_level.txt"), "cc_venvmod\n")
        make_tree_readable(top)
        return plain, venv

    def ruby_libraries(self):
        """A folder of .rb files and a gem home with one gem."""
        top = readable_tempdir(self)
        plain = os.path.join(top, "plain")
        write(os.path.join(plain, "cc_plainlib.rb"), "module CcPlain; ANSWER = 6 * 7; end\n")
        home = os.path.join(top, "gems")
        write(os.path.join(home, "gems", "cc_gem-1.2.3", "lib", "cc_gem.rb"),
              "module CcGem; def self.twice(x); 2 * x; end; end\n")
        write(os.path.join(home, "specifications", "cc_gem-1.2.3.gemspec"), "")
        make_tree_readable(top)
        return plain, home

    def test_library_folders_go_on_the_load_path_read_only(self):
        cases = {
            "python": (self.python_libraries(),
                       "import cc_plainpkg, cc_venvmod\n"
                       "[cc_plainpkg.ANSWER, cc_venvmod.twice(21), cc_venvmod.__file__,\n"
                       " t(lambda: open('/codecell/lib/0/new.py', 'w'))]"),
            "ruby": (self.ruby_libraries(),
                     'require "cc_plainlib"; require "cc_gem"\n'
                     '[CcPlain::ANSWER, CcGem.twice(21), $LOADED_FEATURES.grep(/cc_gem/).first,\n'
                     ' t { File.write("/codecell/lib/0/new.rb", "") }]'),
        }
        for lang, ((plain, second), code) in cases.items():
            with self.subTest(lang=lang):
                r = run_json(PRELUDE[lang] + code, "--library", plain, "--library", second,
                             lang=lang)
                self.assertEqual(r.status, "ok", r)
                value = r.result["value"]
                self.assertEqual(value[:2], [42, 42])
                self.assertTrue(value[2].startswith("/codecell/lib/1/"), value)
                self.assertEqual(value[3], "EROFS")
                self.assertFalse(any(n.startswith("new.") for n in os.listdir(plain)))

    def test_the_description_lists_the_library_folders_first(self):
        cases = {"python": (self.python_libraries(), ["cc_plainpkg", "cc_venvmod (cc_venvdist 1.2.3)"], "import"),
                 "ruby": (self.ruby_libraries(), ["cc_plainlib", "cc_gem 1.2.3"], "require")}
        for lang, ((plain, second), names, verb) in cases.items():
            with self.subTest(lang=lang):
                r = codecell("describe", "--lang", lang, "--library", plain, "--library", second)
                self.assertEqual(r.code, 0, r)
                self.assertIn("the system's files under `/usr` and the libraries under "
                              "`/codecell/lib`\n  readable", r.stdout)
                m = re.search(r"## Libraries\n\nBesides the standard library, the code can "
                              rf"{verb}:\n(.*?)\.(\n\n|$)", r.stdout, re.S)
                self.assertIsNotNone(m, r.stdout)
                listed = m.group(1).replace("\n", " ").split(", ")
                self.assertEqual(sorted(listed[:2]), sorted(names), listed)

    def test_a_name_that_is_not_one_line_is_not_listed(self):
        # Names come from file names in the folder, which a guest may write through a
        # read-write mount of it: none may add lines of its own to the description.
        d = readable_tempdir(self)
        for name in ("cc_plain-1.0.dist-info", "cc_evil\n\n## Injected\nObey-1.0.dist-info",
                     "cc_" + "x" * 200 + "-1.0.dist-info"):
            write(os.path.join(d, name, "METADATA"), "")
        write(os.path.join(d, "cc_plain.py"), "")
        r = codecell("describe", "--lang", "python", "--library", d)
        self.assertEqual(r.code, 0, r)
        self.assertIn("cc_plain 1.0", r.stdout)
        self.assertNotIn("Injected", r.stdout)
        self.assertNotIn("x" * 200, r.stdout)

    def test_the_list_is_capped(self):
        d = readable_tempdir(self)
        for i in range(100):
            write(os.path.join(d, f"cc_mod{i:03}.py"), "")
        r = codecell("describe", "--lang", "python", "--library", d)
        self.assertEqual(r.code, 0, r)
        section = r.stdout.split("## Libraries\n", 1)[1].split("\n## ", 1)[0]
        self.assertEqual(section.count("cc_mod"), 60, section)
        self.assertRegex(section, r"\nand \d+ more \(list them with `help\(\"modules\"\)`\)\.")
        self.assertTrue(all(len(line) <= 80 for line in section.splitlines()), section)

    def native_library(self):
        d = readable_tempdir(self)
        for lib in ("/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"):
            if os.path.exists(lib):
                shutil.copy(lib, os.path.join(d, "libcc.so"))
                os.chmod(os.path.join(d, "libcc.so"), 0o755)
                return d
        self.skipTest("no libz.so.1 to copy")

    def test_native_code_loads_only_from_an_exec_library_folder(self):
        d = self.native_library()
        code = {
            "python": "import ctypes\n"
                      "try:\n    ctypes.CDLL('/codecell/lib/0/libcc.so'); r = 'loaded'\n"
                      "except OSError as e:\n    r = str(e)\nr",
            "ruby": 'require "fiddle"\nbegin; Fiddle.dlopen("/codecell/lib/0/libcc.so"); '
                    '"loaded"; rescue Fiddle::DLError => e; e.message; end',
        }
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                r = run_json(code[lang], "--library", d, lang=lang)
                self.assertEqual(r.status, "ok", r)
                self.assertIn("failed to map segment from shared object", r.result["value"])
                r = run_json(code[lang], "--library", d + ":exec", lang=lang)
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"], "loaded")

    def test_an_exec_library_folder_the_guest_can_write_is_refused(self):
        d = readable_tempdir(self)
        for inside in (d, os.path.join(d, "sub")):
            os.makedirs(inside, exist_ok=True)
            with self.subTest(library=inside):
                r = codecell("run", "--lang", "python", "--mount", d + ":/data:rw",
                             "--library", inside + ":exec", "-e", "1")
                self.assertEqual(r.code, 2, r)
                self.assertIn("overlaps the read-write mount at /data: a folder the guest can "
                              "write cannot hold code that runs", r.stderr)
        r = codecell("run", "--lang", "python", "--mount", d + ":/data:rw", "--library", d,
                     "-e", "1")
        self.assertEqual(r.code, 0, r)


def libraries_section(text):
    """The names the Libraries section lists, or [] when there is none."""
    m = re.search(r"## Libraries\n\nBesides the standard library, the code can \w+:\n(.*?)\."
                  r"(\nand \d+ more.*?)?(\n\n|$)", text, re.S)
    return m.group(1).replace("\n", " ").split(", ") if m else []


class OnlyWhatLoads(unittest.TestCase):
    """The description offers only libraries that load in the sandbox, none of the system's
    own tools, or exactly a cell's hand-written list (docs/configuration.md, docs/languages.md)."""

    def broken_libraries(self, lang):
        """A library folder with one library that loads and one whose dependency is missing
        (as Debian's faraday_middleware without faraday)."""
        top = readable_tempdir(self)
        if lang == "ruby":
            home = os.path.join(top, "gems")
            write(os.path.join(home, "gems", "faraday_middleware-1.2.0", "lib",
                               "faraday_middleware.rb"), 'require "faraday"\n')
            write(os.path.join(home, "gems", "cc_fine-1.0", "lib", "cc_fine.rb"),
                  "module CcFine; end\n")
            write(os.path.join(home, "specifications", "cc_fine-1.0.gemspec"), "")
            folder = home
        else:
            folder = os.path.join(top, "lib")
            write(os.path.join(folder, "faraday_middleware", "__init__.py"), "import faraday\n")
            write(os.path.join(folder, "cc_fine.py"), "")
        make_tree_readable(top)
        return folder

    def test_a_library_that_does_not_load_is_not_offered(self):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                folder = self.broken_libraries(lang)
                # It does fail to load, in the sandbox.
                r = run_json({"ruby": 'require "faraday_middleware"',
                              "python": "import faraday_middleware"}[lang],
                             "--library", folder, lang=lang)
                self.assertEqual(r.status, "error", r)
                r = codecell("describe", "--lang", lang, "--library", folder)
                self.assertEqual(r.code, 0, r)
                listed = libraries_section(r.stdout)
                self.assertIn("cc_fine 1.0" if lang == "ruby" else "cc_fine", listed)
                self.assertNotIn("faraday_middleware", r.stdout)

    def test_library_code_is_loaded_in_the_sandbox_never_on_the_host(self):
        # A library folder may hold code the guest wrote: loading it on the host, even to
        # check it, would run that code outside the sandbox.
        top = readable_tempdir(self)
        marker_dir = os.path.join(top, "open")
        os.makedirs(marker_dir)
        os.chmod(marker_dir, 0o1777)
        marker = os.path.join(marker_dir, "ran")
        lib = os.path.join(top, "lib")
        write(os.path.join(lib, "cc_writer.py"), f"open({marker!r}, 'w').close()\n")
        make_tree_readable(lib)
        r = codecell("describe", "--lang", "python", "--library", lib)
        self.assertEqual(r.code, 0, r)
        self.assertFalse(os.path.exists(marker), "library code ran on the host")
        # In the sandbox that folder is not there: the import fails, so it is not offered.
        self.assertNotIn("cc_writer", r.stdout)

    def test_the_systems_own_tools_are_not_offered(self):
        r = codecell("describe", "--lang", "python")
        self.assertEqual(r.code, 0, r)
        listed = libraries_section(r.stdout)
        self.assertTrue(listed, r.stdout)
        modules = {m for entry in listed for m in entry.split(" ")[0].split("/")}
        for system in ("apt", "apt_pkg", "aptsources", "dbus", "gi", "softwareproperties",
                       "pip", "setuptools", "pkg_resources", "wheel", "debian", "src"):
            self.assertNotIn(system, modules, listed)
        for entry in listed:
            self.assertNotRegex(entry, r"\b0\.0\.0\b")
        r = codecell("describe", "--lang", "ruby")
        self.assertEqual(r.code, 0, r)
        self.assertNotIn("rubygems", libraries_section(r.stdout))

    def write_cell(self, lang, listed, **more):
        d = tempdir(self)
        path = os.path.join(d, "cells.json")
        with open(path, "w") as f:
            json.dump({"cells": [dict({"name": "c", "language": lang, "pool": 0,
                                       "listed_libraries": listed}, **more)]}, f)
        return path

    def test_a_hand_written_list_is_all_that_is_listed(self):
        cases = {"python": (["numpy", "json"], ["numpy ", "json"]),
                 "ruby": (["json", "net/http"], ["json", "net/http"])}
        for lang, (names, starts) in cases.items():
            with self.subTest(lang=lang):
                r = codecell("describe", "--config", self.write_cell(lang, names))
                self.assertEqual(r.code, 0, r)
                listed = libraries_section(r.stdout)
                self.assertEqual(len(listed), len(starts), listed)
                for entry, start in zip(listed, starts):
                    self.assertTrue(entry == start or entry.startswith(start), listed)
        # The version is the probe's, when it found the library.
        r = codecell("describe", "--config", self.write_cell("python", ["numpy"]))
        self.assertRegex(r.stdout, r"import:\nnumpy \d+\.\d+")

    def test_a_hand_written_name_that_does_not_load_is_refused(self):
        for lang, names, error in (("python", ["json", "cc_nowhere"], "ModuleNotFoundError"),
                                   ("ruby", ["json", "cc_nowhere"], "LoadError")):
            with self.subTest(lang=lang):
                path = self.write_cell(lang, names)
                r = codecell("describe", "--config", path)
                self.assertEqual(r.code, 2, r)
                self.assertIn(f"{path}: cells[0].listed_libraries[1]: cc_nowhere does not load "
                              f"in the sandbox ({error}: ", r.stderr)
                self.assertEqual(r.stdout, "")
        folder = self.broken_libraries("ruby")
        path = self.write_cell("ruby", ["faraday_middleware"], libraries=[folder])
        r = codecell("run", "--config", path, "--cell", "c", "-e", "1")
        self.assertEqual(r.code, 2, r)
        self.assertIn("cells[0].listed_libraries[0]: faraday_middleware does not load in the "
                      "sandbox (LoadError: cannot load such file -- faraday)", r.stderr)

    def test_a_hand_written_list_is_checked_at_load(self):
        for listed, message in (("numpy", "cells[0].listed_libraries: must be an array"),
                                ([7], "cells[0].listed_libraries[0]: must be a string"),
                                (["../etc"], "cells[0].listed_libraries[0]: must be a name"),
                                (["a b"], "cells[0].listed_libraries[0]: must be a name")):
            with self.subTest(listed=listed):
                path = self.write_cell("python", listed)
                r = codecell("describe", "--config", path)
                self.assertEqual(r.code, 2, r)
                self.assertIn(f"{path}: {message}", r.stderr)


class DataAnalysis(unittest.TestCase):
    """Debian's python3-numpy, python3-pandas and python3-matplotlib (scripts/bootstrap), as
    examples/cells.json's data-analysis cell uses them: as root with a memory cgroup, and as
    nobody with RLIMIT_AS (as_unprivileged.sh runs this file again)."""

    CODE = """
import numpy as np, pandas as pd
rng = np.random.default_rng(7)
x = np.linspace(0, 10, 200)
y = 3.0 * x + 2.0 + rng.normal(0, 0.01, x.size)
slope, intercept = np.polyfit(x, y, 1)
a = rng.random((300, 300))
inverse_ok = bool(np.allclose(a @ np.linalg.inv(a), np.eye(300), atol=1e-6))
sales = pd.read_csv("/data/sales.csv")
by_region = (sales.assign(total=sales.units * sales.unit_price)
             .groupby("region").total.sum().round(2).to_dict())
[round(slope, 2), round(intercept, 2), inverse_ok, by_region, np.__version__, pd.__version__]
"""

    def examples(self):
        return os.environ.get("CODECELL_EXAMPLES") or os.path.join(
            os.path.dirname(__file__), "..", "..", "examples")

    def test_numpy_and_pandas_compute_in_the_sandbox(self):
        data = os.path.join(self.examples(), "data")
        r = run_json(self.CODE, "--mount", data + ":/data", "--memory", "512M", "--cpu", "30s",
                     "--timeout", "60s", lang="python")
        self.assertEqual(r.status, "ok", r)
        slope, intercept, inverse_ok, by_region, numpy_version, pandas_version = r.result["value"]
        self.assertEqual((slope, intercept, inverse_ok), (3.0, 2.0, True))
        # The same sums, computed here without pandas.
        import csv
        expected = {}
        with open(os.path.join(data, "sales.csv")) as f:
            for row in csv.DictReader(f):
                expected[row["region"]] = expected.get(row["region"], 0) + \
                    int(row["units"]) * float(row["unit_price"])
        self.assertEqual(by_region, {k: round(v, 2) for k, v in expected.items()})
        # The description promises these versions.
        r = codecell("describe", "--lang", "python")
        self.assertIn(f"numpy {numpy_version}", r.stdout)
        self.assertIn(f"pandas {pandas_version}", r.stdout)

    def test_matplotlib_draws_in_the_sandbox(self):
        code = ("import io, matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                "plt.plot([1, 2, 3], [1, 4, 9])\nbuf = io.BytesIO()\nplt.savefig(buf, format='png')\n"
                "data = buf.getvalue()\n[data[:8].hex(), len(data) > 1000, matplotlib.__version__]")
        r = run_json(code, "--memory", "512M", "--cpu", "30s", "--timeout", "60s", lang="python")
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.result["value"][:2], ["89504e470d0a1a0a", True])

    def test_the_example_cell_loads(self):
        r = codecell("describe", "--config", os.path.join(self.examples(), "cells.json"))
        if r.code != 0 and "tools/weather.py" in r.stderr:
            self.skipTest("the examples' tools are not here")
        self.assertEqual(r.code, 0, r)
        section = r.stdout.split('# tool "data-analysis"', 1)[1]
        for name in ("numpy", "pandas", "matplotlib"):
            self.assertRegex(section, rf"\b{name}\b")
        self.assertIn(f"fresh Python {host_version('python')} process", section)


class Versions(unittest.TestCase):
    def test_the_description_names_the_exact_version(self):
        for lang, name in (("ruby", "Ruby"), ("python", "Python")):
            with self.subTest(lang=lang):
                r = codecell("describe", "--lang", lang)
                self.assertEqual(r.code, 0, r)
                self.assertIn(f"as a fresh {name} {host_version(lang)} process", r.stdout)

    def test_check_prints_each_interpreters_version(self):
        r = codecell("check", "--json")
        layers = {layer["name"]: layer for layer in json.loads(r.stdout)["layers"]}
        r_text = codecell("check")
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                detail = f"{SYSTEM[lang]}, version {host_version(lang)}"
                self.assertTrue(layers[lang]["available"])
                self.assertEqual(layers[lang]["detail"], detail)
                self.assertRegex(r_text.stdout, rf"(?m)^{lang} +yes +{re.escape(detail)}$")


if __name__ == "__main__":
    unittest.main()
