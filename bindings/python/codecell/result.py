"""What one run or session eval gave back (docs/results.md in the repository)."""
import ctypes
import json

from . import _native as n

_FLOATS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _floats(obj):
    # JSON has no NaN or infinity: the guest tags them as {"$float": "NaN"}.
    if len(obj) == 1 and obj.get("$float") in _FLOATS:
        return _FLOATS[obj["$float"]]
    return obj


class Result:
    """status: "ok", "error", "timeout", "fuel_exhausted", "memory_limit" or "sandbox_error".
    value: the last expression's value (None unless ok). stdout, stderr: captured output.
    error: for any status but ok, a dict (class, message, backtrace) for "error" and a
    sentence for the others. timings: duration_ms, cpu_ms, memory_peak_bytes (when measured).
    images: [(mime_type, bytes)]. files: [(name, mime_type, bytes)], the other files of the
    cell's output_folder; files_omitted: [{"name", "reason"}] of those left out. warnings: optional layers this host lacks."""

    def __init__(self, pointer, model_chars):
        # Everything is read at once and the engine's result freed: no pointer outlives this.
        try:
            self._json = n.take_string(n.lib.codecell_result_to_json(pointer, False))
            self._model_json = n.take_string(
                n.lib.codecell_result_to_model_json(pointer, model_chars, False))
            value = n.lib.codecell_result_value(pointer)
            self._value_json = value.decode("utf-8") if value is not None else None
            self.images = []
            for i in range(n.lib.codecell_result_image_count(pointer)):
                size, mime = ctypes.c_size_t(), ctypes.c_char_p()
                data = n.lib.codecell_result_image(pointer, i, ctypes.byref(size),
                                                   ctypes.byref(mime))
                if not data:
                    break
                self.images.append((mime.value.decode(), ctypes.string_at(data, size.value)))
            self.files = []
            for i in range(n.lib.codecell_result_file_count(pointer)):
                size, name, mime = ctypes.c_size_t(), ctypes.c_char_p(), ctypes.c_char_p()
                data = n.lib.codecell_result_file(pointer, i, ctypes.byref(name),
                                                  ctypes.byref(mime), ctypes.byref(size))
                if not data:
                    break
                self.files.append((name.value.decode("utf-8"), mime.value.decode(),
                                   ctypes.string_at(data, size.value)))
        finally:
            n.lib.codecell_result_free(pointer)
        data = json.loads(self._json)
        self._data = data
        self.status = data["status"]
        self.stdout = data.get("stdout", "")
        self.stderr = data.get("stderr", "")
        self.error = data.get("error")
        self.warnings = data.get("warnings", [])
        self.exit_status = data.get("exit_status")
        self.cancelled = data.get("cancelled", False)
        self.files_omitted = data.get("files_omitted", {}).get("files", [])
        # A session eval's: why the session's state was lost (None: it was not), and what
        # reached its main thread between evals and was ignored ([{"class", "message"}]).
        self.state_lost = data.get("state_lost")
        self.idle_interrupts = data.get("idle_interrupts", [])
        # A parked session's restore before this eval: {"evals", "ms"}, False when it stopped
        # (state_lost says why), None when there was none; and why the session can no longer
        # be parked, once its journal went over its bound (None: it can).
        self.restored = data.get("restored")
        self.not_restorable = data.get("not_restorable")
        # A network cell's: the connections the code made through its proxy, [{"host", "port",
        # "bytes_out", "bytes_in"} and "refused" when it was refused] (docs/network.md).
        self.network = data.get("network", [])
        self.value = (json.loads(self._value_json, object_hook=_floats)
                      if self._value_json is not None else None)

    @property
    def ok(self):
        return self.status == "ok"

    @property
    def timings(self):
        return {k: self._data[k] for k in ("duration_ms", "cpu_ms", "memory_peak_bytes")
                if k in self._data}

    def to_dict(self):
        """The seed's result, what a model reads: status, and value or error; stdout and
        stderr when not empty, each cut to the cell's model_chars (the *_truncated flags say
        so)."""
        return json.loads(self._model_json)

    def to_json(self):
        """The whole result as JSON text, layers and timings included."""
        return self._json

    def __repr__(self):
        if self.ok:
            return "<codecell.Result ok value=%r>" % (self.value,)
        return "<codecell.Result %s error=%r>" % (self.status, self.error)
