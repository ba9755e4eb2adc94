"""A strided streamed depthwise conv's window (``depthwise.STREAM_WINDOW``): each row block
copies its phase rows and the rows its taps reach past it into rows 0... of a window a few rows
a phase, which the taps read from row 0, not into the whole phased plane. Numbers against numpy
(3x3 and 5x5 filters, strides 2 and 3, odd planes, top padding 0 and 1, a last short block, a
batch, uint8 data read as 16-bit pairs) and against the whole-plane copy; the window's size."""

import numpy as np
import pytest
from conv_reference import conv_kernel, grouped_conv_ref, run_graph
from depthwise_cases import depthwise_conv as _conv
from depthwise_cases import run as _run
from test_depthwise_int8_data import _build

from minitvm.schedule import depthwise
from minitvm.te.create_prim_func import topo_order
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _allocs(prim) -> dict:
    """Buffer name -> floats of each buffer ``prim`` declares."""
    return {s.buffer.name: int(s.buffer.shape[0]) for s in walk_stmts(prim.body)
            if isinstance(s, S.DeclBuffer) and len(s.buffer.shape) == 1}


@pytest.fixture(autouse=True)
def _streams_here(monkeypatch):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    # (strided convs stream from rows of 32: these smaller planes from 16)
    monkeypatch.setattr(depthwise, "STREAM_STRIDED_MIN_WIDTH", 16)


CASES = [
    ((2, 3, 80, 80), dict(stride=2, pad=1, epilogue="relu6")),  # 40x40: aligned rows of 48
    ((1, 3, 71, 69), dict(k=5, stride=2, pad=2, epilogue="relu6")),  # 5x5: tiles, reach 2
    ((1, 2, 100, 100), dict(stride=3, pad=1)),  # 34x34: three row phases
    ((1, 2, 75, 70), dict(stride=2, pad=0, epilogue="bias")),  # no top padding, 37 rows
]


@pytest.mark.parametrize("shape,kw", CASES)
def test_window_matches_numpy_and_the_whole_plane(rng, monkeypatch, shape, kw):
    out, want, prim = _run(shape, np.random.default_rng(3), **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    _, outs, _ = _conv(shape, **kw)
    (conv,) = [t for t in topo_order(list(outs)) if t.name == "conv2d"]
    g = depthwise.geometry(conv)
    rows = depthwise._row_block(g) + depthwise._reach_rows(g)
    sizes = _allocs(prim)
    assert "dw_xph" not in sizes
    assert sizes["dw_win"] == -(-(g["sh"] * g["sw"] * rows * g["wq"]) // 16) * 16
    assert sizes["dw_win"] < g["sh"] * g["sw"] * g["plane"] / 3  # (a few rows, not the plane)
    monkeypatch.setattr(depthwise, "STREAM_WINDOW", {"avx512": False, "avx2": False})
    whole, _, prim = _run(shape, np.random.default_rng(3), **kw)
    assert "dw_win" not in _allocs(prim) and "dw_xph" in _allocs(prim)
    np.testing.assert_array_equal(out, whole)  # (the same sums in the same order)


def test_uint8_pairs_through_the_window_are_exact():
    shape, c = (2, 5, 60, 60), 5  # rows of 30 (streamed here), uint8 pairs, requantized
    rng = np.random.default_rng(7)
    w = rng.integers(-128, 128, (c, 1, 3, 3)).astype("float32")
    x = rng.integers(0, 256, shape).astype("uint8")
    lib = _build(shape, "uint8", w, 2, (0, 0, 1, 1), False)
    want = grouped_conv_ref(x, w.astype("int64"), c, (2, 2), (0, 0, 1, 1))
    np.testing.assert_array_equal(run_graph(lib, {"x": x}, 1), want.astype("float32"))
    prim = conv_kernel(lib).prim_func
    names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
    assert "dw_win" in names and "dw_xph" not in names
    assert any(n.endswith("_pairs") for n in names)
