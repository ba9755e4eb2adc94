"""Elementwise and broadcast operators: math, comparison, logic, cast, clip, where, init ops.

Each op is defined once (type relation, pattern, attrs) with ``define_op`` and gets a
TVM-compatible constructor in this module (``relay.add(a, b)``); its numpy reference (``FNumpy``)
comes from ``minitvm.topi.reference.tensor``.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ..expr import Call, Expr, const
from .op import define_op, register_numpy_only
from .type_relations import (
    broadcast_comp_rel,
    broadcast_rel,
    broadcast_type,
    check_num_args,
    identity_comp_rel,
    identity_rel,
    named,
    tensor_arg,
    type_str,
)

__all__: list[str] = []


# --------------------------------------------------------------------------- attrs
class ClipAttrs(Attrs):
    """Attributes of ``clip``."""

    __slots__ = ()
    _fields = (("a_min", None), ("a_max", None))


class CastAttrs(Attrs):
    """Attributes of ``cast``."""

    __slots__ = ()
    _fields = (("dtype", None),)


class InitOpAttrs(Attrs):
    """Attributes of ``zeros``/``ones``/``full``."""

    __slots__ = ()
    _fields = (("shape", None), ("dtype", None))


# --------------------------------------------------------------------------- helpers
def _wrap(x, like=None):
    """Python scalars become constants (dtype following ``like``'s annotation when known)."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, (bool, int, float, np.generic)):
        dtype = None
        if like is not None and isinstance(like, Expr):
            t = like._checked_type or getattr(like, "type_annotation", None)
            if isinstance(t, TensorType):
                dtype = t.dtype
        return const(x, dtype)
    if isinstance(x, (list, tuple, np.ndarray)):
        return const(np.asarray(x))
    return x


def _call(name: str, args, attrs=None) -> Call:
    return Call(Op.get(name), list(args), attrs)


def _export(fn):
    __all__.append(fn.__name__)
    return fn


# --------------------------------------------------------------------------- unary ops
_UNARY = (
    "exp", "log", "log2", "log10", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "negative", "abs",
    "floor", "ceil", "round", "trunc", "sign", "sin", "cos", "tan", "sinh", "cosh", "asin",
    "acos", "atan", "asinh", "acosh", "atanh", "fast_exp", "fast_tanh", "fast_erf",
    "logical_not", "bitwise_not", "copy", "stop_gradient",
)

for _name in _UNARY:
    define_op(_name, named(identity_rel, _name), pattern=OpPattern.ELEMWISE, num_inputs=1,
              describe=f"Elementwise {_name}.")

for _name in ("isnan", "isinf", "isfinite"):
    define_op(_name, named(identity_comp_rel, _name), pattern=OpPattern.ELEMWISE, num_inputs=1,
              describe=f"Elementwise {_name} predicate (bool result).")


def _unary_ctor(name):
    def ctor(data):
        return _call(name, [data])

    ctor.__name__ = ctor.__qualname__ = name
    ctor.__doc__ = f"Compute elementwise {name} of data."
    __all__.append(name)
    return ctor


exp = _unary_ctor("exp")
log = _unary_ctor("log")
log2 = _unary_ctor("log2")
log10 = _unary_ctor("log10")
sqrt = _unary_ctor("sqrt")
rsqrt = _unary_ctor("rsqrt")
sigmoid = _unary_ctor("sigmoid")
tanh = _unary_ctor("tanh")
erf = _unary_ctor("erf")
negative = _unary_ctor("negative")
abs = _unary_ctor("abs")  # noqa: A001 - TVM's name
floor = _unary_ctor("floor")
ceil = _unary_ctor("ceil")
round = _unary_ctor("round")  # noqa: A001 - TVM's name
trunc = _unary_ctor("trunc")
sign = _unary_ctor("sign")
sin = _unary_ctor("sin")
cos = _unary_ctor("cos")
tan = _unary_ctor("tan")
sinh = _unary_ctor("sinh")
cosh = _unary_ctor("cosh")
asin = _unary_ctor("asin")
acos = _unary_ctor("acos")
atan = _unary_ctor("atan")
asinh = _unary_ctor("asinh")
acosh = _unary_ctor("acosh")
atanh = _unary_ctor("atanh")
fast_exp = _unary_ctor("fast_exp")
fast_tanh = _unary_ctor("fast_tanh")
fast_erf = _unary_ctor("fast_erf")
logical_not = _unary_ctor("logical_not")
bitwise_not = _unary_ctor("bitwise_not")
copy = _unary_ctor("copy")
stop_gradient = _unary_ctor("stop_gradient")
isnan = _unary_ctor("isnan")
isinf = _unary_ctor("isinf")
isfinite = _unary_ctor("isfinite")


# --------------------------------------------------------------------------- binary ops
_BINARY = (
    "add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power",
    "maximum", "minimum", "logical_and", "logical_or", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "atan2",
)
_COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")

for _name in _BINARY:
    define_op(_name, named(broadcast_rel, _name), pattern=OpPattern.BROADCAST, num_inputs=2,
              describe=f"Elementwise {_name} with numpy-style broadcasting.")
for _name in _COMPARE:
    define_op(_name, named(broadcast_comp_rel, _name), pattern=OpPattern.BROADCAST,
              num_inputs=2, describe=f"Broadcasting comparison {_name} (bool result).")


def _binary_ctor(name):
    def ctor(lhs, rhs):
        return _call(name, [_wrap(lhs, rhs), _wrap(rhs, lhs)])

    ctor.__name__ = ctor.__qualname__ = name
    ctor.__doc__ = f"Broadcasting {name} of lhs and rhs."
    __all__.append(name)
    return ctor


add = _binary_ctor("add")
subtract = _binary_ctor("subtract")
multiply = _binary_ctor("multiply")
divide = _binary_ctor("divide")
floor_divide = _binary_ctor("floor_divide")
mod = _binary_ctor("mod")
floor_mod = _binary_ctor("floor_mod")
power = _binary_ctor("power")
maximum = _binary_ctor("maximum")
minimum = _binary_ctor("minimum")
logical_and = _binary_ctor("logical_and")
logical_or = _binary_ctor("logical_or")
logical_xor = _binary_ctor("logical_xor")
bitwise_and = _binary_ctor("bitwise_and")
bitwise_or = _binary_ctor("bitwise_or")
bitwise_xor = _binary_ctor("bitwise_xor")
left_shift = _binary_ctor("left_shift")
right_shift = _binary_ctor("right_shift")
atan2 = _binary_ctor("atan2")
equal = _binary_ctor("equal")
not_equal = _binary_ctor("not_equal")
less = _binary_ctor("less")
less_equal = _binary_ctor("less_equal")
greater = _binary_ctor("greater")
greater_equal = _binary_ctor("greater_equal")


# --------------------------------------------------------------------------- where
def _where_rel(arg_types, attrs=None):
    check_num_args("where", arg_types, 3)
    cond, x, y = (tensor_arg(arg_types, i, "where") for i in range(3))
    value = broadcast_type("where", [x, y])
    return broadcast_type("where", [TensorType(cond.shape, value.dtype), value])


define_op("where", _where_rel, pattern=OpPattern.BROADCAST, num_inputs=3,
          describe="Select x where condition is true else y, with broadcasting.")


@_export
def where(condition, x, y) -> Call:
    """Select elements from x or y by condition; all three broadcast together."""
    return _call("where", [_wrap(condition), _wrap(x, y), _wrap(y, x)])


# --------------------------------------------------------------------------- clip / cast
def _clip_rel(arg_types, attrs):
    return identity_rel(arg_types, attrs, op_name="clip")


define_op("clip", _clip_rel, pattern=OpPattern.ELEMWISE, attrs_type=ClipAttrs, num_inputs=1,
          describe="Clip values into [a_min, a_max].")


@_export
def clip(a, a_min, a_max) -> Call:
    """Clip the elements of ``a`` into ``[a_min, a_max]``."""
    return _call("clip", [a], ClipAttrs(a_min=float(a_min), a_max=float(a_max)))


def _cast_rel(arg_types, attrs):
    check_num_args("cast", arg_types, 1)
    t = tensor_arg(arg_types, 0, "cast")
    if attrs is None or attrs.dtype is None:
        raise ValueError("cast: the target dtype is missing")
    return TensorType(t.shape, attrs.dtype)


define_op("cast", _cast_rel, pattern=OpPattern.ELEMWISE, attrs_type=CastAttrs, num_inputs=1,
          describe="Cast the data to a new dtype.")


def _cast_like_rel(arg_types, attrs=None):
    check_num_args("cast_like", arg_types, 2)
    t = tensor_arg(arg_types, 0, "cast_like")
    return TensorType(t.shape, tensor_arg(arg_types, 1, "cast_like").dtype)


define_op("cast_like", _cast_like_rel, pattern=OpPattern.ELEMWISE, num_inputs=2,
          describe="Cast the data to the dtype of another tensor.")


@_export
def cast(data, dtype: str) -> Call:
    """Cast ``data`` to ``dtype``."""
    return _call("cast", [_wrap(data)], CastAttrs(dtype=str(dtype)))


@_export
def cast_like(data, dtype_like) -> Call:
    """Cast ``data`` to the dtype of ``dtype_like``."""
    return _call("cast_like", [data, dtype_like])


@_export
def reinterpret(data, dtype: str) -> Call:
    """Reinterpret the bits of ``data`` as ``dtype`` (same bit width)."""
    return _call("reinterpret", [data], CastAttrs(dtype=str(dtype)))


def _reinterpret_rel(arg_types, attrs):
    t = _cast_rel(arg_types, attrs)
    src = tensor_arg(arg_types, 0, "reinterpret")
    if np.dtype(src.dtype).itemsize != np.dtype(t.dtype).itemsize:
        raise TypeError(f"reinterpret: cannot reinterpret {type_str(src)} as {t.dtype}: "
                        "bit widths differ")
    return t


define_op("reinterpret", _reinterpret_rel, pattern=OpPattern.ELEMWISE, attrs_type=CastAttrs,
          num_inputs=1, describe="Reinterpret the bits of the data as another dtype.")


# --------------------------------------------------------------------------- init ops
def _like_rel(arg_types, attrs=None, op_name="zeros_like"):
    check_num_args(op_name, arg_types, 1)
    return tensor_arg(arg_types, 0, op_name)


def _full_like_rel(arg_types, attrs=None):
    check_num_args("full_like", arg_types, 2)
    t = tensor_arg(arg_types, 0, "full_like")
    fill = tensor_arg(arg_types, 1, "full_like")
    if fill.shape != ():
        raise TypeError(f"full_like: the fill value must be a scalar, got {type_str(fill)}")
    return t


def _static_shape(op_name, shape):
    if shape is None:
        raise ValueError(f"{op_name}: a static shape is required")
    return tuple(shape)


def _init_rel(op_name, nargs):
    def rel(arg_types, attrs):
        check_num_args(op_name, arg_types, nargs)
        if nargs:
            fill = tensor_arg(arg_types, 0, op_name)
            if fill.shape != ():
                raise TypeError(f"{op_name}: the fill value must be a scalar, got "
                                f"{type_str(fill)}")
        dtype = attrs.dtype or (arg_types[0].dtype if nargs else "float32")
        return TensorType(_static_shape(op_name, attrs.shape), dtype)

    return rel


define_op("zeros_like", named(_like_rel, "zeros_like"), pattern=OpPattern.ELEMWISE,
          num_inputs=1, describe="Zeros with the shape and dtype of the input.")
define_op("ones_like", named(_like_rel, "ones_like"), pattern=OpPattern.ELEMWISE, num_inputs=1,
          describe="Ones with the shape and dtype of the input.")
define_op("full_like", _full_like_rel, pattern=OpPattern.ELEMWISE, num_inputs=2,
          describe="A tensor like data filled with fill_value.")
define_op("zeros", _init_rel("zeros", 0), pattern=OpPattern.ELEMWISE, attrs_type=InitOpAttrs,
          num_inputs=0, describe="A tensor of zeros.")
define_op("ones", _init_rel("ones", 0), pattern=OpPattern.ELEMWISE, attrs_type=InitOpAttrs,
          num_inputs=0, describe="A tensor of ones.")
define_op("full", _init_rel("full", 1), pattern=OpPattern.ELEMWISE, attrs_type=InitOpAttrs,
          num_inputs=1, describe="A tensor filled with fill_value.")


def _dynamic(shape) -> bool:
    """A Relay expression that is not a constant: the op's ``dyn.*`` twin takes it."""
    from ..expr import Constant

    return isinstance(shape, Expr) and not isinstance(shape, Constant)


def _shape_tuple(shape):
    if isinstance(shape, Expr):
        from .. import expr as _e

        if isinstance(shape, _e.Constant):
            return tuple(int(v) for v in shape.data.numpy().reshape(-1))
        raise ValueError("dynamic shapes (a non-constant shape expression) are not supported")
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


@_export
def zeros(shape, dtype: str) -> Call:
    """A tensor of zeros of the given shape and dtype (a shape expression: ``dyn.zeros``)."""
    if _dynamic(shape):
        from .dyn import _tensor as _dyn

        return _dyn.zeros(shape, str(dtype))
    return _call("zeros", [], InitOpAttrs(shape=_shape_tuple(shape), dtype=str(dtype)))


@_export
def ones(shape, dtype: str) -> Call:
    """A tensor of ones of the given shape and dtype (a shape expression: ``dyn.ones``)."""
    if _dynamic(shape):
        from .dyn import _tensor as _dyn

        return _dyn.ones(shape, str(dtype))
    return _call("ones", [], InitOpAttrs(shape=_shape_tuple(shape), dtype=str(dtype)))


@_export
def full(fill_value, shape=(), dtype: str = "") -> Call:
    """A tensor of ``shape`` filled with the scalar ``fill_value`` (a shape expression:
    ``dyn.full``)."""
    if _dynamic(shape):
        from .dyn import _tensor as _dyn

        return _dyn.full(_wrap(fill_value), shape, str(dtype))
    return _call("full", [_wrap(fill_value)],
                 InitOpAttrs(shape=_shape_tuple(shape), dtype=str(dtype) or None))


@_export
def zeros_like(data) -> Call:
    """Zeros with the shape and dtype of data."""
    return _call("zeros_like", [data])


@_export
def ones_like(data) -> Call:
    """Ones with the shape and dtype of data."""
    return _call("ones_like", [data])


@_export
def full_like(data, fill_value) -> Call:
    """A tensor like data filled with the scalar fill_value."""
    return _call("full_like", [data, _wrap(fill_value, data)])


__all__ += ["ClipAttrs", "CastAttrs", "InitOpAttrs"]


# TVM defines these in relay.op.tensor too; the definitions live with the other transforms.
from .transform import concatenate, stack  # noqa: E402,F401
from .transform_index import ndarray_size, shape_of  # noqa: E402,F401

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("reinterpret", "a bit cast: a numpy view of the same buffer, no copy")
