"""Pictures a run hands back (issue 16): matplotlib's figures and image files written to the
cell's image folder, through `codecell run` and the MCP server, checked by their bytes.

Run as root and, by tests/integration/as_unprivileged.sh, as a normal user."""
import base64
import json
import os
import struct
import subprocess
import unittest
import zlib

from harness import BIN, codecell, run_json, tempdir
from mcp_peer import INIT, Stdio, write_config

# A 2×2 RGB PNG made by hand with zlib: what any code can write without a plotting library.
RUBY_PNG = '''require "zlib"
def chunk(t, d) = [d.bytesize].pack("N") + t + d + [Zlib.crc32(t + d)].pack("N")
rows = ("\\x00" + "\\xff\\x00\\x00" * 2) * 2
PNG = "\\x89PNG\\r\\n\\x1a\\n".b + chunk("IHDR", [2, 2, 8, 2, 0, 0, 0].pack("NNCCCCC")) +
      chunk("IDAT", Zlib::Deflate.deflate(rows.b)) + chunk("IEND", "")
'''
PLOT = ('import matplotlib.pyplot as plt\n'
        'plt.plot([1, 4, 9]); plt.title("squares"); plt.show()\n'
        'plt.figure(); plt.bar(["a", "b"], [3, 5])\n'
        '"drawn"')


def png_size(data):
    """(width, height) of a PNG whose every chunk's CRC holds; fails the test otherwise."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    at, size, chunks = 8, None, []
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        crc, = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert zlib.crc32(kind + body) == crc, kind
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        chunks.append(kind)
        at += 12 + length
    assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND" and b"IDAT" in chunks, chunks
    zlib.decompress(b"".join(
        data[a + 8:a + 8 + struct.unpack(">I", data[a:a + 4])[0]] for a in chunk_offsets(data)
        if data[a + 4:a + 8] == b"IDAT"))
    return size


def chunk_offsets(data):
    at = 8
    while at < len(data):
        yield at
        at += 12 + struct.unpack(">I", data[at:at + 4])[0]


class RunPictures(unittest.TestCase):
    def test_matplotlib_figures_are_saved_as_pngs(self):
        out = os.path.join(tempdir(self), "images")
        r = codecell("run", "--json", "--lang", "python", "--save-images", out, "-e", PLOT)
        self.assertEqual(r.result["status"], "ok", r)
        self.assertEqual([i["mime_type"] for i in r.result["images"]], ["image/png"] * 2)
        self.assertEqual(sorted(os.listdir(out)), ["image-1.png", "image-2.png"])
        for name, meta in zip(("image-1.png", "image-2.png"), r.result["images"]):
            with open(os.path.join(out, name), "rb") as f:
                data = f.read()
            self.assertEqual(len(data), meta["bytes"])
            self.assertEqual(png_size(data), (640, 480))
            self.assertIn("saved " + os.path.join(out, name), r.stderr)

    def test_files_in_the_image_folder_come_back_checked(self):
        code = {"ruby": RUBY_PNG + 'Dir.mkdir("/work/out")\n'
                                   'File.binwrite("/work/out/a.png", PNG)\n'
                                   'File.write("/work/out/b.png", "not a picture")\n'
                                   'File.binwrite("/work/out/c.txt", PNG)\n1',
                "python": 'import os, base64\nos.mkdir("/work/out")\n'
                          'png = base64.b64decode("%s")\n'
                          'open("/work/out/a.png", "wb").write(png)\n'
                          'open("/work/out/b.png", "w").write("not a picture")\n'
                          'open("/work/out/c.txt", "wb").write(png)\n1'
                          % base64.b64encode(self.small_png()).decode()}
        for lang, snippet in code.items():
            with self.subTest(lang=lang):
                r = run_json(snippet, "--image-folder", "/work/out", lang=lang)
                self.assertEqual(r.result["status"], "ok", r)
                # Typed by their bytes, not by their names: c.txt is a picture, and b.png is
                # text, which comes back as a file of the output folder.
                self.assertEqual(r.result["images"], [{"mime_type": "image/png",
                                                       "bytes": len(self.small_png())}] * 2)
                self.assertNotIn("images_omitted", r.result)
                self.assertEqual(r.result["files"], [{"name": "b.png", "mime_type": "text/plain",
                                                      "size": 13, "text": "not a picture"}])

    def test_save_images_follows_nothing_the_guest_planted(self):
        # --save-images into a folder the guest can write (a read-write mount of it): a FIFO
        # in an image's place must not block the CLI forever, and a symbolic link put where
        # the folder was to be made must not send the images elsewhere on the host.
        shared, elsewhere = tempdir(self), tempdir(self)
        os.chmod(shared, 0o777)
        os.mkdir(os.path.join(shared, "pics"))
        os.chmod(os.path.join(shared, "pics"), 0o777)
        picture = ('open("/out/pics/a.png", "wb").write(__import__("base64").b64decode("%s"))\n'
                   % base64.b64encode(self.small_png()).decode())
        cases = [
            (shared, 'import os\nos.mkfifo("/out/image-1.png")\n',
             "cannot write %s/image-1.png" % shared),
            (os.path.join(shared, "imgs"), f'import os\nos.symlink("{elsewhere}", "/out/imgs")\n',
             "--save-images %s/imgs: " % shared),
        ]
        for save, plant, error in cases:
            with self.subTest(error=error):
                # subprocess.run kills a CLI that hangs (the harness's would wait for it).
                p = subprocess.run([BIN, "run", "--json", "--lang", "python", "--mount",
                                    shared + ":/out:rw", "--image-folder", "/out/pics",
                                    "--save-images", save, "-e", plant + picture + "1"],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(json.loads(p.stdout)["status"], "ok", p)
                self.assertEqual(p.returncode, 2, p)
                self.assertIn(error, p.stderr)
                self.assertEqual(os.listdir(elsewhere), [])

    def test_an_image_folder_the_code_cannot_write_is_refused(self):
        d = tempdir(self)
        r = codecell("run", "--lang", "ruby", "--mount", d + ":/data", "--image-folder", "/data",
                     "-e", "1")
        self.assertEqual(r.code, 2, r)
        self.assertIn("--output-folder: output folder /data: the code cannot write there", r.stderr)
        r = codecell("run", "--lang", "ruby", "--image-folder", "/work/../etc", "-e", "1")
        self.assertEqual(r.code, 2, r)
        self.assertIn("must be normalized", r.stderr)

    def test_over_the_caps_the_result_says_what_was_left_out(self):
        code = ('import matplotlib.pyplot as plt\n'
                'for k in range(4):\n    plt.figure(); plt.plot([k, k * k])\n1')
        r = codecell("run", "--json", "--lang", "python", "-e", code)
        self.assertEqual(len(r.result["images"]), 4, r)
        # Two at most: the others are counted, with the reason.
        cfg = write_config(tempdir(self), [{"name": "py", "language": "python", "pool": 0,
                                            "limits": {"images": 2, "image_bytes": 100000}}])
        peer = Stdio(cfg)
        self.addCleanup(peer.stop_if_running)
        peer.request(INIT)
        m = peer.request({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "py", "arguments": {"code": code}}})
        content = m["result"]["content"]
        self.assertEqual([c["type"] for c in content], ["text", "image", "image"])
        self.assertEqual(m["result"]["structuredContent"]["images_omitted"],
                         {"count": 2, "reason": "more than 2 images"})
        # A figure over the size cap is left out, and a session's later eval starts afresh.
        big = ('import matplotlib.pyplot as plt\nplt.figure(figsize=(8, 8), dpi=100)\n'
               'import numpy\nplt.imshow(numpy.random.rand(400, 400))\n1')
        m = peer.request({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "py", "arguments": {"code": big}}})
        self.assertEqual([c["type"] for c in m["result"]["content"]], ["text"], m)
        self.assertEqual(m["result"]["structuredContent"]["images_omitted"],
                         {"count": 1, "reason": "an image over 100000 bytes"})

    def test_an_image_frame_written_by_hand_breaks_the_protocol(self):
        # The guest's code does not know the exec's id: a frame it forges is refused, and the
        # run ends as sandbox_error rather than returning a picture the prelude never sent.
        code = ('require "json"; b = JSON.generate({"t" => "image", "id" => 1, "data" => "%s"}); '
                'IO.for_fd(3, "r+b", autoclose: false).syswrite([b.bytesize].pack("N") + b); '
                'sleep 1; 1' % base64.b64encode(self.small_png()).decode())
        r = run_json(code, lang="ruby")
        self.assertEqual(r.result["status"], "sandbox_error", r)
        self.assertIn("image frame without the exec's id", r.result["error"])
        self.assertNotIn("images", r.result)

    @staticmethod
    def small_png():
        rows = (b"\x00" + b"\xff\x00\x00" * 2) * 2

        def chunk(kind, body):
            return struct.pack(">I", len(body)) + kind + body + struct.pack(
                ">I", zlib.crc32(kind + body))
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


class McpPictures(unittest.TestCase):
    def setUp(self):
        d = tempdir(self)
        cells = [{"name": "py", "language": "python", "pool": 1,
                  "limits": {"timeout_ms": 60000, "cpu_ms": 30000}},
                 {"name": "rb", "language": "ruby", "pool": 1, "image_folder": "/work/out"}]
        self.peer = Stdio(write_config(d, cells))
        self.addCleanup(lambda: self.peer.proc.poll() is not None or self.peer.close())
        self.tools = {t["name"]: t for t in self.peer.request(INIT) and self.peer.request(
            {"jsonrpc": "2.0", "id": 99, "method": "tools/list"})["result"]["tools"]}

    def call(self, i, name, code, **args):
        return self.peer.request({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                  "params": {"name": name, "arguments": dict(code=code, **args)}})

    def test_a_figure_is_image_content_that_decodes(self):
        r = self.call(1, "py", PLOT)["result"]
        self.assertIs(r["isError"], False, r)
        images = [c for c in r["content"] if c["type"] == "image"]
        self.assertEqual(len(images), 2)
        for c, meta in zip(images, r["structuredContent"]["images"]):
            self.assertEqual(c["mimeType"], "image/png")
            data = base64.b64decode(c["data"], validate=True)
            self.assertEqual(len(data), meta["bytes"])
            self.assertEqual(png_size(data), (640, 480))
        self.assertEqual(json.loads(r["content"][0]["text"])["value"], "drawn")

    def test_each_eval_of_a_session_hands_back_its_own(self):
        r = self.call(1, "py", "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n1",
                      session="s")["result"]
        # The first text is the result; a second says the session was created.
        self.assertEqual([c["type"] for c in r["content"]], ["text", "text", "image"])
        r = self.call(2, "py", "len(plt.get_fignums())", session="s")["result"]
        self.assertEqual([c["type"] for c in r["content"]], ["text"], r)
        self.assertEqual(r["structuredContent"]["value"], 0)
        # Ruby: files written in this eval, not those of the one before.
        r = self.call(3, "rb", RUBY_PNG + 'Dir.mkdir("/work/out")\n'
                                          'File.binwrite("/work/out/a.png", PNG)\n1',
                      session="r")["result"]
        self.assertEqual([c["type"] for c in r["content"]], ["text", "text", "image"], r)
        r = self.call(4, "rb", "2", session="r")["result"]
        self.assertEqual([c["type"] for c in r["content"]], ["text"], r)

    def test_the_description_states_the_pictures_and_their_caps(self):
        self.assertIn("## Pictures", self.tools["py"]["description"])
        self.assertIn("matplotlib", self.tools["py"]["description"])
        self.assertIn("At most 8 images of up to\n4096 KiB each", self.tools["py"]["description"])
        self.assertIn("`/work/out`", self.tools["rb"]["description"])


if __name__ == "__main__":
    unittest.main()
