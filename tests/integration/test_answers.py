"""Answers are what was sent: output cut on characters, NUL bytes kept, names whole, big
integers exact, one nesting limit, tool calls from signal handlers, a guest's default signal
mask. Each case in both languages and both start modes (exec'd and forked)."""
import json
import os
import signal
import subprocess
import unittest

from harness import BIN, LANGUAGES, LAUNCHED, codecell, run_json, tempdir
from mcp_peer import INIT, Stdio, write_config

STARTS = ("exec", "fork")
HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "tools", "tools.json")


def setUpModule():
    os.environ["CODECELL_TOOL_SECRET"] = "named-so-passed"  # tools.json names it
EURO = "\u20ac"


class EachMode:
    """Mixin: one case in every language and start mode."""

    def each_mode(self, code, check, *flags):
        for lang in LANGUAGES:
            for start in STARTS:
                with self.subTest(lang=lang, start=start):
                    r = run_json(code[lang], "--start", start, *flags, lang=lang)
                    self.assertIsNotNone(r.result, r)
                    check(r, lang)


class CutOnCharacters(EachMode, unittest.TestCase):
    def test_a_long_line_of_euros_is_cut_between_characters(self):
        # 1,001 bytes of cap: its first half (500 bytes) ends inside the 167th euro.
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertTrue(r.result["stdout_truncated"], r)
            out = r.result["stdout"]
            self.assertNotIn("\ufffd", out)
            head, marker, tail = out.partition("\n[… ")
            self.assertTrue(marker, out)
            self.assertEqual(head, EURO * 166)
            self.assertEqual(set(tail.partition(" omitted …]\n")[2]), {EURO})
        self.each_mode({"ruby": '$stdout.write("\u20ac" * 5000); 1',
                        "python": "import sys\nsys.stdout.write('\u20ac' * 5000)\n1"},
                       check, "--max-output", "1001")


class NulBytes(EachMode, unittest.TestCase):
    def test_nul_passes_through_stdout_stderr_values_and_messages(self):
        def check(r, lang):
            self.assertEqual(r.status, "error", r)
            self.assertEqual(r.result["stdout"], "a\0b\ufffd")
            self.assertEqual(r.result["stderr"], "c\0d")
            self.assertEqual(r.result["error"]["message"], "e\0f")
        self.each_mode({"ruby": '$stdout.write("a\\0b\\xff".b); $stderr.write("c\\0d"); '
                                '$stdout.flush; raise "e\\0f"',
                        "python": "import sys\nsys.stdout.flush()\n"
                                  "sys.stdout.buffer.write(b'a\\0b\\xff')\n"
                                  "sys.stderr.write('c\\0d')\nraise ValueError('e\\0f')"},
                       check)

    def test_nul_in_a_value(self):
        self.each_mode({"ruby": '["x\\0y", {"k\\0" => 1}]', "python": "['x\\0y', {'k\\0': 1}]"},
                       lambda r, lang: self.assertEqual(r.result["value"], ["x\0y", {"k\0": 1}], r))

    def test_the_cli_prints_the_whole_message(self):
        for lang, code in (("ruby", 'raise "e\\0f"'), ("python", "raise ValueError('e\\0f')")):
            with self.subTest(lang=lang):
                r = codecell("run", "--lang", lang, "-e", code)
                self.assertEqual(r.code, 1, r)
                self.assertIn("Error: e\0f\n", r.stderr)


class NamesAreWhole(EachMode, unittest.TestCase):
    def test_a_tool_name_with_a_nul_is_unknown(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            for answer in r.result["value"]:
                self.assertEqual(answer[0], "UnknownTool", r)
                self.assertIn("NUL", answer[1])
        self.each_mode(
            {"ruby": 'def c; yield; rescue SB::UnknownTool => e; ["UnknownTool", e.message]; end\n'
                     '[c { SB.call("echo\\0x", q: "a") }, c { SB.describe("echo\\0x") }]',
             "python": "def c(f):\n    try:\n        return f()\n"
                       "    except sb.UnknownTool as e:\n        return ['UnknownTool', str(e)]\n"
                       "[c(lambda: sb.call('echo\\0x', q='a')), c(lambda: sb.describe('echo\\0x'))]"},
            check, "--tools", TOOLS)

    def test_a_frame_type_with_a_nul_is_a_protocol_error(self):
        # A hand-written "call\u0000x" frame was taken for a call, and answered.
        frame = '{"t":"call\\u0000x","id":99,"name":"echo","args":{}}'
        def check(r, lang):
            self.assertEqual(r.status, "sandbox_error", r)
            self.assertIn("NUL", r.result["error"])
        self.each_mode(
            {"ruby": f"io = IO.for_fd(3, autoclose: false); f = '{frame}'\n"
                     "io.write([f.bytesize].pack('N') + f); n = io.read(4).unpack1('N'); io.read(n)",
             "python": f"import os, struct\nf = b'{frame}'\n"
                       "os.write(3, struct.pack('>I', len(f)) + f)\n"
                       "n = struct.unpack('>I', os.read(3, 4))[0]\nos.read(3, n)"},
            check, "--tools", TOOLS)

    def test_an_mcp_tool_name_with_a_nul_is_refused(self):
        d = tempdir(self)
        peer = Stdio(write_config(d, [{"name": "ruby", "language": "ruby", "pool": 1}]))
        self.addCleanup(lambda: peer.proc.poll() is None and peer.close())
        peer.request(INIT)
        peer.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":'
                      b'"ruby\\u0000x","arguments":{"code":"1"}}}\n')
        m = peer.read()
        self.assertIn("error", m, m)
        self.assertNotIn("result", m)
        code, err = peer.close()
        self.assertEqual(code, 0, err)


BIG = 2**70  # 1180591620717411303424: beyond 64 bits
TOO_DEEP = "nested deeper than 200 levels of arrays and objects (the limit)"


class BigIntegers(EachMode, unittest.TestCase):
    def test_a_tool_answer_holding_a_big_integer_is_exact(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], [True, -BIG], r)
        self.each_mode(
            {"ruby": 'a = SB.call("raw", emit: %q({"n": 1180591620717411303424, "m": '
                     '[-1180591620717411303424]}))\n[a["n"] == 2**70, a["m"][0]]',
             "python": 'a = sb.call("raw", emit=\'{"n": 1180591620717411303424, "m": '
                       '[-1180591620717411303424]}\')\n[a["n"] == 2**70, a["m"][0]]'},
            check, "--tools", TOOLS)

    def test_arguments_holding_a_big_integer_reach_the_tool_digit_for_digit(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            got = json.loads(r.result["value"]["stdin"])
            self.assertEqual(got, {"n": BIG, "m": [-BIG, 1]}, r)
            self.assertIn("1180591620717411303424", r.result["value"]["stdin"])
        self.each_mode({"ruby": 'SB.call("raw", n: 2**70, m: [-2**70, 1])',
                        "python": 'sb.call("raw", n=2**70, m=[-2**70, 1])'},
                       check, "--tools", TOOLS)

    def test_a_schema_checks_a_big_integer_as_the_number_it_is(self):
        def check(r, lang):
            self.assertEqual(r.status, "error", r)
            self.assertIn('tool "echo": arguments: q: must be a string',
                          r.result["error"]["message"], r)
        self.each_mode({"ruby": 'SB.call("echo", q: 2**70)', "python": 'sb.call("echo", q=2**70)'},
                       check, "--tools", TOOLS)

    def test_a_big_integer_as_the_value_stays_exact(self):
        self.each_mode({"ruby": "2**70", "python": "2**70"},
                       lambda r, lang: self.assertEqual(r.result["value"], BIG, r))


NEST = {"ruby": "def nest(n) = n.times.reduce(1) { |x, _| [x] }\n",
        "python": "def nest(n):\n    x = 1\n    for _ in range(n): x = [x]\n    return x\n"}


def depth_of(value):
    depth = 0
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    return depth


class OneNestingLimit(EachMode, unittest.TestCase):
    """200 levels of arrays and objects pass every way; 201 is the same clear error."""

    def test_the_value(self):
        self.each_mode({lang: NEST[lang] + "nest(200)" for lang in NEST},
                       lambda r, lang: self.assertEqual(depth_of(r.result["value"]), 200, r))

        def too_deep(r, lang):
            self.assertEqual(r.status, "error", r)
            self.assertEqual(r.result["error"]["message"], "the value is " + TOO_DEEP, r)
        self.each_mode({lang: NEST[lang] + "nest(201)" for lang in NEST}, too_deep)

    def test_arguments_to_a_tool(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(depth_of(json.loads(r.result["value"][0]["stdin"])["a"]), 199, r)
            self.assertTrue(r.result["value"][1].endswith("is " + TOO_DEEP), r)
        # a: 199 levels inside the arguments' own object is 200; then 201.
        self.each_mode(
            {"ruby": NEST["ruby"] + 'def t(n) = SB.call("raw", a: nest(n))\n'
                     'def try; yield; rescue TypeError => e; e.message; end\n'
                     '[t(199), try { t(200) }]',
             "python": NEST["python"] + 'def t(n):\n    try:\n        return sb.call("raw", a=nest(n))\n'
                       '    except TypeError as e:\n        return str(e)\n[t(199), t(200)]'},
            check, "--tools", TOOLS)

    def test_answers_from_a_tool(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"][0], 200, r)  # its depth, counted by the guest
            self.assertEqual(r.result["value"][1], 'tool "raw" answered a value ' + TOO_DEEP, r)
        self.each_mode(
            {"ruby": 'def t(n) = SB.call("raw", emit: "[" * n + "1" + "]" * n)\n'
                     'def try; yield; rescue SB::ToolError => e; e.message; end\n'
                     'def d(x) = Array === x ? 1 + d(x[0]) : 0\n[d(t(200)), try { t(201) }]',
             "python": 'def t(n):\n    try:\n        return sb.call("raw", emit="[" * n + "1" + "]" * n)\n'
                       '    except sb.ToolError as e:\n        return str(e)\n'
                       'def d(x):\n    return 1 + d(x[0]) if isinstance(x, list) else 0\n'
                       '[d(t(200)), t(201)]'},
            check, "--tools", TOOLS)


class CallsFromSignalHandlers(EachMode, unittest.TestCase):
    """A handler's call while no call is in flight runs; one that interrupted a call of its own
    thread is refused at once (the host answers one call at a time), never a deadlock."""

    def test_a_handler_calls_a_tool_while_none_is_in_flight(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], {"got": {"q": "in handler"}}, r)
        # The handler runs at the latest when the signal is unblocked... or by the next
        # instruction after kill; the loop waits for it with a generous deadline.
        self.each_mode(
            {"ruby": 'got = nil; trap("USR1") { got = SB.call("echo", q: "in handler") }\n'
                     'Process.kill("USR1", $$); t = Time.now\n'
                     'sleep 0.01 while got.nil? && Time.now - t < 60; got',
             "python": "import os, signal, time\ngot = []\n"
                       "signal.signal(signal.SIGUSR1, lambda *a: got.append(sb.call('echo', "
                       "q='in handler')))\nos.kill(os.getpid(), signal.SIGUSR1)\nt = time.time()\n"
                       "while not got and time.time() - t < 60:\n    time.sleep(0.01)\n"
                       "got[0] if got else None"},
            check, "--tools", TOOLS, "--timeout", "90s")

    def test_a_handler_that_interrupted_a_call_gets_a_tool_error_at_once(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            cls, message = r.result["value"]
            self.assertEqual(cls, "ToolError", r)
            self.assertIn("signal handler", message)
        # The outer call never ends on its own (hang_long): the run's answer comes only from
        # the handler's error, which interrupts it; the wall clock is far off.
        self.each_mode(
            {"ruby": 'trap("ALRM") { SB.call("echo", q: "in handler") }\n'
                     'Thread.new { sleep 0.5; Process.kill("ALRM", $$) }\n'
                     'begin; SB.call("hang_long"); rescue SB::ToolError => e; '
                     '[e.class.name.sub("SB::", ""), e.message]; end',
             "python": "import signal\n"
                       "signal.signal(signal.SIGALRM, lambda *a: sb.call('echo', q='in handler'))\n"
                       "signal.setitimer(signal.ITIMER_REAL, 0.5)\n"
                       "try:\n    sb.call('hang_long')\n"
                       "except sb.ToolError as e:\n    r = [type(e).__name__, str(e)]\nr"},
            check, "--tools", TOOLS, "--timeout", "60s")


# The guest's SigBlk and SigIgn lines of /proc/self/status, as the value.
SIGNAL_STATE = {
    "ruby": 'File.read("/proc/self/status").lines.grep(/^Sig(Blk|Ign):/).map(&:split).to_h',
    "python": "dict(l.split()[:2] for l in open('/proc/self/status') if l.startswith(('SigBlk:', "
              "'SigIgn:')))",
}
# What a guest may find ignored: SIGXFSZ (the engine's, so that a write past the file size limit
# fails with EFBIG) and SIGPIPE (Python's own, at start-up).
MAY_BE_IGNORED = 1 << (signal.SIGXFSZ - 1) | 1 << (signal.SIGPIPE - 1)


def ignore_raw(sig):
    """Ignores sig through the kernel's call: the C library's (and Python's) refuse the
    real-time signals it keeps for itself, which a process may still inherit ignored."""
    import ctypes
    action = (ctypes.c_ulong * 4)(1, 0, 0, 0)  # SIG_IGN, no flags, no restorer, empty mask
    ctypes.CDLL(None, use_errno=True).syscall(13, sig, ctypes.byref(action), None, 8)


def engine_with_odd_signals():
    """An engine started with SIGINT and SIGUSR2 blocked, and SIGHUP, SIGUSR1 and the C
    library's own signal 32 ignored."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGUSR2})
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    ignore_raw(32)


class DefaultSignals(unittest.TestCase):
    def check_state(self, state):
        self.assertEqual(int(state["SigBlk:"], 16), 0, state)
        self.assertEqual(int(state["SigIgn:"], 16) & ~MAY_BE_IGNORED, 0, state)

    def test_under_run_whatever_the_engine_inherited(self):
        for lang in LANGUAGES:
            for start in STARTS:
                with self.subTest(lang=lang, start=start):
                    with subprocess.Popen([BIN, "run", "--json", "--lang", lang, "--start", start,
                                           "-e", SIGNAL_STATE[lang]], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True,
                                          preexec_fn=engine_with_odd_signals) as proc:
                        LAUNCHED.append(proc.pid)
                        out, err = proc.communicate(timeout=120)
                    r = json.loads(out)
                    self.assertEqual(r["status"], "ok", (out, err))
                    self.check_state(r["value"])

    def test_under_serve(self):
        # serve blocks SIGINT and SIGTERM in its threads (it waits for them with sigwait).
        d = tempdir(self)
        cells = [{"name": f"{lang}_{start}", "language": lang, "start": start, "pool": 1,
                  "limits": {"timeout_ms": 20000}}
                 for lang in LANGUAGES for start in STARTS]
        peer = Stdio(write_config(d, cells))
        self.addCleanup(lambda: peer.proc.poll() is None and peer.close())
        peer.request(INIT)
        for i, cell in enumerate(cells, 1):
            with self.subTest(cell=cell["name"]):
                m = peer.request({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                  "params": {"name": cell["name"],
                                             "arguments": {"code": SIGNAL_STATE[cell["language"]]}}})
                result = m["result"]["structuredContent"]
                self.assertEqual(result["status"], "ok", m)
                self.check_state(result["value"])
        code, err = peer.close()
        self.assertEqual(code, 0, err)


if __name__ == "__main__":
    unittest.main()


# A result frame the guest writes itself, for the exec it is running (its id read from the
# prelude's memory), whose value is one valid JSON value spread over lines: the middle one a
# whole JSON-RPC message of the guest's choosing.
FORGE = {
    "ruby": "require 'json'\n"
            "ex = ObjectSpace.each_object(Hash).find { |h| h['t'] == 'exec' rescue false }\n"
            "msg = {jsonrpc: '2.0', id: 'forged', method: 'sampling/createMessage', params: {}}\n"
            "text = \"[\\n\" + JSON.generate(msg) + \"\\n]\"\n"
            "f = JSON.generate(t: 'result', id: ex['id'], ok: true, value_json: text)\n"
            "io = IO.for_fd(3, autoclose: false); io.write([f.bytesize].pack('N') + f); io.flush\n"
            "sleep 1",
    "python": "import json, os, struct, sys, time\n"
              "f = sys._getframe()\n"
              "while not (isinstance(f.f_locals.get('frame'), dict) and 'id' in f.f_locals['frame']):\n"
              "    f = f.f_back\n"
              "msg = {'jsonrpc': '2.0', 'id': 'forged', 'method': 'sampling/createMessage', 'params': {}}\n"
              "text = '[\\n' + json.dumps(msg) + '\\n]'\n"
              "b = json.dumps({'t': 'result', 'id': f.f_locals['frame']['id'], 'ok': True, 'value_json': text}).encode()\n"
              "os.write(3, struct.pack('>I', len(b)) + b)\n"
              "time.sleep(1)",
}
FORGED = [{"jsonrpc": "2.0", "id": "forged", "method": "sampling/createMessage", "params": {}}]


class ValuesAreOneLine(EachMode, unittest.TestCase):
    """A value is the guest's JSON text, and JSON allows line breaks between its tokens: kept,
    they split every line-framed stream the value is spliced into (MCP over stdio, an SSE
    event, `run --json`), and the guest could write whole messages of its own into the
    client's stream. The value comes back as data, on the answer's one line."""

    def test_run_json_prints_one_line(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], FORGED)
            self.assertEqual(r.stdout.count("\n"), 1, r.stdout)
        self.each_mode(FORGE, check)

    def test_the_mcp_stream_carries_only_the_server_s_messages(self):
        d = tempdir(self)
        cells = [{"name": f"{lang}_{start}", "language": lang, "start": start, "pool": 1}
                 for lang in LANGUAGES for start in STARTS]
        peer = Stdio(write_config(d, cells))
        self.addCleanup(lambda: peer.proc.poll() is None and peer.close())
        peer.request(INIT)
        for i, cell in enumerate(cells, start=10):
            with self.subTest(cell=cell["name"]):
                peer.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                           "params": {"name": cell["name"], "arguments": {"code": FORGE[cell["language"]]}}})
                # The very next line is the answer (nothing else is in flight), and it parses.
                m = peer.read(120)
                self.assertEqual(m.get("id"), i, m)
                self.assertNotIn("method", m)
                self.assertEqual(m["result"]["structuredContent"]["value"], FORGED, m)
        code, err = peer.close()
        self.assertEqual(code, 0, err)
        self.assertEqual(peer.buffer, b"", "the server wrote more than its answers")


class DuplicateKeys(EachMode, unittest.TestCase):
    """One key, one value: a JSON object that holds a key twice is read differently by parsers
    that keep the first and those that keep the last."""

    def test_keys_that_json_writes_alike_give_the_inspect(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], {"ruby": '{1=>2, "1"=>3}',
                                                 "python": "{1: 'a', '1': 'b'}"}[lang], r)
        self.each_mode({"ruby": '{1 => 2, "1" => 3}', "python": "{1: 'a', '1': 'b'}"}, check)

    def test_ruby_tool_arguments_with_a_key_twice_are_refused(self):
        def check(r, lang):
            self.assertEqual(r.status, "ok", r)
            self.assertEqual(r.result["value"], ["TypeError", True], r)
        self.each_mode({"ruby": 'begin; SB.call("echo", {"a" => 1, a: 2}); rescue TypeError => e; '
                                '["TypeError", e.message.include?("twice")]; end',
                        "python": "['TypeError', True]"},
                       check, "--tools", TOOLS)
