"""Computes of ``nn.depth_to_space`` and ``nn.space_to_depth`` (NCHW or NHWC; depth_to_space's
DCR and CRD modes): one injective stage each, whose index arithmetic the injective schedule
vectorizes and fusion merges with neighbours. Before, Relay ran both as numpy kernels."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from .utils import compute, out_dims, out_tensor_types
from .utils import i32 as _i


def _nchw_index(layout: str, i):
    """``(n, c, h, w)`` of an index tuple ``i`` in ``layout``."""
    if layout == "NCHW":
        return i
    if layout == "NHWC":
        n, h, w, c = i
        return n, c, h, w
    raise ValueError(f"depth_to_space / space_to_depth: layout must be NCHW or NHWC, got "
                     f"{layout!r}")


def _index(d):
    """A channel count in index arithmetic: an int32 constant, or the size expression of a
    symbolic kernel (whose shape rule stated the divisibility it needs)."""
    return _i(int(d)) if isinstance(d, int | E.IntImm) else d


def _in_layout(layout: str, n, c, h, w):
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def depth_to_space(x, block_size: int, layout: str = "NCHW", mode: str = "DCR", shape=None):
    """Moves ``block_size**2`` channel blocks into space: output ``(n, c, y, x)`` reads channel
    ``(y % b * b + x % b) * C' + c`` (DCR) or ``c * b * b + y % b * b + x % b`` (CRD) at
    ``(y // b, x // b)``, where ``C'`` is the output's channel count."""
    if mode not in ("DCR", "CRD"):
        raise ValueError(f"nn.depth_to_space: mode must be DCR or CRD, got {mode!r}")
    b = int(block_size)
    if shape is None:
        n, c, h, w = _nchw_index(layout, list(x.shape))
        shape = _in_layout(layout, n, c // (b * b), h * b, w * b)
    cout = _index(_nchw_index(layout, list(shape))[1])
    bb = _i(b)

    def body(*i):
        n, c, y, xx = _nchw_index(layout, i)
        by, bx = E.FloorMod(y, bb), E.FloorMod(xx, bb)
        if mode == "DCR":
            src = (by * bb + bx) * cout + c
        else:
            src = c * _i(b * b) + by * bb + bx
        return x[_in_layout(layout, n, src, E.FloorDiv(y, bb), E.FloorDiv(xx, bb))]

    return te.compute(list(shape), body, name="depth_to_space")


def space_to_depth(x, block_size: int, layout: str = "NCHW", shape=None):
    """Moves ``block_size x block_size`` blocks of space into channels (TVM's order, as ONNX's
    DCR): output channel ``(by * b + bx) * C + c`` at ``(y, x)`` reads channel ``c`` at
    ``(y * b + by, x * b + bx)``."""
    b = int(block_size)
    n, c, h, w = _nchw_index(layout, list(x.shape))
    if shape is None:
        shape = _in_layout(layout, n, c * b * b, h // b, w // b)
    cin = _index(c)
    bb = _i(b)

    def body(*i):
        n, k, y, xx = _nchw_index(layout, i)
        blk, ch = E.FloorDiv(k, cin), E.FloorMod(k, cin)
        by, bx = E.FloorDiv(blk, bb), E.FloorMod(blk, bb)
        return x[_in_layout(layout, n, ch, y * bb + by, xx * bb + bx)]

    return te.compute(list(shape), body, name="space_to_depth")


@compute("nn.depth_to_space")
def _depth_to_space(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    return [depth_to_space(inputs[0], int(attrs.block_size), attrs.layout, attrs.mode, shape)]


@compute("nn.space_to_depth")
def _space_to_depth(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    return [space_to_depth(inputs[0], int(attrs.block_size), attrs.layout, shape)]
