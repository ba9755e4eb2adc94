"""Elementwise stages whose last axis is shorter than a vector (``schedule/plane_nest``): the
trailing axes merge into one loop of contiguous vectors when every load reads at the stored
element's own position or at an element the merged axes do not move (a per-channel bias), so a
quantized conv's uint8 epilogue over 8 x 8 planes is not a scalar loop; other stages keep their
nests. IR shape and numerics against numpy."""

import numpy as np
import pytest
from relay_build import build_run

from minitvm import relay, te
from minitvm.schedule.lower import lower_te
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _requant(shape, bias_axis=1):
    """uint8(clip(round((a + r) / 0.05 + b[bias axis]), 0, 255)) over ``shape`` (TE)."""
    a = te.placeholder(shape, "float32", "a")
    r = te.placeholder(shape, "float32", "r")
    b = te.placeholder((shape[bias_axis],), "float32", "b")

    def f(*i):
        v = te.round((a(*i) + r(*i)) / E.const(0.05, "float32") + b(i[bias_axis]))
        return te.max(te.min(v, E.const(255.0, "float32")), E.const(0.0, "float32")).astype(
            "uint8")

    return [a, r, b], te.compute(shape, f, name="q")


def _loops(func):
    return [s for s in walk_stmts(func.body) if isinstance(s, S.For)]


def test_small_plane_epilogue_is_one_vector_loop_per_channel():
    ins, out = _requant((1, 32, 8, 8))
    func, _ = lower_te(ins, [out])
    loops = _loops(func)
    vec = [s for s in loops if s.kind == S.ForKind.VECTORIZED]
    assert vec and all(int(s.extent) == 16 for s in vec)
    # (no scalar loop over the 8 elements of a row: the 64-element plane is 4 vectors)
    assert not any(s.kind == S.ForKind.SERIAL and int(s.extent) == 8 for s in loops)
    assert any(int(s.extent) == 32 for s in loops if s.kind != S.ForKind.VECTORIZED)


def test_bias_along_the_last_axis_keeps_the_row_nest():
    """A load that moves with the last axis (not at the own position) cannot be merged."""
    ins, out = _requant((1, 4, 5, 8), bias_axis=3)
    func, _ = lower_te(ins, [out])
    assert any(s.kind == S.ForKind.SERIAL and int(s.extent) == 8 for s in _loops(func))


@pytest.mark.parametrize("shape", [(1, 32, 8, 8), (2, 3, 7, 7), (1, 16, 4, 4), (1, 5, 3, 5),
                                   (3, 6, 28, 28), (4, 10)])
def test_requantize_numerics_match_numpy(shape):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype("float32") * 4
    r = rng.standard_normal(shape).astype("float32")
    b = rng.standard_normal((shape[1],)).astype("float32") * 30 + 100
    bshape = (1, shape[1]) + (1,) * (len(shape) - 2)

    def fn(x, y, z):
        v = relay.round((x + y) / relay.const(0.05) + relay.reshape(z, bshape))
        return relay.cast(relay.clip(v, 0.0, 255.0), "uint8")

    (got,), _ = build_run(fn, a, r, b)
    ref = np.clip(np.round((a + r) / np.float32(0.05) + b.reshape(bshape)), 0, 255).astype(
        "uint8")
    np.testing.assert_array_equal(got, ref)
