"""FuseOps keeps a ``take`` that copies its data several times over (overlapping windows, as
``Tensor.unfold`` with size > step converts) out of its data producer's group: fused, the
producer (a GLU's sigmoid) would be recomputed once per copy. A take of at most twice its data
(an embedding lookup, a reorder) still fuses with it; numerics are unchanged either way."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def _glu_windows(taps: int, steps: int = 12):
    x = relay.var("x", shape=(2, steps, 16))
    a, b = relay.split(x, 2, axis=2)
    u = relay.nn.pad(a * relay.sigmoid(b), ((0, 0), (taps - 1, 0), (0, 0)))
    idx = relay.const((np.arange(steps)[:, None] + np.arange(taps)[None, :]).astype("int64"))
    return tvm.IRModule.from_expr(relay.Function([x], relay.take(u, idx, axis=1)))


def _primitive_bodies(mod) -> list[str]:
    text = relay.transform.FuseOps(2)(relay.transform.InferType()(mod)).astext()
    return [part for part in text.split("fn (")[1:]]


def test_replicating_take_not_fused_with_sigmoid_producer():
    groups = _primitive_bodies(_glu_windows(taps=7))
    assert len(groups) == 2
    producer = [g for g in groups if "sigmoid" in g]
    window = [g for g in groups if "take(" in g]
    assert len(producer) == 1 and len(window) == 1
    assert "take(" not in producer[0] and "sigmoid" not in window[0]


def test_take_of_at_most_twice_its_data_still_fuses():
    groups = _primitive_bodies(_glu_windows(taps=2, steps=12))     # 24 rows of 13: < 2x
    assert len(groups) == 1
    assert "sigmoid" in groups[0] and "take(" in groups[0]


def test_embedding_lookup_of_computed_table_still_fuses():
    w = relay.var("w", shape=(50, 8))
    idx = relay.var("idx", shape=(4, 6), dtype="int64")
    mod = tvm.IRModule.from_expr(relay.Function([w, idx], relay.take(relay.sigmoid(w), idx,
                                                                      axis=0)))
    groups = _primitive_bodies(mod)
    assert len(groups) == 1


def test_replicating_take_numerics():
    mod = _glu_windows(taps=5)
    x = np.random.default_rng(0).standard_normal((2, 12, 16)).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", x)
    g.run()
    a, b = x[..., :8], x[..., 8:]
    u = np.pad(a / (1 + np.exp(-b)), ((0, 0), (4, 0), (0, 0)))
    idx = np.arange(12)[:, None] + np.arange(5)[None, :]
    np.testing.assert_allclose(g.get_output(0).numpy(), u[:, idx], rtol=1e-5, atol=1e-6)
