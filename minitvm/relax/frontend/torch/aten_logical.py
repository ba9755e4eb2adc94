"""``logical_or`` / ``logical_xor`` (``logical_and`` is with the arithmetic binaries in
``aten_ops``) and ``adaptive_max_pool3d`` onto ``relax.op``: a NaN-safe mask's ``|`` (torch
decomposes ``heaviside`` into one) and a 3D U-Net's or a video net's adaptive pooling."""

from __future__ import annotations

from ... import op as _op
from .context import AtenContext, register


def _truth(ctx: AtenContext, x):
    """``x`` as bool: nonzero is True, as torch's logical functions read any dtype."""
    if ctx.dtype(x) == "bool":
        return x
    return ctx.emit(_op.not_equal(x, ctx.tensor(0, x)))


def _logical(rop):
    def convert(ctx: AtenContext, args):
        return ctx.emit(rop(_truth(ctx, args[0]), _truth(ctx, args[1])))
    return convert


register("logical_or.default")(_logical(_op.logical_or))
register("logical_xor.default")(_logical(_op.logical_xor))


@register("adaptive_max_pool3d.default")
def _adaptive_max_pool3d(ctx: AtenContext, args):
    """(max, None): a plain ``max_pool3d`` where the sizes divide, else one max per cell over
    torch's windows ``[floor(i n / out), ceil((i + 1) n / out))``, unrolled up to 512 cells."""
    x, size = args[0], [int(s) for s in args[1]]
    dims = ctx.shape(x)[-3:]
    if not all(isinstance(d, int) for d in dims):
        raise ctx.fail("adaptive_max_pool3d needs static spatial dims")
    if all(d % s == 0 for d, s in zip(dims, size, strict=True)):
        k = [d // s for d, s in zip(dims, size, strict=True)]
        return ctx.emit(_op.nn.max_pool3d(x, k, k)), None
    cells = size[0] * size[1] * size[2]
    if cells > 512:
        raise ctx.fail(f"adaptive_max_pool3d {tuple(dims)} -> {tuple(size)} (not divisible) has "
                       f"{cells} cells to unroll (at most 512)")
    nd = len(ctx.shape(x))
    axes = [nd - 3, nd - 2, nd - 1]

    def window(i, n, out):
        return i * n // out, -(-(i + 1) * n // out)

    def merge(parts, axis):
        return ctx.emit(_op.concat(parts, axis)) if len(parts) > 1 else parts[0]

    planes = []
    for a in range(size[0]):
        d0, d1 = window(a, dims[0], size[0])
        rows = []
        for b in range(size[1]):
            h0, h1 = window(b, dims[1], size[1])
            cols = []
            for c in range(size[2]):
                w0, w1 = window(c, dims[2], size[2])
                part = _op.strided_slice(x, axes, [d0, h0, w0], [d1, h1, w1])
                cols.append(ctx.emit(_op.max(part, axes, True)))
            rows.append(merge(cols, axes[2]))
        planes.append(merge(rows, axes[1]))
    return merge(planes, axes[0]), None
