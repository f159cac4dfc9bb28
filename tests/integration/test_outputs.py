"""Files a run hands back from its output folder (issue 30): typed by the host from their
bytes, links, FIFOs and devices left out with a note, caps while reading, --save-outputs.

Every case runs in both languages: each prelude reads the folder on its own."""
import base64
import json
import os
import subprocess
import time
import unittest

from harness import BIN, codecell, run_json, tempdir
from mcp_peer import write_config
import test_pictures

PNG = test_pictures.RunPictures.small_png()
CSV = "city,sales\nLyon,3\nNîmes,5\n"
BLOB = bytes(range(256)) * 3

# Writes a CSV, a PNG under a name that is not .png, a binary file, a PDF and a JSON file into
# /work/out, and leaves one file that was there before the code alone.
WRITE = {
    "ruby": ('Dir.mkdir("/work/out") rescue nil\n'
             'File.write("/work/out/sales.csv", %s)\n'
             'File.binwrite("/work/out/chart.bin", "%s".unpack1("m"))\n'
             'File.binwrite("/work/out/blob", "%s".unpack1("m"))\n'
             'File.write("/work/out/r.pdf", "%%PDF-1.4 hello")\n'
             'File.write("/work/out/r.json", "{\\"a\\": 1}")\n1'
             % (json.dumps(CSV), base64.b64encode(PNG).decode(), base64.b64encode(BLOB).decode())),
    "python": ('import os, base64\nos.makedirs("/work/out", exist_ok=True)\n'
               'open("/work/out/sales.csv", "w").write(%r)\n'
               'open("/work/out/chart.bin", "wb").write(base64.b64decode(%r))\n'
               'open("/work/out/blob", "wb").write(base64.b64decode(%r))\n'
               'open("/work/out/r.pdf", "w").write("%%PDF-1.4 hello")\n'
               'open("/work/out/r.json", "w").write("{\\"a\\": 1}")\n1'
               % (CSV, base64.b64encode(PNG).decode(), base64.b64encode(BLOB).decode())),
}

# A symbolic link, a FIFO, a file over the cap, and a file that a thread of the code keeps
# swapping for a FIFO and a link while the prelude reads the folder.
HOSTILE = {
    "ruby": ('Dir.mkdir("/work/out")\nFile.symlink("/etc/passwd", "/work/out/link")\n'
             'File.mkfifo("/work/out/pipe")\nFile.write("/work/out/big.txt", "x" * 5000)\n'
             'File.write("/work/out/ok.txt", "fine")\n'
             'Thread.new { loop { File.write("/work/.f", "y"); '
             'File.rename("/work/.f", "/work/out/swap"); '
             'File.mkfifo("/work/.p") rescue nil; '
             'File.rename("/work/.p", "/work/out/swap"); '
             'File.symlink("/dev/zero", "/work/.l") rescue nil; '
             'File.rename("/work/.l", "/work/out/swap") } }\nsleep 0.2\n1'),
    "python": ('import os, threading\nos.mkdir("/work/out")\n'
               'os.symlink("/etc/passwd", "/work/out/link")\nos.mkfifo("/work/out/pipe")\n'
               'open("/work/out/big.txt", "w").write("x" * 5000)\n'
               'open("/work/out/ok.txt", "w").write("fine")\n'
               'def swap():\n'
               '    while True:\n'
               '        open("/work/.f", "w").write("y")\n'
               '        os.replace("/work/.f", "/work/out/swap")\n'
               '        try: os.mkfifo("/work/.p")\n'
               '        except OSError: pass\n'
               '        os.replace("/work/.p", "/work/out/swap")\n'
               '        try: os.symlink("/dev/zero", "/work/.l")\n'
               '        except OSError: pass\n'
               '        os.replace("/work/.l", "/work/out/swap")\n'
               'threading.Thread(target=swap, daemon=True).start()\n'
               'import time; time.sleep(0.2)\n1'),
}


def config(test, **limits):
    base = {"timeout_ms": 20000, "cpu_ms": 10000}
    base.update(limits)
    cells = [{"name": lang, "language": lang, "pool": 0, "output_folder": "/work/out",
              "limits": base} for lang in ("ruby", "python")]
    return write_config(tempdir(test), cells)


class RunOutputs(unittest.TestCase):
    def test_files_come_back_typed_from_their_bytes(self):
        for lang, code in WRITE.items():
            with self.subTest(lang=lang):
                r = run_json(code, "--output-folder", "/work/out", lang=lang)
                self.assertEqual(r.result["status"], "ok", r)
                # The PNG's name says .bin: its bytes make it an image all the same.
                self.assertEqual(r.result["images"], [{"mime_type": "image/png",
                                                       "bytes": len(PNG)}])
                files = {f["name"]: f for f in r.result["files"]}
                self.assertEqual(sorted(files), ["blob", "r.json", "r.pdf", "sales.csv"])
                self.assertEqual(files["sales.csv"], {"name": "sales.csv", "mime_type": "text/csv",
                                                      "size": len(CSV.encode()), "text": CSV})
                self.assertEqual(files["blob"]["mime_type"], "application/octet-stream")
                self.assertEqual(base64.b64decode(files["blob"]["base64"]), BLOB)
                self.assertEqual(files["blob"]["size"], len(BLOB))
                self.assertEqual(files["r.pdf"]["mime_type"], "application/pdf")
                self.assertEqual(files["r.json"]["mime_type"], "application/json")
                self.assertNotIn("files_omitted", r.result)

    def test_a_name_that_is_not_utf8_reads_the_same_in_both_languages(self):
        # Each bad byte becomes U+FFFD, as in every other string of a result (results.md).
        code = {"ruby": 'Dir.mkdir("/work/out")\nFile.write("/work/out/bad\\xff\\xfe.txt".b, "a")\n1',
                "python": 'import os\nos.mkdir("/work/out")\n'
                          'open(b"/work/out/bad\\xff\\xfe.txt", "w").write("a")\n1'}
        for lang, snippet in code.items():
            with self.subTest(lang=lang):
                r = run_json(snippet, "--output-folder", "/work/out", lang=lang)
                self.assertEqual([f["name"] for f in r.result["files"]],
                                 ["bad\ufffd\ufffd.txt"], r)

    def test_only_what_the_run_wrote_comes_back(self):
        code = {"ruby": 'Dir.mkdir("/work/out")\nFile.write("/work/out/a.txt", "a")\n1',
                "python": 'import os\nos.mkdir("/work/out")\nopen("/work/out/a.txt", "w").write("a")\n1'}
        for lang, snippet in code.items():
            with self.subTest(lang=lang):
                r = run_json(snippet, lang=lang)
                self.assertNotIn("files", r.result)

    def test_links_fifos_and_oversize_files_are_left_out_and_the_host_never_blocks(self):
        cfg = config(self, file_out_bytes=1000)
        for lang, code in HOSTILE.items():
            with self.subTest(lang=lang):
                started = time.monotonic()
                p = subprocess.run([BIN, "run", "--json", "--config", cfg, "--cell", lang, "-e",
                                    code], capture_output=True, text=True, timeout=60)
                self.assertLess(time.monotonic() - started, 30)
                r = json.loads(p.stdout)
                self.assertEqual(r["status"], "ok", p)
                self.assertEqual([(f["name"], f["text"]) for f in r["files"]
                                  if f["name"] != "swap"], [("ok.txt", "fine")])
                left = {f["name"]: f["reason"] for f in r["files_omitted"]["files"]}
                self.assertEqual(left["link"], "a symbolic link (not followed)")
                self.assertEqual(left["pipe"], "a FIFO (not read)")
                self.assertEqual(left["big.txt"], "over 1000 bytes")
                # Whatever the swapping thread left there, its bytes are the file's own.
                for f in r["files"]:
                    if f["name"] == "swap":
                        self.assertEqual(f["text"], "y")
                self.assertEqual(r["files_omitted"]["count"], len(left))

    def test_the_count_cap_names_what_it_left_out(self):
        cfg = config(self, files_out=2)
        code = {"ruby": 'Dir.mkdir("/work/out")\n5.times { |i| File.write("/work/out/f#{i}", "t") }\n1',
                "python": 'import os\nos.mkdir("/work/out")\n'
                          'for i in range(5): open("/work/out/f%d" % i, "w").write("t")\n1'}
        for lang, snippet in code.items():
            with self.subTest(lang=lang):
                r = codecell("run", "--json", "--config", cfg, "--cell", lang, "-e", snippet)
                self.assertEqual([f["name"] for f in r.result["files"]], ["f0", "f1"])
                self.assertEqual(r.result["files_omitted"]["count"], 3)
                self.assertEqual({f["reason"] for f in r.result["files_omitted"]["files"]},
                                 {"more than 2 files"})

    def test_a_file_over_what_a_frame_holds_is_left_out_not_the_run(self):
        # file_out_bytes above the frame's room: the cap is what fits one frame as base64.
        cfg = config(self, file_out_bytes=100 << 20, frame_bytes=1 << 20)
        code = {"ruby": 'Dir.mkdir("/work/out")\nFile.write("/work/out/big", "x" * 900_000)\n1',
                "python": 'import os\nos.mkdir("/work/out")\n'
                          'open("/work/out/big", "w").write("x" * 900000)\n1'}
        for lang, snippet in code.items():
            with self.subTest(lang=lang):
                r = codecell("run", "--json", "--config", cfg, "--cell", lang, "-e", snippet)
                self.assertEqual(r.result["status"], "ok", r)
                self.assertEqual(r.result["files_omitted"]["files"],
                                 [{"name": "big", "reason": "over %d bytes" % ((1048576 - 4096) // 4 * 3)}])

    def test_save_outputs_writes_them_and_never_overwrites(self):
        for lang, code in WRITE.items():
            with self.subTest(lang=lang):
                out = os.path.join(tempdir(self), "out")
                r = codecell("run", "--lang", lang, "--output-folder", "/work/out",
                             "--save-outputs", out, "-e", code)
                self.assertEqual(r.code, 0, r)
                self.assertEqual(sorted(os.listdir(out)),
                                 ["blob", "chart.bin", "r.json", "r.pdf", "sales.csv"])
                with open(os.path.join(out, "blob"), "rb") as f:
                    self.assertEqual(f.read(), BLOB)
                with open(os.path.join(out, "chart.bin"), "rb") as f:
                    self.assertEqual(f.read(), PNG)
                self.assertIn("saved %s/sales.csv (text/csv, %d bytes)"
                              % (out, len(CSV.encode())), r.stderr)
                with open(os.path.join(out, "blob"), "wb") as f:
                    f.write(b"mine")
                r = codecell("run", "--lang", lang, "--output-folder", "/work/out",
                             "--save-outputs", out, "-e", code)
                self.assertEqual(r.code, 2, r)
                self.assertIn("%s/blob: already there; not overwritten" % out, r.stderr)
                with open(os.path.join(out, "blob"), "rb") as f:
                    self.assertEqual(f.read(), b"mine")

    def test_save_outputs_follows_no_link_the_guest_planted(self):
        # A read-write mount of the folder the files are saved to: the guest plants a FIFO and
        # a link under the names of its own outputs; neither blocks nor redirects the CLI.
        shared, elsewhere = tempdir(self), tempdir(self)
        os.chmod(shared, 0o777)
        code = ('import os\nos.mkdir("/work/out")\n'
                'open("/work/out/a.txt", "w").write("a")\nopen("/work/out/b.txt", "w").write("b")\n'
                'os.mkfifo("/save/a.txt")\nos.symlink("%s/b.txt", "/save/b.txt")\n1' % elsewhere)
        p = subprocess.run([BIN, "run", "--json", "--lang", "python", "--mount",
                            shared + ":/save:rw", "--output-folder", "/work/out",
                            "--save-outputs", shared, "-e", code],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(json.loads(p.stdout)["status"], "ok", p)
        self.assertEqual(p.returncode, 2, p)
        self.assertIn("%s/a.txt: already there; not overwritten" % shared, p.stderr)
        self.assertIn("%s/b.txt: already there; not overwritten" % shared, p.stderr)
        self.assertEqual(os.listdir(elsewhere), [])

    def test_output_folder_and_image_folder_together_are_refused(self):
        d = tempdir(self)
        cfg = write_config(d, [{"name": "rb", "language": "ruby", "output_folder": "/work/a",
                                "image_folder": "/work/b"}])
        r = codecell("run", "--config", cfg, "-e", "1")
        self.assertEqual(r.code, 2, r)
        self.assertIn("output_folder and image_folder are one setting", r.stderr)
        r = codecell("run", "--lang", "ruby", "--output-folder", "/work/a", "--image-folder",
                     "/work/b", "-e", "1")
        self.assertEqual(r.code, 2, r)
        self.assertIn("--output-folder and --image-folder are one flag", r.stderr)

    def test_the_description_states_the_folder_and_its_caps(self):
        cfg = config(self, files_out=3, file_out_bytes=4096)
        r = codecell("describe", "--config", cfg, "--cell", "python")
        self.assertIn("## Files out", r.stdout)
        self.assertIn("Other files the code writes to `/work/out` during the run", r.stdout)
        self.assertIn("At most 3 files of up to 4 KiB each", r.stdout.replace("\n", " "))

    def test_a_file_frame_written_by_hand_breaks_the_protocol(self):
        code = ('require "json"; b = JSON.generate({"t" => "file", "id" => 1, "name" => "x", '
                '"data" => "eA=="}); '
                'IO.for_fd(3, "r+b", autoclose: false).syswrite([b.bytesize].pack("N") + b); '
                'sleep 1; 1')
        r = run_json(code, "--output-folder", "/work", lang="ruby")
        self.assertEqual(r.result["status"], "sandbox_error", r)
        self.assertIn("file frame without the exec's id", r.result["error"])


if __name__ == "__main__":
    unittest.main()
