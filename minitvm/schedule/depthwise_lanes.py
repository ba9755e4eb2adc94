"""Depthwise convs on the smallest planes with their channels in the vector lanes.

Per block of 16 (or 8) channels the input planes and the filter taps are transposed once into
channel vectors, and each output pixel sums only its taps that read input (``_channel_lanes``;
which convs: ``depthwise.channel_lanes``, ``LANES_MAX_PLANE``).
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from .common import imm as _i
from .common import outer_loops as _outer_loops
from .depthwise_channel import _store


def _channel_lanes(ctx, g, x, w, out, epi) -> S.Stmt:
    """Blocks of 16 (else 8) channels, each: its input planes transposed into ``dw_xt[pixel,
    lane]`` and its taps into ``dw_wt[tap, lane]`` (strided gathers, once per block), then per
    output pixel an accumulator vector summing its taps that read input (the rest read
    padding: never computed), stored one channel a lane through the fused epilogue."""
    from . import depthwise

    cl = 16 if g["c"] % 16 == 0 else 8
    h, wd, kh, kw = g["h"], g["w"], g["kh"], g["kw"]
    sh, sw, dh, dw, pt, pl = (int(g[k]) for k in ("sh", "sw", "dh", "dw", "pt", "pl"))
    macs = g["n"] * g["c"] * g["oh"] * g["ow"] * kh * kw
    vec = S.ForKind.VECTORIZED

    def lanes(fbody):
        v = ctx.fresh("dl")
        return S.For(v, _i(0), _i(cl), vec, fbody(v))

    def block(idx):
        b, cb = idx
        c0 = cb * cl
        xt = decl_buffer((h * wd * cl,), "float32", "dw_xt")
        wt = decl_buffer((kh * kw * cl,), "float32", "dw_wt")
        acc = decl_buffer((cl,), "float32", "dw_acc", scope="local")
        pi, ti = ctx.fresh("dp"), ctx.fresh("dt")
        fill = [S.For(pi, _i(0), _i(h * wd), S.ForKind.SERIAL, lanes(lambda ll: S.BufferStore(
                    xt, x[b, c0 + ll, E.FloorDiv(pi, wd), E.FloorMod(pi, wd)],
                    [pi * cl + ll]))),
                S.For(ti, _i(0), _i(kh * kw), S.ForKind.SERIAL, lanes(lambda ll: S.BufferStore(
                    wt, w[c0 + ll, 0, E.FloorDiv(ti, kw), E.FloorMod(ti, kw)],
                    [ti * cl + ll])))]
        pixels = []
        for oy in range(g["oh"]):
            for ox in range(g["ow"]):
                taps = [(ky * kw + kx, iy * wd + ix) for ky in range(kh) for kx in range(kw)
                        for iy, ix in [(oy * sh - pt + ky * dh, ox * sw - pl + kx * dw)]
                        if 0 <= iy < h and 0 <= ix < wd]
                parts = [lanes(lambda ll: S.BufferStore(acc, E.FloatImm("float32", 0.0), [ll]))]
                parts += [lanes(lambda ll, t=t, q=q: S.BufferStore(
                    acc, acc[ll] + wt[t * cl + ll] * xt[q * cl + ll], [ll])) for t, q in taps]
                parts.append(lanes(lambda ll, oy=oy, ox=ox: _store(
                    out, acc[ll], [b, c0 + ll, _i(oy), _i(ox)], epi)))
                pixels.append(S.SeqStmt(parts))
        body = S.DeclBuffer(acc, S.SeqStmt([*fill, *pixels]))
        body = S.Allocate(acc.data, "float32", [cl], True, body)
        for buf, n in ((wt, kh * kw * cl), (xt, h * wd * cl)):
            body = S.Allocate(buf.data, "float32", [n], True, S.DeclBuffer(buf, body))
        return body

    return _outer_loops(ctx, [g["n"], g["c"] // cl], macs >= depthwise.PARALLEL_MIN_MACS, block)

