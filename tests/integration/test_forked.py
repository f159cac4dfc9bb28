"""Sandboxes forked from a cell's zygote (issue 19, docs/security.md "Forked sandboxes"): what
must hold beyond the walls the security suite checks both ways. Every run starts from the same
booted interpreter, so nothing of one run may reach another: random generators are reseeded,
files, globals and descriptors are the run's own, siblings and the zygote are out of reach, and
a zygote that dies is replaced. Through `codecell serve`, whose cells fork by default."""
import os
import signal
import time
import unittest

from harness import LAUNCHED, children_of, comm_of, stray_children, tempdir
from mcp_peer import INIT, Stdio, write_config

LANGUAGES = ("ruby", "python")

RANDOM = {"ruby": "[rand, Random.new.rand, Random.new_seed % 1_000_000]",
          "python": "import random\n[random.random(), random.SystemRandom().random(), "
                    "random.Random().random()]"}
# A global, files in /tmp and /work, and a descriptor left open: none may reach the next run.
LEAVE = {"ruby": "$left = 1; File.write('/tmp/m', 'x'); File.write('/work/m', 'x'); "
                 "$keep = File.open('/work/m'); $keep.fileno",
         "python": "import builtins, os\nbuiltins.left = 1\nopen('/tmp/m', 'w').write('x')\n"
                   "open('/work/m', 'w').write('x')\nbuiltins.keep = open('/work/m')\n"
                   "builtins.keep.fileno()"}
FIND = {"ruby": "[defined?($left), File.exist?('/tmp/m'), File.exist?('/work/m'), "
                "Dir.children('/proc/self/fd').map(&:to_i).sort]",
        "python": "import builtins, os\n[getattr(builtins, 'left', None), "
                  "os.path.exists('/tmp/m'), os.path.exists('/work/m'), "
                  "sorted(int(f) for f in os.listdir('/proc/self/fd'))]"}
# The processes this sandbox can see, and the pipes and sockets behind its descriptors, by
# inode (one shared with another sandbox would appear in both).
VIEW = {"ruby": "ids = Dir.children('/proc/self/fd').filter_map { |f| "
                "t = File.readlink(\"/proc/self/fd/#{f}\") rescue next; t[/\\A(pipe|socket):/] ? t : nil }; "
                "[Dir.children('/proc').grep(/\\A\\d+\\z/).map(&:to_i).sort, ids]",
        "python": "import os\nids = []\nfor f in os.listdir('/proc/self/fd'):\n"
                  "    try:\n        t = os.readlink('/proc/self/fd/' + f)\n"
                  "    except OSError:\n        continue\n"
                  "    if t.startswith(('pipe:', 'socket:')):\n        ids.append(t)\n"
                  "[sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), ids]"}
# Ruby wakes its threads through eventfds, which a fork shares: each sandbox must have its own.
# One session adds a large count to each of its eventfds; another reads its own.
EVENTFDS = "Dir.children('/proc/self/fd').map(&:to_i).select { |f| " \
           "(File.readlink(\"/proc/self/fd/#{f}\") rescue '') == 'anon_inode:[eventfd]' }"
# Ruby reserves them from IO: libc's read and write, through Fiddle.
LIBC = "require 'fiddle'; f = Fiddle::Handle::DEFAULT; " \
       "w = Fiddle::Function.new(f['write'], [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, " \
       "Fiddle::TYPE_SIZE_T], Fiddle::TYPE_SSIZE_T); " \
       "r = Fiddle::Function.new(f['read'], [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, " \
       "Fiddle::TYPE_SIZE_T], Fiddle::TYPE_SSIZE_T); "
FILL_EVENTFDS = LIBC + f"{EVENTFDS}.count {{ |fd| w.call(fd, [1_000_000_000].pack('Q'), 8) == 8 }}"
READ_EVENTFDS = LIBC + f"{EVENTFDS}.map {{ |fd| b = \"\\0\" * 8; " \
                "r.call(fd, b, 8) == 8 ? b.unpack1('Q') : 0 }.max.to_i"
# Kills every process the sandbox may signal (kill -1), from a subprocess.
KILL_ALL = {"ruby": "system('/bin/kill', '-KILL', '-1'); sleep 1; :survived",
            "python": "import subprocess, time\nsubprocess.run(['/bin/kill', '-KILL', '-1'])\n"
                      "time.sleep(1)\n'survived'"}

# The guest forks a child (exit 7), whose own fork exits 9 (the child exits with it).
FORK_TWICE_RUBY = ("a = fork { b = fork { exit!(9) }; Process.wait(b); exit!($?.exitstatus) }; "
                   "Process.wait(a); first = $?.exitstatus; "
                   "c = fork { exit!(7) }; Process.wait(c); [$?.exitstatus, first]")
FORK_TWICE_PYTHON = ("import os\n"
                     "def child(code):\n"
                     "    p = os.fork()\n"
                     "    if p == 0:\n"
                     "        os._exit(code())\n"
                     "    return os.waitpid(p, 0)[1] >> 8\n"
                     "first = child(lambda: child(lambda: 9))\n"
                     "[child(lambda: 7), first]")

# The fork server's own memory in a run's copy of it (/codecell/zygote.so, read through its
# symbol table): a digest of each of its writable variables. What the zygote knew when it forked
# this run (how many sandboxes it had made, how many live, their descriptors) must not be there.
FORK_SERVER_STATE = {
    "python": "import ctypes, hashlib, struct\n"
              "d = open('/codecell/zygote.so', 'rb').read()\n"
              "shoff, = struct.unpack_from('<Q', d, 0x28)\n"
              "size, count = struct.unpack_from('<HH', d, 0x3a)\n"
              "secs = [struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * size) for i in range(count)]\n"
              "base = min(int(l.split('-')[0], 16) for l in open('/proc/self/maps')\n"
              "           if l.rstrip().endswith('/codecell/zygote.so'))\n"
              "out = {}\n"
              "for s in secs:\n"
              "    if s[1] != 2:\n"
              "        continue\n"
              "    names = secs[s[6]][4]\n"
              "    for i in range(s[5] // 24):\n"
              "        n, _, _, _, value, length = struct.unpack_from('<IBBHQQ', d, s[4] + i * 24)\n"
              "        if length and any(t[2] & 1 and t[3] <= value < t[3] + t[5] for t in secs):\n"
              "            name = d[names + n:d.index(b'\\0', names + n)].decode()\n"
              "            out[name] = hashlib.sha1(ctypes.string_at(base + value, length)).hexdigest()\n"
              "out",
    "ruby": "require 'fiddle'; require 'digest'\n"
            "d = File.binread('/codecell/zygote.so')\n"
            "shoff = d.unpack1('Q<', offset: 0x28)\n"
            "size, count = d.unpack('S<S<', offset: 0x3a)\n"
            "secs = (0...count).map { |i| d.unpack('L<L<Q<Q<Q<Q<L<L<Q<Q<', offset: shoff + i * size) }\n"
            "base = File.readlines('/proc/self/maps').select { |l| "
            "l.rstrip.end_with?('/codecell/zygote.so') }.map { |l| l.to_i(16) }.min\n"
            "out = {}\n"
            "secs.select { |s| s[1] == 2 }.each do |s|\n"
            "  names = secs[s[6]][4]\n"
            "  (s[5] / 24).times do |i|\n"
            "    n, _, _, _, value, len = d.unpack('L<CCS<Q<Q<', offset: s[4] + i * 24)\n"
            "    next if len.zero? || secs.none? { |t| t[2] & 1 == 1 && t[3] <= value && value < t[3] + t[5] }\n"
            "    out[d[names + n...d.index(\"\\0\", names + n)]] = "
            "Digest::SHA1.hexdigest(Fiddle::Pointer.new(base + value)[0, len])\n"
            "  end\n"
            "end\n"
            "out"}

# A write to a pipe nobody reads: the runtime ignores SIGPIPE and makes it an error, as it does
# in an exec'd sandbox; it must not kill the interpreter.
BROKEN_PIPE = {"ruby": "r, w = IO.pipe; r.close\nbegin\n  w.syswrite('x')\n  :written\n"
                       "rescue Errno::EPIPE\n  :epipe\nend",
               "python": "import os\nr, w = os.pipe()\nos.close(r)\ntry:\n    os.write(w, b'x')\n"
                         "    v = 'written'\nexcept BrokenPipeError:\n    v = 'epipe'\nv"}


def call(i, lang, code, **args):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": lang, "arguments": dict(args, code=code)}}


def alive(pid):
    """Whether pid is a process that has not exited (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def zygotes_of(pid):
    """The cells' zygotes under a server: its children's children named codecell-zygote."""
    return [grandchild for child in children_of(pid) for grandchild in children_of(child)
            if comm_of(grandchild) == "codecell-zygote"]


class Forked(unittest.TestCase):
    def setUp(self):
        self.dir = tempdir(self)
        cells = [{"name": lang, "language": lang, "pool": 2, "allow_subprocesses": True,
                  "sessions": {"max": 4, "idle_ms": 60000},
                  "limits": {"timeout_ms": 20000, "cpu_ms": 10000}} for lang in LANGUAGES]
        self.peer = Stdio(write_config(self.dir, cells))
        self.addCleanup(self.finish)
        self.assertEqual(self.peer.request(INIT)["result"]["protocolVersion"], "2025-11-25")
        self.next_id = 1

    def finish(self):
        code, err = self.peer.close()
        self.assertEqual(code, 0, err)
        self.assertEqual(stray_children(), [], "a sandbox outlived the server")

    def run_code(self, lang, code, **args):
        self.next_id += 1
        m = self.peer.request(call(self.next_id, lang, code, **args), )
        self.assertIn("result", m, m)
        r = m["result"]["structuredContent"]
        self.assertEqual(r["status"], "ok", r)
        return r["value"]

    def test_each_run_draws_its_own_random_numbers(self):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                draws = [self.run_code(lang, RANDOM[lang]) for _ in range(4)]
                for column in zip(*draws):
                    self.assertEqual(len(set(column)), len(column), draws)

    def test_nothing_of_a_run_reaches_the_next(self):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                before = self.run_code(lang, FIND[lang])
                self.run_code(lang, LEAVE[lang])
                after = self.run_code(lang, FIND[lang])
                self.assertEqual(after[:3], [None, False, False])
                self.assertEqual(after, before)

    def test_what_the_zygote_knew_of_other_runs_is_not_in_a_run_s_memory(self):
        # Review of the one-fork sandboxes: next_init (init's pid in the zygote's namespace, a
        # count of every sandbox the cell made), polled (the live sandboxes' pidfds), the
        # descriptors of the sandbox being made and init's stack stayed in each run's copy.
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                states = [self.run_code(lang, FORK_SERVER_STATE[lang]) for _ in range(3)]
                self.assertIn("walls", states[0])  # the symbol table was read
                differ = sorted(name for name in states[0]
                                if len({state.get(name) for state in states}) > 1)
                self.assertEqual(differ, [], "the fork server's variables differ between runs")

    def test_the_walls_and_the_zygote_s_own_facts_are_cleared_in_a_run(self):
        # Review of the fork server: the walls every child puts up (its seccomp program and
        # Landlock paths), the zygote's pid and its limit on sandboxes stayed readable in each
        # run's copy of the fork server's memory.
        cleared = {"python": FORK_SERVER_STATE["python"].replace(
                       "hashlib.sha1(ctypes.string_at(base + value, length)).hexdigest()",
                       "not any(ctypes.string_at(base + value, length))"),
                   "ruby": FORK_SERVER_STATE["ruby"].replace(
                       "Digest::SHA1.hexdigest(Fiddle::Pointer.new(base + value)[0, len])",
                       "Fiddle::Pointer.new(base + value)[0, len].bytes.all?(&:zero?)")}
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                self.assertNotEqual(cleared[lang], FORK_SERVER_STATE[lang])
                state = self.run_code(lang, cleared[lang])
                for name in ("walls", "landlock", "max_children", "zygote_pid"):
                    self.assertIs(state.get(name), True, (name, state))

    def test_a_write_to_a_closed_pipe_is_an_error_as_in_an_exec_d_sandbox(self):
        # Review of the one-fork sandboxes: codecell_zygote_guest sets SIGPIPE back to SIG_DFL
        # after the runtime has ignored it, so the forked interpreter dies of the signal.
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                self.assertEqual(self.run_code(lang, BROKEN_PIPE[lang]), "epipe")

    def test_a_sandbox_sees_only_its_own_processes_and_descriptors(self):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                a = self.run_code(lang, VIEW[lang], session="a")
                b = self.run_code(lang, VIEW[lang], session="b")
                # init and the interpreter, as in an exec'd sandbox; never the zygote.
                self.assertEqual(a[0], [1, 2])
                self.assertEqual(b[0], [1, 2])
                # The control socket and the output pipes at least.
                self.assertGreaterEqual(min(len(a[1]), len(b[1])), 3, (a, b))
                self.assertFalse(set(a[1]) & set(b[1]), (a, b))

    def test_ruby_s_eventfds_are_each_sandbox_s_own(self):
        self.assertGreater(self.run_code("ruby", FILL_EVENTFDS, session="a"), 0)
        self.assertLess(self.run_code("ruby", READ_EVENTFDS, session="b"), 1_000_000_000)

    def test_kill_minus_one_reaches_only_its_own_sandbox(self):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                self.assertEqual(self.run_code(lang, "x = 41\nx", session="calm"), 41)
                self.next_id += 1
                m = self.peer.request(call(self.next_id, lang, KILL_ALL[lang]))
                # The interpreter itself was killed: its run fails, nothing else.
                self.assertNotEqual(m["result"]["structuredContent"]["status"], "ok", m)
                self.assertEqual(self.run_code(lang, "x + 1", session="calm"), 42)
                self.assertEqual(self.run_code(lang, "6 * 7"), 42)

    def test_a_run_s_own_forks_are_its_own(self):
        """The fork server hooks the interpreter's fork (to wait for the cgroup move before the
        runtime's after-fork work): a fork the guest makes must not take that wait. Its child
        runs and its exit status is its own; a grandchild's too."""
        for lang, code in (("ruby", FORK_TWICE_RUBY), ("python", FORK_TWICE_PYTHON)):
            with self.subTest(lang=lang):
                self.assertEqual(self.run_code(lang, code), [7, 9])

    def test_a_run_cannot_give_the_zygote_children(self):
        """clone(CLONE_PARENT) from a forked interpreter would make children of the zygote:
        zombies it never reaped, each holding its sandbox's pid namespace (and its init) open,
        and enough of them hid later sandboxes from the engine. Refused; afterwards the
        zygotes' children are only the sandboxes standing by (init and interpreter each)."""
        code = {"ruby": "(1..50).map { begin; pid = syscall(56, 0x8011, 0, 0, 0, 0); exit!(0) if pid.zero?; "
                        "'made'; rescue SystemCallError => e; e.class.name; end }.uniq",
                "python": "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                          "def once():\n"
                          "    pid = libc.syscall(56, ctypes.c_long(0x8011), 0, 0, 0, 0)\n"
                          "    if pid == 0:\n        os._exit(0)\n"
                          "    return 'Errno::EPERM' if pid < 0 and ctypes.get_errno() == 1 else 'made'\n"
                          "sorted(set(once() for _ in range(50)))"}
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                for _ in range(3):
                    self.assertEqual(self.run_code(lang, code[lang]), ["Errno::EPERM"])
        # Two cells, a pool of two each: at most three sandboxes per zygote (one being
        # replaced), two children each. The count settles once the runs' sandboxes are gone.
        deadline = time.monotonic() + 60
        while True:
            kids = {z: children_of(z) for z in zygotes_of(self.peer.proc.pid)}
            if all(len(k) <= 6 for k in kids.values()):
                break
            self.assertLess(time.monotonic(), deadline, kids)
            time.sleep(0.05)
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                self.assertEqual(self.run_code(lang, "6 * 7"), 42)

    def test_a_zygote_that_dies_is_replaced(self):
        self.assertEqual(self.run_code("ruby", "1 + 1"), 2)
        zygotes = zygotes_of(self.peer.proc.pid)
        self.assertEqual(len(zygotes), 2, zygotes)
        # Their sandboxes (init and interpreter, each the zygote's child) die with them, by
        # their parent-death signal, a moment later; a run handed one still dying would fail
        # as any run whose sandbox dies does. The test waits for them as for the zygotes.
        standing = [p for z in zygotes for p in children_of(z)]
        for z in zygotes:
            os.kill(z, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while (set(zygotes) & set(zygotes_of(self.peer.proc.pid))
               or any(alive(p) for p in standing)):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                # The sandboxes standing by died with their zygote; the next run starts
                # another (or the pool's does), and every later run works.
                for _ in range(3):
                    self.assertEqual(self.run_code(lang, "6 * 7"), 42)


if __name__ == "__main__":
    unittest.main()


class ExecCellsBesideManySandboxes(unittest.TestCase):
    """Review of the forked sandboxes (found beside them, in exec'd ones): an exec'd sandbox's
    set-up (src/lib/walls/sandbox.c exec_guest) sets RLIMIT_NOFILE while the engine's descriptors are
    still open (close_range only marks them close-on-exec), then needs a new one for Landlock's
    ruleset. Once the engine holds more descriptors than the cell's open_files (every live
    sandbox of every cell holds some), no exec'd sandbox can start: "landlock ruleset: Too many
    open files". A forked cell is not affected. A small open_files shows it with a few
    sessions; the default 256 shows it with about 60 live sandboxes in one server."""

    def test_an_exec_d_cell_starts_sandboxes_while_the_engine_holds_many_descriptors(self):
        directory = tempdir(self)
        for start in ("fork", "exec"):
            with self.subTest(start=start):
                cell = {"name": "python", "language": "python", "pool": 1, "start": start,
                        "sessions": {"max": 16, "idle_ms": 60000},
                        "limits": {"timeout_ms": 20000, "cpu_ms": 10000, "open_files": 32}}
                peer = Stdio(write_config(directory, [cell]))
                try:
                    self.assertEqual(peer.request(INIT)["result"]["protocolVersion"],
                                     "2025-11-25")
                    statuses = []
                    for i in range(10):
                        m = peer.request(call(i + 1, "python", "6 * 7", session=f"s{i}"))
                        r = m["result"]["structuredContent"]
                        statuses.append((r["status"], r.get("error")))
                    self.assertEqual(statuses, [("ok", None)] * 10)
                finally:
                    code, err = peer.close()
                self.assertEqual(code, 0, err)
        self.assertEqual(stray_children(), [], "a sandbox outlived the server")
