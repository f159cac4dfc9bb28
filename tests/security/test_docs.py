"""docs/security.md lists the hostile-code suite as it is: the block between its markers is
generated from tests/security (every test, and the probe's expected answer per system call).
`python3 tests/security/test_docs.py --write` regenerates it; this test fails when it is stale."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "security.md")
BEGIN = "<!-- generated from tests/security by test_docs.py: do not edit -->"
END = "<!-- end of generated block -->"

sys.path.insert(0, HERE)
import test_hostile  # noqa: E402
import test_probe  # noqa: E402


def generated():
    lines = [BEGIN, "", "`tests/security/test_hostile.py`, each case in Ruby and in Python:", ""]
    for name in dir(test_hostile):
        cls = getattr(test_hostile, name)
        if not (isinstance(cls, type) and issubclass(cls, unittest.TestCase)):
            continue
        tests = sorted(t for t in dir(cls) if t.startswith("test_"))
        lines.append(f"- **{name}**: " + "; ".join(t[5:].replace("_", " ") for t in tests) + ".")
    lines += ["", "`tests/security/test_probe.py`: the system call, and what the kernel answers "
              "inside the sandbox (the same in Ruby and in Python, as root and as a normal user), "
              "in a cell without and with subprocesses:",
              "", "| call | answer | with subprocesses |", "|---|---|---|"]
    lines += [f"| `{call}` | {answer} | {test_probe.WITH_SUBPROCESSES.get(call, answer)} |"
              for call, answer in test_probe.EXPECTED.items()]
    lines += ["", END]
    return "\n".join(lines)


def current():
    text = open(DOC).read()
    start, end = text.find(BEGIN), text.find(END)
    return text, start, end


class DocsMatchTheSuite(unittest.TestCase):
    def test_security_md_lists_every_case(self):
        text, start, end = current()
        self.assertGreaterEqual(start, 0, "docs/security.md has no generated block")
        self.assertEqual(text[start:end + len(END)], generated(),
                         "docs/security.md is stale: run python3 tests/security/test_docs.py --write")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        text, start, end = current()
        with open(DOC, "w") as f:
            f.write(text[:start] + generated() + text[end + len(END):])
    else:
        unittest.main()
