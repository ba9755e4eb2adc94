"""ATen padding onto Relay: ``pad`` (its modes), ``constant_pad_nd`` (negative pads crop) and the
reflection / replication pads."""

from __future__ import annotations

from ... import op as _op
from ...op import nn as _nn
from .aten import _scalar_like, register


def _pad_pairs(ctx, x, pad):
    """torch's last-dim-first (before, after) list -> Relay's per-axis pad_width."""
    nd = len(ctx.shape(x))
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > nd:
        raise ctx.fail(f"pad {pad} does not fit a {nd}-D tensor")
    width = [[0, 0] for _ in range(nd)]
    for i in range(len(pad) // 2):
        width[nd - 1 - i] = [pad[2 * i], pad[2 * i + 1]]
    return width


def _crop(ctx, x, width):
    """The negative entries of ``width`` as a crop (torch's constant pad with a negative width
    removes that many elements); ``width`` with them zeroed."""
    s = ctx.shape(x)
    for d, (a, b) in enumerate(width):
        if a < 0 or b < 0:
            x = _op.strided_slice(x, [max(-a, 0)], [s[d] - max(-b, 0)], [1], axes=[d])
    return x, [[max(a, 0), max(b, 0)] for a, b in width]


def _pad_expr(ctx, x, pad, mode, value):
    width = _pad_pairs(ctx, x, pad)
    if any(a < 0 or b < 0 for a, b in width):
        if mode != "constant":
            raise ctx.fail(f"negative padding (cropping) in {mode!r} mode")
        x, width = _crop(ctx, x, width)
        if not any(a or b for a, b in width):
            return x
    if mode == "constant":
        return _nn.pad(x, width, _scalar_like(ctx, 0.0 if value is None else value, x))
    if mode == "reflect":
        return _nn.mirror_pad(x, width, mode="REFLECT")
    if mode == "replicate":
        return _nn.pad(x, width, pad_mode="edge")
    if mode == "circular":
        for d, (a, b) in enumerate(width):
            if a or b:
                n = ctx.shape(x)[d]
                parts = [_op.strided_slice(x, [n - a], [n], [1], axes=[d])] if a else []
                parts.append(x)
                if b:
                    parts.append(_op.strided_slice(x, [0], [b], [1], axes=[d]))
                x = _op.concatenate(parts, axis=d)
        return x
    raise ctx.fail(f"padding mode {mode!r} is not supported")


@register("pad")
def _pad(ctx, args):
    x, pad = args[0], args[1]
    mode = args[2] if len(args) > 2 and args[2] is not None else "constant"
    return _pad_expr(ctx, x, pad, mode, args[3] if len(args) > 3 else None)


@register("constant_pad_nd")
def _constant_pad_nd(ctx, args):
    return _pad_expr(ctx, args[0], args[1], "constant", args[2] if len(args) > 2 else 0)


@register("reflection_pad1d", "reflection_pad2d", "reflection_pad3d")
def _reflection_pad(ctx, args):
    return _pad_expr(ctx, args[0], args[1], "reflect", None)


@register("replication_pad1d", "replication_pad2d", "replication_pad3d")
def _replication_pad(ctx, args):
    return _pad_expr(ctx, args[0], args[1], "replicate", None)
