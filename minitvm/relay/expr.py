"""Relay expressions: Var, Constant, Call, Tuple, TupleGetItem, Let, If, Function, references.

Nodes are immutable ``__slots__`` objects equal by identity; ``with_fields`` returns ``self`` when
nothing changed. ADT expressions (Constructor, Match, patterns) live in ``relay.adt``.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attrs, DictAttrs
from ..ir.expr import ArithmeticOperators, BaseFunc, GlobalVar, RelayExpr
from ..ir.type import TensorType, TupleType, Type
from ..runtime.ndarray import NDArray, array

Expr = RelayExpr

__all__ = [
    "Expr", "Var", "Constant", "Call", "Tuple", "TupleGetItem", "Let", "If", "Function",
    "RefCreate", "RefRead", "RefWrite", "TupleWrapper", "const", "var", "GlobalVar", "bind",
]


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    return False


class ExprWithOp(ArithmeticOperators, RelayExpr):
    """Base of Relay's own expressions: Python operators build Relay calls (``x + y``)."""

    __slots__ = ()

    def _lift(self, other):
        if isinstance(other, RelayExpr):
            return other
        if isinstance(other, bool | int | float):
            dtype = None
            t = self._checked_type
            if t is not None and hasattr(t, "dtype"):
                dtype = t.dtype
            elif isinstance(other, float):
                dtype = "float32"
            return const(other, dtype)
        raise TypeError(f"cannot combine a Relay expression with {type(other).__name__}")

    def _binop(self, name, other, swap=False):
        from .op import tensor as _t

        other = self._lift(other)
        f = getattr(_t, name)
        return f(other, self) if swap else f(self, other)

    def __neg__(self):
        from .op import tensor as _t

        return _t.negative(self)

    def __lt__(self, o):
        return self._binop("less", o)

    def __gt__(self, o):
        return self._binop("greater", o)

    def __le__(self, o):
        return self._binop("less_equal", o)

    def __ge__(self, o):
        return self._binop("greater_equal", o)

    __hash__ = RelayExpr.__hash__

    def astype(self, dtype: str):
        from .op import tensor as _t

        return _t.cast(self, dtype)

    def __call__(self, *args):
        return Call(self, list(args))


class Id:
    """The identity of a variable, shared by all its uses."""

    __slots__ = ("name_hint",)

    def __init__(self, name_hint: str):
        self.name_hint = name_hint


class Var(ExprWithOp):
    """A local variable. ``relay.var("x", shape=(2, 3))`` builds one with a tensor annotation."""

    __slots__ = ("vid", "type_annotation")
    _node_compare = "var"
    _node_fields = ("type_annotation", "virtual_device_")

    def __init__(self, name_hint: str, type_annotation: Type | None = None, span=None):
        super().__init__(span)
        self.vid = Id(name_hint)
        self.type_annotation = type_annotation

    @property
    def name_hint(self) -> str:
        return self.vid.name_hint


class Constant(ExprWithOp):
    """A constant tensor; ``data`` is a ``tvm.nd.NDArray``."""

    __slots__ = ("data",)

    def __init__(self, data, span=None):
        super().__init__(span)
        self.data = data if isinstance(data, NDArray) else array(np.asarray(data))


class Call(ExprWithOp):
    """``op(args..., attrs)``: a call of an Op, a function, a GlobalVar or a constructor."""

    __slots__ = ("op", "args", "attrs", "type_args")
    _node_operands = ("op", "*args")

    def __init__(self, op, args, attrs: Attrs | None = None, type_args=None, span=None):
        super().__init__(span)
        self.op = op
        self.args = tuple(args)
        self.attrs = attrs
        self.type_args = tuple(type_args or ())

    def with_fields(self, op=None, args=None, attrs=None, type_args=None, span=None):
        op = self.op if op is None else op
        args = self.args if args is None else tuple(args)
        attrs = self.attrs if attrs is None else attrs
        type_args = self.type_args if type_args is None else type_args
        if op is self.op and _same(args, self.args) and attrs is self.attrs and _same(
            type_args, self.type_args
        ) and span is None:
            return self
        return Call(op, args, attrs, type_args, self.span if span is None else span)


class Tuple(ExprWithOp):
    __slots__ = ("fields",)
    _node_operands = ("*fields",)

    def __init__(self, fields, span=None):
        super().__init__(span)
        self.fields = tuple(fields)

    def __getitem__(self, i):
        return self.fields[i]

    def __len__(self):
        return len(self.fields)

    def astuple(self):
        return self

    def with_fields(self, fields=None, span=None):
        fields = self.fields if fields is None else tuple(fields)
        if _same(fields, self.fields) and span is None:
            return self
        return Tuple(fields, self.span if span is None else span)


class TupleGetItem(ExprWithOp):
    __slots__ = ("tuple_value", "index")
    _node_operands = ("tuple_value",)

    def __init__(self, tuple_value, index: int, span=None):
        super().__init__(span)
        self.tuple_value = tuple_value
        self.index = int(index)

    def with_fields(self, tuple_value=None, index=None, span=None):
        tv = self.tuple_value if tuple_value is None else tuple_value
        idx = self.index if index is None else int(index)
        if tv is self.tuple_value and idx == self.index and span is None:
            return self
        return TupleGetItem(tv, idx, self.span if span is None else span)


class Let(ExprWithOp):
    """``let %var = value; body``."""

    __slots__ = ("var", "value", "body")
    _node_operands = ("var", "value", "body")
    _node_fields = ("var", "value", "body")
    _node_binders = frozenset({"var"})

    def __init__(self, variable: Var, value, body, span=None):
        super().__init__(span)
        self.var = variable
        self.value = value
        self.body = body

    def with_fields(self, var=None, value=None, body=None, span=None):
        var = self.var if var is None else var
        value = self.value if value is None else value
        body = self.body if body is None else body
        if var is self.var and value is self.value and body is self.body and span is None:
            return self
        return Let(var, value, body, self.span if span is None else span)


class If(ExprWithOp):
    __slots__ = ("cond", "true_branch", "false_branch")
    _node_operands = ("cond", "true_branch", "false_branch")

    def __init__(self, cond, true_branch, false_branch, span=None):
        super().__init__(span)
        self.cond = cond
        self.true_branch = true_branch
        self.false_branch = false_branch

    def with_fields(self, cond=None, true_branch=None, false_branch=None, span=None):
        c = self.cond if cond is None else cond
        t = self.true_branch if true_branch is None else true_branch
        f = self.false_branch if false_branch is None else false_branch
        if c is self.cond and t is self.true_branch and f is self.false_branch and span is None:
            return self
        return If(c, t, f, self.span if span is None else span)


class Function(BaseFunc, ExprWithOp):
    """``fn (%params) -> ret_type { body }`` with optional type params and attributes."""

    __slots__ = ("params", "body", "ret_type", "type_params")
    _node_operands = ("*params", "body")
    _node_fields = ("type_params", "params", "ret_type", "attrs", "virtual_device_", "body")
    _node_binders = frozenset({"params", "type_params"})

    def __init__(self, params, body, ret_type=None, type_params=None, attrs=None, span=None):
        super().__init__(span)
        self.params = tuple(params)
        self.body = body
        self.ret_type = ret_type
        self.type_params = tuple(type_params or ())
        if attrs is not None and not isinstance(attrs, DictAttrs):
            attrs = DictAttrs(attrs)
        self.attrs = attrs

    def with_fields(self, params=None, body=None, ret_type=None, type_params=None, attrs=None,
                    span=None):
        params = self.params if params is None else tuple(params)
        body = self.body if body is None else body
        ret_type = self.ret_type if ret_type is None else ret_type
        type_params = self.type_params if type_params is None else tuple(type_params)
        attrs = self.attrs if attrs is None else attrs
        if (_same(params, self.params) and body is self.body and ret_type is self.ret_type
                and _same(type_params, self.type_params) and attrs is self.attrs and span is None):
            return self
        return _keep_device(Function(params, body, ret_type, type_params, attrs,
                                     self.span if span is None else span), self)

    def with_attr(self, attr_key: str, attr_value=None) -> Function:
        d = dict(self.attrs.items()) if self.attrs else {}
        d[attr_key] = attr_value
        return _keep_device(Function(self.params, self.body, self.ret_type, self.type_params,
                                     DictAttrs(d), self.span), self)

    def with_attrs(self, attrs: dict) -> Function:
        d = dict(self.attrs.items()) if self.attrs else {}
        d.update(attrs)
        return _keep_device(Function(self.params, self.body, self.ret_type, self.type_params,
                                     DictAttrs(d), self.span), self)

    def without_attr(self, attr_key: str) -> Function:
        d = dict(self.attrs.items()) if self.attrs else {}
        d.pop(attr_key, None)
        return _keep_device(Function(self.params, self.body, self.ret_type, self.type_params,
                                     DictAttrs(d) if d else None, self.span), self)

    def get_attr(self, key: str, default=None):
        if self.attrs is None:
            return default
        return self.attrs.get(key, default)

    def __call__(self, *args):
        return Call(self, list(args))


def _keep_device(new: Function, old: Function) -> Function:
    """``new`` (a fresh copy of ``old``) keeps ``old``'s virtual device, as TVM's WithFields."""
    new._virtual_device = getattr(old, "_virtual_device", None)
    return new


class RefCreate(ExprWithOp):
    __slots__ = ("value",)
    _node_operands = ("value",)

    def __init__(self, value, span=None):
        super().__init__(span)
        self.value = value

    def with_fields(self, value=None, span=None):
        v = self.value if value is None else value
        return self if v is self.value else RefCreate(v, self.span)


class RefRead(ExprWithOp):
    __slots__ = ("ref",)
    _node_operands = ("ref",)

    def __init__(self, ref, span=None):
        super().__init__(span)
        self.ref = ref

    def with_fields(self, ref=None, span=None):
        r = self.ref if ref is None else ref
        return self if r is self.ref else RefRead(r, self.span)


class RefWrite(ExprWithOp):
    __slots__ = ("ref", "value")
    _node_operands = ("ref", "value")

    def __init__(self, ref, value, span=None):
        super().__init__(span)
        self.ref = ref
        self.value = value

    def with_fields(self, ref=None, value=None, span=None):
        r = self.ref if ref is None else ref
        v = self.value if value is None else value
        if r is self.ref and v is self.value:
            return self
        return RefWrite(r, v, self.span)


class TupleWrapper:
    """A multi-output op result (``batch_norm``): index it, or ``astuple()`` for the expression."""

    def __init__(self, tuple_value, size: int):
        self.tuple_value = tuple_value
        self.size = size

    def astuple(self):
        return self.tuple_value

    def astext(self, *a, **k):
        return self.tuple_value.astext(*a, **k)

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError("Tuple index out of range")
        return TupleGetItem(self.tuple_value, index)

    def __len__(self):
        return self.size

    def __iter__(self):
        return (self[i] for i in range(self.size))

    def __repr__(self):
        return f"TupleWrapper({self.tuple_value!r}, {self.size})"


def var(name_hint: str, type_annotation=None, shape=None, dtype: str = "float32", span=None) -> Var:
    """Create a Var; ``shape``/``dtype`` build a TensorType annotation, a str is a dtype."""
    if type_annotation is not None and shape is not None:
        raise ValueError("Can only specify either type_annotation or shape.")
    if shape is not None:
        type_annotation = TensorType(shape, dtype)
    elif isinstance(type_annotation, str):
        type_annotation = TensorType((), type_annotation)
    return Var(name_hint, type_annotation, span)


def const(value, dtype: str | None = None, span=None) -> Constant:
    """Create a constant; without ``dtype``, 64-bit ints/floats (Python or numpy) narrow to
    int32/float32, as TVM's ``relay.const`` does; an NDArray keeps its dtype."""
    t = type(value)
    if t is float:  # the common cases first: a fresh array, owned by the constant (no copy)
        return Constant(NDArray(np.array(value, dtype=dtype or "float32")), span)
    if t is int:
        return Constant(NDArray(np.array(value, dtype=dtype or "int32")), span)
    if isinstance(value, NDArray):
        if dtype is not None and value.dtype != dtype:
            value = value.numpy().astype(dtype)
        return Constant(value, span)
    if isinstance(value, bool | np.bool_):
        arr = np.array(value, dtype=dtype or "bool")
    elif isinstance(value, np.generic) and dtype is None:
        # a numpy scalar keeps its dtype (int8 stays int8, float16 stays float16), except the
        # 64-bit defaults that TVM narrows: int64 -> int32, float64 -> float32
        arr = np.array(value)
        narrow = {np.dtype("int64"): "int32", np.dtype("float64"): "float32"}.get(arr.dtype)
        if narrow is not None:
            arr = arr.astype(narrow)
    elif isinstance(value, int | np.integer) and not isinstance(value, np.ndarray):
        arr = np.array(value, dtype=dtype or "int32")
    elif isinstance(value, float | np.floating) and not isinstance(value, np.ndarray):
        arr = np.array(value, dtype=dtype or "float32")
    else:
        arr = np.asarray(value)
        if dtype is not None:
            arr = arr.astype(dtype)
        elif arr.dtype == np.float64:  # TVM: float64 data (lists and arrays) becomes float32
            arr = arr.astype("float32")
        elif arr.dtype == np.int64:  # TVM: int64 data (lists and numpy arrays) becomes int32
            arr = arr.astype("int32")
    return Constant(arr, span)


def bind(expr, binds: dict):
    """Substitute vars (or Vars named by strings in functions' params) with expressions."""
    from .expr_functor import ExprMutator

    if isinstance(expr, Function) and binds and all(isinstance(k, str) for k in binds):
        by_name = {p.name_hint: p for p in expr.params}
        binds = {by_name[k]: v for k, v in binds.items() if k in by_name}

    class _Binder(ExprMutator):
        def visit_var(self, v):
            return binds.get(v, v)

        def visit_function(self, fn):
            if fn is not expr:
                return super().visit_function(fn)
            new_params = [p for p in fn.params if p not in binds]
            body = self.visit(fn.body)
            if len(new_params) == len(fn.params) and body is fn.body:
                return fn
            # the annotated return type stays, as TVM's Bind keeps it
            return Function(new_params, body, fn.ret_type, fn.type_params, fn.attrs, fn.span)

    return _Binder().visit(expr)


def _is_tuple_type(t) -> bool:
    return isinstance(t, TupleType)


__all__ += ["GlobalVar", "BaseFunc"]
