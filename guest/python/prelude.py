"""codecell's Python guest prelude (DESIGN §5).

Run by the interpreter inside the sandbox with the control socket on fd 3: says "ready",
receives one "exec", runs the code as a module-level script and answers with one "result"
frame. Guest code sees only the `sb` module (also importable as `import sb`).
"""

# _ast, not ast: the C module is all the prelude needs, and the ast package would add ~2 ms of
# imports to every start.
import _ast
import _signal
import _thread
import binascii
import builtins
import errno
import json
import os
import select
import stat
import struct
import sys
import time
import types

CONTROL_FD = 3
MAX_BACKTRACE = 20
MAX_MESSAGE = 100_000  # characters of an exception's message
# Levels of lists and dicts in a value, one inside the other ([[1]] is 2): the engine's one rule
# for run values, tool arguments and tool answers (docs/results.md).
MAX_DEPTH = 200
TOO_DEEP = "nested deeper than %d levels of arrays and objects (the limit)" % MAX_DEPTH
FILENAME = "sandbox"  # the script's name: __file__, sys.argv[0], backtraces

# The host's system packages (Debian's python3-*) are importable; the interpreter runs with
# -I -S, so site.py is not run: .pth files there are not processed.
for _path in ("/usr/local/lib/python3/dist-packages",
              "/usr/local/lib/python%d.%d/dist-packages" % sys.version_info[:2],
              "/usr/lib/python3/dist-packages"):
    if os.path.isdir(_path) and _path not in sys.path:
        sys.path.append(_path)


# The prelude's own references: guest code that rebinds json.dumps does not break the channel.
_dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def _text(value):
    """A str that encodes as UTF-8: lone surrogates (os.fsdecode of a non-UTF-8 name gives
    them) become U+FFFD, as the engine does with invalid bytes of output."""
    value = str.__str__(value) if isinstance(value, str) else str(value)
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _send(obj):
    body = _dumps(obj).encode("utf-8")
    data = struct.pack(">I", len(body)) + body
    while data:
        data = data[os.write(CONTROL_FD, data):]


def _read_exact(n):
    chunks = []
    while n > 0:
        chunk = os.read(CONTROL_FD, n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_frame():
    header = _read_exact(4)
    if header is None:
        return None
    body = _read_exact(struct.unpack(">I", header)[0])
    return None if body is None else json.loads(body.decode("utf-8"))


# ---- host RPC: the sb module -----------------------------------------------------------------

sb = types.ModuleType("sb", "Host functions of this sandbox: sb.call(name, key=value).")


class ToolError(Exception):
    """A host tool failed; the message says why."""


class UnknownTool(ToolError):
    """No host tool has that name."""


class RpcUnavailable(Exception):
    """The host's tool channel is gone."""


_NOT_JSON = "rpc arguments must be JSON-serializable"
_NOT_UTF_8 = "text that is not valid UTF-8 (a lone surrogate)"


def _not_json(path, what):
    raise TypeError("%s: %s %s" % (_NOT_JSON, path if len(path) <= 200 else path[:200] + "…", what))


def _json_text(value):
    """Whether json can write it as UTF-8: a str without lone surrogates."""
    try:
        str.encode(value, "utf-8")  # str's own: a subclass's encode may say anything
        return True
    except UnicodeEncodeError:
        return False


def _check_json(value, path, depth=0):
    """Tool arguments are JSON data: what JSON cannot carry (NaN, Infinity, a lone surrogate, a
    key that is not a str, any other object) or what is nested deeper than the host takes is
    the seed's TypeError, raised before anything is sent."""
    if isinstance(value, (list, tuple, dict)) and depth >= MAX_DEPTH:
        _not_json(path, "is " + TOO_DEEP)
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, str):
        if not _json_text(value):
            _not_json(path, "is " + _NOT_UTF_8)
        return
    if isinstance(value, float):
        number = float.__float__(value)  # a subclass's __eq__ may say anything
        if number != number or number in (float("inf"), float("-inf")):
            _not_json(path, "is %r, which JSON cannot carry" % number)
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json(item, "%s[%d]" % (path, i), depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                _not_json(path, "has a %s key" % type(key).__name__)
            if not _json_text(key):
                _not_json(path, "has a key that is %s: %r" % (_NOT_UTF_8, key[:80]))
            _check_json(item, "%s[%r]" % (path, key), depth + 1)
        return
    _not_json(path, "is a %s" % type(value).__name__)


_rpc_id = [1]
# Calls in flight, by id (docs/tools.md): up to the cell's tool_concurrency run on the host at
# once, and each caller (a thread blocked in call, or an asyncio future of acall) waits for its
# own reply. One reader at a time: a thread waiting for its reply reads the next frame when
# nobody else does, or an event loop that awaits replies does; whoever reads hands the frame
# to its caller by id and wakes the sleeping threads, one of which reads next. _rpc_lock guards
# the tables; reentrant, for a signal handler that runs on a thread inside call: a handler that
# interrupted its own thread's call (or the read) is refused at once, never left to wait for
# itself. A reply nobody waits for (its caller gave up) is skipped.
_rpc_lock = _thread.RLock()
_calls = {}  # id -> _Waiter
_sleepers = []  # locks of threads waiting for a frame to be read
_reader = [None]  # the ident of the thread reading a frame
_rpc_depth = {}  # thread ident -> its calls between sending and the reply
_watched = {}  # event loop -> its acalls awaiting a reply (the loop reads while any is)
_REENTERED = ("sb.call from a signal handler that interrupted another sb.call of the same "
              "thread: call tools outside the handler")


class _Waiter:
    __slots__ = ("reply", "future", "loop")

    def __init__(self, future=None, loop=None):
        self.reply, self.future, self.loop = None, future, loop

    def settle(self, reply):
        if self.future is None:
            self.reply = reply
            return
        try:
            self.loop.call_soon_threadsafe(_resolve, self.future, reply)
        except RuntimeError:  # the loop is closed: nobody awaits the answer any more
            pass


def _resolve(future, reply):
    if not future.done():
        future.set_result(reply)


def _args_text(args):
    # The arguments as text (checked by _check_json): the host reads integers of any size there,
    # where a frame's own members hold 64 bits.
    try:
        with _whole_ints():
            args_json = _dumps(args)
        str.encode(args_json, "utf-8")
    except (ValueError, TypeError, RecursionError) as e:  # what _check_json did not foresee
        raise TypeError("%s: %s" % (_NOT_JSON, e)) from None
    return args_json


def _begin(name, args, waiter):
    """Sends one call frame; its reply goes to waiter. Returns the call's id."""
    args_json = _args_text(args)
    me = _thread.get_ident()
    with _rpc_lock:
        if _rpc_depth.get(me) or _reader[0] == me:
            raise ToolError(_REENTERED)
        _rpc_id[0] += 1
        call_id = _rpc_id[0]
        _calls[call_id] = waiter
        _rpc_depth[me] = 1
        try:
            _send({"t": "call", "id": call_id, "name": _text(name), "args_json": args_json})
        except BaseException:
            del _calls[call_id]
            raise
        finally:
            _rpc_depth[me] = 0
    return call_id


def _lost(why):
    """The channel is gone or out of step: every caller hears it, none waits for ever."""
    with _rpc_lock:
        waiters = list(_calls.values())
        _calls.clear()
    for waiter in waiters:
        waiter.settle({"t": "lost", "why": why})
    raise RpcUnavailable(why)


def _read_one():
    """Reads one frame as the reader (_reader is this thread) and hands it to its caller."""
    try:
        with _whole_ints():
            frame = _read_frame()
    finally:
        with _rpc_lock:
            _reader[0] = None
    try:
        if frame is None:
            _lost("the host closed the tool channel")
        if not (isinstance(frame, dict) and frame.get("t") == "reply" and
                type(frame.get("id")) is int):
            _lost("unexpected answer from the host")
        with _rpc_lock:
            waiter = _calls.pop(frame["id"], None)
        if waiter is not None:
            waiter.settle(frame)
    finally:
        with _rpc_lock:
            sleepers = _sleepers[:]
            del _sleepers[:]
        for lock in sleepers:
            lock.release()


def _wait(call_id, waiter):
    """The reply to a call of this thread: read by this thread or handed to it."""
    me = _thread.get_ident()
    sleeper = None
    try:
        while True:
            with _rpc_lock:
                if waiter.reply is not None:
                    return waiter.reply
                if _reader[0] is None:
                    _reader[0], sleeper = me, None
                else:
                    sleeper = _thread.allocate_lock()
                    sleeper.acquire()
                    _sleepers.append(sleeper)
            if sleeper is None:
                _read_one()
            else:
                sleeper.acquire()
                sleeper = None
    finally:
        with _rpc_lock:
            _calls.pop(call_id, None)
            if sleeper is not None and sleeper in _sleepers:
                _sleepers.remove(sleeper)


def _on_readable():
    """An event loop's turn to read, when an acall awaits and no thread reads."""
    with _rpc_lock:
        if _reader[0] is not None or not _calls:
            return
        _reader[0] = _thread.get_ident()
    try:
        _read_one()
    except RpcUnavailable:
        pass  # every waiter was told


def _watch(loop, step):
    with _rpc_lock:
        count = _watched.get(loop, 0) + step
        if count > 0:
            _watched[loop] = count
        else:
            _watched.pop(loop, None)
    if step > 0 and count == 1:
        loop.add_reader(CONTROL_FD, _on_readable)
    elif count == 0:
        try:
            loop.remove_reader(CONTROL_FD)
        except Exception:  # the loop is closing
            pass


def _call_args(name, args, kwargs):
    if not isinstance(name, str) or not name:
        raise ValueError("tool name must be a non-empty str, got %r" % (name,))
    merged = {} if args is None else args
    if not isinstance(merged, dict):
        raise TypeError("tool arguments must be a dict, got %s" % type(merged).__name__)
    if kwargs:
        merged = dict(merged, **kwargs)
    _check_json(merged, "args")
    return merged


def _answer(reply, call_id):
    if not isinstance(reply, dict) or reply.get("t") != "reply" or reply.get("id") != call_id:
        raise RpcUnavailable(reply.get("why") if isinstance(reply, dict) and reply.get("why")
                             else "unexpected answer from the host")
    if reply.get("ok"):
        return reply.get("result")
    error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
    cls = UnknownTool if error.get("class") == "SB::UnknownTool" else ToolError
    raise cls(str(error.get("message", "")))


def call(name, args=None, /, **kwargs):
    """Calls a host tool and returns its answer as plain data (dicts, lists, str, numbers)."""
    merged = _call_args(name, args, kwargs)
    waiter = _Waiter()
    call_id = _begin(name, merged, waiter)
    me = _thread.get_ident()
    with _rpc_lock:
        _rpc_depth[me] = 1
    try:
        reply = _wait(call_id, waiter)
    finally:
        with _rpc_lock:
            _rpc_depth[me] = 0
    return _answer(reply, call_id)


async def acall(name, args=None, /, **kwargs):
    """sb.call for asyncio: `await sb.acall(...)`; calls gathered together run at once."""
    merged = _call_args(name, args, kwargs)
    import asyncio
    loop = asyncio.get_running_loop()
    waiter = _Waiter(loop.create_future(), loop)
    call_id = _begin(name, merged, waiter)
    _watch(loop, 1)
    try:
        reply = await waiter.future
    finally:
        with _rpc_lock:
            _calls.pop(call_id, None)
        _watch(loop, -1)
    return _answer(reply, call_id)


def describe(name):
    """The full signature of a tool, as the description would show it (docs/tools.md)."""
    return call("$describe", name=name)


# ---- bindings of the MCP servers' tools (docs/tools.md) ---------------------------------------

mcp = types.ModuleType("sb.mcp", "The MCP servers' tools: sb.mcp.memory.create_entities(...).")


class _Server:
    """The tools of one MCP server, as functions: memory.create_entities(entities=[...])."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "<MCP server %s: %s>" % (self._name, ", ".join(
            sorted(k for k in vars(self) if not k.startswith("_"))))


def _tool_function(full):
    def tool(args=None, /, **kwargs):
        return call(full, args, **kwargs)
    tool.__name__ = tool.__qualname__ = full
    tool.__doc__ = "Calls the tool %s; sb.describe(%r) gives its signature." % (full, full)
    return tool


def _async_tool_function(full):
    async def tool(args=None, /, **kwargs):
        return await acall(full, args, **kwargs)
    tool.__name__ = tool.__qualname__ = "a" + full
    tool.__doc__ = "Calls the tool %s (await it); sb.describe(%r) gives its signature." % (
        full, full)
    tool._codecell_async = True
    return tool


_KEYWORDS = frozenset((
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
    "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
    "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield"))


def _bind_async(obj, method, full):
    """memory.acreate_entities: the coroutine of memory.create_entities. A tool whose own name
    is the async one's ("acreate" beside "create") keeps it: that name is the tool's."""
    name = "a" + method
    current = getattr(obj, name, None)
    if current is not None and not getattr(current, "_codecell_async", False):
        return
    try:
        setattr(obj, name, _async_tool_function(full))
    except Exception:
        pass  # sb.acall still reaches it


def _bind_tools(bindings, scope):
    """For {"memory": {"create_entities": "memory.create_entities"}}: memory.create_entities(**a)
    is sb.call("memory.create_entities", **a). The object is sb.mcp.memory, and `memory` in the
    script's globals unless that name is taken (a variable, or a builtin such as `print`). A
    tool named like a keyword gets a trailing "_" (memory.import_)."""
    for server, tools in bindings.items():
        if not isinstance(server, str) or not isinstance(tools, dict):
            continue
        obj = mcp.__dict__.get(server)
        if not isinstance(obj, _Server):
            obj = _Server(server)
            setattr(mcp, server, obj)
        for method, full in tools.items():
            # Never over the object's own machinery (__class__, _name).
            if not isinstance(method, str) or method.startswith("__") or method == "_name":
                continue
            try:
                setattr(obj, method + "_" if method in _KEYWORDS else method, _tool_function(full))
            except Exception:
                pass  # sb.call still reaches it
            _bind_async(obj, method, full)
        if scope.get(server, obj) is obj and not hasattr(builtins, server):
            scope[server] = obj


ToolError.__module__ = UnknownTool.__module__ = RpcUnavailable.__module__ = "sb"
sb.call, sb.ToolError, sb.UnknownTool, sb.RpcUnavailable = call, ToolError, UnknownTool, RpcUnavailable
sb.describe, sb.mcp, sb.acall = describe, mcp, acall
sys.modules["sb"] = sb


# ---- evaluation -------------------------------------------------------------------------------

_FLOAT_TAGS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


class _TooDeep(Exception):
    pass


class _whole_ints:
    """Integers have any size in JSON (and in Ruby): lifts the int-to-str digit limit (Python
    3.11+) while the prelude encodes or reads one, which is the guest's own CPU time."""

    def __enter__(self):
        self.limit = getattr(sys, "get_int_max_str_digits", lambda: None)()
        if self.limit is not None:
            sys.set_int_max_str_digits(0)

    def __exit__(self, *exc):
        if self.limit is not None:
            sys.set_int_max_str_digits(self.limit)


def _plain(value, depth=0):
    """Data that survives JSON exactly; anything else as its repr (like Ruby's inspect)."""
    if isinstance(value, (list, tuple, dict)) and depth >= MAX_DEPTH:
        raise _TooDeep()
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, int):
        return int(value)  # any size: JSON numbers have no limit
    if isinstance(value, float):
        value = float(value)
        if value != value or value in (float("inf"), float("-inf")):
            return {"$float": _FLOAT_TAGS[repr(value)]}  # JSON has no NaN or Infinity
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item, depth + 1) for item in value]
    if isinstance(value, dict) and all(isinstance(k, (str, int, float, bool)) or k is None
                                       for k in value):
        data = {_text(k) if isinstance(k, str) else json.dumps(k): _plain(v, depth + 1)
                for k, v in value.items()}
        # Keys that JSON writes alike (1 and "1") would lose a pair: its repr instead.
        return data if len(data) == len(value) else _safe_repr(value)
    return _safe_repr(value)


def _type_name(value):
    try:
        return _text(type(value).__name__)
    except BaseException:
        return "object"


def _safe_repr(value):
    try:
        return _text(repr(value))
    except BaseException:  # a repr that raises, recurses without end, or exits
        return "<%s>" % _type_name(value)


def _value_json(value):
    """The value as exact JSON text: the engine writes it into the result as it is. A value
    nested too deep is a ValueError, as the host refuses one."""
    try:
        with _whole_ints():
            return _dumps(_plain(value))
    except _TooDeep:
        raise ValueError("the value is " + TOO_DEEP) from None
    except BaseException:  # a dict that lies…
        return _dumps(_safe_repr(value))


def _class_name(exc):
    try:
        cls = type(exc)
        module = _text(getattr(cls, "__module__", None) or "builtins")
        name = _text(getattr(cls, "__qualname__", None) or cls.__name__)
        return name if module in ("builtins", "__main__") else module + "." + name
    except BaseException:
        return "BaseException"


def _message(exc):
    try:
        text = _text(str(exc))
    except BaseException:  # __str__ raised, recursed, or returned no str
        return "<exception str() failed>"
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "… (%d more characters)" % (len(text) - MAX_MESSAGE)
    return text


def _backtrace(exc):
    """Frames of the guest's code and the libraries it called, never the prelude's."""
    frames = []
    try:
        tb = exc.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_filename != __file__:
                frames.append("%s:%d:in %s" % (_text(code.co_filename), tb.tb_lineno,
                                               _text(code.co_name)))
            tb = tb.tb_next
    except BaseException:
        pass
    # Innermost first, as Ruby reports them.
    return list(reversed(frames))[:MAX_BACKTRACE]


def _exit_status(exc):
    """sys.exit's status, as the interpreter would exit with it: None is 0, an int itself,
    anything else (a message) 1."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code) if -2**63 <= code < 2**63 else 1
    return 1


def _error(exc):
    if isinstance(exc, SystemExit):
        status = _exit_status(exc)
        if status == 0:
            return {"ok": True, "value_json": "null", "exit_status": 0}
        code = exc.code
        message = "exit status %d" % status
        if code is not None and not isinstance(code, int):
            message = "%s (%s)" % (_message(exc), message)
        return {"ok": False, "exit_status": status,
                "error": {"class": _class_name(exc), "message": message,
                          "backtrace": _backtrace(exc)}}
    backtrace = _backtrace(exc)
    message = _message(exc)
    try:
        if isinstance(exc, SyntaxError) and exc.filename == FILENAME:
            backtrace.insert(0, "%s:%s" % (FILENAME, exc.lineno))
            message += _syntax_excerpt(exc)
    except BaseException:
        pass
    return {"ok": False, "error": {"class": _class_name(exc), "message": message,
                                   "backtrace": backtrace}}


def _syntax_excerpt(exc):
    """The line of a SyntaxError in the code and a caret under the fault, as Python's own
    traceback and Ruby's message show them: "\n    x = = 1\n        ^"."""
    if not exc.text:
        return ""
    line = exc.text.split("\n")[0].rstrip("\r")
    shown = line.lstrip()
    indent = len(line) - len(shown)
    if len(shown) > 300:
        return "\n    " + shown[:300] + "…"
    excerpt = "\n    " + shown
    if exc.offset and exc.offset > indent:
        start = exc.offset - 1 - indent
        end = getattr(exc, "end_offset", None)
        width = end - exc.offset if end and end > exc.offset and exc.end_lineno == exc.lineno \
            else 1
        width = max(1, min(width, len(shown) - start))
        excerpt += "\n    " + " " * start + "^" * width
    return excerpt


# `await` at the top of the code (await sb.acall(...), asyncio.gather): the code compiles to a
# coroutine, run to its end on an event loop of its own.
_TOP_LEVEL_AWAIT = _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, without importing inspect


def _run_awaiting(body, last, scope):
    """The code's statements and its last expression, either of which awaits, in one loop."""
    import asyncio

    async def whole():
        ran = eval(body, scope)
        if body.co_flags & _CO_COROUTINE:
            await ran
        if last is None:
            return None
        value = eval(last, scope)
        return (await value) if last.co_flags & _CO_COROUTINE else value
    return asyncio.run(whole())


def _evaluate(code, scope, display):
    try:
        tree = compile(code, FILENAME, "exec", _ast.PyCF_ONLY_AST | _TOP_LEVEL_AWAIT)
        last = None
        if tree.body and isinstance(tree.body[-1], _ast.Expr):
            last = _ast.Expression(tree.body.pop().value)
        body = compile(tree, FILENAME, "exec", _TOP_LEVEL_AWAIT)
        last = compile(last, FILENAME, "eval", _TOP_LEVEL_AWAIT) if last is not None else None
        if (body.co_flags | (last.co_flags if last else 0)) & _CO_COROUTINE:
            value = _run_awaiting(body, last, scope)
        else:
            exec(body, scope)
            value = eval(last, scope) if last is not None else None
    except BaseException as exc:  # every failure is reported, SystemExit included
        try:
            return _error(exc)
        except BaseException:  # an exception that defeats every guard above
            return {"ok": False, "error": {"class": "BaseException",
                                           "message": "<exception could not be read>",
                                           "backtrace": []}}
    try:
        out = {"ok": True, "value_json": _value_json(value)}
    except ValueError as exc:  # nested too deep
        return _error(exc)
    _add_display(out, value, display)
    return out


# ---- rich values ------------------------------------------------------------------------------
# What the last value says it looks like, by IPython's convention (_repr_markdown_ and the
# others), beside its plain value (docs/results.md, "Rich values"). Each method is the guest's
# code: one that raises, runs too long or returns what is not its kind is left out, and a note
# says so; the run goes on. The engine checks each kind again and cuts it to the model's budget.

DISPLAY_KINDS = (("markdown", "_repr_markdown_"), ("html", "_repr_html_"), ("svg", "_repr_svg_"),
                 ("json", "_repr_json_"), ("png", "_repr_png_"))
DISPLAY_SECONDS = 2.0  # for all of one value's methods together
MAX_DISPLAY_NOTE = 300


class _DisplayTimeout(Exception):
    pass


def _display_alarm(_signum, _frame):
    raise _DisplayTimeout()


def _display_note(kind, what):
    text = "%s: %s" % (kind, what)
    return text if len(text) <= MAX_DISPLAY_NOTE else text[:MAX_DISPLAY_NOTE - 1] + "…"


def _cut_text(text, max_chars):
    """text within max_chars characters (a str's slice never splits a character)."""
    return text if len(text) <= max_chars else text[:max_chars]


def _frame_table(frame, rows=5):
    """A pandas DataFrame as a markdown table: its first and last rows and its shape, written
    here (pandas' own to_markdown needs the tabulate package)."""
    height, width = frame.shape
    head = frame.head(rows) if height > 2 * rows else frame
    tail = frame.tail(rows) if height > 2 * rows else None

    def cell(v):
        return _text(v).replace("|", "\\|").replace("\n", " ")

    names = [cell(c) for c in frame.columns]
    index_name = cell(frame.index.name) if frame.index.name is not None else ""
    lines = ["| " + " | ".join([index_name] + names) + " |",
             "|" + "---|" * (len(names) + 1)]

    def add(part):
        for label, row in zip(part.index, part.itertuples(index=False, name=None)):
            lines.append("| " + " | ".join([cell(label)] + [cell(v) for v in row]) + " |")
    add(head)
    if tail is not None:
        lines.append("| … |" + " … |" * len(names))
        add(tail)
    lines.append("")
    lines.append("%d rows × %d columns" % (height, width))
    return "\n".join(lines)


def _pandas_frame(value):
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


def _display_one(value, kind, method):
    """One kind's data, or raises ValueError saying why not; None: the value has none."""
    if kind == "markdown" and _pandas_frame(value):
        return _frame_table(value)
    fn = getattr(value, method, None)
    if fn is None or not callable(fn):
        return None
    data = fn()
    if isinstance(data, tuple) and len(data) == 2:  # (data, metadata): the metadata is not used
        data = data[0]
    if data is None:  # "not available", by the convention
        return None
    if kind == "png":
        if not isinstance(data, (bytes, bytearray)):
            raise ValueError("returned a %s, not bytes" % _type_name(data))
        return bytes(data)
    if kind == "json":
        return _plain(data)
    if not isinstance(data, str):
        raise ValueError("returned a %s, not a str" % _type_name(data))
    return _text(data)


def _display(value, limits):
    """({kind: data}, [notes]) for the value's rich forms, within the frame's limits."""
    if value is None or isinstance(value, (bool, int, float, str, list, tuple, dict)):
        return {}, []
    max_chars = int(limits.get("max_chars") or 20000)
    max_bytes = int(limits.get("max_bytes") or 4 << 20)
    shown, notes = {}, []
    previous = _signal.signal(_signal.SIGALRM, _display_alarm)
    # A session's code may have an alarm of its own running: it goes on afterwards.
    started = time.monotonic()
    guest_alarm = _signal.setitimer(_signal.ITIMER_REAL, DISPLAY_SECONDS)
    try:
        for kind, method in DISPLAY_KINDS:
            try:
                data = _display_one(value, kind, method)
            except _DisplayTimeout:
                notes.append(_display_note(kind, "%s ran over %g s" % (method, DISPLAY_SECONDS)))
                break
            except BaseException as exc:  # the guest's method: anything, SystemExit too
                notes.append(_display_note(kind, "%s failed: %s: %s" % (
                    method, _class_name(exc), _message(exc))))
                continue
            if data is None:
                continue
            if kind == "png":
                if len(data) > max_bytes:
                    notes.append(_display_note(kind, "%d bytes, over the %d-byte limit" % (
                        len(data), max_bytes)))
                    continue
                data = binascii.b2a_base64(data, newline=False).decode("ascii")
            elif kind != "json":
                if len(data) > max_chars:
                    notes.append(_display_note(kind, "cut at %d of %d characters" % (
                        max_chars, len(data))))
                data = _cut_text(data, max_chars)
            shown[kind] = data
    except _DisplayTimeout:  # the alarm between two methods
        pass
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, previous)
        if guest_alarm[0] > 0:
            left = guest_alarm[0] - (time.monotonic() - started)
            _signal.setitimer(_signal.ITIMER_REAL, max(left, 0.001), guest_alarm[1])
    return shown, notes


def _add_display(out, value, limits):
    """The result's "display" and "display_notes", when the value has rich forms."""
    try:
        shown, notes = _display(value, limits)
    except BaseException as exc:
        shown, notes = {}, [_display_note("display", "failed: %s" % _class_name(exc))]
    if "json" in shown:
        # JSON cut in the middle is no JSON: over the budget it is left out whole.
        try:
            with _whole_ints():
                size = len(_dumps(shown["json"]))
            if size > int(limits.get("max_chars") or 20000):
                notes.append(_display_note("json", "%d characters, over the limit" % size))
                del shown["json"]
        except BaseException:
            notes.append(_display_note("json", "_repr_json_ returned what JSON cannot carry"))
            del shown["json"]
    # Never the reason the result frame goes over the engine's limit: the largest forms go
    # first, until the rest fits.
    room = int(limits.get("max_frame_bytes") or 16 << 20) - len(out["value_json"].encode("utf-8")) - 65536
    while shown and len(_dumps(shown).encode("utf-8")) > room:
        kind = max(shown, key=lambda k: len(_dumps(shown[k]).encode("utf-8")))
        notes.append(_display_note(kind, "left out: the result would be over frame_bytes"))
        del shown[kind]
    if shown:
        out["display"] = shown
    if notes:
        out["display_notes"] = notes[:10]


# ---- pictures ----------------------------------------------------------------------------------
# Figures drawn with matplotlib go to the engine as "image" frames before the result, and the
# files written to the cell's output folder as "file" frames; the engine checks their bytes
# (a picture among the files joins the images) and caps again.

_pictures = {"id": None, "max": 0, "max_bytes": 0, "folder": None, "handed": 0}


def _hand_back(data, size=None):
    """One picture for the engine; over a cap, only its size (the engine says what was left
    out), so that no frame grows past the engine's limit."""
    frame = {"t": "image", "id": _pictures["id"]}
    size = len(data) if size is None else size
    if _pictures["handed"] < _pictures["max"] and size <= _pictures["max_bytes"]:
        frame["data"] = binascii.b2a_base64(data, newline=False).decode("ascii")
    else:
        frame["size"] = size
    _pictures["handed"] += 1
    _send(frame)


def _show_figures(*_args, **_kwargs):
    """plt.show() in the sandbox, and the end of every run: each open figure comes back as a
    PNG and is closed, as in a notebook."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    import io
    for number in plt.get_fignums():
        figure = plt.figure(number)
        png = io.BytesIO()
        try:
            figure.savefig(png, format="png")
        finally:
            plt.close(figure)
        _hand_back(png.getvalue())


class _FigureBackend:
    """matplotlib's backend here (MPLBACKEND=module://_codecell_figures): Agg, which draws
    without a display, with _show_figures as its show()."""
    NAME = "_codecell_figures"

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != cls.NAME:
            return None
        import importlib.machinery
        return importlib.machinery.ModuleSpec(name, cls)

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        module.FigureCanvas = FigureCanvasAgg
        module.show = _show_figures


sys.meta_path.append(_FigureBackend)
os.environ["MPLBACKEND"] = "module://" + _FigureBackend.NAME


def _folder_state(folder):
    """{name: (mode, size, mtime_ns, inode)} of the entries of the output folder, read without
    following links, to tell what a run wrote or changed."""
    state = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    state[entry.name] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
    except OSError:
        pass
    return state


def _kind_of(mode):
    """The engine's word for a folder entry that is not read: it words the note itself."""
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "other"


def _read_capped(path, cap):
    """(bytes, None) of a regular file, at most cap + 1 of them, or (None, kind). The code may
    still be running in another process and swap the file for a link or a FIFO after the
    folder was listed: O_NOFOLLOW refuses the link, O_NONBLOCK keeps the open of a FIFO from
    waiting for a writer, and fstat judges what was opened, not what was listed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return None, "link" if exc.errno == errno.ELOOP else "changed"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, _kind_of(st.st_mode)
        chunks, left = [], cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), None
    except OSError:
        return None, "changed"
    finally:
        os.close(fd)


def _hand_back_folder(folder, before, files_out):
    """Every entry of the output folder the run wrote or changed, as a "file" frame: its bytes
    when they fit the caps, else only why not. The engine types the bytes (a picture joins the
    images) and counts again; the prelude's caps only keep frames small and few."""
    cap = min(max(_pictures["max_bytes"], int(files_out.get("max_bytes", 0))),
              int(files_out.get("read_bytes", 1 << 62)))
    room = _pictures["max"] + int(files_out.get("max", 0))
    for name, state in sorted(_folder_state(folder).items()):
        if before.get(name) == state:
            continue
        # A name that is not UTF-8 cannot go into a frame as it is: its bad bytes (lone
        # surrogates here, from the file system's encoding) become U+FFFD, as Ruby's do.
        frame = {"t": "file", "id": _pictures["id"],
                 "name": name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")}
        if not stat.S_ISREG(state[0]):
            frame["kind"] = _kind_of(state[0])
        elif room <= 0:
            frame["kind"] = "count"
        elif state[1] > cap:
            frame["size"] = state[1]
        else:
            data, kind = _read_capped(os.path.join(folder, name), cap)
            if kind:
                frame["kind"] = kind
            elif len(data) > cap:
                frame["size"] = len(data)
            else:
                frame["data"] = binascii.b2a_base64(data, newline=False).decode("ascii")
                room -= 1
        _send(frame)


def _hand_back_pictures(before, files_out):
    try:
        _show_figures()
    except BaseException as exc:
        print("codecell: a figure could not be drawn: %s" % _message(exc), file=sys.stderr)
    if _pictures["folder"]:
        _hand_back_folder(_pictures["folder"], before, files_out)


def _exit(code=None):
    raise SystemExit(code)


def _apply_input(frame):
    """What the caller gave the run besides its code: arguments, variables, and stdin, which
    becomes fd 0 through a file in /tmp (unlinked at once, so the code never sees it)."""
    if isinstance(frame.get("argv"), list):
        sys.argv = [FILENAME] + [str(a) for a in frame["argv"]]
    if isinstance(frame.get("env"), dict):
        os.environ.update({str(k): str(v) for k, v in frame["env"].items()})
    if isinstance(frame.get("stdin_b64"), str):
        import binascii

        path = "/tmp/.codecell-stdin-%d" % os.getpid()
        with open(path, "wb") as f:
            f.write(binascii.a2b_base64(frame["stdin_b64"]))
        fd = os.open(path, os.O_RDONLY)
        os.unlink(path)
        os.dup2(fd, 0)
        os.close(fd)


def _write_file(fd, part, data, where):
    """data into the regular file part of the folder fd: never through a link, never into a
    FIFO or a device (opened without blocking, checked before a byte is written)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        out = os.open(part, flags, 0o644, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "%s is a symbolic link (never followed): remove it first" % where
        if exc.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO no one reads, a folder
            return "%s is not a regular file (a FIFO, a device or a folder): remove it first" % where
        return "%s cannot be written: %s" % (where, exc.strerror)
    try:
        if not stat.S_ISREG(os.fstat(out).st_mode):
            return "%s is not a regular file (a FIFO, a device or a folder): remove it first" % where
        os.ftruncate(out, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(out, view):]
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            return "%s: /work is full (the cell's work_bytes)" % where
        return "%s cannot be written: %s" % (where, exc.strerror)
    finally:
        os.close(out)
    return None


def _write_files_guarded(files):
    """_write_files, which a session's earlier code may have broken (os.open replaced, /work
    made unreadable, a timer left to fire): whatever it raises refuses the eval, and the
    session lives on."""
    try:
        return _write_files(files)
    except BaseException as exc:  # noqa: B036 -- the guest's doing, never the prelude's end
        try:
            return "the files could not be written: %s: %s" % (_class_name(exc), _message(exc))
        except BaseException:
            return "the files could not be written"


def _write_files(files):
    """The run's files (codecell_run_options.files), written into /work before its code. The
    engine checked their names; what a session's earlier code left on their way (a link, a
    FIFO, a file where a folder is needed) is never followed: the run is refused, naming it.
    Returns that refusal, or None."""
    if not isinstance(files, list):
        return None
    for i, entry in enumerate(files):
        name = str(entry.get("name"))
        quoted = json.dumps(name, ensure_ascii=False)  # as the engine quotes names
        parts = name.split("/")
        fd = os.open("/work", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for k, part in enumerate(parts[:-1]):
                where = "files[%d] (%s): /work/%s" % (i, quoted, "/".join(parts[:k + 1]))
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                except OSError as exc:
                    return "%s cannot be made: %s" % (where, exc.strerror)
                try:
                    inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW |
                                    os.O_CLOEXEC, dir_fd=fd)
                except OSError:
                    return "%s is not a folder (a link or a file, never followed)" % where
                os.close(fd)
                fd = inner
            problem = _write_file(fd, parts[-1], binascii.a2b_base64(entry.get("b64", "")),
                                  "files[%d] (%s): /work/%s" % (i, quoted, name))
            if problem:
                return problem
        finally:
            os.close(fd)
    return None


def _files_refused(problem):
    return {"ok": False, "error": {"class": "codecell.FilesError", "message": problem,
                                   "backtrace": []}}


def _become_a_sandbox_of_the_zygote():
    """A cell's zygote (docs/security.md, "Forked sandboxes"): takes the engine's orders and
    forks a sandbox for each, as /codecell/zygote.so directs (the fork is Python's own, so
    that it renews its locks in a child); comes back only in each sandbox's interpreter, behind
    its walls, which then goes on as any sandbox's."""
    import ctypes

    lib = ctypes.CDLL("/codecell/zygote.so")
    if lib.codecell_zygote_start() != 0:
        os._exit(3)
    while True:
        lib.codecell_zygote_next()
        try:
            guest = os.fork()
        except OSError:
            guest = -1  # said to the engine; the zygote goes on
        if not guest:
            break
        lib.codecell_zygote_parent(guest)
    lib.codecell_zygote_guest()
    del os.environ["CODECELL_ZYGOTE"]
    # random seeds itself from the kernel when first imported; reseed it if it already is.
    if "random" in sys.modules:
        sys.modules["random"].seed()


# ---- between evals ------------------------------------------------------------------------------
# A session's threads may interrupt the main thread while the prelude waits for the next exec
# or answers the last one: SIGINT (a signal, or _thread.interrupt_main) is noted, and said in
# the next result, instead of ending the session; so is an exception a handler of the guest's
# raises while the prelude waits. What kills the process is for the engine to say.

MAX_INTERRUPTS = 10  # reported with one result; more are counted in the last
_interrupts = []


def _note_sigint(signum, _frame):
    _interrupts.append({"class": "KeyboardInterrupt", "message": "signal %d (SIGINT)" % signum})


def _note_sigints():
    """Python's own SIGINT handler gives way to the note outside the guest's code."""
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _note_sigint)


def _guest_sigint():
    """Python's own handler while the guest's code runs, unless the guest set another."""
    if _signal.getsignal(_signal.SIGINT) is _note_sigint:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)


def _note_interrupt(exc):
    _interrupts.append({"class": _class_name(exc), "message": _message(exc)})


def _next_exec(poller):
    """The next frame from the engine. Waiting is safe to interrupt: nothing is read yet. An
    exception mid-frame leaves the channel out of step, so the kernel ends (the engine then
    says the session's state was lost). The answer to a call whose caller gave up waiting, sent
    before the engine took the result (docs/tools.md), is skipped: nobody waits for it."""
    while True:
        frame = _next_frame(poller)
        if not (isinstance(frame, dict) and frame.get("t") == "reply"):
            return frame


def _next_frame(poller):
    while True:
        try:
            poller.poll()
            break
        except BaseException as exc:
            _note_interrupt(exc)
    try:
        return _read_frame()
    except BaseException as exc:
        _note_interrupt(exc)
        os._exit(2)


def _take_interrupts():
    taken = _interrupts[:]
    del _interrupts[:len(taken)]
    if len(taken) > MAX_INTERRUPTS:
        more = len(taken) - MAX_INTERRUPTS + 1
        taken[MAX_INTERRUPTS - 1:] = [{"class": "codecell.Interrupts", "message": "%d more" % more}]
    return taken


def _run():
    """One "exec" after another in the same globals: a one-shot sandbox is ended by the engine
    after its first result, a session's kernel lives on."""
    if os.environ.get("CODECELL_ZYGOTE"):
        _become_a_sandbox_of_the_zygote()
    # Output reaches the engine line by line, so progress reports can show the last line.
    sys.stdout.reconfigure(line_buffering=True)
    _send({"t": "ready", "runtime": "python", "version": "%d.%d.%d" % sys.version_info[:3]})
    # The code runs as a script named FILENAME: `if __name__ == "__main__":` holds.
    sys.argv = [FILENAME]
    scope = {"__name__": "__main__", "__file__": FILENAME, "__builtins__": __builtins__,
             "sb": sb}
    # exit() and quit() as site.py defines them (the interpreter runs with -S).
    if not hasattr(builtins, "exit"):
        builtins.exit = builtins.quit = _exit
    poller = select.poll()
    poller.register(CONTROL_FD, select.POLLIN)
    _note_sigints()
    while True:
        frame = _next_exec(poller)
        if frame is None:  # the engine is gone
            os._exit(0)
        if not isinstance(frame, dict) or frame.get("t") != "exec":
            os._exit(2)
        # Before any of the code runs: an engine that finds this kernel dead without it knows
        # the code never ran, and may run it on a fresh one.
        _send({"t": "taken", "id": frame.get("id")})
        interrupts = _take_interrupts()
        _apply_input(frame)
        refused = _write_files_guarded(frame.get("files"))
        if isinstance(frame.get("bindings"), dict):
            _bind_tools(frame["bindings"], scope)
        started = time.monotonic()
        images = frame.get("images") or {}
        _pictures.update(id=frame.get("id"), max=images.get("max", 0),
                         max_bytes=images.get("max_bytes", 0), folder=images.get("folder"),
                         handed=0)
        before = _folder_state(_pictures["folder"]) if _pictures["folder"] else {}
        _guest_sigint()
        try:
            out = _files_refused(refused) if refused else _evaluate(str(frame.get("code", "")), scope,
                                                                        frame.get("display") or {})
        finally:
            _note_sigints()
        try:
            files_out = frame.get("files_out")
            _hand_back_pictures(before, files_out if isinstance(files_out, dict) else {})
        except BaseException:  # never the end of the run: the result still goes
            pass
        out["duration_ms"] = round((time.monotonic() - started) * 1000, 2)
        # Output written before the result belongs to this execution: flush it first.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        result = {"t": "result", "id": frame.get("id")}
        result.update(out)
        if interrupts:
            result["idle_interrupts"] = interrupts
        try:
            _send(result)
        except BaseException:  # never the end of a session: say what failed instead
            _send({"t": "result", "id": frame.get("id"), "ok": False,
                   "error": {"class": "codecell.ResultError",
                             "message": "the result could not be sent", "backtrace": []}})


_run()
