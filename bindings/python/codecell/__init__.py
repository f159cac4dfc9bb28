"""codecell for Python: run model-written Python and Ruby in fresh Linux sandboxes, with host
tools written as Python callables. See the package's README.md."""
from ._native import CodeCellError
from .cell import Cancel, Cell, Session
from .result import Result
from .tool import Tool, mount, mount_rw, tool_name

__version__ = "0.1.0"
__all__ = ["Cancel", "Cell", "CodeCellError", "Result", "Session", "Tool", "mount", "mount_rw",
           "tool_name"]
