"""Helpers shared by the compute and reference definitions: registration, shapes, axes,
broadcasting, fast math; the dim and axis rules here are also what the dialects' type relations
import, so both agree on them."""

from __future__ import annotations

import numpy as np

from ..ir.prim_expr import Any
from ..ir.type import TensorType, TupleType, Type
from ..tir import expr as E
from ..tir import op as tir_op

_COMPUTES: dict = {}


def compute(op_name: str):
    """Decorator registering ``fn`` as the compute of operator ``op_name`` (read by
    ``get_compute``; a dialect attaches it to its op, Relay as ``FTECompute``)."""

    def reg(fn):
        _COMPUTES[op_name] = fn
        return fn

    return reg


def get_compute(op_name: str):
    """The compute registered for ``op_name``, or None."""
    return _COMPUTES.get(op_name)


def registered_computes() -> dict:
    """Operator name -> compute, for every operator with a tensor-expression definition."""
    return dict(_COMPUTES)


_REFERENCES: dict = {}


def reference(op_name: str):
    """Decorator registering ``fn`` as the numpy reference of operator ``op_name``:
    ``impl(attrs, args: list[np.ndarray], out_type) -> ndarray | tuple`` (read by
    ``get_reference``; a dialect attaches it to its op, Relay as ``FNumpy``). One function may be
    registered under several names."""

    def reg(fn):
        _REFERENCES[op_name] = fn
        return fn

    return reg


def get_reference(op_name: str):
    """The numpy reference registered for ``op_name``, or None."""
    return _REFERENCES.get(op_name)


def registered_references() -> dict:
    """Operator name -> numpy reference, for every operator with one."""
    return dict(_REFERENCES)


# ------------------------------------------------------------------ dims (ints, Any, symbolic)
def dim_str(d) -> str:
    if isinstance(d, Any):
        return "?"
    if isinstance(d, E.IntImm):
        return str(d.value)
    return repr(d) if isinstance(d, E.PrimExpr) else str(d)


def shape_str(shape) -> str:
    """``(2, ?, n)``: a shape as it reads in error messages."""
    inner = ", ".join(dim_str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def type_str(t: Type) -> str:
    """``Tensor[(2, 3), float32]`` without depending on the printer."""
    if isinstance(t, TensorType):
        return f"Tensor[{shape_str(t.shape)}, {t.dtype}]"
    if isinstance(t, TupleType):
        return "(" + ", ".join(type_str(f) for f in t.fields) + ")"
    return type(t).__name__


def is_static_dim(d) -> bool:
    return isinstance(d, int) and not isinstance(d, bool)


def dims_equal(a, b) -> bool:
    """Provably equal dims: equal ints, or the same symbolic expression (never for Any)."""
    if isinstance(a, Any) or isinstance(b, Any):
        return False
    if is_static_dim(a) and is_static_dim(b):
        return a == b
    if a is b:
        return True
    if is_static_dim(a) or is_static_dim(b):
        return False
    from ..ir.structural import structural_equal

    return bool(structural_equal(a, b, map_free_vars=False))


def dims_product(dims):
    """Product of dims: an int when all are static, Any when any is Any, else a PrimExpr."""
    result = 1
    for d in dims:
        if isinstance(d, Any):
            return Any()
        if is_static_dim(d) and is_static_dim(result):
            result = result * d
        elif is_static_dim(d) and d == 1:
            continue
        elif is_static_dim(result) and result == 1:
            result = d
        else:
            result = result * d
    return result


def arith(fn, *dims):
    """Apply ``fn`` to dims: ints stay ints, any unknown dim gives Any, else a symbolic expr."""
    if any(isinstance(d, Any) for d in dims):
        return Any()
    return fn(*dims)


def pad_tuple(padding, n: int, op_name: str = "op") -> tuple:
    """Expand ``n``-d padding given as 1, n or 2n values to 2n values (all befores, then afters)."""
    if isinstance(padding, int | np.integer):
        return (int(padding),) * (2 * n)
    padding = tuple(int(p) if isinstance(p, int | np.integer) else p for p in padding)
    if len(padding) == 1:
        return padding * (2 * n)
    if len(padding) == n:
        return padding + padding
    if len(padding) == 2 * n:
        return padding
    raise ValueError(
        f"{op_name}: padding must have 1, {n} or {2 * n} values, got {len(padding)}: {padding}"
    )


# ------------------------------------------------------------------ axes
def normalize_axis(axis: int, ndim: int, op_name: str = "op", extra: int = 0) -> int:
    """A possibly negative axis in ``[-ndim-extra, ndim+extra)`` as a non-negative index."""
    lim = ndim + extra
    axis = int(axis)
    if not -lim <= axis < max(lim, 1) or (lim == 0 and axis not in (0, -1)):
        raise ValueError(f"{op_name}: axis {axis} is out of range for a tensor of rank {ndim}")
    return axis + lim if axis < 0 else axis


def reduce_axes(ndim: int, axis, exclude: bool = False, op_name: str = "reduce") -> list[int]:
    """The sorted, de-duplicated axes reduced over (None means all; ``exclude`` complements)."""
    if axis is None:
        return [] if exclude else list(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    picked = []
    for a in axis:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(
                f"{op_name}: reduction axis {a} is out of range for a tensor of rank {ndim}"
            )
        a = a + ndim if a < 0 else a
        if a in picked:
            raise ValueError(f"{op_name}: axis {a} appears more than once")
        picked.append(a)
    picked.sort()
    if exclude:
        return [i for i in range(ndim) if i not in picked]
    return picked


def reduce_shape(shape, axes, keepdims: bool) -> tuple:
    """The shape left by reducing ``axes`` (kept as 1s when ``keepdims``)."""
    out = []
    for i, d in enumerate(shape):
        if i in axes:
            if keepdims:
                out.append(1)
        else:
            out.append(d)
    return tuple(out)


def slice_params(shape, attrs):
    """strided_slice: per-axis (begin, end, stride) of the sliced axes, in Python-slice terms."""
    ndim = len(shape)
    begin, end = list(attrs.begin or ()), list(attrs.end or ())
    strides = list(attrs.strides or (1,))
    if attrs.axes is not None:
        axes = [normalize_axis(a, ndim, "strided_slice") for a in attrs.axes]
        if not len(axes) == len(begin) == len(end):
            raise ValueError("strided_slice: begin, end and axes must have the same length")
    else:
        if len(begin) > ndim or len(end) > ndim:
            dims = ", ".join(str(d) if isinstance(d, int) else
                             "?" if isinstance(d, Any) else repr(d) for d in shape)
            dims = f"({dims},)" if ndim == 1 else f"({dims})"
            raise ValueError(f"strided_slice: begin {begin} / end {end} name more axes than the "
                             f"{ndim} of shape {dims}")
        axes = list(range(max(len(begin), len(end))))
    params = {}
    for k, ax in enumerate(axes):
        stride = strides[k] if k < len(strides) else 1
        if attrs.slice_mode == "size":
            stride = 1
        if stride == 0:
            raise ValueError("strided_slice: a stride cannot be zero")
        b = begin[k] if k < len(begin) else (0 if stride > 0 else None)
        if k < len(end):
            e = end[k]
            if attrs.slice_mode == "size":
                e = None if e is None or e < 0 else (b or 0) + e
        else:
            e = None
        params[ax] = (b, e, stride)
    return params


def pick_piece(idx, starts, load):
    """``load(k)`` for the piece ``k`` that holds position ``idx`` (piece ``k`` starts at
    ``starts[k]``, an int or an expression), by a balanced tree of ``if_then_else``: a uniform
    condition (the axis outside the vector loop) branches, so an element costs O(log n)
    compares and one load, not every piece's loads; the tree is log n deep, however many
    pieces (concatenate, stack)."""
    def tree(lo: int, hi: int):
        if hi - lo == 1:
            return load(lo)
        mid = (lo + hi) // 2
        start = starts[mid]
        start = E.IntImm("int32", start) if isinstance(start, int) else start
        return tir_op.if_then_else(idx < start, tree(lo, mid), tree(mid, hi))

    return tree(0, len(starts))


def static_shape(t) -> tuple[int, ...]:
    """The shape of a TensorType as ints; raises ValueError for symbolic dims."""
    return _shape_of(t, symbolic=False)


def out_dims(t) -> tuple:
    """The shape of a TensorType for a compute: ints where static (then the same as
    ``static_shape``), the ``tir`` expression where symbolic (a Relay function lowered over
    symbolic sizes: ``relay.backend.vm.symbolic``); raises ValueError for an unknown dim."""
    return _shape_of(t, symbolic=True)


def _shape_of(t, symbolic: bool) -> tuple:
    out = []
    for d in t.shape:
        if isinstance(d, E.IntImm):
            out.append(d.value)
        elif isinstance(d, int):
            out.append(d)
        elif symbolic and isinstance(d, E.PrimExpr) and type(d).__name__ != "Any":
            out.append(d)
        else:
            raise ValueError(f"the native back end needs {'known' if symbolic else 'static'} "
                             f"shapes, got {t}")
    return tuple(out)


def dims(t) -> tuple:
    """The shape of a te.Tensor: ints where static (then the same as ``ishape``), the ``tir``
    expression where symbolic."""
    return tuple(d.value if isinstance(d, E.IntImm) else d for d in t.shape)


def prod(xs) -> int:
    """The product of integer-valued dims (1 for none)."""
    out = 1
    for x in xs:
        out *= int(x)
    return out


def out_tensor_types(out_type) -> list[TensorType]:
    return list(out_type.fields) if isinstance(out_type, TupleType) else [out_type]


def ishape(t) -> tuple[int, ...]:
    """Static shape of a te.Tensor."""
    return tuple(int(d) for d in t.shape)


def broadcast_index(t, out_idx) -> list:
    """Indices into ``t`` for the output element ``out_idx`` (numpy broadcasting rules)."""
    shape = dims(t)
    lead = len(out_idx) - len(shape)
    return [E.IntImm(out_idx[lead + k].dtype if hasattr(out_idx[lead + k], "dtype") else "int32",
                     0) if shape[k] == 1 else out_idx[lead + k] for k in range(len(shape))]


def load_bcast(t, out_idx):
    if len(t.shape) == 0:
        return t[()]
    return t[tuple(broadcast_index(t, out_idx))]


def as_float(v, dtype: str = "float32") -> E.PrimExpr:
    """``v`` (a number or an expression) as a ``dtype`` expression: a FloatImm, or a cast where
    the expression has another type."""
    if isinstance(v, E.PrimExpr):
        return v if v.dtype == dtype else E.Cast(dtype, v)
    return E.FloatImm(dtype, float(v))


def i32(v: int) -> E.IntImm:
    """An int32 constant."""
    return E.IntImm("int32", v)


def i64(v) -> E.PrimExpr:
    """``v`` as an int64 expression: an int64 constant of an integer, a cast of an expression
    of another dtype, an int64 expression itself. An integer constant of another dtype stays
    a constant (a shape dim that ``ishape`` can read), not a cast."""
    if isinstance(v, E.IntImm) and v.dtype != "int64":
        return E.IntImm("int64", int(v.value))
    if isinstance(v, E.PrimExpr):
        return v if v.dtype == "int64" else E.Cast("int64", v)
    return E.IntImm("int64", int(v))


def fconst(value: float, dtype: str) -> E.PrimExpr:
    return E.const(value, dtype) if dtype.startswith("float") else E._to_expr(int(value), dtype)


def lowest(dtype: str) -> E.PrimExpr:
    """The identity of a max reduction: -inf for floats (so -inf inputs survive, as numpy),
    the smallest value otherwise (TVM's ``te.max`` starts at the smallest finite float)."""
    if dtype.startswith("float"):
        return E.FloatImm(dtype, float("-inf"))
    return tir_op.min_value(dtype)


def highest(dtype: str) -> E.PrimExpr:
    """The identity of a min reduction: +inf for floats, the largest value otherwise."""
    if dtype.startswith("float"):
        return E.FloatImm(dtype, float("inf"))
    return tir_op.max_value(dtype)


def _ieee_reducer(fcombine, fidentity, name):
    def reducer(*args, **kwargs):
        from .. import te

        return te.comm_reducer(fcombine, fidentity, name=name)(*args, **kwargs)

    reducer.__name__ = name
    return reducer


#: te.max / te.min whose float identity is -inf / +inf (an all -inf window gives -inf)
ieee_max = _ieee_reducer(tir_op.max, lowest, "max")
ieee_min = _ieee_reducer(tir_op.min, highest, "min")


def is_f32(x) -> bool:
    return x.dtype == "float32"


# ------------------------------------------------------------------ vectorizable math (float32)
def _poly(x, coeffs):
    acc = E.FloatImm(x.dtype, coeffs[0])
    for c in coeffs[1:]:
        acc = acc * x + E.FloatImm(x.dtype, c)
    return acc


def fast_exp(x):
    """exp(x) for float32 from LLVM-vectorizable arithmetic (Cephes-style, ~1 ulp)."""
    if x.dtype != "float32":
        return tir_op.exp(x)
    f = lambda v: E.FloatImm("float32", v)  # noqa: E731
    xc = E.Max(E.Min(x, f(88.3762626647949)), f(-87.3365447504))
    n = tir_op.floor(xc * f(1.44269504088896341) + f(0.5))
    r = xc - n * f(0.693359375)
    r = r + n * f(2.12194440e-4)
    p = _poly(r, [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                  1.6666665459e-1, 5.0000001201e-1])
    p = p * r * r + r + f(1.0)
    ni = E.Cast("int32", n) + 127
    scale = tir_op.reinterpret("float32", tir_op.shift_left(ni, E.IntImm("int32", 23)))
    return p * scale


_ERF_A = [-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
          -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
          -1.60960333262415e-02]
_ERF_B = [-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
          -7.37332916720468e-03, -1.42647390514189e-02]


def fast_erf(x):
    """erf(x) for float32 as a rational polynomial (Eigen's approximation, ~1e-7)."""
    if x.dtype != "float32":
        return tir_op.erf(x)
    xc = E.Max(E.Min(x, E.FloatImm("float32", 4.0)), E.FloatImm("float32", -4.0))
    x2 = xc * xc
    return xc * _poly(x2, _ERF_A) / _poly(x2, _ERF_B)


_TANH_A = [-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
           5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
           4.89352455891786e-03]
_TANH_B = [1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
           4.89352518554385e-03]


def fast_tanh(x):
    """tanh(x) for float32 as a rational polynomial (Eigen's approximation)."""
    if x.dtype != "float32":
        return tir_op.tanh(x)
    xc = E.Max(E.Min(x, E.FloatImm("float32", 9.0)), E.FloatImm("float32", -9.0))
    x2 = xc * xc
    return xc * _poly(x2, _TANH_A) / _poly(x2, _TANH_B)


def sigmoid(x):
    one = E.FloatImm(x.dtype, 1.0)
    return one / (one + fast_exp(-x))
