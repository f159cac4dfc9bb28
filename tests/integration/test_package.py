"""The Debian packages: dpkg-buildpackage -us -uc -b on a copy of the source builds codecell,
libcodecell0 and libcodecell-dev; lintian finds no error; each holds what it should; unpacked
with dpkg -x (not installed), the command runs code and a program builds with pkg-config
against the unpacked library and runs on it."""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import tempdir
from test_install import build_and_run, header_functions, header_version

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TOOLS = ("dpkg-buildpackage", "dh", "lintian", "dpkg-deb")
MISSING = [t for t in TOOLS if not shutil.which(t)]
PACKAGES = ("codecell", "libcodecell0", "libcodecell-dev")


def source_files():
    """The tree as a clean clone has it (tracked and new files, nothing ignored)."""
    r = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"],
                       capture_output=True, check=True)
    return [f for f in r.stdout.decode().split("\0") if f and os.path.exists(os.path.join(ROOT, f))]


class Versions(unittest.TestCase):
    def test_debian_changelog_carries_the_header_version(self):
        with open(os.path.join(ROOT, "debian", "changelog")) as f:
            first = f.readline()
        self.assertEqual(re.match(r"codecell \(([^)]+)\)", first).group(1), header_version())

    def test_symbols_file_lists_the_header_functions(self):
        with open(os.path.join(ROOT, "debian", "libcodecell0.symbols")) as f:
            symbols = set(re.findall(r"^ (codecell_\w+)@Base ", f.read(), flags=re.M))
        self.assertEqual(symbols, header_functions())


@unittest.skipIf(MISSING, f"not installed: {', '.join(MISSING)} (scripts/bootstrap installs them)")
class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="codecell-deb-")
        source = os.path.join(cls.work, f"codecell-{header_version()}")
        for f in source_files():
            os.makedirs(os.path.dirname(os.path.join(source, f)), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, f), os.path.join(source, f), follow_symlinks=False)
        env = dict(os.environ, DEB_BUILD_OPTIONS="parallel=2")
        r = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=source, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1500)
        if r.returncode != 0:
            shutil.rmtree(cls.work)
            raise AssertionError("dpkg-buildpackage failed:\n" + r.stdout[-6000:] + r.stderr[-4000:])
        cls.debs = {}
        for path in glob.glob(os.path.join(cls.work, "*.deb")):
            name = os.path.basename(path).split("_")[0]
            cls.debs[name] = path
        cls.root = os.path.join(cls.work, "root")
        for name in PACKAGES:
            subprocess.run(["dpkg", "-x", cls.debs[name], cls.root], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work)

    def field(self, package, name):
        r = subprocess.run(["dpkg-deb", "-f", self.debs[package], name], capture_output=True,
                           text=True, check=True)
        return r.stdout.strip()

    def contents(self, package):
        r = subprocess.run(["dpkg-deb", "-c", self.debs[package]], capture_output=True,
                           text=True, check=True)
        # "-rw-r--r-- root/root 123 2026-11-30 12:00 ./usr/lib/x.so.0 -> x.so.0.1.0"
        paths = [line.split(None, 5)[5].split(" -> ")[0].lstrip(".")
                 for line in r.stdout.splitlines() if not line.startswith("d")]
        return {p for p in paths if not p.startswith("/usr/share/doc/")}

    def test_three_packages_and_their_relations(self):
        self.assertLessEqual(set(PACKAGES), set(self.debs))
        for name in PACKAGES:
            self.assertEqual(self.field(name, "Version"), header_version())
        self.assertIn("libseccomp2", self.field("codecell", "Depends"))
        self.assertIn(f"libcodecell0 (= {header_version()})",
                      self.field("libcodecell-dev", "Depends"))

    def test_lintian_finds_no_error(self):
        changes = glob.glob(os.path.join(self.work, "*.changes"))
        r = subprocess.run(["lintian", "--fail-on", "error", *changes], capture_output=True,
                           text=True, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotRegex(r.stdout, r"(?m)^E: ")

    def test_each_package_holds_its_files(self):
        arch = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True,
                              text=True, check=True).stdout.strip()
        lib = f"/usr/lib/{arch}"
        v = header_version()
        self.assertEqual(self.contents("libcodecell0"),
                         {f"{lib}/libcodecell.so.{v}", f"{lib}/libcodecell.so.0"})
        self.assertEqual(self.contents("libcodecell-dev"),
                         {"/usr/include/codecell.h", f"{lib}/libcodecell.a",
                          f"{lib}/libcodecell.so", f"{lib}/pkgconfig/codecell.pc",
                          "/usr/share/man/man3/libcodecell.3.gz"})
        self.assertLessEqual({"/usr/bin/codecell", "/usr/share/man/man1/codecell.1.gz",
                              "/usr/share/man/man5/codecell.json.5.gz",
                              "/usr/share/bash-completion/completions/codecell",
                              "/lib/systemd/system/codecell.service",
                              "/lib/systemd/system/codecell.socket",
                              "/lib/systemd/system/codecell@.service",
                              "/etc/codecell/cells.json"}, self.contents("codecell"))

    def test_scaling_files_are_shipped(self):
        # docs/scaling.md (compressed, as dh_compress does to long documents) and the nginx
        # configuration it explains, under /usr/share/doc.
        doc = os.path.join(self.root, "usr/share/doc/codecell")
        self.assertTrue(os.path.exists(os.path.join(doc, "examples", "codecell.conf")))
        self.assertTrue(os.path.exists(os.path.join(doc, "scaling.md")) or
                        os.path.exists(os.path.join(doc, "scaling.md.gz")))

    def test_unit_names_the_packaged_binary(self):
        with open(os.path.join(self.root, "lib/systemd/system/codecell.service")) as f:
            self.assertIn("ExecStart=/usr/bin/codecell serve --config /etc/codecell/cells.json",
                          f.read())

    def test_unpacked_command_runs_code(self):
        codecell = os.path.join(self.root, "usr/bin/codecell")
        r = subprocess.run([codecell, "--version"], capture_output=True, text=True)
        self.assertEqual(r.stdout, f"codecell {header_version()}\n")
        r = subprocess.run([codecell, "run", "--json", "-e", "[1, 2].sum + 39"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        result = json.loads(r.stdout)
        self.assertEqual((result["status"], result["value"]), ("ok", 42))
        # The packaged configuration loads as it ships.
        r = subprocess.run([codecell, "describe", "--config",
                            os.path.join(self.root, "etc/codecell/cells.json")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_program_built_against_the_unpacked_library(self):
        app, out = build_and_run(self, self.root, "/usr", static=False)
        v = header_version()
        self.assertTrue(out.startswith(f"{v} {v} "), out)
        self.assertIn('"status":"ok","value":42', out)
        libdir = os.path.dirname(glob.glob(os.path.join(self.root, "usr/lib/*/libcodecell.so.0"))[0])
        r = subprocess.run(["ldd", app], capture_output=True, text=True,
                           env={"LD_LIBRARY_PATH": libdir})
        self.assertRegex(r.stdout, r"libcodecell\.so\.0 => " + re.escape(libdir))

    def test_static_program_built_against_the_unpacked_library(self):
        app, out = build_and_run(self, self.root, "/usr", static=True)
        self.assertIn('"status":"ok","value":42', out)


if __name__ == "__main__":
    unittest.main()
