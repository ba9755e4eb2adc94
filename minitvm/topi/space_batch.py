"""Computes of ``nn.space_to_batch_nd`` and ``nn.batch_to_space_nd`` (TensorFlow's, as TVM's):
one injective stage each, pure index arithmetic (the pad / crop folded into it), so the injective
schedule vectorizes them and fusion merges them with neighbours. Before, both ran in numpy."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from .utils import compute, dims, fconst, out_dims, out_tensor_types
from .utils import i32 as _i


def _c(v):
    """An extent in index arithmetic: an int32 constant, or a symbolic kernel's size
    expression."""
    return _i(v) if isinstance(v, int) else v


def _block_offset(batch, n, block):
    """``(o_1..o_m, b)``: output batch ``batch`` is ``flat(o_1..o_m) * n + b`` (row-major over
    the block offsets, the first block dim most significant)."""
    b = E.FloorMod(batch, _c(n))
    rest = E.FloorDiv(batch, _c(n))
    offs = []
    for blk in reversed(block):
        offs.append(E.FloorMod(rest, _i(blk)))
        rest = E.FloorDiv(rest, _i(blk))
    return offs[::-1], b


def space_to_batch_nd(x, block_shape, paddings, pad_value: float = 0.0, shape=None):
    """Output ``(o, n)`` batch at block position ``j_i`` reads ``x[n, j_i * b_i + o_i - lo_i]``
    (``pad_value`` outside ``x``); ``o`` is the block offset, leading the batch."""
    block = [int(b) for b in block_shape]
    pads = [(int(lo), int(hi)) for lo, hi in paddings]
    xs = dims(x)
    m, n = len(block), xs[0]
    if shape is None:
        shape = [n * _prod(block)] + [(xs[1 + k] + lo + hi) // b for k, (b, (lo, hi))
                                      in enumerate(zip(block, pads))] + list(xs[m + 1:])
    fill = fconst(float(pad_value), x.dtype)

    def body(*i):
        offs, b = _block_offset(i[0], n, block)
        src, conds = [b], []
        for k in range(m):
            p = i[1 + k] * _i(block[k]) + offs[k] - _i(pads[k][0])
            lo, hi = pads[k]
            if lo:
                conds.append(p >= _i(0))
            if hi:
                conds.append(p < _c(xs[1 + k]))
            # clamped, so a padded position never loads out of bounds
            src.append(E.Max(E.Min(p, _c(xs[1 + k] - 1)), _i(0)) if lo or hi else p)
        val = x[tuple(src + list(i[m + 1:]))]
        if not conds:
            return val
        c = conds[0]
        for extra in conds[1:]:
            c = E.And(c, extra)
        return E.Select(c, val, fill)

    return te.compute(list(shape), body, name="space_to_batch_nd")


def batch_to_space_nd(x, block_shape, crops, shape=None):
    """Output ``(n, y_i)`` reads batch ``flat(o) * N + n`` at ``u_i // b_i`` where
    ``u_i = y_i + crop_lo_i`` and ``o_i = u_i % b_i``."""
    block = [int(b) for b in block_shape]
    crops = [(int(lo), int(hi)) for lo, hi in crops]
    xs = dims(x)
    m = len(block)
    n = xs[0] // _prod(block)
    if shape is None:
        shape = [n] + [xs[1 + k] * b - lo - hi for k, (b, (lo, hi))
                       in enumerate(zip(block, crops))] + list(xs[m + 1:])

    def body(*i):
        flat, src = _i(0), []
        for k in range(m):
            u = i[1 + k] + _i(crops[k][0]) if crops[k][0] else i[1 + k]
            flat = flat * _i(block[k]) + E.FloorMod(u, _i(block[k]))
            src.append(E.FloorDiv(u, _i(block[k])))
        return x[tuple([flat * _c(n) + i[0]] + src + list(i[m + 1:]))]

    return te.compute(list(shape), body, name="batch_to_space_nd")


def _prod(vals) -> int:
    out = 1
    for v in vals:
        out *= int(v)
    return out


@compute("nn.space_to_batch_nd")
def _space_to_batch_nd(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    return [space_to_batch_nd(inputs[0], attrs.block_shape, attrs.paddings,
                              float(attrs.pad_value), shape)]


@compute("nn.batch_to_space_nd")
def _batch_to_space_nd(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    return [batch_to_space_nd(inputs[0], attrs.block_shape, attrs.crops, shape)]
