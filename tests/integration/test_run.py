"""End-to-end tests of `codecell run` through the real binary and the real kernel.

Run as root and, by tests/integration/as_unprivileged.sh, as a normal user."""
import json
import os
import socket
import subprocess
import time
import unittest

from harness import (BIN, LAUNCHED, become_subreaper, codecell, leftover_cgroups, run_json, stray_children,
                     tempdir)

ROOT = os.geteuid() == 0


class Statuses(unittest.TestCase):
    """Every status of DESIGN §6, decided by the host."""

    def test_ok_value_of_last_expression(self):
        r = run_json("x = 20\nx + 22")
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.result["value"], 42)
        self.assertEqual(r.code, 0)
        self.assertIn("duration_ms", r.result)
        self.assertIn("seccomp", r.result["sandbox"])

    def test_error_with_class_message_and_guest_backtrace(self):
        r = run_json("def boom = raise(ArgumentError, 'bad input')\nboom")
        self.assertEqual(r.status, "error", r)
        self.assertEqual(r.code, 1)
        err = r.result["error"]
        self.assertEqual(err["class"], "ArgumentError")
        self.assertEqual(err["message"], "bad input")
        self.assertEqual(err["backtrace"][0], "sandbox:1:in `boom'")
        self.assertFalse(any("/codecell/" in f for f in err["backtrace"]), err)

    def test_backtrace_is_capped_at_20_frames(self):
        r = run_json("def f(n) = n.zero? ? raise('deep') : f(n - 1)\nf(100)")
        self.assertEqual(r.status, "error", r)
        self.assertEqual(len(r.result["error"]["backtrace"]), 20)

    def test_syntax_error_is_an_error(self):
        r = run_json("def (")
        self.assertEqual(r.status, "error", r)
        self.assertEqual(r.result["error"]["class"], "SyntaxError")

    def test_timeout_busy_loop(self):
        r = run_json("loop {}", "--timeout", "1s")
        self.assertEqual(r.status, "timeout", r)
        self.assertEqual(r.code, 3)
        self.assertIn("1000 ms", r.result["error"])
        self.assertGreater(r.result["cpu_ms"], 500)  # the guest's CPU is counted even when killed

    def test_timeout_sleep(self):
        r = run_json("sleep 100", "--timeout", "500ms")
        self.assertEqual(r.status, "timeout", r)

    def test_fuel_exhausted(self):
        r = run_json("loop {}", "--cpu", "1s", "--timeout", "20s")
        self.assertEqual(r.status, "fuel_exhausted", r)
        self.assertEqual(r.code, 3)
        self.assertGreaterEqual(r.result["cpu_ms"], 900)

    def test_memory_limit_huge_string(self):
        r = run_json('"x" * 2**31', "--memory", "128M")
        self.assertEqual(r.status, "memory_limit", r)
        self.assertEqual(r.code, 3)
        self.assertIn("128 MiB", r.result["error"])

    def test_memory_limit_slow_leak(self):
        r = run_json('a = []; loop { a << "x" * 1_000_000 }', "--memory", "128M")
        self.assertEqual(r.status, "memory_limit", r)

    def test_guest_raising_nomemoryerror_by_hand_is_an_error(self):
        r = run_json('raise NoMemoryError, "fake"')
        self.assertEqual(r.status, "error" if ROOT else "memory_limit", r)

    def test_exit_without_result_is_sandbox_error(self):
        r = run_json("exit!(3)")
        self.assertEqual(r.status, "sandbox_error", r)
        self.assertEqual(r.code, 4)
        self.assertIn("exited with code 3", r.result["error"])

    def test_killed_interpreter_is_sandbox_error(self):
        r = run_json("Process.kill(:KILL, Process.pid)")
        self.assertEqual(r.status, "sandbox_error", r)
        self.assertIn("signal 9", r.result["error"])

    def test_corrupt_frame_is_sandbox_error(self):
        r = run_json('io = IO.for_fd(3, autoclose: false); io.write("\\x00\\x00\\x00\\x05hello"); io.flush; sleep 5')
        self.assertEqual(r.status, "sandbox_error", r)
        self.assertIn("not valid JSON", r.result["error"])

    def test_oversize_frame_is_sandbox_error(self):
        r = run_json('io = IO.for_fd(3, autoclose: false); io.write("\\x7f\\xff\\xff\\xff"); io.flush; sleep 5')
        self.assertEqual(r.status, "sandbox_error", r)
        self.assertIn("over the", r.result["error"])

    def test_unknown_host_tool_raises_unknowntool(self):
        r = run_json('begin; SB.call("nope"); rescue SB::UnknownTool => e; e.message; end')
        self.assertEqual(r.status, "ok", r)
        self.assertIn('unknown tool "nope"', r.result["value"])


class Values(unittest.TestCase):
    CASES = [
        ("nil", None),
        ("42", 42),
        ("-7.25", -7.25),
        ("0.1 + 0.2", 0.3),
        ("'héllo wörld ✓ 🎉'", "héllo wörld ✓ 🎉"),
        ("[1, 'two', nil, [3]]", [1, "two", None, [3]]),
        ("{a: 1, 'b' => {c: [true, false]}}", {"a": 1, "b": {"c": [True, False]}}),
        (":sym", "sym"),
        ("2**70", str(2**70)),
        ("Struct.new(:x).new(1)", "#<struct x=1>"),
        ("Float::INFINITY", "Infinity"),
    ]

    def test_values_survive_json(self):
        for code, expected in self.CASES:
            with self.subTest(code=code):
                r = run_json(code)
                self.assertEqual(r.status, "ok", r)
                if isinstance(expected, float):
                    self.assertAlmostEqual(r.result["value"], expected)
                else:
                    self.assertEqual(r.result["value"], expected)

    def test_object_that_only_inspects(self):
        r = run_json("class Point; def inspect = '#<Point 1,2>'; end; Point.new")
        self.assertEqual(r.result["value"], "#<Point 1,2>")

    def test_nan_falls_back_to_inspect(self):
        r = run_json("0.0 / 0")
        self.assertEqual(r.result["value"], "NaN")


class Output(unittest.TestCase):
    def test_stdout_and_stderr_are_captured(self):
        r = run_json('puts "out ✓"; $stderr.puts "err"; print "tail"; 1')
        self.assertEqual(r.result["stdout"], "out ✓\ntail")
        self.assertEqual(r.result["stderr"], "err\n")
        self.assertNotIn("stdout_truncated", r.result)

    def test_output_is_capped_with_flags(self):
        r = run_json('$stdout.write("a" * 100_000); $stderr.write("b" * 100_000); 1',
                     "--max-output", "1K")
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.result["stdout"], "a" * 1024)
        self.assertTrue(r.result["stdout_truncated"])
        self.assertEqual(len(r.result["stderr"]), 1024)
        self.assertTrue(r.result["stderr_truncated"])

    def test_invalid_utf8_output_is_replaced(self):
        r = run_json('$stdout.write("a\\xffb".b); 1')
        self.assertEqual(r.result["stdout"], "a\ufffdb")

    def test_output_before_a_timeout_is_kept(self):
        r = run_json('puts "started"; $stdout.flush; sleep 100', "--timeout", "500ms")
        self.assertEqual(r.status, "timeout")
        self.assertEqual(r.result["stdout"], "started\n")

    def test_human_output(self):
        r = codecell("run", "-e", 'puts "hi"; [1, 2]')
        self.assertEqual(r.code, 0)
        self.assertEqual(r.stdout, "hi\n=> [1,2]\n")
        r = codecell("run", "-e", 'raise "nope"')
        self.assertEqual(r.code, 1)
        self.assertIn("RuntimeError: nope", r.stderr)
        self.assertIn("from sandbox:1:in `<main>'", r.stderr)


class Mounts(unittest.TestCase):
    def test_read_only_mount_is_readable_and_refuses_writes(self):
        d = tempdir(self)
        with open(os.path.join(d, "sales.csv"), "w") as f:
            f.write("a,b\n1,2\n")
        os.chmod(os.path.join(d, "sales.csv"), 0o600)
        r = run_json('[File.read("/data/sales.csv"), '
                     '(File.write("/data/new", "x") rescue $!.class.name), '
                     '(File.write("/data/sales.csv", "x") rescue $!.class.name)]',
                     "--mount", f"{d}:/data")
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.result["value"][0], "a,b\n1,2\n")
        self.assertEqual(r.result["value"][1], "Errno::EROFS")
        self.assertEqual(r.result["value"][2], "Errno::EROFS")
        self.assertEqual(sorted(os.listdir(d)), ["sales.csv"])
        with open(os.path.join(d, "sales.csv")) as f:
            self.assertEqual(f.read(), "a,b\n1,2\n")

    def test_read_write_mount_file_belongs_to_the_folder_owner(self):
        d = tempdir(self)
        owner = 12345 if ROOT else os.geteuid()
        if ROOT:
            os.chown(d, owner, owner)
        r = run_json('File.write("/out/report.md", "# hi"); Dir.mkdir("/out/sub"); '
                     'File.write("/out/sub/x", "1"); Process.uid',
                     "--mount", f"{d}:/out:rw")
        self.assertEqual(r.status, "ok", r)
        path = os.path.join(d, "report.md")
        with open(path) as f:
            self.assertEqual(f.read(), "# hi")
        for p in (path, os.path.join(d, "sub"), os.path.join(d, "sub", "x")):
            self.assertEqual(os.stat(p).st_uid, owner, p)
            self.assertEqual(os.stat(p).st_gid, os.stat(d).st_gid, p)

    def test_symlink_in_mount_cannot_escape(self):
        d = tempdir(self)
        os.symlink("/etc/shadow", os.path.join(d, "shadow"))
        os.symlink("../../../../../../etc", os.path.join(d, "up"))
        r = run_json('[(File.read("/data/shadow") rescue $!.class.name), '
                     '(File.read("/data/up/shadow") rescue $!.class.name)]',
                     "--mount", f"{d}:/data")
        self.assertEqual(r.result["value"], ["Errno::ENOENT", "Errno::ENOENT"], r)

    def test_bad_mounts_are_usage_errors(self):
        d = tempdir(self)
        cases = [
            (["--mount", "/nonexistent-codecell:/data"], "source /nonexistent-codecell does not exist"),
            (["--mount", f"{d}:/data", "--mount", f"{d}:/data/x"], "dest overlaps the mount at /data"),
            (["--mount", f"{d}:/work"], "dest overlaps the reserved /work"),
            (["--mount", f"{d}:/usr/local"], "dest overlaps the reserved /usr"),
            (["--mount", f"{d}:data"], "dest must be absolute"),
            (["--mount", f"{d}:/data/"], "must be normalized"),
            (["--mount", f"{d}:/data:rx"], "mode must be ro or rw"),
            (["--mount", d], "expected SRC:DST"),
            (["--mount", "/etc/hostname:/data"], "not a directory"),
        ]
        for flags, message in cases:
            with self.subTest(flags=flags):
                r = codecell("run", *flags, "-e", "1")
                self.assertEqual(r.code, 2, r)
                self.assertIn(message, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)


class Isolation(unittest.TestCase):
    def test_work_is_empty_at_every_start(self):
        for _ in range(2):
            r = run_json('before = Dir.children("/work"); File.write("/work/x", "1"); before')
            self.assertEqual(r.result["value"], [], r)

    def test_host_files_outside_mounts_are_invisible(self):
        r = run_json('%w[/etc/shadow /root /home /etc/ssh /var /sys/kernel /boot].map { |p| File.exist?(p) }')
        self.assertEqual(r.result["value"], [False] * 7, r)
        r = run_json('Dir.children("/").sort')
        self.assertEqual(r.result["value"],
                         sorted(["bin", "codecell", "dev", "etc", "lib", "lib32", "lib64", "proc",
                                 "sbin", "tmp", "usr", "work"]), r)

    def test_root_and_etc_are_read_only(self):
        r = run_json('[(File.write("/etc/hostname", "x") rescue $!.class.name), '
                     '(File.write("/new", "x") rescue $!.class.name), '
                     '(File.write("/codecell/prelude.rb", "x") rescue $!.class.name)]')
        self.assertEqual(r.result["value"], ["Errno::EROFS"] * 3, r)

    def test_hostname_and_pid_namespace(self):
        r = run_json('[File.read("/etc/hostname"), Socket.gethostname, Process.pid, '
                     'Dir.children("/proc").grep(/\\A\\d+\\z/).size]'.replace(
                         "Socket", "(require 'socket'; Socket)"))
        self.assertEqual(r.result["value"][:3], ["codecell\n", "codecell", 2], r)
        self.assertLessEqual(r.result["value"][3], 3)

    def test_guest_is_never_host_root(self):
        r = run_json('[Process.uid, File.read("/proc/self/uid_map").split.map(&:to_i)]')
        uid, (inside, outside, count) = r.result["value"]
        self.assertEqual(uid, 1000)
        self.assertEqual(inside, 1000)
        self.assertNotEqual(outside, 0)
        self.assertEqual(count, 1)

    def test_no_capabilities_and_no_new_privs(self):
        r = run_json('File.read("/proc/self/status").lines.grep(/^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):/).map(&:split).to_h')
        v = r.result["value"]
        for cap in ("CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"):
            self.assertEqual(int(v[cap], 16), 0, v)
        self.assertEqual(v["NoNewPrivs:"], "1")
        self.assertEqual(v["Seccomp:"], "2")

    def test_network_is_unreachable(self):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.5)
        port = server.getsockname()[1]
        self.addCleanup(server.close)
        r = run_json(f'require "socket"; [(TCPSocket.new("127.0.0.1", {port}) rescue $!.class.name), '
                     '(Addrinfo.getaddrinfo("example.com", 80) rescue $!.class.name), '
                     '(UDPSocket.new.send("x", 0, "127.0.0.1", 53) rescue $!.class.name)]')
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.result["value"][0], "Errno::EAFNOSUPPORT")
        self.assertIn(r.result["value"][1], ("SocketError", "Errno::EAFNOSUPPORT"))
        self.assertEqual(r.result["value"][2], "Errno::EAFNOSUPPORT")
        with self.assertRaises(socket.timeout):
            server.accept()

    def test_no_subprocesses(self):
        r = run_json('[(`id` rescue $!.class.name), (fork rescue $!.class.name), '
                     '(exec("/bin/ls") rescue $!.class.name)]')
        self.assertEqual(r.result["value"], ["Errno::EPERM", "Errno::EPERM", "Errno::EACCES"], r)

    def test_threads_work(self):
        r = run_json("4.times.map { |i| Thread.new { i * 2 } }.map(&:value)")
        self.assertEqual(r.result["value"], [0, 2, 4, 6], r)

    def test_stdlib_requires_work(self):
        r = run_json('require "csv"; require "set"; require "digest"; '
                     'CSV.parse("a,b\\n1,2", headers: true).map(&:to_h)')
        self.assertEqual(r.result["value"], [{"a": "1", "b": "2"}], r)

    def test_engine_environment_does_not_leak(self):
        os.environ["CODECELL_TEST_SECRET"] = "hunter2"
        try:
            r = run_json("ENV.to_h")
        finally:
            del os.environ["CODECELL_TEST_SECRET"]
        self.assertNotIn("CODECELL_TEST_SECRET", r.result["value"])
        self.assertEqual(r.result["value"]["HOME"], "/work")

    def test_engine_fds_do_not_leak(self):
        r = run_json('Dir.children("/proc/self/fd").map(&:to_i).sort')
        # 0-2 stdio, 3 control socket, plus the one Dir.children itself opens and Ruby's own.
        self.assertLessEqual(max(r.result["value"]), 12, r)


MACHINE_CODE = """
require "fiddle"
code = [%s].pack("C*")
mem = Fiddle::Pointer.malloc(8192)
page = (mem.to_i + 4095) & ~4095
Fiddle::Pointer.new(page)[0, code.bytesize] = code
syscall(10, page, 4096, 7) # mprotect RWX
Fiddle::Function.new(page, [], Fiddle::TYPE_LONG).call
"""


class Seccomp(unittest.TestCase):
    """The filter, tried from inside with Ruby's raw Kernel#syscall (x86_64 numbers)."""

    DENIED = {
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272,
        "setns": 308, "ptrace": 101, "bpf": 321, "perf_event_open": 298, "keyctl": 250,
        "io_uring_setup": 425, "userfaultfd": 323, "init_module": 175, "kexec_load": 246,
        "reboot": 169, "clock_settime": 227, "personality": 135, "open_tree": 428,
        "fsopen": 430, "fork": 57, "vfork": 58,
    }

    def test_denied_calls_answer_eperm(self):
        probes = ", ".join(f'"{name}" => (syscall({nr}, 0, 0, 0, 0, 0) rescue $!.class.name)'
                           for name, nr in self.DENIED.items())
        r = run_json("{" + probes + "}")
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.result["value"], {name: "Errno::EPERM" for name in self.DENIED})

    def test_clone3_answers_enosys_so_threads_fall_back_to_clone(self):
        r = run_json("syscall(435, 0, 0) rescue $!.class.name")
        self.assertEqual(r.result["value"], "Errno::ENOSYS")

    def test_native_machine_code_runs(self):
        # mov eax, 39 (getpid); syscall; ret: the control case for the two below.
        r = run_json(MACHINE_CODE % "0xB8, 0x27, 0, 0, 0, 0x0F, 0x05, 0xC3")
        self.assertEqual(r.result["value"], 2, r)

    def test_i386_entry_kills_the_process(self):
        # mov eax, 20 (getpid on i386); int 0x80; ret
        r = run_json(MACHINE_CODE % "0xB8, 0x14, 0, 0, 0, 0xCD, 0x80, 0xC3")
        self.assertEqual(r.status, "sandbox_error", r)
        self.assertIn("signal 31", r.result["error"])

    def test_x32_entry_kills_the_process(self):
        r = run_json("syscall(0x40000000 | 39)")
        self.assertEqual(r.status, "sandbox_error", r)
        self.assertIn("signal 31", r.result["error"])


class Cleanup(unittest.TestCase):
    def test_nothing_left_after_every_kind_of_end(self):
        become_subreaper()
        first = len(LAUNCHED)
        for code, flags in [("1", []), ("loop {}", ["--timeout", "300ms"]),
                            ("sleep 100", ["--timeout", "300ms"]),
                            ('"x" * 2**31', ["--memory", "64M"]), ("exit!(1)", []),
                            ("Thread.new { sleep 100 }; 1", [])]:
            r = run_json(code, *flags)
            self.assertIsNotNone(r.result, r)
        self.assertEqual(stray_children(), [])
        self.assertEqual(leftover_cgroups(LAUNCHED[first:]), [])


    def test_engine_killed_mid_run_leaves_nothing(self):
        become_subreaper()
        proc = subprocess.Popen([BIN, "run", "-e", "sleep 100"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        self.assertNotEqual(stray_children(), [], "the sandbox should be running by now")
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 5
        while stray_children() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(stray_children(), [])
        # Its cgroups (root only) are swept by the next engine that starts.
        run_json("1")
        self.assertEqual(leftover_cgroups([proc.pid]), [])


class CommandLine(unittest.TestCase):
    def test_file_and_stdin(self):
        d = tempdir(self)
        path = os.path.join(d, "script.rb")
        with open(path, "w") as f:
            f.write("[1, 2, 3].sum\n")
        self.assertEqual(codecell("run", "--json", path).result["value"], 6)
        self.assertEqual(codecell("run", "--json", "-", stdin="6 * 7").result["value"], 42)

    def test_bad_input_is_one_line_and_exit_2(self):
        d = tempdir(self)
        bad_utf8 = os.path.join(d, "bad.rb")
        with open(bad_utf8, "wb") as f:
            f.write(b"'\xff'")
        big = os.path.join(d, "big.rb")
        with open(big, "w") as f:
            f.write("#" * (1024 * 1024 + 1))
        cases = [
            (["run", "--frobnicate", "-e", "1"], 'unknown option "--frobnicate"'),
            (["run", "/nonexistent.rb"], "cannot read /nonexistent.rb"),
            (["run"], "nothing to run"),
            (["run", "-e", "1", "x.rb"], "either -e CODE or a FILE"),
            (["run", "--memory", "lots", "-e", "1"], 'bad size "lots"'),
            (["run", "--timeout", "-1", "-e", "1"], 'bad duration "-1"'),
            (["run", "--memory", "1K", "-e", "1"], "below the minimum"),
            (["run", "--lang", "cobol", "-e", "1"], 'unknown language "cobol"'),
            (["run", "--on-unsupported", "maybe", "-e", "1"], "must be warn, raise or ignore"),
            (["run", bad_utf8], "code: not valid UTF-8"),
            (["run", big], "over the 1048576-byte limit"),
            (["frob"], 'unknown command "frob"'),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                r = codecell(*args)
                self.assertEqual(r.code, 2, r)
                self.assertIn(message, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)

    def test_help_lists_every_flag_and_exit_code(self):
        r = codecell("run", "--help")
        self.assertEqual(r.code, 0)
        for flag in ("--eval", "--lang", "--mount", "--timeout", "--cpu", "--memory", "--json",
                     "--max-output", "--on-unsupported", "Exit codes"):
            self.assertIn(flag, r.stdout)

    def test_check_reports_layers(self):
        r = codecell("check", "--json")
        self.assertEqual(r.code, 0, r)
        layers = {l["name"]: l for l in json.loads(r.stdout)["layers"]}
        for name in ("user_namespace", "mount_namespace", "pid_namespace", "network_namespace",
                     "seccomp", "landlock", "cgroup", "ruby"):
            self.assertIn(name, layers)
        self.assertTrue(layers["seccomp"]["available"])
        self.assertEqual(layers["cgroup"]["available"], ROOT)

    def test_raise_policy_refuses_a_host_without_a_cgroup(self):
        r = codecell("run", "--on-unsupported", "raise", "-e", "1")
        if ROOT:
            self.assertEqual(r.code, 0, r)
        else:
            self.assertEqual(r.code, 4, r)
            self.assertIn('on_unsupported is "raise"', r.stderr)
        r = codecell("run", "--json", "--on-unsupported", "ignore", "-e", "1")
        self.assertNotIn("warnings", r.result)


if __name__ == "__main__":
    unittest.main()
