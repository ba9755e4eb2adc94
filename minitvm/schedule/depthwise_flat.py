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
# Output vectors whose taps all read inside the plane read the input in place; only the input
# the others reach is copied into the channel's run. Zen 4, one thread, kernel alone (us, all
# copied -> in place), 64 channels 3x3 + ReLU at 25x5: batch 1 4.59 -> 4.14, batch 4 13.48 ->
# 12.74; 64 at 14x7 3.78 -> 3.81, 32 at 20x3 5x5 + ReLU6 3.01 -> 3.04 (the same).
DIRECT_INTERIOR = True
MAX_VECTORS = 32  # output vectors a channel's plane is written as, one by one


class FloatReads:
    """Reads of an 8-bit buffer as float32 (``buf[idx]`` widened): what a depthwise conv of
    8-bit data (``depthwise.widened_data``) reads in place of its input buffer."""

    def __init__(self, buf):
        self.buf = buf

    def __getitem__(self, idx):
        return E.Cast("float32", self.buf[idx])


def float_reads(buf):
    """``buf`` itself when float32, else its ``FloatReads``."""
    return buf if buf.dtype == "float32" else FloatReads(buf)


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


def vector_starts(plane: int, lanes: int) -> list[int]:
    """The first pixel of each output vector of a ``plane``: whole vectors, then one ending at
    the plane's end over the last pixels before it; none for a plane under one vector (it
    takes ``_vec``'s narrower ones), or one of more than ``MAX_VECTORS`` (a loop then)."""
    if plane < lanes or plane > MAX_VECTORS * lanes:
        return []
    starts = list(range(0, plane - lanes + 1, lanes))
    return starts + ([plane - lanes] if plane % lanes else [])


def _spans(ranges, limit: int) -> list[tuple[int, int]]:
    """``ranges`` clipped to ``[0, limit)`` and merged where they touch."""
    out: list = []
    for a, z in sorted((max(0, a), min(limit, z)) for a, z in ranges):
        if z <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], z))
        else:
            out.append((a, z))
    return out


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
    if xin.dtype != "float32":  # (an 8-bit input: widened as read)
        xin = FloatReads(xin)
    # column offset of each tap, and the taps grouped by it (one masked sum per column offset)
    cols: dict[int, list] = {}
    for k, (ky, kx, _, _) in enumerate(g["taps"]):
        cols.setdefault(kx * g["dw"] - g["pl"], []).append((k, (ky * g["dh"] - g["pt"]) * wd))

    offs = [rowoff + d for d, reads in cols.items() for _, rowoff in reads]
    lo, hi = min(offs), max(offs)
    starts = vector_starts(plane_out, lanes)
    # vectors whose taps all read inside the channel's plane read the input in place; the
    # others (the first and last rows' reach past the plane) read the zero-margined run, for
    # which only the input they reach is copied
    inside = [DIRECT_INTERIOR and s + lo >= 0 and s + lanes - 1 + hi < plane_in
              for s in starts] if starts else []
    spans = _spans([(s + lo, s + lanes + hi) for s, ok in zip(starts, inside) if not ok]
                   if starts else [(lo, plane_out + hi)], plane_in)

    def value(load, taps, p):
        total = []
        for d, reads in sorted(cols.items()):
            s = tree([taps[k] * load(p + (rowoff + d)) for k, rowoff in reads])
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
        copies = [vec(ctx, z - a, lanes, lambda j, a=a: S.BufferStore(
            run, xin[(b * g["c"] + c) * plane_in + a + j], [lead + a + j]), True)
            for a, z in spans]
        copy = S.For(k, 0, cb, S.ForKind.SERIAL, S.DeclBuffer(run, S.SeqStmt(copies)
                                                              if len(copies) > 1 else copies[0])
                     ) if copies else None  # (every vector inside the plane: no copy)
        k2 = ctx.fresh("dc")
        c2 = gb * cb + k2
        run2 = decl_buffer((stride,), "float32", "dw_run", data=buf.data,
                           elem_offset=k2 * stride)
        base = (b * g["c"] + c2) * plane_in
        taps = [ctx.fresh("dw_tap", w.dtype) for _ in g["taps"]]

        def from_run(q):
            return run2[q + lead]

        def in_place(q):
            return xin[base + q]

        if starts:
            parts = []
            for s0, ok in zip(starts, inside):
                vi = ctx.fresh("dl")
                p = _i(s0) + vi
                parts.append(S.For(vi, 0, lanes, S.ForKind.VECTORIZED, epi_put(
                    b, c2, p, value(in_place if ok else from_run, taps, p))))
            conv = S.SeqStmt(parts) if len(parts) > 1 else parts[0]
        else:  # (a plane under one vector)
            conv = vec(ctx, plane_out, lanes, lambda p: epi_put(
                b, c2, p, value(from_run, taps, p)), True)
        convs = S.For(k2, 0, cb, S.ForKind.SERIAL,
                      S.DeclBuffer(run2, with_taps(g, taps, w, c2, conv)))
        body = S.SeqStmt([s for s in (zeros(ctx, buf, 0, cb * stride, lanes), copy, convs)
                          if s is not None])
        return S.Allocate(buf.data, "float32", [cb * stride], True, S.DeclBuffer(buf, body))

    return _outer_loops(ctx, [g["n"], g["groups"] // cb], parallel, block)
