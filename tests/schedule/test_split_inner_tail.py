"""An injective stage whose innermost axis a merging reshape divides by a constant that is no
whole number of vectors (``[.., 3, 18]`` read as ``[.., 54]``: ST-GCN's einsum operand moved to
``n c t k v`` and flattened): looped as ``j // c`` outer and ``j % c`` in whole vectors, a half
vector where half a vector is left, and scalars, so no vector load divides its lane variable
(each lane gathered before). IR and numerics against numpy."""

import numpy as np
import pytest
from relay_build import build_run

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import LoweringOptions, lower_te
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, post_order_visit, walk_stmts


def _lowered(f):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    ins, _, outs = te_compiler.build_te(mod["main"])
    func, _ = lower_te(ins, outs, "k", options=LoweringOptions())
    return func


def _inner_loops(func):
    return [s for s in walk_stmts(func.body) if isinstance(s, S.For) and
            not any(isinstance(x, S.For) for x in walk_stmts(s.body))]


def _divided_loads(loop) -> int:
    nodes = []
    post_order_visit(loop.body, nodes.append)
    return sum(1 for ld in nodes if isinstance(ld, E.BufferLoad) for i in ld.indices
               for e in post_order(i) if isinstance(e, (E.FloorDiv, E.FloorMod)) and
               any(v is loop.loop_var for v in post_order(e.a)))


def _flattened_transpose(x, shape):
    n, k, c, t, v = shape
    return relay.reshape(relay.transpose(x, (0, 2, 3, 1, 4)), (1, n * c * t, k * v))


@pytest.mark.parametrize("v", [17, 18, 24, 40])
def test_tail_divisor_loops_without_divided_loads(v):
    shape = (2, 3, 4, 8, v)
    x = relay.var("x", shape=shape)
    func = _lowered(relay.Function([x], _flattened_transpose(x, shape)))
    vectors = [s for s in _inner_loops(func) if s.kind == S.ForKind.VECTORIZED]
    assert vectors and sum(_divided_loads(s) for s in vectors) == 0
    # a tail of at least half a vector is written as a half vector (24 floats: 16 + 8 lanes)
    assert any(int(s.extent.value if hasattr(s.extent, "value") else s.extent) == 8
               for s in vectors) == (v % 16 >= 8)


@pytest.mark.parametrize("v,dtype", [(17, "float32"), (18, "float32"), (24, "float32"),
                                     (31, "float32"), (40, "float32"), (18, "int8"),
                                     (33, "int8"), (100, "int8")])
def test_tail_divisor_matches_numpy(v, dtype):
    shape = (2, 3, 4, 8, v)
    a = (np.random.default_rng(v).standard_normal(shape) * 20).astype(dtype)
    (got,), _ = build_run(lambda x: _flattened_transpose(x, shape), a)
    ref = a.transpose(0, 2, 3, 1, 4).reshape(1, 2 * 4 * 8, 3 * v)
    np.testing.assert_array_equal(got, ref)


def _angle_basis(a, w, n):
    """DimeNet's angle basis: cos(angle * l) for l in 0..4 times a (n, 6) radial row, flattened
    to rows of 30 (a broadcast whose last axis is no whole number of vectors)."""
    c = relay.cos(relay.expand_dims(a, 1) * relay.const(np.arange(5, dtype="float32")))
    return relay.reshape(relay.expand_dims(c, 2) * relay.expand_dims(w, 1), (n, 30))


@pytest.mark.parametrize("cols", [30, 29, 20, 44])
def test_row_tail_in_half_and_quarter_vectors(cols):
    """A row of 30 floats is 16 + 8 + 4 lanes and 2 scalars (before: 16 lanes and 14 scalars,
    each scalar computing the whole fused body: DimeNet's angle kernel 585 -> 260 us)."""
    x = relay.var("x", shape=(64, cols))
    func = _lowered(relay.Function([x], relay.cos(x * relay.const(2.0, "float32"))))
    inner = _inner_loops(func)
    widths = sorted(int(s.extent.value if hasattr(s.extent, "value") else s.extent)
                    for s in inner if s.kind == S.ForKind.VECTORIZED)
    scalar = [s for s in inner if s.kind != S.ForKind.VECTORIZED]
    rest = cols % 16
    want = [16] * (cols // 16 > 0) + [8] * (rest >= 8) + [4] * (rest % 8 >= 4)
    assert widths == sorted(want)
    tail = sum(int(s.extent.value if hasattr(s.extent, "value") else s.extent) for s in scalar)
    assert tail == rest % 4


def test_row_tail_vectors_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 3, 40).astype("float32")
    w = rng.standard_normal((40, 6)).astype("float32")
    (got,), kinds = build_run(lambda av, wv: _angle_basis(av, wv, 40), a, w)
    assert kinds == ["native"]
    ref = (np.cos(a[:, None] * np.arange(5))[:, :, None] * w[:, None, :]).reshape(40, 30)
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-6)
