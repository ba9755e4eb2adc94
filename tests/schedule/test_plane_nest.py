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


def _lowered(f):
    from minitvm import relay as r
    from minitvm.ir import IRModule
    from minitvm.relay.backend import te_compiler
    from minitvm.schedule import LoweringOptions

    mod = r.transform.InferType()(IRModule.from_expr(f))
    ins, _, outs = te_compiler.build_te(mod["main"])
    func, _ = lower_te(ins, outs, "k", options=LoweringOptions())
    return func


def _gate(shape, axis=1, sections=2):
    """tanh(first part) * sigmoid(last part) of ``x`` split along ``axis``."""
    x = relay.var("x", shape=shape)
    parts = relay.split(x, sections, axis=axis)
    return relay.Function([x], relay.tanh(parts[0]) * relay.sigmoid(parts[sections - 1]))


def test_split_halves_read_as_flat_shifted_vectors():
    """PixelCNN's gate: both halves of a channel split are read through the input's flat view
    (the second at a shift of half the tensor), in whole vectors with no scalar row tail."""
    func = _lowered(_gate((1, 96, 28, 28)))
    loops = _loops(func)
    vec = [s for s in loops if s.kind == S.ForKind.VECTORIZED]
    assert vec and all(int(s.extent) == 16 for s in vec)
    assert not any(s.kind == S.ForKind.SERIAL and int(s.extent) in (12, 28) for s in loops)
    flat_loads = []
    for s in vec:
        from minitvm.tir.stmt_functor import post_order_visit

        post_order_visit(s.body, lambda e: flat_loads.append(e) if isinstance(
            e, E.BufferLoad) and e.buffer.name.endswith("_flat") else None)
    assert len(flat_loads) == 2  # (tanh's half at shift 0, sigmoid's at 48 * 28 * 28)


def test_a_strided_slice_keeps_its_channel_axis_a_loop():
    """Every other channel (a step of 2) moves two planes per channel: the channel axis cannot
    merge, the rows of each plane still do."""
    x = relay.var("x", shape=(1, 8, 5, 5))
    y = relay.tanh(relay.strided_slice(x, [0, 0], [1, 8], [1, 2]))
    loops = _loops(_lowered(relay.Function([x], y)))
    assert any(int(s.extent) == 4 for s in loops if s.kind != S.ForKind.VECTORIZED)
    assert not any(s.kind == S.ForKind.SERIAL and int(s.extent) == 5 for s in loops)


def test_a_large_stage_keeps_rows_for_its_parallel_loop():
    """1 x 256 x 56 x 56: the merge stops at the channels (256 parallel rows of 3136), it does
    not make one serial loop of the whole tensor."""
    x = relay.var("x", shape=(1, 256, 56, 56))
    loops = _loops(_lowered(relay.Function([x], relay.tanh(x))))
    par = [s for s in loops if s.kind == S.ForKind.PARALLEL]
    assert par and int(par[0].extent) == 256


@pytest.mark.parametrize("shape,axis,sections", [
    ((1, 96, 28, 28), 1, 2), ((2, 6, 7, 7), 1, 3), ((1, 4, 10, 6), 2, 2), ((3, 4, 5), 1, 2),
    ((1, 8, 3, 3), 1, 2), ((1, 256, 20, 20), 1, 2)])
def test_split_gates_match_numpy(shape, axis, sections):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype("float32") * 3

    def fn(x):
        parts = relay.split(x, sections, axis=axis)
        return relay.tanh(parts[0]) * relay.sigmoid(parts[sections - 1]) + parts[0]

    (got,), _ = build_run(fn, a)
    p = np.split(a, sections, axis=axis)
    ref = np.tanh(p[0]) / (1 + np.exp(-p[-1])) + p[0]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_strided_slice_and_bias_match_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 8, 5, 5)).astype("float32")
    b = rng.standard_normal((4,)).astype("float32")

    def fn(x, bias):
        s = relay.strided_slice(x, [0, 1], [2, 8], [1, 2])
        return relay.sigmoid(s) + relay.reshape(bias, (1, 4, 1, 1))

    (got,), _ = build_run(fn, a, b)
    ref = 1 / (1 + np.exp(-a[:, 1::2])) + b.reshape(1, 4, 1, 1)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
