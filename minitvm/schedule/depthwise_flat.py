"""Flat mode of the depthwise schedule: narrow stride-1 planes as one run of pixels.

A stride-1 depthwise conv whose output rows are as wide as its input rows (``OW == W``: "same"
padding in width) and narrower than ``FLAT_MAX_WIDTH`` (DS-CNN's 25x5 MFCC planes) has every
filter tap ``(ky, kx)`` of output pixel ``p = oy * W + ox`` at the constant offset
``(ky*dh - pt) * W + kx*dw - pl`` from ``p`` in the channel's plane read as one flat run, with
zero rows above and below it. Only the columns wrap: a tap reading left or right of the row
reads the neighbouring row's pixel, so each column offset's sum is kept (``select``) only where
``0 <= ox + kx*dw - pl < W``. Per channel the plane is then a few whole vectors (25x5: 7 and one
overlapping the last), each the sum of its taps' contiguous loads, stored straight into the
output through the fused epilogue; the grid mode instead computed ``OH x (W + kw - 1)``
positions (176 for 125 pixels) into a temporary and wrote the output from it row by row, each
row a 5-lane piece.

Per task (an image's block of channels) the channels' planes are copied first, each into a
zero-margined run of its own (the margins zeroed once per task), then convolved: a conv's
loads right after the copy's stores of the same plane would wait for them to reach the cache.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from .common import imm as _i
from .common import outer_loops as _outer_loops

# Output rows of at most this many pixels take flat mode (rows of 8 and more have row mode or
# narrow rows, whose vectors are whole or nearly). Zen 4, one thread, kernel alone with bias +
# ReLU, 64 channels 3x3 at 25x5 (us, grid -> flat): batch 1 6.18 -> 4.38, batch 4 20.7 -> 13.3.
FLAT_MAX_WIDTH = 7
# Planes of more than ``NARROW_BLOCK_MAX`` rows (several row blocks) with filters of at most
# FLAT_NARROW_MAX_TAPS taps take flat mode over narrow rows too. Zen 4, one thread, kernel alone
# (us, narrow rows -> flat), 64 channels: 3x3 at 10x7 + ReLU 3.71 -> 3.01, 14x7 4.47 -> 3.86,
# 20x6 5.09 -> 4.20; but 96 at 7x7 (one block of all rows) 3.20 -> 3.48, 5x5 at 14x7 + ReLU6
# 6.85 -> 7.77 (20x6: 9.14 -> 8.46).
FLAT_NARROW_MAX_TAPS = 9
FLAT_CHANNEL_BLOCK = 8  # channels a task: their margins zeroed once, their copies first


def applies(g) -> bool:
    """Can depthwise geometry ``g`` run in flat mode: one input and one output channel a group,
    stride 1, ``OW == W <= FLAT_MAX_WIDTH``?"""
    return (g["cg"] == 1 and g["m"] == 1 and g["sh"] == 1 and g["sw"] == 1
            and g["ow"] == g["w"] and g["ow"] <= FLAT_MAX_WIDTH and g["oh"] * g["ow"] >= 4)


def over_narrow(g, block_rows: int) -> bool:
    """Does flat mode take a narrow-rows plane of ``g`` (``FLAT_NARROW_MAX_TAPS``): more rows than
    narrow rows' one block of ``block_rows``, few taps?"""
    return g["oh"] > block_rows and g["kh"] * g["kw"] <= FLAT_NARROW_MAX_TAPS


def layout(g) -> tuple[int, int]:
    """(lead, stride): the zeros before a channel's plane in its run, and the floats a run takes
    (a whole number of vectors: each run starts on a vector boundary of the buffer)."""
    w, lanes = g["w"], g["lanes"]
    lead = g["pt"] * w + g["pl"]
    last = g["oh"] * w - 1 + ((g["kh"] - 1) * g["dh"] - g["pt"]) * w + (g["kw"] - 1) * g["dw"] \
        - g["pl"]  # the furthest input position a tap reads, from the plane's start
    size = lead + max(g["h"] * w, last + 1)
    return lead, -(-size // lanes) * lanes


def channel_block(g) -> int:
    """Channels per task: ``FLAT_CHANNEL_BLOCK``, halved until it divides the channels."""
    cb = FLAT_CHANNEL_BLOCK
    while cb > 1 and g["groups"] % cb:
        cb //= 2
    return cb


def emit(ctx, g, x, w, epi_put, parallel: bool, helpers) -> S.Stmt:
    """The conv in flat mode: ``epi_put(b, oc, p, value)`` stores pixel ``p`` (a vector lane
    expression) of output channel ``oc``'s plane through the epilogue; ``helpers`` the depthwise
    module's ``(vec, zeros, with_taps, tree)``."""
    vec, zeros, with_taps, tree = helpers
    lanes, wd = g["lanes"], g["w"]
    plane_in, plane_out = g["h"] * wd, g["oh"] * g["ow"]
    lead, stride = layout(g)
    cb = channel_block(g)
    xin = ctx.flat_view(x)
    # column offset of each tap, and the taps grouped by it (one masked sum per column offset)
    cols: dict[int, list] = {}
    for k, (ky, kx, _, _) in enumerate(g["taps"]):
        cols.setdefault(kx * g["dw"] - g["pl"], []).append((k, (ky * g["dh"] - g["pt"]) * wd))

    def value(run, taps, p):
        total = []
        for d, reads in sorted(cols.items()):
            s = tree([taps[k] * run[p + (lead + rowoff + d)] for k, rowoff in reads])
            if d != 0:
                ox = E.FloorMod(p, _i(wd))
                ok = E.GE(ox, _i(-d)) if d < 0 else E.LT(ox, _i(wd - d))
                s = E.Select(ok, s, E.FloatImm("float32", 0.0))
            total.append(s)
        return tree(total)

    def block(idx):
        b, gb = idx
        buf = decl_buffer((cb * stride,), "float32", "dw_flat")
        k = ctx.fresh("dc")
        c = gb * cb + k
        run = decl_buffer((stride,), "float32", "dw_run", data=buf.data, elem_offset=k * stride)
        copy = S.For(k, 0, cb, S.ForKind.SERIAL, S.DeclBuffer(run, vec(
            ctx, plane_in, lanes, lambda j: S.BufferStore(
                run, xin[(b * g["c"] + c) * plane_in + j], [lead + j]), True)))
        k2 = ctx.fresh("dc")
        c2 = gb * cb + k2
        run2 = decl_buffer((stride,), "float32", "dw_run", data=buf.data,
                           elem_offset=k2 * stride)
        taps = [ctx.fresh("dw_tap", w.dtype) for _ in g["taps"]]
        conv = vec(ctx, plane_out, lanes, lambda p: epi_put(b, c2, p, value(run2, taps, p)),
                   True)
        convs = S.For(k2, 0, cb, S.ForKind.SERIAL,
                      S.DeclBuffer(run2, with_taps(g, taps, w, c2, conv)))
        body = S.SeqStmt([zeros(ctx, buf, 0, cb * stride, lanes), copy, convs])
        return S.Allocate(buf.data, "float32", [cb * stride], True, S.DeclBuffer(buf, body))

    return _outer_loops(ctx, [g["n"], g["groups"] // cb], parallel, block)
