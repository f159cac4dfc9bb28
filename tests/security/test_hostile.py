"""Hostile code, in Ruby and in Python: every way out that the issue lists, tried for real.
Each case asserts the exact outcome (the errno, the status) and that the host is unchanged
afterwards: no process left, no file outside the sandbox changed. The kernel's privileged
system calls are in test_probe.py; test_run.py has more walls (seccomp entry points, limits,
the engine's fds and environment)."""
import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import (BIN, LAUNCHED, EachLanguage, become_subreaper, probe,  # noqa: E402
                     run_json, stray_children, tempdir)


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
    read-only one is byte for byte the same and no process of the run is left."""

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
        return ("--mount", f"{self.ro}:/data", "--mount", f"{self.rw}:/out:rw")

    def expect(self, code, value, *flags, status="ok"):
        def check(r, lang):
            self.assertEqual(r.status, status, r)
            if value is not None:
                self.assertEqual(r.result.get("value"), value, r)
        self.each_language(code, check, *self.mounts(), *flags)


class Files(HostUnchanged, unittest.TestCase):
    def test_secrets_of_the_host_are_not_there(self):
        self.expect(probe('["/etc/shadow", "/root", "/home", "/sys", "/boot"].map { |p| t { File.read(p) } }',
                          "[t(lambda: open(p).read()) for p in ['/etc/shadow', '/root', '/home', '/sys', '/boot']]"),
                    ["ENOENT"] * 5)

    def test_proc_1_is_our_own_init_with_nothing_in_its_environment(self):
        self.expect(probe('[t { File.read("/proc/1/environ") }, t { File.read("/proc/1/cmdline").delete("\\0").strip.empty? }]',
                          "[t(lambda: open('/proc/1/environ').read()), "
                          "t(lambda: open('/proc/1/cmdline').read().replace('\\0', '').strip() == '')]"),
                    ["EACCES", True])

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
            self.assertEqual(len(r.result["stdout"]), 1 << 20)
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


if __name__ == "__main__":
    unittest.main()
