"""The depthwise schedule's phased copy made block by block (``depthwise.STREAM_FILL``): each
output row block copies the phase rows its taps read first, just before them. Numbers against
numpy on strides 1-3, filters 3x3 to 7x7, dilation, no padding, odd plane sizes and the fused
epilogues; the copy's row loops sit inside the row-block loop; AVX2 streams strided convs only."""

import numpy as np
import pytest
from depthwise_cases import depthwise_conv as _conv
from depthwise_cases import nodes as _nodes
from depthwise_cases import run as _run

from minitvm.schedule import depthwise, lower_te
from minitvm.tir import expr as E
from minitvm.tir import stmt as S


def _loops(root, prefix):
    return [n for n in _nodes(getattr(root, "body", root))
            if isinstance(n, S.For) and n.loop_var.name.startswith(prefix)]


def _streamed(prim) -> bool:
    """Is a phase-row copy loop (``df``) nested in a row-block loop (``db``)?"""
    return any(isinstance(m, S.For) and m.loop_var.name.startswith("df")
               for b in _loops(prim, "db") for m in _nodes(b.body))


CASES = [
    ((1, 3, 40, 40), dict(stride=1, pad=1, epilogue="relu6")),  # rows of 40: 16 + 16 + 8
    ((2, 3, 80, 80), dict(stride=2, pad=1, epilogue="relu6")),  # MobileNetV2's 112 s2 kind
    ((1, 2, 67, 45), dict(stride=1, pad=1, epilogue="silu")),  # odd plane, SiLU fused
    ((1, 3, 71, 69), dict(k=5, stride=2, pad=2, epilogue="relu6")),  # 36 x 35 out, 5x5
    ((1, 2, 40, 47), dict(k=7, stride=1, pad=3, epilogue="bias")),  # 7x7 (ConvNeXt's kind)
    ((1, 2, 40, 40), dict(stride=1, pad=2, dilation=2, epilogue="relu6")),
    ((1, 2, 38, 40), dict(stride=1, pad=0, epilogue="hardswish")),  # no padding rows
    ((1, 2, 100, 100), dict(stride=3, pad=1)),  # 34 x 34, three row phases
    ((1, 2, 35, 64), dict(k=5, stride=1, pad=2, epilogue="silu")),  # a last block of 3 rows
    ((1, 5, 56, 56), dict(stride=2, pad=1, epilogue="relu6")),  # 28x28 out: channel blocks
    ((2, 4, 40, 40), dict(k=5, stride=2, pad=2, epilogue="relu6")),  # 20x20, blocks of 4
]


@pytest.mark.parametrize("shape,kw", CASES)
def test_streamed_copy_matches_numpy(rng, monkeypatch, shape, kw):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    # (3x3 filters stream from rows of 96 by default: these small planes stream from 32;
    # strided convs from rows of 32, these from 16)
    monkeypatch.setattr(depthwise, "STREAM_FEW_TAPS_MIN_WIDTH", depthwise.STREAM_MIN_WIDTH)
    monkeypatch.setattr(depthwise, "STREAM_STRIDED_MIN_WIDTH", 16)
    out, want, prim = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert _streamed(prim)
    # the only tests: one per copied row (inside the input or padding), none per element
    assert not any(isinstance(n, E.Select) for n in _nodes(prim.body))
    for n in _nodes(prim.body):
        if isinstance(n, S.IfThenElse):
            assert _loops(n.then_case, "dl") or _loops(n.then_case, "dv")
    for v in _nodes(prim.body):
        if isinstance(v, S.For) and v.kind == S.ForKind.VECTORIZED:
            assert not any(isinstance(n, S.IfThenElse) for n in _nodes(v.body))


@pytest.mark.parametrize("shape,kw", CASES[:4])
def test_streamed_copy_off_gives_the_same_numbers(rng, monkeypatch, shape, kw):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    monkeypatch.setattr(depthwise, "STREAM_FEW_TAPS_MIN_WIDTH", depthwise.STREAM_MIN_WIDTH)
    monkeypatch.setattr(depthwise, "STREAM_FILL", {"avx512": False, "avx2": False})
    out, want, prim = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert not _streamed(prim)


@pytest.mark.parametrize("shape,kw", [
    ((1, 3, 30, 30), dict(stride=1, pad=1, epilogue="relu6")),  # rows of 30 at stride 1
    ((1, 3, 56, 28), dict(stride=1, pad=1, epilogue="relu6")),  # rows of 28 (< 32)
    ((1, 4, 28, 28), dict(stride=2, pad=1, epilogue="relu6")),  # rows of 14: narrow rows
    ((1, 5, 56, 56), dict(stride=2, pad=1, epilogue="relu6")),  # strided rows of 28 (< 32)
    ((2, 4, 40, 40), dict(k=5, stride=2, pad=2, epilogue="relu6")),  # strided rows of 20
    ((1, 4, 60, 60), dict(stride=2, pad=1, epilogue="silu")),  # rows of 30 with SiLU: split
    ((1, 3, 64, 64), dict(stride=1, pad=1)),  # a 3x3 on rows of 64 (< 96): fits L1 whole
    ((1, 2, 40, 40), dict(stride=1, pad=1, epilogue="relu6")),
])
def test_small_planes_keep_the_whole_copy(rng, monkeypatch, shape, kw):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    out, want, prim = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert not _streamed(prim)


def test_avx2_keeps_the_whole_copy_at_stride_1(rng, monkeypatch):
    # (a 5x5 on rows of 40: AVX-512 streams it, STREAM_MIN_WIDTH)
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx2")
    out, want, prim = _run((1, 3, 40, 40), rng, k=5, stride=1, pad=2, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert not _streamed(prim)
    ins, outs, _ = _conv((1, 3, 40, 40), k=5, stride=1, pad=2, epilogue="relu6")
    before = str(lower_te(ins, outs, "f")[0])
    monkeypatch.setattr(depthwise, "STREAM_FILL", {"avx512": False, "avx2": False})
    ins, outs, _ = _conv((1, 3, 40, 40), k=5, stride=1, pad=2, epilogue="relu6")
    assert str(lower_te(ins, outs, "f")[0]) == before
    monkeypatch.setattr(depthwise, "STREAM_UNIT_STRIDE", {"avx512": True, "avx2": True})
    monkeypatch.setattr(depthwise, "STREAM_FILL", {"avx512": True, "avx2": True})
    assert _streamed(_run((1, 3, 40, 40), rng, k=5, stride=1, pad=2, epilogue="relu6")[2])


def test_avx2_streams_strided_convs(rng, monkeypatch):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx2")
    out, want, prim = _run((1, 3, 80, 80), np.random.default_rng(5), stride=2, pad=1,
                           epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert _streamed(prim)
    monkeypatch.setattr(depthwise, "STREAM_FILL", {"avx512": False, "avx2": False})
    whole, _, prim = _run((1, 3, 80, 80), np.random.default_rng(5), stride=2, pad=1,
                          epilogue="relu6")
    assert not _streamed(prim)
    np.testing.assert_array_equal(out, whole)  # (the same sums in the same order)
