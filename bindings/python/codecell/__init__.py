"""codecell for Python: run model-written Python and Ruby in fresh Linux sandboxes, with host
tools written as Python callables. See the package's README.md."""
from ._native import CodeCellError
from .cell import (DEFAULT_SESSION, Cancel, Cell, Session, close_all, close_session,
                   sessions)
from .jail import (FilesystemError, JailError, MemoryError, SandboxError, TimeoutError,
                   UnsupportedPlatformError, configure, jail, jail_layers)
from .result import Result
from .tool import Tool, mount, mount_rw, tool_name

__version__ = "0.1.0"
# TimeoutError and MemoryError (the jail's, as the seed names them) stay out of __all__: a star
# import would hide Python's own.
__all__ = ["DEFAULT_SESSION", "Cancel", "Cell", "CodeCellError", "FilesystemError", "JailError",
           "Result", "SandboxError", "Session", "Tool", "UnsupportedPlatformError", "close_all",
           "close_session", "configure", "jail", "jail_layers", "mount", "mount_rw", "sessions",
           "tool_name"]
