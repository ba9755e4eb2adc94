"""TVM's "Building a Graph Convolutional Network" how-to with ``import minitvm as tvm``: the
tutorial's ``GraphConv`` layer (dense, ``nn.sparse_dense`` on a CSR adjacency, transposes,
degree norms, ``bias_add``), ``bind_params_by_name`` (with its ``(n, 1)`` bias annotation bound
to the trained ``(n,)`` bias, as TVM allows), ``relay.build`` at opt_level 0 and the graph
executor, checked against the same GCN written in PyTorch on a small random graph (DGL and
the Cora data set stand in for nothing here: the reference is the layer's own formula)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor

sp = pytest.importorskip("scipy.sparse", reason="the tutorial builds the CSR adjacency with scipy")


def GraphConv(layer_name, input_dim, output_dim, adj, input, norm=None, bias=True,  # noqa: N802
              activation=None):
    """The tutorial's layer: ``A * H * W`` computed as ``((W^t * H^t) * A^t)^t``."""
    if norm is not None:
        input = relay.multiply(input, norm)
    weight = relay.var(layer_name + ".weight", shape=(input_dim, output_dim))
    weight_t = relay.transpose(weight)
    dense = relay.nn.dense(weight_t, input)
    output = relay.nn.sparse_dense(dense, adj)
    output_t = relay.transpose(output)
    if norm is not None:
        output_t = relay.multiply(output_t, norm)
    if bias is True:
        _bias = relay.var(layer_name + ".bias", shape=(output_dim, 1))
        output_t = relay.nn.bias_add(output_t, _bias, axis=-1)
    if activation is not None:
        output_t = activation(output_t)
    return output_t


def random_graph(num_nodes: int, rng) -> np.ndarray:
    """A symmetric 0/1 adjacency with self loops (the tutorial adds them to Cora's graph)."""
    a = (rng.random((num_nodes, num_nodes)) < 0.1).astype("float32")
    a = np.maximum(a, a.T)
    np.fill_diagonal(a, 1.0)
    return a


def torch_gcn(adjacency, norm, feats, weights, biases):
    """The reference: DGL's GraphConv with ``norm="both"`` on a dense adjacency, in PyTorch."""
    torch = pytest.importorskip("torch")
    a, n = torch.from_numpy(adjacency), torch.from_numpy(norm)
    h = torch.from_numpy(feats)
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        h = a @ (h * n) @ torch.from_numpy(w) * n + torch.from_numpy(b)
        if i < len(weights) - 1:
            h = torch.relu(h)
    return h.numpy()


def test_build_gcn():
    rng = np.random.default_rng(0)
    num_nodes, infeat_dim, num_hidden, num_classes = 40, 24, 16, 5
    adjacency_dense = random_graph(num_nodes, rng)

    params = {}
    params["infeats"] = rng.standard_normal((num_nodes, infeat_dim)).astype("float32")
    adjacency = sp.csr_matrix(adjacency_dense)
    params["g_data"] = adjacency.data.astype("float32")
    params["indices"] = adjacency.indices.astype("int32")
    params["indptr"] = adjacency.indptr.astype("int32")
    degs = adjacency_dense.sum(axis=0)
    params["norm"] = np.power(degs, -0.5).astype("float32")
    params["norm"] = params["norm"].reshape((params["norm"].shape[0], 1))
    assert params["infeats"].shape[0] == params["indptr"].shape[0] - 1

    infeats = relay.var("infeats", shape=params["infeats"].shape)
    norm = relay.Constant(tvm.nd.array(params["norm"]))
    g_data = relay.Constant(tvm.nd.array(params["g_data"]))
    indices = relay.Constant(tvm.nd.array(params["indices"]))
    indptr = relay.Constant(tvm.nd.array(params["indptr"]))
    Adjacency = namedtuple("Adjacency", ["data", "indices", "indptr"])  # noqa: N806
    adj = Adjacency(g_data, indices, indptr)

    layers = [GraphConv(layer_name="layers.0", input_dim=infeat_dim, output_dim=num_hidden,
                        adj=adj, input=infeats, norm=norm, activation=relay.nn.relu)]
    layers.append(GraphConv(layer_name="layers.1", input_dim=num_hidden,
                            output_dim=num_classes, adj=adj, input=layers[-1], norm=norm,
                            activation=None))
    output = layers[-1]

    # the "trained" weights, shaped as PyTorch's state dict holds them (bias 1-D)
    dims = [(infeat_dim, num_hidden), (num_hidden, num_classes)]
    for i, (fan_in, fan_out) in enumerate(dims):
        params[f"layers.{i}.weight"] = rng.standard_normal((fan_in, fan_out)).astype("float32")
        params[f"layers.{i}.bias"] = rng.standard_normal(fan_out).astype("float32")

    target = "llvm"
    func = relay.Function(relay.analysis.free_vars(output), output)
    assert [p.name_hint for p in func.params] == ["layers.1.weight", "layers.0.weight",
                                                  "infeats", "layers.0.bias", "layers.1.bias"]
    func = relay.build_module.bind_params_by_name(func, params)
    assert len(func.params) == 0
    mod = tvm.IRModule()
    mod["main"] = func
    text = mod.astext(show_meta_data=False)
    assert text.count("nn.sparse_dense(") == 2 and text.count("nn.bias_add(") == 2
    with tvm.transform.PassContext(opt_level=0):
        lib = relay.build(mod, target, params=params)

    dev = tvm.device(target, 0)
    m = graph_executor.GraphModule(lib["default"](dev))
    m.run()
    logits_tvm = m.get_output(0).numpy()
    assert logits_tvm.shape == (num_nodes, num_classes)

    logits_torch = torch_gcn(adjacency_dense, params["norm"], params["infeats"],
                             [params["layers.0.weight"], params["layers.1.weight"]],
                             [params["layers.0.bias"], params["layers.1.bias"]])
    tvm.testing.assert_allclose(logits_torch, logits_tvm, atol=1e-3)
    assert (logits_tvm.argmax(axis=1) == logits_torch.argmax(axis=1)).all()
