"""Channel blocks of the depthwise schedule: small planes ``CHANNEL_BLOCK`` channels a task.

The task's phased plane has its zero padding written once, each channel then copying only its
interior (``_channel_blocks``); on the smallest planes (``DEFER_MAX_PLANE``) the block's
epilogues run after all its convs, each conv into a packed plane of its own, the copies first
where ``FILLS_FIRST`` (``_deferred_block``). The switches stay in ``depthwise``, read from it
at call time.
"""

from __future__ import annotations

from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from .common import imm as _i
from .common import outer_loops as _outer_loops
from .depthwise_channel import _channel, _packed, _with_taps
from .depthwise_copy import _fill, _streamed_fill, _xph
from .depthwise_loops import _seq, _zeros


def _channel_blocks(ctx, g, x, w, out, epi, cb: int, parallel: bool) -> S.Stmt:
    """The conv ``cb`` channels a task (``_channel_block``; on the pool when ``parallel``): a
    task's phased plane has its padding zeroed once, each channel then copying only its
    interior; ``_deferred`` blocks run their epilogues after all their convs."""
    from . import depthwise

    size = g["xph_len"]

    def block(idx):
        b, gb = idx
        xph, wrap = _xph(g, size)
        k = ctx.fresh("dc")
        gi = gb * cb + k
        zero = _zeros(ctx, xph, 0, size, g["lanes"])
        if depthwise._deferred(g, epi):
            if depthwise._fills_first(g):  # (all the block's planes zeroed at once)
                xph, wrap = _xph(g, cb * size)
                zero = _zeros(ctx, xph, 0, cb * size, g["lanes"])
            return wrap(_seq([zero, _deferred_block(ctx, g, x, w, out, xph, b, gb, cb,
                                                    epi)]))
        if depthwise._streams(g, epi):  # (the padding zeroed before the loop)
            d = depthwise._reach_rows(g)
            parts = [_fill(ctx, g, xph, x, b, gi, False, (_i(0), d)), _channel(
                ctx, g, [xph], w, out, b, gi, epi, lambda oy, nrows: _streamed_fill(
                    ctx, g, xph, x, b, gi, oy + d, nrows, False))]
        else:
            parts = [_fill(ctx, g, xph, x, b, gi, False)]
            for mi in range(g["m"]):
                oc = gi * g["m"] + mi if g["m"] > 1 else gi
                parts.append(_channel(ctx, g, [xph], w, out, b, oc, epi))
        return wrap(S.SeqStmt([zero, S.For(k, 0, cb, S.ForKind.SERIAL, S.SeqStmt(parts))]))

    return _outer_loops(ctx, [g["n"], g["groups"] // cb], parallel, block)


def _deferred_block(ctx, g, x, w, out, xph, b, gb, cb: int, epi) -> S.Stmt:
    """Channels ``gb * cb ...`` of a block: each channel's interior copy and conv into its own
    packed plane of ``dw_convs``, then, in a second loop, each plane's epilogue into ``out``
    (``_fills_first``: the copies, each into its plane of ``xph``, in a loop before the convs)."""
    from . import depthwise

    nw = depthwise._narrow_lanes(g)
    csz = g["oh"] * g["ow"] + (nw - g["ow"] if nw else 0)
    convs = decl_buffer((cb * csz,), "float32", "dw_convs")
    loops = []
    size = g["xph_len"]
    first = depthwise._fills_first(g)
    if first:
        k = ctx.fresh("dc")
        plane = decl_buffer((size,), "float32", "dw_xphk", data=xph.data,
                            elem_offset=k * size + g["lead"])
        loops.append(S.For(k, 0, cb, S.ForKind.SERIAL, S.DeclBuffer(
            plane, _fill(ctx, g, plane, x, b, gb * cb + k, False))))
    for conv_pass in (True, False):
        k = ctx.fresh("dc")
        oc = gb * cb + k
        view = decl_buffer((csz,), "float32", "dw_conv", data=convs.data, elem_offset=k * csz)
        plane = decl_buffer((size,), "float32", "dw_xphk", data=xph.data,
                            elem_offset=k * size + g["lead"]) if first else xph
        taps = [ctx.fresh("dw_tap", w.dtype) for _ in g["taps"]]
        sums, epilogue = _packed(ctx, g, [plane], taps, out, b, oc, epi, nw, nw is not None, view)
        if not conv_pass:
            body = epilogue
        elif first:
            body = S.DeclBuffer(plane, _with_taps(g, taps, w, oc, sums))
        else:
            body = S.SeqStmt([_fill(ctx, g, xph, x, b, oc, False), _with_taps(g, taps, w, oc, sums)])
        loops.append(S.For(k, 0, cb, S.ForKind.SERIAL, S.DeclBuffer(view, body)))
    return S.Allocate(convs.data, "float32", [cb * csz], True,
                      S.DeclBuffer(convs, S.SeqStmt(loops)))

