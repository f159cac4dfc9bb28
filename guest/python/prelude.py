"""codecell's Python guest prelude (DESIGN §5).

Run by the interpreter inside the sandbox with the control socket on fd 3: says "ready",
receives one "exec", runs the code as a module-level script and answers with one "result"
frame. Guest code sees only the `sb` module (also importable as `import sb`).
"""

# _ast, not ast: the C module is all the prelude needs, and the ast package would add ~2 ms of
# imports to every start.
import _ast
import json
import os
import struct
import sys
import time
import types

CONTROL_FD = 3
MAX_BACKTRACE = 20
FILENAME = "sandbox"

# The host's system packages (Debian's python3-*) are importable; the interpreter runs with
# -I -S, so site.py is not run: .pth files there are not processed.
for _path in ("/usr/local/lib/python3/dist-packages",
              "/usr/local/lib/python%d.%d/dist-packages" % sys.version_info[:2],
              "/usr/lib/python3/dist-packages"):
    if os.path.isdir(_path) and _path not in sys.path:
        sys.path.append(_path)


def _send(obj):
    body = json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8")
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


def _check_json(value, path):
    if value is None or isinstance(value, (bool, str, int)):
        return
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise TypeError("tool arguments must be JSON: %s is %r" % (path, value))
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json(item, "%s[%d]" % (path, i))
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError("tool arguments must be JSON: %s has a %s key"
                                % (path, type(key).__name__))
            _check_json(item, "%s[%r]" % (path, key))
        return
    raise TypeError("tool arguments must be JSON: %s is a %s" % (path, type(value).__name__))


_rpc_id = [1]


def call(name, args=None, /, **kwargs):
    """Calls a host tool and returns its answer as plain data (dicts, lists, str, numbers)."""
    if not isinstance(name, str) or not name:
        raise ValueError("tool name must be a non-empty str, got %r" % (name,))
    merged = {} if args is None else args
    if not isinstance(merged, dict):
        raise TypeError("tool arguments must be a dict, got %s" % type(merged).__name__)
    if kwargs:
        merged = dict(merged, **kwargs)
    _check_json(merged, "args")
    _rpc_id[0] += 1
    _send({"t": "call", "id": _rpc_id[0], "name": name, "args": merged})
    reply = _read_frame()
    if reply is None:
        raise RpcUnavailable("the host closed the tool channel")
    if reply.get("t") != "reply" or reply.get("id") != _rpc_id[0]:
        raise RpcUnavailable("unexpected answer from the host")
    if reply.get("ok"):
        return reply.get("result")
    error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
    cls = UnknownTool if error.get("class") == "SB::UnknownTool" else ToolError
    raise cls(str(error.get("message", "")))


ToolError.__module__ = UnknownTool.__module__ = RpcUnavailable.__module__ = "sb"
sb.call, sb.ToolError, sb.UnknownTool, sb.RpcUnavailable = call, ToolError, UnknownTool, RpcUnavailable
sys.modules["sb"] = sb


# ---- evaluation -------------------------------------------------------------------------------

def _plain(value, depth=0):
    """Data that survives JSON as it is; anything else as its repr (like Ruby's inspect)."""
    if depth > 200:
        raise RecursionError("value nested too deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if -2**63 <= value < 2**63 else str(value)
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, (list, tuple)):
        return [_plain(item, depth + 1) for item in value]
    if isinstance(value, dict) and all(isinstance(k, (str, int, float, bool)) or k is None
                                       for k in value):
        return {k if isinstance(k, str) else json.dumps(k): _plain(v, depth + 1)
                for k, v in value.items()}
    return _safe_repr(value)


def _safe_repr(value):
    try:
        return repr(value)
    except Exception:  # a repr that raises
        return "<%s>" % type(value).__name__


def _jsonable(value):
    try:
        return json.loads(json.dumps(_plain(value), allow_nan=False))
    except (ValueError, TypeError, RecursionError):
        return _safe_repr(value)


def _class_name(exc):
    cls = type(exc)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__") else module + "." + cls.__qualname__


def _backtrace(exc):
    """Frames of the guest's code and the libraries it called, never the prelude's."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename != __file__:
            frames.append("%s:%d:in %s" % (code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    # Innermost first, as Ruby reports them.
    return list(reversed(frames))[:MAX_BACKTRACE]


def _evaluate(code, scope):
    try:
        tree = compile(code, FILENAME, "exec", _ast.PyCF_ONLY_AST)
        last = None
        if tree.body and isinstance(tree.body[-1], _ast.Expr):
            last = _ast.Expression(tree.body.pop().value)
        exec(compile(tree, FILENAME, "exec"), scope)
        value = eval(compile(last, FILENAME, "eval"), scope) if last is not None else None
        return {"ok": True, "value": _jsonable(value)}
    except BaseException as exc:  # every failure is reported, SystemExit included
        backtrace = _backtrace(exc)
        if isinstance(exc, SyntaxError) and exc.filename == FILENAME:
            backtrace.insert(0, "%s:%s" % (exc.filename, exc.lineno))
        return {"ok": False, "error": {"class": _class_name(exc), "message": str(exc),
                                       "backtrace": backtrace}}


def _run():
    """One "exec" after another in the same globals: a one-shot sandbox is ended by the engine
    after its first result, a session's kernel lives on."""
    # Output reaches the engine line by line, so progress reports can show the last line.
    sys.stdout.reconfigure(line_buffering=True)
    _send({"t": "ready", "runtime": "python", "version": "%d.%d.%d" % sys.version_info[:3]})
    scope = {"__name__": "__main__", "__builtins__": __builtins__, "sb": sb}
    while True:
        frame = _read_frame()
        if frame is None:  # the engine is gone
            os._exit(0)
        if not isinstance(frame, dict) or frame.get("t") != "exec":
            os._exit(2)
        started = time.monotonic()
        out = _evaluate(str(frame.get("code", "")), scope)
        out["duration_ms"] = round((time.monotonic() - started) * 1000, 2)
        # Output written before the result belongs to this execution: flush it first.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        result = {"t": "result", "id": frame.get("id")}
        result.update(out)
        try:
            _send(result)
        except (ValueError, TypeError):
            result["value"] = _safe_repr(result.get("value"))
            _send(result)


_run()
