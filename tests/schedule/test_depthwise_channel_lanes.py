"""Depthwise convs on small planes with their channels in the vector lanes
(``depthwise.channel_lanes``: planes of at most ``LANES_MAX_PLANE`` output pixels): numbers
against numpy over strides, filters, dilation, padding, batches, channel counts of 8s and the
fused epilogues; which convs take it; each pixel runs only its taps that read input."""

import numpy as np
import pytest
from depthwise_cases import nodes, run

from minitvm.schedule import depthwise
from minitvm.tir import stmt as S


def _names(prim) -> set[str]:
    return {n.buffer.name for n in nodes(prim.body) if isinstance(n, S.DeclBuffer)}


@pytest.mark.parametrize("shape, k, stride, pad, dilation, epilogue", [
    ((1, 64, 1, 1), 3, 1, 1, 1, "relu6"),       # one pixel: the centre tap only
    ((1, 96, 2, 2), 3, 1, 1, 1, "relu"),        # 2x2
    ((1, 40, 3, 3), 3, 1, 1, 1, "hardswish"),   # 8-lane blocks (40 = 5 x 8)
    ((2, 48, 4, 4), 3, 2, 1, 1, "silu"),        # stride 2 to 2x2, a batch
    ((1, 32, 7, 7), 3, 2, 1, 1, "relu6"),       # stride 2 to 4x4
    ((1, 16, 4, 4), 5, 1, 2, 1, "gelu"),        # 5x5
    ((1, 32, 5, 5), 3, 1, 1, 1, "mixer"),       # 25 pixels; the epilogue reads the input
    ((1, 16, 5, 5), 3, 1, 2, 2, "none"),        # dilation 2
    ((1, 24, 9, 9), 5, 2, 2, 1, "relu"),        # stride 2 at 9x9 to 5x5
    ((1, 16, 4, 4), 3, 1, 0, 1, "none"),        # no padding: 2x2
])
def test_channel_lanes_match_numpy(shape, k, stride, pad, dilation, epilogue):
    out, want, prim = run(shape, np.random.default_rng(3), k=k, stride=stride, pad=pad,
                          dilation=dilation, epilogue=epilogue)
    assert "dw_xt" in _names(prim)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, k, stride, mult", [
    ((1, 64, 7, 7), 3, 1, 1),    # 49 pixels: the planes' narrow rows
    ((1, 20, 4, 4), 3, 1, 1),    # channels not a multiple of 8
    ((1, 16, 4, 4), 3, 1, 2),    # a channel multiplier
    ((1, 64, 10, 10), 3, 2, 1),  # 100 input pixels (past LANES_MAX_INPUT)
])
def test_other_convs_keep_the_planes(shape, k, stride, mult):
    out, want, prim = run(shape, np.random.default_rng(4), k=k, stride=stride, pad=k // 2,
                          mult=mult, epilogue="relu")
    assert "dw_xt" not in _names(prim)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_each_pixel_runs_only_its_taps():
    """A 3x3 conv at 2x2 (padding 1): each of the four pixels reads 4 of its 9 taps, so the
    block computes 16 multiply-add vectors, and transposes 4 input pixels and 9 taps."""
    _, _, prim = run((1, 32, 2, 2), np.random.default_rng(5), epilogue="relu")
    macs = [n for n in nodes(prim.body) if isinstance(n, S.BufferStore) and
            n.buffer.name == "dw_acc" and "dw_wt" in repr(n.value)]
    assert len(macs) == 16
    g = dict(cg=1, m=1, c=32, oh=2, ow=2, h=2, w=2)
    assert depthwise.channel_lanes(g)
    assert not depthwise.channel_lanes(dict(g, oh=6, ow=6, h=6, w=6))
