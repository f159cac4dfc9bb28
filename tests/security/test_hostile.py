"""Hostile code, in Ruby and in Python: every way out that the issue lists, tried for real.
Each case asserts the exact outcome (the errno, the status) and that the host is unchanged
afterwards: no process left, no file outside the sandbox changed. The kernel's privileged
system calls are in test_probe.py; test_run.py has more walls (seccomp entry points, limits,
the engine's fds and environment)."""
import hashlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import (BIN, LAUNCHED, PRELUDE, EachLanguage, become_subreaper,  # noqa: E402
                     codecell, probe, run_json, stray_children, tempdir)


def setUpModule():
    become_subreaper()


def fingerprint(path):
    """Names, sizes and contents of everything under path."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(path)):
        dirnames.sort()
        for name in sorted(filenames) + dirnames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            h.update(f"{p} {st.st_mode} {st.st_size} {st.st_uid}".encode())
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


class HostUnchanged(EachLanguage):
    """Every case runs with a read-only and a read-write folder of its own; afterwards the
    read-only one is byte for byte the same and no process of the run is left. EXTRA: flags
    every run of the class gets (the WithSubprocesses classes run every case again in a cell
    that allows subprocesses)."""

    EXTRA = ()

    def setUp(self):
        self.ro = tempdir(self)
        self.rw = tempdir(self)
        with open(os.path.join(self.ro, "data.txt"), "w") as f:
            f.write("read me\n")
        os.chmod(self.ro, 0o755)
        os.chmod(self.rw, 0o777)
        self.before = fingerprint(self.ro)

    def tearDown(self):
        self.assertEqual(fingerprint(self.ro), self.before, "a read-only folder changed")
        self.assertEqual(stray_children(), [], "a sandbox process outlived its run")

    def mounts(self):
        return ("--mount", f"{self.ro}:/data", "--mount", f"{self.rw}:/out:rw", *self.EXTRA)

    def expect(self, code, value, *flags, status="ok"):
        def check(r, lang):
            self.assertEqual(r.status, status, r)
            if value is not None:
                self.assertEqual(r.result.get("value"), value, r)
        self.each_language(code, check, *self.mounts(), *flags)


SUBPROCESSES = ("--allow-subprocesses",)


class Files(HostUnchanged, unittest.TestCase):
    def test_secrets_of_the_host_are_not_there(self):
        self.expect(probe('["/etc/shadow", "/root", "/home", "/sys", "/boot"].map { |p| t { File.read(p) } }',
                          "[t(lambda: open(p).read()) for p in ['/etc/shadow', '/root', '/home', '/sys', '/boot']]"),
                    ["ENOENT"] * 5)

    def test_proc_1_is_our_own_init_and_not_ours_to_read(self):
        # Of another process's /proc files none is readable (Landlock grants the guest its
        # own); init's command line, readable before, was blanked (test_run.py checks that).
        self.expect(probe('[t { File.read("/proc/1/environ") }, t { File.read("/proc/1/cmdline") }, '
                          't { File.readlink("/proc/1/exe") }]',
                          "[t(lambda: open('/proc/1/environ').read()), t(lambda: open('/proc/1/cmdline').read()), "
                          "t(lambda: os.readlink('/proc/1/exe'))]"),
                    ["EACCES", "EACCES", "EACCES"])

    def test_writes_outside_the_mounts_are_refused(self):
        paths = ["/x", "/etc/passwd", "/usr/bin/ruby", "/codecell/y", "/data/data.txt", "/data/new"]
        self.expect(probe(f"{paths!r}.map {{ |p| t {{ File.write(p, 'x') }} }}".replace("'x'", '"x"'),
                          f"[t(lambda p=p: open(p, 'w').write('x')) for p in {paths!r}]"),
                    ["EROFS"] * 6)

    def test_dot_dot_and_proc_fd_lead_only_to_the_sandbox_root(self):
        self.expect(probe('d = File.open("/data"); fd = d.fileno; '
                          '[t { File.read("/data/../../../etc/shadow") }, '
                          't { File.read("/proc/self/fd/#{fd}/../../etc/shadow") }, '
                          't { File.read("/proc/self/root/etc/shadow") }, '
                          'Dir.children("/proc/self/fd/#{fd}/..").include?("codecell")]',
                          "fd = os.open('/data', os.O_RDONLY)\n"
                          "[t(lambda: open('/data/../../../etc/shadow').read()), "
                          "t(lambda: open('/proc/self/fd/%d/../../etc/shadow' % fd).read()), "
                          "t(lambda: open('/proc/self/root/etc/shadow').read()), "
                          "'codecell' in os.listdir('/proc/self/fd/%d/..' % fd)]"),
                    ["ENOENT", "ENOENT", "ENOENT", True])

    def test_links_planted_in_a_read_write_folder_do_not_reach_out(self):
        # A hard link to a file outside the folder cannot be made (another mount: EXDEV), and a
        # symlink the guest plants resolves inside the sandbox when the guest follows it.
        self.expect(probe('[t { File.link("/data/data.txt", "/out/hard") }, '
                          't { File.link("/etc/passwd", "/out/hard2") }, '
                          't { File.symlink("/etc/shadow", "/out/soft-rb"); File.read("/out/soft-rb") }]',
                          "[t(lambda: os.link('/data/data.txt', '/out/hard')), "
                          "t(lambda: os.link('/etc/passwd', '/out/hard2')), "
                          "t(lambda: (os.symlink('/etc/shadow', '/out/soft-py'), open('/out/soft-py').read()))]"),
                    ["EXDEV", "EXDEV", "ENOENT"])
        for name in ("hard", "hard2"):
            self.assertFalse(os.path.exists(os.path.join(self.rw, name)))

    def test_symlink_planted_by_the_host_is_followed_inside_the_sandbox(self):
        os.symlink("/etc/hostname", os.path.join(self.rw, "host-link"))
        self.expect({"ruby": 'File.read("/out/host-link")', "python": "open('/out/host-link').read()"},
                    "codecell\n")


class Network(HostUnchanged, unittest.TestCase):
    def test_no_network_of_any_kind(self):
        server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        server.bind(("127.0.0.1", 0))
        server.settimeout(0.3)
        self.addCleanup(server.close)
        port = server.getsockname()[1]
        self.expect(probe(f'require "socket"; [t {{ UDPSocket.new.send("x", 0, "127.0.0.1", {port}) }}, '
                          't { Socket.new(:INET, :RAW, 1) }, t { Socket.new(:PACKET, :RAW, 0) }, '
                          't { Socket.new(:NETLINK, :RAW, 0) }, t { Socket.new(:INET6, :STREAM, 0) }]',
                          "import socket as s\n"
                          f"[t(lambda: s.socket(s.AF_INET, s.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port}))), "
                          "t(lambda: s.socket(s.AF_INET, s.SOCK_RAW, 1)), "
                          "t(lambda: s.socket(s.AF_PACKET, s.SOCK_RAW, 0)), "
                          "t(lambda: s.socket(s.AF_NETLINK, s.SOCK_RAW, 0)), "
                          "t(lambda: s.socket(s.AF_INET6, s.SOCK_STREAM))]"),
                    ["EAFNOSUPPORT"] * 5)
        with self.assertRaises(socket.timeout):
            server.recvfrom(10)

    def test_dns_does_not_resolve(self):
        def check(r, lang):
            self.assertIn(r.result["value"], ("SocketError", "gaierror"), r)
        self.each_language(probe('require "socket"; t { Addrinfo.getaddrinfo("example.com", 443) }',
                                 "import socket\nt(lambda: socket.getaddrinfo('example.com', 443))"), check)


class Processes(HostUnchanged, unittest.TestCase):
    def test_fork_bomb_with_subprocesses_allowed_is_held_by_the_pids_limit(self):
        def check(r, lang):
            self.assertIn(r.status, ("ok", "error", "timeout"), r)
        self.each_language(probe("pids = []; 10_000.times { pids << (fork { sleep 3 } rescue break) }; pids.size",
                                 "n = 0\nwhile n < 10000:\n"
                                 "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
                                 "    if pid == 0:\n        import time; time.sleep(3); os._exit(0)\n    n += 1\nn"),
                           check, *self.mounts(), "--allow-subprocesses", "--timeout", "10s")

    def test_thread_bomb_is_held_by_the_pids_limit(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertLess(r.result["value"], 64, r)
        self.each_language(probe("ts = []; begin; 10_000.times { ts << Thread.new { sleep 2 } }; rescue ThreadError; end; ts.size",
                                 "import threading, time\nts = []\n"
                                 "try:\n    for _ in range(10000):\n"
                                 "        th = threading.Thread(target=time.sleep, args=(2,), daemon=True); th.start(); ts.append(th)\n"
                                 "except RuntimeError:\n    pass\nlen(ts)"),
                           check, *self.mounts(), "--timeout", "20s")

    def test_setuid_programs_run_without_privilege(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            code, out = r.result["value"]
            self.assertNotEqual(code, 0, r)
            self.assertNotIn("uid=0", out)
        self.each_language(
            {"ruby": 'out = `/usr/bin/mount -t tmpfs none /tmp 2>&1`; [$?.exitstatus, out]',
             "python": "import subprocess\np = subprocess.run(['/usr/bin/mount', '-t', 'tmpfs', 'none', '/tmp'], "
                       "capture_output=True, text=True)\n[p.returncode, p.stdout + p.stderr]"},
            check, *self.mounts(), "--allow-subprocesses")

    def test_programs_the_guest_writes_cannot_be_executed(self):
        self.expect(probe('File.write("/work/x.sh", "#!/bin/sh\\necho hi\\n"); File.chmod(0755, "/work/x.sh"); '
                          't { `/work/x.sh` }',
                          "import subprocess\nopen('/work/x.sh', 'w').write('#!/bin/sh\\necho hi\\n')\n"
                          "os.chmod('/work/x.sh', 0o755)\nt(lambda: subprocess.run(['/work/x.sh']))"),
                    "EACCES", "--allow-subprocesses")

    def test_only_its_own_processes_are_visible(self):
        self.expect({"ruby": 'Dir.children("/proc").grep(/\\A\\d+\\z/).map(&:to_i).sort.first',
                     "python": "import os\nsorted(int(p) for p in os.listdir('/proc') if p.isdigit())[0]"},
                    1)

    def test_its_process_group_and_session_are_its_sandbox_s_own(self):
        """kill(0, ...) and killpg reach the guest's process group: its sandbox's own (led by
        its init, PID 1, or for a forked sandbox by the interpreter itself, PID 2), never the
        engine's, which a script calling codecell shares (a group led from outside the pid
        namespace has the id 0 here). Landlock's signal scoping (ABI 6, Linux 6.12) would stop
        the signal too; older kernels have only this."""
        leader = 2 if os.environ.get("CODECELL_START") == "fork" else 1
        self.expect({"ruby": "[Process.getpgrp, Process.getsid]",
                     "python": "import os\n[os.getpgrp(), os.getsid(0)]"}, [leader, leader])


    def test_its_cgroup_is_the_root_of_what_it_sees(self):
        """/proc/self/cgroup names no cgroup: the run's cgroup is the root of its cgroup
        namespace. The cgroup's name (codecell-<pid>-<n>) would tell the guest the engine's
        pid and how many sandboxes it has made, other clients' runs included."""
        self.expect({"ruby": 'File.read("/proc/self/cgroup").lines.map { |l| l.chomp.split(":", 3)[2] }.uniq',
                     "python": "sorted(set(l.split(':', 2)[2] for l in open('/proc/self/cgroup').read().splitlines()))"},
                    ["/"])

# clone(flags) as a raw system call: the errno name, or "made" once the child (which exits at
# once) has been born. CLONE_PARENT = 0x8000; SIGCHLD = 17.
RAW_CLONE = {
    "ruby": "def clone_raw(flags)\n"
            "  pid = syscall(56, flags, 0, 0, 0, 0)\n"
            "  exit!(0) if pid.zero?\n"
            "  'made'\n"
            "rescue SystemCallError => e\n"
            "  e.class.name.sub('Errno::', '')\n"
            "end\n",
    "python": "import ctypes, errno, os\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "libc.syscall.restype = ctypes.c_long\n"
              "def clone_raw(flags):\n"
              "    pid = libc.syscall(ctypes.c_long(56), ctypes.c_long(flags), ctypes.c_long(0),\n"
              "                       ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))\n"
              "    if pid == 0:\n"
              "        os._exit(0)\n"
              "    return errno.errorcode[ctypes.get_errno()] if pid < 0 else 'made'\n",
}


class ChildrenOutsideTheSandbox(HostUnchanged, unittest.TestCase):
    """A process whose parent is outside its sandbox: with CLONE_PARENT the child's parent is
    the caller's parent, which for a forked sandbox's interpreter is the cell's zygote (and for
    an exec'd one, init). The zygote would hold it as a zombie that keeps the sandbox's pid
    namespace from ending, and enough of them would hide the next sandboxes' processes from
    the engine. Refused by the filter in both start modes, with subprocesses allowed or not."""

    EXTRA = SUBPROCESSES

    def test_clone_parent_is_refused(self):
        calls = ", ".join(f"clone_raw({flags})" for flags in (0x8000 | 17, 0x8000, 0x8000 | 0x200 | 17))
        self.expect({lang: RAW_CLONE[lang] + f"[{calls}]" for lang in ("ruby", "python")},
                    ["EPERM"] * 3)

    def test_clone_parent_is_refused_without_subprocesses(self):
        self.EXTRA = ()
        self.expect({lang: RAW_CLONE[lang] + "clone_raw(0x8000 | 17)" for lang in ("ruby", "python")},
                    "EPERM")

    def test_clone3_cannot_carry_the_flag_instead(self):
        # clone3 takes its flags in memory the filter cannot read: it answers ENOSYS outright.
        self.expect(probe("t { syscall(435, 0, 0) }",
                          "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                          "r = libc.syscall(435, 0, 0)\n"
                          "errno.errorcode[ctypes.get_errno()] if r < 0 else r"), "ENOSYS")

    def test_a_main_thread_that_exits_alone_ends_the_run_with_its_process(self):
        # exit (not exit_group) from the group leader: the process lives on in its other
        # thread. Python's ends the process itself; Ruby's cannot run without the lock the
        # leader took with it, and the wall clock ends it. Either way nothing is left.
        def check(r, lang):
            if lang == "python":
                self.assertEqual(r.status, "sandbox_error", r)
                self.assertIn("code 7", r.result["error"], r)
            else:
                self.assertEqual(r.status, "timeout", r)
        self.each_language({"ruby": "Thread.new { sleep 1; exit!(7) }; syscall(60, 0)",
                            "python": "import ctypes, os, threading, time\n"
                                      "def later():\n    time.sleep(1)\n    os._exit(7)\n"
                                      "threading.Thread(target=later).start()\n"
                                      "ctypes.CDLL(None).syscall(60, 0)"},
                           check, *self.mounts(), "--timeout", "5s")

    def test_a_subreaper_guest_keeps_its_orphans_inside(self):
        # The guest makes itself a subreaper, then orphans a grandchild: it is reparented to
        # the guest (inside the sandbox), reaped there, and the run ends as usual.
        self.expect({"ruby": 'require "fiddle"\n'
                             'prctl = Fiddle::Function.new(Fiddle.dlopen(nil)["prctl"], '
                             '[Fiddle::TYPE_INT] * 5, Fiddle::TYPE_INT)\n'
                             "prctl.call(36, 1, 0, 0, 0)\n"
                             "Process.wait(fork { fork { sleep 0.2; exit!(0) }; exit!(0) })\n"
                             "Process.wait\n:reaped",
                     "python": "import ctypes, os\n"
                               "ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)\n"
                               "pid = os.fork()\n"
                               "if pid == 0:\n"
                               "    if os.fork() == 0:\n"
                               "        import time; time.sleep(0.2); os._exit(0)\n"
                               "    os._exit(0)\n"
                               "os.waitpid(pid, 0)\nos.wait()\n'reaped'"},
                    "reaped")


class WhatTheGuestCanLearn(HostUnchanged, unittest.TestCase):
    """What a guest can read of how it was made: nothing of the zygote's (its start variable,
    the walls it hands every child), in both start modes; the environment the runtime shows
    and the one the kernel shows agree."""

    def test_the_environment_holds_no_trace_of_the_zygote(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            block, runtime = r.result["value"]
            self.assertFalse([e for e in block if "ZYGOTE" in e], block)
            self.assertFalse([k for k in runtime if "ZYGOTE" in k], runtime)
            # Every variable of the block is the runtime's, with the same value (the prelude may
            # add its own: MPLBACKEND).
            shown = dict(e.split("=", 1) for e in block if e)
            self.assertTrue(shown, block)
            self.assertEqual({k: runtime.get(k) for k in shown}, shown)
        self.each_language(
            {"ruby": 'block = File.binread("/proc/self/environ").split("\\0")\n[block, ENV.to_h]',
             "python": "import os\nblock = open('/proc/self/environ', 'rb').read().decode().split('\\0')\n"
                       "[block, dict(os.environ)]"},
            check, *self.mounts())

    def test_the_walls_say_nothing(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertIn(r.result["value"], (0, "ENOENT", "EACCES"), r)
        self.each_language(probe('t { File.binread("/codecell/walls").bytesize }',
                                 "t(lambda: len(open('/codecell/walls', 'rb').read()))"),
                           check, *self.mounts())


class Resources(HostUnchanged, unittest.TestCase):
    def test_deep_recursion_is_an_error(self):
        def check(r, lang):
            self.assertEqual(r.status, "error", r)
            self.assertEqual(r.result["error"]["class"],
                             "SystemStackError" if lang == "ruby" else "RecursionError")
        self.each_language({"ruby": "def f(n) = f(n + 1)\nf(0)",
                            "python": "def f(n): return f(n + 1)\nf(0)"}, check, *self.mounts())

    def test_a_million_small_files_stop_at_the_inode_cap(self):
        self.expect(probe('t { 1_000_000.times { |i| File.write("/work/f#{i}", "") } }',
                          "def many():\n    for i in range(1000000): open('/work/f%d' % i, 'w').close()\n"
                          "t(many)"),
                    "ENOSPC", "--timeout", "30s")

    def test_filling_a_read_write_folder_stops_at_the_file_size_limit(self):
        self.expect(probe('t { File.open("/out/big", "w") { |f| loop { f.write("x" * 1_048_576) } } }',
                          "def fill():\n    with open('/out/big', 'w') as f:\n"
                          "        while True: f.write('x' * 1048576)\nt(fill)"),
                    "EFBIG", "--timeout", "30s")
        self.assertEqual(os.path.getsize(os.path.join(self.rw, "big")), 64 << 20)

    def test_huge_stdout_and_stderr_are_capped(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertTrue(r.result["stdout_truncated"] and r.result["stderr_truncated"], r)
            # The first and last 512 KiB, and a marker for the 7 MiB between them.
            out = r.result["stdout"]
            self.assertEqual(len(out), (1 << 20) + len("\n[… 7.3 MB omitted …]\n"))
            self.assertEqual(out, "o" * (1 << 19) + "\n[… 7.3 MB omitted …]\n" + "o" * (1 << 19))
        self.each_language({"ruby": '8.times { $stdout.write("o" * 1_048_576); $stderr.write("e" * 1_048_576) }; 1',
                            "python": "import sys\nfor _ in range(8):\n"
                                      "    sys.stdout.write('o' * 1048576); sys.stderr.write('e' * 1048576)\n1"},
                           check, *self.mounts())


class Protocol(HostUnchanged, unittest.TestCase):
    def test_closing_the_control_socket_is_a_sandbox_error(self):
        def check(r, lang):
            self.assertEqual(r.status, "sandbox_error", r)
        self.each_language({"ruby": "IO.for_fd(3).close; sleep 3; 1",
                            "python": "import os, time\nos.close(3)\ntime.sleep(3)\n1"},
                           check, *self.mounts(), "--timeout", "10s")

    def test_a_forged_result_cannot_pick_the_status(self):
        # A result frame for an exec id the engine never sent, then the real code times out.
        frame = '{"t":"result","id":999,"ok":true,"value":"forged"}'
        n = len(frame)
        def check(r, lang):
            self.assertEqual(r.status, "sandbox_error", r)
            self.assertIn("result frame without the exec's id", r.result["error"])
            self.assertNotIn("forged", str(r.result.get("value")))
        self.each_language(
            {"ruby": f"io = IO.for_fd(3, autoclose: false); io.write([{n}].pack('N') + '{frame}'); io.flush; sleep 5",
             "python": f"import os, struct, time\nos.write(3, struct.pack('>I', {n}) + b'{frame}')\ntime.sleep(5)"},
            check, *self.mounts())

    def test_a_frame_after_the_result_changes_nothing(self):
        # The prelude's own result goes first; whatever a leftover thread writes afterwards
        # is never read: the run is over.
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], 1)
        frame = '{"t":"result","id":1,"ok":true,"value":"late"}'
        n = len(frame)
        self.each_language(
            {"ruby": f"Thread.new {{ sleep 0.2; io = IO.for_fd(3, autoclose: false); io.write([{n}].pack('N') + '{frame}') }}; 1",
             "python": f"import os, struct, threading, time\n"
                       f"threading.Thread(target=lambda: (time.sleep(0.2), os.write(3, struct.pack('>I', {n}) + b'{frame}')), daemon=True).start()\n1"},
            check, *self.mounts())

    def test_a_call_storm_stops_at_the_call_limit(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"][0], 1000, r)
            self.assertIn("limit", r.result["value"][1])
        self.each_language(
            {"ruby": "n = 0; msg = nil; 5000.times { begin; SB.call('nope'); rescue SB::UnknownTool; n += 1; "
                     "rescue SB::ToolError => e; msg = e.message; break; end }; [n, msg]",
             "python": "n, msg = 0, None\nfor _ in range(5000):\n    try:\n        sb.call('nope')\n"
                       "    except sb.UnknownTool:\n        n += 1\n    except sb.ToolError as e:\n"
                       "        msg = str(e); break\n[n, msg]"},
            check, *self.mounts())


class Neighbours(unittest.TestCase):
    """Two sandboxes at once: each sees only itself."""

    def test_two_sandboxes_cannot_see_or_touch_each_other(self):
        become_subreaper()
        shared = tempdir(self)
        os.chmod(shared, 0o777)
        first = {"ruby": 'require "socket"; File.write("/work/secret", "s"); File.write("/tmp/secret", "s"); '
                         's = UNIXServer.new("\\0codecell-neighbour"); File.write("/out/ready", Process.pid.to_s); '
                         'sleep 4; [Dir.children("/work"), Dir.children("/proc").grep(/\\A\\d+\\z/).size]'}
        proc = subprocess.Popen([BIN, "run", "--json", "--mount", f"{shared}:/out:rw", "-e", first["ruby"]],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        LAUNCHED.append(proc.pid)
        deadline = time.monotonic() + 20
        while not os.path.exists(os.path.join(shared, "ready")) and time.monotonic() < deadline:
            time.sleep(0.05)
        second = probe('require "socket"; [Dir.children("/work"), t { File.read("/tmp/secret") }, '
                       't { UNIXSocket.new("\\0codecell-neighbour") }, '
                       'Dir.children("/proc").grep(/\\A\\d+\\z/).map(&:to_i).max < 10, '
                       't { Process.kill(0, File.read("/out/ready").to_i) }]',
                       "import socket, signal\n"
                       "s = socket.socket(socket.AF_UNIX)\n"
                       "[os.listdir('/work'), t(lambda: open('/tmp/secret').read()), "
                       "t(lambda: s.connect('\\0codecell-neighbour')), "
                       "max(int(p) for p in os.listdir('/proc') if p.isdigit()) < 10, "
                       "t(lambda: os.kill(int(open('/out/ready').read()), 0))]")
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                r = run_json(second[lang], "--mount", f"{shared}:/out:rw", lang=lang)
                self.assertEqual(r.status, "ok", r)
                work, tmp, sock, small_pids, signal_result = r.result["value"]
                self.assertEqual(work, [])
                self.assertEqual(tmp, "ENOENT")
                self.assertIn(sock, ("ECONNREFUSED", "ENOENT", "EPERM"))
                self.assertTrue(small_pids)
                # The neighbour's pid names some process of ours, or none: never the neighbour.
                self.assertIn(signal_result, (1, None, "ESRCH", "EPERM"))
        out, err = proc.communicate(timeout=30)
        self.assertIn('"status":"ok"', out, err)
        self.assertEqual(stray_children(), [])


# ---- The walls a hostile review found open (each checks the effect on the host) ----------------

def privileged_entries(path):
    """Everything under path (itself included) that carries setuid, setgid or file
    capabilities."""
    found = []
    for dirpath, dirnames, filenames in os.walk(path):
        for p in [dirpath] + [os.path.join(dirpath, n) for n in filenames + dirnames]:
            st = os.lstat(p)
            if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                found.append((p, oct(st.st_mode)))
            try:
                os.getxattr(p, "security.capability", follow_symlinks=False)
                found.append((p, "security.capability"))
            except OSError:
                pass
    return found


class SetuidInReadWriteFolders(unittest.TestCase):
    """No way of making a file leaves a setuid or setgid program (or file capabilities) in a
    read-write folder, and the folder keeps its owner and mode. Tried with every call and tool
    the guest has, subprocesses allowed."""

    CODE = {
        "ruby": PRELUDE["ruby"] + r"""
require "fileutils"; require "fiddle"
libc = Fiddle.dlopen(nil)
sys = Fiddle::Function.new(libc["syscall"], [Fiddle::TYPE_LONG, Fiddle::TYPE_LONG, Fiddle::TYPE_VOIDP, Fiddle::TYPE_LONG, Fiddle::TYPE_LONG], Fiddle::TYPE_LONG)
setxattr = Fiddle::Function.new(libc["setxattr"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_VOIDP, Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_INT], Fiddle::TYPE_INT)
FileUtils.cp("/usr/bin/id", "/out/id")
r = []
r << t { File.chmod(04755, "/out/id") }
r << t { File.chmod(02755, "/out/id") }
r << t { File.open("/out/id") { |f| f.chmod(06755) } }
r << t { File.chmod(06777, "/out") }
r << t { File.chmod(0777, "/out") }
r << t { File.chmod(0700, "/out") }
r << t { File.open("/out/created", File::CREAT | File::WRONLY, 06755) { } }
r << t { Dir.mkdir("/out/dir", 02777); File.chmod(02775, "/out/dir") }
r << sys.call(452, -100, "/out/id", 04755, 0)
r << setxattr.call("/out/id", "security.capability", [0x02000001, 1 << 7, 0, 0, 0].pack("L5"), 20, 0)
r << system("chmod", "u+s", "/out/id", err: File::NULL)
r << system("install", "-m", "4755", "/usr/bin/id", "/out/installed", err: File::NULL)
r << system("cp", "-p", "/usr/bin/newgrp", "/out/copied", err: File::NULL)
File.write("/tmp/s", "x"); r << t { File.chmod(04755, "/tmp/s") }
r << t { File.rename("/tmp/s", "/out/moved") }
r
""",
        "python": PRELUDE["python"] + r"""
import ctypes, io, shutil, stat, subprocess, tarfile
libc = ctypes.CDLL(None, use_errno=True)
shutil.copyfile("/usr/bin/id", "/out/id")
r = []
r.append(t(lambda: os.chmod("/out/id", 0o4755)))
r.append(t(lambda: os.chmod("/out/id", 0o2755)))
fd = os.open("/out/id", os.O_RDONLY); r.append(t(lambda: os.fchmod(fd, 0o6755))); os.close(fd)
r.append(t(lambda: os.chmod("/out", 0o6777)))
r.append(t(lambda: os.chmod("/out", 0o777)))
r.append(t(lambda: os.chmod("/out", 0o700)))
r.append(t(lambda: os.close(os.open("/out/created", os.O_CREAT | os.O_WRONLY, 0o6755))))
r.append(t(lambda: os.mknod("/out/node", stat.S_IFREG | 0o6755)))
r.append(t(lambda: (os.mkdir("/out/dir", 0o2777), os.chmod("/out/dir", 0o2775))))
r.append(libc.syscall(452, -100, b"/out/id", 0o4755, 0))
r.append(libc.setxattr(b"/out/id", b"security.capability", (ctypes.c_uint32 * 5)(0x02000001, 1 << 7, 0, 0, 0), 20, 0))
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as tar:
    info = tarfile.TarInfo("tarred"); info.mode = 0o6755; info.size = 2
    tar.addfile(info, io.BytesIO(b"#!"))
data = buf.getvalue()
with tarfile.open(fileobj=io.BytesIO(data)) as tar:
    r.append(t(lambda: tar.extractall("/out/py")))
open("/tmp/a.tar", "wb").write(data)
os.mkdir("/out/tar")
r.append(subprocess.run(["tar", "-xpf", "/tmp/a.tar", "-C", "/out/tar"], capture_output=True).returncode)
r.append(subprocess.run(["chmod", "g+s", "/out/id"], capture_output=True).returncode)
r.append(subprocess.run(["install", "-m", "4755", "/usr/bin/id", "/out/installed"], capture_output=True).returncode)
r.append(subprocess.run(["cp", "-p", "/usr/bin/newgrp", "/out/copied"], capture_output=True).returncode)
r
""",
    }

    def test_nothing_made_in_a_read_write_folder_is_setuid_or_setgid(self):
        become_subreaper()
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                rw = tempdir(self)
                os.chmod(rw, 0o755)
                before = os.stat(rw)
                r = run_json(self.CODE[lang], "--mount", f"{rw}:/out:rw", "--allow-subprocesses", lang=lang)
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(privileged_entries(rw), [], r)
                after = os.stat(rw)
                self.assertEqual((after.st_uid, after.st_gid, oct(after.st_mode)),
                                 (before.st_uid, before.st_gid, oct(before.st_mode)))
                self.assertTrue(os.path.exists(os.path.join(rw, "id")))
                self.assertEqual(stray_children(), [])


class SetuidInReadWriteFoldersWithoutSubprocesses(unittest.TestCase):
    def test_the_copy_of_the_review_leaves_no_setuid_program(self):
        # The review's own steps, verbatim, in a cell without subprocesses.
        rw = tempdir(self)
        os.chmod(rw, 0o755)
        r = run_json('import os, shutil\nshutil.copyfile("/usr/bin/id", "/out/id")\n'
                     'errors = []\nfor p, m in (("/out/id", 0o4755), ("/out", 0o6777)):\n'
                     '    try:\n        os.chmod(p, m)\n    except OSError as e:\n        errors.append(e.errno)\n'
                     'errors', "--mount", f"{rw}:/out:rw", lang="python")
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.result["value"], [1, 1])  # EPERM, EPERM
        self.assertEqual(privileged_entries(rw), [])
        self.assertEqual(oct(os.stat(rw).st_mode), oct(stat.S_IFDIR | 0o755))


LOADER = "/lib64/ld-linux-x86-64.so.2"


class ProgramsTheGuestWrote(HostUnchanged, unittest.TestCase):
    """Nothing the guest wrote starts as a program: not from /tmp, /work or a read-write folder,
    not through the dynamic loader, not from a memfd; native code inside the interpreter
    (ctypes, Fiddle) still works."""

    EXTRA = SUBPROCESSES

    def test_no_file_the_guest_wrote_runs_as_a_program(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            v = r.result["value"]
            self.assertNotIn("uid=", json.dumps(v), r)
            for where in ("/tmp", "/work", "/out"):
                self.assertEqual(v[where + " exec"], "EACCES", v)
                self.assertNotEqual(v[where + " loader"], 0, v)
            self.assertEqual(v["memfd"], "EPERM", v)
            self.assertEqual(v["native code"], [1, 2, 3], v)
        self.each_language(probe(f"""
require "fiddle"; require "open3"
v = {{}}
%w[/tmp /work /out].each do |d|
  File.binwrite("#{{d}}/x", File.binread("/usr/bin/id")); File.chmod(0755, "#{{d}}/x")
  v["#{{d}} exec"] = t {{ Open3.capture2e("#{{d}}/x")[0] }}
  out, st = Open3.capture2e("{LOADER}", "#{{d}}/x")
  v["#{{d}} loader"] = st.exitstatus || -1
  v["#{{d}} out"] = out
end
libc = Fiddle.dlopen(nil)
memfd = Fiddle::Function.new(libc["memfd_create"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT], Fiddle::TYPE_INT)
v["memfd"] = memfd.call("x", 0) < 0 ? Errno.constants.find {{ |c| Errno.const_get(c)::Errno == Fiddle.last_error }}.to_s : "made"
qsort = Fiddle::Function.new(libc["qsort"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_VOIDP], Fiddle::TYPE_VOID)
cmp = Fiddle::Closure::BlockCaller.new(Fiddle::TYPE_INT, [Fiddle::TYPE_VOIDP, Fiddle::TYPE_VOIDP]) {{ |a, b| a[0, 4].unpack1("l") <=> b[0, 4].unpack1("l") }}
arr = Fiddle::Pointer[[3, 1, 2].pack("l*")]
qsort.call(arr, 3, 4, cmp)
v["native code"] = arr[0, 12].unpack("l*")
v
""", f"""
import ctypes, shutil, subprocess
v = {{}}
for d in ("/tmp", "/work", "/out"):
    shutil.copyfile("/usr/bin/id", d + "/x"); os.chmod(d + "/x", 0o755)
    v[d + " exec"] = t(lambda: subprocess.run([d + "/x"], capture_output=True))
    p = subprocess.run(["{LOADER}", d + "/x"], capture_output=True, text=True)
    v[d + " loader"] = p.returncode
    v[d + " out"] = p.stdout + p.stderr
v["memfd"] = t(lambda: os.memfd_create("x"))
libc = ctypes.CDLL(None)
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
arr = (ctypes.c_int * 3)(3, 1, 2)
libc.qsort(arr, 3, ctypes.sizeof(ctypes.c_int), CMP(lambda a, b: a[0] - b[0]))
v["native code"] = list(arr)
v
"""), check, *self.mounts())

    def test_the_loader_cannot_replace_the_interpreter_with_a_written_file(self):
        # Without forking: exec the loader in place of the interpreter, on a file in /tmp.
        def check(r, lang):
            self.assertNotIn("uid=", r.result.get("stdout", ""), r)
        self.each_language({"ruby": f'File.binwrite("/tmp/x", File.binread("/usr/bin/id")); exec("{LOADER}", "/tmp/x")',
                            "python": f'import os, shutil\nshutil.copyfile("/usr/bin/id", "/tmp/x")\n'
                                      f'os.execv("{LOADER}", ["{LOADER}", "/tmp/x"])'},
                           check, "--mount", f"{self.rw}:/out:rw")


class ExecMounts(unittest.TestCase):
    """User mounts are noexec unless marked exec, and a folder the guest can write cannot be:
    a program the host put in a read-only folder runs through the loader only from an exec
    mount (and never by execve: Landlock)."""

    def test_only_an_exec_mount_maps_programs(self):
        d = tempdir(self)
        shutil.copy("/usr/bin/id", os.path.join(d, "id"))
        os.chmod(d, 0o755)
        code = (f"import subprocess\np = subprocess.run(['{LOADER}', '/data/id'], capture_output=True, text=True)\n"
                "[p.returncode, p.stdout]")
        ro = run_json(code, "--mount", f"{d}:/data", "--allow-subprocesses", lang="python")
        self.assertEqual(ro.status, "ok", ro)
        self.assertNotEqual(ro.result["value"][0], 0, ro)
        self.assertNotIn("uid=", ro.result["value"][1])
        ex = run_json(code, "--mount", f"{d}:/data:exec", "--allow-subprocesses", lang="python")
        self.assertEqual(ex.status, "ok", ex)
        self.assertIn("uid=", ex.result["value"][1], ex)

    @unittest.skipUnless(os.geteuid() == 0, "needs root to bind-mount on the host")
    def test_a_host_bind_alias_of_a_read_write_folder_runs_nothing(self):
        # The same folder under two host paths (a bind mount the cell cannot see through):
        # written through the read-write one, loaded through the read-only one.
        src, alias = tempdir(self), tempdir(self)
        subprocess.run(["mount", "--bind", src, alias], check=True)
        self.addCleanup(subprocess.run, ["umount", alias])
        r = run_json("import shutil, subprocess\nshutil.copy('/usr/bin/id', '/b1/prog')\n"
                     f"p = subprocess.run(['{LOADER}', '/b2/prog'], capture_output=True, text=True)\n"
                     "[p.returncode, p.stdout]",
                     "--mount", f"{src}:/b1:rw", "--mount", f"{alias}:/b2", "--allow-subprocesses",
                     lang="python")
        self.assertEqual(r.status, "ok", r)
        self.assertNotEqual(r.result["value"][0], 0, r)
        self.assertNotIn("uid=", r.result["value"][1])

    def test_an_exec_mount_may_not_overlap_a_read_write_one(self):
        d = tempdir(self)
        os.mkdir(os.path.join(d, "inner"))
        for mounts in ((f"{d}:/out:rw", f"{d}/inner:/libs:exec"), (f"{d}/inner:/libs:exec", f"{d}:/out:rw"),
                       (f"{d}:/out:rw", f"{d}:/same:exec")):
            with self.subTest(mounts=mounts):
                r = codecell("run", "--json", "--mount", mounts[0], "--mount", mounts[1], "-e", "1")
                self.assertEqual(r.code, 2, r)
                self.assertIn("a folder the guest can write cannot be exec", r.stderr)


class LibraryFolderProbe(unittest.TestCase):
    """The interpreter's probe runs on the host, as the sandbox's user, and lists a library
    folder's contents in the description the model reads. A guest that can write the folder
    (here through a read-write mount of it in the same cell) plants symbolic links to the
    host's files and folders: the next probe must not follow them out of the folder."""

    def test_links_planted_in_a_library_folder_do_not_lead_the_probe_out(self):
        secret = tempdir(self)
        os.chmod(secret, 0o755)
        with open(os.path.join(secret, "key"), "w") as f:
            f.write("HOST_SECRET_LINE\n")
        os.chmod(os.path.join(secret, "key"), 0o644)
        for name in ("HOST_SECRET_NAME-1.0", "specifications", "HOST_SECRET_FILE.rb"):
            os.mkdir(os.path.join(secret, name))
        site = os.path.join(secret, "python%d.%d" % sys.version_info[:2], "site-packages")
        os.makedirs(site)
        open(os.path.join(site, "HOST_SECRET_MODULE.py"), "w").close()
        plant = {
            # A distribution whose metadata is the host's file; a package folder that is
            # the host's.
            ("python", "metadata"): "import os\nos.makedirs('/out/evil-1.0.dist-info')\n"
                                    f"os.symlink('{secret}/key', '/out/evil-1.0.dist-info/top_level.txt')\n"
                                    f"os.symlink('{secret}/key', '/out/evil-1.0.dist-info/RECORD')\n1",
            # A virtualenv whose lib/ is the host's folder.
            ("python", "virtualenv"): f"import os\nos.symlink('{secret}', '/out/lib')\n"
                                      "open('/out/pyvenv.cfg', 'w').close()\n1",
            # A gem home whose gems/ is the host's folder.
            ("ruby", "gem home"): f"File.symlink('{secret}', '/out/gems')\n"
                                  f"File.symlink('{secret}/specifications', '/out/specifications')\n1",
        }
        for (lang, shape), code in plant.items():
            with self.subTest(lang=lang, shape=shape):
                share = tempdir(self)
                os.chmod(share, 0o777)
                r = run_json(code, "--mount", f"{share}:/out:rw", lang=lang)
                self.assertEqual(r.status, "ok", r)
                d = codecell("describe", "--lang", lang, "--mount", f"{share}:/out:rw",
                             "--library", share)
                self.assertNotIn("HOST_SECRET", d.stdout + d.stderr, d)


class WatchingTheHost(HostUnchanged, unittest.TestCase):
    """An inotify watch on the shared /usr would report what the host runs, and give two
    sandboxes a channel: the guest cannot make one, while the host opens files there."""

    def test_host_activity_is_invisible(self):
        stop = threading.Event()

        def host_activity():
            while not stop.is_set():
                for name in ("true", "env", "id"):
                    with open(os.path.join("/usr/bin", name), "rb") as f:
                        f.read(16)
                time.sleep(0.01)
        worker = threading.Thread(target=host_activity, daemon=True)
        worker.start()
        self.addCleanup(stop.set)

        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], ["EPERM", 0], r)
        self.each_language(probe("""
require "fiddle"
libc = Fiddle.dlopen(nil)
init = Fiddle::Function.new(libc["inotify_init1"], [Fiddle::TYPE_INT], Fiddle::TYPE_INT)
fd = init.call(0)
if fd < 0
  [Errno.constants.find { |c| Errno.const_get(c)::Errno == Fiddle.last_error }.to_s, 0]
else
  add = Fiddle::Function.new(libc["inotify_add_watch"], [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT], Fiddle::TYPE_INT)
  add.call(fd, "/usr/bin", 0x20 | 0x01)
  io = IO.for_fd(fd); events = 0
  deadline = Time.now + 2
  while Time.now < deadline
    events += 1 if IO.select([io], nil, nil, 0.2) && io.readpartial(4096)
  end
  ["watching", events]
end
""", """
import ctypes, select, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
if fd < 0:
    result = [errno.errorcode[ctypes.get_errno()], 0]
else:
    libc.inotify_add_watch(fd, b"/usr/bin", 0x20 | 0x01)
    events, deadline = 0, time.monotonic() + 2
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 0.2)[0]:
            os.read(fd, 4096); events += 1
    result = ["watching", events]
result
"""), check, *self.mounts())


class HostPaths(unittest.TestCase):
    """No host path of a mounted folder appears anywhere under /proc the guest can read (the
    folder names here stand for a customer's)."""

    def test_no_mounted_folder_shows_its_host_path(self):
        ro = tempfile.mkdtemp(prefix="client-acme-private-")
        rw = tempfile.mkdtemp(prefix="client-acme-private-")
        for d in (ro, rw):
            self.addCleanup(subprocess.run, ["rm", "-rf", d])
            os.chmod(d, 0o755)
        code = {"ruby": PRELUDE["ruby"] + """
found = []
Dir.glob("/proc/**/*").each do |p|
  begin
    if File.symlink?(p)
      found << p if File.readlink(p).include?("client-acme")
    elsif File.file?(p)
      found << p if File.open(p, "rb") { |f| f.read(1 << 20).to_s }.include?("client-acme")
    end
  rescue SystemCallError, IOError
  end
end
[found, Dir.children("/data") == [] && Dir.children("/out") == []]
""", "python": PRELUDE["python"] + """
found = []
for root, dirs, files in os.walk("/proc"):
    for n in files + dirs:
        p = os.path.join(root, n)
        try:
            if os.path.islink(p):
                if "client-acme" in os.readlink(p):
                    found.append(p)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    if b"client-acme" in f.read(1 << 20):
                        found.append(p)
        except OSError:
            pass
[found, os.listdir("/data") == [] and os.listdir("/out") == []]
"""}
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                r = run_json(code[lang], "--mount", f"{ro}:/data", "--mount", f"{rw}:/out:rw",
                             "--timeout", "60s", lang=lang, timeout=180)
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"], [[], True], r)


class CpuOfEveryProcess(HostUnchanged, unittest.TestCase):
    """The CPU budget counts every process of the run, not only the interpreter's clock: a
    spinning child ends the run as fuel_exhausted at the budget, long before the wall clock."""

    def test_a_spinning_child_spends_the_runs_budget(self):
        def check(r, lang):
            self.assertEqual(r.status, "fuel_exhausted", r)
            self.assertGreaterEqual(r.result["cpu_ms"], 1000, r)
        self.each_language({"ruby": "fork { loop {} }; sleep 300",
                            "python": "import subprocess, sys, time\n"
                                      "subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n"
                                      "time.sleep(300)"},
                           check, *self.mounts(), "--allow-subprocesses", "--cpu", "1s", "--timeout", "100s")


def runs_have_cgroup():
    """Whether runs here get a cgroup (root on this host; a delegated v2 subtree elsewhere)."""
    r = run_json("1", "--on-unsupported", "ignore")
    return any(layer.startswith("cgroup_v") for layer in r.result["sandbox"])


class CpuOfChildrenTheKernelReaps(HostUnchanged, unittest.TestCase):
    """A parent that ignores SIGCHLD has its children reaped by the kernel, and their CPU time
    reaches no parent: the cgroup's own count still holds it. Without a cgroup this is a known
    gap (docs/security.md)."""

    def test_short_lived_children_spend_the_budget(self):
        if not runs_have_cgroup():
            self.skipTest("no cgroup for runs here as this user: auto-reaped children are "
                          "not counted (documented in docs/security.md)")

        def check(r, lang):
            self.assertEqual(r.status, "fuel_exhausted", r)
        # Each child spends 7 ms of its own CPU (less than one 10 ms check) and exits; 2,000 of
        # them spend 14 s, the parent itself under 5 s, then it sleeps.
        self.each_language(
            {"ruby": 'require "fiddle"\n'
                     'Fiddle::Function.new(Fiddle.dlopen(nil)["signal"], [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP], '
                     'Fiddle::TYPE_VOIDP).call(17, 1)\n'
                     "cpu = -> { Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) }\n"
                     "2000.times do\n"
                     "  begin\n    fork { e = cpu.() + 0.007; nil while cpu.() < e; exit!(0) }\n"
                     "  rescue Errno::EAGAIN\n    sleep 0.05; retry\n  end\n"
                     "  sleep 0.008\nend\nsleep 300",
             "python": "import os, signal, time\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
                       "for _ in range(2000):\n"
                       "    while True:\n"
                       "        try:\n            pid = os.fork()\n            break\n"
                       "        except OSError:\n            time.sleep(0.05)\n"
                       "    if pid == 0:\n"
                       "        e = time.process_time() + 0.007\n"
                       "        while time.process_time() < e: pass\n        os._exit(0)\n"
                       "    time.sleep(0.008)\n"
                       "time.sleep(300)"},
            check, *self.mounts(), "--allow-subprocesses", "--cpu", "5s", "--timeout", "100s")


class HostToolsCannotTakeTheHostDown(unittest.TestCase):
    """A command tool that closes its stdin early raises no SIGPIPE in codecell; one that
    closes its output and sleeps (or never exits) is stopped at its deadline, with its whole
    process group."""

    def test_tools_that_misbehave_end_as_tool_errors(self):
        become_subreaper()
        d = tempdir(self)
        tools = os.path.join(d, "tools.json")
        with open(tools, "w") as f:
            json.dump({"tools": [
                {"name": "shut", "description": "closes its stdin at once",
                 "command": ["/bin/sh", "-c", "exec 0<&-; sleep 0.2; echo '{\"ok\": 1}'"]},
                {"name": "mute", "description": "closes its output and sleeps",
                 "command": ["/bin/sh", "-c", "exec >&- 2>&-; sleep 600"], "timeout_ms": 500},
                {"name": "forks", "description": "leaves a child behind that holds nothing",
                 "command": ["/bin/sh", "-c", "exec >&- 2>&- 0<&-; sleep 600 & sleep 600"], "timeout_ms": 500},
            ]}, f)
        code = {"ruby": 'big = "x" * 300_000; %w[shut mute forks].map { |n| begin; SB.call(n, blob: big); '
                        'rescue SB::ToolError => e; e.message; end }',
                "python": 'big = "x" * 300000\nr = []\nfor n in ("shut", "mute", "forks"):\n'
                          '    try:\n        r.append(sb.call(n, blob=big))\n'
                          '    except sb.ToolError as e:\n        r.append(str(e))\nr'}
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang):
                for _ in range(3):
                    r = run_json(code[lang], "--tools", tools, lang=lang)
                    self.assertEqual(r.code, 0, r)
                    self.assertEqual(r.status, "ok", r)
                    shut, mute, forks = r.result["value"]
                    self.assertEqual(shut, {"ok": 1})
                    self.assertIn('"mute" did not answer within 500 ms', mute)
                    self.assertIn('"forks" did not answer within 500 ms', forks)
                    self.assertEqual(stray_children(), [], "a tool process outlived its call")


class ForgedResults(HostUnchanged, unittest.TestCase):
    def test_a_result_frame_with_a_guessed_id_is_refused(self):
        # Exec ids are random: a frame with a small id (the old, guessable sequence) is a
        # protocol error, never the run's result.
        frames = [f'{{"t":"result","id":{i},"ok":true,"value":"forged"}}' for i in range(0, 4)]
        def check(r, lang):
            self.assertEqual(r.status, "sandbox_error", r)
            self.assertIn("result frame without the exec's id", r.result["error"])
        ruby = "io = IO.for_fd(3, autoclose: false); " + "; ".join(
            f"io.write([{len(f)}].pack('N') + '{f}')" for f in frames) + "; io.flush; sleep 5"
        python = "import os, struct, time\n" + "".join(
            f"os.write(3, struct.pack('>I', {len(f)}) + b'{f}')\n" for f in frames) + "time.sleep(5)"
        self.each_language({"ruby": ruby, "python": python}, check, *self.mounts())


# Every case of these classes again, in a cell that allows subprocesses.
def with_subprocesses(cls):
    return type(cls.__name__ + "WithSubprocesses", (cls,), {"EXTRA": SUBPROCESSES})


FilesWithSubprocesses = with_subprocesses(Files)
NetworkWithSubprocesses = with_subprocesses(Network)
ProcessesWithSubprocesses = with_subprocesses(Processes)
ResourcesWithSubprocesses = with_subprocesses(Resources)
ProtocolWithSubprocesses = with_subprocesses(Protocol)
WatchingTheHostWithSubprocesses = with_subprocesses(WatchingTheHost)
ForgedResultsWithSubprocesses = with_subprocesses(ForgedResults)

if __name__ == "__main__":
    unittest.main()
