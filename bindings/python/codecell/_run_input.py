"""What one run or eval is given besides its code, as the CLI gives it (`codecell run`): its own
wall clock, stdin, argv, environment variables, files written into /work and a callback for its
output as it comes.

Everything is checked and encoded here, before the engine is called, and kept alive by the
RunInput object for as long as the run lasts (ctypes does not keep what a structure points to)."""
import codecs
import ctypes

from . import _native as n

_STREAMS = {1: "stdout", 2: "stderr"}


def _strings(values, what):
    """A NULL-terminated char ** of values, or None for None."""
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError("%s: a list of strings, not %r" % (what, values))
    encoded = []
    for v in values:
        if not isinstance(v, str):
            raise TypeError("%s: %r is not a str" % (what, v))
        encoded.append(n.cstr(v, what))
    return (ctypes.c_char_p * (len(encoded) + 1))(*encoded, None)


def _env(env):
    if env is None:
        return None
    if not isinstance(env, dict):
        raise TypeError("env: a dict {name: value}, not %r" % (env,))
    pairs = []
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("env: names and values are str, not %r: %r" % (name, value))
        if "=" in name:  # the engine would split NAME=VALUE at it
            raise ValueError("env: the name %r contains \"=\"" % name)
        pairs.append("%s=%s" % (name, value))
    return _strings(pairs, "env")


def _stdin(stdin):
    if stdin is None:
        return None
    if isinstance(stdin, str):
        return stdin.encode("utf-8", "surrogateescape")
    if isinstance(stdin, (bytes, bytearray, memoryview)):
        return bytes(stdin)
    raise TypeError("stdin: str or bytes, not %s" % type(stdin).__name__)


def _file_entries(files):
    """(name, content) pairs of a dict or a list of pairs; TypeError for anything else."""
    if isinstance(files, dict):
        return list(files.items())
    if not isinstance(files, (list, tuple)):
        raise TypeError("files: a dict {name: content} or a list of (name, content) pairs, "
                        "not %s" % type(files).__name__)
    entries = []
    for i, entry in enumerate(files):
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise TypeError("files[%d]: a (name, content) pair, not %r" % (i, entry))
        entries.append(tuple(entry))
    return entries


def _file_content(content, i):
    if isinstance(content, str):
        try:
            return content.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate has no UTF-8 form
            raise ValueError("files[%d].content: not valid as UTF-8 text: %s" % (i, e)) from None
    if isinstance(content, (bytes, bytearray, memoryview)):
        return bytes(content)
    raise TypeError("files[%d].content: str or bytes, not %s" % (i, type(content).__name__))


def _files(files):
    """The codecell_file array (ended by a NULL name) and the bytes it points into, which must
    outlive the run: ctypes does not keep what a c_void_p points to. The names' rules are the
    engine's (it refuses a bad one naming files[i]); here only the types, and a NUL, which a C
    string would cut short."""
    if files is None:
        return None, []
    entries = _file_entries(files)
    array = (n.File * (len(entries) + 1))()
    kept = []
    for i, (name, content) in enumerate(entries):
        if not isinstance(name, str):
            raise TypeError("files[%d].name: a str, not %r" % (i, name))
        encoded_name = n.cstr(name, "files[%d].name" % i)
        data = _file_content(content, i)
        kept += [encoded_name, data]
        array[i].name = encoded_name
        array[i].data = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p)
        array[i].len = len(data)
    return array, kept


def _timeout(timeout_ms):
    if timeout_ms is None:
        return 0
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
        raise TypeError("timeout_ms: an int, not %r" % (timeout_ms,))
    if timeout_ms <= 0:
        raise ValueError("timeout_ms: %d is not a positive number of milliseconds" % timeout_ms)
    # A size_t holds it (larger only ever gets the cell's limit, which is smaller).
    return min(timeout_ms, ctypes.c_size_t(-1).value)


class RunInput:
    """The options of one run, and its output callback's state. on_output(stream, text) gets
    "stdout" or "stderr" and the text as the guest wrote it (decoded as UTF-8 across pieces)."""

    def __init__(self, cancel, timeout_ms=None, stdin=None, argv=None, env=None,
                 on_output=None, files=None):
        if on_output is not None and not callable(on_output):
            raise TypeError("on_output: %r is not callable" % (on_output,))
        self._argv = _strings(argv, "argv")
        self._env = _env(env)
        self._stdin = _stdin(stdin)
        self._files, self._file_bytes = _files(files)
        self._on_output = on_output
        self._cancel = cancel
        self.raised = None  # what on_output raised: the run was cancelled, and run() raises it
        self._decoders = {}
        self._callback = n.OUTPUT_FN(self._output) if on_output is not None else None
        self.options = n.RunOptions(
            cancel=cancel._pointer, timeout_ms=_timeout(timeout_ms),
            argv=ctypes.cast(self._argv, ctypes.c_void_p) if self._argv else None,
            env=ctypes.cast(self._env, ctypes.c_void_p) if self._env else None,
            stdin_data=self._stdin, stdin_len=len(self._stdin or b""),
            files=ctypes.cast(self._files, ctypes.c_void_p) if self._files is not None else None,
            output=ctypes.cast(self._callback, ctypes.c_void_p) if self._callback else None)

    def _decoder(self, stream):
        if stream not in self._decoders:
            self._decoders[stream] = codecs.getincrementaldecoder("utf-8")("replace")
        return self._decoders[stream]

    # Called by the engine on the thread that waits for the run, with the GIL taken by ctypes.
    # Nothing may escape (ctypes would print it and go on): the first exception cancels the
    # run and is raised by run() once it has ended.
    def _output(self, stream, data, length, _userdata):
        if self.raised is not None:
            return
        try:
            text = self._decoder(stream).decode(ctypes.string_at(data, length))
            if text:
                self._on_output(_STREAMS.get(stream, str(stream)), text)
        except BaseException as e:
            self.raised = e
            self._cancel.trigger()

    def finish(self):
        """Hands on what the decoders still hold (a character cut off at the end), then raises
        what on_output raised, if it did."""
        for stream, decoder in self._decoders.items():
            rest = decoder.decode(b"", final=True)
            if rest and self.raised is None:
                try:
                    self._on_output(_STREAMS.get(stream, str(stream)), rest)
                except BaseException as e:
                    self.raised = e
        if self.raised is not None:
            raised, self.raised = self.raised, None
            raise raised
