"""Approval before effects through the package: a tool registered with approval=True writes a
file on the host only when the cell's approve function says True; a decline, a reason, an
exception, a function that never answers, or none at all never runs it, and the guest (Python
and Ruby) rescues the ToolError."""
import os
import tempfile
import threading
import time
import unittest

import codecell

RESCUED = {
    "python": "try:\n    m = sb.call('write', name=%r)\nexcept sb.ToolError as e:\n    m = 'refused: ' + str(e)\nm",
    "ruby": "begin; SB.call('write', name: %r); rescue SB::ToolError => e; 'refused: ' + e.message; end",
}


class ApprovalTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.asked = []

        def write(name):
            with open(os.path.join(self.dir, os.path.basename(name)), "w") as f:
                f.write("written")
            return True
        self.write = write

    def tearDown(self):
        for f in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, f))
        os.rmdir(self.dir)

    def cell(self, language, approve=None, approval_ms=5000, **kw):
        cell = codecell.Cell(language, pool=0, limits={"approval_ms": approval_ms}, approve=approve,
                             **kw)
        cell.tool("write", self.write, approval=True)
        self.addCleanup(cell.close)
        return cell

    def call(self, cell, language, name):
        return cell.run(RESCUED[language] % name)

    def wrote(self, name):
        return os.path.exists(os.path.join(self.dir, name))

    def test_each_language(self):
        for language in ("python", "ruby"):
            with self.subTest(language=language):
                self.accepted(language)
                self.declined(language)
                self.unasked(language)
                self.failing(language)
                self.unanswered(language)

    def accepted(self, language):
        def approve(tool, args):
            self.asked.append((tool, args, threading.current_thread().name))
            return True
        cell = self.cell(language, approve)
        self.assertIn("Needs approval", cell.description)
        r = self.call(cell, language, "ok-" + language)
        self.assertEqual(r.value, True, r.to_dict() if hasattr(r, "to_dict") else r)
        self.assertTrue(self.wrote("ok-" + language))
        self.assertEqual(self.asked[-1][:2], ("write", {"name": "ok-" + language}))

    def declined(self, language):
        cell = self.cell(language, lambda tool, args: "not today")
        r = self.call(cell, language, "no-" + language)
        self.assertEqual(r.value, "refused: approval declined: the call of \"write\" was not "
                                  "allowed: not today; it did not run")
        self.assertFalse(self.wrote("no-" + language))
        # A truthy answer that is not True is no approval.
        cell.set_approval(lambda tool, args: {"yes": 1})
        self.assertTrue(self.call(cell, language, "no-" + language).value.startswith(
            "refused: approval declined"))
        self.assertFalse(self.wrote("no-" + language))

    def unasked(self, language):
        cell = self.cell(language)
        r = self.call(cell, language, "unasked-" + language)
        self.assertTrue(r.value.startswith("refused: approval needed: \"write\" runs only when"),
                        r.value)
        self.assertFalse(self.wrote("unasked-" + language))

    def failing(self, language):
        def approve(tool, args):
            raise RuntimeError("the approver is down")
        cell = self.cell(language, approve)
        r = self.call(cell, language, "err-" + language)
        self.assertEqual(r.value, "refused: approval needed: \"write\" could not be approved: "
                                  "RuntimeError: the approver is down; it did not run")
        self.assertFalse(self.wrote("err-" + language))

    def unanswered(self, language):
        release = threading.Event()
        self.addCleanup(release.set)
        cell = self.cell(language, lambda tool, args: release.wait(30) and True, approval_ms=400)
        start = time.monotonic()
        r = self.call(cell, language, "late-" + language)
        self.assertGreaterEqual(time.monotonic() - start, 0.35)
        self.assertTrue(r.value.startswith("refused: approval needed:"), r.value)
        self.assertIn("400 ms", r.value)
        release.set()
        time.sleep(0.1)
        self.assertFalse(self.wrote("late-" + language))


if __name__ == "__main__":
    unittest.main()
