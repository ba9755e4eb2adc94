"""ChangeBatch, SimplifyFCTranspose, DenseToSparse and bind_params_by_name."""

import numpy as np
import pytest
from pass_test_util import check_numerics, evaluate, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.bind_params import bind_params_by_name


def _dense_net():
    x = relay.var("x", shape=(8, 4))
    w = relay.var("w", shape=(5, 4))
    return x, w, relay.Function([x, w], relay.nn.relu(relay.nn.dense(x, w)))


def test_change_batch():
    x, w, f = _dense_net()
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    p = relay.transform.ChangeBatch({mod["main"].params[0]: 0}, batch_size=3)
    assert (p.info.name, p.info.opt_level) == ("ChangeBatch", 1)
    out = run_pass(p, mod)
    assert out["main"].checked_type.ret_type == relay.TensorType((3, 5))
    assert out["main"].params[0].type_annotation == relay.TensorType((3, 4))


def test_simplify_fc_transpose():
    x = relay.var("x", shape=(2, 4))
    w = relay.var("w", shape=(4, 5))
    f = relay.Function([x, w], relay.nn.dense(x, relay.transpose(w, [1, 0])))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    p = relay.transform.SimplifyFCTranspose(["w"])
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "SimplifyFCTranspose", 4, ["DeadCodeElimination"])
    out = run_pass(p, mod)
    wt = relay.var("w.T", shape=(5, 4))
    tvm.ir.assert_structural_equal(out["main"], infer(relay.Function([x, wt],
                                                                     relay.nn.dense(x, wt))))
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((2, 4)).astype("float32"), rng.standard_normal((4, 5)).astype(
        "float32")
    np.testing.assert_allclose(evaluate(out, [xv, wv.T.copy()]), evaluate(mod, [xv, wv]),
                               rtol=1e-5)


def test_dense_to_sparse():
    x = relay.var("x", shape=(2, 4))
    w = relay.var("w", shape=(6, 4))
    mod = relay.transform.InferType()(
        tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.dense(x, w))))
    # BSR with 2x2 blocks: 3 block rows, 2 block cols; keep blocks (0,0), (1,1), (2,0)
    dense = np.zeros((6, 4), "float32")
    rng = np.random.default_rng(1)
    blocks = {(0, 0): None, (1, 1): None, (2, 0): None}
    for (r, c) in blocks:
        dense[2 * r:2 * r + 2, 2 * c:2 * c + 2] = rng.standard_normal((2, 2))
    data = np.stack([dense[2 * r:2 * r + 2, 2 * c:2 * c + 2] for (r, c) in blocks])
    indices = np.array([0, 1, 0], "int32")
    indptr = np.array([0, 1, 2, 3], "int32")
    p = relay.transform.DenseToSparse(["w"], [[3, 2, 2, 3, 4]])
    out = run_pass(p, mod)
    body = out["main"].body
    assert body.op.name == "nn.sparse_dense"
    assert [v.name_hint for v in out["main"].params] == ["x", "w.data", "w.indices", "w.indptr"]
    xv = rng.standard_normal((2, 4)).astype("float32")
    np.testing.assert_allclose(evaluate(out, [xv, data, indices, indptr]),
                               evaluate(mod, [xv, dense]), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="5 numbers"):
        relay.transform.DenseToSparse(["w"], [[3, 2]])(mod)


def test_bind_params_by_name():
    x, w, f = _dense_net()
    wv = np.ones((5, 4), "float32")
    g = bind_params_by_name(f, {"w": tvm.nd.array(wv), "other": wv})
    assert [p.name_hint for p in g.params] == ["x"]
    assert isinstance(g.body.args[0].args[1], relay.Constant)
    xv = np.ones((8, 4), "float32")
    check_numerics(relay.Function([x], relay.nn.relu(relay.nn.dense(x, relay.const(wv)))), g,
                   [xv])
    with pytest.raises(ValueError, match="annotated float32"):
        bind_params_by_name(f, {"w": np.ones((4, 4), "float32")})
    # unit dimensions aside, TVM binds the value with its own shape (its GCN tutorial does)
    bias = relay.var("b", shape=(4, 1))
    h = bind_params_by_name(relay.Function([x, bias], relay.nn.bias_add(x, bias, axis=-1)),
                            {"b": np.ones(4, "float32")})
    assert tuple(h.body.args[1].data.shape) == (4,)
    a, b = relay.var("a", shape=()), relay.var("a", shape=())
    with pytest.raises(ValueError, match="Multiple args"):
        bind_params_by_name(relay.Function([a, b], a), {"a": np.float32(1)})
