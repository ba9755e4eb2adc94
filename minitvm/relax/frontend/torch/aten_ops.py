"""Core-ATen op converters onto ``relax.op`` (arguments arrive in schema order)."""

from __future__ import annotations

import operator

import numpy as np

from ....frontend_common import torch_math
from ....frontend_common.bit_shift import shift
from ....frontend_common.index_put_plan import plan_sliced_put
from ....frontend_common.scatter_plan import broadcasts_one_index_per_row
from ....frontend_common.torch_promote import tensors_dtype, true_divide_dtype, with_number_dtype
from ....frontend_common.torch_rot90 import rot90_plan
from ....frontend_common.torch_take_along import take_along_plan
from ....ir.prim_expr import PrimExpr
from ... import op as _op
from ...expr import Call, Constant, Expr, TupleGetItem, const
from ..common import crop_negative_pads
from ..pool_indices import maxpool_indices
from ..spatial import grid_sample_2d, grid_sample_kernel
from .context import AtenContext, register, torch_dtype


def _promote(ctx: AtenContext, x, y):
    """torch's type promotion for two tensors of different dtypes
    (``frontend_common.torch_promote``: the higher category wins, then the wider, a 0-dim
    tensor never widening one with dimensions)."""
    dx, dy = ctx.dtype(x), ctx.dtype(y)
    if dx == dy:
        return x, y
    target = tensors_dtype(dx, dy, ctx.ndim(x) == 0, ctx.ndim(y) == 0)
    return (x if dx == target else _op.astype(x, target)), (y if dy == target else
                                                             _op.astype(y, target))


def _operands(ctx: AtenContext, a, b):
    """Two operands (tensors or Python numbers, one at least a tensor) as Relax tensors of the
    dtype torch gives their result: a float number lifts an integer tensor to float32."""
    like = a if isinstance(a, Expr) else b
    number = b if like is a else a
    if isinstance(number, bool | int | float):
        target = with_number_dtype(ctx.dtype(like), number)
        if target != ctx.dtype(like):
            like = ctx.emit(_op.astype(like, target))
            a, b = (like, b) if isinstance(a, Expr) else (a, like)
    return _promote(ctx, ctx.tensor(a, like), ctx.tensor(b, like))


def _binary(rop, pyop):
    def convert(ctx: AtenContext, args):
        a, b = args[0], args[1]
        if not isinstance(a, Expr) and not isinstance(b, Expr):
            return ctx.simplify(pyop(a, b))  # size arithmetic
        x, y = _operands(ctx, a, b)
        if rop is _op.divide and true_divide_dtype(ctx.dtype(x)) != ctx.dtype(x):
            x, y = (ctx.emit(_op.astype(v, true_divide_dtype(ctx.dtype(x)))) for v in (x, y))
        if len(args) > 2 and args[2] not in (None, 1):  # alpha of add / sub
            y = _op.multiply(y, ctx.tensor(args[2], y))
        return ctx.emit(rop(x, y))

    return convert


for _names, _rop, _py in [
    (("add.Tensor", "add.Scalar"), _op.add, lambda a, b: a + b),
    (("sub.Tensor", "sub.Scalar"), _op.subtract, lambda a, b: a - b),
    (("mul.Tensor", "mul.Scalar"), _op.multiply, lambda a, b: a * b),
    (("div.Tensor", "div.Scalar"), _op.divide, lambda a, b: a / b),
    (("pow.Tensor_Scalar", "pow.Tensor_Tensor"), _op.power, lambda a, b: a**b),
    (("maximum.default",), _op.maximum, max), (("minimum.default",), _op.minimum, min),
    (("eq.Tensor", "eq.Scalar"), _op.equal, lambda a, b: a == b),
    (("ne.Tensor", "ne.Scalar"), _op.not_equal, lambda a, b: a != b),
    (("lt.Tensor", "lt.Scalar"), _op.less, lambda a, b: a < b),
    (("le.Tensor", "le.Scalar"), _op.less_equal, lambda a, b: a <= b),
    (("gt.Tensor", "gt.Scalar"), _op.greater, lambda a, b: a > b),
    (("ge.Tensor", "ge.Scalar"), _op.greater_equal, lambda a, b: a >= b),
    (("logical_and.default",), _op.logical_and, lambda a, b: a and b),
]:
    register(*_names)(_binary(_rop, _py))


@register("pow.Scalar")
def _pow_scalar(ctx: AtenContext, args):
    """``base ** tensor`` with a Python-number base (RoPE's ``10000 ** (-2i / d)``): a float
    base over an integer exponent gives float32, as in torch."""
    base, e = args[0], args[1]
    if isinstance(base, float) and not ctx.dtype(e).startswith("float"):
        e = ctx.emit(_op.astype(e, "float32"))
    return ctx.emit(_op.power(ctx.tensor(base, e), e))


@register("rsub.Scalar")
def _rsub(ctx: AtenContext, args):
    x = args[0]
    return ctx.emit(_op.subtract(ctx.tensor(args[1], x), x))


@register("div.Tensor_mode")
def _div_mode(ctx: AtenContext, args):
    x, y, mode = args[0], args[1], args[2]
    like = x if isinstance(x, Expr) else y
    q = _op.divide(ctx.tensor(x, like), ctx.tensor(y, like))
    if mode == "floor":
        q = _op.floor(q)
    elif mode == "trunc":
        q = _op.trunc(q)
    return ctx.emit(q)


# python size arithmetic torch.export records as call_function nodes
register("operator.add")(lambda ctx, a: ctx.simplify(a[0] + a[1]))
register("operator.sub")(lambda ctx, a: ctx.simplify(a[0] - a[1]))
register("operator.mul")(lambda ctx, a: ctx.simplify(a[0] * a[1]))
register("operator.floordiv")(lambda ctx, a: ctx.simplify(a[0] // a[1]))
register("operator.mod")(lambda ctx, a: ctx.simplify(a[0] % a[1]))

_UNARY = {
    "relu": _op.nn.relu, "sigmoid": _op.sigmoid, "tanh": _op.tanh, "erf": _op.erf,
    "exp": _op.exp, "log": _op.log, "sqrt": _op.sqrt, "rsqrt": _op.rsqrt, "neg": _op.negative,
    "abs": _op.abs, "sin": _op.sin, "cos": _op.cos, "floor": _op.floor, "ceil": _op.ceil,
    "round": _op.round, "silu": _op.nn.silu, "logical_not": _op.logical_not,
    "sign": _op.sign, "reciprocal": None,
}


def _unary(rop):
    def convert(ctx: AtenContext, args):
        return ctx.emit(rop(args[0]))

    return convert


for _name, _rop in _UNARY.items():
    if _rop is not None:
        register(f"{_name}.default")(_unary(_rop))


@register("reciprocal.default")
def _reciprocal(ctx: AtenContext, args):
    return ctx.emit(_op.divide(ctx.tensor(1.0, args[0]), args[0]))


@register("gelu.default")
def _gelu(ctx: AtenContext, args):
    fn = _op.nn.gelu_tanh if args[1] == "tanh" else _op.nn.gelu
    return ctx.emit(fn(args[0]))


@register("leaky_relu.default")
def _leaky_relu(ctx: AtenContext, args):
    return ctx.emit(_op.nn.leakyrelu(args[0], float(args[1])))


@register("hardtanh.default", "clamp.default")
def _clamp(ctx: AtenContext, args):
    x, lo, hi = args[0], args[1], args[2]
    lo = -np.inf if lo is None else float(lo)
    hi = np.inf if hi is None else float(hi)
    return ctx.emit(_op.clip(x, lo, hi))


@register("clamp.Tensor")
def _clamp_tensor(ctx: AtenContext, args):
    """``clamp(x, min, max)`` with tensor bounds (either may be None): broadcast maximum then
    minimum, as torch's result keeps the promoted dtype of x and the bounds."""
    out = args[0]
    for bound, rop in ((args[1], _op.maximum), (args[2] if len(args) > 2 else None, _op.minimum)):
        if bound is not None:
            x, b = _promote(ctx, out, ctx.tensor(bound, out))
            out = ctx.emit(rop(x, b))
    return out


@register("_softmax.default", "_log_softmax.default")
def _softmax(ctx: AtenContext, args):
    fn = _op.nn.softmax if "log" not in ctx.node.target.__name__ else _op.nn.log_softmax
    return ctx.emit(fn(args[0], int(args[1])))


@register("addmm.default")
def _addmm(ctx: AtenContext, args):
    bias, a, b, beta, alpha = args
    y = _op.matmul(a, b)
    if alpha not in (None, 1):
        y = _op.multiply(y, ctx.tensor(float(alpha), a))
    if beta not in (None, 1):
        bias = _op.multiply(bias, ctx.tensor(float(beta), a))
    return ctx.emit(_op.add(ctx.emit(y), bias))


@register("mm.default", "bmm.default", "matmul.default")
def _matmul(ctx: AtenContext, args):
    return ctx.emit(_op.matmul(args[0], args[1]))


@register("linear.default")
def _linear(ctx: AtenContext, args):
    return ctx.emit(_op.linear(args[0], args[1], args[2]))


@register("bilinear.default")
def _bilinear(ctx: AtenContext, args):
    """bilinear(x1, x2, W, b): ``y[..., o] = x1 W[o] x2 + b[o]`` (``nn.Bilinear``), kept whole
    by the importer: one product of x1 with W laid out [I, O*J], then the product with x2
    summed over J."""
    x1, x2, w = args[0], args[1], args[2]
    b = args[3] if len(args) > 3 else None
    s1, s2 = ctx.shape(x1), ctx.shape(x2)
    o, i, j = ctx.shape(w)
    if s1[:-1] != s2[:-1]:
        raise ctx.fail(f"input shapes {s1} and {s2} differ before the last dim")
    rows = 1
    for d in s1[:-1]:
        rows = rows * d
    rows = ctx.simplify(rows)
    wt = ctx.emit(_op.reshape(ctx.emit(_op.permute_dims(w, [1, 0, 2])), [i, o * j]))
    x1 = ctx.emit(_op.reshape(x1, ctx.shape_expr([rows, i])))
    t = ctx.emit(_op.reshape(ctx.emit(_op.matmul(x1, wt)), ctx.shape_expr([rows, o, j])))
    x2 = ctx.emit(_op.reshape(x2, ctx.shape_expr([rows, 1, j])))
    y = ctx.emit(_op.sum(ctx.emit(_op.multiply(t, x2)), [2]))
    if b is not None:
        y = ctx.emit(_op.add(y, b))
    return ctx.emit(_op.reshape(y, ctx.shape_expr(list(s1[:-1]) + [o])))


@register("_trilinear.default")
def _trilinear(ctx: AtenContext, args):
    """_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim): the three
    inputs, each unsqueezed at its ``expand`` axes to one rank, multiplied and summed over
    ``sumdim`` (the summed axes dropped): one einsum."""
    ins, expands, sumdim = args[:3], args[3:6], {int(d) for d in args[6]}
    rank = ctx.ndim(ins[0]) + len(expands[0])
    letters = "abcdefghijklmnopqrstuvwxyz"[:rank]
    subs = ["".join(letters[d] for d in range(rank) if d not in {int(e) for e in ex})
            for ex in expands]
    kept = [d for d in range(rank) if d not in sumdim]
    shown = set("".join(subs))
    out = "".join(letters[d] for d in kept if letters[d] in shown)
    y = ctx.emit(_op.einsum(list(ins), f"{','.join(subs)}->{out}"))
    lone = [k for k, d in enumerate(kept) if letters[d] not in shown]  # in no input: size 1
    return ctx.emit(_op.expand_dims(y, lone)) if lone else y


@register("convolution.default")
def _convolution(ctx: AtenContext, args):
    x, w, bias, stride, padding, dilation, transposed, out_pad, groups = args
    n = ctx.ndim(x) - 2
    pads = [int(p) for p in padding] * 2
    stride, dilation = [int(s) for s in stride], [int(d) for d in dilation]
    if transposed:
        fns = {1: _op.nn.conv1d_transpose, 2: _op.nn.conv2d_transpose,
               3: _op.nn.conv3d_transpose}
        if n not in fns:
            raise ctx.fail(f"{n}-D transposed convolution is not supported")
        y = fns[n](x, w, stride, pads, [int(p) for p in out_pad], dilation, int(groups))
    else:
        fns = {1: _op.nn.conv1d, 2: _op.nn.conv2d, 3: _op.nn.conv3d}
        if n not in fns:
            raise ctx.fail(f"{n}-D convolution is not supported")
        y = fns[n](x, w, stride, pads, dilation, int(groups))
    y = ctx.emit(y)
    if bias is not None:
        b = _op.reshape(bias, ctx.shape_expr([1, -1] + [1] * n))
        y = ctx.emit(_op.add(y, b))
    return y


@register("_native_batch_norm_legit_no_training.default")
def _batch_norm(ctx: AtenContext, args):
    x, gamma, beta, mean, var, _momentum, eps = args
    c = ctx.shape(x)[1]
    dtype = ctx.dtype(x)
    gamma = gamma if gamma is not None else const(np.ones(c, dtype))
    beta = beta if beta is not None else const(np.zeros(c, dtype))
    bn = ctx.emit(_op.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=float(eps)))
    return (ctx.emit(TupleGetItem(bn, 0)), mean, var)


@register("native_layer_norm.default")
def _layer_norm(ctx: AtenContext, args):
    x, normalized_shape, gamma, beta, eps = args
    ndim = ctx.ndim(x)
    k = len(normalized_shape)
    dtype = ctx.dtype(x)
    shape = [int(d) for d in normalized_shape]
    gamma = gamma if gamma is not None else const(np.ones(shape, dtype))
    beta = beta if beta is not None else const(np.zeros(shape, dtype))
    y = ctx.emit(_op.nn.layer_norm(x, gamma, beta, list(range(ndim - k, ndim)), float(eps)))
    return (y, None, None)


def _per_axis(v, n: int) -> list[int]:
    """A pooling argument (an int or one value per spatial axis) as ``n`` ints."""
    v = [int(p) for p in (v if isinstance(v, list | tuple) else [v])]
    return v * n if len(v) == 1 else v


@register("max_pool2d_with_indices.default", "max_pool2d.default",
          "max_pool3d_with_indices.default", "max_pool3d.default")
def _max_pool(ctx: AtenContext, args):
    """2-D and 3-D max pooling (the number of kernel sizes says which); the ``_with_indices``
    form's indices (each output's flat position in its N, C plane) only when the program reads
    them (decomposition turns every max pool into the ``_with_indices`` form)."""
    x, kernel, stride, padding, dilation, ceil = args
    kernel = [int(k) for k in kernel]
    n = len(kernel)
    stride = [int(s) for s in stride] or kernel
    pads, dil = _per_axis(padding, n), _per_axis(dilation, n)
    fn = {2: _op.nn.max_pool2d, 3: _op.nn.max_pool3d}[n]
    y = ctx.emit(fn(x, kernel, stride, pads * 2, dil, bool(ceil)))
    if "indices" not in ctx.node.target.__name__:
        return y
    if not any(u.target is operator.getitem and u.args[1] == 1 for u in ctx.node.users):
        return (y, None)
    shape = ctx.shape(x)
    if len(shape) != n + 2 or not all(isinstance(d, int) for d in shape):
        raise ctx.fail("max-pool indices need a batched input of static shape")
    idx = maxpool_indices(ctx.emit, shape, ctx.dtype(x), x, ctx.shape(y)[2:], kernel, stride,
                          dil, pads, pads, per_plane=True)
    return (y, idx)


@register("avg_pool2d.default", "avg_pool3d.default")
def _avg_pool(ctx: AtenContext, args):
    x, kernel, stride, padding, ceil, include, divisor = args
    if divisor is not None:
        raise ctx.fail("divisor_override is not supported")
    kernel = [int(k) for k in kernel]
    n = len(kernel)
    stride = [int(s) for s in stride] or kernel
    fn = {2: _op.nn.avg_pool2d, 3: _op.nn.avg_pool3d}[n]
    return ctx.emit(fn(x, kernel, stride, _per_axis(padding, n) * 2, [1] * n, bool(ceil),
                       bool(include)))


@register("_adaptive_avg_pool2d.default", "adaptive_avg_pool2d.default")
def _adaptive_avg_pool2d(ctx: AtenContext, args):
    x, size = args
    size = [int(s) for s in size]
    if size == [1, 1]:
        return ctx.emit(_op.mean(x, [2, 3], True))
    return ctx.emit(_op.nn.adaptive_avg_pool2d(x, size))


def _accumulate_dtype(ctx: AtenContext, x, dtype) -> str | None:
    """torch's dtype of a sum or cumsum: ``dtype`` when given, else int64 for integer and bool
    inputs (``mask.sum()`` counts in int64), else the input's own (None)."""
    if dtype is not None:
        return torch_dtype(dtype)
    dt = ctx.dtype(x)
    return "int64" if dt == "bool" or dt.startswith(("int", "uint")) else None


def _reduce(rop, accumulate=False):
    def convert(ctx: AtenContext, args):
        x = args[0]
        if len(args) <= 2:  # sum.default / mean.default: (self, dtype)
            dims, keep, dtype = None, False, args[1] if len(args) > 1 else None
        else:  # .dim variants: (self, dim, keepdim[, dtype])
            dims, keep, dtype = args[1], args[2], args[3] if len(args) > 3 else None
        dt = _accumulate_dtype(ctx, x, dtype) if accumulate else \
            (torch_dtype(dtype) if dtype is not None else None)
        if dt is not None and dt != ctx.dtype(x):
            x = ctx.emit(_op.astype(x, dt))
        dims = [int(d) for d in dims] if dims else None
        return ctx.emit(rop(x, dims, bool(keep)))

    return convert


register("mean.dim", "mean.default")(_reduce(_op.mean))
register("sum.dim_IntList", "sum.default")(_reduce(_op.sum, accumulate=True))
register("amax.default")(_reduce(_op.max))
register("prod.default")(_reduce(_op.prod, accumulate=True))


@register("prod.dim_int")
def _prod_dim(ctx: AtenContext, args):
    """prod.dim_int(self, dim, keepdim, dtype): one axis, where sum and mean take a list
    (Instant-NGP's trilinear corner weights multiply their three factors this way)."""
    return _reduce(_op.prod, accumulate=True)(ctx, [args[0], [args[1]], *args[2:]])
register("amin.default")(_reduce(_op.min))


@register("argmax.default", "argmin.default")
def _argmax(ctx: AtenContext, args):
    fn = _op.argmax if "argmax" in ctx.node.target.__name__ else _op.argmin
    return ctx.emit(fn(args[0], args[1], bool(args[2])))


@register("sym_size.int")
def _sym_size(ctx: AtenContext, args):
    return ctx.shape(args[0])[int(args[1])]


@register("view.default", "_unsafe_view.default", "reshape.default")
def _view(ctx: AtenContext, args):
    x, size = args
    return ctx.emit(_op.reshape(x, ctx.shape_expr(list(size))))


@register("permute.default")
def _permute(ctx: AtenContext, args):
    return ctx.emit(_op.permute_dims(args[0], [int(a) for a in args[1]]))


@register("transpose.int")
def _transpose(ctx: AtenContext, args):
    x, a, b = args
    n = ctx.ndim(x)
    perm = list(range(n))
    perm[a % n], perm[b % n] = perm[b % n], perm[a % n]
    return ctx.emit(_op.permute_dims(x, perm))


@register("t.default")
def _t(ctx: AtenContext, args):
    return ctx.emit(_op.permute_dims(args[0], [1, 0])) if ctx.ndim(args[0]) == 2 else args[0]


@register("expand.default")
def _expand(ctx: AtenContext, args):
    x, size = args[0], list(args[1])
    in_dims = ctx.shape(x)
    lead = len(size) - len(in_dims)
    out = [in_dims[i - lead] if isinstance(s, int) and s == -1 else s
           for i, s in enumerate(size)]
    if out == in_dims:
        return x
    return ctx.emit(_op.broadcast_to(x, ctx.shape_expr(out)))


@register("clone.default", "alias.default", "detach.default", "contiguous.default",
          "lift_fresh_copy.default", "dropout.default")
def _identity(ctx: AtenContext, args):
    return args[0]


@register("_to_copy.default")
def _to_copy(ctx: AtenContext, args):
    x, dtype = args[0], args[1]
    if dtype is None:
        return x
    dtype = torch_dtype(dtype)
    return x if ctx.dtype(x) == dtype else ctx.emit(_op.astype(x, dtype))


@register("unsqueeze.default")
def _unsqueeze(ctx: AtenContext, args):
    x, dim = args
    return ctx.emit(_op.expand_dims(x, int(dim) % (ctx.ndim(x) + 1)))


@register("squeeze.dims", "squeeze.dim", "squeeze.default")
def _squeeze(ctx: AtenContext, args):
    x = args[0]
    dims = args[1] if len(args) > 1 else None
    if isinstance(dims, int):
        dims = [dims]
    n = ctx.ndim(x)
    shape = ctx.shape(x)
    if dims is not None:
        dims = [d % n for d in dims if shape[d % n] == 1]  # torch ignores non-1 dims
        if not dims:
            return x
    return ctx.emit(_op.squeeze(x, dims))


@register("cat.default")
def _cat(ctx: AtenContext, args):
    tensors, dim = args
    return ctx.emit(_op.concat(list(tensors), int(dim)))


@register("slice.Tensor")
def _slice(ctx: AtenContext, args):
    x, dim, start, end, step = args
    n = ctx.ndim(x)
    dim = int(dim) % n
    d = ctx.shape(x)[dim]
    start = 0 if start is None else start
    if end is None or (isinstance(end, int) and end >= 2**62):
        end = d
    if isinstance(start, int) and start == 0 and (end is d) and step == 1:
        return x
    return ctx.emit(_op.strided_slice(x, [dim], [start], [end], [int(step)]))


@register("select.int")
def _select(ctx: AtenContext, args):
    x, dim, index = args
    n = ctx.ndim(x)
    dim = int(dim) % n
    size = ctx.shape(x)[dim]
    if isinstance(index, int) and index < 0:  # take's fast mode does not wrap negatives
        if not isinstance(size, int):  # symbolic dim: slice [size + index, size + index + 1)
            part = _op.strided_slice(x, [dim], [size + index], [size + index + 1], [1])
            return ctx.emit(_op.squeeze(part, [dim]))
        index += size
    idx = const(np.array(index, "int64")) if isinstance(index, int) else ctx.tensor(index)
    return ctx.emit(_op.take(x, idx, dim))


@register("split_with_sizes.default", "split.Tensor")
def _split(ctx: AtenContext, args):
    x, sizes, dim = args
    dim = int(dim) % ctx.ndim(x)
    if isinstance(sizes, int):
        total = ctx.shape(x)[dim]
        if not isinstance(total, int):
            raise ctx.fail("split of a symbolic dim by size is not supported")
        sizes = [min(sizes, total - i) for i in range(0, total, sizes)]
    cuts, acc = [], 0
    for s in sizes[:-1]:
        acc += int(s)
        cuts.append(acc)
    tup = ctx.emit(_op.split(x, cuts, dim))
    return [ctx.emit(TupleGetItem(tup, i)) for i in range(len(sizes))]


@register("index_select.default")
def _index_select(ctx: AtenContext, args):
    x, dim, index = args
    return ctx.emit(_op.take(x, index, int(dim)))


@register("embedding.default")
def _embedding(ctx: AtenContext, args):
    return ctx.emit(_op.take(args[0], args[1], 0))


def _opt(args, i, default):
    return args[i] if len(args) > i and args[i] is not None else default


@register("_embedding_bag.default", "_embedding_bag_forward_only.default")
def _embedding_bag(ctx: AtenContext, args):
    """``nn.EmbeddingBag`` (weight, indices, offsets, scale_grad_by_freq, mode, sparse,
    per_sample_weights, include_last_offset, padding_idx): the sum, mean or max of each bag's
    rows, 0 for an empty bag. Offsets may be a runtime tensor: a (bags, ids) membership mask
    from them turns sum and mean into one matmul, max into a masked reduction. Only the first
    output (the bags) is computed; PyTorch's bookkeeping outputs are not."""
    weight, idx, offsets = args[:3]
    mode = int(_opt(args, 4, 0))
    psw, include_last = _opt(args, 6, None), bool(_opt(args, 7, False))
    pad = _opt(args, 8, None)
    pad = None if pad is None or int(pad) < 0 else int(pad)
    if ctx.ndim(idx) != 1 or not isinstance(ctx.shape(idx)[0], int):
        raise ctx.fail(f"expects 1-D indices of a static length, got {ctx.shape(idx)}")
    if psw is not None and mode != 0:
        raise ctx.fail("per_sample_weights needs mode='sum'")
    n, nb = ctx.shape(idx)[0], int(ctx.shape(offsets)[0]) - include_last
    if nb <= 0:
        raise ctx.fail("offsets describe no bags")
    dt = ctx.dtype(weight)
    rows = ctx.emit(_op.take(weight, idx, 0))  # (n, d)
    if psw is not None:
        rows = ctx.emit(_op.multiply(rows, _op.expand_dims(psw, 1)))
    off = ctx.emit(_op.astype(offsets, "int64"))
    starts = ctx.emit(_op.strided_slice(off, [0], [0], [nb]))
    if include_last:
        ends = ctx.emit(_op.strided_slice(off, [0], [1], [nb + 1]))
    else:
        total = const(np.array([n], "int64"))
        ends = total if nb == 1 else ctx.emit(_op.concat(
            [_op.strided_slice(off, [0], [1], [nb]), total], 0))
    j = const(np.arange(n, dtype="int64").reshape(1, n))
    member = ctx.emit(_op.logical_and(_op.greater_equal(j, _op.expand_dims(starts, 1)),
                                      _op.less(j, _op.expand_dims(ends, 1))))  # (nb, n)
    if pad is not None:
        keep = _op.not_equal(idx, const(np.array(pad, ctx.dtype(idx))))
        member = ctx.emit(_op.logical_and(member, _op.expand_dims(keep, 0)))
    count = ctx.emit(_op.sum(_op.astype(member, dt), [1], True))  # (nb, 1)
    if mode in (0, 1):
        out = ctx.emit(_op.matmul(_op.astype(member, dt), rows))
        if mode == 1:
            out = ctx.emit(_op.divide(out, _op.maximum(count, const(np.array(1, dt)))))
    else:
        lowest = const(np.array(-np.inf, dt))
        picked = _op.where(_op.expand_dims(member, 2), _op.expand_dims(rows, 0), lowest)
        out = ctx.emit(_op.where(_op.greater(count, const(np.array(0, dt))),
                                 _op.max(picked, [1]), const(np.array(0, dt))))
    return (out, None, None, None)


@register("where.self")
def _where(ctx: AtenContext, args):
    c, a, b = args
    like = a if isinstance(a, Expr) else b
    return ctx.emit(_op.where(c, ctx.tensor(a, like), ctx.tensor(b, like)))


@register("full.default")
def _full(ctx: AtenContext, args):
    size, value, dtype = args[0], args[1], args[2]
    dtype = torch_dtype(dtype) if dtype is not None else (
        "float32" if isinstance(value, float) else "int64")
    if all(isinstance(d, int) for d in size):
        return const(np.full([int(d) for d in size], value, dtype=dtype))
    return ctx.emit(_op.full(ctx.shape_expr(list(size)), const(np.array(value, dtype)), dtype))


@register("arange.start_step", "arange.default", "arange.start")
def _arange(ctx: AtenContext, args):
    name = ctx.node.target.__name__
    if name.endswith("default"):
        start, end, step, dtype = 0, args[0], 1, args[1]
    elif name.endswith("start_step"):
        start, end, step, dtype = args[0], args[1], args[2], args[3]
    else:
        start, end, step, dtype = args[0], args[1], 1, args[2]
    symbolic = any(isinstance(v, PrimExpr) for v in (start, end, step))

    def is_int(v):
        if isinstance(v, PrimExpr):
            return v.dtype.startswith("int")
        return isinstance(v, int)

    dtype = torch_dtype(dtype) if dtype is not None else (
        "int64" if all(is_int(v) for v in (start, end, step)) else "float32")
    if symbolic:  # torch.arange(x.shape[1]) of a dynamic dim: R.arange of R.Prim bounds
        return ctx.emit(_op.arange(start, end, step, dtype))
    return const(np.arange(start, end, step, dtype=dtype))


@register("hardswish.default")
def _hardswish(ctx: AtenContext, args):
    x = args[0]
    gate = _op.clip(_op.add(x, ctx.tensor(3.0, x)), 0.0, 6.0)
    return ctx.emit(_op.divide(_op.multiply(x, gate), ctx.tensor(6.0, x)))


@register("hardsigmoid.default")
def _hardsigmoid(ctx: AtenContext, args):
    x = args[0]
    return ctx.emit(_op.divide(_op.clip(_op.add(x, ctx.tensor(3.0, x)), 0.0, 6.0),
                               ctx.tensor(6.0, x)))


@register("elu.default")
def _elu(ctx: AtenContext, args):
    x, alpha, scale, input_scale = args
    xs = _op.multiply(x, ctx.tensor(float(input_scale), x))
    neg = _op.multiply(ctx.tensor(float(alpha), x), _op.subtract(_op.exp(xs), ctx.tensor(1.0, x)))
    y = _op.where(_op.greater(x, ctx.tensor(0.0, x)), x, neg)
    return ctx.emit(_op.multiply(y, ctx.tensor(float(scale), x)) if scale != 1 else y)


@register("softplus.default")
def _softplus(ctx: AtenContext, args):
    x, beta, threshold = args
    bx = _op.multiply(x, ctx.tensor(float(beta), x))
    soft = _op.divide(_op.log(_op.add(_op.exp(bx), ctx.tensor(1.0, x))),
                      ctx.tensor(float(beta), x))
    return ctx.emit(_op.where(_op.greater(bx, ctx.tensor(float(threshold), x)), x, soft))


@register("constant_pad_nd.default")
def _constant_pad(ctx: AtenContext, args):
    x, pad, value = args
    n = ctx.ndim(x)
    flat = [0] * (2 * n)
    for i in range(len(pad) // 2):  # torch lists (before, after) from the last axis backwards
        axis = n - 1 - i
        flat[2 * axis], flat[2 * axis + 1] = int(pad[2 * i]), int(pad[2 * i + 1])
    crop, flat = crop_negative_pads(x, flat)
    if crop is not None:
        x = ctx.emit(crop)
        if not any(flat):
            return x
    return ctx.emit(_op.nn.pad(x, flat, float(value)))


@register("cumsum.default", "cumprod.default")
def _cumsum(ctx: AtenContext, args):
    x, dim, dtype = args
    fn = _op.cumprod if ctx.node.target.__name__.startswith("cumprod") else _op.cumsum
    return ctx.emit(fn(x, int(dim), _accumulate_dtype(ctx, x, dtype)))


@register("tril.default", "triu.default")
def _trilu(ctx: AtenContext, args):
    fn = _op.tril if "tril" in ctx.node.target.__name__ else _op.triu
    return ctx.emit(fn(args[0], int(args[1])))


@register("upsample_nearest2d.vec")
def _upsample_nearest(ctx: AtenContext, args):
    x, size, scales = args
    dims = ctx.shape(x)
    if size is None:
        if not all(isinstance(d, int) for d in dims[2:]):
            raise ctx.fail("upsampling by scale needs static spatial dims")
        size = [int(d * s) for d, s in zip(dims[2:], scales, strict=True)]
    return ctx.emit(_op.image.resize2d(x, list(size), [0.0] * 4, "NCHW", "nearest_neighbor",
                                       "asymmetric", "floor"))


@register("expm1.default")
def _expm1(ctx: AtenContext, args):
    return ctx.emit(_op.subtract(_op.exp(args[0]), ctx.tensor(1.0, args[0])))


# ---------------------------------------------------------------- models beyond the basics
@register("_assert_tensor_metadata.default")
def _assert_metadata(ctx: AtenContext, args):
    return None  # a runtime check torch.export records; the program's types already say it


@register("scalar_tensor.default")
def _scalar_tensor(ctx: AtenContext, args):
    value, dtype = args[0], args[1] if len(args) > 1 else None
    dtype = torch_dtype(dtype) if dtype is not None else "float32"
    return const(np.array(value, dtype=dtype))


@register("full_like.default")
def _full_like(ctx: AtenContext, args):
    x, value, dtype = args[0], args[1], args[2] if len(args) > 2 else None
    dtype = torch_dtype(dtype) if dtype is not None else ctx.dtype(x)
    return ctx.emit(_op.full_like(x, const(np.array(value, dtype)), dtype))


@register("any.dim", "any.dims", "any.default")
def _any(ctx: AtenContext, args):
    x = args[0]
    dims = args[1] if len(args) > 1 else None
    dims = [int(dims)] if isinstance(dims, int) else (
        [int(d) for d in dims] if dims else None)
    keep = bool(args[2]) if len(args) > 2 else False
    flags = _op.astype(_op.not_equal(x, ctx.tensor(0, x)), "int8")
    return ctx.emit(_op.greater(_op.max(flags, dims, keep), const(np.array(0, "int8"))))


@register("repeat.default")
def _repeat(ctx: AtenContext, args):
    x, reps = args[0], [int(r) for r in args[1]]
    extra = len(reps) - ctx.ndim(x)
    if extra > 0:
        x = ctx.emit(_op.reshape(x, ctx.shape_expr([1] * extra + list(ctx.shape(x)))))
    return ctx.emit(_op.tile(x, reps))


@register("bitwise_not.default")
def _bitwise_not(ctx: AtenContext, args):
    """``~mask`` of a bool tensor is a logical not; of an integer one, the bitwise not."""
    x = args[0]
    fn = _op.logical_not if ctx.dtype(x) == "bool" else _op.bitwise_not
    return ctx.emit(fn(x))


def _bitwise(logical, bitwise):
    """``a & b`` (``|``, ``^``): of two bool tensors (a mask and a mask: a KAN's knot-interval
    indicator) the logical op, of integers the bitwise one; a Python operand takes the other's
    dtype."""

    def convert(ctx: AtenContext, args):
        a, b = args[0], args[1]
        like = a if isinstance(a, Expr) else b
        x, y = ctx.tensor(a, like), ctx.tensor(b, like)
        both_bool = ctx.dtype(x) == "bool" and ctx.dtype(y) == "bool"
        return ctx.emit((logical if both_bool else bitwise)(x, y))

    return convert


for _kind in ("and", "or", "xor"):
    register(f"bitwise_{_kind}.Tensor", f"bitwise_{_kind}.Scalar")(
        _bitwise(getattr(_op, f"logical_{_kind}"), getattr(_op, f"bitwise_{_kind}")))


@register("sort.default", "sort.stable")
def _sort(ctx: AtenContext, args):
    """``torch.sort`` -> (values, int64 indices); ``sort.stable`` (self, stable, dim,
    descending) puts its keyword-only ``stable`` first. Sparsemax sorts its scores."""
    x = args[0]
    if ctx.node.target.__name__.endswith("stable"):
        dim = args[2] if len(args) > 2 and args[2] is not None else -1
        desc = bool(args[3]) if len(args) > 3 else False
    else:
        dim = args[1] if len(args) > 1 else -1
        desc = bool(args[2]) if len(args) > 2 else False
    axis = int(dim) % ctx.ndim(x)
    return (ctx.emit(_op.sort(x, axis, desc)),
            ctx.emit(_op.argsort(x, axis, desc, "int64")))


def _scatter_elements(ctx: AtenContext, x, index, src, axis: int, red: str):
    """A scatter along ``axis``; one along the leading axis whose index is a broadcast of one
    index per row (``scatter_add(0, idx[:, None].expand(..), h)``: a graph network's per-graph
    readout) as a ``scatter_nd`` of whole rows, which reads and bounds-checks one index per
    row and combines a contiguous row where the element form does so per element."""
    rows = _row_index(ctx, index, ctx.shape(x), axis)
    if rows is not None and ctx.shape(src) == ctx.shape(index):
        return ctx.emit(_op.scatter_nd(x, rows, src, red))
    return ctx.emit(_op.scatter_elements(x, index, src, axis, red))


def _row_index(ctx: AtenContext, index, shape, axis: int):
    """The ``[rows, 1]`` index tuples of a row scatter when ``index`` is bound to a
    ``broadcast_to`` of one index per row (``expand`` imports so), else None."""
    bound = ctx.bb.lookup_binding(index)
    if not isinstance(bound, Call) or getattr(bound.op, "name", None) != "relax.broadcast_to":
        return None
    source, ishape = bound.args[0], ctx.shape(index)
    if not broadcasts_one_index_per_row(ctx.shape(source), ishape, shape, axis):
        return None
    if ctx.shape(source) == [ishape[0], 1]:
        return source
    return ctx.emit(_op.reshape(source, ctx.shape_expr([ishape[0], 1])))


@register("scatter_add.default")
def _scatter_add(ctx: AtenContext, args):
    """scatter_add(self, dim, index, src): a graph network's messages summed into nodes."""
    x, dim, index, src = args[:4]
    return _scatter_elements(ctx, x, index, src, int(dim) % ctx.ndim(x), "add")


@register("scatter.src", "scatter.value", "scatter.reduce", "scatter.value_reduce")
def _scatter(ctx: AtenContext, args):
    """scatter(self, dim, index, src or value[, reduce]): ``src`` (or the number) written at
    ``index`` along ``dim`` (an MoE's routing weights into a dense gate). torch reads only
    ``src``'s leading index-shaped block, so a larger ``src`` is cut to it first."""
    x, dim, index, src = args[:4]
    axis = int(dim) % ctx.ndim(x)
    ishape = ctx.shape(index)
    if isinstance(src, Expr):
        if ctx.shape(src) != ishape:
            n = len(ishape)
            src = ctx.emit(_op.strided_slice(src, list(range(n)), [0] * n, list(ishape)))
    else:
        src = ctx.emit(_op.full(ctx.shape_expr(ishape), ctx.tensor(src, x), ctx.dtype(x)))
    reduce = args[4] if len(args) > 4 else None
    modes = {None: "update", "add": "add", "sum": "add", "multiply": "mul", "prod": "mul"}
    if reduce not in modes:
        raise ctx.fail(f"scatter with reduce={reduce!r} is not supported")
    return _scatter_elements(ctx, x, index, src, axis, modes[reduce])


# torch's scatter_reduce names -> scatter_elements' reductions and the value include_self=False
# starts each scattered position from
_SCATTER_REDUCE = {"sum": ("add", 0.0), "prod": ("mul", 1.0), "amax": ("max", -np.inf),
                   "amin": ("min", np.inf), "mean": ("add", 0.0)}


@register("scatter_reduce.two")
def _scatter_reduce(ctx: AtenContext, args):
    """scatter_reduce(self, dim, index, src, reduce, include_self=True): a graph attention's
    per-node max (amax) or mean of its incoming edges. Without ``self`` the scattered
    positions start from the reduction's identity; the mean divides by the count landed."""
    x, dim, index, src, reduce = args[:5]
    include_self = bool(args[5]) if len(args) > 5 and args[5] is not None else True
    if reduce not in _SCATTER_REDUCE:
        raise ctx.fail(f"scatter_reduce with reduce={reduce!r} is not supported")
    red, identity = _SCATTER_REDUCE[reduce]
    axis = int(dim) % ctx.ndim(x)
    ishape = ctx.shape(index)
    if ctx.shape(src) != ishape:
        n = len(ishape)
        src = ctx.emit(_op.strided_slice(src, list(range(n)), [0] * n, list(ishape)))

    def filled(value):
        dt = np.dtype(ctx.dtype(x))
        if dt.kind in "iu" and np.isinf(value):  # integers' identities of max and min
            value = int(np.iinfo(dt).min if value < 0 else np.iinfo(dt).max)
        return ctx.emit(_op.full(ctx.shape_expr(ishape), const(np.array(value, dt)), str(dt)))

    base = x
    if not include_self:
        base = _scatter_elements(ctx, x, index, filled(identity), axis, "update")
    out = _scatter_elements(ctx, base, index, src, axis, red)
    if reduce != "mean":
        return out
    start = ctx.emit(_op.ones_like(x))
    if not include_self:
        start = _scatter_elements(ctx, start, index, filled(0.0), axis, "update")
    count = _scatter_elements(ctx, start, index, filled(1.0), axis, "add")
    count = ctx.emit(_op.maximum(count, ctx.tensor(1.0, x)))
    fn = _op.divide if ctx.dtype(x).startswith("float") else _op.floor_divide
    return ctx.emit(fn(out, count))


@register("index_put.default")
def _index_put(ctx: AtenContext, args):
    """index_put(self, indices, values, accumulate=False): ``x[i0, i1, ...] = values`` (``+=``
    when accumulating), the index tensors on the leading axes (torch.export's form of
    ``index_add`` along axis 0 and of ``x[idx] += v``)."""
    x, indices, values = args[0], list(args[1]), args[2]
    accumulate = bool(args[3]) if len(args) > 3 and args[3] is not None else False
    if any(i is not None and ctx.dtype(i) == "bool" for i in indices):
        raise ctx.fail("index_put with a boolean mask is not supported")
    if not isinstance(values, Expr):
        values = ctx.tensor(values, x)
    elif ctx.dtype(values) != ctx.dtype(x):
        values = ctx.emit(_op.astype(values, ctx.dtype(x)))
    if any(i is None for i in indices):  # x[:, :, i] = v: the put with the indexed axes first
        given = [i for i in indices if i is not None]
        shapes = [tuple(ctx.shape(i)) for i in given]
        bshape = shapes[0] if len(set(shapes)) == 1 else np.broadcast_shapes(*shapes)
        plan = plan_sliced_put(ctx.shape(x), [i is not None for i in indices], bshape)
        values = _op.permute_dims(_op.broadcast_to(values, ctx.shape_expr(plan.value_shape)),
                                  list(plan.value_perm))
        x = ctx.emit(_op.permute_dims(x, list(plan.perm)))
        put = _op.index_put(x, given, ctx.emit(values), accumulate)
        return ctx.emit(_op.permute_dims(put, list(plan.inverse)))
    return ctx.emit(_op.index_put(x, indices, values, accumulate))


@register("index_copy.default")
def _index_copy(ctx: AtenContext, args):
    """index_copy(self, dim, index, source): source's slice i written to self's slice index[i]
    along dim (Hugging Face's static KV cache writes ``cache_position`` so): the put
    ``self[:, ..., index] = source`` with ``dim`` sliced axes in front."""
    x, dim, index, src = args[:4]
    if ctx.ndim(index) != 1:
        raise ctx.fail("index_copy: the index must be 1-D")
    return _index_put(ctx, [x, [None] * (int(dim) % ctx.ndim(x)) + [index], src, False])


@register("grid_sampler_2d.default", "grid_sampler_3d.default")
def _grid_sampler(ctx: AtenContext, args):
    """F.grid_sample: input, grid (N, *out, nd), mode (0 bilinear, 1 nearest, 2 bicubic),
    padding (0 zeros, 1 border, 2 reflection), align_corners. 2-D bilinear / nearest with
    zeros or border padding decompose into pixel-row gathers; the rest (bicubic, reflection,
    3-D) call the shared native kernel."""
    x, grid, mode, padding, align = args[:5]
    mode, padding = int(mode), int(padding)
    nd = ctx.ndim(x) - 2
    if mode not in (0, 1, 2) or padding not in (0, 1, 2) or (mode == 2 and nd != 2):
        raise ctx.fail(f"grid_sample mode {mode} / padding {padding} of a {nd + 2}-D input is "
                       "not supported (bilinear, nearest or 2-D bicubic; zeros, border or "
                       "reflection padding)")
    pad = ("zeros", "border", "reflection")[padding]
    if nd == 2 and mode in (0, 1) and padding in (0, 1):
        return grid_sample_2d(ctx, x, grid, mode == 0, pad, bool(align))
    method = ("bilinear", "nearest", "bicubic")[mode]
    return grid_sample_kernel(ctx, x, grid, method, pad, bool(align))


@register("gather.default")
def _gather(ctx: AtenContext, args):
    x, dim, index = args[0], args[1], args[2]
    return ctx.emit(_op.gather_elements(x, index, int(dim) % ctx.ndim(x)))


@register("take_along_dim.default")
def _take_along_dim(ctx: AtenContext, args):
    """``torch.take_along_dim``: a gather after broadcasting the input and the indices off
    ``dim`` (``frontend_common.torch_take_along``); without ``dim``, a take from the
    flattened input. Negative indices count from the end."""
    x, idx = args[0], args[1]
    dim = args[2] if len(args) > 2 else None
    if dim is None:
        size = int(np.prod([int(d) for d in ctx.shape(x)]))
        flat = ctx.emit(_op.reshape(x, (-1,)))
        return ctx.emit(_op.take(flat, _wrap_negative(ctx, ctx.emit(_op.reshape(idx, (-1,))),
                                                      size), 0))
    plan = take_along_plan(ctx.shape(x), ctx.shape(idx), int(dim), ctx.fail)
    size = int(ctx.shape(x)[plan.axis])
    if plan.input_to is not None:
        x = ctx.emit(_op.broadcast_to(x, plan.input_to))
    if plan.index_to is not None:
        idx = ctx.emit(_op.broadcast_to(idx, plan.index_to))
    return ctx.emit(_op.gather_elements(x, _wrap_negative(ctx, idx, size), plan.axis))


def _wrap_negative(ctx: AtenContext, idx, size: int):
    """Indices below zero moved up by ``size`` (torch's count from the end)."""
    dt = ctx.dtype(idx)
    zero, n = ctx.emit(const(np.array(0, dt), dt)), ctx.emit(const(np.array(size, dt), dt))
    return ctx.emit(_op.where(_op.less(idx, zero), _op.add(idx, n), idx))


@register("topk.default")
def _topk(ctx: AtenContext, args):
    x, k, dim, largest = args[0], int(args[1]), args[2], args[3]
    tup = ctx.emit(_op.topk(x, k, int(dim) % ctx.ndim(x), "both", bool(largest), "int64"))
    return (ctx.emit(TupleGetItem(tup, 0)), ctx.emit(TupleGetItem(tup, 1)))


@register("max.dim", "min.dim")
def _max_dim(ctx: AtenContext, args):
    x, dim, keep = args[0], int(args[1]) % ctx.ndim(args[0]), bool(args[2])
    is_max = ctx.node.target.__name__.startswith("max")
    vals = ctx.emit((_op.max if is_max else _op.min)(x, [dim], keep))
    idx = ctx.emit((_op.argmax if is_max else _op.argmin)(x, dim, keep))
    return (vals, idx)


@register("max.default", "min.default")
def _max_all(ctx: AtenContext, args):
    is_max = ctx.node.target.__name__.startswith("max")
    return ctx.emit((_op.max if is_max else _op.min)(args[0]))


@register("diagonal.default")
def _diagonal(ctx: AtenContext, args):
    x, off, d1, d2 = args[0], int(args[1]), args[2], args[3]
    n = ctx.ndim(x)
    d1, d2 = int(d1) % n, int(d2) % n
    shape = ctx.shape(x)
    n1, n2 = shape[d1], shape[d2]
    if not isinstance(n1, int) or not isinstance(n2, int):
        raise ctx.fail("diagonal over symbolic dims is not supported")
    rest = [d for d in range(n) if d not in (d1, d2)]
    moved = _op.permute_dims(x, rest + [d1, d2])
    flat = ctx.emit(_op.reshape(moved, ctx.shape_expr([shape[d] for d in rest] + [n1 * n2])))
    rows = np.arange(max(0, -off), min(n1, n2 - off))
    return ctx.emit(_op.take(flat, const((rows * n2 + rows + off).astype("int64")), len(rest)))


def _norm_affine(ctx: AtenContext, x, gamma, beta):
    c = ctx.shape(x)[1]
    dtype = ctx.dtype(x)
    if gamma is None or beta is None:
        if not isinstance(c, int):
            raise ctx.fail("a norm without affine weights needs a static channel dim")
    gamma = gamma if gamma is not None else const(np.ones(c, dtype))
    beta = beta if beta is not None else const(np.zeros(c, dtype))
    return gamma, beta


@register("native_group_norm.default")
def _group_norm(ctx: AtenContext, args):
    x, gamma, beta, groups, eps = args[0], args[1], args[2], int(args[6]), float(args[7])
    gamma, beta = _norm_affine(ctx, x, gamma, beta)
    y = ctx.emit(_op.nn.group_norm(x, gamma, beta, groups, 1, list(range(2, ctx.ndim(x))),
                                   eps))
    return (y, None, None)


@register("_native_batch_norm_legit.no_stats")
def _batch_norm_no_stats(ctx: AtenContext, args):
    """Batch norm with no running statistics (instance norm's decomposition): batch stats."""
    x, gamma, beta, eps = args[0], args[1], args[2], float(args[5])
    gamma, beta = _norm_affine(ctx, x, gamma, beta)
    axes = [d for d in range(ctx.ndim(x)) if d != 1]
    mean = ctx.emit(_op.mean(x, axes))
    var = ctx.emit(_op.variance(x, axes))
    bn = ctx.emit(_op.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=eps))
    return (ctx.emit(TupleGetItem(bn, 0)), None, None)


@register("upsample_bilinear2d.vec")
def _upsample_bilinear(ctx: AtenContext, args):
    x, size, align, scales = args
    dims = ctx.shape(x)
    if size is None:
        if not all(isinstance(d, int) for d in dims[2:]):
            raise ctx.fail("upsampling by scale needs static spatial dims")
        size = [int(d * s) for d, s in zip(dims[2:], scales, strict=True)]
    mode = "align_corners" if align else "half_pixel"
    return ctx.emit(_op.image.resize2d(x, list(size), [0.0] * 4, "NCHW", "linear", mode))


@register("scaled_dot_product_attention.default")
def _sdpa(ctx: AtenContext, args):
    q, k, v, mask, dropout, causal, scale = (list(args) + [None] * 8)[:7]
    if dropout:
        raise ctx.fail("dropout_p > 0 is a training-only setting")
    n = ctx.ndim(q)
    head = ctx.shape(q)[-1]
    if scale is None and not isinstance(head, int):
        raise ctx.fail("attention needs a static head size to derive its scale")
    scale = float(scale) if scale is not None else 1.0 / float(np.sqrt(head))
    kt = _op.permute_dims(k, list(range(n - 2)) + [n - 1, n - 2])
    s = ctx.emit(_op.multiply(_op.matmul(q, kt), ctx.tensor(scale, q)))
    neg = const(np.array(-np.inf, ctx.dtype(q)))
    if causal:
        lq, lk = ctx.shape(q)[-2], ctx.shape(k)[-2]
        if not isinstance(lq, int) or not isinstance(lk, int):
            raise ctx.fail("is_causal attention needs static sequence lengths")
        s = ctx.emit(_op.where(const(np.tril(np.ones((lq, lk), bool))), s, neg))
    if mask is not None:
        s = ctx.emit(_op.where(mask, s, neg) if ctx.dtype(mask) == "bool" else
                     _op.add(s, mask))
    return ctx.emit(_op.matmul(_op.nn.softmax(s, -1), v))


@register("flip.default")
def _flip(ctx: AtenContext, args):
    x = args[0]
    for d in args[1]:
        x = ctx.emit(_op.flip(x, int(d) % ctx.ndim(x)))
    return x


@register("masked_scatter.default")
def _masked_scatter(ctx: AtenContext, args):
    """``x.masked_scatter(mask, source)``: masked positions (the mask broadcast to ``x``) take
    ``source``'s leading elements in row-major order, each at the count of masked positions
    before it (an exclusive cumsum, a take, a select); static shapes."""
    x, mask, source = args[:3]
    shape = [int(d) for d in ctx.shape(x)]
    if [int(d) for d in ctx.shape(mask)] != shape:
        mask = ctx.emit(_op.broadcast_to(mask, shape))
    flat_mask = ctx.emit(_op.reshape(mask, (-1,)))
    rank = ctx.emit(_op.cumsum(ctx.emit(_op.astype(flat_mask, "int64")), 0, exclusive=True))
    src = ctx.emit(_op.reshape(source, (-1,)))
    if ctx.dtype(source) != ctx.dtype(x):
        src = ctx.emit(_op.astype(src, ctx.dtype(x)))
    picked = ctx.emit(_op.take(src, rank, 0, mode="clip"))
    flat = ctx.emit(_op.where(flat_mask, picked, ctx.emit(_op.reshape(x, (-1,)))))
    return ctx.emit(_op.reshape(flat, shape))


@register("rot90.default")
def _rot90(ctx: AtenContext, args):
    """``torch.rot90``: flips and an axis swap (``frontend_common.torch_rot90``)."""
    x = args[0]
    k = int(args[1]) if len(args) > 1 and args[1] is not None else 1
    dims = args[2] if len(args) > 2 and args[2] is not None else [0, 1]
    plan = rot90_plan(ctx.ndim(x), k, dims, ctx.fail)
    for axis in plan.flips:
        x = ctx.emit(_op.flip(x, axis))
    return x if plan.perm is None else ctx.emit(_op.permute_dims(x, plan.perm))


@register("count_nonzero.default", "count_nonzero.dim_IntList")
def _count_nonzero(ctx: AtenContext, args):
    """``torch.count_nonzero``: the int64 count of non-zero entries over ``dim`` (an int, a
    list, or every axis)."""
    x, n = args[0], ctx.ndim(args[0])
    dim = args[1] if len(args) > 1 else None
    dims = list(range(n)) if dim is None or dim == [] else [
        int(d) % n for d in (dim if isinstance(dim, list | tuple) else [dim])]
    dt = ctx.dtype(x)
    nonzero = ctx.emit(_op.not_equal(x, ctx.emit(const(np.array(0, dt), dt))))
    return ctx.emit(_op.sum(ctx.emit(_op.astype(nonzero, "int64")), dims))


# ------------------------------------------------------------------ more models' ops
register("remainder.Tensor", "remainder.Scalar")(_binary(_op.floor_mod, lambda a, b: a % b))
register("fmod.Tensor", "fmod.Scalar")(_binary(_op.mod, lambda a, b: float(np.fmod(a, b))))


def _float_operands(ctx: AtenContext, a, b):
    """``a`` and ``b`` as Relax tensors of one float dtype (integers promoted as torch's
    ``atan2`` / ``hypot`` do) and a constant maker of that dtype."""
    x, y = _operands(ctx, a, b)
    dt = true_divide_dtype(ctx.dtype(x))
    if dt != ctx.dtype(x):
        x, y = (ctx.emit(_op.astype(v, dt)) for v in (x, y))
    return x, y, lambda v: const(np.array(v, dtype=dt), dt)


@register("atan2.default")
def _atan2(ctx: AtenContext, args):
    """PointPillars' azimuth feature: composed from ``atan`` (Relax has no ``atan2``)."""
    y, x, scalar = _float_operands(ctx, args[0], args[1])
    return ctx.emit(torch_math.atan2(_op, y, x, scalar, ctx.emit))


@register("hypot.default")
def _hypot(ctx: AtenContext, args):
    a, b, _ = _float_operands(ctx, args[0], args[1])
    return ctx.emit(torch_math.hypot(_op, a, b, ctx.emit))


@register("copysign.Tensor", "copysign.Scalar")
def _copysign(ctx: AtenContext, args):
    a, b, scalar = _float_operands(ctx, args[0], args[1])
    return ctx.emit(torch_math.copysign(_op, a, b, scalar, ctx.emit))


@register("lerp.Scalar", "lerp.Tensor")
def _lerp(ctx: AtenContext, args):
    """StyleGAN's truncation trick, ``w_avg.lerp(w, psi)``, by torch's two-sided formula."""
    start, end = _operands(ctx, args[0], args[1])
    dt = ctx.dtype(start)
    weight = args[2]
    if isinstance(weight, Expr) and ctx.dtype(weight) != dt:
        weight = ctx.emit(_op.astype(weight, dt))
    return ctx.emit(torch_math.lerp(_op, start, end, weight,
                                    lambda v: const(np.array(v, dtype=dt), dt), ctx.emit))


@register("kthvalue.default")
def _kthvalue(ctx: AtenContext, args):
    """The ``k``-th smallest along ``dim`` and its int64 index (MaskGIT's re-masking
    threshold): the last of an ascending ``topk`` of ``k``."""
    x, k = args[0], int(args[1])
    axis = int(args[2] if len(args) > 2 else -1) % ctx.ndim(x)
    keep = bool(args[3]) if len(args) > 3 else False
    n = ctx.shape(x)[axis]
    if isinstance(n, int) and not 1 <= k <= n:
        raise ctx.fail(f"kthvalue: k = {k} is outside [1, {n}] along dim {axis}")
    tup = ctx.emit(_op.topk(x, k, axis, "both", False, "int64"))
    out = []
    for i in (0, 1):
        t = ctx.emit(_op.take(ctx.emit(TupleGetItem(tup, i)), const(k - 1, "int64"), axis))
        out.append(ctx.emit(_op.expand_dims(t, axis)) if keep else t)
    return out[0], out[1]


@register("isnan.default")
def _isnan(ctx: AtenContext, args):
    return ctx.emit(_op.isnan(args[0]))


def _static_count(ctx: AtenContext, x, dims) -> int:
    shape = ctx.shape(x)
    sizes = [shape[d] for d in dims]
    if not all(isinstance(s, int) for s in sizes):
        raise ctx.fail("the reduced dims must be static")
    return int(np.prod(sizes))


@register("var.correction", "std.correction", "var.dim", "std.dim")
def _var(ctx: AtenContext, args):
    """Variance / std with any Bessel correction: sum((x - mean)^2) / (N - correction)."""
    return _spread_and_mean(ctx, args)[0]


@register("var_mean.correction", "std_mean.correction", "var_mean.dim", "std_mean.dim")
def _var_mean(ctx: AtenContext, args):
    """``torch.var_mean`` / ``std_mean``: the spread as ``_var`` takes it and the mean it was
    centred by, over the same dims (keepdim or squeezed alike)."""
    return _spread_and_mean(ctx, args)


def _spread_and_mean(ctx: AtenContext, args):
    """(std or variance, as the target's name says; the mean) of a var / std / var_mean /
    std_mean call: (x, dim, unbiased, keepdim) for the ``.dim`` overloads, (x, dim, *,
    correction, keepdim) for ``.correction``."""
    x, dims = args[0], args[1] if len(args) > 1 else None
    n = ctx.ndim(x)
    dims = [int(d) % n for d in dims] if dims else list(range(n))
    name = ctx.node.target.__name__
    if name.endswith("dim"):  # (x, dim, unbiased, keepdim)
        correction = 1 if len(args) < 3 or args[2] is None else int(bool(args[2]))
    else:  # (x, dim, *, correction, keepdim)
        correction = 1 if len(args) < 3 or args[2] is None else args[2]
    keep = bool(args[3]) if len(args) > 3 and args[3] is not None else False
    count = max(_static_count(ctx, x, dims) - correction, 0)
    mean = ctx.emit(_op.mean(x, dims, True))
    cen = ctx.emit(_op.subtract(x, mean))
    out = _op.divide(_op.sum(_op.multiply(cen, cen), dims, keep), ctx.tensor(float(count), x))
    spread = ctx.emit(_op.sqrt(out) if name.startswith("std") else out)
    return spread, (mean if keep else ctx.emit(_op.squeeze(mean, dims)))


@register("linalg_vector_norm.default")
def _vector_norm(ctx: AtenContext, args):
    x, p, dims, keep, dtype = (list(args) + [None] * 5)[:5]
    if dtype is not None:
        x = ctx.emit(_op.astype(x, torch_dtype(dtype)))
    dims = [int(d) for d in dims] if dims else None
    keep = bool(keep)
    p = 2.0 if p is None else float(p)
    a = _op.abs(x)
    if p == 2:
        out = _op.sqrt(_op.sum(_op.multiply(x, x), dims, keep))
    elif p == 1:
        out = _op.sum(a, dims, keep)
    elif p == np.inf:
        out = _op.max(a, dims, keep)
    elif p == -np.inf:
        out = _op.min(a, dims, keep)
    elif p == 0:
        out = _op.sum(_op.astype(_op.not_equal(x, ctx.tensor(0.0, x)), ctx.dtype(x)), dims, keep)
    else:
        s = _op.sum(_op.power(a, ctx.tensor(p, x)), dims, keep)
        out = _op.power(s, ctx.tensor(1.0 / p, x))
    return ctx.emit(out)


@register("adaptive_max_pool2d.default")
def _adaptive_max_pool2d(ctx: AtenContext, args):
    """Adaptive max pooling: a plain max_pool2d when the sizes divide, else one max per cell."""
    x, size = args[0], [int(s) for s in args[1]]
    h, w = ctx.shape(x)[2:]
    if not isinstance(h, int) or not isinstance(w, int):
        raise ctx.fail("adaptive max pooling needs static spatial dims")
    if h % size[0] == 0 and w % size[1] == 0:
        k = [h // size[0], w // size[1]]
        return (ctx.emit(_op.nn.max_pool2d(x, k, k)), None)
    if size[0] * size[1] > 256:
        raise ctx.fail(f"adaptive max pooling {h}x{w} -> {size} (not divisible) has too many "
                       "cells to unroll")

    def cell(i, n, out):  # torch's window [floor(i*n/out), ceil((i+1)*n/out))
        return i * n // out, -(-(i + 1) * n // out)

    rows = []
    for i in range(size[0]):
        h0, h1 = cell(i, h, size[0])
        cols = []
        for j in range(size[1]):
            w0, w1 = cell(j, w, size[1])
            part = _op.strided_slice(x, [2, 3], [h0, w0], [h1, w1])
            cols.append(ctx.emit(_op.max(part, [2, 3], True)))
        rows.append(ctx.emit(_op.concat(cols, 3)) if len(cols) > 1 else cols[0])
    return (ctx.emit(_op.concat(rows, 2)) if len(rows) > 1 else rows[0], None)


@register("index.Tensor", "_unsafe_index.Tensor")
def _index(ctx: AtenContext, args):
    """x[i0, i1, ...] with integer index tensors (None = a whole axis), numpy placement."""
    x, indices = args[0], list(args[1])
    n = ctx.ndim(x)
    pos = [i for i, t in enumerate(indices) if t is not None]
    if not pos:
        return x
    if any(ctx.dtype(indices[i]) == "bool" for i in pos):
        raise ctx.fail("indexing with a boolean mask gives a data-dependent shape; it is not "
                       "supported (use torch.where or masked_fill)")
    if len(pos) == 1:  # one index tensor: a take along that axis (wrap = negative indices)
        return ctx.emit(_op.take(x, indices[pos[0]], pos[0], mode="wrap"))
    shape = ctx.shape(x)
    sizes = [shape[i] for i in pos]
    if not all(isinstance(s, int) for s in sizes):
        raise ctx.fail("indexing several axes at once needs them static")
    rest = [d for d in range(n) if d not in pos]
    moved = x if pos == list(range(len(pos))) else _op.permute_dims(x, pos + rest)
    flat = ctx.emit(_op.reshape(moved, ctx.shape_expr([int(np.prod(sizes))] +
                                                      [shape[d] for d in rest])))
    linear, stride = None, 1
    for i, size in reversed(list(zip(pos, sizes, strict=True))):
        t = indices[i]
        t = t if ctx.dtype(t) == "int64" else _op.astype(t, "int64")
        t = _op.floor_mod(t, const(np.array(size, "int64")))  # negative indices wrap
        t = t if stride == 1 else _op.multiply(t, const(np.array(stride, "int64")))
        linear = t if linear is None else _op.add(linear, t)
        stride *= size
    linear = ctx.emit(linear)
    out = ctx.emit(_op.take(flat, linear, 0))
    adjacent = pos == list(range(pos[0], pos[0] + len(pos)))
    if adjacent and pos[0] > 0:  # the indexed block stays where the indexed axes were
        k, lead = ctx.ndim(linear), pos[0]
        order = list(range(k, k + lead)) + list(range(k)) + list(range(k + lead, k + len(rest)))
        out = ctx.emit(_op.permute_dims(out, order))
    return out


# size comparisons torch.export records for its runtime assertions on data-dependent sizes
register("operator.ge")(lambda ctx, a: ctx.simplify(a[0] >= a[1]))
register("operator.le")(lambda ctx, a: ctx.simplify(a[0] <= a[1]))
register("operator.gt")(lambda ctx, a: ctx.simplify(a[0] > a[1]))
register("operator.lt")(lambda ctx, a: ctx.simplify(a[0] < a[1]))
register("operator.eq")(lambda ctx, a: ctx.simplify(a[0] == a[1]))


@register("_assert_async.msg", "_assert_async.default", "_functional_assert_async.msg")
def _assert_async(ctx: AtenContext, args):
    """A check of a tensor's values torch.export records (``F.one_hot``'s indices in range):
    it computes nothing the program uses, and the compiled program does not check it."""
    return None


def _shift(left: bool):
    """``x >> y`` / ``x << y`` of integer tensors: the 4-bit unpacking of AWQ / GPTQ weights,
    ``(q >> 4) & 0xF``. Amounts outside [0, bits) shift every bit out, as torch does
    (``frontend_common.bit_shift``)."""

    def convert(ctx: AtenContext, args):
        a, b = args[0], args[1]
        like = a if isinstance(a, Expr) else b
        if any(isinstance(v, Expr) and not ctx.dtype(v).startswith(("int", "uint"))
               for v in (a, b)):
            raise ctx.fail("a bit shift is defined on integer tensors")
        known = b if not isinstance(b, Expr) else (
            b.data.numpy() if isinstance(b, Constant) else None)
        x, y = ctx.tensor(a, like), ctx.tensor(b, like)
        if ctx.dtype(x) != ctx.dtype(y):
            target = tensors_dtype(ctx.dtype(x), ctx.dtype(y), ctx.ndim(x) == 0,
                                   ctx.ndim(y) == 0)
            x, y = (v if ctx.dtype(v) == target else ctx.emit(_op.astype(v, target))
                    for v in (x, y))
        dt = ctx.dtype(x)
        return ctx.emit(shift(_op, x, y, left, dt, known,
                              lambda v: const(np.array(v, dt)), ctx.emit))

    return convert


register("__rshift__.Scalar", "__rshift__.Tensor", "bitwise_right_shift.Tensor",
         "bitwise_right_shift.Tensor_Scalar", "bitwise_right_shift.Scalar_Tensor")(_shift(False))
register("__lshift__.Scalar", "__lshift__.Tensor", "bitwise_left_shift.Tensor",
         "bitwise_left_shift.Tensor_Scalar", "bitwise_left_shift.Scalar_Tensor")(_shift(True))


@register("_assert_scalar.default")
def _assert_scalar(ctx: AtenContext, args):
    """A size assertion: checked now when it folds to a constant, else left to torch.export."""
    cond = args[0]
    if isinstance(cond, bool | int) and not cond:
        raise ctx.fail(f"the exported program's assertion fails for these shapes: {args[1]}")
    return None


@register("tril_indices.default", "triu_indices.default")
def _tri_indices(ctx: AtenContext, args):
    """tril_indices / triu_indices(row, col, offset=0, *, dtype=int64): the [2, N] row and
    column indices of the lower / upper triangle in row-major order, a constant (every
    argument is a number)."""
    row, col = int(args[0]), int(args[1])
    offset = int(args[2]) if len(args) > 2 and args[2] is not None else 0
    dtype = args[3] if len(args) > 3 and args[3] is not None else "int64"
    # the schema's default arrives as c10's ScalarType code (4: long), a keyword as a dtype
    dtype = {3: "int32", 4: "int64"}.get(dtype, dtype) if isinstance(dtype, int) else dtype
    dtype = dtype if isinstance(dtype, str) else torch_dtype(dtype)
    if row < 0 or col < 0:
        raise ctx.fail(f"row and col must be non-negative, got {row} and {col}")
    lower = ctx.node.target.__name__.startswith("tril")
    pick = np.tril_indices if lower else np.triu_indices
    rows, cols = pick(row, offset, col)
    return const(np.stack([rows, cols]).astype(dtype))
