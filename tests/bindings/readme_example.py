#!/usr/bin/env python3
"""readme_example.py README -- COMMAND...: runs the complete example of a binding's README as
it is written there and checks that it prints what the README says it prints.

The example is the first fenced block under "## A complete example" (```python or ```ruby);
what it prints is the fenced block that follows the paragraph starting "It prints". The
example runs in an empty folder, as the README tells its reader to, as COMMAND followed by the
example's file."""
import difflib
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def blocks(readme):
    """(the example's language, its code, what it prints) from the README's text."""
    section = readme.index("## A complete example\n")
    fences = list(FENCE.finditer(readme, section))
    if not fences or fences[0].group(1) not in ("python", "ruby"):
        sys.exit("readme_example: no ```python or ```ruby block under \"## A complete example\"")
    prints = readme.find("\nIt prints", fences[0].end())
    later = [f for f in fences[1:] if f.start() > prints] if prints >= 0 else []
    if not later:
        sys.exit("readme_example: no block of what the example prints (\"It prints …\")")
    return fences[0].group(1), fences[0].group(2), later[0].group(2)


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: readme_example.py README -- COMMAND...")
    with open(sys.argv[1], encoding="utf-8") as f:
        language, code, expected = blocks(f.read())
    with tempfile.TemporaryDirectory(prefix="codecell-readme.") as folder:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "example." + {"python": "py", "ruby": "rb"}[language])
        with open(path, "w", encoding="utf-8") as f:
            f.write(code)
        run = subprocess.run(sys.argv[3:] + [path], cwd=folder, capture_output=True, text=True,
                             timeout=600)
    if run.returncode != 0 or run.stdout != expected:
        sys.stderr.write("readme_example: %s's example exited with %d\n%s" % (
            sys.argv[1], run.returncode, run.stderr))
        sys.stderr.writelines(difflib.unified_diff(
            expected.splitlines(True), run.stdout.splitlines(True), "the README says",
            "the example printed"))
        return 1
    print("%s: the complete example (%d lines) printed the %d lines the README shows"
          % (sys.argv[1], code.count("\n"), expected.count("\n")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
