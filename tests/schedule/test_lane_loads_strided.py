"""Transposes behind reshapes (``schedule/lane_loads.py``'s ``strided_copy_axis`` and strided
lane loads): BERT's K head split ``[S, H*D] -> [H, D, S]`` reaches ``lower.transpose_nest``'s
tiles although its indices divide, and its loads read ``x_flat[base + stride * lane]`` with no
per-lane division; a plain transpose keeps its loads; every case matches numpy, partial tiles,
odd sizes, several permutations and a flip included."""

import numpy as np
import pytest
from test_lane_loads import _divides_lane, _lane_loads, _run, lane_stride

from minitvm import relay
from minitvm.schedule import lane_loads
from minitvm.te.operation import compute, placeholder
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.buffer import decl_buffer
from minitvm.tir.stmt_functor import walk_stmts


def _reshape_transpose(s, h, d, perm):
    def fn(x):
        a = relay.transpose(relay.reshape(x, (1, s, h, d)), perm)
        out = [[1, s, h, d][k] for k in perm]
        return relay.reshape(a, (out[0] * out[1], out[2], out[3]))

    def ref(a):
        b = a.reshape(1, s, h, d).transpose(perm)
        return b.reshape(b.shape[0] * b.shape[1], b.shape[2], b.shape[3])
    return (s, h * d), fn, ref


SPLITS = [
    _reshape_transpose(128, 12, 64, (0, 2, 3, 1)),  # BERT's K: [S, H*D] -> [H, D, S]
    _reshape_transpose(37, 3, 20, (0, 2, 3, 1)),    # partial tiles and vectors on both axes
    _reshape_transpose(20, 5, 8, (0, 2, 3, 1)),
    _reshape_transpose(33, 4, 16, (0, 3, 2, 1)),    # [D, H, S]
]
CASES = SPLITS + [
    _reshape_transpose(48, 6, 16, (0, 2, 1, 3)),    # the head split of Q and V: contiguous
    ((40, 48), lambda x: relay.transpose(x, (1, 0)), lambda a: a.T),
    ((19, 35), lambda x: relay.transpose(x, (1, 0)), lambda a: a.T),
    ((3, 17, 50), lambda x: relay.transpose(x, (2, 0, 1)), lambda a: a.transpose(2, 0, 1)),
    ((2, 32, 5, 24), lambda x: relay.transpose(x, (0, 2, 3, 1)),  # NCHW -> NHWC
     lambda a: a.transpose(0, 2, 3, 1)),
    ((20, 36), lambda x: relay.reverse(relay.reshape(relay.transpose(x, (1, 0)), (36, 20)), 1),
     lambda a: a.T[:, ::-1]),
    ((6, 40), lambda x: relay.reshape(relay.transpose(relay.reshape(x, (6, 2, 20)), (2, 1, 0)),
                                      (40, 6)),
     lambda a: a.reshape(6, 2, 20).transpose(2, 1, 0).reshape(40, 6)),
]


@pytest.mark.parametrize("shape,fn,ref", CASES)
def test_copies_match_numpy(rng, shape, fn, ref):
    a = rng.standard_normal(shape).astype("float32")
    x = relay.var("x", shape=shape)
    got, prims = _run(relay.Function([x], fn(x)), a)
    np.testing.assert_array_equal(got, ref(a))
    for load, lane in (ld for p in prims for ld in _lane_loads(p)):
        assert not _divides_lane(load, lane)


def test_int32_split_matches_numpy(rng):
    shape, fn, ref = _reshape_transpose(24, 3, 16, (0, 2, 3, 1))
    a = rng.integers(-1000, 1000, shape).astype("int32")
    x = relay.var("x", shape=shape, dtype="int32")
    got, _ = _run(relay.Function([x], fn(x)), a)
    np.testing.assert_array_equal(got, ref(a))


@pytest.mark.parametrize("shape,fn,ref", [SPLITS[0], SPLITS[3]])
def test_k_split_is_tiled_and_reads_lanes_a_row_apart(rng, shape, fn, ref):
    a = rng.standard_normal(shape).astype("float32")
    x = relay.var("x", shape=shape)
    got, prims = _run(relay.Function([x], fn(x)), a)
    np.testing.assert_array_equal(got, ref(a))
    row = shape[1]
    loads = [ld for p in prims for ld in _lane_loads(p)]
    assert loads
    for load, lane in loads:  # x[... + lane * row + ...]: flat, or its rows indexed
        assert lane_stride(load, lane) == row
    # transpose_nest's tile: a serial loop of 16 rows of the output around the vector loop
    loops = [s for p in prims for s in walk_stmts(p.body) if isinstance(s, S.For)]
    assert any(s.kind == S.ForKind.SERIAL and isinstance(s.extent, E.IntImm) and
               s.extent.value == 16 and isinstance(s.body, S.For) and
               s.body.kind == S.ForKind.VECTORIZED for s in loops)


def test_plain_transpose_keeps_its_loads(rng):
    a = rng.standard_normal((19, 35)).astype("float32")
    x = relay.var("x", shape=a.shape)
    got, prims = _run(relay.Function([x], relay.transpose(x, (1, 0))), a)
    np.testing.assert_array_equal(got, a.T)
    assert not any(ld.buffer.name.endswith("_flat") for p in prims for ld, _ in _lane_loads(p))


def _stage(shape, index):
    """A stage of ``shape`` whose body loads ``x`` (128 x 768) at ``index(*axes)``."""
    t = compute(shape, lambda *ax: placeholder((1,), "float32", "y")[0])
    x = decl_buffer((128, 768), "float32", "x")
    return t, E.BufferLoad(x, list(index(*[iv.var for iv in t.op.axis])))


def test_strided_copy_axis():
    k, body = _stage((12, 64, 128), lambda h, d, s: [(s * 768 + h * 64 + d) // 768,
                                                     (s * 768 + h * 64 + d) % 768])
    assert lane_loads.copy_strides(k, body, (12, 64, 128)) == [64, 1, 768]
    assert lane_loads.strided_copy_axis(k, body, (12, 64, 128)) == 1
    rows, body = _stage((128, 768), lambda s, j: [s, j])  # row-contiguous: not a strided copy
    assert lane_loads.strided_copy_axis(rows, body, (128, 768)) is None
    odd, body = _stage((768, 128), lambda j, s: [(s * s) % 128, j])  # steps not constant
    assert lane_loads.copy_strides(odd, body, (768, 128)) is None
    assert lane_loads.strided_copy_axis(odd, body * 2.0, (768, 128)) is None  # not one load

