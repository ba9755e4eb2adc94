"""A convolution whose group count is a run-time size (``F.conv2d(x.reshape(1, b * c, h, w),
w_per_sample, groups=b)``: per-sample kernels, CondConv's and hypernetworks' batched conv
folded into channels; under a dynamic batch the group count is the batch). Relax's conv ops
take a static ``groups``, so the grouped conv is written as what it computes: each group's
input windows (one strided slice per kernel offset of the padded input, stacked: im2col) times
that group's kernels flattened to a matrix, one batched ``matmul`` over the groups. The shapes
the grouping assumes (input channels = groups x weight's channels, output channels a multiple
of the groups) are ``match_cast`` to that form, so a program called with other sizes fails at
run time instead of mixing groups."""

from __future__ import annotations

import itertools

from ... import op as rop
from ...struct_info import TensorStructInfo
from .context import AtenContext


def conv_symbolic_groups(ctx: AtenContext, x, w, stride: list[int], pads: list[int],
                         dilation: list[int], groups):
    """``conv{n}d(x, w, groups=groups)`` (symmetric ``pads``) for a symbolic ``groups``:
    (N, g*cg, *S) with (g*og, cg, *K) -> (N, g*og, *O), by windows and one batched matmul."""
    xs, ws = ctx.shape(x), ctx.shape(w)
    n = len(xs) - 2
    cg, kernel, spatial = ws[1], ws[2:], xs[2:]
    if not all(isinstance(d, int) for d in [cg, *kernel, *spatial]):
        raise ctx.fail(f"a convolution with a run-time group count {groups} needs static "
                       f"spatial dims and kernel, got input {xs} and weight {ws}")
    og = ctx.simplify(ws[0] // groups)
    dtype = ctx.dtype(x)
    # the grouping's shapes, checked when the program runs
    x = ctx.bb.match_cast(x, TensorStructInfo(ctx.shape_expr([xs[0], groups * cg, *spatial]),
                                              dtype))
    w = ctx.bb.match_cast(w, TensorStructInfo(ctx.shape_expr([groups * og, cg, *kernel]),
                                              ctx.dtype(w)))
    out = [(spatial[i] + 2 * pads[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
           for i in range(n)]
    if any(o < 1 for o in out):
        raise ctx.fail(f"the kernel {kernel} does not fit the padded input {spatial}")
    rows = ctx.simplify(xs[0] * groups)
    xg = ctx.emit(rop.reshape(x, ctx.shape_expr([rows, cg, *spatial])))
    if any(pads):
        xg = ctx.emit(rop.nn.pad(xg, [0, 0, 0, 0] + [p for p in pads for _ in (0, 1)]))
    axes = list(range(2, 2 + n))
    windows = []
    for off in itertools.product(*[range(k) for k in kernel]):
        lo = [off[i] * dilation[i] for i in range(n)]
        hi = [lo[i] + (out[i] - 1) * stride[i] + 1 for i in range(n)]
        win = rop.strided_slice(xg, axes, lo, hi, stride)
        windows.append(ctx.emit(rop.expand_dims(win, [2])))  # (N*g, cg, 1, *O)
    taps = len(windows)
    cols = windows[0] if taps == 1 else ctx.emit(rop.concat(windows, 2))  # (N*g, cg, kk, *O)
    plane = 1
    for o in out:
        plane *= o
    cols = ctx.emit(rop.reshape(cols, ctx.shape_expr([xs[0], groups, cg * taps, plane])))
    wm = ctx.emit(rop.reshape(w, ctx.shape_expr([groups, og, cg * taps])))
    y = ctx.emit(rop.matmul(wm, cols))  # (N, g, og, P)
    return ctx.emit(rop.reshape(y, ctx.shape_expr([xs[0], ctx.simplify(groups * og), *out])))
