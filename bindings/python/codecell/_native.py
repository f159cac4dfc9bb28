"""The C API of include/codecell.h through ctypes, from the engine built into this package.

ctypes releases the GIL around every call into the library (other Python threads go on while
code runs) and takes it again for a callback (a host tool's handler, called on an engine
thread)."""
import ctypes
import os

_library = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_engine.so")
if not os.path.isfile(_library):
    raise ImportError("codecell: the engine library %s is missing; reinstall the package"
                      % _library)
lib = ctypes.CDLL(_library)
libc = ctypes.CDLL(None)
libc.strdup.restype = ctypes.c_void_p
libc.strdup.argtypes = [ctypes.c_char_p]
libc.free.restype = None
libc.free.argtypes = [ctypes.c_void_p]


class Error(ctypes.Structure):
    _fields_ = [("errno_value", ctypes.c_int), ("kind", ctypes.c_int),
                ("message", ctypes.c_char * 512)]


ERR_INVALID = 1

POLICIES = {"warn": 0, "raise": 1, "ignore": 2}

TOOL_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)


# codecell_approval_request, and the approval callback: (request, ret_reason, userdata).
class ApprovalRequest(ctypes.Structure):
    _fields_ = [("tool", ctypes.c_char_p), ("args_json", ctypes.c_char_p),
                ("wait_ms", ctypes.c_uint64), ("run_userdata", ctypes.c_void_p),
                ("reserved", ctypes.c_void_p * 2)]


APPROVAL_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ApprovalRequest),
                               ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
APPROVAL_ACCEPT, APPROVAL_DECLINE = 1, 0


# codecell_run_options and codecell_cell_info exactly as include/codecell.h lays them out (its
# ABI promise: they only grow into their reserved room, so these sizes stay right).
class RunOptions(ctypes.Structure):
    _fields_ = [("cancel", ctypes.c_void_p), ("progress", ctypes.c_void_p),
                ("progress_interval_ms", ctypes.c_uint64), ("userdata", ctypes.c_void_p),
                ("output", ctypes.c_void_p), ("argv", ctypes.c_void_p), ("env", ctypes.c_void_p),
                ("stdin_data", ctypes.c_char_p), ("stdin_len", ctypes.c_size_t),
                ("timeout_ms", ctypes.c_size_t), ("files", ctypes.c_void_p),
                ("reserved", ctypes.c_void_p * 1)]


# codecell_file: one file written into /work before a run (an array of them ends in a NULL name).
class File(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("len", ctypes.c_size_t)]


# codecell_output_fn: (stream 1 or 2, data, len, userdata).
OUTPUT_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(ctypes.c_char), ctypes.c_size_t,
                             ctypes.c_void_p)


LIMIT_SLOTS = 32  # CODECELL_LIMIT_SLOTS


class CellInfo(ctypes.Structure):
    _fields_ = [("language", ctypes.c_char_p), ("writes_host", ctypes.c_bool),
                ("pool_size", ctypes.c_size_t), ("pool_ready", ctypes.c_size_t),
                ("sessions_open", ctypes.c_size_t), ("tools", ctypes.c_size_t),
                ("limits", ctypes.c_uint64 * LIMIT_SLOTS), ("tool_calls", ctypes.c_uint64),
                ("tool_refusals", ctypes.c_uint64), ("reserved", ctypes.c_uint64 * 6)]


def _declare(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


P = ctypes.c_void_p
E = ctypes.POINTER(Error)
S = ctypes.c_char_p
SIZE = ctypes.c_size_t
_declare("codecell_config_new", P, S, E)
_declare("codecell_config_free", None, P)
_declare("codecell_config_add_mount_mode", ctypes.c_int, P, S, S, ctypes.c_int, S, E)
_declare("codecell_mount_mode_parse", ctypes.c_bool, S, ctypes.POINTER(ctypes.c_int))
_declare("codecell_config_set_limit", ctypes.c_int, P, ctypes.c_int, ctypes.c_uint64, E)
_declare("codecell_config_get_limit", ctypes.c_uint64, P, ctypes.c_int)
_declare("codecell_limit_name", S, ctypes.c_int)
_declare("codecell_config_set_policy", None, P, ctypes.c_int)
_declare("codecell_config_set_image_folder", ctypes.c_int, P, S, E)
_declare("codecell_config_set_output_folder", ctypes.c_int, P, S, E)
_declare("codecell_config_set_network", ctypes.c_int, P, S, E)
_declare("codecell_config_set_subprocesses", None, P, ctypes.c_bool)
_declare("codecell_config_set_pool", ctypes.c_int, P, SIZE, E)
_declare("codecell_cell_new", P, P, E)
_declare("codecell_cell_warmup", ctypes.c_int, P, E)
_declare("codecell_cell_free", None, P)
_declare("codecell_cell_run_with", ctypes.c_int, P, S, SIZE, ctypes.POINTER(RunOptions),
         ctypes.POINTER(P), E)
_declare("codecell_session_eval_with", ctypes.c_int, P, S, S, SIZE, ctypes.POINTER(RunOptions),
         ctypes.POINTER(P), E)
_declare("codecell_session_close", ctypes.c_int, P, S, E)
_declare("codecell_session_park", ctypes.c_int, P, S, E)
_declare("codecell_session_fork", ctypes.c_int, P, S, S, E)
_declare("codecell_session_list", ctypes.POINTER(P), P)
_declare("codecell_cell_add_tool", ctypes.c_int, P, S, S, S, TOOL_HANDLER, P, E)
_declare("codecell_cell_description", S, P)
_declare("codecell_cell_set_approval", None, P, APPROVAL_FN, P)
_declare("codecell_cell_require_approval", ctypes.c_int, P, S, E)
_declare("codecell_cell_warning", S, P, SIZE)
_declare("codecell_cell_info_get", None, P, ctypes.POINTER(CellInfo))
_declare("codecell_cancel_new", P, E)
_declare("codecell_cancel_trigger", None, P)
_declare("codecell_cancel_free", None, P)
_declare("codecell_result_to_json", P, P, ctypes.c_bool)
_declare("codecell_result_to_model_json", P, P, SIZE, ctypes.c_bool)
_declare("codecell_result_value", S, P)
_declare("codecell_result_image_count", SIZE, P)
_declare("codecell_result_image", P, P, SIZE, ctypes.POINTER(SIZE), ctypes.POINTER(S))
_declare("codecell_result_file_count", SIZE, P)
_declare("codecell_result_file", P, P, SIZE, ctypes.POINTER(S), ctypes.POINTER(S),
         ctypes.POINTER(SIZE))
_declare("codecell_result_free", None, P)


def _limits():
    """The limits by their names in the configuration file (docs/configuration.md), as the
    engine names them, in the order of enum codecell_limit."""
    # Up to CODECELL_LIMIT_SLOTS: a number no limit has yet has no name, and later ones do.
    limits = {}
    for i in range(32):
        name = lib.codecell_limit_name(i)
        if name is not None:
            limits[name.decode("ascii")] = i
    return limits


LIMITS = _limits()


class CodeCellError(Exception):
    """The engine refused or failed (not a run's own failure, which is a Result)."""


def raise_error(err):
    message = err.message.decode("utf-8", "replace")
    if err.kind == ERR_INVALID:
        raise ValueError(message)
    raise CodeCellError(message)


def cstr(text, what):
    """text as a C string; a NUL in it would cut it short without a word, so it is refused."""
    if text is None:
        return None
    data = str(text).encode("utf-8", "surrogatepass")
    if b"\0" in data:
        raise ValueError("%s: %r contains a NUL character" % (what, text))
    return data


def take_string(pointer):
    """A malloc'd C string as str, freed."""
    if not pointer:
        raise MemoryError("codecell: out of memory")
    try:
        return ctypes.string_at(pointer).decode("utf-8")
    finally:
        libc.free(pointer)


def c_string(text):
    """A malloc'd copy of text, for the engine to free."""
    pointer = libc.strdup(text.encode("utf-8", "replace"))
    if not pointer:
        raise MemoryError("codecell: out of memory")
    return pointer
