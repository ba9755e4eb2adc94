"""relay.testing workloads: they type-check, have seeded params, and evaluate in the interpreter."""

import numpy as np
import pytest

from minitvm import relay
from minitvm.ir.type import TensorType
from minitvm.relay import testing


def _run(mod, params, seed=0):
    data_type = mod["main"].params[0].checked_type
    data = np.random.RandomState(seed).standard_normal(data_type.concrete_shape).astype("float32")
    return relay.create_executor("debug", mod=mod, params=params).evaluate()(data).numpy()


def _out_type(mod):
    return mod["main"].checked_type.ret_type


def test_mlp():
    mod, params = testing.mlp.get_workload(batch_size=2)
    assert sorted(params) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight", "fc3_bias",
                              "fc3_weight"]
    assert params["fc1_weight"].shape == (128, 784)
    out = _run(mod, params)
    assert out.shape == (2, 10)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


def test_params_are_seeded_and_named_like_tvm():
    _, p1 = testing.resnet.get_workload(num_layers=18, seed=0)
    _, p2 = testing.resnet.get_workload(num_layers=18, seed=0)
    _, p3 = testing.resnet.get_workload(num_layers=18, seed=1)
    w = "stage1_unit1_conv1_weight"
    np.testing.assert_array_equal(p1[w].numpy(), p2[w].numpy())
    assert not np.array_equal(p1[w].numpy(), p3[w].numpy())
    for name in ("bn_data_gamma", "conv0_weight", "bn0_moving_var", "stage2_unit1_sc_weight",
                 "fc1_weight", "fc1_bias"):
        assert name in p1
    np.testing.assert_array_equal(p1["bn0_moving_var"].numpy(), 1.0)
    np.testing.assert_array_equal(p1["fc1_bias"].numpy(), 0.0)
    assert "data" not in p1


@pytest.mark.parametrize("num_layers,n_conv", [(18, 21), (34, 37), (50, 53), (101, 104),
                                                (152, 155)])
def test_resnet_builds(num_layers, n_conv):
    mod, params = testing.resnet.get_workload(num_layers=num_layers)
    assert _out_type(mod) == TensorType((1, 1000), "float32")
    assert sum(1 for k in params if k.endswith("conv1_weight") or k.endswith("conv2_weight")
               or k.endswith("conv3_weight") or k.endswith("sc_weight")) + 1 == n_conv


def test_resnet_cifar_sizes():
    mod, _ = testing.resnet.get_workload(num_layers=20, image_shape=(3, 28, 28), num_classes=10)
    assert _out_type(mod) == TensorType((1, 10), "float32")
    with pytest.raises(ValueError, match="no ResNet with 19 layers"):
        testing.resnet.get_workload(num_layers=19)


def test_resnet18_evaluates():
    mod, params = testing.resnet.get_workload(num_layers=18)
    out = _run(mod, params)
    assert out.shape == (1, 1000) and np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(), 1.0, rtol=1e-5)


def test_resnet50_evaluates():
    # About 1-3 s on an idle 2-core machine; not asserted, since CI machines are shared.
    mod, params = testing.resnet.get_workload(num_layers=50)
    out = _run(mod, params)
    assert out.shape == (1, 1000) and np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(), 1.0, rtol=1e-5)


def test_small_resnet():
    mod, params = testing.resnet.get_small_workload()
    assert _out_type(mod) == TensorType((1, 64, 56, 56), "float32")
    out = _run(mod, params)
    assert out.shape == (1, 64, 56, 56) and (out >= 0).all() and out.max() > 0


def test_mobilenet():
    mod, params = testing.mobilenet.get_workload()
    assert params["separable_conv_block_1_depthwise_conv1_weight"].shape == (32, 1, 3, 3)
    out = _run(mod, params)
    assert out.shape == (1, 1000)
    np.testing.assert_allclose(out.sum(), 1.0, rtol=1e-5)


def test_bert_layer():
    mod, params = testing.bert.get_workload()
    assert _out_type(mod) == TensorType((1, 128, 768), "float32")
    assert params["layer0_ffn1_weight"].shape == (3072, 768)
    out = _run(mod, params)
    assert out.shape == (1, 128, 768) and np.isfinite(out).all()
    # layer_norm with gamma=1, beta=0 normalizes each token.
    np.testing.assert_allclose(out.mean(axis=-1), 0.0, atol=1e-4)
    np.testing.assert_allclose(out.std(axis=-1), 1.0, rtol=1e-3)


def test_bert_matches_numpy_on_a_tiny_layer():
    mod, params = testing.bert.get_workload(seq_len=4, hidden=8, num_heads=2, ffn=16)
    p = {k: v.numpy().astype("float64") for k, v in params.items()}
    x = np.random.RandomState(0).standard_normal((1, 4, 8))
    out = relay.create_executor(mod=mod, params=params).evaluate()(x.astype("float32")).numpy()

    def dense(t, name):
        return t @ p[f"layer0_{name}_weight"].T + p[f"layer0_{name}_bias"]

    def ln(t, name):
        m, v = t.mean(-1, keepdims=True), t.var(-1, keepdims=True)
        return (t - m) / np.sqrt(v + 1e-12) * p[f"layer0_{name}_gamma"] + p[f"layer0_{name}_beta"]

    from math import erf

    h = x.reshape(4, 8)
    heads = [dense(h, n).reshape(4, 2, 4).transpose(1, 0, 2) for n in ("query", "key", "value")]
    q, k, v = heads
    s = q @ k.transpose(0, 2, 1) / 2.0
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    ctx = (s @ v).transpose(1, 0, 2).reshape(4, 8)
    a = ln(dense(ctx, "attn_output") + h, "attn_ln")
    f = dense(a, "ffn1")
    f = f * 0.5 * (1 + np.vectorize(erf)(f / np.sqrt(2)))
    ref = ln(dense(f, "ffn2") + a, "ffn_ln").reshape(1, 4, 8)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_bert_num_layers():
    mod, params = testing.bert.get_workload(num_layers=12, seq_len=8)
    assert "layer11_ffn_ln_gamma" in params
    assert _out_type(mod) == TensorType((1, 8, 768), "float32")


def test_run_opt_pass_and_infer_type():
    x = relay.var("x", shape=(2, 3))
    e = relay.add(x, relay.const(1.0))
    typed = testing.run_infer_type(e)
    assert typed.checked_type == TensorType((2, 3), "float32")
    f = testing.run_infer_type(relay.Function([x], e))
    assert isinstance(f, relay.Function)
    assert f.checked_type.ret_type == TensorType((2, 3), "float32")
    folded = testing.run_opt_pass(relay.add(relay.const(1.0), relay.const(2.0)),
                                  relay.transform.FoldConstant())
    assert isinstance(folded, relay.Constant) and float(folded.data.numpy()) == 3.0


def test_create_workload_from_function():
    x = relay.var("data", shape=(1, 4))
    w = relay.var("w_weight", shape=(3, 4))
    mod, params = testing.create_workload(relay.Function([x, w], relay.nn.dense(x, w)), seed=5)
    assert list(params) == ["w_weight"] and params["w_weight"].shape == (3, 4)
    assert testing.rand("float32", 2, 3).shape == (2, 3)
