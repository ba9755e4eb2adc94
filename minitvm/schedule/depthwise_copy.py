"""The depthwise schedule's phased input copy: one channel's plane into ``xph``.

``_fill`` writes the zero-padded, stride-phased plane ``xph[py, px, i, j] = x_padded[i*sh + py,
j*sw + px]`` row phase by row phase, with no per-element test (which rows and columns read
input is known at build time); ``_row`` copies one phase row (8-bit data widened as it is
read; uint8 rows of a stride-2 copy read as 16-bit pairs of columns, ``_pairs``).
``_streamed_fill`` copies a row block's new phase rows right before their taps read them and
prefetches the rows a block further on (``STREAM_FILL``); ``_window_task`` runs a strided
streamed channel on a window of a row block's phase rows that stays in L1
(``STREAM_WINDOW``). The switches stay in ``depthwise``, read from it at call time.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from . import depthwise_flat
from .common import const_int as _const_int
from .common import imm as _i
from .common import prefetch
from .depthwise_channel import _channel
from .depthwise_loops import _rows, _seq, _vec, _zeros


def _xph(g, count: int, name: str = "dw_xph"):
    """(buffer, wrap): a phased-plane buffer of ``count`` floats ``g["lead"]`` floats into its
    allocation, and ``wrap(body)`` allocating and declaring it around ``body``."""
    lead = g["lead"]
    buf = decl_buffer((count,), "float32", name, elem_offset=lead or None)
    return buf, lambda body: S.Allocate(buf.data, "float32", [count + lead], True,
                                        S.DeclBuffer(buf, body))


def _fill(ctx, g, xph, x, b, ic, pad: bool = True, rows=None, window=None) -> S.Stmt:
    """The zero-padded phased copy of plane ``x[b, ic]``, row phase by row phase. Which rows and
    columns of each phase read inside the input is known here, so the copy has no per-element
    test. ``rows`` ``(first, count)``: only phase rows ``first ... first + count - 1`` of each
    row phase (``first`` may be symbolic: a test a row then picks a copy or a zero row), the
    extra zeros past the phases with the rows from 0. ``window`` (its phase planes' floats):
    those rows stored from row 0 of a window's phase planes (``_window_task``)."""
    sh, hq = g["sh"], g["hq"]
    parts = []
    for py in range(sh):
        i0 = min(hq, max(0, -(-(g["pt"] - py) // sh)))  # rows [i0, i1) read an input row
        i1 = min(hq, max(i0, (g["h"] - 1 + g["pt"] - py) // sh + 1))
        if rows is not None:
            parts.append(_fill_window(ctx, g, xph, x, b, ic, py, i0, i1, *rows, pad, window))
            continue
        for a, z, inside in ((0, i0, False), (i0, i1, True), (i1, hq, False)):
            if inside or pad:
                parts.append(_rows(ctx, a, z, lambda i, py=py, inside=inside: _row(
                    ctx, g, xph, x, b, ic, py, i, inside, pad)))
    if pad and window is None and (rows is None or _is_zero(rows[0])):
        done = sh * g["sw"] * g["plane"]
        parts.append(_zeros(ctx, xph, done, g["xph_len"] - done, g["lanes"]))
    return _seq(parts)


def _is_zero(e) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def _fill_window(ctx, g, xph, x, b, ic, py: int, i0: int, i1: int, first, count: int,
                 pad: bool = True, window=None):
    """Rows ``first ... first + count - 1`` of row phase ``py`` (``_fill``): rows ``[i0, i1)``
    read the input, the others are zeros (without ``pad``: left as they are); ``window``: into
    rows ``0 ... count - 1`` of planes that many floats apart."""
    if count <= 0:
        return None

    def dst(i):
        return None if window is None else (window, i - first)

    if isinstance(first, E.IntImm):  # a known window: its inside and padding runs
        lo, hi = first.value, first.value + count
        return _seq([_rows(ctx, max(lo, a), min(hi, z), lambda i, inside=inside: _row(
            ctx, g, xph, x, b, ic, py, i, inside, pad, dst(i))) for a, z, inside in
            ((0, i0, False), (i0, i1, True), (i1, g["hq"], False)) if inside or pad])
    t = ctx.fresh("df")
    i = first + t
    at = None if window is None else (window, t)
    inside = _row(ctx, g, xph, x, b, ic, py, i, True, pad, at)
    if i0 > 0 or i1 < g["hq"]:
        body = S.IfThenElse(E.And(E.GE(i, _i(i0)), E.LT(i, _i(i1))), inside,
                            _row(ctx, g, xph, x, b, ic, py, i, False, True, at) if pad else None)
    else:
        body = inside
    return S.For(t, 0, count, S.ForKind.SERIAL, body)


_ELEMENT_BYTES = {"float32": 4, "int16": 2, "uint8": 1, "int8": 1}


def _streamed_fill(ctx, g, xph, x, b, ic, first, nrows: int, pad: bool = True,
                   window=None, step=None) -> S.Stmt:
    """Phase rows ``first ... first + nrows - 1`` of the streamed copy (``_fill``; ``window``:
    into a window's rows from 0), then the prefetches of the input rows
    ``STREAM_PREFETCH_BLOCKS`` row blocks further on, ``step`` phase rows a block (default
    ``nrows``; past the plane's last row: the next plane's first, a prefetch past the
    buffer's end reads nothing)."""
    from . import depthwise

    copy = _fill(ctx, g, xph, x, b, ic, pad, (first, nrows), window)
    step = nrows if step is None else step
    if not depthwise.STREAM_PREFETCH_BLOCKS:
        return copy
    src = x.buf if isinstance(x, depthwise_flat.FloatReads) else x
    per_line = 64 // _ELEMENT_BYTES.get(src.dtype, 4)
    row0 = (first + nrows + step * (depthwise.STREAM_PREFETCH_BLOCKS - 1)) * g["sh"] - g["pt"]
    lines = -(-(step * g["sh"] * g["w"]) // per_line)
    t = ctx.fresh("dp")
    ahead = S.For(t, 0, lines,
                  S.ForKind.UNROLLED if lines <= depthwise.MAX_UNROLL else S.ForKind.SERIAL,
                  prefetch(src[b, ic, E.Max(row0, _i(0)), t * per_line]))
    return S.SeqStmt([copy, ahead])


def _window_task(ctx, g, x, w, out, b, ic, epi) -> S.Stmt:
    """Channel ``ic`` of image ``b`` (``_windowed``): per row block, its phase rows and those
    its taps reach past it copied into rows ``0 ...`` of each phase's window, the taps reading
    the window from row 0."""
    from . import depthwise

    reach = depthwise._reach_rows(g)
    rows = depthwise._row_block(g) + reach
    wq = g["wq"]
    plane = rows * wq
    taps = []
    for ky, kx, _, dy in g["taps"]:
        ry, rx = ky * g["dh"], kx * g["dw"]
        phase = (ry % g["sh"]) * g["sw"] + rx % g["sw"]
        taps.append((ky, kx, phase * plane + dy * wq + rx // g["sw"], dy))
    gw = dict(g, taps=taps, plane=plane, window=True)
    size = -(-(g["sh"] * g["sw"] * plane) // g["lanes"]) * g["lanes"]
    xph = decl_buffer((size,), "float32", "dw_win")
    body = _channel(ctx, gw, [xph], w, out, b, ic, epi, lambda oy, nrows: _streamed_fill(
        ctx, g, xph, x, b, ic, oy, nrows + reach, True, plane, nrows))
    return S.Allocate(xph.data, "float32", [size], True, S.DeclBuffer(xph, body))


def _row(ctx, g, xph, x, b, ic, py, i, inside: bool, pad: bool = True, dst=None) -> S.Stmt:
    """Row ``i`` of row phase ``py``, in each column phase: zeros (a padding row), else the
    input row's columns ``j*sw + px`` between zero padding columns (with a stride in width,
    vector loads at that stride: the code generator makes them whole loads and shuffles).
    ``dst`` ``(plane, row)``: stored at row ``row`` of phase planes ``plane`` floats apart (a
    window, ``_window_task``), not at row ``i`` of ``g``'s plane."""
    from . import depthwise

    sh, sw, wq, lanes, pl = g["sh"], g["sw"], g["wq"], g["lanes"], g["pl"]
    parts = []
    iy = i * sh + (py - g["pt"])
    plane, at = (g["plane"], i) if dst is None else dst
    for px in range(sw):
        base = (py * sw + px) * plane + at * wq
        if not inside:  # (columns past ``cols``, alignment only, are never read)
            parts.append(_zeros(ctx, xph, base, g["cols"], lanes))
            continue
        cols = g["cols"]
        j0 = min(cols, max(0, -(-(pl - px) // sw)))  # columns [j0, j1) read an input column
        j1 = min(cols, max(j0, (g["w"] - 1 + pl - px) // sw + 1))
        if pad:
            parts += [_zeros(ctx, xph, base, j0, lanes),
                      _zeros(ctx, xph, base + j1, cols - j1, lanes)]
        pairs = _pairs(ctx, g, x) if j1 > j0 else None
        if pairs is not None:  # (column 2j + d is byte d % 2 of pair j + d // 2)
            d = px - pl
            first = ((b * g["c"] + ic) * g["h"] + iy) * (g["w"] // 2) + (j0 + d // 2)
            parts.append(_vec(ctx, j1 - j0, lanes, lambda j, base=base, j0=j0, d=d, first=first,
                              pairs=pairs: S.BufferStore(
                                  xph, _pair_byte(pairs[first + j], d % 2), [base + j0 + j]),
                              depthwise._overlap(1)))
        elif j1 > j0:
            parts.append(_vec(ctx, j1 - j0, lanes, lambda j, base=base, px=px, j0=j0: S.BufferStore(
                xph, x[b, ic, iy, (j + j0) * sw + (px - pl)], [base + j0 + j]),
                depthwise._overlap(1)))
    return _seq(parts)


def _pairs(ctx, g, x):
    """The uint8 input behind ``x`` (``depthwise_flat.FloatReads``) seen as uint16 pairs of
    columns (a flat view, declared once per lowering), for a stride-2 copy (``PAIR_FILL``) of
    rows of an even width (each row starts a pair); else None."""
    from . import depthwise

    if not (depthwise.PAIR_FILL and g["sw"] == 2 and isinstance(x, depthwise_flat.FloatReads)
            and x.buf.dtype == "uint8" and g["w"] % 2 == 0
            and _const_int(x.buf.elem_offset or _i(0)) == 0):
        return None
    key = ("pairs", id(x.buf))
    view = ctx.flat_views.get(key)
    if view is None:
        size = g["n"] * g["c"] * g["h"] * g["w"] // 2
        view = decl_buffer((size,), "uint16", x.buf.name + "_pairs", data=x.buf.data)
        ctx.ws_views.append(view)
        ctx.flat_views[key] = view
    return view


def _pair_byte(pair, high: int):
    """Byte ``high`` (0: the low one, the even column) of uint16 ``pair`` as float32."""
    byte = E.Call(pair.dtype, "tir.shift_right", [pair, E.IntImm(pair.dtype, 8)]) if high \
        else pair
    return E.Cast("float32", E.Cast("uint8", byte))

