"""TVM's "Deploy a Hugging Face Pruned Model on CPU" tutorial with ``import minitvm as tvm``:
``data_dep_optimization.simplify_fc_transpose.convert``, random block-sparse weights found
with ``relay.analysis.sparse_dense._search_dense_op_weight``,
``data_dep_optimization.bsr_dense.convert`` (dense -> ``nn.sparse_dense`` in BSR form), the
``tvm.ir.save_json`` / ``relay.load_param_dict`` cache of the imported model, and
``GraphModule.benchmark``. The TensorFlow BERT is replaced by a small Relay model of the
same shape family (``dense(x, transpose(W))`` layers, as TF's MatMul imports); the sparse
model must compute what the dense one does with the same weights."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, runtime
from minitvm.contrib import graph_executor
from minitvm.relay import data_dep_optimization as ddo

sp = pytest.importorskip("scipy.sparse", reason="the tutorial builds BSR weights with scipy")

batch_size, seq_len, hidden = 1, 16, 32
target = "llvm"
dev = tvm.cpu()
bs_r = 1
sparsity = 0.85


def import_model():
    """A two-layer feed-forward block: TF's MatMul(x, W) imports as dense(x, transpose(W))."""
    x = relay.var("input_1", shape=(batch_size * seq_len, hidden))
    w1 = relay.var("ffn.w1", shape=(hidden, 4 * hidden))
    w2 = relay.var("ffn.w2", shape=(4 * hidden, hidden))
    y = relay.nn.relu(relay.nn.dense(x, relay.transpose(w1)))
    y = relay.nn.dense(y, relay.transpose(w2)) + x
    mod = tvm.IRModule.from_expr(relay.Function([x, w1, w2], y))
    rng = np.random.default_rng(0)
    params = {"ffn.w1": tvm.nd.array(rng.uniform(-0.1, 0.1, (hidden, 4 * hidden))
                                     .astype("float32")),
              "ffn.w2": tvm.nd.array(rng.uniform(-0.1, 0.1, (4 * hidden, hidden))
                                     .astype("float32"))}
    return mod, params, {"input_1": (batch_size * seq_len, hidden)}


def run_relay_graph(mod, params, shape_dict, target, dev):
    with pytest.warns(DeprecationWarning, match="build_config"), \
            relay.build_config(opt_level=3):
        lib = relay.build(mod, target=target, params=params)
    input_shape = shape_dict["input_1"]
    dummy_data = np.random.default_rng(1).uniform(size=input_shape, low=0,
                                                  high=input_shape[1]).astype("float32")
    m = graph_executor.GraphModule(lib["default"](dev))
    m.set_input(0, dummy_data)
    m.run()
    tvm_output = m.get_output(0)
    result = m.benchmark(dev, repeat=2, number=2)
    assert "Execution time summary" in str(result) and result.mean > 0
    return tvm_output


def random_bsr_matrix(M, N, BS_R, BS_C, density, dtype="float32"):  # noqa: N803
    rng = np.random.default_rng(2)
    Y = np.zeros((M, N), dtype=dtype)  # noqa: N806
    assert M % BS_R == 0
    assert N % BS_C == 0
    nnz = int(density * M * N)
    num_blocks = int(nnz / (BS_R * BS_C)) + 1
    candidate_blocks = np.asarray(list(itertools.product(range(0, M, BS_R), range(0, N, BS_C))))
    assert candidate_blocks.shape[0] == M // BS_R * N // BS_C
    chosen_blocks = candidate_blocks[
        rng.choice(candidate_blocks.shape[0], size=num_blocks, replace=False)]
    for r, c in chosen_blocks:
        Y[r:r + BS_R, c:c + BS_C] = rng.uniform(-0.1, 0.1, (BS_R, BS_C))
    s = sp.bsr_matrix(Y, blocksize=(BS_R, BS_C))
    assert s.data.shape == (num_blocks, BS_R, BS_C)
    assert s.indices.shape == (num_blocks,)
    assert s.indptr.shape == (M // BS_R + 1,)
    return np.asarray(s.todense())


def random_sparse_bert_params(func, params, density, BS_R, BS_C):  # noqa: N803
    new_params = {k: tvm.nd.array(v.numpy()) for k, v in params.items()}
    dense_weight_names = relay.analysis.sparse_dense._search_dense_op_weight(func)
    for item in dense_weight_names:
        name = str(item)
        shape = new_params[name].shape
        if shape[0] % BS_R == 0 and shape[1] % BS_C == 0:
            new_params[name] = tvm.nd.array(random_bsr_matrix(shape[0], shape[1], BS_R, BS_C,
                                                              density))
    return new_params


def test_model_cache_round_trip(tmp_path):
    mod, params, _ = import_model()
    (tmp_path / "model.json").write_text(tvm.ir.save_json(mod))
    (tmp_path / "model.params").write_bytes(runtime.save_param_dict(params))
    mod2 = tvm.ir.load_json((tmp_path / "model.json").read_text())
    params2 = relay.load_param_dict((tmp_path / "model.params").read_bytes())
    assert tvm.ir.structural_equal(mod, mod2)
    assert sorted(params2) == sorted(params)
    np.testing.assert_array_equal(params2["ffn.w1"].numpy(), params["ffn.w1"].numpy())


def test_dense_and_block_sparse_agree():
    mod, params, shape_dict = import_model()
    # simplify_fc_transpose: the transposes move into the weights (new names ".T")
    func, params = ddo.simplify_fc_transpose.convert(mod["main"], params)
    assert "transpose" not in func.astext()
    names = [str(n) for n in relay.analysis.sparse_dense._search_dense_op_weight(func)]
    assert sorted(names) == ["ffn.w1.T", "ffn.w2.T"]
    params = random_sparse_bert_params(func, params, BS_R=bs_r, BS_C=1, density=1 - sparsity)
    dense_out = run_relay_graph(tvm.IRModule.from_expr(func), params, shape_dict, target, dev)

    sparse_func, sparse_params = ddo.bsr_dense.convert(func, params, (bs_r, 1),
                                                      sparsity_threshold=0.8)
    text = sparse_func.astext()
    assert text.count("nn.sparse_dense(") == 2 and "nn.dense(" not in text
    assert any(k.endswith(".indptr") for k in sparse_params)
    sparse_out = run_relay_graph(tvm.IRModule.from_expr(sparse_func), sparse_params,
                                 shape_dict, target, dev)
    tvm.testing.assert_allclose(sparse_out.numpy(), dense_out.numpy(), rtol=1e-5, atol=1e-5)
