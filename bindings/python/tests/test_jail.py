"""codecell.jail against the real kernel, as root and as nobody (tests/bindings/install.sh)."""
import collections
import encodings.idna  # noqa: F401 - imported before the jail: the child shares it (see below)
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import codecell
from helper import descendants, wait_until

Point = collections.namedtuple("Point", "x y")


def boom(what):
    raise KeyError("no such record: %s" % what)


class Jail(unittest.TestCase):
    def setUp(self):
        sys.modules["codecell.jail"].reset()

    def tearDown(self):
        sys.modules["codecell.jail"].reset()
        # No process of a jail outlives its call.
        wait_until(lambda: descendants() == 0)

    def scratch(self):
        """A folder the child may write: a root caller's child runs as nobody."""
        d = tempfile.mkdtemp(prefix="codecell-jail")
        os.chmod(d, 0o777)
        self.addCleanup(shutil.rmtree, d, True)
        return d

    def test_value_with_a_closure_over_memory(self):
        state = {"greeting": "hello", "numbers": [1, 2, 3]}

        def work(extra, scale=1):
            state["numbers"].append(extra)
            return state["greeting"], sum(state["numbers"]) * scale, os.getpid()

        self.assertEqual(codecell.jail(work, 4, scale=2), ("hello", 20, 1))  # PID 1 inside
        self.assertEqual(state["numbers"], [1, 2, 3])  # the child's changes stay there
        self.assertEqual(codecell.jail(lambda: {1, 2.5, None, b"x", "é", (1,)}),
                         {1, 2.5, None, b"x", "é", (1,)})

    def test_decorator_form(self):
        @codecell.jail(timeout=10)
        def double(x):
            return x * 2, os.getpid()

        self.assertEqual(double(21), (42, 1))
        self.assertEqual(double.__name__, "double")

    def test_a_raising_function_is_a_sandbox_error_with_the_original(self):
        with self.assertRaises(codecell.SandboxError) as cm:
            codecell.jail(boom, "x")
        e = cm.exception
        self.assertEqual(e.original_class, "KeyError")
        self.assertEqual(e.original_message, "'no such record: x'")
        self.assertTrue(any("in boom" in line for line in e.original_backtrace), e.original_backtrace)
        self.assertIsInstance(e, codecell.JailError)

    def test_wall_clock_on_a_sleeping_function(self):
        with self.assertRaises(codecell.TimeoutError) as cm:
            codecell.jail(time.sleep, 60, timeout=0.5)
        self.assertFalse(cm.exception.cpu)
        self.assertIn("0.5 s wall-clock", str(cm.exception))
        self.assertEqual(descendants(), 0)

    def test_cpu_budget_on_a_spinning_function(self):
        def spin():
            while True:
                pass
        # A wall clock far above the budget: a loaded machine cannot make it a wall timeout.
        with self.assertRaises(codecell.TimeoutError) as cm:
            codecell.jail(spin, timeout=120, cpu_timeout=0.3)
        self.assertTrue(cm.exception.cpu)
        self.assertEqual(descendants(), 0)

    def test_memory_limit(self):
        with self.assertRaises(codecell.MemoryError):
            codecell.jail(lambda: b"x" * (400 << 20), memory_mb=64)

    def test_reading_outside_the_lists(self):
        def read(path):
            with open(path) as f:
                return f.read()
        with self.assertRaises(codecell.FilesystemError) as cm:
            codecell.jail(read, "/etc/shadow")
        self.assertIn("/etc/shadow", str(cm.exception))
        self.assertIn("localhost", codecell.jail(read, "/etc/hosts"))  # /etc is readable
        home = os.path.expanduser("~")
        if os.path.isdir(home) and os.access(home, os.R_OK):
            with self.assertRaises(codecell.FilesystemError):
                codecell.jail(os.listdir, home)
        d = self.scratch()
        with open(os.path.join(d, "data"), "w") as f:
            f.write("secret")
        os.chmod(os.path.join(d, "data"), 0o644)
        with self.assertRaises(codecell.FilesystemError):  # world-readable, in no list
            codecell.jail(read, os.path.join(d, "data"))
        self.assertEqual(codecell.jail(read, os.path.join(d, "data"), fs_read_allow=[d]), "secret")
        # a folder on sys.path (an application's root) is not granted by being there
        sys.path.insert(0, d)
        try:
            with self.assertRaises(codecell.FilesystemError):
                codecell.jail(read, os.path.join(d, "data"))
        finally:
            sys.path.remove(d)

    def test_writing_outside_fs_allow(self):
        def write(path):
            with open(path, "w") as f:
                return f.write("hello")
        d = self.scratch()
        self.assertEqual(codecell.jail(write, os.path.join(d, "out"), fs_allow=[d]), 5)
        with open(os.path.join(d, "out")) as f:
            self.assertEqual(f.read(), "hello")
        for kwargs in ({"fs_read_allow": [d]}, {}):
            with self.assertRaises(codecell.FilesystemError):
                codecell.jail(write, os.path.join(d, "x"), **kwargs)
        with self.assertRaises(codecell.FilesystemError):
            codecell.jail(write, "/etc/codecell-jail", fs_allow=[d])
        self.assertFalse(os.path.exists(os.path.join(d, "x")))

    def test_other_errors_are_not_filesystem_errors(self):
        with self.assertRaises(codecell.SandboxError) as cm:
            codecell.jail(open, "/etc/no-such-file")
        self.assertEqual(cm.exception.original_class, "FileNotFoundError")

        def refuse():
            raise PermissionError("not a path")
        with self.assertRaises(codecell.SandboxError):
            codecell.jail(refuse)

    def test_no_network(self):
        # create_connection imports encodings.idna on first use; imported above, the child has
        # it in memory: this Python may live where a root caller's child (nobody) cannot read.
        server = socket.socket()
        self.addCleanup(server.close)
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]

        def connect():
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return True
        with self.assertRaises(codecell.SandboxError) as cm:
            codecell.jail(connect)
        self.assertTrue(cm.exception.original_class.endswith("Error"), cm.exception)
        server.setblocking(False)
        with self.assertRaises(BlockingIOError):  # nothing came through
            server.accept()
        self.assertTrue(codecell.jail(connect, network=True))

    def test_a_fork_bomb_is_bounded(self):
        def bomb():
            made = 0
            try:
                while True:
                    if os.fork() == 0:
                        time.sleep(60)
                        os._exit(0)
                    made += 1
            except OSError as e:
                return made, e.errno
        made, err = codecell.jail(bomb, timeout=60)
        self.assertEqual(err, 11)  # EAGAIN
        self.assertTrue(10 < made < 64, made)
        # Killed with the jail's PID 1 as the answer came; the kernel's teardown and the
        # reaping are the library's, on a thread of its own (docs/jail.md).
        wait_until(lambda: descendants() == 0)

    def test_the_parents_threads_keep_running(self):
        ticks = [0]
        stop = threading.Event()

        def tick():
            while not stop.is_set():
                ticks[0] += 1
                time.sleep(0.01)
        t = threading.Thread(target=tick)
        t.start()
        self.addCleanup(t.join)
        self.addCleanup(stop.set)

        def watch():
            before = ticks[0]
            time.sleep(0.5)
            return ticks[0] - before  # only the calling thread exists in the child
        self.assertEqual(codecell.jail(watch), 0)
        before = ticks[0]
        codecell.jail(time.sleep, 0.5)
        self.assertGreater(ticks[0], before)

    def test_a_value_that_cannot_be_pickled(self):
        # As the seed: the serializer's error in the child comes back as a SandboxError.
        with self.assertRaises(codecell.SandboxError) as cm:
            codecell.jail(lambda: threading.Lock())
        self.assertEqual(cm.exception.original_class, "TypeError")
        self.assertIn("cannot pickle '_thread.lock' object", cm.exception.original_message)
        self.assertTrue(str(cm.exception).startswith("TypeError: "))

    def test_fs_allow_honours_a_root_callers_ownership(self):
        """A root caller's folder only root may write (mkdtemp: 0700) is the child's to write
        through an idmapped clone; what it makes is root's on the host, a file of another owner
        inside stays another's, and nothing stays mounted."""
        if os.geteuid() != 0:
            self.skipTest("needs root: the child of a root caller runs as nobody")
        d = tempfile.mkdtemp(prefix="codecell-jail")
        self.addCleanup(shutil.rmtree, d, True)
        self.assertEqual(os.stat(d).st_mode & 0o777, 0o700)
        theirs = os.path.join(d, "theirs")
        with open(theirs, "w") as f:
            f.write("theirs")
        os.chown(theirs, 1234, 1234)
        layers = codecell.jail_layers(fs_allow=[d])
        if "idmapped_fs_allow" not in layers:
            self.skipTest("this file system cannot be idmapped: %r" % layers)

        def make():
            with open(os.path.join(d, "made"), "w") as f:
                f.write("in the jail")
            return os.getuid(), os.stat(d).st_uid

        self.assertEqual(codecell.jail(make, fs_allow=[d]), (65534, 65534))
        st = os.stat(os.path.join(d, "made"))
        self.assertEqual((st.st_uid, st.st_gid), (0, 0))
        with self.assertRaises(codecell.FilesystemError):
            codecell.jail(lambda: open(theirs, "w"), fs_allow=[d])
        other = tempfile.mkdtemp(prefix="codecell-jail-other")
        self.addCleanup(shutil.rmtree, other, True)
        with self.assertRaises(codecell.FilesystemError):
            codecell.jail(lambda: open(os.path.join(other, "x"), "w"), fs_allow=[d])
        with open("/proc/self/mountinfo") as f:
            self.assertNotIn(d, f.read())

    def test_raise_without_a_cgroup_falls_back_to_rlimit_as(self):
        """agent_jail's memory limit is RLIMIT_AS: a host without a delegated cgroup (nobody's,
        here) runs under "raise" with a warning, and the limit holds."""
        codecell.configure(on_unsupported="raise")
        self.assertEqual(codecell.jail(lambda: 1 + 1), 2)
        layers = codecell.jail_layers()
        self.assertTrue("rlimit_as" in layers or any(l.startswith("cgroup_") for l in layers),
                        layers)
        self.assertTrue(any(l.startswith("landlock_abi_") for l in layers), layers)
        with self.assertRaises(codecell.MemoryError):
            codecell.jail(lambda: len(b"x" * 400_000_000), memory_mb=64)

    def test_nested_jails(self):
        """A jail inside a jail: no namespaces of its own (the outer's filter refuses them), but
        its own fork and clock, Landlock stacked on the outer's, nothing left behind."""
        self.assertEqual(codecell.jail(lambda: codecell.jail(lambda: 1)), 1)
        pid, layers = codecell.jail(lambda: (codecell.jail(os.getpid), codecell.jail_layers()))
        self.assertNotEqual(pid, 1)
        self.assertIn("inside_another_jail", layers)
        self.assertTrue(any(l.startswith("landlock_abi_") for l in layers), layers)

        def inner_timeout():
            try:
                codecell.jail(time.sleep, 60, timeout=0.3)
            except codecell.TimeoutError:
                return "timeout"
        self.assertEqual(codecell.jail(inner_timeout), "timeout")
        with self.assertRaises(codecell.SandboxError) as cm:
            codecell.jail(lambda: codecell.jail(boom, "inner"))
        self.assertEqual(cm.exception.original_class, "codecell.jail.SandboxError")
        d = self.scratch()
        path = os.path.join(d, "x")

        def write():
            with open(path, "w") as f:
                f.write("yes")
        # the inner jail cannot widen the outer's walls
        with self.assertRaises(codecell.SandboxError) as cm:
            codecell.jail(lambda: codecell.jail(write, fs_allow=[d]))
        self.assertEqual(cm.exception.original_class, "codecell.jail.FilesystemError")

        def both():
            codecell.jail(write, fs_allow=[d])
            with open(path) as f:
                return f.read()
        self.assertEqual(codecell.jail(both, fs_allow=[d]), "yes")

    def test_keep_open(self):
        """keep_open hands the function the parent's open files as they are: the same offset,
        the same peer; the rest still read as empty."""
        with tempfile.TemporaryFile() as f:
            f.write(b"hello world")
            f.flush()
            f.seek(0)
            fd = f.fileno()
            self.assertEqual(codecell.jail(os.read, fd, 5, keep_open=[f]), b"hello")
            self.assertEqual(os.lseek(fd, 0, os.SEEK_CUR), 5)  # the offset is shared
            self.assertEqual(codecell.jail(os.read, fd, 5), b"")  # not kept: /dev/null
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        codecell.jail(a.sendall, b"from the jail", keep_open=[a])
        self.assertEqual(b.recv(100), b"from the jail")
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        codecell.jail(os.write, w, b"by number", keep_open=[w])
        os.close(w)
        self.assertEqual(os.read(r, 100), b"by number")

    def test_keep_open_refuses(self):
        with self.assertRaises(TypeError):
            codecell.jail(int, keep_open=["/etc/passwd"])
        with self.assertRaises(TypeError):
            codecell.jail(int, keep_open=sys.stdout)
        with self.assertRaises(TypeError):
            codecell.jail(int, keep_open=[True])
        f = open("/etc/hostname")
        f.close()
        with self.assertRaises(ValueError):
            codecell.jail(int, keep_open=[f])
        r, w = os.pipe()
        os.close(r)
        os.close(w)
        with self.assertRaises(ValueError) as cm:
            codecell.jail(int, keep_open=[w + 1000])
        self.assertIn("is not open", str(cm.exception))
        with self.assertRaises(ValueError):
            codecell.jail(int, keep_open=[-3])
        with open("/proc/self/ns/user") as ns:
            with self.assertRaises(ValueError) as cm:
                codecell.jail(int, keep_open=[ns])
            self.assertIn("namespace", str(cm.exception))
        # The caller's machinery (an epoll set) is refused: the function would add its own
        # descriptors to it, with data the caller's loop takes for its own.
        ep = select.epoll()
        try:
            with self.assertRaises(ValueError) as cm:
                codecell.jail(int, keep_open=[ep])
            self.assertIn("an anonymous inode's", str(cm.exception))
        finally:
            ep.close()

    def test_only_trusted_classes_load_in_the_parent(self):
        with self.assertRaises(codecell.JailError) as cm:
            codecell.jail(Point, 1, 2)
        self.assertIn("Point, which is not loaded unless trusted", str(cm.exception))
        codecell.configure(trusted_classes=[Point])
        self.assertEqual(codecell.jail(Point, 1, 2), Point(1, 2))

    def test_the_parents_files_are_out_of_reach(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        codecell.jail(os.write, w, b"leak")  # to /dev/null in the child
        os.close(w)
        self.assertEqual(os.read(r, 10), b"")

    def test_bad_options(self):
        with self.assertRaises(ValueError):
            codecell.jail(len, "x", timeout=-1)
        with self.assertRaises(ValueError):
            codecell.jail(len, "x", fs_allow=["/tmp\0x"])
        with self.assertRaises(TypeError):
            codecell.jail(42)
        with self.assertRaises(ValueError):
            codecell.configure(on_unsupported="maybe")
        self.assertEqual(codecell.jail(len, "ab", fs_allow=["/app/tmp/not-here"]), 2)

    def test_configure_sets_the_defaults(self):
        codecell.configure(default_timeout=0.5)
        with self.assertRaises(codecell.TimeoutError):
            codecell.jail(time.sleep, 60)

    def test_on_unsupported_without_landlock(self):
        """A host without Landlock, made for real: a seccomp filter answers ENOSYS to its calls
        (tests/bindings/without_landlock.c), as an old kernel does."""
        wrapper = os.environ.get("CODECELL_WITHOUT_LANDLOCK")
        if not wrapper:
            self.skipTest("CODECELL_WITHOUT_LANDLOCK is not set (tests/bindings/CMakeLists.txt)")
        script = ("import sys, codecell\n"
                  "codecell.configure(on_unsupported=sys.argv[1])\n"
                  "try:\n"
                  "    print(codecell.jail(len, open('/etc/hostname').read()) > 0)\n"
                  "except codecell.UnsupportedPlatformError as e:\n"
                  "    print('unsupported:', e)\n")

        def run(policy):
            p = subprocess.run([wrapper, sys.executable, "-c", script, policy],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            return p.stdout, p.stderr
        out, _ = run("raise")
        self.assertIn("unsupported: landlock: not available", out)
        out, err = run("warn")
        self.assertEqual(out, "True\n")
        self.assertIn("landlock: not available", err)
        out, err = run("ignore")
        self.assertEqual(out, "True\n")
        self.assertNotIn("landlock", err)


if __name__ == "__main__":
    unittest.main()
