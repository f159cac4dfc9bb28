"""What a process of the codecell command loads: libmicrohttpd (and GnuTLS with it) only when
`serve --http` starts, never for a one-shot `codecell run` (issue 19: every library loaded is
time at every start), and a clear refusal when `serve --http` cannot load it."""
import os
import shutil
import subprocess
import time
import unittest

from harness import BIN, LAUNCHED, tempdir
from mcp_peer import Http, small_config

HTTP_LIBRARIES = ("libmicrohttpd", "libgnutls")


def mapped_libraries(pid, deadline_s=60):
    """The shared objects mapped by pid once the dynamic loader is done (libjansson, which
    every codecell process needs, is mapped)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read()
        if "libjansson" in maps:
            return maps
        time.sleep(0.01)
    raise AssertionError("codecell never mapped libjansson")


class LoadedLibraries(unittest.TestCase):
    def test_a_run_does_not_load_the_http_server_library(self):
        # The guest waits on stdin, so the process is caught mid-run, with its sandbox up.
        proc = subprocess.Popen([BIN, "run", "-e", "STDIN.read"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        LAUNCHED.append(proc.pid)
        try:
            maps = mapped_libraries(proc.pid)
        finally:
            out, err = proc.communicate("", timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        for lib in HTTP_LIBRARIES:
            self.assertFalse(lib in maps, f"codecell run mapped {lib}")

    def test_serve_over_http_loads_it_and_answers(self):
        d = tempdir(self)
        server = Http(small_config(d))
        try:
            maps = mapped_libraries(server.proc.pid)
            status, _, text = server.post("", {}, method="GET", path="/healthz")
        finally:
            code = server.stop()
        self.assertTrue("libmicrohttpd" in maps, "serve --http did not map libmicrohttpd")
        self.assertEqual((status, text, code), (200, "ok\n", 0))

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"),
                         "hides the library with a bind mount in a mount namespace: root")
    def test_serve_over_http_without_the_library_says_what_is_missing(self):
        d = tempdir(self)
        found = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
        paths = [line.split("=>")[1].strip() for line in found.splitlines()
                 if "libmicrohttpd.so.12 " in line]
        self.assertTrue(paths, found)
        hide = " && ".join(f"mount --bind /dev/null {p}" for p in paths)
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            f'{hide} && exec "$0" serve --config "$1" --http 127.0.0.1:0',
                            BIN, small_config(d)],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("--http needs libmicrohttpd (Debian: libmicrohttpd12)", r.stderr)
        self.assertIn("libmicrohttpd.so.12", r.stderr)


if __name__ == "__main__":
    unittest.main()
