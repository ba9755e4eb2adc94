"""Float converters that reshape, split, join or select along axes: RESHAPE, SQUEEZE,
EXPAND_DIMS, TRANSPOSE, CONCATENATION, PACK / UNPACK, SPLIT, SLICE, STRIDED_SLICE, TILE,
BROADCAST_TO, REVERSE_V2."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ..common import ImportError_
from .op_context import _activation, _axis, _dims, _ints, register
from .tensor_data import infer_shape


@register("RESHAPE")
def _reshape(ctx):
    x = ctx.inputs[0]
    opt = ctx.options()
    has_attr = opt is not None and opt.NewShapeLength() > 0
    shape_in = ctx.importer.fold(ctx.inputs[1]) if len(ctx.inputs) > 1 and \
        ctx.inputs[1] is not None else None
    if isinstance(shape_in, _expr.Constant):
        shape = [int(v) for v in shape_in.data.numpy().reshape(-1)]
    elif has_attr:  # the attribute is the fallback when the shape input is computed
        shape = [int(v) for v in opt.NewShapeAsNumpy()]
    elif shape_in is not None and None in infer_shape(x):
        # computed from the dynamic batch (SHAPE -> STRIDED_SLICE -> PACK, as the converter
        # writes it): a dyn.reshape, its size known when the model runs
        return _op.reshape(_op.reshape(x, _op.cast(shape_in, "int64")), _known_dims(shape_in))
    elif shape_in is not None:
        raise ctx.fail("the new shape must be a constant tensor (or the new_shape attribute)")
    else:  # neither: the output tensor's declared shape
        t = ctx.importer.subgraph.Tensors(int(ctx.op.Outputs(0)))
        shape = [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []
    xs = infer_shape(x)
    if None in xs:
        return _op.reshape(x, _dynamic_target(ctx, xs, shape))
    total = int(np.prod(xs))
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = total // known
    return _op.reshape(x, shape)


def _known_dims(shape_in) -> list[int]:
    """The dims of a computed RESHAPE target that are constants where the importer stacked it
    (PACK of a run-time size and constants, as TF's converter writes it), 0 ('copy': the
    run-time size the dyn.reshape gives) for the others, so the dims a later converter needs
    (a conv's channels) stay static in the type."""
    from ...op.op import Op

    if isinstance(shape_in, _expr.Call) and isinstance(shape_in.op, Op) and \
            shape_in.op.name == "stack" and isinstance(shape_in.args[0], _expr.Tuple):
        out = []
        for f in shape_in.args[0].fields:
            v = f.data.numpy() if isinstance(f, _expr.Constant) else None
            out.append(int(v) if v is not None and v.size == 1 and int(v) > 0 else 0)
        return out
    n = int(infer_shape(shape_in)[0])
    return [0] * n


def _dynamic_target(ctx, xs, shape: list[int]) -> list[int]:
    """RESHAPE of an input with run-time dims (None in ``xs``: the batch, a sequence length,
    an image size): a target with one -1 keeps it (Relay sizes that dim when the model runs;
    TFLite allows no other special value, and its 0 is a dim of size 0, which Relay's reshape
    would read as 'copy', so a 0 is refused); a static target whose first dim is the batch the
    file stores for the input (a model saved at batch 1 writes ``[1, ...]``), where only the
    batch is dynamic and the other dims hold the rest of the input, carries the batch through
    (that dim becomes -1); any other static target fixes a size the input leaves open, which
    no size but the stored one allows."""
    dims = "(" + ", ".join("?" if d is None else str(d) for d in xs) + ")"
    if 0 in shape:
        raise ctx.fail(f"the new shape {shape} of the input {dims} has a dim of size 0")
    if -1 in shape:
        return shape
    t = ctx.importer.subgraph.Tensors(ctx.input_ids[0])
    stored = [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []
    if xs[0] is None and None not in xs[1:]:
        rest = int(np.prod(xs[1:]))
        if shape and stored and shape[0] == stored[0] and int(np.prod(shape[1:])) == rest:
            return [-1, *shape[1:]]
        raise ctx.fail(f"the new shape {shape} folds the dynamic batch of the input {dims} "
                       "into other dims (the model reshapes for its stored batch only)")
    raise ctx.fail(f"the new shape {shape} is static but the input {dims} has run-time dims "
                   f"(stored {tuple(stored)}): the model reshapes for its stored sizes only "
                   "(a -1, or a shape computed from SHAPE, keeps them open)")


@register("CONCATENATION")
def _concat(ctx):
    opt = ctx.options()
    axis = int(opt.Axis())
    if ctx.layout == "NCHW":  # (``layout.convert_in_nchw``: 4-D inputs in NCHW)
        axis = (0, 2, 3, 1)[axis % 4]
    out = _op.concatenate([e for e in ctx.inputs if e is not None], axis)
    return _activation(ctx, out, opt.FusedActivationFunction())


@register("SQUEEZE")
def _squeeze(ctx):
    opt = ctx.options()
    dims = [int(d) for d in opt.SqueezeDimsAsNumpy()] if opt is not None and \
        opt.SqueezeDimsLength() else None
    return _op.squeeze(ctx.inputs[0], axis=dims)


@register("TRANSPOSE")
def _transpose(ctx):
    return _op.transpose(ctx.inputs[0], [int(p) for p in ctx.value(1, "the permutation")])


@register("EXPAND_DIMS")
def _expand_dims(ctx):
    x = ctx.inputs[0]
    a = _ints(ctx, 1, "the axis")[0]
    ndim = len(infer_shape(x))
    return _op.expand_dims(x, a + ndim + 1 if a < 0 else a)


@register("PACK")
def _pack(ctx):
    opt = ctx.options()
    xs = [e for e in ctx.inputs if e is not None]
    ndim = len(infer_shape(xs[0]))
    return _op.stack(xs, _axis(int(opt.Axis()), ndim + 1))


@register("UNPACK")
def _unpack(ctx):
    x = ctx.inputs[0]
    shape = infer_shape(x)
    axis = _axis(int(ctx.options().Axis()), len(shape))
    n = shape[axis]
    if n is None:  # one output per index: a Relay function's outputs are fixed at import
        # (LiteRT itself refuses any size but the operator's Num there: that dim is static)
        dims = ", ".join("?" if d is None else str(d) for d in shape)
        at = "" if ctx.index is None else f" (operator {ctx.index})"
        num = int(ctx.options().Num())
        raise ImportError_(f"UNPACK{at}: axis {axis} of the input's dynamic shape ({dims}) is "
                           "a run-time size, and UNPACK has one output per index along it: "
                           f"its {num} outputs (Num) fix that size, which LiteRT also requires "
                           f"to be exactly {num}; give that dim the static size {num} in "
                           "shape_dict")
    parts = _op.split(x, n, axis)
    return [_op.squeeze(parts[i], [axis]) for i in range(n)]


def _split_at(x, axis, sizes):
    points, acc = [], 0
    for s in sizes[:-1]:
        acc += s
        points.append(acc)
    parts = _op.split(x, points, axis)
    return [parts[i] for i in range(len(sizes))]


@register("SPLIT")
def _split(ctx):
    x = ctx.inputs[1]
    shape = infer_shape(x)
    axis = _axis(_ints(ctx, 0, "the split axis")[0], len(shape))
    n = int(ctx.options().NumSplits())
    if shape[axis] is None:  # a dynamic axis: equal sections, its size checked when it runs
        parts = _op.split(x, n, axis)
        return [parts[i] for i in range(n)]
    if shape[axis] % n:
        raise ctx.fail(f"axis {axis} of size {shape[axis]} does not split into {n} parts")
    return _split_at(x, axis, [shape[axis] // n] * n)


@register("SPLIT_V")
def _split_v(ctx):
    x = ctx.inputs[0]
    shape = infer_shape(x)
    sizes = _ints(ctx, 1, "the split sizes")
    axis = _axis(_ints(ctx, 2, "the split axis")[0], len(shape))
    if shape[axis] is None:
        return _split_v_dynamic(ctx, x, shape, axis, sizes)
    if -1 in sizes:
        sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    if sum(sizes) != shape[axis]:
        raise ctx.fail(f"split sizes {sizes} do not add up to {shape[axis]}")
    return _split_at(x, axis, sizes)


def _split_v_dynamic(ctx, x, shape, axis: int, sizes: list[int]):
    """SPLIT_V along a dynamic axis: cut at the sizes before the last; the last piece is the
    rest (a -1), or is reshaped to its stated size, which the run checks."""
    if -1 in sizes[:-1]:
        raise ctx.fail(f"split sizes {sizes} along the dynamic axis {axis}: only the last may "
                       "be -1")
    parts = _split_at(x, axis, sizes)
    if sizes[-1] != -1:
        last = list(shape)
        last[axis] = sizes[-1]
        parts[-1] = _op.reshape(parts[-1], last)
    return parts


@register("SLICE")
def _slice(ctx):
    x = ctx.inputs[0]
    shape = infer_shape(x)
    begin, size = _ints(ctx, 1, "the begin"), _ints(ctx, 2, "the size")
    end = [d if s == -1 else b + s for b, s, d in zip(begin, size, shape)]
    return _op.strided_slice(x, begin, end)


@register("STRIDED_SLICE")
def _strided_slice(ctx):
    """Resolves begin/end/strides and the five masks statically (TF semantics), then slices
    positive-stride axes with strided_slice, reversed ones with take, and reshapes."""
    x = ctx.inputs[0]
    shape = infer_shape(x)
    ndim = len(shape)
    begin, end = _ints(ctx, 1, "the begin"), _ints(ctx, 2, "the end")
    strides = _ints(ctx, 3, "the strides") if len(ctx.inputs) > 3 and ctx.inputs[3] is not \
        None else [1] * len(begin)
    opt = ctx.options()
    bm, em, elm = opt.BeginMask(), opt.EndMask(), opt.EllipsisMask()
    nm, sm = opt.NewAxisMask(), opt.ShrinkAxisMask()
    if opt.Offset() if hasattr(opt, "Offset") else False:
        raise ctx.fail("the 'offset' form of STRIDED_SLICE is not supported")
    n = len(begin)
    if not elm:  # an implicit ellipsis at the end
        elm = 1 << n
        begin, end, strides, n = begin + [0], end + [0], strides + [1], n + 1
    consumed = sum(1 for i in range(n) if not (elm >> i) & 1 and not (nm >> i) & 1)
    ranges, out_shape, dim = [], [], 0  # ranges: per input dim (start, stop, step)
    shrunk, new_at = [], []  # input dims dropped; output positions of new axes
    for i in range(n):
        if (elm >> i) & 1:
            for _ in range(ndim - consumed):
                ranges.append((0, shape[dim], 1))
                out_shape.append(shape[dim])
                dim += 1
            continue
        if (nm >> i) & 1:
            new_at.append(len(out_shape))
            out_shape.append(1)
            continue
        if dim >= ndim:
            raise ctx.fail(f"the slice spec indexes {dim + 1} dims of a rank-{ndim} input")
        d = shape[dim]
        if d is None:  # a dynamic dim (the batch): only spans that need not know its size
            r, size = _dynamic_range(ctx, dim, begin[i], end[i], strides[i],
                                     (bm >> i) & 1, (em >> i) & 1, (sm >> i) & 1)
            ranges.append(r)
            if not (sm >> i) & 1:
                out_shape.append(size)
            else:
                shrunk.append(dim)
        elif (sm >> i) & 1:
            b = begin[i] + d if begin[i] < 0 else begin[i]
            if not 0 <= b < d:
                raise ctx.fail(f"index {begin[i]} is out of range for axis {dim} of size {d}")
            ranges.append((b, b + 1, 1))
            shrunk.append(dim)
        else:
            if strides[i] == 0:
                raise ctx.fail("a stride is 0")
            s = slice(None if (bm >> i) & 1 else begin[i], None if (em >> i) & 1 else end[i],
                      strides[i])
            r = s.indices(d)
            ranges.append(r)
            out_shape.append(len(range(*r)))
        dim += 1
    if dim != ndim:
        raise ctx.fail(f"the slice spec covers {dim} dims of a rank-{ndim} input")
    # static axes: resolved ranges (a reversed one taken after the slice); the dynamic one as
    # written, negative indices and all: strided_slice resolves them against its run-time size
    pos = [r if r[2] > 0 or shape[k] is None else (0, shape[k], 1)
           for k, r in enumerate(ranges)]
    out = x
    if any(r != (0, shape[k], 1) for k, r in enumerate(pos)):
        out = _op.strided_slice(
            out, [r[0] if shape[k] is None else max(r[0], 0) for k, r in enumerate(pos)],
            [r[1] if shape[k] is None or r[1] is None else max(r[1], r[0], 0)
             for k, r in enumerate(pos)],
            [r[2] for r in pos])
    for k, r in enumerate(ranges):
        if r[2] < 0 and shape[k] is not None:
            out = _op.take(out, _expr.const(np.array(list(range(*r)), "int32")), axis=k)
    if out_shape.count(None) > 1:  # several run-time dims: no reshape target holds them
        if shrunk:  # (a shrunk run-time index left no row: squeeze refuses it when it runs)
            out = _op.squeeze(out, shrunk)
        for p in new_at:
            out = _op.expand_dims(out, p)
        return out
    return _op.reshape(out, _dims(ctx, out_shape))


def _dynamic_range(ctx, dim: int, begin: int, end: int, stride: int, bm: int, em: int,
                   sm: int):
    """(start, stop or None: to the end, step) and the output size (None: dynamic, 1: one
    index) of STRIDED_SLICE on a dim of unknown size, as TF writes them: strided_slice resolves
    a negative index against the run-time size and clamps as TF does; a masked begin / end
    runs from / to the end the stride walks from / to. A shrunk index out of range at run time
    leaves no row, which the reshape dropping the axis refuses."""
    if stride == 0:
        raise ctx.fail("a stride is 0")
    if sm:
        return (begin, None if begin == -1 else begin + 1, 1), 1
    start = (0 if stride > 0 else -1) if bm else begin
    stop = (None if stride > 0 else -(2 ** 31)) if em else end
    return (start, stop, stride), None


@register("TILE")
def _tile(ctx):
    return _op.tile(ctx.inputs[0], _ints(ctx, 1, "the multiples"))


@register("BROADCAST_TO")
def _broadcast_to(ctx):
    return _op.broadcast_to(ctx.inputs[0], _ints(ctx, 1, "the target shape"))


@register("REVERSE_V2")
def _reverse(ctx):
    x = ctx.inputs[0]
    ndim = len(infer_shape(x))
    for a in _ints(ctx, 1, "the axes"):
        x = _op.reverse(x, _axis(a, ndim))
    return x
