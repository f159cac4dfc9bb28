"""codecell.jail: a function run in a forked child behind codecell's walls (docs/jail.md), the
seed agent_jail's AgentJail.run for Python. The value comes back pickled; the child ran code
the caller does not trust, and pickle.loads of chosen bytes runs code, so only a tree of plain
data and the classes named in configure(trusted_classes=[...]) are loaded (_answer.py)."""
import builtins
import ctypes
import errno
import functools
import json
import os
import signal
import site
import sys
import sysconfig
import threading
import traceback
import warnings

from . import _answer
from ._native import E, Error as _CError, P, CodeCellError, POLICIES, cstr, lib, libc

__all__ = ["jail", "jail_layers", "configure", "reset", "JailError", "FilesystemError", "SandboxError",
           "UnsupportedPlatformError"]


class JailError(CodeCellError):
    """The base of the jail's exceptions (the seed's AgentJail::Error)."""


class TimeoutError(JailError):  # noqa: A001 - the seed's name, inside this package
    """The function passed its wall clock, or (cpu is True) its CPU budget."""

    def __init__(self, message, cpu=False):
        super().__init__(message)
        self.cpu = cpu


class MemoryError(JailError):  # noqa: A001
    """The function passed its memory limit."""


class FilesystemError(JailError):
    """The function touched a path its fs_allow / fs_read_allow lists do not grant."""


class UnsupportedPlatformError(JailError):
    """The host lacks a layer the jail needs (or one on_unsupported="raise" asks for)."""


class SandboxError(JailError):
    """The function raised (or its process died without an answer); the original is described,
    not carried: its class need not exist in the parent."""

    def __init__(self, original_class, original_message, original_backtrace):
        super().__init__("%s: %s" % (original_class, original_message))
        self.original_class = original_class
        self.original_message = original_message
        self.original_backtrace = original_backtrace


class _Options(ctypes.Structure):
    _fields_ = [("timeout_ms", ctypes.c_uint64), ("cpu_ms", ctypes.c_uint64),
                ("memory_bytes", ctypes.c_uint64), ("pids", ctypes.c_uint64),
                ("answer_bytes", ctypes.c_uint64), ("fs_allow", ctypes.c_void_p),
                ("fs_read_allow", ctypes.c_void_p), ("network", ctypes.c_bool),
                ("on_unsupported", ctypes.c_int), ("keep_open", ctypes.c_void_p),
                ("reserved", ctypes.c_void_p * 3)]


class _Result(ctypes.Structure):
    _fields_ = [("outcome", ctypes.c_int), ("cpu", ctypes.c_bool), ("signal", ctypes.c_int),
                ("exit_code", ctypes.c_int), ("data", ctypes.c_void_p), ("len", ctypes.c_size_t),
                ("duration_ms", ctypes.c_double), ("cpu_ms", ctypes.c_double),
                ("memory_peak_bytes", ctypes.c_int64), ("reserved", ctypes.c_uint64 * 4)]


lib.codecell_jail_new.restype = P
lib.codecell_jail_new.argtypes = [ctypes.POINTER(_Options), E]
for _name in ("codecell_jail_enter_namespaces", "codecell_jail_enter_walls"):
    getattr(lib, _name).restype = ctypes.c_int
    getattr(lib, _name).argtypes = [P]
lib.codecell_jail_keep.restype = None
lib.codecell_jail_keep.argtypes = [P, ctypes.c_int]
lib.codecell_jail_answer.restype = ctypes.c_int
lib.codecell_jail_answer.argtypes = [P, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
lib.codecell_jail_wait.restype = ctypes.c_int
lib.codecell_jail_wait.argtypes = [P, ctypes.c_int, ctypes.POINTER(_Result), E]
lib.codecell_jail_free.restype = None
lib.codecell_jail_free.argtypes = [P]
lib.codecell_jail_warning.restype = ctypes.c_char_p
lib.codecell_jail_warning.argtypes = [P, ctypes.c_size_t]
lib.codecell_jail_layers.restype = ctypes.c_char_p
lib.codecell_jail_layers.argtypes = [P]
lib.codecell_jail_result_clear.restype = None
lib.codecell_jail_result_clear.argtypes = [ctypes.POINTER(_Result)]

# enum codecell_jail_outcome
VALUE, RAISED, TIMEOUT, MEMORY, FILESYSTEM, CRASHED = range(6)
ERR_UNSUPPORTED = 2

_DEFAULTS = {"default_timeout": 30, "default_memory_mb": 512, "default_fs_allow": [],
             "on_unsupported": "warn", "trusted_classes": []}
_config = dict(_DEFAULTS)
_warned = set()
_warned_lock = threading.Lock()


def configure(**settings):
    """The seed's configure: default_timeout, default_memory_mb, default_fs_allow,
    on_unsupported ("warn", "raise", "ignore"), and trusted_classes (classes whose objects a
    returned value may hold)."""
    new = dict(_config)
    for key, value in settings.items():
        if key not in _DEFAULTS:
            raise TypeError("configure: unknown setting %r" % key)
        new[key] = value
    if new["on_unsupported"] not in POLICIES:
        raise ValueError("on_unsupported must be 'warn', 'raise' or 'ignore', got %r"
                         % (new["on_unsupported"],))
    for key in ("default_timeout", "default_memory_mb"):
        _positive(key, new[key])
    if not all(isinstance(c, type) for c in new["trusted_classes"]):
        raise TypeError("trusted_classes must be classes")
    _config.update(new)


def reset():
    """Back to the defaults."""
    _config.clear()
    _config.update(_DEFAULTS)


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError("%s must be a positive number, got %r" % (name, value))


def jail(fn=None, *args, timeout=None, cpu_timeout=None, memory_mb=None, fs_allow=None,
         fs_read_allow=None, network=False, keep_open=None, **kwargs):
    """Runs fn(*args, **kwargs) in a jailed child and returns its value. Without fn, a
    decorator: @codecell.jail(timeout=5) makes each call of the function run jailed.
    keep_open: files or sockets (anything with fileno()) or descriptors the function may use
    as they are; every other descriptor points at /dev/null in the child."""
    options = dict(timeout=timeout, cpu_timeout=cpu_timeout, memory_mb=memory_mb,
                   fs_allow=fs_allow, fs_read_allow=fs_read_allow, network=network,
                   keep_open=keep_open)
    if fn is None:
        def decorate(f):
            @functools.wraps(f)
            def jailed(*a, **kw):
                return jail(f, *a, **options, **kw)
            return jailed
        return decorate
    if not callable(fn):
        raise TypeError("jail: %r is not callable" % (fn,))
    return _run(fn, args, kwargs, options)


def _paths(paths, name):
    out = []
    for p in paths or []:
        p = os.fspath(p)
        if not isinstance(p, str):
            raise TypeError("%s: %r is not a path" % (name, p))
        out.append(cstr(p, name))
    return out


def _descriptors(keep_open):
    """keep_open's descriptors: an int, or an open object with fileno() (a file, a socket);
    the library checks that each is open."""
    if keep_open is None:
        return []
    if not isinstance(keep_open, (list, tuple)):
        raise TypeError("keep_open must be a list of files, sockets or descriptors")
    fds = []
    for f in keep_open:
        if isinstance(f, bool) or not (isinstance(f, int) or hasattr(f, "fileno")):
            raise TypeError("keep_open: %r is not a file, a socket or a descriptor" % (f,))
        if not isinstance(f, int):
            if getattr(f, "closed", False):
                raise ValueError("keep_open: %r is closed" % (f,))
            f = f.fileno()
            if f < 0:  # a closed socket's
                raise ValueError("keep_open: a closed socket")
        fds.append(f if 0 <= f <= 0x7fffffff else -2)  # -1 ends the list: -2, refused
    return fds


def _c_list(items):
    array = (ctypes.c_char_p * (len(items) + 1))(*items, None)
    return array, ctypes.cast(array, ctypes.c_void_p)


def _warn_once(message):
    with _warned_lock:
        if message in _warned:
            return
        _warned.add(message)
    warnings.warn("[codecell] %s" % message, RuntimeWarning, stacklevel=4)


# The seed's implicit read-only paths (the C library grants them); a folder inside one needs
# no rule of its own.
_SYSTEM = ("/usr", "/lib", "/lib64", "/proc", "/dev", "/etc", "/run/systemd")


def _runtime_paths():
    """Python's own installation (its standard library, lib-dynload) and its site-packages,
    read-only, so that a module the function imports late is found wherever this Python is
    installed (a pyenv, a virtualenv), as the seed's system paths do for a Python under /usr.
    Not the rest of sys.path: the script's folder (an application's root, with its secrets) is
    granted only by fs_read_allow."""
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        dirs.add(sysconfig.get_paths().get(key))
    dirs.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    dirs.add(site.getusersitepackages() if hasattr(site, "getusersitepackages") else None)
    dirs = {os.path.realpath(d) for d in dirs if d and os.path.isdir(d)}
    inside = lambda d, roots: any(d == r or d.startswith(r.rstrip("/") + "/") for r in roots)
    kept = [d for d in sorted(dirs) if not inside(d, _SYSTEM)]
    return [d for d in kept if not inside(d, [k for k in kept if k != d])]


def _prepare(limits, fs_allow, fs_read_allow, network, policy, fds=()):
    allow, allow_p = _c_list(_paths(fs_allow, "fs_allow"))
    keep = (ctypes.c_int * (len(fds) + 1))(*fds, -1)
    read, read_p = _c_list(_paths(list(fs_read_allow or []) + _runtime_paths(), "fs_read_allow"))
    o = _Options(timeout_ms=int(limits["timeout"] * 1000 + 0.999),
                 cpu_ms=int(limits["cpu_timeout"] * 1000 + 0.999),
                 memory_bytes=int(limits["memory_mb"] * 1024 * 1024),
                 fs_allow=allow_p, fs_read_allow=read_p, network=bool(network),
                 on_unsupported=POLICIES[policy],
                 keep_open=ctypes.cast(keep, ctypes.c_void_p))
    err = _CError()
    j = lib.codecell_jail_new(ctypes.byref(o), ctypes.byref(err))
    if not j:
        _raise(err)
    i = 0
    while True:
        w = lib.codecell_jail_warning(j, i)
        if w is None:
            break
        _warn_once(w.decode("utf-8", "replace"))
        i += 1
    return j


def _raise(err):
    message = err.message.decode("utf-8", "replace")
    if err.kind == ERR_UNSUPPORTED:
        raise UnsupportedPlatformError(message)
    if err.kind == 1:
        raise ValueError(message)
    raise JailError(message)


def _run(fn, args, kwargs, options):
    cfg = dict(_config)
    timeout = options["timeout"] if options["timeout"] is not None else cfg["default_timeout"]
    memory = options["memory_mb"] if options["memory_mb"] is not None else cfg["default_memory_mb"]
    cpu = options["cpu_timeout"] if options["cpu_timeout"] is not None else timeout
    for name, value in (("timeout", timeout), ("cpu_timeout", cpu), ("memory_mb", memory)):
        _positive(name, value)
    limits = {"timeout": timeout, "cpu_timeout": cpu, "memory_mb": memory}
    fs_allow = options["fs_allow"] if options["fs_allow"] is not None else cfg["default_fs_allow"]
    fds = _descriptors(options["keep_open"])
    j = _prepare(limits, fs_allow, options["fs_read_allow"], options["network"],
                 cfg["on_unsupported"], fds)
    try:
        pid = os.fork()
        if pid == 0:
            _keeper(j, fn, args, kwargs)
        result = _Result()
        err = _CError()
        if lib.codecell_jail_wait(j, pid, ctypes.byref(result), ctypes.byref(err)) < 0:
            _raise(err)
        try:
            data = ctypes.string_at(result.data, result.len) if result.data else b""
            return _interpret(result, data, limits, cfg["trusted_classes"])
        finally:
            lib.codecell_jail_result_clear(ctypes.byref(result))
    finally:
        lib.codecell_jail_free(j)


def jail_layers(fs_allow=None, fs_read_allow=None, network=False):
    """The walls a jail with these options would have on this host, as jail() would make them
    ("landlock_abi_6", "cgroup_v2" or "rlimit_as", "idmapped_fs_allow", "inside_another_jail"
    ...); nothing runs. Raises as jail() would under on_unsupported="raise"."""
    cfg = dict(_config)
    limits = {"timeout": cfg["default_timeout"], "cpu_timeout": cfg["default_timeout"],
              "memory_mb": cfg["default_memory_mb"]}
    fs_allow = fs_allow if fs_allow is not None else cfg["default_fs_allow"]
    j = _prepare(limits, fs_allow, fs_read_allow, network, cfg["on_unsupported"])
    try:
        return lib.codecell_jail_layers(j).decode("utf-8").split(",")
    finally:
        lib.codecell_jail_free(j)


def _keeper(j, fn, args, kwargs):
    """The child: namespaces, then the jailed process, forked with Python's fork so that its
    at-fork handlers run; stays outside as its reaper. Never returns."""
    try:
        lib.codecell_jail_enter_namespaces(j)
        try:
            pid = os.fork()
        except OSError:
            pid = -1
        if pid == 0:
            _jailed(j, fn, args, kwargs)
        lib.codecell_jail_keep(j, pid)
    finally:
        os._exit(1)


def _jailed(j, fn, args, kwargs):
    try:
        lib.codecell_jail_enter_walls(j)
        outcome, data = _call(fn, args, kwargs)
        lib.codecell_jail_answer(j, outcome, data, len(data))
    finally:
        os._exit(0)


def _call(fn, args, kwargs):
    try:
        value = fn(*args, **kwargs)
    except builtins.MemoryError as e:
        return MEMORY, _dump_error(e)
    except BaseException as e:  # noqa: B902 - the child reports everything
        return (FILESYSTEM if _filesystem(e) else RAISED), _dump_error(e)
    try:
        return VALUE, _answer.dumps(value)
    except Exception as e:  # noqa: B902 - whatever pickle raises: the seed's SandboxError
        return RAISED, _dump_error(e)


_FILESYSTEM_ERRNOS = (errno.EACCES, errno.EPERM, errno.EROFS)


def _filesystem(e):
    """A refusal of a path: Landlock's, or the file owner's (an OSError naming a file)."""
    return isinstance(e, OSError) and e.errno in _FILESYSTEM_ERRNOS and e.filename is not None


def _dump_error(e):
    try:
        message = str(e)
    except Exception:  # noqa: B902
        message = "(its message raised)"
    cls = type(e)
    name = cls.__qualname__ if cls.__module__ == "builtins" else "%s.%s" % (cls.__module__,
                                                                              cls.__qualname__)
    backtrace = [line.rstrip("\n") for line in traceback.format_tb(e.__traceback__)]
    return json.dumps({"class": name, "message": message, "backtrace": backtrace}).encode()


def _interpret(r, data, limits, trusted):
    if r.outcome == VALUE:
        try:
            return _answer.loads(data, trusted)
        except Exception as e:  # noqa: B902 - whatever the bytes make pickle raise
            raise JailError("the function's value cannot be loaded here: %s" % e) from None
    if r.outcome == MEMORY:
        raise MemoryError("the function exceeded its %s MB memory limit" % limits["memory_mb"])
    if r.outcome in (RAISED, FILESYSTEM):
        try:
            err = json.loads(data.decode("utf-8"))
            cls, message, backtrace = err["class"], err["message"], list(err["backtrace"])
        except (ValueError, KeyError, TypeError):
            raise JailError("the function's error came back malformed") from None
        if r.outcome == FILESYSTEM:
            raise FilesystemError(message)
        raise SandboxError(cls, message, backtrace)
    if r.outcome == TIMEOUT:
        if r.cpu:
            raise TimeoutError("the function exceeded its %s s CPU time limit"
                               % limits["cpu_timeout"], cpu=True)
        raise TimeoutError("the function exceeded its %s s wall-clock timeout" % limits["timeout"])
    if r.signal:
        try:
            name = signal.Signals(r.signal).name
        except ValueError:
            name = "signal %d" % r.signal
        raise SandboxError("signal", "the function's process was killed by %s" % name, [])
    raise SandboxError("SystemExit", "the function's process exited (status %d) without an "
                                     "answer" % r.exit_code, [])
