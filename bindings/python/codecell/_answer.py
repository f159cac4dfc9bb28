"""How a jailed function's value crosses back: the child pickles it as a tree, the parent walks
the opcodes before loading and refuses anything that could grow beyond its bytes or run code.

The bytes are the attacker's if the jailed code took its process over, so the parent's check
does not trust the child's pickler: it replays the stream on a stack of (kind, depth) pairs,
never building a value, and refuses
- opcodes outside a whitelist (protocol 0/1 text forms, INST/OBJ, persistent ids, extensions,
  out-of-band buffers, DUP);
- memo references to anything but a string, bytes or number: a shared container turns a few
  bytes into 2^N work when a frozenset hashes it (a_k = (a_{k-1}, a_{k-1}));
- more than MAX_NODES objects, or nesting deeper than MAX_DEPTH (hashing a deep tuple recurses
  in C);
- calls (REDUCE, NEWOBJ) of anything but a class found by name, and find_class admits only the
  caller's trusted classes and a few whose constructors copy their arguments; never set,
  frozenset, bytearray, range, deque, OrderedDict or Fraction, which expand a small argument
  (set(range(10**9)), bytearray(10**9), Fraction("1e999999999")). Sets, frozensets and
  bytearrays come from the opcodes that carry their items."""
import io
import pickle
import pickletools

# A value's objects in total, and its nesting; the child's own pickler stops near depth 1000.
MAX_NODES = 1000000
MAX_DEPTH = 2000

_SCALAR, _CONTAINER, _CLASS, _MARK = "scalar", "container", "class", "mark"

_PUSH_SCALAR = {"NONE", "NEWTRUE", "NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1", "LONG4",
                "BINFLOAT", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "BINBYTES",
                "SHORT_BINBYTES", "BINBYTES8"}
_PUSH_EMPTY = {"EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET", "EMPTY_TUPLE", "BYTEARRAY8"}
_FROM_MARK = {"TUPLE", "LIST", "DICT", "FROZENSET"}  # pop to the mark, push a container
_INTO_TOP_FROM_MARK = {"APPENDS", "SETITEMS", "ADDITEMS"}
_TUPLE_N = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}
_INTO_TOP = {"APPEND": 1, "SETITEM": 2, "BUILD": 1}
_CALL = {"REDUCE": 1, "NEWOBJ": 1, "NEWOBJ_EX": 2}  # arguments popped above the callable
_PUT = {"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"}
_GET = {"GET", "BINGET", "LONG_BINGET"}
_FRAMING = {"PROTO", "FRAME", "STOP"}


class Refused(pickle.UnpicklingError):
    """The bytes are not a tree of plain data within the caps."""


def dumps(value):
    """The child's side: protocol 5 (sets, frozensets and bytearrays by their own opcodes) and
    no memo, so a value that shares a container is written out as a tree, as the parent will
    load it; a recursive value fails here (RecursionError), where it is reported."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=5)
    pickler.fast = True
    pickler.dump(value)
    return out.getvalue()


def check(data):
    """Raises Refused unless data is a tree of plain data within MAX_NODES and MAX_DEPTH."""
    stack, memo, nodes = [], {}, 0

    def pop(n):
        if len(stack) < n or any(k == _MARK for k, _ in stack[len(stack) - n:]):
            raise Refused("a malformed stream")
        items = stack[len(stack) - n:]
        del stack[len(stack) - n:]
        return items

    def pop_mark():
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] == _MARK:
                items = stack[i + 1:]
                del stack[i:]
                return items
        raise Refused("a malformed stream")

    def deeper(items, base=0):
        depth = max([base] + [d + 1 for _, d in items])
        if depth > MAX_DEPTH:
            raise Refused("it nests deeper than %d" % MAX_DEPTH)
        return depth

    for op, arg, _ in pickletools.genops(data):
        name = op.name
        if name in _FRAMING:
            continue
        # What takes room in this check or in the load: an object (or a mark) pushed, a memo
        # entry; not the opcodes that fill a container (APPENDS, SETITEMS...).
        if name not in _INTO_TOP_FROM_MARK and name not in _INTO_TOP \
                and name not in ("POP", "POP_MARK"):
            nodes += 1
            if nodes > MAX_NODES:
                raise Refused("it has more than %d objects" % MAX_NODES)
        if name in _PUSH_SCALAR:
            stack.append((_SCALAR, 0))
        elif name in _PUSH_EMPTY:
            stack.append((_CONTAINER, 0))
        elif name == "MARK":
            stack.append((_MARK, 0))
        elif name in _FROM_MARK:
            stack.append((_CONTAINER, deeper(pop_mark())))
        elif name in _INTO_TOP_FROM_MARK:
            items = pop_mark()
            kind, depth = pop(1)[0]
            stack.append((kind, deeper(items, depth)))
        elif name in _TUPLE_N:
            stack.append((_CONTAINER, deeper(pop(_TUPLE_N[name]))))
        elif name in _INTO_TOP:
            items = pop(_INTO_TOP[name])
            kind, depth = pop(1)[0]
            stack.append((kind, deeper(items, depth)))
        elif name in _CALL:
            items = pop(_CALL[name])
            if pop(1)[0][0] != _CLASS:
                raise Refused("it calls something other than a class")
            stack.append((_CONTAINER, deeper(items)))
        elif name == "STACK_GLOBAL":
            if [k for k, _ in pop(2)] != [_SCALAR, _SCALAR]:
                raise Refused("a malformed stream")
            stack.append((_CLASS, 0))
        elif name == "GLOBAL":
            stack.append((_CLASS, 0))
        elif name == "POP":
            pop(1)
        elif name == "POP_MARK":
            pop_mark()
        elif name in _PUT:
            if not stack or stack[-1][0] == _MARK:
                raise Refused("a malformed stream")
            memo[len(memo) if name == "MEMOIZE" else arg] = stack[-1]
        elif name in _GET:
            if arg not in memo:
                raise Refused("a malformed stream")
            if memo[arg][0] not in (_SCALAR, _CLASS):
                raise Refused("it shares a container (the value must be a tree)")
            stack.append(memo[arg])
        else:
            raise Refused("it uses the pickle opcode %s" % name)
    if len(stack) != 1 or stack[0][0] in (_MARK, _CLASS):
        raise Refused("a malformed stream")


class _Unpickler(pickle.Unpickler):
    # Constructors that copy bounded arguments (strings, numbers, a tuple of digits): nothing
    # here takes a size or an iterable it would expand.
    SAFE = {("builtins", "complex"), ("builtins", "slice"), ("decimal", "Decimal"),
            ("uuid", "UUID")} | \
        {("datetime", n) for n in ("date", "datetime", "time", "timedelta", "timezone")}

    def __init__(self, data, trusted):
        super().__init__(io.BytesIO(data))
        self.trusted = {(c.__module__, c.__qualname__): c for c in trusted}

    def find_class(self, module, name):
        if (module, name) in self.trusted:
            return self.trusted[(module, name)]
        if (module, name) in self.SAFE:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            "it holds a %s.%s, which is not loaded unless trusted "
            "(codecell.configure(trusted_classes=[...]))" % (module, name))

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("it holds a persistent id")


def loads(data, trusted):
    """The parent's side: check, then load with only the trusted and SAFE classes."""
    check(data)
    return _Unpickler(data, trusted).load()
