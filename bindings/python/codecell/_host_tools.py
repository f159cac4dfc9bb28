"""codecell.Tool's `tools`: what a class declares, read into host tools when it is defined.

    tools = [weather, Search, Search(), {"forecast": Weather}]   # the gem's `tools Weather, …`
    tools = {"forecast": weather, "lookup": {"call": fn, "description": "…", "input_schema": {…}}}

A function is bound as it is; a class with a __call__ is instantiated once, here; an instance
with a __call__ is bound as it is. The name is the function's or the class's, underscored
(get_weather, WeatherTool -> weather), or the key given; the description the object's
`description` string or its docstring; the input schema the one given or the one its type
hints say (_schema.py). Every mistake raises here, before the class exists."""
import inspect
import re

from ._schema import callable_schema

MAX_HOST_TOOLS = 64  # per class, inherited ones included (ruby_llm-code_mode's bound)
_SPEC_KEYS = {"call", "description", "input_schema"}


def tool_name(class_name):
    """The underscored class name without a trailing "_tool" (SalesAnalytics -> sales_analytics)."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", class_name)
    name = re.sub(r"([a-z\d])([A-Z])", r"\1_\2", name).replace("-", "_").lower()
    return name[:-len("_tool")] if name.endswith("_tool") else name


class HostTool:
    def __init__(self, name, call, description, input_schema):
        self.name, self.call = name, call
        self.description, self.input_schema = description, input_schema

    def spec(self):
        """As codecell.Cell(tools=) takes it."""
        return {"call": self.call, "description": self.description,
                "input_schema": self.input_schema}


def _has_call(cls):
    return any("__call__" in vars(k) for k in cls.__mro__ if k is not object)


def _bound(obj, where):
    """(callable, the name it gives) for one declared object."""
    if inspect.isclass(obj):
        if not _has_call(obj):
            raise TypeError("%s: the class %s has no __call__ method" % (where, obj.__name__))
        try:
            instance = obj()
        except Exception as e:
            raise TypeError("%s: %s() (a class is instantiated once, when the tool is "
                            "declared) raised %s: %s; give an instance instead"
                            % (where, obj.__name__, type(e).__name__, e)) from None
        return instance, obj.__name__
    if not callable(obj):
        raise TypeError("%s: %r is not callable (a function, a class with a __call__, or an "
                        "instance of one)" % (where, obj))
    if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj):
        return obj, obj.__name__
    return obj, type(obj).__name__


def _description(obj):
    text = getattr(obj, "description", None)
    if isinstance(text, str):
        return text
    return inspect.getdoc(obj)


def _one(name, spec, where):
    given = {}
    if isinstance(spec, dict):
        unknown = set(spec) - _SPEC_KEYS
        if unknown or "call" not in spec:
            raise TypeError("%s: a tool given as a dict has the keys call (required), "
                            "description and input_schema, not %s"
                            % (where, ", ".join(sorted(map(repr, unknown or spec))) or "none"))
        given, spec = spec, spec["call"]
    call, own_name = _bound(spec, where)
    if name is None:
        if own_name == "<lambda>" or not own_name.isidentifier():
            raise TypeError("%s: %r has no name of its own; give one: {\"name\": it}"
                            % (where, spec))
        name = tool_name(own_name)
    elif not isinstance(name, str):
        raise TypeError("%s: a tool's name is a str, not %r" % (where, name))
    where = "%s %s" % (where, name)
    schema = given.get("input_schema")
    if schema is None:
        schema = callable_schema(call, where)
    elif not isinstance(schema, dict):
        raise TypeError("%s: input_schema is a dict (a JSON Schema object), not %r"
                        % (where, schema))
    description = given.get("description")
    if description is None:
        description = _description(call)
    return HostTool(name, call, description, schema)


def _entries(declared, where):
    """(name or None, spec) in the order declared."""
    if isinstance(declared, dict):
        return list(declared.items())
    if not isinstance(declared, (list, tuple)):
        raise TypeError("%s: a list of callables (or {name: callable}), or a dict of them, "
                        "not %r" % (where, declared))
    out = []
    for item in declared:
        out.extend(item.items() if isinstance(item, dict) else [(None, item)])
    return out


def read_tools(owner, declared, inherited):
    """The host tools of class `owner`: `inherited` (a list of HostTool, not changed) and those
    its own `tools` attribute declares."""
    where = "%s.tools" % owner
    tools = list(inherited)
    for name, spec in _entries(declared, where):
        tool = _one(name, spec, where)
        if any(t.name == tool.name for t in tools):
            raise ValueError("%s: two tools are named %r" % (where, tool.name))
        tools.append(tool)
    if len(tools) > MAX_HOST_TOOLS:
        raise ValueError("%s: %d host tools; at most %d per class (inherited ones included)"
                         % (where, len(tools), MAX_HOST_TOOLS))
    return tools
