"""The man pages against what they describe: each command's options in codecell(1) are those
of its --help (and of docs/cli.md), the keys of codecell.json(5) those of the configuration
schema, the functions of libcodecell(3) those of codecell.h; and each page renders without a
warning."""
import json
import os
import re
import subprocess
import unittest

from harness import BIN

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
MAN = os.path.join(ROOT, "man")
COMMANDS = ("run", "repl", "serve", "describe", "check")


def read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


def unescape(roff):
    return roff.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").replace("\\fI", "")


def options(text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*[a-z])", text))


def help_text(*args):
    r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def man_sections(page):
    """{".SS name" or ".SH name": its text} of a roff page."""
    parts = re.split(r"^\.(S[HS]) (.*)$", page, flags=re.M)
    return {parts[i + 1].strip('"'): parts[i + 2] for i in range(1, len(parts) - 1, 3)}


def defined_terms(section):
    """The bold word after each .TP: what a tagged paragraph defines."""
    return re.findall(r"^\.TP\n\.B\s+(\S+)$", section, flags=re.M)


class CommandPage(unittest.TestCase):
    page = unescape(read("man", "codecell.1"))
    sections = man_sections(page)

    def test_each_command_lists_exactly_its_options(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                documented = options(self.sections["codecell " + command])
                self.assertEqual(documented, options(help_text(command, "--help")))

    def test_global_options(self):
        self.assertEqual(options(self.sections["GLOBAL OPTIONS"]), options(help_text("--help")))
        for command in COMMANDS + ("help",):
            self.assertIn("codecell " + command, self.sections,
                          f"codecell(1) has no section for {command}")
        listed = re.findall(r"^  (\w+) ", help_text("--help"), flags=re.M)
        self.assertEqual(set(listed), set(COMMANDS) | {"help"})

    def test_docs_cli_names_every_option(self):
        docs = read("docs", "cli.md")
        chapters = dict(re.findall(r"^## `codecell (\w+)`\n(.*?)(?=^## |\Z)", docs,
                                   flags=re.M | re.S))
        for command in COMMANDS:
            with self.subTest(command=command):
                self.assertLessEqual(options(help_text(command, "--help")) - {"--help"},
                                     options(chapters[command]))

    def test_every_command_line_in_the_docs_uses_real_options(self):
        """README.md and docs/*.md: each `codecell VERB …` they show (in a code block or inline)
        uses only options VERB's --help lists."""
        known = {c: options(help_text(c, "--help")) for c in COMMANDS}
        files = ["README.md"] + [os.path.join("docs", f) for f in sorted(os.listdir(
            os.path.join(ROOT, "docs"))) if f.endswith(".md")]
        pattern = re.compile(r"(?:^|[\s`(/])codecell (run|repl|serve|describe|check)\b([^`\n]*)")
        seen = 0
        for name in files:
            for verb, rest in pattern.findall(read(name)):
                if rest.startswith(":"):
                    continue  # "codecell serve: …" is a message the command printed
                # Past a pipe, a comment or a "--" that ends the options, it is someone else's.
                rest = re.split(r"\s(?:\||#|--\s|>)", " " + rest)[0]
                for option in options(rest):
                    seen += 1
                    with self.subTest(file=name, verb=verb, option=option):
                        self.assertIn(option, known[verb], f"{name}: codecell {verb}{rest}")
        self.assertGreater(seen, 50)

    def test_exit_codes_match_the_help(self):
        codes = re.findall(r"^\.B (\d)$", self.sections["EXIT STATUS"], flags=re.M)
        self.assertEqual(codes, ["0", "1", "2", "3", "4"])
        self.assertIn("0 ok, 1 guest error, 2 usage or configuration error, 3 limit hit",
                      " ".join(help_text("--help").split()))


class ConfigurationPage(unittest.TestCase):
    def test_every_schema_key_is_defined_and_no_other(self):
        schema = json.loads(read("docs", "configuration.schema.json"))
        keys = set()

        # A tool's input_schema is JSON Schema itself: its keywords are not the file's keys.
        schema["$defs"].pop("argument_schema")

        def walk(node):
            if isinstance(node, dict):
                for key, sub in node.get("properties", {}).items():
                    keys.add(key)
                    if key != "input_schema":
                        walk(sub)
                for key, sub in node.items():
                    if key != "properties":
                        walk(sub)
            elif isinstance(node, list):
                for sub in node:
                    walk(sub)

        walk(schema)
        page = unescape(read("man", "codecell.json.5"))
        self.assertEqual(set(defined_terms(page)), keys)


class LibraryPage(unittest.TestCase):
    def test_every_function_of_the_header_is_named(self):
        header = read("include", "codecell.h")
        functions = set(re.findall(r"CODECELL_API\s+[^;(]*?\b(codecell_\w+)\s*\(", header))
        page = unescape(read("man", "libcodecell.3"))
        named = set(re.findall(r"\b(codecell_\w+) ?\(\)", page))
        self.assertEqual(named, functions)


class Rendering(unittest.TestCase):
    def test_pages_render_without_warnings(self):
        for page in ("codecell.1", "codecell.json.5", "libcodecell.3"):
            with self.subTest(page=page):
                r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z",
                                    os.path.join(MAN, page)], capture_output=True, text=True)
                self.assertEqual((r.returncode, r.stderr), (0, ""))

    def test_version_in_the_pages_is_the_header_s(self):
        version = re.search(r'#define CODECELL_VERSION "([^"]+)"',
                            read("include", "codecell.h")).group(1)
        for page in ("codecell.1", "codecell.json.5", "libcodecell.3"):
            self.assertIn(f'"codecell {version}"', read("man", page).splitlines()[1], page)


if __name__ == "__main__":
    unittest.main()
