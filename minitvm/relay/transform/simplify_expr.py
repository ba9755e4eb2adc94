"""SimplifyExpr / SimplifyExprPostAlterOp: algebraic and shape simplifications to a fixed point.

Each rewrite is a small function ``rewrite(call) -> Expr | None`` over a call whose operands are
already simplified and typed; the rewrites of TVM's SimplifyExpr, in its order:

* concretize ``zeros_like/ones_like/full_like/reshape_like/collapse_sum_like/broadcast_to_like/
  cast_like`` of a statically shaped operand into the shape-explicit op;
* ``n / sqrt(x)`` into ``n * rsqrt(x)``;
* identities ``x + 0``, ``0 + x``, ``x - 0``, ``x * 1``, ``1 * x``, ``x / 1`` (when the result
  type is x's type);
* consecutive reshapes into one reshape;
* ``transpose(transpose(x))`` into one transpose (or x);
* ``cast(x, dtype)`` of an x already of that dtype into x; ``cast(cast(x))`` into one cast when the
  first one is a widening;
* ``x op full/ones/zeros`` into ``x op scalar`` when the result type is x's type;
* ``(x + c1) * c2`` into ``x * c2 + c1 * c2`` and ``(x op c1) op c2`` into ``x op (c1 op c2)``
  for op in add/multiply and constants c1, c2, in either operand order (TVM's patterns match
  commutatively), x not a constant;
* ``x + x`` into ``x * 2``; a transpose/layout_transform that keeps every axis in place removed;
  ``argmax/argmin/argsort(qnn.dequantize(x))`` into the op on ``x``; casts after a clip whose
  range the cast's dtype holds removed; a clip wider than its dtype removed;
* ``a*x*x + b*x*y + c*y*y`` (constants a, b, c; any operand order) factored into
  ``a * ((x + p*y) * (x + q*y))`` when the discriminant is not negative (TVM's SimplifyBinomial).

A rank-changing layout_transform next to a transpose or another layout_transform folds into one
layout_transform (TVM's FoldRankChangingLayoutTrans). SimplifyExprPostAlterOp runs TVM's
subset: identities, reshapes, same/consecutive casts, clip + casts, clip.
"""

from __future__ import annotations

import numpy as np

from ...ir.gc_pause import gc_paused
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType, TupleType
from ...transform.stats import record_stat
from ..expr import Call, Constant, Tuple, TupleGetItem, const
from ..expr_functor import ExprMutator
from ..op import tensor as _t
from ..op import transform as _tr
from ..op import transform_index as _ti
from ..op.layout import Layout
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["SimplifyExpr", "SimplifyExprPostAlterOp", "simplify_expr", "REWRITES",
           "POST_ALTER_OP_REWRITES"]

MAX_ITERATIONS = 16


# ----------------------------------------------------------------------------- helpers
def _op(name):
    return Op.get(name)


def _is_call(e, name) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _type(e):
    return e._checked_type


def _static_shape(t):
    if not isinstance(t, TensorType):
        return None
    dims = []
    for d in t.shape:
        if not isinstance(d, int | np.integer):
            return None
        dims.append(int(d))
    return tuple(dims)


def _const_value(e):
    """The numpy value of a Constant, or None."""
    return e.data.numpy() if isinstance(e, Constant) else None


def _is_all(e, value) -> bool:
    """``e`` is a constant, or zeros/ones(_like) call, whose every element equals ``value``."""
    v = _const_value(e)
    if v is not None:  # TVM only takes scalar constants here
        return v.ndim == 0 and v.dtype.kind in "biuf" and bool(v == value)
    if value == 0:
        return _is_call(e, "zeros") or _is_call(e, "zeros_like")
    if value == 1:
        return _is_call(e, "ones") or _is_call(e, "ones_like")
    return False


# ----------------------------------------------------------------------------- rewrites
def concretize_zeros_like(call):
    if _is_call(call, "zeros_like") or _is_call(call, "ones_like"):
        shape = _static_shape(_type(call.args[0]))
        if shape is not None:
            ctor = _t.zeros if call.op.name == "zeros_like" else _t.ones
            return ctor(shape, _type(call.args[0]).dtype)
    return None


def concretize_full_like(call):
    if _is_call(call, "full_like"):
        shape = _static_shape(_type(call.args[0]))
        if shape is not None:
            return _t.full(call.args[1], shape, _type(call.args[0]).dtype)
    return None


def concretize_reshape_like(call):
    if _is_call(call, "reshape_like"):
        a = call.attrs
        default = (a is None or (a.lhs_begin == 0 and a.lhs_end is None and a.rhs_begin == 0
                                 and a.rhs_end is None))
        shape = _static_shape(_type(call))
        if default and shape is not None:
            return _tr.reshape(call.args[0], shape)
    return None


def concretize_collapse_sum_like(call):
    if _is_call(call, "collapse_sum_like"):
        shape = _static_shape(_type(call.args[1]))
        if shape is not None:
            return _ti.collapse_sum_to(call.args[0], shape)
    return None


def concretize_broadcast_to_like(call):
    if _is_call(call, "broadcast_to_like"):
        shape = _static_shape(_type(call.args[1]))
        if shape is not None:
            return _ti.broadcast_to(call.args[0], shape)
    return None


def concretize_cast_like(call):
    if _is_call(call, "cast_like") and isinstance(_type(call.args[1]), TensorType):
        return _t.cast(call.args[0], _type(call.args[1]).dtype)
    return None


def simplify_rsqrt(call):
    if _is_call(call, "divide") and _is_call(call.args[1], "sqrt"):
        return _t.multiply(call.args[0], _t.rsqrt(call.args[1].args[0]))
    return None


_IDENTITY = {"add": ((0, 1, 0), (1, 0, 0)), "subtract": ((0, 1, 0),),
             "multiply": ((0, 1, 1), (1, 0, 1)), "divide": ((0, 1, 1),)}


def eliminate_identity(call):
    forms = _IDENTITY.get(call.op.name) if isinstance(call.op, Op) else None
    if not forms or len(call.args) != 2:
        return None
    for keep, unit, value in forms:
        x, u = call.args[keep], call.args[unit]
        if _is_all(u, value) and _type(x) is not None and _type(x) == _type(call):
            return x
    return None


def simplify_reshape(call):
    if not (_is_call(call, "reshape") or _is_call(call, "contrib_reverse_reshape")):
        return None
    x = call.args[0]
    if _is_call(x, "reshape") or _is_call(x, "contrib_reverse_reshape"):
        shape = _static_shape(_type(call))
        if shape is not None:
            return _tr.reshape(x.args[0], shape)
    return None


def _axes(call, ndim):
    axes = call.attrs.axes
    if not axes:
        return list(reversed(range(ndim)))
    return [a + ndim if a < 0 else a for a in axes]


def _permutation(call, ndim):
    """The axis order of a transpose, or of a same-rank layout_transform; None otherwise."""
    if _is_call(call, "transpose"):
        return _axes(call, ndim)
    if _is_call(call, "layout_transform"):
        src, dst = call.attrs.src_layout, call.attrs.dst_layout
        if len(src) == len(dst) == ndim and src.isupper() and sorted(src) == sorted(dst):
            return [src.index(c) for c in dst]
    return None


def _axis_order(call, ndim: int):
    """TVM's GetTransposeAxisOrder: a transpose's axes, or for a layout_transform the source
    position of each of the first ``ndim`` destination axes."""
    if _is_call(call, "transpose"):
        return _axes(call, ndim)
    src, dst = Layout(call.attrs.src_layout), Layout(call.attrs.dst_layout)
    return [src.index_of(dst[i]) for i in range(ndim)]


def _rank_changing(call) -> bool:
    """A layout_transform whose layouts have different numbers of axes (TVM compares the
    strings' lengths, so NCHW8c -> NCHW16c counts there and folds wrongly)."""
    return _is_call(call, "layout_transform") and \
        len(Layout(call.attrs.src_layout)) != len(Layout(call.attrs.dst_layout))


def _fold_rank_changing(data, outer, inner):
    """TVM's FoldRankChangingLayoutTrans: a rank-changing layout_transform next to a transpose
    or another layout_transform becomes one layout_transform of ``data``; None otherwise."""
    desc = None
    if _rank_changing(outer):
        desc = [Layout(outer.attrs.src_layout), Layout(outer.attrs.dst_layout), inner]
    if _rank_changing(inner):
        if desc is None:
            desc = [Layout(inner.attrs.src_layout), Layout(inner.attrs.dst_layout), outer]
        elif desc[0].name != Layout(inner.attrs.dst_layout).name:
            return None  # TVM checks this: back-to-back transforms meet in one layout
        else:
            desc[0] = Layout(inner.attrs.src_layout)
    if desc is None:
        return None
    src, dst, other = desc
    if len(src) < len(dst):
        if not src.name.isupper():
            return None
        order = _axis_order(other, len(src))
        inverse = [0] * len(order)
        for i, a in enumerate(order):
            inverse[a] = i
        return _tr.layout_transform(data, "".join(src.name[i] for i in inverse), dst.name)
    if len(src) > len(dst):
        if not dst.name.isupper():
            return None
        order = _axis_order(other, len(dst))
        return _tr.layout_transform(data, src.name, "".join(dst.name[i] for i in order))
    if _is_call(other, "layout_transform"):
        if src == dst:
            return data
        return _tr.layout_transform(data, src.name, dst.name)
    return None


def simplify_transpose(call):
    """Two consecutive transposes / layout_transforms become one transpose, or one
    layout_transform when either changes rank (TVM's rule; an identity transpose is then
    removed by simplify_noop_transpose)."""
    if not (isinstance(call.args[0] if call.args else None, Call)):
        return None
    inner = call.args[0]
    t = _type(inner.args[0]) if inner.args else None
    if not isinstance(t, TensorType):
        return None
    if not (_is_call(call, "transpose") or _is_call(call, "layout_transform")) or not (
            _is_call(inner, "transpose") or _is_call(inner, "layout_transform")):
        return None
    folded = _fold_rank_changing(inner.args[0], call, inner)
    if folded is not None:
        if _is_call(folded, "layout_transform") and \
                folded.attrs.src_layout == folded.attrs.dst_layout:
            return inner.args[0]
        return folded
    if _is_call(call, "layout_transform") and _is_call(inner, "layout_transform") and \
            call.attrs.dst_layout == inner.attrs.src_layout and \
            call.attrs.src_layout == inner.attrs.dst_layout:
        return inner.args[0]  # a blocked layout there and back (TVM: an identity transpose)
    ndim = len(t.shape)
    first, second = _permutation(inner, ndim), _permutation(call, ndim)
    if first is None or second is None:
        return None
    return _tr.transpose(inner.args[0], [first[a] for a in second])


def simplify_noop_transpose(call):
    t = _type(call)
    if not isinstance(t, TensorType) or not call.args:
        return None
    if _is_call(call, "layout_transform") and \
            call.attrs.src_layout != call.attrs.dst_layout:
        return None
    perm = _permutation(call, len(t.shape)) if _is_call(call, "transpose") else (
        list(range(len(t.shape))) if _is_call(call, "layout_transform") else None)
    if perm is not None and perm == list(range(len(t.shape))):
        return call.args[0]
    return None


def simplify_same_cast(call):
    if _is_call(call, "cast") and isinstance(_type(call.args[0]), TensorType):
        if _type(call.args[0]).dtype == call.attrs.dtype:
            return call.args[0]
    return None


def _kind_bits(dtype: str):
    from .canonicalize_cast import dtype_bits

    kind = "bool" if dtype == "bool" else dtype.rstrip("0123456789")
    return kind, dtype_bits(dtype)


def simplify_consecutive_cast(call):
    if not (_is_call(call, "cast") and _is_call(call.args[0], "cast")):
        return None
    x = call.args[0].args[0]
    if not isinstance(_type(x), TensorType):
        return None
    k0, b0 = _kind_bits(_type(x).dtype)
    k1, b1 = _kind_bits(call.args[0].attrs.dtype)
    if k0 == k1 and b1 >= b0:  # the first cast loses nothing
        target = call.attrs.dtype
        return x if target == _type(x).dtype else _t.cast(x, target)
    return None


def _scalar_fill(e, dtype):
    """The fill value of a full/ones/zeros(_like) call as TVM passes it on (the fill constant
    itself, or a ``dtype`` scalar 1/0), or None."""
    for name, value in (("ones", 1), ("ones_like", 1), ("zeros", 0), ("zeros_like", 0)):
        if _is_call(e, name):
            return const(value, dtype)
    if _is_call(e, "full") or _is_call(e, "full_like"):
        value = e.args[-1]
        if isinstance(value, Constant) and value.data.shape == ():
            return value
    return None


def full_elementwise(call):
    """``op(full, x)`` / ``op(x, full)`` for a broadcast-pattern op: pass the fill value. Not for
    a namespaced op (``nn.bias_add``'s bias, ``nn.prelu``'s alpha must stay 1-D tensors: a scalar
    does not type check)."""
    if not (isinstance(call.op, Op) and len(call.args) == 2 and "." not in call.op.name
            and call.op.get_attr("TOpPattern") == OpPattern.BROADCAST):
        return None
    dtype = getattr(_type(call), "dtype", None)
    for i in (1, 0):
        fill = _scalar_fill(call.args[i], dtype)
        other = call.args[1 - i]
        if fill is not None and _type(other) is not None and _type(other) == _type(call):
            args = [other, fill] if i == 1 else [fill, other]
            return Call(call.op, args, call.attrs, call.type_args)
    return None


def _with_constant(call, name):
    """``(x, c)`` where ``call`` is ``name(x, c)`` or ``name(c, x)`` with ``c`` a Constant (the
    written order tried first, as TVM's DFPattern matches a commutative op); None else."""
    if not _is_call(call, name):
        return None
    a, b = call.args
    if isinstance(b, Constant):
        return a, b
    if isinstance(a, Constant):
        return b, a
    return None


def _fold(fn, c1, c2):
    """``fn(c1, c2)`` of two same-dtype constants, folded at once (TVM's FoldConstantExpr);
    None for constants of different dtypes."""
    v1, v2 = c1.data.numpy(), c2.data.numpy()
    if v1.dtype != v2.dtype:
        return None
    return const(np.asarray(fn(v1, v2)).astype(v1.dtype), str(v1.dtype))


def switch_add_multiply(call):
    """``(x + c1) * c2`` into ``x * c2 + c1 * c2`` (either operand order of both ops; not when
    ``x`` is itself a constant), TVM's SwitchAddMultiply."""
    outer = _with_constant(call, "multiply")
    inner = outer and _with_constant(outer[0], "add")
    if not inner or isinstance(inner[0], Constant):
        return None
    (x, c1), c2 = inner, outer[1]
    folded = _fold(np.multiply, c1, c2)
    return None if folded is None else _t.add(_t.multiply(x, c2), folded)


def simplify_adjacent_multiply_or_add(call):
    """``(x op c1) op c2`` into ``x op (c1 op c2)`` for op in multiply / add (either operand
    order of both; not when ``x`` is itself a constant), TVM's SimplifyAdjacentMultiplyOrAdd.
    For floats it changes a result by a rounding (``(x + a) + b`` vs ``x + (a + b)``), as
    TVM's does."""
    for name, fn in (("multiply", np.multiply), ("add", np.add)):
        outer = _with_constant(call, name)
        inner = outer and _with_constant(outer[0], name)
        if inner and not isinstance(inner[0], Constant):
            folded = _fold(fn, inner[1], outer[1])
            if folded is not None:
                return Call(call.op, [inner[0], folded], call.attrs, call.type_args)
    return None


def simplify_add(call):
    """``x + x`` into ``x * 2``."""
    if _is_call(call, "add") and call.args[0] is call.args[1] and isinstance(
            _type(call), TensorType):
        return _t.multiply(call.args[0], const(2, _type(call).dtype))
    return None


def simplify_dq_arg(call):
    """``argmax/argmin/argsort(qnn.dequantize(x))`` into the op on ``x`` (dequantize keeps
    the order)."""
    for name in ("argmax", "argmin", "argsort"):
        if _is_call(call, name) and _is_call(call.args[0], "qnn.dequantize"):
            return Call(call.op, [call.args[0].args[0]], call.attrs, call.type_args)
    return None


def _dtype_range(dtype: str):
    if dtype == "bool":
        return 0.0, 1.0
    info = np.iinfo(dtype) if dtype.startswith(("int", "uint")) else np.finfo(
        "float16" if dtype == "bfloat16" else dtype)
    return float(info.min), float(info.max)


def simplify_clip_and_consecutive_cast(call):
    """``cast(...cast(clip(x)))``: casts whose dtype holds the clip's range are dropped (a final
    cast to the result dtype stays when needed), as TVM does."""
    if not _is_call(call, "cast"):
        return None
    chain = [call]
    inner = call.args[0]
    while _is_call(inner, "cast"):
        chain.append(inner)
        inner = inner.args[0]
    if not _is_call(inner, "clip"):
        return None
    lo, hi = float(inner.attrs.a_min), float(inner.attrs.a_max)
    src = _type(inner).dtype if isinstance(_type(inner), TensorType) else None

    def lossless(dtype: str) -> bool:
        """The clipped values keep their value through ``dtype``: an integer clip into an
        integer type holding its range, or a float into a float at least as wide (a float
        clipped into int32's range still loses its fraction through an int32 cast)."""
        if src is None:
            return False
        k0, b0 = _kind_bits(src)
        k1, b1 = _kind_bits(dtype)
        if k0 in ("int", "uint", "bool"):
            return k1 in ("int", "uint", "bool") or (k1 == "float" and b1 > b0)
        return k0 == k1 == "float" and b1 >= b0

    kept = [c for c in chain if not (lossless(c.attrs.dtype)
                                     and _dtype_range(c.attrs.dtype)[0] <= lo
                                     and hi <= _dtype_range(c.attrs.dtype)[1])]
    target = _type(call).dtype
    last = kept[0].attrs.dtype if kept else _type(inner).dtype
    dtypes = [c.attrs.dtype for c in reversed(kept)] + ([] if last == target else [target])
    if dtypes == [c.attrs.dtype for c in reversed(chain)]:
        # (the same chain again: rebuilt, it would stop sharing its inner casts, so that
        # ``cast(clip(x), "uint8")`` read by a conv and by ``cast(., "float32")`` became two)
        return None
    out = inner
    for dt in dtypes:
        out = _t.cast(out, dt)
    return out


def simplify_clip(call):
    """A clip whose bounds cover the whole range of its dtype is removed (not after
    qnn.requantize / qnn.add, whose clip oneDNN legalization expects)."""
    if not _is_call(call, "clip") or not isinstance(_type(call), TensorType):
        return None
    x = call.args[0]
    if _is_call(x, "qnn.requantize") or _is_call(x, "qnn.add"):
        return None
    lo, hi = _dtype_range(_type(call).dtype)
    if float(call.attrs.a_min) <= lo and float(call.attrs.a_max) >= hi:
        return x
    return None


_BINOMIAL = None


def _binomial_pattern():
    """TVM's SimplifyBinomial pattern, built once: the wildcards and constants it binds."""
    global _BINOMIAL
    if _BINOMIAL is None:
        from ..dataflow_pattern import is_constant, is_op, wildcard

        x, y = wildcard(), wildcard()
        a, b, c = is_constant(), is_constant(), is_constant()
        add, mul = is_op("add"), is_op("multiply")
        x_sq = mul(a, mul(x, x)) | mul(x, mul(a, x)) | mul(x, x)
        xy = mul(b, mul(x, y)) | mul(x, mul(b, y)) | mul(y, mul(b, x)) | mul(x, y)
        y_sq = mul(c, mul(y, y)) | mul(y, mul(c, y)) | mul(y, y)
        pattern = add(add(xy, x_sq), y_sq) | add(add(xy, y_sq), x_sq) | add(add(x_sq, y_sq), xy)
        _BINOMIAL = (pattern, x, y, a, b, c)
    return _BINOMIAL


def _scalar_const(dtype: str, value: float):
    return const(np.array(value).astype(dtype), dtype)


def _binomial_shaped(call) -> bool:
    """Whether ``call`` (an add) can match the binomial pattern at all: one operand an add of
    two multiplies, the other a multiply (either order: add commutes in the matcher). Every
    other add, a ladder's 100,000 of them, skips the matcher's ~100 pattern visits."""
    if len(call.args) != 2:
        return False
    a, b = call.args
    for s, m in ((a, b), (b, a)):
        if (_is_call(m, "multiply") and _is_call(s, "add") and len(s.args) == 2
                and _is_call(s.args[0], "multiply") and _is_call(s.args[1], "multiply")):
            return True
    return False


def simplify_binomial(call):
    """``a*x*x + b*x*y + c*y*y`` into ``a * ((x + p*y) * (x + q*y))`` (p, q the roots of
    a*t*t - b*t + c, one shared factor when they coincide); unchanged if they are complex."""
    if not _is_call(call, "add") or not isinstance(_type(call), TensorType):
        return None
    if not _binomial_shaped(call):
        return None
    from ..dataflow_pattern.matcher import DFPatternMatcher

    pattern, px, py, pa, pb, pc = _binomial_pattern()
    m = DFPatternMatcher(call)
    if not m.match(pattern, call):
        return None
    dtype = _type(call).dtype
    vals = []
    for p in (pa, pb, pc):
        v = 1.0
        if p in m.memo and dtype in ("int32", "float32", "float64"):
            v = float(np.asarray(m.memo[p][0].data.numpy()).reshape(-1)[0])
        vals.append(v)
    a, b, c = vals
    x, y = m.memo[px][0], m.memo[py][0]
    if c == 1 and a > 1:  # TVM normalizes to the leading coefficient 1 when it can
        x, y, a, c = y, x, c, a
    disc2 = b * b - 4 * a * c
    if disc2 < 0:
        return None
    same = disc2 < 10e-5
    disc = float(np.sqrt(disc2))
    first = _scalar_const(dtype, (b + disc) / (2 * a))
    second = first if same else _scalar_const(dtype, (b - disc) / (2 * a))
    m1 = _t.add(x, _t.multiply(y, first))
    m2 = m1 if same else _t.add(x, _t.multiply(y, second))
    return _t.multiply(_scalar_const(dtype, a), _t.multiply(m1, m2))


REWRITES = (
    concretize_zeros_like, concretize_full_like, concretize_reshape_like,
    concretize_collapse_sum_like, concretize_broadcast_to_like, concretize_cast_like,
    simplify_add, simplify_rsqrt, eliminate_identity, simplify_reshape, simplify_transpose,
    simplify_noop_transpose, simplify_same_cast, simplify_consecutive_cast, full_elementwise,
    switch_add_multiply, simplify_adjacent_multiply_or_add, simplify_dq_arg,
    simplify_clip_and_consecutive_cast, simplify_clip, simplify_binomial,
)
POST_ALTER_OP_REWRITES = (eliminate_identity, simplify_reshape, simplify_same_cast,
                          simplify_consecutive_cast, simplify_clip_and_consecutive_cast,
                          simplify_clip)

# The op names of the calls each rewrite can fire on (it returns None on any other call), so
# that a call is offered only to the rewrites of its op: trying all 21 on every call was most
# of a pass over a big program. A rewrite not listed here (full_elementwise: any broadcast op;
# a caller's own) is offered every call.
_ROOT_OPS = {
    concretize_zeros_like: ("zeros_like", "ones_like"), concretize_full_like: ("full_like",),
    concretize_reshape_like: ("reshape_like",),
    concretize_collapse_sum_like: ("collapse_sum_like",),
    concretize_broadcast_to_like: ("broadcast_to_like",), concretize_cast_like: ("cast_like",),
    simplify_add: ("add",), simplify_rsqrt: ("divide",), eliminate_identity: tuple(_IDENTITY),
    simplify_reshape: ("reshape", "contrib_reverse_reshape"),
    simplify_transpose: ("transpose", "layout_transform"),
    simplify_noop_transpose: ("transpose", "layout_transform"), simplify_same_cast: ("cast",),
    simplify_consecutive_cast: ("cast",), switch_add_multiply: ("multiply",),
    simplify_adjacent_multiply_or_add: ("multiply", "add"),
    simplify_dq_arg: ("argmax", "argmin", "argsort"),
    simplify_clip_and_consecutive_cast: ("cast",), simplify_clip: ("clip",),
    simplify_binomial: ("add",),
}


def _rewrites_for(rewrites, op_name: str) -> tuple:
    """The rewrites of ``rewrites`` (in order) that can fire on a call of ``op_name``."""
    return tuple(r for r in rewrites
                 if _ROOT_OPS.get(r) is None or op_name in _ROOT_OPS[r])


# ----------------------------------------------------------------------------- driver
def _type_new(e):
    """Give a freshly built node its type from its (typed) operands; False if impossible."""
    if e._checked_type is not None:
        return True
    if isinstance(e, Constant):
        e._checked_type = TensorType(e.data.shape, e.data.dtype)
        return True
    if isinstance(e, Tuple):
        if all(_type_new(f) for f in e.fields):
            e._checked_type = TupleType([f._checked_type for f in e.fields])
            return True
        return False
    if isinstance(e, TupleGetItem):
        if _type_new(e.tuple_value) and isinstance(e.tuple_value._checked_type, TupleType):
            e._checked_type = e.tuple_value._checked_type.fields[e.index]
            return True
        return False
    if isinstance(e, Call) and isinstance(e.op, Op):
        rel = e.op.get_attr("FTypeRelation")
        if rel is None or not all(_type_new(a) for a in e.args):
            return False
        e._checked_type = rel([a._checked_type for a in e.args], e.attrs)
        return True
    return False


def _same_type_as_rebuilt(new, old) -> bool:
    """Type ``new``, a rebuild of call ``old`` with the same op and attrs, with ``old``'s type
    when every argument kept its type (a type relation depends on nothing else)."""
    t = old._checked_type
    if t is None or type(new) is not Call or new.op is not old.op or new.attrs is not old.attrs:
        return False
    for a, b in zip(new.args, old.args, strict=True):
        ta, tb = a._checked_type, b._checked_type
        if ta is None or (ta is not tb and ta != tb):
            return False
    new._checked_type = t
    return True


class _Simplifier(ExprMutator):
    def __init__(self, rewrites):
        super().__init__()
        self.rewrites = rewrites
        self.count = 0
        self._by_op: dict = {}  # op -> the rewrites that can fire on its calls

    def visit_call(self, call):
        new = super().visit_call(call)
        if new is not call and not _same_type_as_rebuilt(new, call):
            _type_new(new)
        by_op = self._by_op
        for _ in range(MAX_ITERATIONS):
            if not (isinstance(new, Call) and isinstance(new.op, Op)) or new._checked_type is None:
                break
            rewrites = by_op.get(new.op)
            if rewrites is None:
                rewrites = by_op[new.op] = _rewrites_for(self.rewrites, new.op.name)
            for rewrite in rewrites:
                out = rewrite(new)
                if out is not None and out is not new:
                    if out._checked_type is None and not _type_new(out):
                        continue
                    self.count += 1
                    new = out
                    break
            else:
                break
        return new

    def visit_tuple(self, tup):
        new = super().visit_tuple(tup)
        if new is not tup:
            _type_new(new)
        return new

    def visit_tuple_getitem(self, op):
        new = super().visit_tuple_getitem(op)
        if new is not op:
            _type_new(new)
        return new


@gc_paused
def simplify_expr(expr, rewrites=REWRITES):
    """Apply ``rewrites`` bottom-up until nothing changes (at most MAX_ITERATIONS rounds).

    ``expr`` must be type-checked; returns the simplified expression.
    """
    return _simplify_counted(expr, rewrites)[0]


def _simplify_counted(expr, rewrites):
    """``simplify_expr`` plus the number of rewrites applied over all rounds."""
    total = 0
    for _ in range(MAX_ITERATIONS):
        simplifier = _Simplifier(rewrites)
        out = simplifier.visit(expr)
        total += simplifier.count
        if out is expr or simplifier.count == 0:
            return out, total
        expr = out
    return expr, total


def _counting_transform(rewrites):
    def transform(func, mod, ctx):
        out, n = _simplify_counted(func, rewrites)
        record_stat("simplified expressions", n)
        return out

    return transform


@register("SimplifyExpr")
def SimplifyExpr():  # noqa: N802 - TVM's name
    """Function pass (opt 0, requires InferType): simplify expressions by pattern rewrites."""
    return function_pass(_counting_transform(REWRITES), opt_level=0, name="SimplifyExpr",
                         required=["InferType"], needs=["typed"])


@register("SimplifyExprPostAlterOp")
def SimplifyExprPostAlterOp():  # noqa: N802 - TVM's name
    """Function pass (opt 0, requires InferType): the identity and reshape rewrites only."""
    return function_pass(_counting_transform(POST_ALTER_OP_REWRITES), opt_level=0,
                         name="SimplifyExprPostAlterOp", required=["InferType"],
                         needs=["typed"])
