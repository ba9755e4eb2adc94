"""The 32-lane pixel-vector tiles of ``conv_pointwise`` take 12 output-channel rows from
``ROWS_WIDE_PIXELS_DEEP``'s input channels, by host (``common.host_switch``): 96 on the Intel
Xeon LLVM calls "rocketlake", 256 elsewhere; an int there is every host's. The choice at the
threshold and either side of it, per host key, and the numerics of the 12-row tiles at edge
shapes (output channels not a multiple of 12: a shorter last tile; an overlapping last pixel
panel; a batch; a residual epilogue) against numpy."""

import numpy as np
import pytest
from conv_reference import conv_prim as _conv_prim
from conv_reference import run_graph as _run
from pointwise_cases import build_pointwise as _build

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.relay.backend import te_compiler
from minitvm.schedule import conv_pointwise
from minitvm.schedule.common import host_key, vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

needs_pointwise = pytest.mark.skipif(not conv_pointwise.ENABLED[vector_isa()],
                                     reason="the 1x1 schedule is off for this ISA")


@pytest.fixture
def deep_from(monkeypatch):
    """32-lane tiles whatever the host's ISA, and a setter of this host's entry of the deep
    rows' channel threshold; kernels built meanwhile stay out of other tests."""
    monkeypatch.setattr(conv_pointwise, "WIDTH", {"avx512": 32, "avx2": 32})
    rows, table = conv_pointwise.ROWS_WIDE_PIXELS_DEEP
    table = dict(table)
    monkeypatch.setattr(conv_pointwise, "ROWS_WIDE_PIXELS_DEEP", (rows, table))
    kernel_cache.clear_cache()

    def set_from(channels: int) -> None:
        table[host_key(table)] = channels
        kernel_cache.clear_cache()

    yield set_from
    kernel_cache.clear_cache()


def _conv_stage(shape, o):
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=(o, shape[1], 1, 1))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


def _tile_rows(prim) -> set:
    return {int(s.buffer.shape[0]) for s in walk_stmts(prim.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "pw_acc"}


def test_shipped_thresholds():
    rows, table = conv_pointwise.ROWS_WIDE_PIXELS_DEEP
    assert rows == 12
    assert table == {"rocketlake": 96, "avx512": 256, "avx2": 256}


@pytest.mark.parametrize("start, c, rows", [(96, 96, 12), (96, 95, 8), (96, 255, 12),
                                            (256, 96, 8), (256, 255, 8), (256, 256, 12)])
def test_rows_by_threshold(start, c, rows, deep_from):
    deep_from(start)
    g = conv_pointwise.geometry(_conv_stage((1, c, 16, 16), 96))
    assert (g["mode"], g["width"], g["rows"]) == ("pixels", 32, rows)


def test_int_threshold_is_every_hosts(monkeypatch):
    monkeypatch.setattr(conv_pointwise, "WIDTH", {"avx512": 32, "avx2": 32})
    monkeypatch.setattr(conv_pointwise, "ROWS_WIDE_PIXELS_DEEP", (12, 40))
    assert conv_pointwise.wide_pixel_rows_from() == 40
    assert conv_pointwise.geometry(_conv_stage((1, 40, 8, 8), 24))["rows"] == 12
    assert conv_pointwise.geometry(_conv_stage((1, 39, 8, 8), 24))["rows"] == 8


def test_host_key_picks_the_entry(deep_from):
    deep_from(64)
    rows, table = conv_pointwise.ROWS_WIDE_PIXELS_DEEP
    assert conv_pointwise.wide_pixel_rows_from() == table[host_key(table)] == 64


CASES = [
    # (N, C, H, W), O, epilogue: 12-row tiles from 96 input channels
    ((1, 96, 28, 28), 40, "residual_relu"),  # 784 pixels (an overlapping panel); 4 x 10 rows
    ((2, 96, 8, 8), 26, "bias_relu"),        # a batch; 26 rows as 9 + 9 + 8
    ((1, 128, 8, 12), 12, "bias_clip"),      # one whole tile
    ((1, 100, 8, 8), 24, "none"),            # 100 channels (two a reduction turn); 12 + 12
]


@needs_pointwise
@pytest.mark.parametrize("case", CASES)
def test_deep_rows_match_numpy(case, deep_from):
    shape, o, epi = case
    deep_from(96)
    g = conv_pointwise.geometry(_conv_stage(shape, o))
    assert (g["mode"], g["rows"]) == ("pixels", 12)
    lib, feeds, want = _build(shape, o, epi)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    got = _tile_rows(_conv_prim(lib))
    assert got == {r for _, r, _ in conv_pointwise.row_tiles(o, 12)}
    assert got != {r for _, r, _ in conv_pointwise.row_tiles(o, 8)}  # (not the 8-row tiles)
