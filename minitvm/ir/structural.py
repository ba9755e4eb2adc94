"""Structural equality and hashing of IR, iterative, modulo renaming of bound variables.

Bound variables (function params, let vars, pattern vars, type params) are equal when bound at
the same place; free variables must be the same object unless ``map_free_vars`` is set. Both
functions walk an explicit stack, so a 100,000-deep program compares without recursion.
"""

from __future__ import annotations

import hashlib
import struct
import threading
from operator import attrgetter

import numpy as np

from ..runtime.ndarray import NDArray
from .gc_pause import gc_paused
from .node import Node, node_fields
from .virtual_device import VirtualDevice

_GETTERS: dict[type, object] = {}


def _field_values(obj) -> tuple | list:
    """The values of ``obj``'s structural fields (``None`` for an unset one), read by one
    ``attrgetter`` per class: a list of ``getattr`` calls cost a third of hashing a chain."""
    t = type(obj)
    get = _GETTERS.get(t)
    if get is None:
        fields = node_fields(t)
        if len(fields) > 1:
            get = attrgetter(*fields)
        elif fields:
            one = attrgetter(fields[0])
            get = lambda o: (one(o),)  # noqa: E731
        else:
            get = lambda o: ()  # noqa: E731
        _GETTERS[t] = get
    try:
        return get(obj)
    except AttributeError:  # a slot never set
        return [getattr(obj, f, None) for f in node_fields(t)]


def _kind(x) -> str | None:
    """How a node compares (its class's ``_node_compare``); None for non-nodes."""
    return type(x)._node_compare if isinstance(x, Node) else None


def _is_var(x) -> bool:
    return isinstance(x, Node) and type(x)._node_compare == "var"


def _named_key(x):
    return getattr(x, "name", None) or getattr(x, "name_hint", None)


class StructuralMismatch(Exception):
    def __init__(self, path, lhs, rhs, reason):
        super().__init__(reason)
        path = _text_path(path)
        self.path, self.lhs, self.rhs, self.reason = _render_path(path), lhs, rhs, reason
        self.raw_path = path  # the linked (parent, segment) form, for ir.base's ObjectPath


def _seg_text(seg) -> str:
    """A path segment as text: a field name is ``.name``, a sequence index ``[3]``; a dict's
    segments are stored as text already (``['key']``, ``.keys[2]``)."""
    if isinstance(seg, int):
        return f"[{seg}]"
    return seg if seg.startswith(("[", ".")) else "." + seg


def _text_path(path):
    """The linked path with every segment as text (the walk stores raw field names and indices,
    which cost nothing until a mismatch is reported)."""
    segs = []
    while isinstance(path, tuple):
        path, seg = path
        segs.append(_seg_text(seg))
    for seg in reversed(segs):
        path = (path, seg)
    return path


def _render_path(path) -> str:
    """Paths are linked (parent, segment) pairs so deep programs cost O(1) per step."""
    parts = []
    while isinstance(path, tuple):
        path, seg = path
        parts.append(seg)
    parts.append(path)
    return "".join(reversed(parts))


def _short(x, limit=400) -> str:
    try:
        s = str(x)
    except Exception:  # printing must not hide the mismatch
        s = repr(type(x))
    return s if len(s) <= limit else s[:limit] + " ..."


def _is_ndarray(x) -> bool:
    return isinstance(x, NDArray)


def _array_equal(a, b) -> bool:
    a = np.asarray(a.numpy() if hasattr(a, "numpy") else a)
    b = np.asarray(b.numpy() if hasattr(b, "numpy") else b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.size <= 64 and a.dtype.kind in "biuf" and a.tobytes() == b.tobytes():
        # the same bytes are the same values (a scalar constant: 1 us against np.array_equal's
        # 10); different bytes may still be equal values (0.0 and -0.0, two NaNs)
        return True
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


# leaves compared where their parent is expanded, when equal (nothing is pushed for them)
_PLAIN = frozenset({str, int, float, bool, type(None)})


def _compare(lhs, rhs, map_free_vars: bool):
    lmap: dict[int, object] = {}
    rmap: dict[int, object] = {}
    seen: set[tuple[int, int]] = set()
    stack = [(lhs, rhs, "root", False)]
    keep = []  # keep compared objects alive so ids stay unique
    kinds = _KINDS
    plain = _PLAIN
    while stack:
        a, b, path, is_def = stack.pop()
        ka = kinds.get(type(a))
        if ka is None:
            ka = _kind_of(type(a))
        kb = kinds.get(type(b))
        if kb is None:
            kb = _kind_of(type(b))
        if a is b and not is_def and ka != _VAR:
            continue
        if ka == _LEAF and kb == _LEAF and type(a) is type(b) and not isinstance(a, np.ndarray):
            # a leaf of one type (every Relay expression's VirtualDevice): its own equality,
            # which the checks below reach last
            if a == b:
                continue
        if ka == _VAR or kb == _VAR:
            if type(a) is not type(b):
                raise StructuralMismatch(path, a, b, "different kinds of node")
            ma, mb = lmap.get(id(a)), rmap.get(id(b))
            if ma is not None or mb is not None:
                if ma is not b or mb is not a:
                    raise StructuralMismatch(path, a, b, "variables bound differently")
                continue
            if not is_def and not map_free_vars and a is not b:
                raise StructuralMismatch(path, a, b, "different free variables")
            lmap[id(a)] = b
            rmap[id(b)] = a
            keep.append((a, b))
            # the declared fields (annotation, dtype) are compared where the variable is
            # defined; symbolic variables first seen in them are defined there too
            stack.extend(reversed([(va, vb, (path, f), is_def) for f, va, vb in
                                   zip(node_fields(type(a)), _field_values(a),
                                       _field_values(b))]))
            continue
        key = (id(a), id(b))
        if key in seen:
            continue
        if ka == _NDARRAY or kb == _NDARRAY:
            if ka != kb or not _array_equal(a, b):
                raise StructuralMismatch(path, a, b, "constant values differ")
            continue
        if ka in _NODE_KINDS and kb in _NODE_KINDS:
            seen.add(key)
            keep.append((a, b))
            if type(a) is not type(b):
                raise StructuralMismatch(path, a, b,
                                         f"{type(a).__name__} vs {type(b).__name__}")
            if ka == _NAME:
                if _named_key(a) != _named_key(b):
                    raise StructuralMismatch(path, a, b, "different names")
                continue
            if ka == _VALUE:
                stack.append((a._node_value(), b._node_value(), path, False))
                continue
            defs = type(a)._node_binders
            items = []
            for f, va, vb in zip(node_fields(type(a)), _field_values(a), _field_values(b)):
                t = type(va)
                if t is type(vb) and t in plain and va == vb:
                    continue  # (NaN != NaN: pushed, and equal below)
                # inside a definition (a parameter's annotation) everything is a definition:
                # symbolic variables first seen there are bound there
                items.append((va, vb, (path, f), is_def or f in defs))
            stack.extend(reversed(items))
            continue
        if ka == _SEQ and kb == _SEQ:
            if len(a) != len(b):
                raise StructuralMismatch(path, a, b, f"lengths differ: {len(a)} vs {len(b)}")
            items = []
            for i, (x, y) in enumerate(zip(a, b)):
                t = type(x)
                if t is type(y) and t in plain and x == y:
                    continue
                items.append((x, y, (path, i), is_def))
            stack.extend(reversed(items))
            continue
        if ka == _DICT and kb == _DICT and _node_keyed(a, b):
            # keyed by IR nodes (a PrimFunc's buffer_map by parameter): compare the entries
            # in order, keys as IR (bound variables map to their counterparts)
            if len(a) != len(b):
                raise StructuralMismatch(path, a, b, f"lengths differ: {len(a)} vs {len(b)}")
            items = []
            for i, ((ka_, va), (kb_, vb)) in enumerate(zip(a.items(), b.items())):
                items.append((ka_, kb_, (path, f".keys[{i}]"), is_def))
                items.append((va, vb, (path, f"[{i}]"), is_def))
            stack.extend(reversed(items))
            continue
        if ka == _DICT and kb == _DICT:
            if set(a) != set(b):
                raise StructuralMismatch(path, sorted(map(str, a)), sorted(map(str, b)),
                                         "different keys")
            stack.extend(reversed([(a[k], b[k], (path, f"[{k!r}]"), False) for k in a]))
            continue
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            if not _array_equal(a, b):
                raise StructuralMismatch(path, a, b, "array values differ")
            continue
        if _int_is_imm(a, b) or _int_is_imm(b, a):
            continue
        if ka in _NODE_KINDS or kb in _NODE_KINDS:
            raise StructuralMismatch(path, a, b, f"{type(a).__name__} vs {type(b).__name__}")
        if type(a) is not type(b) and not (isinstance(a, int | float) and isinstance(b, int | float)):
            raise StructuralMismatch(path, a, b, f"{type(a).__name__} vs {type(b).__name__}")
        if a != b and not (a != a and b != b) and not _close_floats(a, b):
            # NaN constants equal themselves (same bits); floats within TVM's tolerance
            raise StructuralMismatch(path, a, b, f"{a!r} vs {b!r}")


_FLOAT_ATOL = 1e-9


def _close_floats(a, b) -> bool:
    """Floating-point leaves (attribute values, FloatImm) closer than TVM's absolute tolerance.

    TVM compares doubles within 1e-9, so an epsilon read back from a float32 constant equals the
    literal it came from; the structural hash stays exact (a close pair may hash apart, as in TVM).
    """
    return ((type(a) is float or type(b) is float) and not isinstance(a, bool)
            and not isinstance(b, bool) and abs(a - b) < _FLOAT_ATOL)


def _imm_as_int(x):
    """The Python value TVM would convert to this IntImm (int32 from int, bool from bool), or
    None: ``with_attr("Primitive", 1)`` here stores 1, TVM stores ``IntImm("int32", 1)``."""
    if type(x) is _int_imm():
        if x.dtype == "int32":
            return x.value
        if x.dtype == "bool":
            return bool(x.value)
    return None


_INT_IMM: list[type] = []


def _int_imm() -> type:
    if not _INT_IMM:
        from .prim_expr import IntImm  # (imports this module)

        _INT_IMM.append(IntImm)
    return _INT_IMM[0]


def _int_is_imm(a, b) -> bool:
    """A Python int/bool against the IntImm TVM would have made of it: equal if same value."""
    if not isinstance(a, int):
        return False
    v = _imm_as_int(b)
    return v is not None and type(v) is type(a) and v == a


def _node_keyed(a: dict, b: dict) -> bool:
    return any(isinstance(k, Node) for k in a) or any(isinstance(k, Node) for k in b)


@gc_paused
def structural_equal(lhs, rhs, map_free_vars: bool = False) -> bool:
    """Whether two IR values are equal up to the renaming of bound variables."""
    try:
        _compare(lhs, rhs, map_free_vars)
    except StructuralMismatch:
        return False
    return True


@gc_paused
def assert_structural_equal(lhs, rhs, map_free_vars: bool = False) -> None:
    """Raise ValueError showing the first place where the two programs differ."""
    try:
        _compare(lhs, rhs, map_free_vars)
    except StructuralMismatch as e:
        raise ValueError(
            f"StructuralEqual check failed, caused by lhs at {e.path}: {e.reason}\n"
            f"  lhs: {_short(e.lhs)}\n  rhs: {_short(e.rhs)}\n"
            f"--- lhs program ---\n{_short(lhs, 4000)}\n--- rhs program ---\n{_short(rhs, 4000)}"
        ) from None


# ---------------------------------------------------------------------------- hashing
_MASK = 0x7FFFFFFFFFFFFFFF


def _h(*parts) -> int:
    m = hashlib.blake2b(digest_size=8)
    for p in parts:
        if isinstance(p, int):
            m.update(struct.pack("<q", p & _MASK))
        else:
            m.update(str(p).encode())
        m.update(b"|")
    return int.from_bytes(m.digest(), "little") & _MASK


def array_sha1(x: np.ndarray) -> str:
    """SHA-1 (hex) of an array's bytes in C order. (SHA-1: CPUs with SHA extensions hash 3x
    faster than BLAKE2b, 1.6 against 0.5 GB/s on a Zen 3, and labelling ResNet-50's functions
    hashes its 100 MB of weights.)"""
    data = memoryview(np.ascontiguousarray(x)).cast("B") if x.size else b""
    return hashlib.sha1(data).hexdigest()


def array_content_hash(x: np.ndarray, sha1: str) -> int:
    """The structural hash of an array whose bytes have the SHA-1 ``sha1``."""
    return _h("nd", x.dtype.str, x.shape, sha1)


def hash_contents(arrays: list, threads: int = 2) -> None:
    """Set the content hash ``structural_hash`` reads on each NDArray of ``arrays`` lacking it,
    hashing on up to ``threads`` threads (SHA-1 releases the GIL): labelling ResNet-50's
    ``main`` reads its 100 MB of folded weights, and the build has no other work meanwhile."""
    todo = [a for a in arrays if a._content_hash is None]
    if threads < 2 or len(todo) < 2 or sum(a.numpy().nbytes for a in todo) < 1 << 20:
        for a in todo:
            a._content_hash = _leaf_hash(a.numpy())
        return
    todo.sort(key=lambda a: -a.numpy().nbytes)
    shares: list[list] = [[] for _ in range(threads)]
    loads = [0] * threads
    for a in todo:  # largest first, each to the least loaded share
        k = loads.index(min(loads))
        shares[k].append(a)
        loads[k] += a.numpy().nbytes

    def run(share):
        for a in share:
            a._content_hash = _leaf_hash(a.numpy())

    helpers = [threading.Thread(target=run, args=(sh,), daemon=True) for sh in shares[1:]]
    for t in helpers:
        t.start()
    try:
        run(shares[0])
    finally:
        for t in helpers:
            t.join()


_SMALL_ARRAY_CODES: dict[tuple, int] = {}  # (dtype, shape, bytes) -> code of a small array


def _array_code(x: np.ndarray) -> int:
    """``array_content_hash`` of ``x``; remembered for arrays of at most 64 bytes (a model's
    scalar constants repeat: 1.0, 0.5, epsilons), whose SHA-1 and BLAKE2b cost 10 us each."""
    if x.nbytes > 64 or x.dtype.kind not in "biuf":
        return array_content_hash(x, array_sha1(x))
    key = (x.dtype.str, x.shape, x.tobytes())
    c = _SMALL_ARRAY_CODES.get(key)
    if c is None:
        if len(_SMALL_ARRAY_CODES) >= 1 << 14:
            _SMALL_ARRAY_CODES.clear()
        c = _SMALL_ARRAY_CODES[key] = array_content_hash(x, array_sha1(x))
    return c


def _leaf_hash(x) -> int:
    if isinstance(x, np.ndarray):
        return _array_code(x)
    if isinstance(x, bool):
        return _h("b", int(x))
    if isinstance(x, int | float):
        return _h("num", repr(float(x)))
    return _h(type(x).__name__, repr(x))


# Hash codes are combined with Python's tuple hash, which is the same in every process for
# tuples of ints (only str/bytes hashes are salted): strings and class names get a BLAKE2b code
# once per process, numbers their Python hash (equal numbers hash alike, as they compare).
_STR_CODES: dict[str, int] = {}
_NAN_CODE = _h("nan")
_NEG1_CODE = _h("-1")  # Python hashes -1 like -2
_NONE_CODE = _h("None")
_BACK_CODE = _h("back-edge")
_VAR_CODE = _h("var")


def _str_code(s: str) -> int:
    c = _STR_CODES.get(s)
    if c is None:
        if len(_STR_CODES) > 1 << 16:
            _STR_CODES.clear()
        c = _STR_CODES[s] = _h("str", s)
    return c


def _num_code(x) -> int:
    if x != x:
        return _NAN_CODE
    c = hash(x)
    return _NEG1_CODE if c == -2 and x == -1 else c


# how each type hashes, decided once per type
_NUM, _STR, _NONE, _LEAF, _NDARRAY, _IMM, _SEQ, _DICT, _VAR, _NAME, _VALUE, _FIELDS = range(12)
_COMPOSITE = _SEQ  # this kind and the ones after it have children
_NODE_KINDS = frozenset({_IMM, _VAR, _NAME, _VALUE, _FIELDS})
_KINDS: dict[type, int] = {}
_TYPE_CODES: dict[type, int] = {}


def _kind_of(t: type) -> int:
    k = _KINDS.get(t)
    if k is not None:
        return k
    if issubclass(t, NDArray):
        k = _NDARRAY
    elif t is _int_imm():
        k = _IMM
    elif issubclass(t, Node):
        k = {"var": _VAR, "name": _NAME, "value": _VALUE}.get(t._node_compare, _FIELDS)
    elif issubclass(t, int | float):
        k = _NUM
    elif issubclass(t, str):
        k = _STR
    elif t is type(None):
        k = _NONE
    elif issubclass(t, tuple | list):
        k = _SEQ
    elif issubclass(t, dict):
        k = _DICT
    else:
        k = _LEAF
    _KINDS[t] = k
    _TYPE_CODES[t] = _h("seq" if k == _SEQ else t.__name__)
    return k


def _leaf_code(x, kind: int) -> int:
    if kind == _NUM:
        return _num_code(x)
    if kind == _STR:
        return _str_code(x) if type(x) is str else _h(type(x).__name__, repr(x))
    if kind == _NONE:
        return _NONE_CODE
    if kind == _NDARRAY:
        h = x._content_hash
        if h is None:
            h = x._content_hash = _leaf_hash(x.numpy())
        return h
    if kind == _IMM:
        v = _imm_as_int(x)
        if v is not None:  # hashes as the Python value it equals
            return _num_code(v)
    if type(x) is VirtualDevice and x.target is None:
        return _placement_code(x)
    return _leaf_hash(x)


_PLACEMENT_CODES: dict[tuple, int] = {}


def _placement_code(vd: VirtualDevice) -> int:
    """``_leaf_hash`` of a VirtualDevice without a target, computed once per placement: every
    Relay expression reads one (a fresh unconstrained one where none was set), and its text and
    BLAKE2b code were a fifth of hashing a small fused function."""
    key = (vd.device_type_int, vd.virtual_device_id, vd.memory_scope)
    c = _PLACEMENT_CODES.get(key)
    if c is None:
        if len(_PLACEMENT_CODES) > 1 << 12:
            _PLACEMENT_CODES.clear()
        c = _PLACEMENT_CODES[key] = _leaf_hash(vd)
    return c


def _children(obj, kind: int) -> list:
    """The values an object's hash combines, in order (``kind`` >= ``_COMPOSITE``)."""
    if kind == _FIELDS or kind == _IMM:
        return _field_values(obj)
    if kind == _SEQ:
        return obj
    if kind == _VALUE:
        return [obj._node_value()]
    # a dict: keyed by IR nodes (a PrimFunc's buffer_map), its entries in order; else its
    # entries in key order, keys first
    if any(isinstance(k, Node) for k in obj):
        return [x for kv in obj.items() for x in kv]
    keys = sorted(obj, key=str)
    return keys + [obj[k] for k in keys]


def _name_code(obj) -> int:
    """The code the walk gives a node compared by its name (a GlobalVar)."""
    t = type(obj)
    if (_KINDS.get(t) or _kind_of(t)) != _NAME:
        raise TypeError(f"a structural_hash stand-in must be a node compared by its name (a "
                        f"GlobalVar), got {t.__name__}")
    return hash((_TYPE_CODES[t], _str_code(str(_named_key(obj)))))


@gc_paused
def structural_hash(node, map_free_vars: bool = False, *, stand_ins: dict | None = None) -> int:
    """A hash consistent with structural_equal (alpha-equivalent programs hash alike).

    ``stand_ins`` (sub-node -> a GlobalVar) hashes each such sub-node as its stand-in, as if
    it were replaced by it, without rebuilding the program around it: LabelOps hashes a
    function with each nested function standing for its label.

    One iterative post-order walk: each node, sequence and dict is hashed once (its code kept
    by identity, so a shared subtree costs nothing the second time) from its children's
    codes; leaves are coded where their parent is hashed. Bound variables hash by the order in
    which the walk first meets them, with their declared fields (a Relay parameter's type, a
    Relax variable's struct info) as ``structural_equal`` compares them where they are bound:
    fused functions that differ only in their parameters' shapes hash apart."""
    kinds = _KINDS
    memo: dict[int, int | None] = {}  # id -> code of every composite hashed so far
    memo_get = memo.get
    var_count = 0
    var_numbers: dict[int, int] = {}  # id -> number of the annotated variables met so far
    keep = []  # memoized objects stay alive, so their ids stay unique
    if stand_ins:
        for sub, stub in stand_ins.items():
            memo[id(sub)] = _name_code(stub)
            keep.append(sub)
    kind = kinds.get(type(node))
    if kind is None:
        kind = _kind_of(type(node))
    if kind < _COMPOSITE and kind != _IMM:
        return _leaf_code(node, kind) & _MASK
    stack: list = [(node, None)]
    while stack:
        obj, kids = stack.pop()
        oid = id(obj)
        if kids is not None:  # leave: every composite child has its code now
            t = type(obj)
            number = var_numbers.get(oid) if var_numbers else None
            codes = [_TYPE_CODES[t]] if number is None else [_VAR_CODE, number]
            for c in kids:
                # a memoized code first: the ids of live objects are unique, so a leaf child
                # (alive as long as its parent) never finds a composite's code
                code = memo_get(id(c))
                if code is None:
                    k = kinds.get(type(c))
                    if k is None:
                        k = _kind_of(type(c))
                    if k >= _COMPOSITE:  # an ancestor still open (None in memo): a back edge
                        code = hash((_BACK_CODE, _TYPE_CODES[type(c)]))
                    else:
                        code = _leaf_code(c, k)
                codes.append(code)
            memo[oid] = hash(tuple(codes))
            continue
        if oid in memo:  # hashed already, or open (an ancestor: None until it is left)
            continue
        t = type(obj)
        kind = kinds[t]
        keep.append(obj)
        if kind == _IMM:
            v = _imm_as_int(obj)
            if v is not None:
                memo[oid] = _num_code(v)
                continue
        elif kind == _VAR:
            fields = _field_values(obj)
            if all(p is None or isinstance(p, str | int) for p in fields):
                plain = [_leaf_code(p, kinds.get(type(p)) or _kind_of(type(p)))
                         for p in fields if p is not None]
                memo[oid] = hash((_VAR_CODE, var_count, *plain))
                var_count += 1
                continue
            # numbered where first met, coded with its annotation once that is hashed (the
            # symbolic variables first seen in the annotation are numbered after it)
            var_numbers[oid] = var_count
            var_count += 1
        elif kind == _NAME:
            memo[oid] = hash((_TYPE_CODES[t], _str_code(str(_named_key(obj)))))
            continue
        if kind == _FIELDS:  # (most nodes: _children's first case, one call fewer)
            kids = _field_values(obj)
        else:
            kids = fields if kind == _VAR else _children(obj, kind)
        memo[oid] = None  # open: met again before it is left, a cycle
        stack.append((obj, kids))
        for c in reversed(kids):
            k = kinds.get(type(c))
            if k is None:
                k = _kind_of(type(c))
            if (k >= _COMPOSITE or k == _IMM) and id(c) not in memo:
                stack.append((c, None))
    return memo[id(node)] & _MASK
