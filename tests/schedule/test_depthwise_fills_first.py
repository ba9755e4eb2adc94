"""Deferred channel blocks (7x7-class planes) copy all their channels' planes first, each into
a plane of its own, then run the convs (``depthwise.FILLS_FIRST``): numbers against numpy on
filters 3x3 to 7x7, blocks of 4, 2 and 1 channels, batches and the fused epilogues; the loop
structure; stride 2 and AVX2 keep the shared plane."""

import numpy as np
import pytest
from depthwise_cases import depthwise_conv as _conv
from depthwise_cases import nodes as _nodes
from depthwise_cases import run as _run

from minitvm.schedule import depthwise, lower_te
from minitvm.tir import expr as E
from minitvm.tir import stmt as S


def _block_loops(prim):
    return [n for n in _nodes(prim.body)
            if isinstance(n, S.For) and n.loop_var.name.startswith("dc")]


def _stored(node) -> set:
    return {n.buffer.name for n in _nodes(node) if isinstance(n, S.BufferStore)}


@pytest.fixture
def avx512(monkeypatch):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")


@pytest.mark.parametrize("shape,kw", [
    ((1, 16, 7, 7), dict(stride=1, pad=1, epilogue="relu6")),  # MobileNetV2's 960 at 7x7
    ((2, 12, 7, 7), dict(k=5, stride=1, pad=2, epilogue="silu")),  # EfficientNet's 1152
    ((1, 8, 7, 7), dict(k=7, stride=1, pad=3)),  # ConvNeXt's last stage
    ((1, 6, 7, 7), dict(stride=1, pad=1, epilogue="hardswish")),  # blocks of 2 channels
    ((1, 5, 8, 8), dict(k=5, stride=1, pad=2, epilogue="relu6")),  # 5 channels: blocks of 1
    ((1, 8, 6, 7), dict(stride=1, pad=1, epilogue="silu")),  # 6 x 7: rows under a block
    ((1, 4, 7, 7), dict(stride=1, pad=2, dilation=2, epilogue="relu6")),
])
def test_copies_first_match_numpy(rng, avx512, shape, kw):
    out, want, prim = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_copies_first_loop_structure(rng, avx512):
    out, want, prim = _run((1, 16, 7, 7), rng, stride=1, pad=1, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    copies, convs, epilogues = _block_loops(prim)
    assert all(f.extent.value == 4 for f in (copies, convs, epilogues))
    assert _stored(copies) == {"dw_xphk"}  # each channel's plane its own view of dw_xph
    assert _stored(convs) == {"dw_conv"}
    read = {n.buffer.name for n in _nodes(convs) if isinstance(n, E.BufferLoad)}
    assert "dw_xphk" in read and "dw_xph" not in read and "in0" not in read
    assert _stored(epilogues) == {"out0_flat"}
    # the planes zeroed once before the block, in whole vectors (no scalar zero loop)
    zero = [n for n in _nodes(prim.body) if isinstance(n, S.BufferStore)
            and n.buffer.name == "dw_xph"]
    assert zero and all(getattr(n.value, "value", None) == 0.0 for n in zero)


@pytest.mark.parametrize("shape,kw", [
    ((1, 16, 7, 7), dict(stride=1, pad=1, epilogue="relu6")),
    ((1, 8, 7, 7), dict(k=5, stride=1, pad=2, epilogue="silu")),
])
def test_copies_first_off_gives_the_same_numbers(rng, avx512, monkeypatch, shape, kw):
    first, _, _ = _run(shape, np.random.default_rng(1), **kw)
    monkeypatch.setattr(depthwise, "FILLS_FIRST", {"avx512": False, "avx2": False})
    shared, want, prim = _run(shape, np.random.default_rng(1), **kw)
    np.testing.assert_allclose(shared, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(first, shared)
    assert len(_block_loops(prim)) == 2


def test_stride_two_keeps_the_shared_plane(rng, avx512):
    out, want, prim = _run((1, 8, 14, 14), rng, stride=2, pad=1, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert len(_block_loops(prim)) == 2


def test_avx2_keeps_the_shared_plane(rng, monkeypatch):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx2")
    out, want, prim = _run((1, 16, 7, 7), rng, stride=1, pad=1, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    ins, outs, _ = _conv((1, 16, 7, 7), stride=1, pad=1, epilogue="relu6")
    before = str(lower_te(ins, outs, "f")[0])
    monkeypatch.setattr(depthwise, "FILLS_FIRST", {"avx512": False, "avx2": False})
    ins, outs, _ = _conv((1, 16, 7, 7), stride=1, pad=1, epilogue="relu6")
    assert str(lower_te(ins, outs, "f")[0]) == before
