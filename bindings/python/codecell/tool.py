"""codecell.Tool: the seed's mount DSL for Python agent frameworks.

    class Analytics(codecell.Tool):
        mounts = [
            codecell.mount("data/input", "/data", "CSV files with the raw data (read only)"),
            codecell.mount_rw("workspace", "/workspace", "Write generated reports here"),
        ]

    tool = Analytics()
    tool.name, tool.description, tool.input_schema  # plug into any framework
    tool("print(1)")                                 # the seed's result dict

A subclass's mounts are its parent's and its own; a bad declaration raises ValueError when the
class is defined."""
import os
import re
import threading

from . import _native as n
from .cell import Cell, build_config

DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_FUEL_MS = 10_000


class Mount:
    def __init__(self, source, dest, mode, description):
        # A relative source is relative to the working directory when the class is defined.
        self.source = os.path.abspath(os.fspath(source))
        self.dest = str(dest)
        self.mode = mode
        self.description = description

    def as_dict(self):
        return {"source": self.source, "dest": self.dest, "mode": self.mode,
                "description": self.description}


def mount(source, dest, description=None):
    """A read-only folder for Tool.mounts."""
    return Mount(source, dest, "ro", description)


def mount_rw(source, dest, description=None):
    """A read-write folder for Tool.mounts: the guest may change what is in it."""
    return Mount(source, dest, "rw", description)


def tool_name(class_name):
    """The underscored class name without a trailing "_tool" (SalesAnalytics -> sales_analytics)."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", class_name)
    name = re.sub(r"([a-z\d])([A-Z])", r"\1_\2", name).replace("-", "_").lower()
    return name[:-len("_tool")] if name.endswith("_tool") else name


class Tool:
    """Class attributes: mounts (codecell.mount / mount_rw), language ("python" or "ruby"),
    timeout_ms (default 30,000), fuel_ms (the CPU budget, default 10,000), cell_options (more
    codecell.Cell arguments: memory=, pool=, limits=…), tools ({name: callable} the guest
    reaches with sb.call). Instances: name, description, input_schema, and __call__(code)."""

    language = "python"
    timeout_ms = DEFAULT_TIMEOUT_MS
    fuel_ms = DEFAULT_FUEL_MS
    cell_options = {}
    tools = {}
    mounts = []
    _all_mounts = []
    _all_tools = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("mounts", [])
        if not isinstance(own, (list, tuple)) or not all(isinstance(m, Mount) for m in own):
            raise ValueError("%s.mounts: a list of codecell.mount(...) and codecell.mount_rw(...)"
                             % cls.__name__)
        parent = super(cls, cls)
        cls._all_mounts = list(parent._all_mounts) + list(own)
        cls._all_tools = dict(parent._all_tools)
        cls._all_tools.update(cls.__dict__.get("tools", {}))
        if cls.language not in ("python", "ruby"):
            raise ValueError("%s.language: python or ruby, not %r" % (cls.__name__, cls.language))
        if "description" in cls.__dict__:
            raise ValueError("%s builds the tool description from the declared mounts; the "
                             "description is fixed and cannot be set by hand" % cls.__name__)
        # Each mount checked by the engine's own rules now, with those before it, so that the
        # error names the first bad one.
        inherited = len(parent._all_mounts)
        for i, m in enumerate(own):
            upto = [x.as_dict() for x in cls._all_mounts[:inherited + i + 1]]
            try:
                n.lib.codecell_config_free(build_config(cls.language, upto, {}))
            except ValueError as e:
                raise ValueError("Invalid mount %r => %r: %s" % (m.source, m.dest, e)) from None
        cls._cell = None
        cls._cell_lock = threading.Lock()

    @classmethod
    def cell(cls):
        """The class's cell, made on first use and shared by its instances."""
        with cls._cell_lock:
            if cls._cell is None:
                cls._cell = Cell(cls.language, [m.as_dict() for m in cls._all_mounts],
                                 timeout_ms=cls.timeout_ms, cpu_ms=cls.fuel_ms,
                                 tools=cls._all_tools, **cls.cell_options)
            return cls._cell

    @classmethod
    def warmup(cls):
        """Starts the cell's sandboxes ahead of the first call."""
        cls.cell().warmup()
        return cls

    @classmethod
    def close(cls):
        with cls._cell_lock:
            if cls._cell is not None:
                cls._cell.close()
                cls._cell = None

    @property
    def name(self):
        return tool_name(type(self).__name__)

    @property
    def description(self):
        """Built from the mounts and tools (the seed's text); it cannot be set by hand."""
        return type(self).cell().description

    @property
    def input_schema(self):
        lang = "Python" if type(self).language == "python" else "Ruby"
        return {"type": "object",
                "properties": {"code": {"type": "string",
                                        "description": "Complete %s script to execute in the "
                                                       "sandbox" % lang}},
                "required": ["code"]}

    def __call__(self, code):
        """Runs code; returns the seed's result dict (codecell.Result.to_dict())."""
        return type(self).cell().run(code).to_dict()
