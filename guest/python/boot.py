# The Python guest's start (passed as `python3 -I -S -c`): runs the prelude from the .pyc the
# build compiled (/codecell/prelude.pyc), or, when that is not this interpreter's bytecode (its
# magic number differs) or is absent, from the source, /codecell/prelude.py. Its arguments are
# the cell's library folders (/codecell/lib/<i>/…): on sys.path after the standard library and
# before the system's dist-packages, which the prelude appends.
import marshal
import sys
import _frozen_importlib_external as _bootstrap

sys.path.extend(sys.argv[1:])

try:
    with open("/codecell/prelude.pyc", "rb") as _f:
        _data = _f.read()
    # A .pyc is a 16-byte header (magic, flags, source hash) and the marshalled code.
    _code = marshal.loads(_data[16:]) if _data[:4] == _bootstrap.MAGIC_NUMBER else None
except (OSError, EOFError, ValueError, TypeError):
    _code = None
if _code is None:
    with open("/codecell/prelude.py", encoding="utf-8") as _f:
        _code = compile(_f.read(), "/codecell/prelude.py", "exec")
exec(_code, {"__name__": "__main__", "__file__": "/codecell/prelude.py",
             "__builtins__": __builtins__})
