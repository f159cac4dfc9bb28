"""codecell.Tool's host tools: functions, classes with a __call__ and their instances, the
schema from their type hints, and every mistake refused when the class is defined."""
import typing
import unittest
from typing import Literal, Optional

import codecell


def get_weather(city: str, days: int = 1, units: Literal["c", "f"] = "c") -> dict:
    """Today's weather in a city."""
    return {"city": city, "days": days, "units": units}


class WeatherTool:
    """The forecast, from a class instantiated once."""
    made = 0

    def __init__(self):
        type(self).made += 1

    def __call__(self, city: str, hours: Optional[list[int]] = None):
        return {"city": city, "hours": hours, "instance": id(self)}


class Search:
    description = "Searches the catalogue"

    def __init__(self, catalogue=("apple", "pear")):
        self.catalogue = list(catalogue)

    def __call__(self, query: str, limit: int = 10, **filters: str):
        return [x for x in self.catalogue if query in x][:limit] + sorted(filters.items())


def boom(key: str):
    raise KeyError(key)


def guest(expr):
    """Python guest code that returns expr's value, or [class, message] of what it raised."""
    return ("try:\n  out = %s\nexcept Exception as e:\n  out = [type(e).__name__, str(e)]\nout"
            % expr)


class HostToolsTest(unittest.TestCase):
    def setUp(self):
        self.defined = []

    def tearDown(self):
        for cls in self.defined:
            cls.close()

    def define(self, name="Host", base=codecell.Tool, **attrs):
        cls = type(name, (base,), attrs)
        self.defined.append(cls)
        return cls

    def test_a_function_a_class_and_an_instance(self):
        made = WeatherTool.made
        cls = self.define(tools=[get_weather, WeatherTool, Search(["kiwi", "apple"])])
        self.assertEqual(WeatherTool.made, made + 1)  # instantiated once, at definition
        self.assertEqual([t.name for t in cls._host_tools], ["get_weather", "weather", "search"])
        tool = cls()
        self.assertEqual(tool(guest("sb.call('get_weather', city='Oslo')"))["value"],
                         {"city": "Oslo", "days": 1, "units": "c"})
        first = tool(guest("sb.call('weather', city='Rome', hours=[1, 2])"))["value"]
        self.assertEqual((first["city"], first["hours"]), ("Rome", [1, 2]))
        again = tool(guest("sb.call('weather', city='Rome')"))["value"]
        self.assertEqual(again["instance"], first["instance"])  # the one instance, every call
        self.assertEqual(tool(guest("sb.call('search', query='ap', colour='red')"))["value"],
                         ["apple", ["colour", "red"]])
        self.assertEqual(WeatherTool.made, made + 1)
        text = tool.description
        self.assertIn("## Tools", text)
        for words in ("Today's weather in a city.", "The forecast, from a class instantiated",
                      "Searches the catalogue"):
            self.assertIn(words, text)

    def test_the_schema_comes_from_the_hints(self):
        cls = self.define(tools=[get_weather, WeatherTool, Search])
        schemas = {t.name: t.input_schema for t in cls._host_tools}
        self.assertEqual(schemas["get_weather"], {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                           "units": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"], "additionalProperties": False})
        self.assertEqual(schemas["weather"]["properties"]["hours"],
                         {"anyOf": [{"type": "array", "items": {"type": "integer"}},
                                    {"type": "null"}]})
        # **filters: str admits other keys, each a string.
        self.assertEqual(schemas["search"]["additionalProperties"], {"type": "string"})
        self.assertEqual(schemas["search"]["required"], ["query"])

        def many(a: float, b: bool, c: dict[str, int], d: typing.Any, e, f: Optional[str] = None,
                 g: typing.Annotated[str, "what g is"] = "", h: Literal[1, "x"] = 1,
                 i: "int | None" = None, *, j: list = ()):
            return a
        props = self.define(tools={"many": many})._host_tools[0].input_schema["properties"]
        self.assertEqual(props, {
            "a": {"type": "number"}, "b": {"type": "boolean"},
            "c": {"type": "object", "additionalProperties": {"type": "integer"}}, "d": {},
            "e": {}, "f": {"type": ["string", "null"]},
            "g": {"type": "string", "description": "what g is"}, "h": {"enum": [1, "x"]},
            "i": {"type": ["integer", "null"]}, "j": {"type": "array"}})

    def test_arguments_arrive_as_keywords_and_bad_ones_are_told(self):
        tool = self.define(tools=[get_weather, boom])()
        r = tool(guest("sb.call('get_weather', town='Oslo')"))["value"]
        self.assertEqual(r[0], "ToolError")
        self.assertIn('the required "city" is missing', r[1])
        r = tool(guest("sb.call('get_weather', city='Oslo', sky='blue')"))["value"]
        self.assertIn('unknown key "sky"', r[1])
        r = tool(guest("sb.call('get_weather', city='Oslo', units='k')"))["value"]
        self.assertIn('must be one of ["c","f"]', r[1])
        r = tool(guest("sb.call('boom', key='k')"))["value"]
        self.assertEqual(r, ["ToolError", "KeyError: 'k'"])  # the class and the message

    def test_explicit_names(self):
        cls = self.define(tools=[{"forecast": WeatherTool, "today": get_weather}, boom])
        self.assertEqual([t.name for t in cls._host_tools], ["forecast", "today", "boom"])
        cls = self.define(tools={"lookup": {"call": lambda key: key.upper(),
                                            "description": "Upper case",
                                            "input_schema": {"type": "object"}}})
        self.assertEqual(cls._host_tools[0].input_schema, {"type": "object"})
        self.assertEqual(cls()("sb.call('lookup', key='k')")["value"], "K")
        self.assertIn("Upper case", cls().description)

    def test_mistakes_raise_at_definition(self):
        class NoCall:
            pass

        class NeedsArgs:
            def __init__(self, token):
                pass

            def __call__(self):
                pass

        def when(day: __import__("datetime").date):
            pass

        cases = [
            (TypeError, "is not callable", [42]),
            (TypeError, "NoCall has no __call__", [NoCall]),
            (TypeError, r"NeedsArgs\(\) .*raised TypeError.*give an instance", [NeedsArgs]),
            (TypeError, "has no name of its own", [lambda: 1]),
            (TypeError, "parameter day: datetime.date cannot be a JSON schema", [when]),
            (TypeError, "parameter p: tuple.*reaches the tool as a list", [pair_of_ints]),
            (TypeError, "keys call \\(required\\), description and input_schema",
             {"x": {"cal": boom}}),
            (TypeError, "a list of callables", "get_weather"),
            (ValueError, "two tools are named 'boom'", [boom, {"boom": get_weather}]),
            (ValueError, "Host.tools: tool \"9lives\": name must start with a letter",
             {"9lives": boom}),
            (ValueError, "65 host tools; at most 64",
             {"t%d" % i: boom for i in range(65)}),
        ]
        for error, words, tools in cases:
            with self.subTest(words), self.assertRaisesRegex(error, words):
                type("Host", (codecell.Tool,), {"tools": tools})
        self.define(tools={"t%d" % i: boom for i in range(64)})  # 64 is allowed

    def test_subclasses_inherit_without_sharing(self):
        parent = self.define("Parent", tools=[get_weather])
        child = self.define("Child", parent, tools=[boom])
        self.assertEqual([t.name for t in child._host_tools], ["get_weather", "boom"])
        self.assertEqual([t.name for t in parent._host_tools], ["get_weather"])
        self.assertEqual(child()(guest("sb.call('get_weather', city='x')['city']"))["value"],
                         "x")
        self.assertEqual(parent()(guest("sb.call('boom', key='k')"))["value"][0], "UnknownTool")
        # A child's tool named as an inherited one is a duplicate, refused.
        with self.assertRaisesRegex(ValueError, "two tools are named 'get_weather'"):
            type("Again", (parent,), {"tools": {"get_weather": boom}})
        # 64 in all, counting the parent's.
        with self.assertRaisesRegex(ValueError, "65 host tools"):
            type("Many", (parent,), {"tools": {"t%d" % i: boom for i in range(64)}})

    def test_a_refused_declaration_changes_nothing(self):
        parent = self.define("Parent", tools=[get_weather])
        tool = parent()
        self.assertEqual(tool("1 + 1")["value"], 2)
        cell = parent.cell()
        for tools in ([boom, 42], [boom, boom], [pair_of_ints]):
            with self.assertRaises((TypeError, ValueError)):
                type("Child", (parent,), {"tools": tools})
        self.assertIs(parent.cell(), cell)  # the parent's cell went on, untouched
        self.assertEqual([t.name for t in parent._host_tools], ["get_weather"])
        self.assertEqual(cell.info()["tools"], 1)
        self.assertEqual(tool(guest("sb.call('get_weather', city='y')['city']"))["value"], "y")


def pair_of_ints(p: tuple[int, int]):
    return p


if __name__ == "__main__":
    unittest.main()
