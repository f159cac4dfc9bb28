"""Files in: a cell tool's "files" argument, written into /work before the code starts, in both
languages, over stdio and HTTP. Bad entries (names, shapes, counts, sizes) are refused naming
the entry before anything runs; what a session's earlier code planted on a file's way (a link,
a FIFO, a file where a folder is needed) refuses the eval instead of being followed."""
import base64
import hashlib
import json
import unittest

from harness import become_subreaper, stray_children, tempdir
from mcp_peer import INIT, Http, Stdio, write_config

LANGUAGES = ("ruby", "python")
ALL_BYTES = bytes(range(256)) * 3
CSV = "city,temp\nZürich,3\n東京,9\n"

# The code that reads what it was given back, per language: the CSV's text, the binary
# file's SHA-256, and the files /work holds.
READ_BACK = {
    "ruby": 'require "digest"\n'
            '[File.read("data/in/sales.csv", encoding: "UTF-8"), '
            'Digest::SHA256.hexdigest(File.binread("blob.bin")), '
            'Dir.glob("**/*", base: "/work").sort]',
    "python": 'import hashlib, os\n'
              '(open("data/in/sales.csv", encoding="utf-8").read(),\n'
              ' hashlib.sha256(open("blob.bin", "rb").read()).hexdigest(),\n'
              ' sorted(os.path.relpath(os.path.join(d, n), "/work")\n'
              '        for d, ds, fs in os.walk("/work") for n in ds + fs))',
}
# Makes what a hostile session leaves in its /work: a link to a file, a FIFO, a link to a
# folder, and a plain file where a later name needs a folder.
PLANT = {
    "ruby": 'File.symlink("/etc/passwd", "link"); File.mkfifo("fifo"); '
            'File.symlink("/tmp", "dirlink"); File.write("plain", "x"); nil',
    "python": 'import os\nos.symlink("/etc/passwd", "link"); os.mkfifo("fifo")\n'
              'os.symlink("/tmp", "dirlink"); open("plain", "w").write("x")',
}
PRINT_RAN = {"ruby": 'puts "ran"', "python": 'print("ran")'}
FILES_ERROR = {"ruby": "CodecellGuest::FilesError", "python": "codecell.FilesError"}


def setUpModule():
    become_subreaper()


def cells(**limits):
    base = {"timeout_ms": 10000, "cpu_ms": 5000}
    base.update(limits)
    return [{"name": lang, "language": lang, "pool": 1, "limits": base} for lang in LANGUAGES]


def call(i, tool, code, files=None, **args):
    arguments = {"code": code, **args}
    if files is not None:
        arguments["files"] = files
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}


def given_files():
    return [{"name": "data/in/sales.csv", "text": CSV},
            {"name": "blob.bin", "base64": base64.b64encode(ALL_BYTES).decode()}]


class Served(unittest.TestCase):
    """A server on stdio over cells of both languages, with the given limits."""
    limits = {}

    def setUp(self):
        self.dir = tempdir(self)
        self.peer = Stdio(write_config(self.dir, cells(**self.limits)))
        self.addCleanup(self.finish)
        self.peer.request(INIT)
        self.next_id = 1

    def finish(self):
        self.peer.stop_if_running()
        self.assertEqual(stray_children(), [], "a sandbox outlived the server")

    def result(self, tool, code, files=None, **args):
        self.next_id += 1
        return self.peer.request(call(self.next_id, tool, code, files, **args))["result"]

    def refusal(self, tool, files):
        """The text of an isError answer that refused the files before any run."""
        r = self.result(tool, PRINT_RAN[tool], files)
        self.assertTrue(r.get("isError"), r)
        self.assertNotIn("structuredContent", r, "the code ran: %r" % r)
        return r["content"][0]["text"]


class GivenFiles(Served):
    def test_text_and_binary_files_reach_work_before_the_code(self):
        for lang in LANGUAGES:
            with self.subTest(lang):
                r = self.result(lang, READ_BACK[lang], given_files())
                s = r["structuredContent"]
                self.assertEqual(s["status"], "ok", s)
                self.assertEqual(s["value"], [CSV, hashlib.sha256(ALL_BYTES).hexdigest(),
                                              ["blob.bin", "data", "data/in",
                                               "data/in/sales.csv"]])

    def test_names_beyond_ascii_and_empty_files_are_written(self):
        files = [{"name": "données/été.txt", "text": "ça"}, {"name": "empty", "text": ""},
                 {"name": "nul", "base64": "YQBi"}]
        code = {"ruby": '[File.read("données/été.txt"), File.size("empty"), '
                        'File.binread("nul").bytes]',
                "python": '(open("données/été.txt").read(), __import__("os").path.getsize('
                          '"empty"), list(open("nul", "rb").read()))'}
        for lang in LANGUAGES:
            with self.subTest(lang):
                s = self.result(lang, code[lang], files)["structuredContent"]
                self.assertEqual(s["value"], ["ça", 0, [97, 0, 98]], s)

    def test_hostile_names_are_refused_naming_the_entry(self):
        cases = [("../escape", '".." part'), ("a/../../escape", '".." part'),
                 ("/etc/passwd", "is absolute"), ("", "is empty"), (".", '"." or ".." part'),
                 ("a/./b", '"." or ".." part'), ("a//b", "empty part"), ("a/", "empty part"),
                 ("tab\there", "control character"), ("del\u007f", "control character"),
                 ("c1\u0085", "control character"),
                 ("x" * 256, "longer than 255 bytes"), ("a/" * 512 + "b", "longer than 1024"),
                 ("é" * 128 + "x", "longer than 255 bytes")]
        for lang in LANGUAGES:
            for name, why in cases:
                with self.subTest(lang=lang, name=name[:20]):
                    text = self.refusal(lang, [{"name": "fine.txt", "text": "1"},
                                               {"name": name, "text": "x"}])
                    self.assertIn("files[1].name", text)
                    self.assertIn(why, text)

    def test_a_control_character_is_shown_escaped_in_the_refusal(self):
        text = self.refusal("ruby", [{"name": "line\nbreak\u0085", "text": "x"}])
        self.assertIn('files[0].name: "line\\x0abreak\\xc2\\x85" holds a control character', text)

    def test_malformed_entries_are_refused_with_what_to_send(self):
        cases = [("sales.csv", '"files" must be a list'),
                 ({"name": "a", "text": "x"}, '"files" must be a list'),
                 (["a"], "files[0] must be an object"),
                 ([{"text": "x"}], "files[0] must be an object with a \"name\""),
                 ([{"name": 7, "text": "x"}], "files[0] must be an object with a \"name\""),
                 ([{"name": "a"}], "exactly one of"),
                 ([{"name": "a", "text": "x", "base64": "eA=="}], "exactly one of"),
                 ([{"name": "a", "text": 5}], "exactly one of"),
                 ([{"name": "a", "base64": "not base64!"}], '"base64" is not base64'),
                 ([{"name": "a", "text": "x", "mode": 511}], 'unknown key "mode"'),
                 ([{"name": "a", "text": "1"}, {"name": "a", "text": "2"}],
                  "files[1].name: \"a\" is given twice (also files[0])")]
        for lang in LANGUAGES:
            for files, why in cases:
                with self.subTest(lang=lang, files=files):
                    self.assertIn(why, self.refusal(lang, files))

    def test_the_schema_offers_files(self):
        self.next_id += 1
        tools = self.peer.request({"jsonrpc": "2.0", "id": self.next_id,
                                   "method": "tools/list"})["result"]["tools"]
        for tool in tools:
            if tool["name"] in LANGUAGES:
                files = tool["inputSchema"]["properties"]["files"]
                self.assertEqual(files["type"], "array")
                self.assertEqual(files["items"]["required"], ["name"])
                self.assertEqual(sorted(files["items"]["properties"]), ["base64", "name", "text"])


class Limits(Served):
    limits = {"files_in": 2, "files_in_bytes": 100, "file_bytes": 80}

    def test_count_sizes_and_total_are_the_cells_limits(self):
        cases = [([{"name": n, "text": "x"} for n in "abc"], "more than 2 files (the cell's "
                                                               "files_in limit)"),
                 ([{"name": "big", "text": "x" * 81}], "files[0] (\"big\"): 81 bytes is over "
                                                       "the 80-byte limit of one file"),
                 ([{"name": "a", "text": "x" * 60}, {"name": "b", "text": "y" * 60}],
                  "files: 120 bytes together (up to files[1]) is over the 100-byte limit "
                  "(files_in_bytes)")]
        for lang in LANGUAGES:
            for files, why in cases:
                with self.subTest(lang=lang, why=why[:30]):
                    self.assertIn(why, self.refusal(lang, files))
            with self.subTest(lang=lang, case="within"):
                files = [{"name": "a", "text": "x" * 50}, {"name": "b", "text": "y" * 50}]
                r = self.result(lang, PRINT_RAN[lang], files)
                self.assertEqual(r["structuredContent"]["status"], "ok", r)


class FrameRoom(Served):
    limits = {"frame_bytes": 4096}

    def test_files_that_cannot_fit_in_a_frame_are_refused_before_the_run(self):
        for lang in LANGUAGES:
            with self.subTest(lang):
                text = self.refusal(lang, [{"name": "a", "text": "x" * 4000}])
                self.assertIn("over the 4096-byte limit of one frame (frame_bytes)", text)


class FullWork(Served):
    limits = {"work_bytes": 65536, "files_in_bytes": 1 << 20}

    def test_a_work_too_small_for_the_files_says_so_and_the_code_does_not_run(self):
        files = [{"name": "big.bin", "base64": base64.b64encode(b"\xff" * 300000).decode()}]
        for lang in LANGUAGES:
            with self.subTest(lang):
                s = self.result(lang, PRINT_RAN[lang], files)["structuredContent"]
                self.assertEqual(s["status"], "error", s)
                self.assertEqual(s["error"]["class"], FILES_ERROR[lang])
                self.assertIn('files[0] ("big.bin"): /work/big.bin: /work is full',
                              s["error"]["message"])
                self.assertNotIn("ran", s.get("stdout", ""))


class InSessions(Served):
    def test_files_stay_in_the_session_and_replace_what_was_there(self):
        code = {"ruby": 'File.read("notes.txt")', "python": 'open("notes.txt").read()'}
        for lang in LANGUAGES:
            with self.subTest(lang):
                first = self.result(lang, code[lang], [{"name": "notes.txt", "text": "long " * 9}],
                                    session="s")
                self.assertEqual(first["structuredContent"]["value"], "long " * 9)
                shorter = self.result(lang, code[lang], [{"name": "notes.txt", "text": "short"}],
                                      session="s")
                self.assertEqual(shorter["structuredContent"]["value"], "short")
                kept = self.result(lang, code[lang], session="s")
                self.assertEqual(kept["structuredContent"]["value"], "short")

    def test_what_earlier_code_planted_refuses_the_eval_and_is_never_followed(self):
        cases = [("link", "/work/link is a symbolic link (never followed)"),
                 ("fifo", "/work/fifo is not a regular file"),
                 ("dirlink/x", "/work/dirlink is not a folder"),
                 ("plain/x", "/work/plain is not a folder")]
        for lang in LANGUAGES:
            session = "planted-" + lang
            s = self.result(lang, PLANT[lang], session=session)["structuredContent"]
            self.assertEqual(s["status"], "ok", s)
            for name, why in cases:
                with self.subTest(lang=lang, name=name):
                    s = self.result(lang, PRINT_RAN[lang], [{"name": name, "text": "owned"}],
                                    session=session)["structuredContent"]
                    self.assertEqual(s["status"], "error", s)
                    self.assertEqual(s["error"]["class"], FILES_ERROR[lang])
                    self.assertIn('files[0] ("%s")' % name, s["error"]["message"])
                    self.assertIn(why, s["error"]["message"])
                    self.assertNotIn("ran", s.get("stdout", ""), "the code ran")
            # Nothing was written through the links, and the session goes on.
            check = {"ruby": '[File.read("/etc/passwd").include?("owned"), '
                             'Dir.exist?("/tmp/x"), File.ftype("fifo")]',
                     "python": 'import os, stat\n("owned" in open("/etc/passwd").read(), '
                               'os.path.exists("/tmp/x"), '
                               'stat.S_ISFIFO(os.lstat("fifo").st_mode) and "fifo")'}
            s = self.result(lang, check[lang], session=session)["structuredContent"]
            self.assertEqual(s["value"], [False, False, "fifo"], s)


    def test_a_session_that_broke_what_writes_the_files_gets_a_refusal_and_lives_on(self):
        # Earlier code may take /work's permissions away or replace what the prelude writes
        # with: the eval is refused as FilesError, the session is not lost.
        breakers = {"ruby": ['File.chmod(0, "/work")',
                             'class << File; def lstat(*) = raise("planted"); end',
                             'class String; def split(*) = raise("planted"); end'],
                    "python": ['import os\nos.chmod("/work", 0)',
                               'import os\nos.open = None',
                               'import binascii\nbinascii.a2b_base64 = None']}
        kept = {"ruby": "$kept", "python": "kept"}
        for lang in LANGUAGES:
            for k, breaker in enumerate(breakers[lang]):
                with self.subTest(lang=lang, breaker=breaker):
                    session = "broken-%s-%d" % (lang, k)
                    code = breaker + "\n%s = 41" % kept[lang]
                    s = self.result(lang, code, session=session)["structuredContent"]
                    self.assertEqual(s["status"], "ok", s)
                    s = self.result(lang, PRINT_RAN[lang], [{"name": "a/b.txt", "text": "x"}],
                                    session=session)["structuredContent"]
                    self.assertEqual(s["status"], "error", s)
                    self.assertEqual(s["error"]["class"], FILES_ERROR[lang])
                    self.assertIn("files", s["error"]["message"])
                    self.assertNotIn("ran", s.get("stdout", ""), "the code ran")
                    s = self.result(lang, kept[lang] + " + 1", session=session)["structuredContent"]
                    self.assertEqual(s["session"]["created"], False, s)
                    self.assertEqual(s["value"], 42, s)


class OverHttp(unittest.TestCase):
    def test_files_reach_the_code_over_http(self):
        directory = tempdir(self)
        server = Http(write_config(directory, cells()))
        self.addCleanup(server.stop)
        sid = server.initialize()
        headers = {"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
        status, _, _ = server.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                   headers)
        self.assertEqual(status, 202)
        for i, lang in enumerate(LANGUAGES):
            with self.subTest(lang):
                status, _, text = server.post(call(i + 1, lang, READ_BACK[lang], given_files()),
                                              headers)
                self.assertEqual(status, 200, text)
                body = json.loads(text) if text.startswith("{") else json.loads(
                    [line for line in text.splitlines() if line.startswith("data: ")][-1][6:])
                s = body["result"]["structuredContent"]
                self.assertEqual(s["value"][:2], [CSV, hashlib.sha256(ALL_BYTES).hexdigest()])
                status, _, text = server.post(call(9, lang, "1", [{"name": "../x", "text": ""}]),
                                              headers)
                self.assertIn("files[0].name", text)


if __name__ == "__main__":
    unittest.main()
