import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

import codecell
from helper import descendants, interpreters_below, os_threads, wait_until


class CellTest(unittest.TestCase):
    def test_runs_python_and_ruby(self):
        with codecell.Cell("python", pool=0) as cell:
            r = cell.run("print('hi')\n[2**70, 1.5, None, float('nan')]")
            self.assertEqual(r.status, "ok")
            self.assertEqual(r.value[:3], [2**70, 1.5, None])
            self.assertTrue(math.isnan(r.value[3]))
            self.assertEqual(r.stdout, "hi\n")
            self.assertGreaterEqual(r.timings["duration_ms"], 0)
        with codecell.Cell("ruby", pool=0) as cell:
            r = cell.run("$stderr.puts 'e'; {a: 1}")
            self.assertEqual(r.value, {"a": 1})
            self.assertEqual(r.stderr, "e\n")
            self.assertEqual(r.to_dict(), {"status": "ok", "value": {"a": 1}, "stderr": "e\n"})

    def test_cells_fork_their_sandboxes(self):
        """The package compiles the engine with its fork server and the forked sandboxes'
        init: a cell forks its sandboxes (the interpreter's parent, the zygote, has no pid
        inside), it does not quietly exec one per run because a part failed to build."""
        with codecell.Cell("python", pool=0) as cell:
            self.assertEqual(cell.run("import os\n[os.getppid(), os.getpid()]").value, [0, 2])

    def test_error_result_is_the_seeds_dict(self):
        with codecell.Cell("python", pool=0) as cell:
            r = cell.run("raise KeyError('k')")
            self.assertEqual(r.status, "error")
            self.assertFalse(r.ok)
            self.assertIsNone(r.value)
            self.assertEqual(r.error["class"], "KeyError")
            d = r.to_dict()
            self.assertEqual(d["status"], "error")
            self.assertEqual(d["error"]["class"], "KeyError")
            self.assertNotIn("value", d)

    def test_limits_and_statuses(self):
        with codecell.Cell("python", pool=0, timeout_ms=700) as cell:
            r = cell.run("import time\ntime.sleep(30)")
            self.assertEqual(r.status, "timeout")
            self.assertIn("timed out", r.error)
        with codecell.Cell("ruby", pool=0, cpu_ms=300) as cell:
            self.assertEqual(cell.run("loop {}").status, "fuel_exhausted")
        with codecell.Cell("python", pool=0, memory=64 << 20) as cell:
            self.assertEqual(cell.run("x = bytearray(512 << 20)").status, "memory_limit")
        with codecell.Cell("python", pool=0, limits={"output_bytes": 1000}) as cell:
            self.assertLess(len(cell.run("print('y' * 5000)").stdout), 2000)

    def test_pictures_come_back_as_images(self):
        with codecell.Cell("python", pool=0) as cell:
            r = cell.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
            self.assertEqual(r.status, "ok", r.error)
            self.assertEqual(len(r.images), 1)
            mime, data = r.images[0]
            self.assertEqual(mime, "image/png")
            self.assertTrue(data.startswith(b"\x89PNG\r\n\x1a\n"))

    def test_the_output_folder_hands_back_files(self):
        code = {"python": "import os\nos.mkdir('/work/out')\n"
                          "open('/work/out/t.csv', 'w').write('a,b\\n')\n"
                          "open('/work/out/z.bin', 'wb').write(bytes([0, 255]))\n"
                          "os.symlink('/etc/passwd', '/work/out/l')",
                "ruby": "Dir.mkdir('/work/out'); File.write('/work/out/t.csv', \"a,b\\n\"); "
                        "File.binwrite('/work/out/z.bin', [0, 255].pack('C*')); "
                        "File.symlink('/etc/passwd', '/work/out/l')"}
        for language, snippet in code.items():
            with self.subTest(language), codecell.Cell(language, pool=0,
                                                       output_folder="/work/out") as cell:
                r = cell.run(snippet)
                self.assertEqual(r.status, "ok", r.error)
                self.assertEqual(r.files, [("t.csv", "text/csv", b"a,b\n"),
                                           ("z.bin", "application/octet-stream", b"\0\xff")])
                self.assertEqual(r.files_omitted,
                                 [{"name": "l", "reason": "a symbolic link (not followed)"}])
        with self.assertRaisesRegex(ValueError, "output_folder and image_folder are one"):
            codecell.Cell("python", output_folder="/work/a", image_folder="/work/b")

    def test_bad_configuration_raises_value_error(self):
        for kwargs in ({"language": "cobol"}, {"limits": {"nope": 1}}, {"timeout_ms": 0},
                       {"mounts": [{"source": "/nonexistent-codecell", "dest": "/data"}]},
                       {"mounts": [{"source": "/tmp", "dest": "/usr/x"}]},
                       {"mounts": [{"source": "/tmp", "dest": "/d", "mode": "wx"}]},
                       {"policy": "sometimes"}):
            with self.subTest(kwargs=kwargs), self.assertRaises(ValueError):
                codecell.Cell(**kwargs)

    def test_bad_code_and_names_raise_value_error(self):
        with codecell.Cell("python", pool=0) as cell:
            with self.assertRaises(ValueError):
                cell.run("'\udc80'")  # a lone surrogate is not UTF-8
            with self.assertRaises(ValueError):
                cell.run(b"\xff")
            with self.assertRaises(ValueError):
                cell.session("a\0b").eval("1")
            with self.assertRaises(ValueError):
                cell.tool("t\0", lambda: 1)
            self.assertEqual(cell.run("1").value, 1)

    def test_mounts_read_only_and_read_write(self):
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o755)
            with open(os.path.join(d, "in.txt"), "w") as f:
                f.write("data")
            out = os.path.join(d, "out")
            os.mkdir(out)
            os.chmod(out, 0o777)
            mounts = [{"source": d, "dest": "/data"},
                      {"source": out, "dest": "/out", "mode": "rw"}]
            with codecell.Cell("python", mounts, pool=0) as cell:
                self.assertEqual(cell.run("open('/data/in.txt').read()").value, "data")
                self.assertEqual(cell.run("open('/data/x', 'w')").status, "error")
                self.assertEqual(cell.run("open('/out/y', 'w').write('w')").status, "ok")
                with open(os.path.join(out, "y")) as f:
                    self.assertEqual(f.read(), "w")

    def test_sessions_keep_state_until_reset(self):
        with codecell.Cell("python", pool=0) as cell:
            s = cell.session("work")
            s.eval("x = 41")
            self.assertEqual(s.eval("x + 1").value, 42)
            self.assertEqual(cell.sessions(), ["work"])
            s.reset()
            self.assertEqual(s.eval("x").error["class"], "NameError")
            self.assertTrue(s.close())
            self.assertFalse(s.close())
            with cell.session("other") as t:
                t.eval("y = 1")
            self.assertEqual(cell.sessions(), [])
            with self.assertRaises(ValueError):
                cell.session("bad name!").eval("1")

    def test_a_session_says_what_became_of_its_state(self):
        """A raise into its idle main thread keeps the state and is said; a kernel killed from
        outside between evals is said in the next result, which ran in a fresh session."""
        out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, out)
        os.chmod(out, 0o777)
        with codecell.Cell("python", [{"source": out, "dest": "/out", "mode": "rw"}],
                           pool=0) as cell:
            s = cell.session("s")
            s.eval(textwrap.dedent("""\
                import threading, time, _thread
                x = 6
                def act():
                    time.sleep(0.3)
                    _thread.interrupt_main()
                    open('/out/acted', 'w').close()
                threading.Thread(target=act).start()"""))
            wait_until(lambda: os.path.exists(os.path.join(out, "acted")))
            r = s.eval("x")
            self.assertEqual(r.value, 6, r.to_json())
            self.assertEqual(r.idle_interrupts[0]["class"], "KeyboardInterrupt")
            self.assertIsNone(r.state_lost)
            kernels = interpreters_below(os.getpid(), "python3")
            self.assertEqual(len(kernels), 1, kernels)
            os.kill(kernels[0], signal.SIGKILL)
            wait_until(lambda: not os.path.exists("/proc/%d" % kernels[0]))
            r = s.eval("'x' in globals()")
            self.assertIs(r.value, False, r.to_json())
            self.assertIn("killed by signal 9", r.state_lost)
            self.assertIsNone(s.eval("1").state_lost)

    def test_other_threads_go_on_during_a_run(self):
        with codecell.Cell("python", pool=0) as cell:
            ticks = []
            stop = threading.Event()

            def tick():
                while not stop.is_set():
                    ticks.append(1)
                    time.sleep(0.01)
            t = threading.Thread(target=tick)
            t.start()
            self.assertEqual(cell.run("import time\ntime.sleep(1)").status, "ok")
            stop.set()
            t.join()
            self.assertGreater(len(ticks), 10, "the GIL was held while the code ran")

    def test_cancel_from_another_thread(self):
        with codecell.Cell("python", pool=0) as cell:
            cancel = codecell.Cancel()
            threading.Thread(target=lambda: (wait_until(lambda: descendants() > 0),
                                             cancel.trigger())).start()
            r = cell.run("import time\ntime.sleep(60)", cancel=cancel)
            self.assertEqual(r.status, "sandbox_error")
            self.assertTrue(r.cancelled)

    def test_ctrl_c_cancels_the_run(self):
        # The code would sleep 300 s: an interrupt that waited for it would come after that.
        script = textwrap.dedent("""
            import codecell, sys, time
            cell = codecell.Cell("python", pool=0, timeout_ms=400_000)
            start = time.monotonic()
            try:
                print("running", flush=True)
                cell.run("import time\\ntime.sleep(300)")
                print("finished", flush=True)
            except KeyboardInterrupt:
                print("interrupted after %d s" % (time.monotonic() - start), flush=True)
            """)
        with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              text=True) as child:
            self.assertEqual(child.stdout.readline(), "running\n")
            wait_until(lambda: descendants(child.pid) > 0)  # the sandbox runs
            child.send_signal(signal.SIGINT)
            line = child.stdout.readline()
            self.assertRegex(line, r"^interrupted after \d+ s\n$")
            self.assertLess(int(line.split()[2]), 250, "Ctrl-C waited for the code to end")

    def test_closed_cell_refuses_and_close_is_idempotent(self):
        cell = codecell.Cell("python", pool=0)
        cell.close()
        cell.close()
        self.assertTrue(cell.closed)
        with self.assertRaises(codecell.CodeCellError):
            cell.run("1")

    def test_close_and_gc_leave_no_sandbox_or_thread(self):
        wait_until(lambda: descendants() == 0)
        threads = os_threads()
        cell = codecell.Cell("ruby", pool=2)
        cell.warmup()
        self.assertGreater(descendants(), 0)
        cell.close()
        self.assertEqual(descendants(), 0, "close left a sandbox")
        wait_until(lambda: os_threads() <= threads)

        def make_and_drop():
            c = codecell.Cell("python", pool=2, tools={"t": lambda: 1})
            c.warmup()
            self.assertEqual(c.run("sb.call('t')").value, 1)
        make_and_drop()
        wait_until(lambda: descendants() == 0 and os_threads() <= threads)


if __name__ == "__main__":
    unittest.main()
