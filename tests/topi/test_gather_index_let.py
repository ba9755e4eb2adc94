"""Gathers clamp their index through one let-bound value (topi.transform_extra.clamp_index):
the negative-index wrap reads the index three times, so a chain of gathers each indexed by the
previous one's output (a CRF's Viterbi back-trace: ``best = back[t].gather(1, best)``), fused
and inlined into one kernel, grew as 3 ** depth (a 24-step trace ran the Relax build out of
memory)."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relay, te
from minitvm.contrib import graph_executor
from minitvm.tir import expr as E
from minitvm.topi.transform_extra import clamp_index

DEPTH, BATCH, TAGS = 20, 3, 9


def test_computed_index_is_let_bound():
    idx = te.placeholder((4,), "int64", name="idx")
    j = te.compute((4,), lambda i: idx[i] + 1, name="j")
    bound = clamp_index(j[0], 9)
    assert isinstance(bound, E.Let)
    assert not isinstance(clamp_index(E.Var("v", "int64"), 9), E.Let)  # a plain var stays


def _back_trace(depth):
    back = [relay.var(f"back{t}", shape=(BATCH, TAGS), dtype="int64") for t in range(depth)]
    last = relay.var("last", shape=(BATCH, 1), dtype="int64")
    best = last
    path = [best]
    for b in reversed(back):
        best = relay.gather(b, 1, best)
        path.append(best)
    return back, last, relay.concatenate(path[::-1], 1)


def test_gather_chain_builds_linear_and_matches_numpy():
    back, last, out = _back_trace(DEPTH)
    params = back + [last]
    mod = tvm.IRModule.from_expr(relay.Function(params, out))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    kernels = lib.get_lib().kernels
    assert all(k.kind == "native" for k in kernels.values())
    assert max(len(k.ir or "") for k in kernels.values()) < 200_000  # 3 ** 19 before
    rng = np.random.default_rng(0)
    feeds = {f"back{t}": rng.integers(0, TAGS, (BATCH, TAGS)) for t in range(DEPTH)}
    feeds["last"] = rng.integers(0, TAGS, (BATCH, 1))
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, v in feeds.items():
        g.set_input(k, v)
    g.run()
    best = feeds["last"]
    path = [best]
    for t in reversed(range(DEPTH)):
        best = np.take_along_axis(feeds[f"back{t}"], best, 1)
        path.append(best)
    np.testing.assert_array_equal(g.get_output(0).numpy(), np.concatenate(path[::-1], 1))
