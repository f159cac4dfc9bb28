"""make install / cmake --install into a DESTDIR: every file where it belongs, the soname, the
exported symbols (exactly the header's functions), a program built with pkg-config alone,
shared and static, and bash completion."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import BIN, tempdir

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.path.dirname(os.path.abspath(BIN))
# The flags the library was built with (a sanitizer's runtime, under make sanitize): a program
# linked against it needs the same.
C_FLAGS = os.environ.get("CODECELL_C_FLAGS", "").split()
SANITIZED = any(f.startswith("-fsanitize=") for f in C_FLAGS)
HEADER = os.path.join(ROOT, "include", "codecell.h")

# A program of the kind docs/api.md shows: a run, its JSON, and the version it was built with
# beside the one it runs on.
APP = r"""
#include <codecell.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
        codecell_error err;
        codecell_config *config = codecell_config_new("ruby", &err);
        codecell_cell *cell = config ? codecell_cell_new(config, &err) : NULL;
        codecell_config_free(config);
        if (!cell) {
                fprintf(stderr, "%s\n", err.message);
                return 1;
        }
        codecell_result *res;
        const char *code = "6 * 7";
        if (codecell_cell_run(cell, code, strlen(code), &res, &err) < 0) {
                fprintf(stderr, "%s\n", err.message);
                return 1;
        }
        char *json = codecell_result_to_json(res, false);
        printf("%s %s %s\n", CODECELL_VERSION, codecell_version(), json);
        free(json);
        codecell_result_free(res);
        codecell_cell_free(cell);
        return 0;
}
"""


def header_functions():
    with open(HEADER) as f:
        text = f.read()
    return set(re.findall(r"CODECELL_API\s+[^;(]*?\b(codecell_\w+)\s*\(", text))


def header_version():
    with open(HEADER) as f:
        return re.search(r'#define CODECELL_VERSION "([^"]+)"', f.read()).group(1)


def install(destdir, prefix):
    env = dict(os.environ, DESTDIR=destdir)
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def build_and_run(test, root, prefix, static):
    """cc app.c $(pkg-config …) against the tree under root, and the program's output line."""
    d = tempdir(test)
    with open(os.path.join(d, "app.c"), "w") as f:
        f.write(APP)
    libdir = None
    for dirpath, _, files in os.walk(root + prefix):
        if "codecell.pc" in files:
            libdir = os.path.dirname(dirpath)
    test.assertIsNotNone(libdir, "no codecell.pc under " + root)
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"),
               PKG_CONFIG_SYSROOT_DIR=root)
    env.pop("PKG_CONFIG_LIBDIR", None)
    flags = ["--static"] if static else []

    def pkg_config(*what):
        r = subprocess.run(["pkg-config", *flags, *what, "codecell"], env=env,
                           capture_output=True, text=True, check=True)
        return r.stdout.split()

    cflags, libs = pkg_config("--cflags"), pkg_config("--libs")
    test.assertIn("-I" + root + prefix + "/include", cflags)
    out = os.path.join(d, "app")
    cmd = ["cc", *C_FLAGS, "-o", out, os.path.join(d, "app.c"), *cflags,
           *(["-static"] if static else []), *libs]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    test.assertEqual(r.returncode, 0, " ".join(cmd) + "\n" + r.stderr)
    # The program finds libcodecell.so.0 in the staged tree, not in the build directory.
    run_env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": libdir}
    r = subprocess.run([out], capture_output=True, text=True, env=run_env, timeout=120)
    test.assertEqual(r.returncode, 0, r.stderr)
    return out, r.stdout


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dest = tempfile.mkdtemp(prefix="codecell-install-")
        cls.prefix = "/usr/local"
        install(cls.dest, cls.prefix)
        cls.root = cls.dest + cls.prefix

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dest)

    def path(self, relative):
        return os.path.join(self.root, relative)

    def test_files_are_where_they_belong(self):
        for f in ["bin/codecell", "lib/libcodecell.a", "lib/libcodecell.so",
                  "lib/libcodecell.so.0", "include/codecell.h", "lib/pkgconfig/codecell.pc",
                  "share/man/man1/codecell.1", "share/man/man5/codecell.json.5",
                  "share/man/man3/libcodecell.3", "share/bash-completion/completions/codecell",
                  "lib/systemd/system/codecell.service", "lib/systemd/system/codecell.socket"]:
            self.assertTrue(os.path.exists(self.path(f)), f)
        # Nothing is written outside DESTDIR: the tree holds only PREFIX.
        self.assertEqual(os.listdir(self.dest), ["usr"])
        self.assertEqual(os.readlink(self.path("lib/libcodecell.so")), "libcodecell.so.0")
        self.assertEqual(os.readlink(self.path("lib/libcodecell.so.0")),
                         f"libcodecell.so.{header_version()}")

    def test_paths_inside_files_name_the_prefix_not_destdir(self):
        with open(self.path("lib/pkgconfig/codecell.pc")) as f:
            pc = f.read()
        self.assertIn("prefix=/usr/local\n", pc)
        self.assertIn(f"Version: {header_version()}\n", pc)
        self.assertNotIn(self.dest, pc)
        with open(self.path("lib/systemd/system/codecell.service")) as f:
            self.assertIn("ExecStart=/usr/local/bin/codecell serve ", f.read())

    def test_soname_and_exported_symbols(self):
        lib = self.path("lib/libcodecell.so.0")
        r = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True)
        self.assertIn("Library soname: [libcodecell.so.0]", r.stdout)
        r = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                           check=True)
        exported = {line.split()[-1] for line in r.stdout.splitlines() if line.strip()}
        # Exactly the public API: nothing of the engine's insides is part of the ABI.
        self.assertEqual(exported, header_functions())

    def test_installed_command_runs(self):
        r = subprocess.run([self.path("bin/codecell"), "--version"], capture_output=True,
                           text=True)
        self.assertEqual(r.stdout, f"codecell {header_version()}\n")

    def test_program_built_with_pkg_config_shared(self):
        app, out = build_and_run(self, self.dest, self.prefix, static=False)
        v = header_version()
        self.assertTrue(out.startswith(f"{v} {v} "), out)
        self.assertIn('"status":"ok","value":42', out)
        r = subprocess.run(["ldd", app], capture_output=True, text=True,
                           env={"LD_LIBRARY_PATH": self.path("lib")})
        self.assertRegex(r.stdout, r"libcodecell\.so\.0 => " + re.escape(self.path("lib")))

    @unittest.skipIf(SANITIZED, "the sanitizers' runtimes cannot be linked statically")
    def test_program_built_with_pkg_config_static(self):
        """--static: Libs.private and Requires.private bring libseccomp, jansson and pthread."""
        app, out = build_and_run(self, self.dest, self.prefix, static=True)
        self.assertIn('"status":"ok","value":42', out)
        r = subprocess.run(["readelf", "-d", app], capture_output=True, text=True)
        self.assertNotIn("NEEDED", r.stdout)  # nothing loaded at run time

    def test_make_install_passes_prefix_and_destdir(self):
        r = subprocess.run(["make", "-n", "-C", ROOT, "install", "PREFIX=/opt/x",
                            "DESTDIR=/stage"], capture_output=True, text=True, check=True)
        self.assertIn('DESTDIR="/stage" cmake --install build --prefix "/opt/x"', r.stdout)


class Completion(unittest.TestCase):
    """The completion script, sourced into bash, asked what it would offer."""

    def complete(self, *words):
        script = os.path.join(ROOT, "packaging", "bash-completion", "codecell")
        words_text = " ".join(f"'{w}'" for w in words)
        program = (f'source "{script}"; COMP_WORDS=({words_text}); '
                   f'COMP_CWORD={len(words) - 1}; _codecell; printf "%s\\n" "${{COMPREPLY[@]}}"')
        env = dict(os.environ, PATH=BUILD + ":" + os.environ["PATH"])
        r = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, text=True,
                           env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return set(r.stdout.split())

    def test_commands(self):
        self.assertEqual(self.complete("codecell", "re"), {"repl"})
        self.assertEqual(self.complete("codecell", "help", "s"), {"serve"})

    def test_options_come_from_the_commands_help(self):
        self.assertEqual(self.complete("codecell", "run", "--m"),
                         {"--mount", "--memory", "--max-output"})
        self.assertLessEqual({"--config", "--client-idle"}, self.complete("codecell", "serve", "--c"))

    def test_values(self):
        self.assertEqual(self.complete("codecell", "run", "--lang", "p"), {"python"})
        self.assertEqual(self.complete("codecell", "run", "--on-unsupported", ""),
                         {"warn", "raise", "ignore"})


if __name__ == "__main__":
    unittest.main()
