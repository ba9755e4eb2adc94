"""Relax expressions (TVM's ``relax.Expr`` family) on the shared core.

Values are bound once in ``BindingBlock``/``DataflowBlock``s of a ``SeqExpr``; every expression
carries its struct info once normalized (``expr.struct_info``). Node classes declare their
fields, binders and operands for the core's structural equality and walkers.
"""

from __future__ import annotations

from operator import is_

import numpy as np

from ..ir.attrs import DictAttrs
from ..ir.expr import ArithmeticOperators, BaseFunc, GlobalVar, RelayExpr
from ..ir.node import Node
from ..ir.prim_expr import FloatImm, IntImm, PrimExpr
from ..runtime.ndarray import NDArray
from .struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    as_dim,
)

__all__ = [
    "Expr", "Var", "DataflowVar", "Constant", "PrimValue", "ShapeExpr", "StringImm",
    "DataTypeImm", "Tuple", "TupleGetItem", "Call", "If", "SeqExpr", "Binding", "VarBinding",
    "MatchCast", "BindingBlock", "DataflowBlock", "Function", "ExternFunc", "GlobalVar",
    "const", "get_shape_of", "extern",
]


class Expr(ArithmeticOperators, RelayExpr):
    """Base of Relax expressions: ``struct_info`` is filled at construction for leaves and by
    normalization (``BlockBuilder.normalize``) for the rest."""

    __slots__ = ()  # the struct info lives in the core's cached-type slot

    @property
    def _struct_info(self):
        return self._checked_type

    @_struct_info.setter
    def _struct_info(self, value):
        self._checked_type = value

    @property
    def struct_info(self) -> StructInfo:
        s = self._struct_info
        if s is None:
            raise ValueError(f"this {type(self).__name__} has no struct info yet; normalize it "
                             "(relax.BlockBuilder().normalize(expr)) first")
        return s

    @property
    def struct_info_(self):
        return self._struct_info

    # arithmetic builds Relax calls, as TVM's ExprWithOp does
    def _binop(self, name, other, swap=False):
        from .op import binary

        if not isinstance(other, Expr):
            other = const(other, getattr(self._struct_info, "dtype", None))
        f = getattr(binary, name)
        return f(other, self) if swap else f(self, other)

    def __call__(self, *args, sinfo_args=None, attrs=None):
        return Call(self, list(args), attrs, sinfo_args)

    def astype(self, dtype: str):
        from .op import astype

        return astype(self, dtype)

    __hash__ = Node.__hash__


_new = object.__new__  # (a copy's slots are all set by the method making it)


def _check_sinfo(sinfo, what: str):
    if sinfo is not None and not isinstance(sinfo, StructInfo):
        raise TypeError(f"{what} must be a StructInfo, got {type(sinfo).__name__}")
    return sinfo


class Var(Expr):
    """A variable (``x: R.Tensor((n, 4), "float32")``); equal to another when bound at the same
    place. ``struct_info`` is its annotation."""

    __slots__ = ("name_hint",)
    _node_compare = "var"
    _node_fields = ("struct_info_",)
    _fingerprint_slots = ("_checked_type",)  # (the annotation: part of the program's digest)

    def __init__(self, name_hint: str, struct_info: StructInfo | None = None, span=None):
        super().__init__(span)
        if not isinstance(name_hint, str):
            raise TypeError(f"Var name must be a str, got {type(name_hint).__name__}")
        self.name_hint = name_hint
        self._struct_info = _check_sinfo(struct_info, "Var struct_info")

    @property
    def vid(self):
        return self


class DataflowVar(Var):
    """A variable local to a dataflow block (not visible after it)."""

    __slots__ = ()


def _tensor_sinfo_of(data: np.ndarray) -> TensorStructInfo:
    return TensorStructInfo([int(d) for d in data.shape], str(data.dtype))


class Constant(Expr):
    """A constant tensor (``R.const(...)``; printed as ``metadata["relax.expr.Constant"][k]``)."""

    __slots__ = ("data",)
    _node_fields = ("data",)

    def __init__(self, data, struct_info=None, span=None):
        super().__init__(span)
        if not isinstance(data, NDArray):
            data = NDArray(np.asarray(data))
        self.data = data
        self._struct_info = struct_info or _tensor_sinfo_of(data.numpy())


def const(value, dtype: str | None = None, span=None) -> Constant:
    """A Relax constant: Python scalars default to float32/int64 like TVM (``R.const(1.0)``)."""
    if isinstance(value, NDArray):
        value = value.numpy()
    arr = np.asarray(value)
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int) and not isinstance(value, bool):
            dtype = "int64"
        elif isinstance(value, float):
            dtype = "float32"
        elif arr.dtype == np.float64:
            dtype = "float32"
        else:
            dtype = str(arr.dtype)
    return Constant(NDArray(arr.astype(dtype)), span=span)


class PrimValue(Expr):
    """A scalar value (``R.prim_value(n)``)."""

    __slots__ = ("value",)
    _node_fields = ("value",)

    def __init__(self, value, span=None):
        super().__init__(span)
        if isinstance(value, bool | int):
            value = IntImm("int64", int(value))
        elif isinstance(value, float):
            value = FloatImm("float64", value)
        if not isinstance(value, PrimExpr):
            raise TypeError(f"PrimValue takes a PrimExpr, got {type(value).__name__}")
        self.value = value
        self._struct_info = PrimStructInfo(value.dtype, value)


class ShapeExpr(Expr):
    """A shape value (``R.shape([n, 4])``)."""

    __slots__ = ("values",)
    _node_fields = ("values",)

    def __init__(self, values, span=None):
        super().__init__(span)
        if isinstance(values, ShapeExpr):
            values = values.values
        self.values = tuple(as_dim(v) for v in values)
        for v in self.values:
            if not v.dtype.startswith("int"):
                raise TypeError(f"shape dimensions must be integers, got {v!r} of {v.dtype}")
        self._struct_info = ShapeStructInfo(self.values)

    def __len__(self):
        return len(self.values)

    def __getitem__(self, k):
        return self.values[k]


class StringImm(Expr):
    """A string literal."""

    __slots__ = ("value",)
    _node_fields = ("value",)

    def __init__(self, value: str, span=None):
        super().__init__(span)
        self.value = str(value)
        self._struct_info = ObjectStructInfo()


class DataTypeImm(Expr):
    """A data type literal (``R.dtype("float32")``)."""

    __slots__ = ("value",)
    _node_fields = ("value",)

    def __init__(self, value: str, span=None):
        super().__init__(span)
        self.value = str(value)
        self._struct_info = ObjectStructInfo()


class Tuple(Expr):
    """A tuple of values."""

    __slots__ = ("fields",)
    _node_fields = ("fields",)
    _node_operands = ("*fields",)

    def __init__(self, fields, span=None):
        super().__init__(span)
        self.fields = tuple(fields)
        for f in self.fields:
            if not isinstance(f, Expr):
                raise TypeError(f"Tuple fields must be Relax expressions, got "
                                f"{type(f).__name__}")
        if all(f._struct_info is not None for f in self.fields):
            self._struct_info = TupleStructInfo([f._struct_info for f in self.fields])

    def with_fields(self, fields: tuple) -> Tuple:
        """This tuple with ``fields`` (a tuple of expressions, each of the struct info of the
        field it replaces: a variable renamed) and this tuple's span and struct info, made
        without checks or inference; ``self`` when every field is the same object."""
        if len(fields) == len(self.fields) and all(map(is_, fields, self.fields)):
            return self
        r = _new(Tuple)
        r.span, r._checked_type, r._virtual_device = self.span, self._checked_type, None
        r.fields = fields
        return r

    def __len__(self):
        return len(self.fields)

    def __getitem__(self, k):
        return self.fields[k]


class TupleGetItem(Expr):
    """Field ``index`` of a tuple."""

    __slots__ = ("tuple_value", "index")
    _node_fields = ("tuple_value", "index")
    _node_operands = ("tuple_value",)

    def __init__(self, tuple_value: Expr, index: int, span=None):
        super().__init__(span)
        self.tuple_value = tuple_value
        self.index = int(index)
        t = tuple_value._struct_info
        if isinstance(t, TupleStructInfo):
            if not 0 <= self.index < len(t.fields):
                raise IndexError(f"TupleGetItem: index {self.index} out of range for a tuple "
                                 f"of {len(t.fields)} fields")
            self._struct_info = t.fields[self.index]


_CALL_ARG = (Expr, GlobalVar)


class Call(Expr):
    """A call of an operator, a function or a global (``R.add(x, y)``). ``sinfo_args`` give
    struct info some ops need (``call_tir``'s output)."""

    __slots__ = ("op", "args", "attrs", "sinfo_args")
    _node_fields = ("op", "args", "attrs", "sinfo_args")
    _node_operands = ("op", "*args")

    def __init__(self, op, args, attrs=None, sinfo_args=None, span=None):
        super().__init__(span)
        self.op = op
        self.args = args = tuple(args)
        for a in args:
            if not isinstance(a, _CALL_ARG):  # (a tuple built once: ``Expr | GlobalVar`` here
                # made a union object per argument of every call)
                raise TypeError(f"Call arguments must be Relax expressions, got "
                                f"{type(a).__name__} {a!r}")
        self.attrs = attrs
        self.sinfo_args = tuple(sinfo_args or ())

    def with_operands(self, op, args: tuple) -> Call:
        """This call of ``op`` on ``args`` (a tuple of expressions, each of the struct info of
        the operand it replaces: a variable renamed), keeping its attrs, ``sinfo_args``, span
        and struct info, made without checks or inference; ``self`` when the callee and every
        argument are the same objects."""
        if op is self.op and len(args) == len(self.args) and all(map(is_, args, self.args)):
            return self
        r = _new(Call)
        r.span, r._checked_type, r._virtual_device = self.span, self._checked_type, None
        r.op, r.args, r.attrs, r.sinfo_args = op, args, self.attrs, self.sinfo_args
        return r


class If(Expr):
    """A conditional; each branch is a ``SeqExpr`` once normalized."""

    __slots__ = ("cond", "true_branch", "false_branch")
    _node_fields = ("cond", "true_branch", "false_branch")
    _node_operands = ("cond", "true_branch", "false_branch")

    def __init__(self, cond, true_branch, false_branch, span=None):
        super().__init__(span)
        self.cond = cond
        self.true_branch = true_branch
        self.false_branch = false_branch


class Binding(Node):
    """Base of bindings: ``var`` is defined here."""

    __slots__ = ("var", "span")
    _node_binders = frozenset({"var"})


class VarBinding(Binding):
    """``var = value``."""

    __slots__ = ("value",)
    _node_fields = ("var", "value")
    _node_operands = ("var", "value")

    def __init__(self, var: Var, value: Expr, span=None):
        if not isinstance(var, Var):
            raise TypeError(f"VarBinding binds a Var, got {type(var).__name__}")
        self.var = var
        self.value = value
        self.span = span


class MatchCast(Binding):
    """``var = R.match_cast(value, struct_info)``: checks ``value`` against ``struct_info`` at
    run time and binds the symbolic variables it introduces."""

    __slots__ = ("value", "struct_info")
    _node_fields = ("struct_info", "var", "value")
    _node_binders = frozenset({"var", "struct_info"})
    _node_operands = ("var", "value")

    def __init__(self, var: Var, value: Expr, struct_info: StructInfo, span=None):
        if not isinstance(var, Var):
            raise TypeError(f"MatchCast binds a Var, got {type(var).__name__}")
        self.var = var
        self.value = value
        self.struct_info = _check_sinfo(struct_info, "MatchCast struct_info")
        self.span = span


class BindingBlock(Node):
    """A sequence of bindings."""

    __slots__ = ("bindings", "span")
    _node_fields = ("bindings",)
    _node_operands = ("*bindings",)

    def __init__(self, bindings, span=None):
        self.bindings = tuple(bindings)
        # (the check once per distinct binding class, not once per binding: the lowering
        # passes rebuild 100,000-binding blocks several times)
        if not all(issubclass(t, Binding) for t in set(map(type, self.bindings))):
            bad = next(b for b in self.bindings if not isinstance(b, Binding))
            raise TypeError(f"a binding block holds bindings, got {type(bad).__name__}")
        self.span = span


class DataflowBlock(BindingBlock):
    """A block without side effects or control flow (``with R.dataflow():``)."""

    __slots__ = ()


def seq_struct_info(blocks, sinfo):
    """The struct info of a SeqExpr whose body has ``sinfo``: a tensor whose shape is a shape
    variable bound in ``blocks`` (out of scope after the SeqExpr, e.g. ``y = R.full(s, ...)``)
    keeps only its rank and dtype, as TVM's normalizer erases it."""
    from .struct_info import TensorStructInfo, TupleStructInfo

    def local_shape(s) -> bool:
        return isinstance(s, TensorStructInfo) and isinstance(s.shape, Var)

    def needs(s) -> bool:
        stack = [s]
        while stack:
            t = stack.pop()
            if local_shape(t):
                return True
            if isinstance(t, TupleStructInfo):
                stack.extend(t.fields)
        return False

    if not needs(sinfo):
        return sinfo
    bound = {b.var for blk in blocks for b in blk.bindings}
    done: dict[int, object] = {}
    stack = [(sinfo, False)]
    while stack:  # post-order rebuild of the tuple tree
        t, visited = stack.pop()
        if isinstance(t, TupleStructInfo) and not visited:
            stack.append((t, True))
            stack.extend((f, False) for f in t.fields)
            continue
        if isinstance(t, TupleStructInfo):
            fields = [done[id(f)] for f in t.fields]
            done[id(t)] = t if all(a is b for a, b in zip(fields, t.fields)) \
                else TupleStructInfo(fields, t.span)
        elif local_shape(t) and t.shape in bound:
            done[id(t)] = TensorStructInfo(None, t.dtype, t.vdevice, t.ndim, t.span)
        else:
            done[id(t)] = t
    return done[id(sinfo)]


class SeqExpr(Expr):
    """Blocks of bindings followed by the result ``body``."""

    __slots__ = ("blocks", "body")
    _node_fields = ("blocks", "body")
    _node_operands = ("*blocks", "body")

    def __init__(self, blocks, body: Expr, span=None):
        super().__init__(span)
        self.blocks = tuple(blocks)
        for b in self.blocks:
            if not isinstance(b, BindingBlock):
                raise TypeError(f"SeqExpr blocks must be BindingBlocks, got {type(b).__name__}")
        self.body = body
        if body._struct_info is not None:
            self._struct_info = seq_struct_info(self.blocks, body._struct_info)


class Function(BaseFunc, Expr):
    """A Relax function (``@R.function``): ``params`` with their struct info, a ``SeqExpr``
    body, the return struct info, purity and attrs (``R.func_attr``)."""

    __slots__ = ("params", "body", "ret_struct_info", "is_pure")
    # the body before the return annotation: symbolic variables a match_cast in the body
    # defines may appear in it (TVM's order)
    _node_fields = ("params", "is_pure", "attrs", "body", "ret_struct_info")
    _node_binders = frozenset({"params"})
    _node_operands = ("*params", "body")

    def __init__(self, params, body: Expr, ret_struct_info: StructInfo | None = None,
                 is_pure: bool = True, attrs=None, span=None):
        Expr.__init__(self, span)
        self.params = tuple(params)
        for p in self.params:
            if not isinstance(p, Var):
                raise TypeError(f"function parameters must be Vars, got {type(p).__name__}")
            if p._struct_info is None:
                raise ValueError(f"parameter {p.name_hint!r} has no struct info")
        self.body = body
        if ret_struct_info is None:
            ret_struct_info = body._struct_info
        self.ret_struct_info = _check_sinfo(ret_struct_info, "ret_struct_info")
        self.is_pure = bool(is_pure)
        if attrs is not None and not isinstance(attrs, DictAttrs):
            attrs = DictAttrs(attrs)
        self.attrs = attrs
        from .struct_info import FuncStructInfo

        if self.ret_struct_info is not None:
            self._struct_info = FuncStructInfo([p._struct_info for p in self.params],
                                               self.ret_struct_info, self.is_pure)

    def with_attr(self, key: str, value) -> Function:
        """A copy with attribute ``key`` set."""
        attrs = dict(self.attrs.items()) if self.attrs is not None else {}
        attrs[key] = value
        return Function(self.params, self.body, self.ret_struct_info, self.is_pure,
                        DictAttrs(attrs), self.span)

    def without_attr(self, key: str) -> Function:
        attrs = {k: v for k, v in (self.attrs.items() if self.attrs is not None else ())
                 if k != key}
        return Function(self.params, self.body, self.ret_struct_info, self.is_pure,
                        DictAttrs(attrs) if attrs else None, self.span)


class ExternFunc(BaseFunc, Expr):
    """A function provided by the runtime, called by name (``R.ExternFunc("vm.builtin...")``)."""

    __slots__ = ("global_symbol",)
    _node_fields = ("global_symbol",)

    def __init__(self, global_symbol: str, struct_info=None, span=None):
        Expr.__init__(self, span)
        self.global_symbol = str(global_symbol)
        self.attrs = None
        from .struct_info import FuncStructInfo

        self._struct_info = struct_info or FuncStructInfo.opaque_func(
            derive_func=infer_by_sinfo_args)


def extern(name: str, struct_info=None, span=None) -> ExternFunc:
    """``relax.extern("name")``: the runtime function registered as ``name``."""
    return ExternFunc(name, struct_info, span)


def infer_by_sinfo_args(call, ctx=None):
    """TVM's ``tvm.relax.struct_info.infer_by_sinfo_args``: a call of an opaque packed function
    returns the struct info its ``sinfo_args`` state (an Object when none)."""
    from .struct_info import ObjectStructInfo, TupleStructInfo

    if not call.sinfo_args:
        return ObjectStructInfo()
    if len(call.sinfo_args) == 1:
        return call.sinfo_args[0]
    return TupleStructInfo(list(call.sinfo_args))


def get_shape_of(expr: Expr) -> Expr:
    """The shape of a tensor expression, as a ShapeExpr when it is known statically."""
    s = expr.struct_info
    if not isinstance(s, TensorStructInfo) or s.shape is None:
        raise ValueError(f"the shape of {type(expr).__name__} is not known statically")
    return s.shape
