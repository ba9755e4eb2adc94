"""``T``: the TIR names TVMScript uses (``from tvm.script import tir as T``).

Dtype constructors (``T.int64(784)`` an immediate, ``n = T.int64()`` a symbolic variable,
``T.float32`` an annotation), buffers (``T.Buffer``, ``T.match_buffer``, ``T.alloc_buffer``),
loops (``T.grid``, ``T.serial``, ``T.parallel``, ``T.vectorized``, ``T.unroll``,
``T.thread_binding``), blocks (``T.block``, ``T.axis.*``, ``T.reads``, ``T.writes``,
``T.init``, ``T.where``, ``T.block_attr``), ``T.func_attr``, ``T.evaluate``, the expression
nodes (``T.Cast``, ``T.Select``, ``T.Let``, ``T.Add``, ...) and the intrinsics of ``tir.op``
(``T.max``, ``T.exp``, ``T.if_then_else``, ...), found by name when used. The ``@T.prim_func``
decorator parses a Python function written this way into a ``tir.PrimFunc``.
"""

from __future__ import annotations

import builtins as _builtins

from ...ir.prim_expr import FloatImm as _FloatImm
from ...ir.prim_expr import IntImm as _IntImm
from ...ir.prim_expr import PrimExpr as _PrimExpr
from ...tir import expr as _E
from ...tir import op as _op
from ...tir import stmt as _S
from ...tir.buffer import decl_buffer as _decl_buffer
from .entry import parse_decorated as _parse_decorated

_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
           "float32", "float64", "bfloat16", "bool", "handle")


class _DType:
    """``T.int64``: ``T.int64(5)`` is an immediate, ``T.int64()`` a new symbolic variable
    (``n = T.int64()``), ``T.int64`` alone an annotation (``x: T.int64``)."""

    __slots__ = ("_tvmscript_dtype",)

    def __init__(self, dtype: str):
        self._tvmscript_dtype = dtype

    def __call__(self, value=None, *, is_size_var: bool = False):
        dtype = self._tvmscript_dtype
        if value is None:
            return (_E.SizeVar if is_size_var else _E.Var)("", dtype)
        if isinstance(value, _PrimExpr):
            return value if value.dtype == dtype else _E.Cast(dtype, value)
        if dtype.startswith(("float", "bfloat")):
            return _FloatImm(dtype, float(value))
        if isinstance(value, _builtins.str):
            raise ValueError(f"T.{dtype} takes a number, got {value!r}")
        if dtype == "bool":
            return _IntImm("bool", int(_builtins.bool(value)))
        if isinstance(value, float) and not float(value).is_integer():
            raise ValueError(f"T.{dtype}({value!r}): not an integer")
        return _IntImm(dtype, int(value))

    def __repr__(self):
        return f"T.{self._tvmscript_dtype}"


for _d in _DTYPES:
    globals()[_d] = _DType(_d)
del _d


def _dtype_of(x) -> str:
    """A dtype given as text or as ``T.float32``."""
    if isinstance(x, _DType):
        return x._tvmscript_dtype
    return _builtins.str(x)


# ---------------------------------------------------------------------------- the decorator
def prim_func(f=None, *, private: bool = False, check_well_formed: bool = True):
    """``@T.prim_func``: parse the decorated Python function as a ``tir.PrimFunc`` (inside an
    ``@I.ir_module`` class the module's decorator parses it with the other functions)."""
    if f is None:
        return lambda func: _parse_decorated(func, "tir")
    return _parse_decorated(f, "tir")


prim_func._tvmscript_kind = "tir"


# ---------------------------------------------------------------------------- buffers
def _buffer(shape, dtype="float32", data=None, strides=None, elem_offset=None,
            scope="global", align=-1, offset_factor=0, buffer_type="", axis_separators=None):
    if isinstance(shape, int | _PrimExpr):
        shape = (shape,)
    return _decl_buffer(tuple(shape), _dtype_of(dtype), "buffer", data, strides, elem_offset,
                        scope, align, offset_factor, buffer_type, axis_separators)


def Buffer(shape, dtype="float32", data=None, strides=None, elem_offset=None,  # noqa: N802
           scope="global", align=-1, offset_factor=0, buffer_type="", axis_separators=None):
    """``A: T.Buffer((128,), "float32")``: a buffer parameter (or declaration)."""
    return _buffer(shape, dtype, data, strides, elem_offset, scope, align, offset_factor,
                   buffer_type, axis_separators)


class MatchBuffer:
    __slots__ = ("param", "buffer")

    def __init__(self, param, buffer):
        self.param = param
        self.buffer = buffer


class AllocBuffer:
    __slots__ = ("buffer",)

    def __init__(self, buffer):
        self.buffer = buffer


class DeclBufferScope:
    __slots__ = ("buffer",)

    def __init__(self, buffer):
        self.buffer = buffer


class AllocateScope:
    __slots__ = ("extents", "dtype", "scope", "condition", "annotations")

    def __init__(self, extents, dtype, scope, condition, annotations):
        self.extents = extents
        self.dtype = dtype
        self.scope = scope
        self.condition = condition
        self.annotations = annotations


def match_buffer(param, shape=None, dtype="float32", data=None, strides=None, elem_offset=None,
                 scope="global", align=-1, offset_factor=0, buffer_type="default",
                 axis_separators=None) -> MatchBuffer:
    """``x = T.match_buffer(var_x, (n, 784))``: the buffer behind a handle parameter (or a
    region of another buffer, inside a block)."""
    if shape is None:
        region = param if isinstance(param, _S.BufferRegion) else None
        if region is None:
            raise ValueError("T.match_buffer needs a shape")
        shape = [r.extent for r in region.region]
    return MatchBuffer(param, _buffer(shape, dtype, data, strides, elem_offset, scope, align,
                                      offset_factor, "", axis_separators))


def alloc_buffer(shape, dtype="float32", data=None, strides=None, elem_offset=None,
                 scope="global", align=-1, offset_factor=0, buffer_type="default",
                 axis_separators=None) -> AllocBuffer:
    """``B = T.alloc_buffer((n, 128))``: a buffer allocated by the enclosing block."""
    return AllocBuffer(_buffer(shape, dtype, data, strides, elem_offset, scope, align,
                               offset_factor, "", axis_separators))


def decl_buffer(shape, dtype="float32", data=None, strides=None, elem_offset=None,
                scope="global", align=-1, offset_factor=0, buffer_type="default",
                axis_separators=None) -> DeclBufferScope:
    """``B = T.decl_buffer(shape, dtype, data=ptr)``: a buffer over existing memory."""
    return DeclBufferScope(_buffer(shape, dtype, data, strides, elem_offset, scope, align,
                                   offset_factor, "", axis_separators))


def allocate(extents, dtype, scope="global", condition=True, annotations=None) -> AllocateScope:
    """``ptr = T.allocate([n], "float32", "global")``: memory for the rest of the body."""
    return AllocateScope(list(extents), _dtype_of(dtype), scope, condition, annotations)


# ---------------------------------------------------------------------------- loops
class Loop:
    """What a ``for`` iterates over: loops of one kind, one per target name."""

    __slots__ = ("kind", "ranges", "thread", "annotations")

    def __init__(self, kind, ranges, thread=None, annotations=None):
        self.kind = kind
        self.ranges = ranges  # [(min, extent)]
        self.thread = thread
        self.annotations = annotations


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, _IntImm) and isinstance(b, _IntImm):
        return a.value == b.value and a.dtype == b.dtype
    from ...ir.structural import structural_equal

    return structural_equal(a, b)


def extent_of(lo, hi):
    """``hi - lo``, folded where the printer wrote ``lo:lo + extent`` or constants."""
    lo, hi = _E._unify(lo, hi)
    if isinstance(lo, _IntImm) and isinstance(hi, _IntImm):
        return _IntImm(hi.dtype, hi.value - lo.value)
    if isinstance(lo, _IntImm) and lo.value == 0:
        return hi
    if isinstance(hi, _E.Add) and _same(hi.a, lo):
        return hi.b
    return hi - lo


def _range(start, stop):
    if stop is None:
        start, stop = 0, start
    start, stop = _E._unify(start, stop)
    return start, extent_of(start, stop)


def serial(start, stop=None, *, annotations=None) -> Loop:
    """``for i in T.serial(n)`` (``range(n)``): a sequential loop."""
    return Loop(_S.ForKind.SERIAL, [_range(start, stop)], annotations=annotations)


def parallel(start, stop=None, *, annotations=None) -> Loop:
    return Loop(_S.ForKind.PARALLEL, [_range(start, stop)], annotations=annotations)


def vectorized(start, stop=None, *, annotations=None) -> Loop:
    return Loop(_S.ForKind.VECTORIZED, [_range(start, stop)], annotations=annotations)


def unroll(start, stop=None, *, annotations=None) -> Loop:
    return Loop(_S.ForKind.UNROLLED, [_range(start, stop)], annotations=annotations)


def thread_binding(start, stop=None, thread: str | None = None, *, annotations=None) -> Loop:
    """``for tx in T.thread_binding(32, thread="threadIdx.x")``."""
    if thread is None and isinstance(stop, _builtins.str):
        start, stop, thread = 0, start, stop
    if thread is None:
        raise ValueError("T.thread_binding needs thread=\"...\"")
    return Loop(_S.ForKind.THREAD_BINDING, [_range(start, stop)], thread, annotations)


def grid(*extents) -> Loop:
    """``for i, j in T.grid(n, 128)``: nested sequential loops."""
    return Loop(_S.ForKind.SERIAL, [_range(e, None) for e in extents])


# ---------------------------------------------------------------------------- blocks
class BlockScope:
    __slots__ = ("name", "no_realize")

    def __init__(self, name, no_realize):
        self.name = name
        self.no_realize = no_realize


class InitScope:
    __slots__ = ()


class AttrScope:
    __slots__ = ("node", "key", "value")

    def __init__(self, node, key, value):
        self.node = node
        self.key = key
        self.value = value


class Marker:
    """A block or function statement the parser interprets (``T.reads(...)``, ...)."""

    __slots__ = ("kind", "value")

    def __init__(self, kind, value):
        self.kind = kind
        self.value = value


class AxisDef:
    __slots__ = ("kind", "dom", "binding", "dtype")

    def __init__(self, kind, dom, binding, dtype):
        self.kind = kind
        self.dom = dom
        self.binding = binding
        self.dtype = dtype


class AxisRemap:
    __slots__ = ("kinds", "bindings")

    def __init__(self, kinds, bindings):
        self.kinds = kinds
        self.bindings = bindings


def block(name_hint: str = "", no_realize: bool = False) -> BlockScope:
    """``with T.block("name"):``."""
    return BlockScope(name_hint, no_realize)


def init() -> InitScope:
    """``with T.init():`` the statements that initialize a reduction block's output."""
    return InitScope()


def reads(*regions) -> Marker:
    """``T.reads(A[i, 0:16], B[i])``: the regions a block reads."""
    if len(regions) == 1 and isinstance(regions[0], list | tuple):
        regions = tuple(regions[0])
    return Marker("reads", regions)


def writes(*regions) -> Marker:
    """``T.writes(C[i])``: the regions a block writes."""
    if len(regions) == 1 and isinstance(regions[0], list | tuple):
        regions = tuple(regions[0])
    return Marker("writes", regions)


def where(predicate) -> Marker:
    """``T.where(cond)``: the block runs only where ``cond`` holds."""
    return Marker("where", predicate)


def block_attr(attrs: dict) -> Marker:
    return Marker("block_attr", attrs)


def func_attr(attrs: dict) -> Marker:
    """``T.func_attr({"tir.noalias": T.bool(True)})``."""
    if not isinstance(attrs, dict):
        raise TypeError(f"T.func_attr takes a dict, got {type(attrs).__name__}")
    return Marker("func_attr", attrs)


def evaluate(value) -> _S.Evaluate:
    """``T.evaluate(expr)``: a statement that evaluates an expression."""
    return _S.Evaluate(value)


def attr(node, attr_key: str, value) -> AttrScope:
    """``with T.attr(node, "key", value):``."""
    return AttrScope(node, attr_key, value)


class axis:  # noqa: N801 - TVM's name
    """``T.axis.spatial(dom, binding)``, ``T.axis.reduce``, ``T.axis.scan``,
    ``T.axis.opaque``, ``T.axis.remap("SSR", [i, j, k])``."""

    @staticmethod
    def spatial(dom, binding, dtype: str = "int32") -> AxisDef:
        return AxisDef(_E.IterVar.DataPar, dom, binding, dtype)

    @staticmethod
    def reduce(dom, binding, dtype: str = "int32") -> AxisDef:
        return AxisDef(_E.IterVar.CommReduce, dom, binding, dtype)

    @staticmethod
    def scan(dom, binding, dtype: str = "int32") -> AxisDef:
        return AxisDef(_E.IterVar.Ordered, dom, binding, dtype)

    @staticmethod
    def opaque(dom, binding, dtype: str = "int32") -> AxisDef:
        return AxisDef(_E.IterVar.DimInfo, dom, binding, dtype)

    @staticmethod
    def remap(kinds: str, bindings, dtype: str = "int32") -> AxisRemap:
        if len(kinds) != len(bindings):
            raise ValueError(f"T.axis.remap: {len(kinds)} kinds {kinds!r} for "
                             f"{len(bindings)} bindings")
        bad = set(kinds) - set("SR")
        if bad:
            raise ValueError(f"T.axis.remap kinds are 'S' (spatial) and 'R' (reduce), got "
                             f"{sorted(bad)[0]!r}")
        return AxisRemap(kinds, list(bindings))

    S = spatial
    R = reduce


# ---------------------------------------------------------------------------- expressions
def Cast(dtype, value):  # noqa: N802
    return _E.Cast(_dtype_of(dtype), value)


def Select(condition, true_value, false_value):  # noqa: N802
    return _E.Select(condition, true_value, false_value)


def Ramp(base, stride, lanes):  # noqa: N802
    return _E.Ramp(base, stride, int(lanes))


def Broadcast(value, lanes):  # noqa: N802
    return _E.Broadcast(value, int(lanes))


def Not(a):  # noqa: N802
    return _E.Not(a)


def Any():  # noqa: N802
    return _E.Any()


def Let(expr, where: dict):  # noqa: N802
    """``T.Let(body, where={v: value})``: the expression ``let v = value in body``, as TVM
    prints a ``tir.Let``; ``v`` is declared before the statement (``v = T.int32()``)."""
    if not isinstance(where, dict) or len(where) != 1:
        raise ValueError(f"T.Let binds exactly one variable: where={{var: value}}, got "
                         f"where={where!r}")
    ((var, value),) = where.items()
    if not isinstance(var, _E.Var):
        raise TypeError(f"T.Let: the key of `where` is the bound variable (declare it first: "
                        f"`v = T.int32()`), got {var!r}")
    return _E.Let(var, value, expr)


def index_map(mapping, *, inverse_index_map=None, index_dtype: str = "int64"):
    """``T.index_map(lambda i, j: (j, i))``: the IndexMap of a lambda (as printed in a
    ``R.layout_transform``'s attributes)."""
    from ...tir.index_map import IndexMap

    return IndexMap.from_func(mapping, inverse_index_map=inverse_index_map,
                              index_dtype=index_dtype)


def call_extern(dtype, func_name, *args):
    return _op.call_extern(_dtype_of(dtype), func_name, *args)


def call_pure_extern(dtype, func_name, *args):
    return _op.call_pure_extern(_dtype_of(dtype), func_name, *args)


for _name in ("Add", "Sub", "Mul", "FloorDiv", "FloorMod", "Div", "Mod", "Min", "Max", "EQ",
              "NE", "LT", "LE", "GT", "GE", "And", "Or"):
    globals()[_name] = getattr(_E, _name)
del _name


def __getattr__(name: str):
    """Intrinsics and helpers of ``tir.op`` (``T.exp``, ``T.max``, ``T.if_then_else``...)."""
    if name.startswith("__"):
        raise AttributeError(name)
    f = getattr(_op, name, None)
    if f is not None and callable(f):
        return f
    raise AttributeError(f"T.{name} is not available (minitvm.tir.op has no {name!r})")
