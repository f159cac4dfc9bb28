"""Sessions as the seed's Repl has them: the default name, close one / close all, the
process-wide list, and a kernel killed from outside that comes back fresh and says so."""
import os
import signal
import unittest

import codecell

from helper import process_table, wait_until


def below(me):
    parents, names = process_table()

    def under(pid):
        p = parents.get(pid)
        while p and p > 1 and p != me:
            p = parents.get(p)
        return p == me
    return [pid for pid in parents if under(pid)], names


def ns_of(pid):
    try:
        return os.readlink("/proc/%d/ns/pid" % pid)
    except OSError:
        return None


def interpreter_of(cell):
    """The interpreter of the cell's only session, by its name below this process."""
    wanted = ("ruby",) if cell.language == "ruby" else ("python3", "python")
    found = []

    def one():
        pids, names = below(os.getpid())
        found[:] = [p for p in pids if names.get(p) in wanted and ns_of(p) != ns_of(os.getpid())]
        return len(found) == 1
    wait_until(one)
    return found[0]


def sandbox_of(pid):
    return [p for p in below(os.getpid())[0] if ns_of(p) == ns_of(pid)]


def kill_gone_too(kill, target):
    """Kills target; one already gone (the end of an earlier one's init took it) is fine."""
    try:
        kill(target, signal.SIGKILL)
    except ProcessLookupError:
        pass


def kill_init(pid):
    names = below(os.getpid())[1]
    for p in sandbox_of(pid):
        if names.get(p) == "codecell-init":
            kill_gone_too(os.kill, p)


def kill_groups(pid):
    groups = {os.getpgid(p) for p in sandbox_of(pid)}
    assert os.getpgrp() not in groups, groups  # never this process's own group
    for g in groups:
        kill_gone_too(os.killpg, g)


# How the kernel is killed from outside: its interpreter alone, its init (whose end takes the
# interpreter with it), or every process group of its sandbox.
KILLS = {"interpreter": lambda pid: os.kill(pid, signal.SIGKILL), "init": kill_init,
         "group": kill_groups}


class Sessions(unittest.TestCase):
    def test_an_eval_without_a_name_runs_in_the_default_session(self):
        with codecell.Cell(language="python", pool=0) as cell:
            self.assertEqual(cell.eval("x = 41").status, "ok")
            self.assertEqual(cell.sessions(), ["default"])
            self.assertEqual(cell.eval("x + 1", session="default").value, 42)
            self.assertEqual(cell.session().eval("x + 1").value, 42)
            self.assertEqual(cell.session().name, codecell.DEFAULT_SESSION)
            r = cell.eval("'x' in globals()", reset=True)
            self.assertIs(r.value, False)
            self.assertIsNone(r.state_lost, "a reset asked for is not a loss to report")
            cell.eval("1", session="other")
            self.assertEqual(sorted(cell.sessions()), ["default", "other"])
            self.assertTrue(cell.close_session())
            self.assertFalse(cell.close_session())
            self.assertEqual(cell.sessions(), ["other"])
            with self.assertRaises(ValueError):
                cell.eval("1", session="bad name!")

    def test_a_parked_session_is_restored_and_a_fork_goes_its_own_way(self):
        for language in ("python", "ruby"):
            with self.subTest(language=language):
                with codecell.Cell(language=language, pool=0) as cell:
                    code = "x = [41]" if language == "ruby" else "x = [41]\nx"
                    self.assertEqual(cell.eval(code).value, [41])
                    self.assertIsNone(cell.eval("1").restored)
                    cell.park_session()
                    r = cell.eval("x")
                    self.assertEqual(r.value, [41])
                    self.assertEqual(r.restored["evals"], 2, r.restored)
                    cell.fork_session("default", "what-if")
                    grow = "x << 1; x" if language == "ruby" else "x.append(1)\nx"
                    self.assertEqual(cell.eval(grow, session="what-if").value, [41, 1])
                    self.assertEqual(cell.eval("x").value, [41])
                    with self.assertRaises(ValueError):  # no such session
                        cell.park_session("nope")

    def test_sessions_are_listed_and_closed_process_wide(self):
        a = codecell.Cell(language="python", pool=0)
        b = codecell.Cell(language="ruby", pool=0)
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        a.eval("v = 1")
        a.eval("w = 2", session="work")
        b.eval("v = 3")
        mine = [s for s in codecell.sessions() if s.cell is a or s.cell is b]
        self.assertEqual(len(mine), 3, mine)
        self.assertIn(a.session("work"), mine)
        self.assertIn(b.session(), mine)
        self.assertTrue(codecell.close_session("default"))
        self.assertEqual(a.sessions(), ["work"])
        self.assertEqual(b.sessions(), [])
        self.assertFalse(codecell.close_session("default"))
        b.eval("v = 4")
        self.assertGreaterEqual(codecell.close_all(), 2)
        self.assertEqual(a.sessions() + b.sessions(), [])
        self.assertIs(a.eval("'v' in globals()").value, False)  # the cells stay open
        a.close()
        self.assertFalse([s for s in codecell.sessions() if s.cell is a])

    def test_a_kernel_killed_from_outside_comes_back_fresh_and_says_so(self):
        for language, code, fresh in (("python", "'x' in globals()", False),
                                      ("ruby", "defined?(x).inspect", "nil")):
            with codecell.Cell(language=language, pool=0) as cell:
                for how, kill in KILLS.items():
                    with self.subTest(language=language, kill=how):
                        self.assertEqual(cell.eval("x = 1").status, "ok")
                        pid = interpreter_of(cell)
                        kill(pid)
                        wait_until(lambda: not os.path.exists("/proc/%d" % pid))
                        r = cell.eval(code)
                        self.assertEqual(r.status, "ok", r)
                        self.assertEqual(r.value, fresh)
                        self.assertIsNotNone(r.state_lost, "the loss was not said")
                        self.assertIn("killed by signal 9", r.state_lost)
                        self.assertIn("this eval ran in a fresh session", r.state_lost)
                        self.assertIsNone(cell.eval("1").state_lost, "said twice")


if __name__ == "__main__":
    unittest.main()
