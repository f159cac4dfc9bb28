"""codecell.jail's value on the way back (issue 18's review, F1 and F2): the parent loads only a
tree of plain data within a node cap, however the jailed code forges its answer bytes."""
import collections
import faulthandler
import inspect
import os
import sys
import unittest

import codecell
from helper import descendants, wait_until

J = sys.modules["codecell.jail"]


def forge(payload):
    """Jailed code that took its process over: it writes its own answer bytes with the
    library's own call (the jail handle is a local of _jailed, two frames up) and exits."""
    def forged():
        j = inspect.currentframe().f_back.f_back.f_locals["j"]
        J.lib.codecell_jail_answer(j, J.VALUE, payload, len(payload))
        os._exit(0)
    return forged


def shared_bomb(n):
    """frozenset([a_n]) with a_k = (a_{k-1}, a_{k-1}) by memo reference: 2^n to hash."""
    b = b"\x80\x02cbuiltins\nfrozenset\n)q\x000"
    for i in range(1, n + 1):
        b += b"h" + bytes([i - 1]) + b"h" + bytes([i - 1]) + b"\x86q" + bytes([i])
        b += b"0" if i < n else b""
    return b + b"\x85\x85R."


class Calls:
    """Pickles as a call of fn(*args), as a __reduce__ of the jailed code's own may."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


class Answer(unittest.TestCase):
    def setUp(self):
        J.reset()
        # A hang here is the bug: dump and end the process rather than wait for ctest.
        faulthandler.dump_traceback_later(300, exit=True)

    def tearDown(self):
        faulthandler.cancel_dump_traceback_later()
        J.reset()
        wait_until(lambda: descendants() == 0)

    def refused(self, fn, words):
        with self.assertRaises(codecell.JailError) as cm:
            codecell.jail(fn, timeout=30)
        self.assertNotIsInstance(cm.exception, codecell.SandboxError)
        self.assertIn("cannot be loaded here", str(cm.exception))
        self.assertIn(words, str(cm.exception))

    def test_a_shared_container_bomb_is_refused(self):
        self.refused(forge(shared_bomb(64)), "shares a container")

    def test_a_shared_list_is_refused_even_without_a_set(self):
        self.refused(forge(b"\x80\x05]\x94(]\x94h\x01e."), "shares a container")

    def test_constructors_that_expand_an_argument_are_refused(self):
        for fn, args in ((set, (range(10 ** 12),)), (frozenset, (range(10 ** 12),)),
                         (collections.deque, (range(10 ** 12),)), (bytearray, (10 ** 12,)),
                         (range, (10 ** 12,)), (collections.OrderedDict, ([],)),
                         (list, (range(10 ** 12),))):
            with self.subTest(fn=fn.__name__):
                self.refused(lambda: Calls(fn, *args), "which is not loaded unless trusted")

    def test_opcodes_outside_the_whitelist_are_refused(self):
        # protocol 0's INST (calls a class by name) and a text LONG (quadratic to parse)
        self.refused(forge(b"(idatetime\ndate\n."), "opcode INST")
        self.refused(forge(b"L" + b"9" * 100 + b"L\n."), "opcode LONG")

    def test_too_many_objects_are_refused(self):
        self.refused(lambda: [None] * 1000001, "more than 1000000 objects")
        self.assertEqual(len(codecell.jail(lambda: [None] * 990000)), 990000)

    def test_too_deep_a_value_is_refused(self):
        self.refused(forge(b"\x80\x05N" + b"\x85" * 100000 + b"."), "nests deeper than")

    def test_plain_values_round_trip(self):
        import datetime
        import decimal
        row = {"name": "same", "tags": ["same", "same"]}
        shared = [1, 2]
        value = ({1, "a", (2, "b")}, frozenset({b"x", 3.5}), b"bytes", bytearray(b"\x00\xff"),
                 [row, row, [row]], {"same": ("same", ("same",))}, (), set(), frozenset(),
                 [shared, shared], 2 ** 200, -1, None, True, complex(1, 2),
                 decimal.Decimal("1.25"), datetime.date(2026, 11, 30),
                 datetime.datetime(2026, 11, 30, 23, 0, tzinfo=datetime.timezone.utc))
        got = codecell.jail(lambda: value)
        self.assertEqual(got, value)
        self.assertIsInstance(got[3], bytearray)
        self.assertIsInstance(got[1], frozenset)
        self.assertIsNot(got[9][0], got[9][1])  # a shared list comes back as a tree

    def test_a_recursive_value_cannot_be_passed_back(self):
        def loop():
            x = []
            x.append(x)
            return x
        # pickle's own error in the child, as the seed reports a value it cannot marshal
        with self.assertRaises(codecell.SandboxError) as cm:
            codecell.jail(loop)
        self.assertEqual(cm.exception.original_class, "ValueError")
        self.assertIn("cyclic", cm.exception.original_message)


if __name__ == "__main__":
    unittest.main()
