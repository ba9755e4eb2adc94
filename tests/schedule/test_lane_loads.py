"""Gathering vector loads that read consecutive elements (``schedule/lane_loads.py``): the head
split / merge and q/k/v split chains of attention lower to contiguous loads through flat views
(no division by the lane), a true transpose and a data-dependent gather keep their loads, and
every case matches numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.backend.kernel_cache import clear_cache
from minitvm.contrib import graph_executor
from minitvm.schedule import lane_loads
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, stmt_exprs, walk_stmts


def _build(func):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    return lib, graph_executor.GraphModule(lib["default"](tvm.cpu(0)))


def _run(func, *arrays):
    lib, g = _build(func)
    for p, a in zip(func.params, arrays, strict=True):
        g.set_input(p.name_hint, a)
    g.run()
    return g.get_output(0).numpy(), [k.prim_func for k in lib.get_lib().kernels.values()
                                     if k.prim_func is not None]


def _lane_loads(prim):
    """(load, lane var) for every load in a vectorized loop that uses the loop's variable."""
    out = []
    for f in walk_stmts(prim.body):
        if isinstance(f, S.For) and f.kind == S.ForKind.VECTORIZED:
            for s in walk_stmts(f.body):
                for e in (x for root in stmt_exprs(s) for x in post_order(root)):
                    if isinstance(e, E.BufferLoad) and any(
                            v is f.loop_var for i in e.indices for v in post_order(i)):
                        out.append((e, f.loop_var))
    return out


def _divides_lane(load, lane) -> bool:
    return any(isinstance(x, (E.FloorDiv, E.FloorMod)) and
               any(v is lane for v in post_order(x))
               for i in load.indices for x in post_order(i))


def _qkv_split(x):  # nn.MultiheadAttention's packed projection into q, k, v
    a = relay.reshape(x, (48, 2, 3, 128))
    a = relay.transpose(relay.expand_dims(a, 0), (3, 1, 2, 0, 4))
    return relay.squeeze(a, [3])


def _head_split(y):  # one of q, k, v into heads: [S, B, H*D] -> [B*H, S, D]
    return relay.transpose(relay.reshape(relay.take(y, relay.const(1), axis=0), (48, 16, 16)),
                           (1, 0, 2))


def _head_merge(z):  # [B*H, S, D] -> [S*B, H*D]
    return relay.reshape(relay.transpose(z, (1, 0, 2)), (96, 128))


@pytest.mark.parametrize("fn,shape,ref", [
    (_qkv_split, (96, 384), lambda a: a.reshape(48, 2, 3, 128).transpose(2, 0, 1, 3)),
    (_head_split, (3, 48, 2, 128), lambda a: a[1].reshape(48, 16, 16).transpose(1, 0, 2)),
    (_head_merge, (16, 48, 16), lambda a: a.transpose(1, 0, 2).reshape(96, 128)),
])
def test_attention_layout_chains_load_contiguous_vectors(rng, fn, shape, ref):
    a = rng.standard_normal(shape).astype("float32")
    x = relay.var("x", shape=shape)
    got, prims = _run(relay.Function([x], fn(x)), a)
    np.testing.assert_array_equal(got, ref(a))
    loads = [ld for p in prims for ld in _lane_loads(p)]
    assert loads
    for load, lane in loads:
        assert lane_stride(load, lane) == 1
        assert not _divides_lane(load, lane)


def lane_stride(load, lane) -> int | None:
    """Elements of ``load``'s buffer between the addresses two adjacent lanes read (its flat
    address less the same with ``lane`` at 0, simplified), or None when that is not a
    constant multiple of the lane: 1 for contiguous vectors, a row for lanes a row apart."""
    from minitvm.arith import Analyzer
    from minitvm.schedule.common import const_int
    from minitvm.tir.stmt_functor import substitute

    dims = [const_int(d) for d in load.buffer.shape]
    addr, step = E.IntImm("int64", 0), 1
    for i, d in reversed(list(zip(load.indices, dims, strict=True))):
        i = i if i.dtype == "int64" else E.Cast("int64", i)
        addr = addr + i * E.IntImm("int64", step)
        step *= d
    delta = Analyzer().simplify(addr - substitute(addr, {lane: E.IntImm(lane.dtype, 0)}))
    coef = delta.b if isinstance(delta, E.Mul) else None
    if isinstance(delta, E.Cast):
        delta = delta.value
    if isinstance(delta, E.Var) and delta is lane:
        return 1
    if isinstance(delta, E.Mul) and isinstance(coef, E.IntImm):
        a = delta.a.value if isinstance(delta.a, E.Cast) else delta.a
        return coef.value if a is lane else None
    return None


def test_blocks_narrower_than_a_vector_keep_their_gathers(rng):
    # head dim 8 under 16 lanes: one vector's lanes come from two heads, not contiguous
    a = rng.standard_normal((4, 6, 8)).astype("float32")
    x = relay.var("x", shape=a.shape)
    got, prims = _run(relay.Function([x], relay.reshape(relay.transpose(x, (1, 0, 2)),
                                                        (6, 32))), a)
    np.testing.assert_array_equal(got, a.transpose(1, 0, 2).reshape(6, 32))
    loads = [ld for p in prims for ld, _ in _lane_loads(p)]
    assert loads and not any(ld.buffer.name.endswith("_flat") for ld in loads)


def test_true_transpose_keeps_its_loads(rng):
    # the innermost output axis walks a column of the input: nothing contiguous to find
    a = rng.standard_normal((40, 48)).astype("float32")
    x = relay.var("x", shape=a.shape)
    got, prims = _run(relay.Function([x], relay.transpose(x, (1, 0))), a)
    np.testing.assert_array_equal(got, a.T)
    assert not any(ld.buffer.name.endswith("_flat") for p in prims for ld, _ in _lane_loads(p))


def test_data_dependent_gather_is_left_alone(rng):
    # take with run-time indices: the offset reads a buffer, so it cannot be evaluated
    a = rng.standard_normal((10, 64)).astype("float32")
    idx = np.array([3, 1, 4, 1, 5, 9], dtype="int32")
    x, i = relay.var("x", shape=a.shape), relay.var("i", shape=idx.shape, dtype="int32")
    got, _ = _run(relay.Function([x, i], relay.take(x, i, axis=0)), a, idx)
    np.testing.assert_array_equal(got, a[idx])


@pytest.mark.parametrize("cap,flat", [(64, False), (lane_loads.MAX_POINTS, True)])
def test_over_the_point_cap_the_gathers_stay(rng, monkeypatch, cap, flat):
    monkeypatch.setattr(lane_loads, "MAX_POINTS", cap)
    clear_cache()  # (the kernel cache does not key on the cap)
    a = rng.standard_normal((8, 20, 16)).astype("float32")
    z = relay.var("x", shape=a.shape)
    merged = relay.reshape(relay.transpose(z, (1, 0, 2)), (20, 128))
    got, prims = _run(relay.Function([z], merged), a)
    clear_cache()
    np.testing.assert_array_equal(got, a.transpose(1, 0, 2).reshape(20, 128))
    assert any(ld.buffer.name.endswith("_flat") for p in prims for ld, _ in _lane_loads(p)) \
        == flat


def test_evaluate_floor_semantics_and_unsupported_nodes():
    i = E.Var("i", "int32")
    vals = {id(i): np.arange(-7, 8, dtype=np.int64)}
    seven = E.IntImm("int32", 3)
    got = lane_loads.evaluate(E.FloorDiv(i, seven) * seven + E.FloorMod(i, seven), vals)
    np.testing.assert_array_equal(got, np.arange(-7, 8))
    np.testing.assert_array_equal(lane_loads.evaluate(E.FloorDiv(i, seven), vals),
                                  [v // 3 for v in range(-7, 8)])
    np.testing.assert_array_equal(
        lane_loads.evaluate(E.Max(E.Min(i, E.IntImm("int32", 2)), E.IntImm("int32", 0)), vals),
        np.clip(np.arange(-7, 8), 0, 2))
    assert lane_loads.evaluate(i + E.Var("n", "int32"), vals) is None  # an unbound var
    assert lane_loads.evaluate(E.FloorDiv(i, i - i), vals) is None  # a division by zero


def test_evaluate_walks_a_deep_chain_without_recursion():
    i = E.Var("i", "int32")
    e = i
    for _ in range(100_000):
        e = E.Add(e, E.IntImm("int32", 1))
    got = lane_loads.evaluate(e, {id(i): np.arange(3, dtype=np.int64)})
    np.testing.assert_array_equal(got, np.arange(3) + 100_000)
