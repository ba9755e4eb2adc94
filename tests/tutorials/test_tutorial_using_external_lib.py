"""TVM's "Using External Libraries in Relay" how-to with ``import minitvm as tvm``: the
conv2d + batch_norm + ReLU network from ``relay.testing.create_workload``, built with
``relay.build_module.build`` and run through ``graph_executor.GraphModule`` (``get_output``
into a ``tvm.nd.empty`` buffer). Its CUDA targets (``"cuda"``, ``"cuda -libs=cudnn"``) are a
deliberate difference: they raise ``TVMDifferenceError`` naming the CPU targets, and the same
steps run with ``"llvm"``, ``"llvm -libs=cblas"`` and oneDNN through BYOC
(``partition_for_dnnl``), each checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.autotvm import TVMDifferenceError
from minitvm.backend.contrib import dnnl as dnnl_rt
from minitvm.contrib import graph_executor as runtime
from minitvm.relay import testing
from minitvm.relay.op.contrib.dnnl import partition_for_dnnl

OUT_CHANNELS, BATCH_SIZE = 16, 1
DATA_SHAPE = (BATCH_SIZE, 3, 224, 224)


def simple_network():
    """The tutorial's network, its parameters from ``create_workload``."""
    data = relay.var("data", relay.TensorType(DATA_SHAPE, "float32"))
    weight = relay.var("weight")
    bn_gamma = relay.var("bn_gamma")
    bn_beta = relay.var("bn_beta")
    bn_mmean = relay.var("bn_mean")
    bn_mvar = relay.var("bn_var")
    simple_net = relay.nn.conv2d(data=data, weight=weight, kernel_size=(3, 3),
                                 channels=OUT_CHANNELS, padding=(1, 1))
    simple_net = relay.nn.batch_norm(simple_net, bn_gamma, bn_beta, bn_mmean, bn_mvar)[0]
    simple_net = relay.nn.relu(simple_net)
    simple_net = relay.Function(relay.analysis.free_vars(simple_net), simple_net)
    return testing.create_workload(simple_net)


def numpy_reference(data, params):
    p = {k: v.numpy() for k, v in params.items()}
    padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)))
    h, w = data.shape[2:]
    conv = np.zeros((data.shape[0], OUT_CHANNELS, h, w), "float64")
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", padded[:, :, i:i + h, j:j + w],
                              p["weight"][:, :, i, j])
    scale = p["bn_gamma"] / np.sqrt(p["bn_var"] + 1e-5)
    out = (conv - p["bn_mean"][:, None, None]) * scale[:, None, None] \
        + p["bn_beta"][:, None, None]
    return np.maximum(out, 0)


def build_and_run(net, target, params, data):
    lib = relay.build_module.build(net, target, params=params)
    dev = tvm.device(target, 0)
    module = runtime.GraphModule(lib["default"](dev))
    module.set_input("data", data)
    module.run()
    out_shape = (BATCH_SIZE, OUT_CHANNELS, 224, 224)
    out = module.get_output(0, tvm.nd.empty(out_shape))
    return out.numpy()


def test_network_and_workload():
    net, params = simple_network()
    assert sorted(params) == ["bn_beta", "bn_gamma", "bn_mean", "bn_var", "weight"]
    assert params["weight"].shape == (16, 3, 3, 3) and params["bn_var"].shape == (16,)
    text = net.astext(show_meta_data=False)
    assert ("%0 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=16, "
            "kernel_size=[3, 3]) /* ty=Tensor[(1, 16, 224, 224), float32] */;") in text
    assert "%2 = %1.0;" in text


@pytest.mark.parametrize("target", ["cuda", "cuda -libs=cudnn", "cuda -libs=cublas"])
def test_cuda_targets_name_the_cpu_alternative(target):
    net, params = simple_network()
    with pytest.raises(TVMDifferenceError, match="only the 'llvm' \\(host CPU\\) target") as e:
        relay.build_module.build(net, target, params=params)
    assert "-libs=cblas" in str(e.value) and "no cuda code generator" in str(e.value)
    assert isinstance(e.value, ValueError)  # what minitvm raised before, still caught alike
    assert not tvm.device(target.split()[0], 0).exist


def test_build_and_run_on_cpu_with_and_without_blas():
    net, params = simple_network()
    data = np.random.default_rng(0).uniform(-1, 1, size=DATA_SHAPE).astype("float32")
    expected = numpy_reference(data, params)
    out_llvm = build_and_run(net, "llvm", params, data)
    out_cblas = build_and_run(net, "llvm -libs=cblas", params, data)
    tvm.testing.assert_allclose(out_llvm, expected, rtol=1e-4, atol=1e-4)
    tvm.testing.assert_allclose(out_llvm, out_cblas, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not dnnl_rt.available(),
                    reason="oneDNN is not installed: pip install 'minitvm[dnnl]'")
def test_offload_to_dnnl_with_byoc():
    net, params = simple_network()
    mod = partition_for_dnnl(net, params)
    text = mod.astext(show_meta_data=False)
    assert 'Compiler="dnnl"' in text and 'Composite="dnnl.conv2d_bias_relu"' in text
    data = np.random.default_rng(1).uniform(-1, 1, size=DATA_SHAPE).astype("float32")
    out = build_and_run(mod, "llvm", params, data)
    tvm.testing.assert_allclose(out, numpy_reference(data, params), rtol=1e-4, atol=1e-4)
