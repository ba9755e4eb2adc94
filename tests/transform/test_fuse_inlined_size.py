"""The shared fusion partitioner bounds a group's inlined expression (``MAX_INLINED``).

A fused kernel inlines each producer as a copy per use, so a group whose ops read their
producers twice grows exponentially with its depth: a chain of data-dependent gathers
(``idx = where(t[idx] > 0, t[idx], succ[idx])``, an unrolled search) inlined to 3**depth op
copies and never finished building. The partitioner refuses the fusion that would pass the
limit; these tests check the limit on synthetic graphs (100,000 nodes, no recursion), the
groups both dialects' FuseOps make of the gather chain, and its numerics against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from inlined_size import relax_group_sizes, relay_group_sizes, size_of_body

import minitvm as tvm
from minitvm import relax, relay
from minitvm.transform.graph_partitioner import (
    ELEMWISE,
    MAX_INLINED,
    OPAQUE,
    GraphNode,
    partition_graph,
)

N, M = 64, 50


# ------------------------------------------------------------------ synthetic graphs
def _graph(n_nodes, edges):
    order = []
    for i in range(n_nodes):
        g = GraphNode(i)
        g.index = i
        g.pattern = OPAQUE if i == 0 else ELEMWISE
        order.append(g)
    for a, b in edges:
        order[a].outputs.append((order[b], ELEMWISE))
    return order


def _diamonds(k):
    """x_{j+1} = h(f(x_j), g(x_j)): each diamond doubles the inlined size of what it reads."""
    edges = []
    for j in range(k):
        x, a, b, y = 3 * j, 3 * j + 1, 3 * j + 2, 3 * j + 3
        edges += [(x, a), (x, b), (a, y), (b, y)]
    return _graph(3 * k + 1, edges)


def _inlined_sizes(order, groups):
    """Each node's inlined size within its group, recomputed here (producers come first)."""
    size = [1] * len(order)
    for n in order:
        for o, _ in n.outputs:
            if groups[n.index].find_root() is groups[o.index].find_root():
                size[o.index] += size[n.index]
    return size


def test_diamond_chain_groups_stay_under_the_limit():
    order = _diamonds(40)
    groups = partition_graph(order, 2, 256)
    sizes = _inlined_sizes(order, groups)
    assert max(sizes) <= MAX_INLINED
    roots = {id(g.find_root()) for g in groups}
    assert 4 <= len(roots) < len(order) // 4  # (split, but still fused: ~6 diamonds a group)
    unbounded = partition_graph(_diamonds(40), 2, 256, max_inlined=1 << 62)
    assert len({id(g.find_root()) for g in unbounded}) == 2  # (the input, and all the rest)
    assert max(_inlined_sizes(order, unbounded)) > 2**40


def test_limit_is_a_parameter():
    order = _diamonds(10)
    for limit in (8, 64, 1000):
        groups = partition_graph(order, 2, 256, max_inlined=limit)
        assert max(_inlined_sizes(order, groups)) <= limit


def test_hundred_thousand_node_graphs():
    chain = _graph(100_000, [(i, i + 1) for i in range(99_999)])
    groups = partition_graph(chain, 2, 256)
    assert len({id(g.find_root()) for g in groups}) == 1 + -(-99_999 // 256)  # (max_depth)
    order = _diamonds(33_333)
    groups = partition_graph(order, 2, 256)
    assert max(_inlined_sizes(order, groups)) <= MAX_INLINED


# ------------------------------------------------------------- gather chains, both dialects
def _table():
    return np.random.default_rng(0).integers(-M + 1, M, size=M).astype("int64")


def _succ():
    return np.roll(np.arange(M, dtype="int64"), -1)


def _reference(x, t, depth):
    idx = x.copy()
    for _ in range(depth):
        v = t[idx]
        idx = np.where(v > 0, v, _succ()[idx])
    return idx


def _relay_chain(depth):
    x = relay.var("x", shape=(N,), dtype="int64")
    tab, succ = relay.const(_table(), "int64"), relay.const(_succ(), "int64")
    idx = x
    for _ in range(depth):
        v = relay.take(tab, idx, axis=0, mode="wrap")
        idx = relay.where(
            relay.greater(v, relay.const(0, "int64")), v, relay.take(succ, idx, axis=0, mode="wrap")
        )
    return tvm.IRModule.from_expr(relay.Function([x], idx))


def _relax_chain(depth):
    R = relax.op
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((N,), "int64"))
    tab, succ = relax.const(_table(), "int64"), relax.const(_succ(), "int64")
    with bb.function("main", [x]):
        with bb.dataflow():
            idx = x
            for _ in range(depth):
                v = bb.emit(R.take(tab, idx, axis=0, mode="wrap"))
                nxt = bb.emit(R.take(succ, idx, axis=0, mode="wrap"))
                idx = bb.emit(R.where(bb.emit(R.greater(v, relax.const(0, "int64"))), v, nxt))
            out = bb.emit_output(idx)
        bb.emit_func_output(out)
    return bb.get()


DEPTH = 12  # (3**12 = 531,441 op copies in one kernel without the limit)


def test_relay_gather_chain_builds_and_matches_numpy():
    mod = _relay_chain(DEPTH)
    assert size_of_body(mod["main"].body) > MAX_INLINED  # (what one group would inline)
    with tvm.transform.PassContext(opt_level=3):
        fused, _ = relay.optimize(mod, "llvm")
    sizes = relay_group_sizes(fused)
    assert len(sizes) >= 3 and max(sizes) <= MAX_INLINED
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    from minitvm.contrib import graph_executor

    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    x = np.random.default_rng(1).integers(0, M, size=N).astype("int64")
    m.set_input("x", x)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), _reference(x, _table(), DEPTH))


def test_relax_gather_chain_builds_and_matches_numpy():
    mod = _relax_chain(DEPTH)
    seq = tvm.transform.Sequential(
        [
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FuseOps(),
        ]
    )
    sizes = relax_group_sizes(seq(mod))
    assert len(sizes) >= 3 and max(sizes) <= MAX_INLINED
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    x = np.random.default_rng(2).integers(0, M, size=N).astype("int64")
    np.testing.assert_array_equal(
        vm["main"](tvm.nd.array(x)).numpy(), _reference(x, _table(), DEPTH)
    )


@pytest.mark.parametrize("depth", [1, 3])
def test_short_chains_stay_one_kernel(depth):
    """Below the limit nothing changes: a short chain is still one fused function."""
    with tvm.transform.PassContext(opt_level=3):
        fused, _ = relay.optimize(_relay_chain(depth), "llvm")
    assert len(relay_group_sizes(fused)) == 1
