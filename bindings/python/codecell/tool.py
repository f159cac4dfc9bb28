"""codecell.Tool: the seed's mount DSL for Python agent frameworks.

    class Analytics(codecell.Tool):
        mounts = [
            codecell.mount("data/input", "/data", "CSV files with the raw data (read only)"),
            codecell.mount_rw("workspace", "/workspace", "Write generated reports here"),
        ]
        tools = [weather, Search]        # host tools the guest reaches with sb.call

    tool = Analytics()
    tool.name, tool.description, tool.input_schema  # plug into any framework
    tool("print(1)")                                 # the seed's result dict; never raises

A subclass's mounts and tools are its parent's and its own. Everything a declaration can be
checked for is checked when the class is defined (ValueError or TypeError, and no class):
each mount by the engine's rules, the folders readable, the whole set of mounts, the options
and the tools by making (and freeing at once) a cell without a pool, as the first run would."""
import os
import threading

from . import _native as n
from ._host_tools import read_tools, tool_name
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


# Beyond the engine's reserved trees (which include /work and /usr): the seed's tool keeps /src
# too, where its own sandbox put the guest's code, so that a class written for it means the
# same here.
RESERVED_DESTS = ("/src",)


def _overlaps(a, b):
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _folder_problem(m):
    """What keeps the guest from using the folder as declared, or None. The engine checks
    that it exists; whether the guest may read it (and write it, read-write) is known now too,
    and would otherwise show only in the guest, as a PermissionError."""
    for reserved in RESERVED_DESTS:
        if _overlaps(m.dest, reserved):
            return "dest overlaps the reserved %s" % reserved
    if os.path.isdir(m.source):
        if os.geteuid() == 0:
            # root reads every folder, but its guest does not: a root engine maps the folder's
            # owner to the guest (an idmapped mount), so the owner's bits are what it gets.
            wanted = 0o500 | (0o200 if m.mode == "rw" else 0)
            usable = os.stat(m.source).st_mode & wanted == wanted
        else:
            usable = os.access(m.source, os.R_OK | os.X_OK | (os.W_OK if m.mode == "rw" else 0))
        if not usable:
            st = os.stat(m.source)
            return "source %s is not %s for the sandbox's code (mode %03o, owner uid %d)" % (
                m.source, "readable and writable" if m.mode == "rw" else "readable",
                st.st_mode & 0o7777, st.st_uid)
    return None


def _check_cell(cls, tools):
    """Makes the class's cell as its first run would, without a pool, and frees it: what only
    the whole configuration shows (the number of mounts the sandbox has room for, the options)
    is refused now. A host that cannot make sandboxes is not the declaration's fault: the
    run says so (sandbox_error)."""
    options = dict(cls.cell_options)
    pool, policy = options.pop("pool", None), options.pop("policy", None)
    try:
        n.lib.codecell_config_free(build_config(cls.language, [], {}, pool, policy))
        cell = Cell(cls.language, [m.as_dict() for m in cls._all_mounts],
                    timeout_ms=cls.timeout_ms, cpu_ms=cls.fuel_ms, pool=0, policy="ignore",
                    **options)
    except n.CodeCellError:
        return
    except ValueError as e:
        raise ValueError("Invalid declaration of %s: %s" % (cls.__name__, e)) from None
    except TypeError as e:
        raise TypeError("%s.cell_options: %s" % (cls.__name__, e)) from None
    try:
        for t in tools:
            try:
                cell.tool(t.name, t.call, description=t.description,
                          input_schema=t.input_schema)
            except ValueError as e:
                raise ValueError("%s.tools: %s" % (cls.__name__, e)) from None
    finally:
        cell.close()


class Tool:
    """Class attributes: mounts (codecell.mount / mount_rw), language ("python" or "ruby"),
    timeout_ms (default 30,000), fuel_ms (the CPU budget, default 10,000), cell_options (more
    codecell.Cell arguments: memory=, pool=, limits=…), tools (host tools the guest reaches
    with sb.call: a list of functions, classes with a __call__ and instances of them, and
    {name: callable} for a name of your own; see codecell/_host_tools.py). Instances: name,
    description, input_schema, and __call__(code), which never raises."""

    language = "python"
    timeout_ms = DEFAULT_TIMEOUT_MS
    fuel_ms = DEFAULT_FUEL_MS
    cell_options = {}
    tools = []
    mounts = []
    _all_mounts = []
    _host_tools = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("mounts", [])
        if not isinstance(own, (list, tuple)) or not all(isinstance(m, Mount) for m in own):
            raise ValueError("%s.mounts: a list of codecell.mount(...) and codecell.mount_rw(...)"
                             % cls.__name__)
        parent = super(cls, cls)
        cls._all_mounts = list(parent._all_mounts) + list(own)
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
                problem = _folder_problem(m)
                if problem:
                    raise ValueError("mount %s:%s: %s" % (m.source, m.dest, problem))
            except ValueError as e:
                raise ValueError("Invalid mount %r => %r: %s" % (m.source, m.dest, e)) from None
        # Its own list, never the parent's: a subclass's tools stay out of its parent.
        cls._host_tools = read_tools(cls.__name__, cls.__dict__.get("tools", []),
                                     parent._host_tools)
        _check_cell(cls, cls._host_tools)
        cls._cell = None
        cls._cell_lock = threading.Lock()

    @classmethod
    def cell(cls):
        """The class's cell, made on first use and shared by its instances."""
        with cls._cell_lock:
            if cls._cell is None:
                cls._cell = Cell(cls.language, [m.as_dict() for m in cls._all_mounts],
                                 timeout_ms=cls.timeout_ms, cpu_ms=cls.fuel_ms,
                                 tools={t.name: t.spec() for t in cls._host_tools},
                                 **cls.cell_options)
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
        """Runs code; returns the seed's result dict (codecell.Result.to_dict()). It never
        raises into the agent's loop: a sandbox that cannot be made (a mounted folder deleted
        since the class was defined, a host without user namespaces) is the seed's
        {"status": "sandbox_error", "error": {"class": …, "message": …}}."""
        if not isinstance(code, str):
            return {"status": "error",
                    "error": {"class": "TypeError",
                              "message": "code must be a string (a complete script), not %s"
                                         % type(code).__name__,
                              "backtrace": []}}
        try:
            return type(self).cell().run(code).to_dict()
        except Exception as e:
            return {"status": "sandbox_error",
                    "error": {"class": type(e).__name__, "message": str(e)}}
