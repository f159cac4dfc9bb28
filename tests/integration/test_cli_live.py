"""codecell run as a sandbox CLI user expects: in human mode the guest's output reaches the
terminal as the code writes it, not at the end. The guest prints a line, then waits for a
file that the test creates only once it has read that line: the run cannot end before the
line arrived, and nothing depends on timing."""
import os
import select
import subprocess
import time
import unittest

from harness import BIN, tempdir

WAIT = {
    "ruby": 'puts "first"; $stderr.puts "to stderr"; '
            'sleep 0.02 until File.exist?("/m/go"); puts "second"; 7',
    "python": 'import os, sys, time\nprint("first")\nprint("to stderr", file=sys.stderr)\n'
              'while not os.path.exists("/m/go"):\n    time.sleep(0.02)\nprint("second")\n7',
}


def read_until(stream, marker, timeout=60):
    data = b""
    deadline = time.monotonic() + timeout
    while marker not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([stream], [], [], left)[0]:
            raise TimeoutError(f"no {marker!r} in {data!r}")
        chunk = os.read(stream.fileno(), 4096)
        if not chunk:
            raise EOFError(f"closed before {marker!r}: {data!r}")
        data += chunk
    return data


class LiveOutput(unittest.TestCase):
    def test_output_arrives_while_the_code_runs(self):
        for lang, code in WAIT.items():
            with self.subTest(lang=lang):
                d = tempdir(self)
                proc = subprocess.Popen(
                    [BIN, "run", "--lang", lang, "--timeout", "120s", "--mount", f"{d}:/m:rw",
                     "-e", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                try:
                    out = read_until(proc.stdout, b"first\n")
                    err = read_until(proc.stderr, b"to stderr\n")
                    self.assertIsNone(proc.poll(), "the run ended before its output was read")
                    open(os.path.join(d, "go"), "w").close()
                    rest_out, rest_err = proc.communicate(timeout=120)
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
                self.assertEqual(proc.returncode, 0, err + rest_err)
                self.assertEqual(out + rest_out, b"first\nsecond\n=> 7\n")
                self.assertEqual(err + rest_err, b"to stderr\n")

    def test_shown_output_is_what_the_result_keeps(self):
        r = subprocess.run([BIN, "run", "--max-output", "1K", "-e", 'print "y" * 5000; 1'],
                           capture_output=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The head as it came, then what the result kept past it: the marker and the tail.
        self.assertEqual(r.stdout, b"y" * 512 + "\n[… 4.0 kB omitted …]\n".encode() + b"y" * 512 +
                         b"\n=> 1\n")
        self.assertIn(b"stdout was over its cap: its middle was left out", r.stderr)

    def test_json_mode_prints_only_the_result(self):
        r = subprocess.run([BIN, "run", "--json", "-e", 'puts "hi"; 1'], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("{") and r.stdout.count("\n") == 1, r.stdout)


if __name__ == "__main__":
    unittest.main()
