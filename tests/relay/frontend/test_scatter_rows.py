"""Row scatters: torch's ``index_add`` along dim 0 and ``scatter_add`` / ``scatter`` of an index
``idx[:, None].expand(..)`` (a graph network's message passing and per-graph readout) import as a
``scatter_nd`` of whole rows, not a per-element ``scatter_elements`` or an every-pair
comparison; numerics against eager torch with repeated targets. A scatter along a
later dim, or with a per-element index, keeps its old form."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay import expr as _expr

torch = pytest.importorskip("torch", reason="the torch cases need the torch extra")


def _import(model, inputs):
    traced = torch.jit.trace(model.eval(), tuple(inputs.values()))
    return relay.frontend.from_pytorch(traced, [(k, (tuple(v.shape), str(v.dtype)[6:]))
                                                for k, v in inputs.items()])


def _ops(mod) -> set:
    names = set()

    def visit(e):
        if isinstance(e, _expr.Call) and hasattr(e.op, "name"):
            names.add(e.op.name)
    relay.analysis.post_order_visit(mod["main"], visit)
    return names


def _run(mod, params, inputs):
    with minitvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    for k, v in inputs.items():
        m.set_input(k, v.numpy())
    m.run()
    return m.get_output(0).numpy()


class MessagePassing(torch.nn.Module):
    """Sum of neighbour rows into each node, then a per-graph sum readout."""

    def forward(self, h, src, dst, batch):
        agg = torch.zeros_like(h).index_add(0, dst, h[src] * 0.5)
        idx = batch[:, None].expand(-1, h.shape[1])
        pooled = h.new_zeros(4, h.shape[1]).scatter_add(0, idx, h + agg)
        return torch.cat([pooled, h.new_zeros(4, h.shape[1]).scatter(0, idx, agg)], 0)


class LaterAxis(torch.nn.Module):
    def forward(self, h, idx):
        return torch.zeros(h.shape[0], 6).index_add(1, idx, h)


def _graph_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    nodes, edges = 40, 300
    dst = torch.randint(0, nodes, (edges,), generator=g)   # targets repeat
    return {"h": torch.randn(nodes, 24, generator=g),
            "src": torch.randint(0, nodes, (edges,), generator=g), "dst": dst,
            "batch": torch.arange(nodes) // 10}


def test_index_add_and_expanded_scatter_add_are_row_scatters():
    inputs = _graph_inputs(3)
    mod, params = _import(MessagePassing(), inputs)
    ops = _ops(mod)
    assert "scatter_nd" in ops and "scatter_elements" not in ops
    want = MessagePassing()(*inputs.values()).numpy()
    np.testing.assert_allclose(_run(mod, params, inputs), want, rtol=1e-5, atol=1e-5)


def test_row_scatter_matches_numpy_add_at():
    inputs = _graph_inputs(4)
    mod, params = _import(MessagePassing(), inputs)
    h, src, dst, batch = (v.numpy() for v in inputs.values())
    agg = np.zeros_like(h)
    np.add.at(agg, dst, h[src] * 0.5)
    pooled = np.zeros((4, h.shape[1]), h.dtype)
    np.add.at(pooled, batch, h + agg)
    got = _run(mod, params, inputs)
    np.testing.assert_allclose(got[:4], pooled, rtol=1e-5, atol=1e-4)


def test_index_add_along_a_later_axis_keeps_scatter_elements():
    g = torch.Generator().manual_seed(5)
    inputs = {"h": torch.randn(5, 50, generator=g),
              "idx": torch.randint(0, 6, (50,), generator=g)}
    mod, params = _import(LaterAxis(), inputs)
    assert "scatter_nd" not in _ops(mod)
    want = LaterAxis()(*inputs.values()).numpy()
    np.testing.assert_allclose(_run(mod, params, inputs), want, rtol=1e-5, atol=1e-5)
