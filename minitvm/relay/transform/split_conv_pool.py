"""SplitConvPool: a conv2d whose large output only feeds a window pool (through per-channel
elementwise ops: the folded batch norm's add, a relu) runs as a few convs of a slice of the
output channels each, every one followed by its own pool, the pooled slices concatenated
along the channels.

A network's stem (ResNet's 7x7 / 2 conv to 64x112x112 and its 3x3 / 2 max pool, SqueezeNet's
3x3 / 2 conv to 64x111x111 and pool) writes a 3.2 MB map that the pool reads back: more than a
core's L2, so the conv's stores and the pool's loads both go out to L3. Split in parts of at
most ``PART_BYTES``, each part's map is still in L2 when its pool reads it; the concatenation
costs nothing (the memory plan has each pool write its slice of the concatenated output in
place: the batch is 1 and the slices are whole channel planes). The conv's work is unchanged
(each part reads the same input, which stays in cache). Measured on an Intel Xeon (2 MB L2),
one thread, a loaded machine, the model's kernels in graph order, ms, stem conv + pool whole ->
in four parts: regnet_like 1.84 + 0.24 -> 1.64 + 0.17, squeezenet 0.56 + 0.22 -> 0.52 + 0.14;
whole models, the pass off -> on in one process: regnet_like 0.948-0.962x, squeezenet
0.980-0.984x, resnext50_32x4d 0.98-1.00x, xception_mini 1.00x. Two parts of 1.6 MB measured
the same as four. Re-measured on the Intel Xeon LLVM calls "rocketlake" (one thread, one
process, 11 interleaved rounds, thread CPU ms, four parts / two parts of 32 channels / not split
(ONNX Runtime)): regnet_like 8.16 / 8.15 / 8.35 (8.29), squeezenet 4.26 / 4.29 / 4.38 (4.22).
There the 3 -> 16 7x7 / 2 part alone (its 14 x 32 tile split into two of 8 x 32) runs at the
same multiply-adds a second as the whole 3 -> 64 conv (0.36 against 1.42 ms). (Tried there:
leaving whole a conv whose input is over 1 MB, which every part reads again: Xception's 128 ->
128 1x1 at 64x64 (2 MB in and out) before its pool. xception_mini split / whole, one process,
interleaved, ms: 4.80 / 4.75, 4.95 / 4.84, then 4.69 / 4.73; those kernels in graph order 1.23 /
1.22. Within the noise: not kept.)

The conv must be a float32 NCHW / OIHW conv of batch 1 and groups 1 with a constant weight;
each op between it and the pool (NCHW ``nn.max_pool2d`` / ``nn.avg_pool2d``) takes the chain
and at most constants that broadcast per channel (``(O, 1, 1)``, ``(1, O, 1, 1)``, a scalar;
``nn.bias_add`` on axis 1); the conv and every op of the chain have no other use. The parts
are multiples of ``CHANNEL_MULTIPLE`` channels (whole vectors of the conv kernels).
"""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...ir.type import TensorType
from ...transform import channel_parts as channel_parts_
from ...transform.stats import record_stat
from ..analysis.op_names import calls_any
from ..expr import Call, Constant, const
from ..expr_functor import ExprMutator
from ..op.nn.nn import conv2d
from ..op.transform import concatenate
from ._pass_helpers import dataflow_use_counts, register
from .function_pass import function_pass

__all__ = ["SplitConvPool", "split_conv_pool"]

MIN_BYTES = channel_parts_.MIN_BYTES  # conv outputs of at least this many bytes are split
PART_BYTES = channel_parts_.PART_BYTES  # ... into parts of at most this many bytes
CHANNEL_MULTIPLE = channel_parts_.CHANNEL_MULTIPLE

_POOLS = frozenset({"nn.max_pool2d", "nn.avg_pool2d"})
_UNARY = frozenset({"nn.relu", "clip", "sigmoid", "tanh", "nn.leaky_relu", "negative"})
_BINARY = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum"})


def _name(e) -> str:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else ""


def _checked(e):
    try:
        return e.checked_type
    except (AttributeError, ValueError):
        return None


def _shape(e) -> tuple | None:
    t = _checked(e)
    if not isinstance(t, TensorType):
        return None
    try:
        return tuple(int(d) for d in t.shape)
    except TypeError:
        return None


def _per_channel(c, o: int) -> bool:
    """Does constant ``c`` broadcast against an ``(1, o, H, W)`` map per channel only?"""
    if not isinstance(c, Constant):
        return False
    s = tuple(c.data.shape)
    if len(s) > 4:
        return False
    full = (1,) * (4 - len(s)) + s
    return full[0] == 1 and full[2] == 1 and full[3] == 1 and full[1] in (1, o)


def _slice_const(c: Constant, lo: int, hi: int, axis_from_end: int) -> Constant:
    """Channels ``lo:hi`` of a per-channel constant (as it is where it has one value)."""
    a = c.data.numpy() if hasattr(c.data, "numpy") else np.asarray(c.data)
    ax = a.ndim - axis_from_end
    if ax < 0 or a.shape[ax] == 1:
        return c
    idx = [slice(None)] * a.ndim
    idx[ax] = slice(lo, hi)
    return const(np.ascontiguousarray(a[tuple(idx)]), str(a.dtype))


def match(pool, counts: dict[int, int]):
    """``(conv, chain from the conv's user to the pool's input)`` of a pool this pass splits,
    else None (sizes not checked)."""
    if _name(pool) not in _POOLS or str(getattr(pool.attrs, "layout", "NCHW")) != "NCHW":
        return None
    chain = []
    x = pool.args[0]
    while True:
        if counts.get(id(x), 0) != 1:
            return None
        name = _name(x)
        if name == "nn.conv2d":
            break
        if name in _UNARY:
            chain.append(x)
            x = x.args[0]
        elif name in _BINARY or name == "nn.bias_add":
            chain.append(x)
            a, b = x.args
            x = a if not isinstance(a, Constant) else b
        else:
            return None
    conv = x
    a = conv.attrs
    if (str(a.data_layout) != "NCHW" or str(a.kernel_layout) != "OIHW" or
            str(a.out_layout or "NCHW") != "NCHW" or int(a.groups) != 1 or
            not isinstance(conv.args[1], Constant)):
        return None
    shape = _shape(conv)
    if shape is None or len(shape) != 4 or shape[0] != 1:
        return None
    o = shape[1]
    for step in chain:
        if _name(step) == "nn.bias_add":
            b = step.args[1]
            if int(step.attrs.axis) not in (1, -3) or not isinstance(b, Constant) or \
                    tuple(b.data.shape) != (o,) or isinstance(step.args[0], Constant):
                return None
        elif _name(step) in _BINARY:
            p, q = step.args
            other = q if not isinstance(p, Constant) else p
            if isinstance(p, Constant) == isinstance(q, Constant) or not _per_channel(other, o):
                return None
        if str(getattr(_checked(step), "dtype", "")) != "float32":
            return None
    if str(getattr(_checked(conv), "dtype", "")) != "float32":
        return None
    return conv, chain


def parts(o: int, nbytes: int) -> list[tuple[int, int]]:
    """The channel ranges of a conv output of ``o`` channels and ``nbytes`` bytes (one range:
    not split)."""
    return channel_parts_.channel_parts(o, nbytes, MIN_BYTES, PART_BYTES)


class _Split(ExprMutator):
    def __init__(self, counts: dict[int, int]):
        super().__init__()
        self.counts = counts
        self.count = 0

    def visit_call(self, call):
        found = match(call, self.counts)
        if found is None:
            return super().visit_call(call)
        conv, chain = found
        shape = _shape(conv)
        ranges = parts(shape[1], 4 * int(np.prod(shape)))
        if len(ranges) < 2:
            return super().visit_call(call)
        data = self.visit(conv.args[0])
        w = conv.args[1].data
        w = w.numpy() if hasattr(w, "numpy") else np.asarray(w)
        a = conv.attrs
        outs = []
        for lo, hi in ranges:
            y = conv2d(data, const(np.ascontiguousarray(w[lo:hi]), str(w.dtype)),
                       strides=a.strides, padding=a.padding, dilation=a.dilation, groups=1,
                       channels=hi - lo, kernel_size=a.kernel_size, data_layout="NCHW",
                       kernel_layout="OIHW", out_layout=a.out_layout, out_dtype=a.out_dtype)
            for step in reversed(chain):
                if _name(step) == "nn.bias_add":
                    args = [y, _slice_const(step.args[1], lo, hi, 1)]
                elif _name(step) in _BINARY:
                    p, q = step.args
                    args = [y, _slice_const(q, lo, hi, 3)] if not isinstance(p, Constant) \
                        else [_slice_const(p, lo, hi, 3), y]
                else:
                    args = [y, *step.args[1:]]
                y = Call(step.op, args, step.attrs, None, step.span)
            outs.append(Call(call.op, [y], call.attrs, None, call.span))
        self.count += 1
        return concatenate(outs, axis=1)


def split_conv_pool(func):
    """SplitConvPool on one function: ``(function, convs split)``."""
    m = _Split(dataflow_use_counts(func.body))
    return m.visit(func), m.count


@register("SplitConvPool")
def SplitConvPool():  # noqa: N802 - the pass factory's name, as TVM names passes
    """Function pass (opt 3): a large conv output read only by a pool, split by channels."""

    def transform(func, mod, ctx):
        if func.attrs is not None and (func.attrs.get("Primitive", 0) or
                                       func.attrs.get("Compiler")):
            return func
        if not (calls_any(func, ("nn.conv2d",)) and calls_any(func, _POOLS)):
            record_stat("conv + pool pairs split", 0)
            return func  # (no conv or no pool: nothing to split)
        out, count = split_conv_pool(func)
        record_stat("conv + pool pairs split", count)
        return out

    return function_pass(transform, opt_level=3, name="SplitConvPool", required=["InferType"],
                         needs=["typed"])
