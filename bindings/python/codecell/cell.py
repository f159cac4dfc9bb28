"""codecell.Cell: a sandbox configuration and its warm pool; every run is a fresh sandbox."""
import atexit
import concurrent.futures
import ctypes
import inspect
import json
import sys
import threading
import weakref

from . import _native as n
from ._run_input import RunInput
from ._schema import callable_schema
from ._tool_call import Keywords, answer_json
from .result import Result

_MODES = {"ro": "ro", "read_only": "ro", "rw": "rw", "read_write": "rw", "exec": "exec"}


def _mount_mode(mount):
    mode = "rw" if mount.get("read_write") else mount.get("mode", "ro")
    if mode not in _MODES:
        raise ValueError("mount %s: unknown mode %r" % (mount.get("dest"), mode))
    parsed = ctypes.c_int()
    n.lib.codecell_mount_mode_parse(_MODES[mode].encode(), ctypes.byref(parsed))
    return parsed.value


def build_config(language, mounts, limits, pool=None, policy=None, image_folder=None,
                 subprocesses=False, output_folder=None, network=None):
    """A codecell_config pointer (free it with codecell_config_free), or ValueError naming the
    bad input."""
    err = n.Error()
    config = n.lib.codecell_config_new(n.cstr(language, "language"), ctypes.byref(err))
    if not config:
        n.raise_error(err)
    try:
        for mount in mounts:
            unknown = set(mount) - {"source", "dest", "mode", "read_write", "description"}
            if unknown:
                raise ValueError("mount: unknown keys %s" % ", ".join(sorted(unknown)))
            description = mount.get("description")
            if n.lib.codecell_config_add_mount_mode(
                    config, n.cstr(mount["source"], "mount source"),
                    n.cstr(mount["dest"], "mount dest"), _mount_mode(mount),
                    n.cstr(description, "mount description"), ctypes.byref(err)) < 0:
                n.raise_error(err)
        for name, value in limits.items():
            if name not in n.LIMITS:
                raise ValueError("unknown limit %r (known: %s)" % (name, ", ".join(n.LIMITS)))
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError("limit %s: %r is not a positive integer" % (name, value))
            if n.lib.codecell_config_set_limit(config, n.LIMITS[name], value,
                                               ctypes.byref(err)) < 0:
                n.raise_error(err)
        if pool is not None and n.lib.codecell_config_set_pool(config, pool,
                                                               ctypes.byref(err)) < 0:
            n.raise_error(err)
        if policy is not None:
            if policy not in n.POLICIES:
                raise ValueError("unknown policy %r (known: warn, raise, ignore)" % (policy,))
            n.lib.codecell_config_set_policy(config, n.POLICIES[policy])
        # image_folder is output_folder's old name.
        if output_folder is not None and image_folder is not None:
            raise ValueError("output_folder and image_folder are one option (image_folder is "
                             "its old name)")
        folder = output_folder if output_folder is not None else image_folder
        if folder is not None and n.lib.codecell_config_set_output_folder(
                config, n.cstr(folder, "output_folder"), ctypes.byref(err)) < 0:
            n.raise_error(err)
        n.lib.codecell_config_set_subprocesses(config, bool(subprocesses))
        if network is not None:
            # The engine checks the policy whole (docs/network.md) and names what it refuses.
            if not isinstance(network, dict):
                raise ValueError("network: %r is not a dict" % (network,))
            if n.lib.codecell_config_set_network(
                    config, n.cstr(json.dumps(network), "network"), ctypes.byref(err)) < 0:
                n.raise_error(err)
    except BaseException:
        n.lib.codecell_config_free(config)
        raise
    return config


# Cells still open when the interpreter exits are closed before it goes: an engine thread must
# not call a tool's handler into an interpreter that is shutting down.
_open_cells = weakref.WeakSet()


@atexit.register
def _close_open_cells():
    for cell in list(_open_cells):
        try:
            cell.close()
        except Exception:  # a run still going on in a daemon thread: leave that cell
            pass


_main_worker = None
_main_worker_lock = threading.Lock()


def _interruptible(call, cancel):
    """call(), cancelled by Ctrl-C. Python runs signal handlers in the main thread between
    bytecodes, never during a call into C: there the call runs on a worker thread while the
    main thread waits on its future, which a signal does interrupt; KeyboardInterrupt (or any
    exception a handler raises) cancels the run, whose end is awaited before it is re-raised.
    One worker, kept: the main thread runs one call at a time, and a new thread per run would
    cost more than the run (about 1 ms: the engine's first allocations in a fresh thread)."""
    global _main_worker
    if threading.current_thread() is not threading.main_thread():
        return call()
    with _main_worker_lock:
        if _main_worker is None:
            _main_worker = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="codecell-run")
    future = _main_worker.submit(call)
    try:
        # In slices: the kernel may deliver SIGINT to any thread, and then only the main
        # thread's next bytecode runs the handler; a wait without a timeout would not return.
        while True:
            try:
                return future.result(timeout=0.1)
            except concurrent.futures.TimeoutError:
                pass
    except BaseException:
        cancel.trigger()
        while not future.done():  # a second Ctrl-C must not leave the run to a freed cell
            try:
                concurrent.futures.wait([future])
            except BaseException:
                pass
        raise


class Cancel:
    """Stops a run from another thread: pass it to run()/eval() and call trigger()."""

    def __init__(self):
        err = n.Error()
        self._pointer = n.lib.codecell_cancel_new(ctypes.byref(err))
        if not self._pointer:
            n.raise_error(err)

    def trigger(self):
        n.lib.codecell_cancel_trigger(self._pointer)

    def __del__(self):
        if getattr(self, "_pointer", None):
            n.lib.codecell_cancel_free(self._pointer)
            self._pointer = None


def _schema_of(fn, name):
    """The input schema fn's signature says, or None (any arguments) when it cannot be read
    (a builtin): the call itself then says what is wrong."""
    try:
        inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return callable_schema(fn, "tool %s" % name)


def _description_of(fn):
    """fn's `description` string, else its docstring (a callable object's class's); None
    without one."""
    text = getattr(fn, "description", None)
    if isinstance(text, str):
        return text
    if inspect.isroutine(fn):
        return inspect.getdoc(fn)
    # Not a class of the standard library's: functools.partial's docstring describes partial,
    # not the tool.
    cls = type(fn)
    if cls.__module__.partition(".")[0] in _STDLIB:
        return None
    return inspect.getdoc(cls)


_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ("builtins", "functools", "operator")))


# The session an eval without a name runs in, as the seed's Repl names it.
DEFAULT_SESSION = "default"


def _cells_open():
    return [cell for cell in list(_open_cells) if not cell.closed]


def sessions():
    """Every session open now in any cell of this process (the seed's Repl keeps sessions
    process-wide), as Session objects: each knows its name and its cell."""
    found = []
    for cell in _cells_open():
        try:
            found += [Session(cell, name) for name in cell.sessions()]
        except n.CodeCellError:  # closed meanwhile
            pass
    return found


def close_session(name=DEFAULT_SESSION):
    """Closes the session of that name in every open cell; True when one was open."""
    closed = False
    for cell in _cells_open():
        try:
            closed = cell.close_session(name) or closed
        except n.CodeCellError:
            pass
    return closed


def close_all():
    """Closes every session of every open cell (the cells stay open); how many were open."""
    count = 0
    for cell in _cells_open():
        try:
            count += cell.close_all()
        except n.CodeCellError:
            pass
    return count


class Session:
    """A named persistent sandbox of a cell (docs/sessions.md): variables, definitions and files
    in /work live from one eval to the next. An eval that hits a limit ends the session; the
    next eval starts a fresh one."""

    def __init__(self, cell, name):
        self.cell = cell
        self.name = str(name)

    def eval(self, code, cancel=None, **run_input):
        """A result whose session had ended since the last eval (killed from outside, or by a
        thread of its own) ran in a fresh one, and says so in result.state_lost. Takes
        Cell.run's timeout_ms=, stdin=, argv=, env=, on_output= and files= (which stay in the
        session's /work)."""
        return self.cell._call(code, self.name, cancel, run_input)

    def __eq__(self, other):
        return isinstance(other, Session) and other.cell is self.cell and other.name == self.name

    def __hash__(self):
        return hash((id(self.cell), self.name))

    def __repr__(self):
        return "<codecell.Session %r of a %s cell>" % (self.name, self.cell.language)

    def reset(self):
        """Drops the state: the next eval starts a fresh interpreter."""
        self.close()
        return self

    def close(self):
        """Ends the session's sandbox; True when one was running."""
        return self.cell._session_close(self.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _approval_callback(approve):
    # Called on an engine thread with the GIL taken by ctypes. The function runs on a thread of
    # its own, so that one that never answers is refused at wait_ms (the engine would count a
    # later answer as a timeout anyway). Nothing may escape: ctypes would print it and answer 0.
    def ask(request, ret_reason, _userdata):
        try:
            req = request.contents
            tool = req.tool.decode("utf-8", "replace")
            args = json.loads(req.args_json)
            outcome = {}

            def work():
                try:
                    outcome["answer"] = approve(tool, args)
                except BaseException as e:
                    outcome["error"] = "%s: %s" % (type(e).__name__, e)

            worker = threading.Thread(target=work, name="codecell-approval", daemon=True)
            worker.start()
            worker.join(req.wait_ms / 1000.0)
            if worker.is_alive():
                ret_reason[0] = n.c_string("no answer within %d ms" % req.wait_ms)
                return -110
            if "error" in outcome:
                ret_reason[0] = n.c_string(outcome["error"])
                return -5
            answer = outcome["answer"]
            if answer is True:
                return n.APPROVAL_ACCEPT
            if isinstance(answer, str) and answer:
                ret_reason[0] = n.c_string(answer)
            return n.APPROVAL_DECLINE
        except BaseException:
            return -12
    return ask


class Cell:
    """Cell(language="python", mounts=[{"source":, "dest":, "mode": "ro"|"rw"|"exec",
    "description":}], timeout_ms=, cpu_ms=, memory= (bytes), pool=, limits={name: value},
    tools={name: callable or {"call":, "description":, "input_schema":, "approval":}}, policy=,
    output_folder= (image_folder= is its old name), subprocesses=False, approve=callable,
    network={"allow": [...], ...} (HTTP and HTTPS to those hosts only: docs/network.md)).

    approve(tool, args) is asked before each call of a tool registered with approval=True (see
    set_approval).

    run(code) runs in a fresh sandbox and returns a Result; the GIL is released meanwhile."""

    def __init__(self, language="python", mounts=(), *, timeout_ms=None, cpu_ms=None,
                 memory=None, pool=None, limits=None, tools=None, policy=None,
                 image_folder=None, subprocesses=False, output_folder=None, approve=None,
                 network=None):
        self._pointer = None
        self._lock = threading.Lock()
        self._busy = 0
        self._handlers = []  # the ctypes callbacks must live as long as the engine's cell
        self.language = str(language)
        all_limits = {k: v for k, v in (("timeout_ms", timeout_ms), ("cpu_ms", cpu_ms),
                                        ("memory_bytes", memory)) if v is not None}
        all_limits.update(limits or {})
        config = build_config(self.language, list(mounts), all_limits, pool, policy,
                              image_folder, subprocesses, output_folder, network)
        try:
            err = n.Error()
            pointer = n.lib.codecell_cell_new(config, ctypes.byref(err))
            if not pointer:
                n.raise_error(err)
            self._pointer = pointer
            _open_cells.add(self)
            self._tool_call_ms = n.lib.codecell_config_get_limit(config,
                                                                 n.LIMITS["tool_call_ms"])
            self._model_chars = n.lib.codecell_config_get_limit(config, n.LIMITS["model_chars"])
        finally:
            n.lib.codecell_config_free(config)
        for name, spec in (tools or {}).items():
            if callable(spec):
                self.tool(name, spec)
            else:
                self.tool(name, spec["call"], description=spec.get("description"),
                          input_schema=spec.get("input_schema"),
                          approval=spec.get("approval", False))
        if approve is not None:
            self.set_approval(approve)

    def set_approval(self, approve):
        """Sets the function asked before each call of a tool marked for approval:
        approve(tool, args) with the tool's name and its arguments (a dict), on an engine
        thread while the guest waits (the run's clock is stopped meanwhile). True lets the
        call run; False or None declines it, and a string declines it with that reason; an
        exception, or no answer within the cell's approval_ms, refuses it too. A refused call
        never runs its tool: the guest gets ToolError ("approval declined: ..."). None: no
        function, and every marked call is refused with "approval needed"."""
        if approve is not None and not callable(approve):
            raise TypeError("approve: %r is not callable" % (approve,))
        callback = n.APPROVAL_FN(_approval_callback(approve)) if approve else n.APPROVAL_FN()
        with self._use() as pointer:
            n.lib.codecell_cell_set_approval(pointer, callback, None)
        # The engine calls it until it is replaced; a call already waiting keeps the old one.
        self._handlers.append(callback)

    def require_approval(self, name):
        """Marks the tool named: each of its calls waits for the approval function first."""
        err = n.Error()
        with self._use() as pointer:
            if n.lib.codecell_cell_require_approval(pointer, n.cstr(name, "tool name"),
                                                    ctypes.byref(err)) < 0:
                n.raise_error(err)

    def tool(self, name, fn=None, *, description=None, input_schema=None, approval=False):
        """Registers a host tool the guest calls with sb.call(name, key=value) (Python) or
        SB.call(name, key: value) (Ruby). fn gets the arguments as keywords (a missing or
        unknown one is refused before the call: "Invalid tool arguments: missing keyword: x");
        its return value goes back as JSON, with what JSON cannot hold as its repr; an
        exception becomes a ToolError in the guest ("KeyError: 'x'"). Usable as a decorator:
        @cell.tool("name").

        Without input_schema, the schema is read from fn's signature and type hints (as for
        codecell.Tool's tools: a hint JSON cannot carry raises TypeError), so the model sees
        the arguments; without description, fn's `description` string or its docstring."""
        if fn is None:
            return lambda f: self.tool(name, f, description=description,
                                       input_schema=input_schema, approval=approval) or f
        if not callable(fn):
            raise TypeError("tool %s: %r is not callable" % (name, fn))
        if input_schema is None:
            input_schema = _schema_of(fn, name)
        if description is None:
            description = _description_of(fn)
        handler = n.TOOL_HANDLER(self._handler(fn))
        err = n.Error()
        with self._use() as pointer:
            if n.lib.codecell_cell_add_tool(
                    pointer, n.cstr(name, "tool name"), n.cstr(description, "tool description"),
                    json.dumps(input_schema).encode() if input_schema is not None else None,
                    handler, None, ctypes.byref(err)) < 0:
                n.raise_error(err)
        self._handlers.append(handler)
        if approval:
            self.require_approval(name)

    def _handler(self, fn):
        # Not self: the cell holds the handler, and a cycle would keep it from being freed
        # as soon as it is dropped.
        tool_call_ms = self._tool_call_ms
        keywords = Keywords(fn)

        # Called on an engine thread with the GIL taken by ctypes. The function runs on a
        # thread of its own so that a call over tool_call_ms is answered with an error at the
        # limit; the engine frees both strings. Nothing may escape: ctypes would print it and
        # answer 0.
        def handle(args_json, ret_json, ret_error, _userdata):
            try:
                outcome = {}

                def work():
                    try:
                        args = json.loads(args_json)
                        problem = keywords.problem(args)
                        if problem:
                            outcome["error"] = problem
                        else:
                            outcome["value"] = answer_json(fn(**args))
                    except BaseException as e:  # the guest gets every failure
                        outcome["error"] = "%s: %s" % (type(e).__name__, e)

                worker = threading.Thread(target=work, name="codecell-tool", daemon=True)
                worker.start()
                worker.join(tool_call_ms / 1000.0)
                if worker.is_alive():
                    ret_error[0] = n.c_string("the tool did not answer within %d ms (the limit "
                                              "tool_call_ms)" % tool_call_ms)
                    return -110
                if "error" in outcome:
                    ret_error[0] = n.c_string(outcome["error"])
                    return -5
                ret_json[0] = n.c_string(outcome["value"])
                return 0
            except BaseException:
                return -12
        return handle

    def _use(self):
        cell = self

        class Use:
            def __enter__(self):
                with cell._lock:
                    if not cell._pointer:
                        raise n.CodeCellError("the cell is closed")
                    cell._busy += 1
                    return cell._pointer

            def __exit__(self, *exc):
                with cell._lock:
                    cell._busy -= 1
        return Use()

    def _call(self, code, session, cancel, run_input):
        data = code.encode("utf-8", "surrogatepass") if isinstance(code, str) else bytes(code)
        name = n.cstr(session, "session name")
        result = ctypes.c_void_p()
        err = n.Error()
        if cancel is None:
            cancel = Cancel()
        unknown = set(run_input) - {"timeout_ms", "stdin", "argv", "env", "on_output",
                                    "files"}
        if unknown:
            raise TypeError("unexpected keyword arguments: %s" % ", ".join(sorted(unknown)))
        given = RunInput(cancel, **run_input)
        options = given.options
        with self._use() as pointer:
            def call():
                if name is None:
                    return n.lib.codecell_cell_run_with(pointer, data, len(data),
                                                        ctypes.byref(options),
                                                        ctypes.byref(result), ctypes.byref(err))
                return n.lib.codecell_session_eval_with(pointer, name, data, len(data),
                                                        ctypes.byref(options),
                                                        ctypes.byref(result), ctypes.byref(err))
            r = _interruptible(call, cancel)
        if r < 0:
            n.raise_error(err)
        outcome = Result(result.value, self._model_chars)
        given.finish()  # raises what on_output raised (the run was cancelled then)
        return outcome

    def run(self, code, cancel=None, *, timeout_ms=None, stdin=None, argv=None, env=None,
            on_output=None, files=None):
        """Runs code in a fresh sandbox; returns a Result. cancel: a codecell.Cancel.

        As `codecell run` gives them: timeout_ms, this run's wall clock (it narrows the cell's
        timeout, never widens it); stdin (str or bytes) what the code reads on its stdin; argv
        (a list of str) its ARGV / sys.argv[1:]; env ({name: value}) variables added to its
        environment; on_output(stream, text), called with "stdout" or "stderr" and each piece
        of output as the code writes it (on the thread of the run; it must return quickly; an
        exception it raises cancels the run and is raised here).

        files ({name: content} or a list of (name, content) pairs; content str, written as
        UTF-8, or bytes) are written into /work before the code starts, their folders made;
        names are relative paths under /work. A bad name, too many files or too many bytes
        (the cell's files_in, files_in_bytes and file_bytes limits) raise ValueError naming
        files[i] before anything runs. In a session they stay in its /work."""
        return self._call(code, None, cancel, {
            "timeout_ms": timeout_ms, "stdin": stdin, "argv": argv, "env": env,
            "on_output": on_output, "files": files})

    def session(self, name=DEFAULT_SESSION):
        """The named session (started on first eval; "default" when unnamed); a context manager
        that closes it."""
        return Session(self, name)

    def eval(self, code, session=DEFAULT_SESSION, reset=False, cancel=None, **run_input):
        """Runs code in the named session, as the seed's Repl.execute(code:, session:, reset:):
        reset=True drops the session's state first. Takes run()'s timeout_ms=, stdin=, argv=,
        env=, on_output= and files= (for this eval; the files stay in the session's /work)."""
        if reset:
            self._session_close(str(session))
        return self._call(code, str(session), cancel, run_input)

    def close_session(self, name=DEFAULT_SESSION):
        """Ends the named session's sandbox; True when one was open."""
        return self._session_close(str(name))

    def park_session(self, name=DEFAULT_SESSION):
        """Parks the named session (docs/sessions.md, Parked sessions): its sandbox ends, its
        journal stays, and its next eval restores its state (that result's `restored`).
        Raises for one that is not open or cannot be restored."""
        err = n.Error()
        with self._use() as pointer:
            r = n.lib.codecell_session_park(pointer, n.cstr(str(name), "session name"),
                                            ctypes.byref(err))
        if r < 0:
            n.raise_error(err)

    def fork_session(self, source, name):
        """A new session `name` made from `source`: its first eval runs source's evals again
        (host tools answered from the journal), then its own; source is untouched."""
        err = n.Error()
        with self._use() as pointer:
            r = n.lib.codecell_session_fork(pointer, n.cstr(str(source), "session name"),
                                            n.cstr(str(name), "session name"),
                                            ctypes.byref(err))
        if r < 0:
            n.raise_error(err)

    def close_all(self):
        """Ends every session of the cell (the cell stays open); how many were open."""
        return sum(1 for name in self.sessions() if self._session_close(name))

    def _session_close(self, name):
        err = n.Error()
        with self._use() as pointer:
            r = n.lib.codecell_session_close(pointer, n.cstr(name, "session name"),
                                             ctypes.byref(err))
        if r == -2:  # ENOENT: none was running
            return False
        if r < 0:
            n.raise_error(err)
        return True

    def sessions(self):
        """Names of the sessions open now."""
        with self._use() as pointer:
            names = n.lib.codecell_session_list(pointer)
        if not names:
            raise MemoryError("codecell: out of memory")
        out = []
        i = 0
        while names[i]:
            out.append(n.take_string(names[i]))
            i += 1
        n.libc.free(names)
        return out

    def warmup(self):
        """Fills the pool; returns when every sandbox in it is ready."""
        err = n.Error()
        with self._use() as pointer:
            if n.lib.codecell_cell_warmup(pointer, ctypes.byref(err)) < 0:
                n.raise_error(err)
        return self

    @property
    def description(self):
        """What a model sees: how to use the cell, its folders, its tools."""
        with self._use() as pointer:
            return n.lib.codecell_cell_description(pointer).decode("utf-8")

    @property
    def warnings(self):
        out = []
        with self._use() as pointer:
            while True:
                w = n.lib.codecell_cell_warning(pointer, len(out))
                if w is None:
                    return out
                out.append(w.decode("utf-8"))

    def info(self):
        info = n.CellInfo()
        with self._use() as pointer:
            n.lib.codecell_cell_info_get(pointer, ctypes.byref(info))
        return {"language": info.language.decode(), "pool_size": info.pool_size,
                "pool_ready": info.pool_ready, "sessions_open": info.sessions_open,
                "tools": info.tools}

    def close(self):
        """Frees the cell: every sandbox and session of it ends before this returns. A cell
        not closed is closed when it is garbage-collected."""
        with self._lock:
            if not self._pointer:
                return
            if self._busy:
                raise n.CodeCellError("close: %d runs of this cell are still going on"
                                      % self._busy)
            pointer, self._pointer = self._pointer, None
        n.lib.codecell_cell_free(pointer)

    @property
    def closed(self):
        return not self._pointer

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_pointer", None):
            try:
                self.close()
            except Exception:  # at interpreter shutdown the module may be gone already
                pass
