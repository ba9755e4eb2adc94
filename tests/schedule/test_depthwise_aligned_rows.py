"""The depthwise schedule's vector-aligned phased rows on AVX-512 (``depthwise.ALIGN_ROWS``):
stride-1 planes with rows of at least a vector put their rows a whole number of vectors apart
and each row's first input pixel on a vector boundary. Numbers against numpy through the row,
tile, streamed, channel-block and deferred paths; the plane's layout; AVX2 and the strided,
grouped and much-widened rows keep their packed rows. Stride-2 3x3 planes with rows of at
least a vector align their phase rows too, from the allocation's start (``ALIGN_STRIDED``), on
AVX2 as well (8-lane rows)."""

import numpy as np
import pytest
from depthwise_cases import depthwise_conv as _conv
from depthwise_cases import nodes as _nodes
from depthwise_cases import run as _run

from minitvm.schedule import depthwise
from minitvm.tir import stmt as S


def _stage(shape, **kw):
    """The depthwise TE stage of ``depthwise_conv(shape, **kw)``."""
    _, outs, _ = _conv(shape, **kw)
    todo, seen = [outs[0]], set()
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if getattr(t.op, "attrs", None) and "operands" in t.op.attrs and depthwise.supported(t):
            return t
        todo.extend(getattr(t.op, "input_tensors", []))
    raise AssertionError("no depthwise stage")


def _xph_offsets(prim) -> set:
    """The element offsets of the phased-plane buffers (``dw_xph``; a strided streamed conv's
    window, ``dw_win``) the kernel declares."""
    return {getattr(n.buffer.elem_offset, "value", n.buffer.elem_offset) or 0
            for n in _nodes(prim.body)
            if isinstance(n, S.DeclBuffer) and n.buffer.name in ("dw_xph", "dw_win")}


@pytest.fixture
def avx512(monkeypatch):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")


CASES = [
    ((1, 3, 64, 64), dict()),  # rows of 66 -> 80, tiled, whole copy
    ((1, 2, 28, 28), dict(epilogue="relu6")),  # rows of 30 -> 32 (with a lower width), blocks
    ((1, 2, 40, 47), dict(k=7, pad=3, epilogue="bias")),  # 7x7, lead 13
    ((1, 2, 37, 45), dict(k=5, pad=2, epilogue="silu")),  # odd plane, 5x5 streamed
    ((1, 2, 40, 40), dict(pad=2, dilation=2, epilogue="relu6")),  # dilated
    ((1, 2, 38, 40), dict(pad=0, epilogue="hardswish")),  # no padding: lead 0 but rows of 48
    ((2, 2, 112, 112), dict(epilogue="relu6")),  # streamed rows of 114 -> 128
    ((1, 3, 20, 20), dict(epilogue="relu")),  # rows of 22 -> 32 only with a larger growth
]


@pytest.mark.parametrize("shape,kw", CASES)
def test_aligned_rows_match_numpy(rng, avx512, monkeypatch, shape, kw):
    monkeypatch.setattr(depthwise, "ALIGN_MAX_GROWTH", 2.0)
    monkeypatch.setattr(depthwise, "ALIGN_MIN_WIDTH", 16)
    g = depthwise.geometry(_stage(shape, **kw))
    assert g["wq"] % 16 == 0 and g["wq"] >= g["cols"]
    assert (g["lead"] + g["pl"]) % 16 == 0
    out, want, prim = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert _xph_offsets(prim) == {g["lead"]}


def test_deferred_planes_copied_first_align_each_plane(rng, avx512, monkeypatch):
    """A 4x16 plane with SiLU: its block's planes all copied first, each at ``lead``."""
    monkeypatch.setattr(depthwise, "ALIGN_MAX_GROWTH", 2.0)
    monkeypatch.setattr(depthwise, "ALIGN_MIN_WIDTH", 16)
    g = depthwise.geometry(_stage((1, 4, 4, 16), epilogue="silu"))
    assert g["lead"] == 15 and g["xph_len"] % 16 == 0
    out, want, _ = _run((1, 4, 4, 16), rng, epilogue="silu")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,kw", [
    ((1, 3, 64, 64), dict(stride=2)),  # strided rows of 33 -> 48: past ALIGN_MAX_GROWTH
    ((1, 3, 20, 20), dict()),  # rows of 22 would grow to 32: past ALIGN_MAX_GROWTH
    ((1, 3, 10, 10), dict()),  # rows under a vector
    ((1, 2, 28, 28), dict(epilogue="relu6")),  # rows of 28: under ALIGN_MIN_WIDTH
])
def test_packed_rows_kept(rng, avx512, shape, kw):
    g = depthwise.geometry(_stage(shape, **kw))
    assert g["lead"] == 0 and g["wq"] == g["cols"]
    out, want, _ = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_avx2_keeps_packed_rows(rng, monkeypatch):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx2")
    g = depthwise.geometry(_stage((1, 3, 64, 64)))
    assert g["lead"] == 0 and g["wq"] == 66
    out, want, prim = _run((1, 3, 64, 64), rng)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert _xph_offsets(prim) == {0}


STRIDED = [
    ((1, 3, 56, 56), dict(stride=2, pad=1, epilogue="relu6")),  # rows of 29 -> 32, channel blocks
    ((1, 2, 112, 112), dict(stride=2, pad=1, epilogue="relu6")),  # 57 -> 64, streamed copies
    ((1, 3, 61, 59), dict(stride=2, pad=1)),  # odd plane: 31 x 30 out, rows of 31 -> 32
    ((2, 5, 35, 60), dict(stride=2, pad=1, epilogue="bias")),  # a batch, 17 x 30 out
    ((1, 2, 56, 56), dict(stride=2, pad=0, epilogue="silu")),  # no padding, 27 x 27 out
    ((1, 6, 28, 28), dict(stride=2, pad=1, epilogue="relu6")),  # 14x14 out: 15 -> 16, narrow rows
    ((1, 3, 27, 25), dict(stride=2, pad=1)),  # 14 x 13 out: rows of 14 -> 16
]


@pytest.mark.parametrize("shape,kw", STRIDED)
def test_strided_aligned_rows_match_numpy(rng, avx512, shape, kw):
    g = depthwise.geometry(_stage(shape, **kw))
    assert g["wq"] % 16 == 0 and g["wq"] > g["cols"] and g["lead"] == 0
    assert g["plane"] % 16 == 0  # (every phase starts on a vector boundary)
    out, want, prim = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert _xph_offsets(prim) == {0}


@pytest.mark.parametrize("shape,kw", [
    ((1, 2, 58, 58), dict(k=5, stride=2, pad=2, epilogue="relu6")),  # 5x5: tiles, packed
    ((1, 3, 20, 20), dict(stride=2, pad=1)),  # rows of 10 -> 11: 16 past ALIGN_MAX_GROWTH
    ((1, 3, 14, 14), dict(stride=2, pad=1)),  # rows of 7: under ALIGN_STRIDED_MIN_WIDTH
    ((1, 2, 84, 84), dict(stride=3, pad=1)),  # stride 3
])
def test_strided_packed_rows_kept(rng, avx512, shape, kw):
    g = depthwise.geometry(_stage(shape, **kw))
    assert g["lead"] == 0 and g["wq"] == g["cols"]
    out, want, _ = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_strided_alignment_off_keeps_packed_rows(rng, avx512, monkeypatch):
    monkeypatch.setattr(depthwise, "ALIGN_STRIDED", False)
    g = depthwise.geometry(_stage((1, 3, 56, 56), stride=2))
    assert g["wq"] == g["cols"] == 29
    out, want, _ = _run((1, 3, 56, 56), rng, stride=2)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_strided_14x14_outputs_take_narrow_rows(avx512):
    """Phase rows of 15 widened to 16: each output row of 14 is one 16-lane narrow row."""
    g = depthwise.geometry(_stage((1, 6, 28, 28), stride=2, epilogue="relu6"))
    assert g["wq"] == 16 and depthwise._narrow_lanes(g) == 16


@pytest.mark.parametrize("shape,kw,wq", [
    ((1, 3, 56, 56), dict(stride=2, pad=1, epilogue="relu6"), 32),  # rows of 29, channel blocks
    ((1, 2, 112, 112), dict(stride=2, pad=1, epilogue="relu6"), 64),  # 57: streamed window
    ((1, 6, 28, 28), dict(stride=2, pad=1, epilogue="relu6"), 16),  # 15: overlapping 8-lane rows
    ((1, 3, 61, 59), dict(stride=2, pad=1), 32),  # odd plane: 31 x 30 out
])
def test_avx2_strided_aligned_rows_match_numpy(rng, monkeypatch, shape, kw, wq):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx2")
    g = depthwise.geometry(_stage(shape, **kw))
    assert g["wq"] == wq and g["plane"] % 8 == 0 and g["lead"] == 0
    out, want, prim = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert _xph_offsets(prim) == {0}
