"""Computes of the injective data-movement operators (reshape, transpose, slices, concat...)."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .layout import Layout, primal_extents, primal_groups
from .shape import slice_start
from .utils import (
    compute,
    dims,
    dims_equal,
    load_bcast,
    out_dims,
    out_tensor_types,
    pick_piece,
    slice_params,
)
from .utils import i32 as _i


def _c(v):
    """An int32 constant of an int; a symbolic size's expression as it is."""
    return _i(v) if isinstance(v, int) else v


def _same_size(a, b) -> bool:
    if isinstance(a, int) or isinstance(b, int):
        return isinstance(a, int) and isinstance(b, int) and a == b
    if a is b:
        return True
    from ..arith import Analyzer

    return Analyzer().can_prove_equal(a, b)


def _kept_prefix(in_shape, out_shape) -> int:
    """How many leading dimensions a reshape with symbolic sizes keeps (0 for static shapes,
    indexed as they always were): those index the input as they are, so the flat index over
    the rest divides by no symbolic size where it need not (a sequence-first ``(197, n, 576) ->
    (197, n, 3, 192)``: none)."""
    if all(isinstance(d, int) for d in (*in_shape, *out_shape)):
        return 0
    k = 0
    while k < min(len(in_shape), len(out_shape)) and _same_size(in_shape[k], out_shape[k]):
        k += 1
    return k


def _product(dims):
    out = 1
    for d in dims:
        out = out * d
    return out


def _size_groups(in_shape, out_shape) -> list | None:
    """The shapes cut, from the right, into runs of equal size (``(197, n, 3, 64) -> (197 * n,
    192)``: ``[197, n] | [3, 64]`` and ``[197 * n] | [192]``) as ``[(in run, out run)]``, or
    None when a run's sizes cannot be proved equal."""
    groups: list = []
    i, j = len(in_shape), len(out_shape)
    while i > 0 and j > 0:
        a, b = [in_shape[i - 1]], [out_shape[j - 1]]
        i, j = i - 1, j - 1
        while not _same_size(_product(a), _product(b)):
            pa, pb = _product(a), _product(b)
            grow_in = i > 0 and (j == 0 or not isinstance(pa, int) or not isinstance(pb, int)
                                 or pa < pb)
            if grow_in:
                a.insert(0, in_shape[i - 1])
                i -= 1
            elif j > 0:
                b.insert(0, out_shape[j - 1])
                j -= 1
            else:
                return None
        groups.append((a, b))
    if any(d != 1 for d in in_shape[:i]) or any(d != 1 for d in out_shape[:j]):
        return None
    if groups:  # (leading unit dims join the first run)
        groups[-1] = (list(in_shape[:i]) + groups[-1][0], list(out_shape[:j]) + groups[-1][1])
    groups.reverse()
    return groups


def reshape_index(in_shape, out_shape, out_idx) -> list:
    """Indices into a tensor of ``in_shape`` for element ``out_idx`` of its reshape."""
    in_shape, out_shape = list(in_shape), list(out_shape)
    keep = _kept_prefix(in_shape, out_shape)
    if keep:
        return list(out_idx[:keep]) + reshape_index(in_shape[keep:], out_shape[keep:],
                                                    list(out_idx[keep:]))
    groups = None if all(isinstance(d, int) for d in (*in_shape, *out_shape)) else \
        _size_groups(in_shape, out_shape)
    if groups is not None and len(groups) > 1:  # symbolic sizes: each run on its own
        out, at = [], 0
        for a, b in groups:
            out += _flat_reshape_index(a, b, list(out_idx[at:at + len(b)]))
            at += len(b)
        return out
    return _flat_reshape_index(in_shape, out_shape, out_idx)


def _flat_reshape_index(in_shape, out_shape, out_idx) -> list:
    """``reshape_index`` through the flat index of the element (after the equal trailing
    dims)."""
    in_shape, out_shape = list(in_shape), list(out_shape)
    tail = []
    while in_shape and out_shape and in_shape[-1] == out_shape[-1]:
        in_shape.pop()
        out_shape.pop()
        tail.append(out_idx[len(out_shape)])
    tail.reverse()
    split = _split_inner(in_shape, out_shape, list(out_idx[:len(out_shape)]))
    if split is not None:
        return split + tail
    flat = None
    for d, n in zip(out_idx[:len(out_shape)], out_shape):
        if n == 1:
            continue
        flat = d if flat is None else flat * n + d
    if flat is None:
        flat = _i(0)
    lead = []
    for k in range(len(in_shape) - 1, -1, -1):
        n = in_shape[k]
        if n == 1:
            lead.append(_i(0))
        elif k == 0:
            lead.append(flat)
        else:
            lead.append(E.FloorMod(flat, n))
            flat = E.FloorDiv(flat, n)
    lead.reverse()
    return lead + tail


def _split_inner(in_shape, out_shape, out_idx):
    """Where the sizes are symbolic and one innermost dim is a multiple of the other
    (``(n, 192) -> (3 * n, 64)``), the larger one is split in two so that the innermost axis
    maps on its own: ``[j // 3, j % 3 * 64 + c]``, contiguous in ``c``, not ``(j * 64 + c) //
    192`` per element (a gather the vectorizer cannot turn into loads). None otherwise (static
    shapes index through the flat element as before)."""
    if not in_shape or not out_shape or all(isinstance(d, int) for d in (*in_shape, *out_shape)):
        return None
    a, b = in_shape[-1], out_shape[-1]
    if not (isinstance(a, int) and isinstance(b, int)) or a == b or min(a, b) < 2:
        return None
    if a % b == 0:  # the input's inner axis holds a // b of the output's
        idx = _flat_reshape_index([*in_shape[:-1], a // b, b], out_shape, out_idx)
        return [*idx[:-2], idx[-2] * b + idx[-1]]
    if b % a == 0:  # the output's inner axis holds b // a of the input's
        c = out_idx[-1]
        return _flat_reshape_index(in_shape, [*out_shape[:-1], b // a, a],
                                   [*out_idx[:-1], E.FloorDiv(c, a), E.FloorMod(c, a)])
    return None


def _reshape(attrs, inputs, out_type):
    t = out_tensor_types(out_type)[0]
    shape = out_dims(t)
    x = inputs[0]
    xs = dims(x)
    return [te.compute(shape, lambda *i: x[tuple(reshape_index(xs, shape, list(i)))] if xs
                       else x[()], name="reshape")]


for _n in ("reshape", "squeeze", "expand_dims", "nn.batch_flatten", "reshape_like",
           "contrib_reverse_reshape"):
    compute(_n)(_reshape)


@compute("transpose")
def _transpose(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    x = inputs[0]
    nd = len(shape)
    axes = list(attrs.axes) if attrs.axes else list(range(nd))[::-1]
    axes = [a + nd if a < 0 else a for a in axes]
    inv = [0] * nd
    for k, a in enumerate(axes):
        inv[a] = k
    return [te.compute(shape, lambda *i: x[tuple(i[inv[d]] for d in range(nd))],
                       name="transpose")]


def _broadcast(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    x = inputs[0]
    return [te.compute(shape, lambda *i: load_bcast(x, i), name="broadcast_to")]


compute("broadcast_to")(_broadcast)
compute("broadcast_to_like")(_broadcast)


@compute("concatenate")
def _concatenate(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    nd = len(shape)
    axis = attrs.axis + nd if attrs.axis < 0 else attrs.axis
    offsets, acc = [], 0
    for x in inputs:
        offsets.append(acc)
        acc += dims(x)[axis]

    def body(*i):
        def load(k):
            # indices clamped so every load is in bounds: a vector condition (the axis inside
            # the vector loop) evaluates both sides
            x, n = inputs[k], dims(inputs[k])[axis]
            if isinstance(n, int):
                j = E.Max(E.Min(i[axis] - offsets[k], _i(n - 1)), _i(0))
            else:  # (a symbolic extent: its last index as an expression of its dtype)
                last = n - 1
                j = E.Max(E.Min(i[axis] - offsets[k], last), E.IntImm(last.dtype, 0))
            return x[tuple(j if d == axis else i[d] for d in range(nd))]

        return pick_piece(i[axis], offsets, load)

    return [te.compute(shape, body, name="concatenate")]


@compute("strided_slice")
def _strided_slice(attrs, inputs, out_type):

    shape = out_dims(out_tensor_types(out_type)[0])
    x = inputs[0]
    xs = dims(x)
    params = slice_params(xs, attrs)
    starts, steps = [], []
    for d, n in enumerate(xs):
        if d in params and not isinstance(n, int):  # (a symbolic size: clamped as an expr)
            start, step = slice_start(n, params[d][0], params[d][2]), params[d][2]
        elif d in params:
            start, _, step = slice(*params[d]).indices(n)
        else:
            start, step = 0, 1
        starts.append(start)
        steps.append(step)
    return [te.compute(shape, lambda *i: x[tuple(i[d] * steps[d] + starts[d] if
                                                 (steps[d], starts[d]) != (1, 0) else i[d]
                                                 for d in range(len(xs)))],
                       name="strided_slice")]


@compute("split")
def _split(attrs, inputs, out_type):
    x = inputs[0]
    xs = dims(x)
    axis = attrs.axis + len(xs) if attrs.axis < 0 else attrs.axis
    outs, start = [], 0
    for k, t in enumerate(out_tensor_types(out_type)):
        shape = out_dims(t)
        outs.append(te.compute(shape, lambda *i, s=start: x[tuple(
            i[d] + s if d == axis and s else i[d] for d in range(len(xs)))], name=f"split{k}"))
        start += shape[axis]
    return outs


@compute("take")
def _take(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    data, ind = inputs
    ds, ins = dims(data), dims(ind)
    if attrs.axis is None:
        return [_take_flat(data, ind, shape, getattr(attrs, "mode", "clip") or "clip")]
    axis = attrs.axis + len(ds) if attrs.axis < 0 else attrs.axis
    n = ds[axis]
    mode = getattr(attrs, "mode", "clip") or "clip"
    if isinstance(n, int) and n == 0:
        return [_take_nothing(data, shape)]

    # (an index of a symbolic axis: computed in the size's dtype)
    dt = "int32" if isinstance(n, int) else n.dtype

    # ``batch_dims`` leading axes shared by data and indices: index ``i[:bd]`` of both
    bd = int(getattr(attrs, "batch_dims", 0) or 0)
    bd = bd + len(ins) if bd < 0 else bd
    nj = len(ins) - bd  # (the output axes the indices' own dims give)

    def body(*i):
        j = ind[tuple(i[:bd]) + tuple(i[axis:axis + nj])] if ins else ind[()]
        j = E.Cast(dt, j) if j.dtype != dt else j
        if mode == "wrap":
            j = E.FloorMod(j, n)
        else:
            last = _i(n - 1) if dt == "int32" else n - 1
            j = E.Max(E.Min(E.Select(j < 0, j + n, j) if mode == "fast" else j, last),
                      E.IntImm(dt, 0))
        idx = list(i[:axis]) + [j] + list(i[axis + nj:])
        return data[tuple(idx)]

    return [te.compute(shape, body, name="take")]


def _take_nothing(data, shape):
    """``take`` from an empty axis: no index has an element (clip's index would be 0 of
    nothing, wrap's a division by zero), so zeros, never a read outside ``data``. A program
    may take from an axis empty at run time whose result is not used (a loop of length 0)."""
    return te.compute(shape, lambda *i: E.const(0, data.dtype), name="take")


def _take_flat(data, ind, shape, mode: str):
    """``take`` without an axis: each index picks from the flattened ``data``."""
    ds, ins = dims(data), dims(ind)
    size = 1
    for d in ds:
        size *= d
    if size == 0:
        return _take_nothing(data, shape)

    def body(*i):
        j = ind[tuple(i)] if ins else ind[()]
        j = E.Cast("int32", j) if j.dtype != "int32" else j
        if mode == "wrap":
            j = E.FloorMod(j, _i(size))
        else:
            j = E.Max(E.Min(E.Select(j < 0, j + size, j) if mode == "fast" else j,
                            _i(size - 1)), _i(0))
        idx = []
        for d in reversed(ds):  # unravel the flat index, innermost axis first
            idx.append(E.FloorMod(j, _i(d)) if d != 1 else _i(0))
            j = E.FloorDiv(j, _i(d))
        return data[tuple(reversed(idx))]

    return te.compute(shape, body, name="take")


@compute("shape_of")
def _shape_of(attrs, inputs, out_type):
    """The (static) shape of the input as a 1-D tensor: a select over constants."""
    sizes = dims(inputs[0])
    out = out_tensor_types(out_type)[0]
    dtype = str(out.dtype)

    def body(i):
        v = E.const(0, dtype)
        for k, d in enumerate(sizes):  # (a symbolic size: the kernel's own variable)
            d = E.const(d, dtype) if isinstance(d, int) else E.Cast(dtype, d)
            v = E.Select(E.EQ(i, _i(k)), d, v)
        return v

    return [te.compute((len(sizes),), body, name="shape_of")]


@compute("layout_transform")
def _layout_transform(attrs, inputs, out_type):
    """Each output element reads the input element with the same primal coordinates: an
    output index is merged into one coordinate per primal axis (mixed radix over that axis and
    its sub-axes), which is split again over the source layout's axes."""
    x = inputs[0]
    src, dst = Layout(str(attrs.src_layout)), Layout(str(attrs.dst_layout))
    xs = dims(x)
    shape = out_dims(out_tensor_types(out_type)[0])
    primal_extents(src, xs)  # checks the rank
    src_groups, dst_groups = primal_groups(src), primal_groups(dst)

    def body(*i):
        idx = [None] * len(xs)
        for name, positions in dst_groups.items():
            coord = None
            for k in positions:
                coord = i[k] if coord is None else coord * _c(shape[k]) + i[k]
            src_pos = src_groups[name]
            for k in reversed(src_pos[1:]):
                idx[k] = E.FloorMod(coord, _c(xs[k]))
                coord = E.FloorDiv(coord, _c(xs[k]))
            idx[src_pos[0]] = coord
        return x[tuple(idx)]

    return [te.compute(shape, body, name="layout_transform")]


@compute("nn.pad")
def _pad(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    x = inputs[0]
    pad_value = inputs[1] if len(inputs) > 1 else None
    xs = dims(x)
    mode = attrs.pad_mode or "constant"
    if mode != "constant":
        return [_mirrored(x, attrs.pad_width, mode, shape)]
    before = [int(p[0]) for p in attrs.pad_width]
    after = [int(p[1]) for p in attrs.pad_width]

    def padded(d, n) -> bool:
        if isinstance(n, int) and isinstance(shape[d], int):
            return bool(before[d]) or shape[d] != n
        return bool(before[d] or after[d])  # (a symbolic size: padded where a width is)

    def body(*i):
        conds, idx = [], []
        for d, n in enumerate(xs):
            j = i[d] - before[d] if before[d] else i[d]
            if padded(d, n):
                conds.append(E.And(j >= 0, j < n))
                j = E.Max(E.Min(j, _i(n - 1) if isinstance(n, int) else n - 1), _i(0))
            idx.append(j)
        v = x[tuple(idx)]
        if not conds:
            return v
        c = conds[0]
        for k in conds[1:]:
            c = E.And(c, k)
        pv = pad_value[()] if pad_value is not None else E.FloatImm(x.dtype, 0.0)
        return E.Select(c, v, pv if pv.dtype == x.dtype else E.Cast(x.dtype, pv))

    return [te.compute(shape, body, name="pad")]


def _mirror_index(j, n, mode: str):
    """The source index of padded position ``j`` (relative to the data's start) along an axis
    of ``n`` (an int, or a size variable in a symbolic kernel): ``edge`` repeats the border,
    ``reflect`` mirrors about it (border once), ``symmetric`` mirrors beside it (border twice).
    The pads are at most one reflection wide (the type relations check it, or state it of a
    symbolic size); the clamp keeps any read inside the data."""
    def c(v):
        return _i(v) if isinstance(v, int) else v

    if mode == "edge" or (isinstance(n, int) and n == 1):
        return E.Max(E.Min(j, c(n - 1)), _i(0))
    low, high = (-j, c(2 * n - 2) - j) if mode == "reflect" else \
        (_i(-1) - j, c(2 * n - 1) - j)
    j = E.Select(j < 0, low, E.Select(j >= n, high, j))
    return E.Max(E.Min(j, c(n - 1)), _i(0))


def _mirrored(x, pad_width, mode: str, shape):
    """``x`` padded by repeating or mirroring its borders (``mode``: edge, reflect, symmetric)."""
    if mode not in ("edge", "reflect", "symmetric"):
        raise ValueError(f"pad mode {mode!r} is not one of constant, edge, reflect, symmetric")
    xs = dims(x)
    before = [int(p[0]) for p in pad_width]

    def body(*i):
        idx = []
        for d, n in enumerate(xs):
            j = i[d] - before[d] if before[d] else i[d]
            idx.append(_mirror_index(j, n, mode) if before[d] or not dims_equal(shape[d], n)
                       else j)
        return x[tuple(idx)]

    return te.compute(shape, body, name="pad")


@compute("nn.mirror_pad")
def _mirror_pad(attrs, inputs, out_type):
    """TVM's mirror_pad: REFLECT or SYMMETRIC padding of every axis."""
    shape = out_dims(out_tensor_types(out_type)[0])
    return [_mirrored(inputs[0], attrs.pad_width, str(attrs.mode).lower(), shape)]


@compute("reverse")
def _reverse(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    x = inputs[0]
    axis = attrs.axis + len(shape) if attrs.axis < 0 else attrs.axis
    return [te.compute(shape, lambda *i: x[tuple(shape[d] - 1 - i[d] if d == axis else i[d]
                                                 for d in range(len(shape)))], name="reverse")]


@compute("tile")
def _tile(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    x = inputs[0]
    xs = dims(x)
    lead = len(shape) - len(xs)
    return [te.compute(shape, lambda *i: x[tuple(E.FloorMod(i[lead + d], xs[d]) if xs[d] != 1
                                                 else _i(0) for d in range(len(xs)))],
                       name="tile")]


@compute("repeat")
def _repeat(attrs, inputs, out_type):
    """Every element ``repeats`` times along ``axis``: out[.., i, ..] = x[.., i // repeats, ..]."""
    shape = out_dims(out_tensor_types(out_type)[0])
    x = inputs[0]
    axis = attrs.axis + len(shape) if attrs.axis < 0 else attrs.axis
    r = int(attrs.repeats)
    return [te.compute(shape, lambda *i: x[tuple(E.FloorDiv(i[d], _i(r)) if d == axis else i[d]
                                                 for d in range(len(shape)))], name="repeat")]


@compute("stack")
def _stack(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    nd = len(shape)
    axis = attrs.axis + nd if attrs.axis < 0 else attrs.axis

    def body(*i):
        rest = tuple(i[d] for d in range(nd) if d != axis)
        return pick_piece(i[axis], list(range(len(inputs))), lambda k: inputs[k][rest])

    return [te.compute(shape, body, name="stack")]


_ = tir_op


@compute("gather")
def _gather(attrs, inputs, out_type):
    """``out[i] = data[i with dim axis replaced by indices[i]]`` (torch.gather, ONNX
    GatherElements); a negative index counts from the end, as the numpy reference's."""
    from .transform_extra import clamp_index

    shape = out_dims(out_tensor_types(out_type)[0])
    data, ind = inputs
    nd = len(dims(data))
    axis = int(attrs.axis) % nd
    n = dims(data)[axis]

    def body(*i):
        j = clamp_index(ind[i], n)
        return data[tuple(j if d == axis else i[d] for d in range(nd))]

    return [te.compute(shape, body, name="gather")]


@compute("gather_nd")
def _gather_nd(attrs, inputs, out_type):
    """``out[b, y, r] = data[b, indices[:, b, y], r]``: Relay's convention puts the index tuple
    on the FIRST dim of ``indices`` (``batch_dims`` leading dims shared after it)."""
    from .transform_extra import clamp_index

    shape = out_dims(out_tensor_types(out_type)[0])
    data, ind = inputs
    ds, ins = dims(data), dims(ind)
    bd = int(attrs.batch_dims)
    m = ins[0]
    if not isinstance(m, int):  # (a symbolic kernel's: the rank its rule took, checked)
        m = int(attrs.index_rank) if attrs.index_rank is not None else len(ds) - bd
    ny = len(ins) - 1  # the (batch + y) dims of the index tensor, which lead the output

    def body(*i):
        lead = list(i[:ny])
        picked = [clamp_index(ind[(_i(k), *lead)], ds[bd + k]) for k in range(m)]
        return data[tuple(lead[:bd] + picked + list(i[ny:]))]

    return [te.compute(shape, body, name="gather_nd")]


@compute("nn.dilate")
def _dilate(attrs, inputs, out_type):
    """``x`` spread out by ``strides`` per axis, ``dilation_value`` in the holes."""
    shape = out_dims(out_tensor_types(out_type)[0])
    x = inputs[0]
    strides = [int(s) for s in attrs.strides]
    fill = E.const(float(attrs.dilation_value), x.dtype) if x.dtype.startswith("float") else \
        E.const(int(attrs.dilation_value), x.dtype)

    def body(*i):
        conds = [E.EQ(E.FloorMod(i[d], _i(s)), _i(0)) for d, s in enumerate(strides) if s != 1]
        idx = tuple(E.FloorDiv(i[d], _i(s)) if s != 1 else i[d] for d, s in enumerate(strides))
        if not conds:
            return x[idx]
        c = conds[0]
        for k in conds[1:]:
            c = E.And(c, k)
        return E.Select(c, x[idx], fill)

    return [te.compute(shape, body, name="dilate")]


@compute("unravel_index")
def _unravel_index(attrs, inputs, out_type):
    """``out[k, j]``: coordinate ``k`` of flat index ``indices[j]`` in the (runtime) ``shape``
    tensor, numpy's row-major unravel (an index past the end gives a first coordinate past
    its axis, where numpy raises)."""
    t = out_tensor_types(out_type)[0]
    shape = out_dims(t)
    idx, shape_t = inputs
    ndim = dims(shape_t)[0]
    dt = str(t.dtype)

    def body(k, *j):
        flat = idx[tuple(j)] if j else idx[()]
        flat = flat if flat.dtype == dt else E.Cast(dt, flat)
        out = E.const(0, dt)
        for a in range(ndim):  # coordinate a: flat // prod(dims[a+1:]) % dims[a]
            inner = flat
            for b in range(ndim - 1, a, -1):
                d = shape_t[(_i(b),)]
                inner = E.FloorDiv(inner, d if d.dtype == dt else E.Cast(dt, d))
            if a:
                d = shape_t[(_i(a),)]
                inner = E.FloorMod(inner, d if d.dtype == dt else E.Cast(dt, d))
            out = E.Select(E.EQ(k, _i(a)), inner, out)
        return out

    return [te.compute(shape, body, name="unravel_index")]


@compute("reverse_sequence")
def _reverse_sequence(attrs, inputs, out_type):
    """Along ``seq_axis``, the first ``lengths[b]`` elements of batch ``b`` reversed (a length
    is clamped into ``[0, n]``), the rest kept."""
    shape = out_dims(out_tensor_types(out_type)[0])
    x, lengths = inputs
    nd = len(shape)
    seq, bat = int(attrs.seq_axis) % nd, int(attrs.batch_axis) % nd
    n = shape[seq]
    dt = "int32" if isinstance(n, int) else n.dtype  # (a symbolic length: in its dtype)

    def body(*i):
        ln = lengths[(i[bat],)]
        ln = E.Cast(dt, ln) if ln.dtype != dt else ln
        ln = E.Max(E.Min(ln, _i(n) if dt == "int32" else n), E.IntImm(dt, 0))
        j = i[seq]
        src = E.Select(j < ln, ln - E.IntImm(dt, 1) - j if dt != "int32" else ln - 1 - j, j)
        return x[tuple(src if d == seq else i[d] for d in range(nd))]

    return [te.compute(shape, body, name="reverse_sequence")]


@compute("adv_index")
def _adv_index(attrs, inputs, out_type):
    """numpy advanced indexing ``data[i0, i1, ...]``: the index tensors broadcast together and
    pick along the leading axes (a negative index counts from the end)."""
    from .transform_extra import index_tensor

    data, *indices = inputs
    shape = out_dims(out_tensor_types(out_type)[0])
    nb = len(shape) - (len(dims(data)) - len(indices))
    return [index_tensor(data, indices, shape[:nb])]
