"""One call of a host tool's Python callable: the guest's arguments checked against what the
callable accepts, and its answer made JSON (codecell.Cell.tool's handler runs these)."""
import inspect
import json
import math

# The guest refuses deeper arguments (its prelude's MAX_DEPTH); an answer gets the same bound,
# and the walk below stays far from Python's recursion limit.
MAX_DEPTH = 200


class Keywords:
    """The keyword names a callable takes, read once when the tool is registered; None when its
    signature cannot be read (a builtin): then the call itself says what is wrong."""

    def __init__(self, fn):
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            self.required = None
            return
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        self.required = [p.name for p in params
                         if p.kind in kinds and p.default is inspect.Parameter.empty]
        self.known = {p.name for p in params if p.kind in kinds}
        self.any_other = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)

    def problem(self, args):
        """RubyLLM's wording for arguments the callable cannot take (its Tool#call), or None:
        so that a TypeError from inside the callable is never taken for the guest's mistake."""
        if self.required is None:
            return None
        for name in self.required:
            if name not in args:
                return "Invalid tool arguments: missing keyword: %s" % name
        if not self.any_other:
            for name in args:
                if name not in self.known:
                    return "Invalid tool arguments: unknown keyword: %s" % name
        return None


def _key(key):
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)  # as json.dumps writes them: "true", "null"
    return str(key) if isinstance(key, int) else repr(key)


def _plain(value, depth, seen):
    """value with everything JSON cannot hold as its repr (the seed's inspect fallback): a
    set, a datetime, NaN, an object of the program, a list that contains itself."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if not isinstance(value, (dict, list, tuple)):
        return repr(value)
    if id(value) in seen:
        return repr(value)  # Python's own "[...]" for the cycle
    if depth >= MAX_DEPTH:
        raise ValueError("the tool's answer is nested deeper than %d levels of lists and dicts"
                         % MAX_DEPTH)
    seen.add(id(value))
    try:
        if isinstance(value, dict):
            return {_key(k): _plain(v, depth + 1, seen) for k, v in value.items()}
        return [_plain(v, depth + 1, seen) for v in value]
    finally:
        seen.discard(id(value))


def answer_json(value):
    """The callable's answer as JSON text; what JSON cannot hold comes back as its repr."""
    return json.dumps(_plain(value, 0, set()), allow_nan=False)
