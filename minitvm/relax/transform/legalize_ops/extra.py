"""Legalization of the ops added after the first set (``relax.op.manipulate_extra``,
``sorting``, ``qdq``, ``nn.nn_extra``) onto ``topi.transform_extra`` and the shared nn / math
computes: one ``bb.call_te`` each, PrimFuncs named as TVM names them."""

from __future__ import annotations

from ....tir import expr as E
from ....tir import op as tir_op
from ....topi import broadcast as topi_bcast
from ....topi import manipulation as topi_manip
from ....topi import math as topi_math
from ....topi import nn_te
from ....topi import selection as topi_sel
from ....topi import transform_extra as tx
from ...expr import Tuple, TupleGetItem
from .common import (
    LegalizeError,
    arg_dtype,
    arg_shape,
    call_topi,
    out_dtype,
    out_shape,
    prim_arg,
    register_legalize,
)

__all__: list[str] = []


def _fields(bb, tup):
    if isinstance(tup, Tuple):
        return list(tup.fields)
    return [bb.emit(TupleGetItem(tup, k)) for k in range(len(tup.struct_info.fields))]


@register_legalize("relax.flip")
def _flip(bb, call):
    axis = int(call.attrs.axis)
    return call_topi(bb, lambda x: tx.flip(x, axis), call.args[0], name="flip")


@register_legalize("relax.tile")
def _tile(bb, call):
    reps = [int(r) for r in call.attrs.repeats]
    return call_topi(bb, lambda x: tx.tile(x, reps), call.args[0], name="tile")


@register_legalize("relax.stack")
def _stack(bb, call):
    axis = int(call.attrs.axis)
    return call_topi(bb, lambda xs: tx.stack(xs, axis), _fields(bb, call.args[0]), name="stack")


@register_legalize("relax.one_hot")
def _one_hot(bb, call):
    on, off = prim_arg(call, 1), prim_arg(call, 2)
    a = call.attrs
    dtype = out_dtype(call)
    return call_topi(bb, lambda i: tx.one_hot(i, on, off, int(a.depth), int(a.axis), dtype),
                     call.args[0], name="one_hot")


@register_legalize("relax.gather_elements")
def _gather_elements(bb, call):
    axis = int(call.attrs.axis)
    return call_topi(bb, lambda x, i: tx.gather_elements(x, i, axis), *call.args,
                     name="gather_elements")


@register_legalize("relax.gather_nd")
def _gather_nd(bb, call):
    nb = int(call.attrs.batch_dims)
    return call_topi(bb, lambda x, i: tx.gather_nd(x, i, nb), *call.args, name="gather_nd")


def _collapse(bb, call):
    target = out_shape(call)
    return call_topi(bb, lambda x: tx.collapse_sum(x, target), call.args[0],
                     name="collapse_sum")


register_legalize("relax.collapse_sum_like", _collapse)
register_legalize("relax.collapse_sum_to", _collapse)


@register_legalize("relax.meshgrid")
def _meshgrid(bb, call):
    indexing = call.attrs.indexing
    return call_topi(bb, lambda xs: tx.meshgrid(xs, indexing), _fields(bb, call.args[0]),
                     name="meshgrid")


@register_legalize("relax.outer")
def _outer(bb, call):
    def te_func(a, b):
        a2 = topi_manip.expand_dims(a, [1])
        return topi_bcast.binary("multiply", a2, b, out_shape(call))

    return call_topi(bb, te_func, *call.args, name="outer")


@register_legalize("relax.log_add_exp")
def _log_add_exp(bb, call):
    shape = out_shape(call)

    def te_func(a, b):
        from .... import te

        def body(*i):
            x = topi_bcast.broadcast_load(a, i, shape)
            y = topi_bcast.broadcast_load(b, i, shape)
            hi = E.Max(x, y)
            # exp(-|x - y|): NaN for inf - inf when both are the same infinity, so use hi then
            d = E.Select(E.EQ(x, y), E.FloatImm(x.dtype, 0.0), -tir_op.fabs(x - y))
            return hi + tir_op.log1p(tir_op.exp(d))

        return te.compute(shape, body, name="T_log_add_exp",
                          varargs_names=topi_bcast.ax_names(len(shape)))

    return call_topi(bb, te_func, *call.args, name="log_add_exp")


@register_legalize("relax.eye")
def _eye(bb, call):
    n, m = out_shape(call)
    k = prim_arg(call, 2)
    dtype = out_dtype(call)
    return call_topi(bb, lambda: tx.eye(n, m, k, dtype), name="eye")


@register_legalize("relax.eye_like")
def _eye_like(bb, call):
    n, m = out_shape(call)
    k = prim_arg(call, 1)
    dtype = out_dtype(call)
    return call_topi(bb, lambda x: tx.eye(n, m, k, dtype), call.args[0], name="eye_like")


@register_legalize("relax.bucketize")
def _bucketize(bb, call):
    right = bool(call.attrs.right)
    dtype = out_dtype(call)
    return call_topi(bb, lambda x, b: tx.bucketize(x, b, right, dtype), *call.args,
                     name="bucketize")


@register_legalize("relax.ewise_fma")
def _ewise_fma(bb, call):
    from .... import te

    def te_func(a, b, c):
        return te.compute(a.shape, lambda *i: a[i] * b[i] + c[i], name="T_ewise_fma",
                          varargs_names=topi_bcast.ax_names(len(a.shape)))

    return call_topi(bb, te_func, *call.args, name="ewise_fma")


# --------------------------------------------------------------------------- sorting
# Sorting states the selection order of ``topi.selection`` (ties in input order, NaN last both
# ways; ``sort`` descending the ascending order reversed) as its rank / pick stages, which
# ``schedule.raise_scan`` raises to the one-pass-per-row selection where shapes are static.
@register_legalize("relax.sort")
def _sort(bb, call):
    a = call.attrs

    def te_func(x):
        idx = topi_sel.ranked_indices(x, x.shape[int(a.axis) % len(x.shape)], int(a.axis),
                                      False, "int32")
        return topi_sel.gather(x, idx, int(a.axis), "T_sort", reverse=bool(a.descending))

    return call_topi(bb, te_func, call.args[0], name="sort")


@register_legalize("relax.argsort")
def _argsort(bb, call):
    a = call.attrs
    return call_topi(bb, lambda x: topi_sel.ranked_indices(
        x, x.shape[int(a.axis) % len(x.shape)], int(a.axis), bool(a.descending), a.dtype),
        call.args[0], name="argsort")


@register_legalize("relax.topk")
def _topk(bb, call):
    a = call.attrs

    def te_func(x):
        idx = topi_sel.ranked_indices(x, int(a.k), int(a.axis), bool(a.largest), a.dtype)
        if a.ret_type == "indices":
            return idx
        vals = topi_sel.gather(x, idx, int(a.axis))
        return vals if a.ret_type == "values" else [vals, idx]

    return call_topi(bb, te_func, call.args[0], name="topk")


# --------------------------------------------------------------------------- qdq
@register_legalize("relax.quantize")
def _quantize(bb, call):
    a = call.attrs
    return call_topi(bb, lambda x, s, z: tx.quantize(x, s, z, int(a.axis), a.out_dtype),
                     *call.args, name="quantize")


@register_legalize("relax.dequantize")
def _dequantize(bb, call):
    a = call.attrs
    return call_topi(bb, lambda x, s, z: tx.dequantize(x, s, z, int(a.axis), a.out_dtype),
                     *call.args, name="dequantize")


# --------------------------------------------------------------------------- nn
@register_legalize("relax.nn.prelu")
def _prelu(bb, call):
    axis = int(call.attrs.axis) % len(arg_shape(call, 0))

    def te_func(x, alpha):
        def f(*i):
            al = alpha[(E.IntImm("int64", 0),)] if (
                isinstance(alpha.shape[0], E.IntImm) and alpha.shape[0].value == 1) \
                else alpha[(i[axis],)]
            return E.Select(x[i] > topi_bcast.const_like(0, x.dtype), x[i], x[i] * al)

        from .... import te

        return te.compute(x.shape, f, name="compute")

    return call_topi(bb, te_func, *call.args, name="prelu")


@register_legalize("relax.nn.softplus")
def _softplus(bb, call):
    beta, thr = float(call.attrs.beta), float(call.attrs.threshold)

    def f(v):
        b = E.FloatImm(v.dtype, beta)
        bx = v * b
        soft = tir_op.log1p(tir_op.exp(E.Min(bx, E.FloatImm(v.dtype, thr)))) / b
        return E.Select(bx > E.FloatImm(v.dtype, thr), v, soft)

    return call_topi(bb, lambda x: topi_math.elemwise(x, f), call.args[0], name="softplus")


@register_legalize("relax.nn.selu")
def _selu(bb, call):
    alpha, scale = 1.6732632423543772, 1.0507009873554805

    def f(v):
        neg = E.FloatImm(v.dtype, alpha) * (tir_op.exp(E.Min(v, E.FloatImm(v.dtype, 0.0)))
                                            - E.FloatImm(v.dtype, 1.0))
        return E.FloatImm(v.dtype, scale) * E.Select(v > E.FloatImm(v.dtype, 0.0), v, neg)

    return call_topi(bb, lambda x: topi_math.elemwise(x, f), call.args[0], name="selu")


@register_legalize("relax.nn.pixel_shuffle")
def _pixel_shuffle(bb, call):
    r = int(call.attrs.upscale_factor)
    return call_topi(bb, lambda x: tx.pixel_shuffle(x, r), call.args[0], name="pixel_shuffle")


@register_legalize("relax.nn.batch_flatten")
def _batch_flatten(bb, call):
    shape = out_shape(call)
    return call_topi(bb, lambda x: topi_manip.reshape(x, shape), call.args[0],
                     name="batch_flatten")


@register_legalize("relax.nn.instance_norm")
def _instance_norm(bb, call):
    a = call.attrs
    axes = [int(v) for v in a.axes]
    return call_topi(bb, lambda x, g, b: tx.instance_norm(
        x, g, b, int(a.channel_axis), axes, float(a.epsilon), bool(a.center), bool(a.scale)),
        *call.args, name="instance_norm")


@register_legalize("relax.nn.attention_bias")
def _attention_bias(bb, call):
    a = call.attrs
    scale = None if a.scale is None else float(a.scale)
    return call_topi(bb, lambda q, k, v, b: nn_te.attention(
        q, k, v, b, scale, a.causal_mask, a.window_size), *call.args, name="attention_bias")


@register_legalize("relax.nn.cross_entropy_with_logits")
def _cross_entropy(bb, call):
    return call_topi(bb, tx.cross_entropy_with_logits, *call.args,
                     name="cross_entropy_with_logits")


@register_legalize("relax.nn.nll_loss")
def _nll_loss(bb, call):
    a = call.attrs

    def te_func(p, t, *w):
        return tx.nll_loss(p, t, w[0] if w else None, a.reduction, int(a.ignore_index))

    return call_topi(bb, te_func, *call.args, name="nll_loss")


@register_legalize("relax.index_tensor")
def _index_tensor(bb, call):
    x_nd = len(arg_shape(call, 0))
    idx = _fields(bb, call.args[1])
    shape = out_shape(call)
    bshape = shape[:len(shape) - (x_nd - len(idx))]
    return call_topi(bb, lambda x, ts: tx.index_tensor(x, ts, bshape), call.args[0], idx,
                     name="index_tensor")


@register_legalize("relax.slice_scatter")
def _slice_scatter(bb, call):
    start, step = prim_arg(call, 2), prim_arg(call, 4)
    if not isinstance(step, E.IntImm):
        raise LegalizeError(f"relax.slice_scatter: the step must be a static integer to "
                            f"legalize, got {step}")
    axis = int(call.attrs.axis)
    nd = len(arg_shape(call, 0))
    n = arg_shape(call, 0)[axis % nd]
    from ....topi.transform_extra import clamp_index

    st = start  # a negative start counts from the end of the axis
    if not (isinstance(start, E.IntImm) and start.value >= 0):
        st = clamp_index(start, n)
    return call_topi(bb, lambda x, s: tx.slice_scatter(x, s, st, int(step.value), axis),
                     call.args[0], call.args[1], name="slice_scatter")


@register_legalize("relax.hamming_window")
def _hamming_window(bb, call):
    (size,) = out_shape(call)
    per, alpha, beta = prim_arg(call, 1), prim_arg(call, 2), prim_arg(call, 3)
    dtype = out_dtype(call)
    return call_topi(bb, lambda: tx.hamming_window(size, per, alpha, beta, dtype),
                     name="hamming_window")


@register_legalize("relax.wrap_param")
def _wrap_param(bb, call):
    dtype = out_dtype(call)
    return call_topi(bb, lambda x: topi_math.cast(x, dtype), call.args[0], name="cast")


@register_legalize("relax.multinomial_from_uniform")
def _multinomial(bb, call):
    dtype = out_dtype(call)
    return call_topi(bb, lambda p, u, i: tx.multinomial_from_uniform(p, u, i, dtype),
                     *call.args, name="multinomial_from_uniform")


# --------------------------------------------------------------------------- set ops
def _run_nonzero(x):
    """``relax.run.nonzero``: the indices of the non-zero elements, shape (ndim, count)."""
    import numpy as np

    a = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    return np.ascontiguousarray(np.stack(np.nonzero(a)).astype("int64").reshape(a.ndim, -1))


def _run_unique(x, sorted_, return_index, return_inverse, return_counts, axis=None):
    """``relax.run.unique``: numpy's ``unique`` (first-occurrence order when not sorted)."""
    import numpy as np

    a = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    ax = None if axis is None or isinstance(axis, tuple) else int(axis)
    vals, first, inv, cnt = np.unique(a, return_index=True, return_inverse=True,
                                      return_counts=True, axis=ax)
    if not bool(sorted_):  # reorder by first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        vals = np.take(vals, order, axis=0 if ax is None else ax)
        first, cnt, inv = first[order], cnt[order], rank[inv.reshape(-1)]
    outs = [np.ascontiguousarray(vals)]
    for flag, arr in ((return_index, first), (return_inverse, inv), (return_counts, cnt)):
        if bool(flag):
            outs.append(np.ascontiguousarray(np.asarray(arr).reshape(-1).astype("int64")))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _register_runtime_funcs():
    from ....runtime.registry import get_global_func, register_func
    from ....runtime.relax_vm.numpy_packed import mark_numpy_packed

    for name, fn, why in (
            ("relax.run.nonzero", _run_nonzero,
             "numpy's nonzero: the input's shape is not known at compile time"),
            ("relax.run.unique", _run_unique, "numpy's unique (the importers emit the "
             "native unique kernel where it takes the dtype and shape and is faster)")):
        if get_global_func(name, allow_missing=True) is None:
            register_func(name, fn)
        mark_numpy_packed(name, why)


_register_runtime_funcs()


@register_legalize("relax.nonzero")
def _nonzero(bb, call):
    """Two native kernels (``schedule.nonzero_scan``): the count, bound to a fresh symbolic
    length by a match_cast, then the indices; the runtime's packed function (numpy) where the
    input's shape is unknown."""
    from ....schedule.nonzero_scan import nonzero_count_prim_func, nonzero_fill_prim_func
    from ....tir import expr as T
    from ...op.base import call_pure_packed, call_tir
    from ...op.shape_tensor import tensor_to_shape
    from ...struct_info import ShapeStructInfo, TensorStructInfo
    from .common import get_legalize, known_struct_info

    x = call.args[0]
    if not known_struct_info(x.struct_info):
        return call_pure_packed("relax.run.nonzero", x, sinfo_args=call.struct_info)
    shape, dtype = arg_shape(call, 0), arg_dtype(call, 0)
    counter = bb.add_func(nonzero_count_prim_func(shape, dtype), "nonzero_count")
    count = bb.emit(call_tir(counter, [x], TensorStructInfo([1], "int64")))
    to_shape = bb.normalize(tensor_to_shape(count))  # lowered here: not visited again
    length = bb.emit(get_legalize(to_shape.op)(bb, to_shape))
    k = T.Var("num_nonzero", "int64")
    bb.match_cast(length, ShapeStructInfo([k]))
    fill = bb.add_func(nonzero_fill_prim_func(shape, dtype), "nonzero")
    return call_tir(fill, [x], TensorStructInfo([len(shape), k], "int64"))


@register_legalize("relax.unique")
def _unique(bb, call):
    from ...op.base import call_pure_packed

    return call_pure_packed("relax.run.unique", *call.args, sinfo_args=call.struct_info)


@register_legalize("relax.dynamic_strided_slice")
def _dynamic_strided_slice(bb, call):
    """Two kernels: the result lengths from the bound tensors, then (after the lengths are
    bound to fresh symbolic dims by a match_cast) the slice itself."""
    from ....tir import expr as T
    from ...op.shape_tensor import tensor_to_shape
    from ...struct_info import ShapeStructInfo
    from .common import get_legalize, known_struct_info

    x = call.args[0]
    if not all(known_struct_info(a.struct_info) for a in call.args):
        return call  # the input's shape is needed for the lengths
    nd = len(arg_shape(call, 0))
    for k in (1, 2, 3):  # the kernels read one bound per axis: a static length is needed
        d = arg_shape(call, k)[0]
        if not (isinstance(d, E.IntImm) and d.value == nd):
            return call
    lengths = call_topi(bb, tx.dynamic_slice_lengths, *call.args,
                        name="dynamic_strided_slice_shape")
    lengths = bb.emit(lengths)
    to_shape = bb.normalize(tensor_to_shape(lengths))  # lowered here: not visited again
    shape = bb.emit(get_legalize(to_shape.op)(bb, to_shape))
    dims = [T.Var(f"dyn_len{k}", "int64") for k in range(nd)]
    bb.match_cast(shape, ShapeStructInfo(dims))
    out = call_topi(bb, lambda v, b, s: tx.dynamic_strided_slice(v, b, s, dims), x,
                    call.args[1], call.args[3], name="dynamic_strided_slice")
    return out
