"""A host tool's JSON Schema from a callable's signature and type hints (codecell.Tool's tools).

The guest's arguments reach the callable as keywords, so the schema describes exactly what
a keyword call can fill: a parameter with a default is not required, **kwargs admits other
keys, and a hint JSON cannot carry (a datetime, a set, a tuple, a class of the program) is
refused with TypeError when the tool is declared, not when a model first calls it."""
import inspect
import typing

try:  # Python 3.10's X | Y
    from types import UnionType as _UnionType
except ImportError:  # pragma: no cover (3.8, 3.9)
    _UnionType = None

# Python 3.8 has neither Annotated nor get_type_hints(include_extras=).
_ANNOTATED = getattr(typing, "Annotated", None)
_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean",
            type(None): "null"}
_KEYWORDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _hint_name(hint):
    if isinstance(hint, type):
        return hint.__qualname__ if hint.__module__ == "builtins" else "%s.%s" % (
            hint.__module__, hint.__qualname__)
    return repr(hint).replace("typing.", "")


def _json_type(value):
    # bool before int: True is an int to isinstance, never to JSON.
    for cls, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                      (type(None), "null")):
        if isinstance(value, cls):
            return name
    return None


def _literal(values, where):
    for v in values:
        if _json_type(v) is None:
            raise TypeError("%s: Literal[%r]: only str, int, float, bool and None values can be "
                            "a JSON enum" % (where, v))
    schema = {"enum": list(values)}
    types = {_json_type(v) for v in values}
    if len(types) == 1:
        schema["type"] = types.pop()
    return schema


def _union(members, where):
    # Optional[Literal[...]] and Literal[...] | None: one enum that admits null.
    if all(typing.get_origin(m) is typing.Literal or m is type(None) for m in members):
        values = []
        for m in members:
            values.extend(typing.get_args(m) if m is not type(None) else (None,))
        return _literal(values, where)
    schemas = [hint_schema(m, where) for m in members]
    if any(not s for s in schemas):  # Any among them: anything goes
        return {}
    if all(list(s) == ["type"] for s in schemas):
        return {"type": [s["type"] for s in schemas]}
    return {"anyOf": schemas}


def hint_schema(hint, where):
    """The JSON Schema of one type hint; TypeError naming `where` for one JSON cannot carry."""
    if hint is inspect.Parameter.empty or hint is typing.Any or hint is object:
        return {}
    if hint is None:
        hint = type(None)
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if _ANNOTATED is not None and origin is _ANNOTATED:
        schema = dict(hint_schema(args[0], where))
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            schema["description"] = notes[0]
        return schema
    if origin is typing.Union or (_UnionType is not None and origin is _UnionType):
        return _union(args, where)
    if origin is typing.Literal:
        return _literal(args, where)
    if hint is list or origin is list:
        if len(args) > 1:
            raise TypeError("%s: %s: a list takes one item type" % (where, _hint_name(hint)))
        items = hint_schema(args[0], where + "[]") if args else {}
        return {"type": "array", "items": items} if items else {"type": "array"}
    if hint is dict or origin is dict:
        if args and args[0] is not str:
            raise TypeError("%s: %s: JSON object keys are strings; hint dict[str, ...]"
                            % (where, _hint_name(hint)))
        values = hint_schema(args[1], where + "{}") if args else {}
        return ({"type": "object", "additionalProperties": values} if values
                else {"type": "object"})
    if hint is tuple or origin is tuple:
        raise TypeError("%s: %s: a JSON array reaches the tool as a list; hint list[...]"
                        % (where, _hint_name(hint)))
    raise TypeError("%s: %s cannot be a JSON schema (hint str, int, float, bool, None, "
                    "list[...], dict[str, ...], Optional[...], Literal[...] or Any)"
                    % (where, _hint_name(hint)))


def _hints(fn, where):
    """The resolved hints of fn's parameters: a class instance's are those of its __call__."""
    target = fn
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
        target = getattr(type(fn), "__call__", fn)
    try:
        if _ANNOTATED is None:
            return typing.get_type_hints(target)
        return typing.get_type_hints(target, include_extras=True)
    except Exception as e:  # a forward reference that names nothing, a hint that is no type
        raise TypeError("%s: its type hints cannot be resolved: %s" % (where, e)) from None


def callable_schema(fn, where):
    """The input schema of calling fn with the guest's arguments as keywords."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise TypeError("%s: its signature cannot be read (%s); give an input_schema"
                        % (where, e)) from None
    hints = _hints(fn, where)
    properties, required, extra = {}, [], False
    for name, param in signature.parameters.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            extra = hint_schema(hints.get(name, param.annotation),
                                "%s: **%s" % (where, name)) or True
            continue
        if param.kind not in _KEYWORDS:
            if param.default is inspect.Parameter.empty and \
                    param.kind is inspect.Parameter.POSITIONAL_ONLY:
                raise TypeError("%s: parameter %s is positional-only; the guest's arguments "
                                "arrive as keywords" % (where, name))
            continue  # *args, or a positional-only one with a default: never filled
        properties[name] = hint_schema(hints.get(name, param.annotation),
                                       "%s: parameter %s" % (where, name))
        if param.default is inspect.Parameter.empty:
            required.append(name)
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if extra is False:
        schema["additionalProperties"] = False  # the engine refuses other keys before the call
    elif extra is not True:
        schema["additionalProperties"] = extra
    return schema
