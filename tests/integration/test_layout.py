"""The engine's layout against its map (src/lib/README.md, src/lib/wings.cmake): every file of
src/lib lives in a wing the build compiles, every include a wing writes finds its header in
that wing or in one below it, the wings use each other one way, and the front ends and the
zygote's programs reach only what they are allowed. The build refuses most of this by itself
(each wing sees only its own folder and the folders below); this test also refuses what the
build cannot see: a path in an include that steps around the folders, a header that two wings
both have (which would let the wrong one be found, and breaks the bindings' one-folder copy), a
file no wing compiles, and a map that says otherwise than the code."""
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
LIB = os.path.join(ROOT, "src", "lib")
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
# What the front ends and the zygote's programs may include beside their own folder's headers.
ALLOWED_OUTSIDE = {"src/cli": {"base"}, "src/mcp": {"base"}, "src/zygote": {"walls"}}
# Their targets in CMakeLists.txt, whose include folders must say the same.
TARGETS = {"src/cli": ["codecell"], "src/mcp": ["codecell_mcp"],
           "src/zygote": ["codecell_zygote", "codecell_init"]}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def wing_map():
    """{wing: (uses, sources)} in the order wings.cmake declares them."""
    text = re.sub(r"#.*", "", read(os.path.join(LIB, "wings.cmake")))
    wings = {}
    for body in re.findall(r"codecell_wing\(([^)]*)\)", text, re.S):
        words = body.split()
        if words[0] == "name":  # the function's own definition
            continue
        name, rest = words[0], words[1:]
        uses, sources, into = [], [], None
        for w in rest:
            if w in ("USES", "SOURCES"):
                into = uses if w == "USES" else sources
            else:
                into.append(w)
        wings[name] = (uses, [s for s in sources if not s.startswith("${")])
    return wings


def closure(wings, name, seen=None):
    """The wings name may include from: itself and every wing below it that it uses."""
    seen = set() if seen is None else seen
    for used in wings[name][0]:
        if used not in seen:
            seen.add(used)
            closure(wings, used, seen)
    return seen | {name}


def includes(path):
    return INCLUDE_LINE.findall(read(path))


class Layout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.wings = wing_map()
        cls.home = {}  # header or source name -> its wing
        for wing in cls.wings:
            for name in os.listdir(os.path.join(LIB, wing)):
                cls.home.setdefault(name, []).append(wing)

    def test_every_file_of_src_lib_is_in_a_wing(self):
        for entry in os.listdir(LIB):
            path = os.path.join(LIB, entry)
            if os.path.isdir(path):
                self.assertIn(entry, self.wings, f"src/lib/{entry}/ is not a wing of wings.cmake")
            else:
                self.assertIn(entry, ("README.md", "wings.cmake"),
                              f"src/lib/{entry} belongs in a wing's folder")

    def test_the_build_compiles_every_source_of_a_wing(self):
        for wing, (_, sources) in self.wings.items():
            on_disk = {f for f in os.listdir(os.path.join(LIB, wing)) if f.endswith(".c")}
            self.assertEqual(on_disk, set(sources), f"src/lib/{wing}: wings.cmake lists other sources")

    def test_names_are_unique_across_the_wings(self):
        for name, homes in self.home.items():
            self.assertEqual(len(homes), 1, f"{name} is in {', '.join(homes)}")

    def test_no_front_end_header_shadows_the_engines(self):
        """A program that sees both (a fuzz target, a unit test) would find the wrong one by
        the order of its include folders: the engine's own file, compiled there, too."""
        for folder in ALLOWED_OUTSIDE:
            for name in os.listdir(os.path.join(ROOT, folder)):
                if name.endswith(".h"):
                    self.assertNotIn(name, self.home,
                                     f"{folder}/{name} has the name of src/lib/"
                                     f"{self.home.get(name, ['?'])[0]}/{name}")

    def test_wings_use_each_other_one_way(self):
        order = list(self.wings)
        for wing, (uses, _) in self.wings.items():
            for used in uses:
                self.assertIn(used, self.wings, f"{wing} uses {used}, which is no wing")
                self.assertLess(order.index(used), order.index(wing),
                                f"{wing} uses {used}, declared above it")

    def test_no_include_runs_upward(self):
        for wing in self.wings:
            allowed = closure(self.wings, wing)
            for name in os.listdir(os.path.join(LIB, wing)):
                if not name.endswith((".c", ".h")):
                    continue
                for inc in includes(os.path.join(LIB, wing, name)):
                    where = f"src/lib/{wing}/{name} includes \"{inc}\""
                    self.assertNotIn("/", inc, f"{where}: by a path, around the wings")
                    if inc == "codecell.h":
                        continue
                    self.assertIn(inc, self.home, f"{where}, which no wing has")
                    self.assertIn(self.home[inc][0], allowed,
                                  f"{where}, a header of {self.home[inc][0]}/, which {wing}/ "
                                  "does not use")

    def test_front_ends_and_the_zygote_reach_only_what_they_may(self):
        for folder, wings in ALLOWED_OUTSIDE.items():
            own = set(os.listdir(os.path.join(ROOT, folder)))
            for name in sorted(own):
                if not name.endswith((".c", ".h")):
                    continue
                for inc in includes(os.path.join(ROOT, folder, name)):
                    where = f"{folder}/{name} includes \"{inc}\""
                    self.assertNotIn("/", inc, f"{where}: by a path")
                    if inc in own or inc == "codecell.h" or inc in _mcp_headers(folder):
                        continue
                    self.assertIn(inc, self.home, f"{where}, which is nowhere")
                    self.assertIn(self.home[inc][0], wings,
                                  f"{where}, a header of the engine's {self.home[inc][0]}/ "
                                  f"({folder} may use include/ and {', '.join(sorted(wings))}/)")

    def test_the_build_gives_them_only_those_headers(self):
        """What the include lines above keep to, the compiler holds them to: an include of
        another wing's header does not compile in a front end."""
        text = re.sub(r"#.*", "", read(os.path.join(ROOT, "CMakeLists.txt")))
        for folder, targets in TARGETS.items():
            allowed = {"include"} | {f"src/lib/{w}" for w in ALLOWED_OUTSIDE[folder]}
            for target in targets:
                given = re.findall(rf"target_include_directories\(\s*{target}\s([^)]*)\)", text)
                self.assertTrue(given, f"CMakeLists.txt gives {target} no include folders")
                for word in " ".join(given).split():
                    word = re.sub(r"^\$\{CMAKE_(CURRENT_)?SOURCE_DIR\}/", "", word)
                    where = f"CMakeLists.txt gives {target} ({folder}) {word}"
                    self.assertNotEqual(word, "${ENGINE_INCLUDE_DIRS}", f"{where}: every wing")
                    if word.startswith("src/lib"):
                        self.assertIn(word, allowed, where)

    def test_the_map_lists_the_wings_in_order(self):
        table = re.findall(r"^\| `([a-z_]+)/` \| ([^|]*) \|", read(os.path.join(LIB, "README.md")),
                           re.M)
        self.assertEqual([w for w, _ in table], list(self.wings))
        for wing, uses in table:
            said = [] if "nothing" in uses else [u.strip() for u in uses.split(",")]
            self.assertEqual(said, self.wings[wing][0], f"README.md says {wing} uses {uses}")


def _mcp_headers(folder):
    """The command (src/cli) builds on the MCP server's library and may include its headers."""
    if folder != "src/cli":
        return set()
    return {f for f in os.listdir(os.path.join(ROOT, "src", "mcp")) if f.endswith(".h")}


if __name__ == "__main__":
    unittest.main()
