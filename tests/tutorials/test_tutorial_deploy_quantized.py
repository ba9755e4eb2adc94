"""TVM's "Deploy a Quantized Model" tutorial with ``import minitvm as tvm``: automatic
quantization with ``relay.quantize.qconfig`` / ``relay.quantize.quantize`` — data-aware
(``calibrate_mode="kl_divergence"``, ``weight_scale="max"``, a generator of calibration
batches) and with a predefined ``global_scale`` — then inference through
``relay.create_executor("vm", mod, dev, target).evaluate()``. The Gluon model zoo and the
ImageNet record file are replaced by a small CNN from ``relay.testing.create_workload`` and
random images; the reference is the float model."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import testing

batch_size = 1
target = "llvm"
dev = tvm.device(target)
data_shape = (batch_size, 3, 16, 16)
calibration_samples = 4


def get_model():
    """A small classifier standing in for the zoo's resnet18_v1 (two conv-bn-relu blocks,
    global pooling, a dense layer)."""
    data = relay.var("data", shape=data_shape)
    x = data
    for i, channels in enumerate((8, 16)):
        x = relay.nn.conv2d(x, relay.var(f"conv{i}_weight"), kernel_size=(3, 3), padding=(1, 1),
                            channels=channels)
        x = relay.nn.batch_norm(x, relay.var(f"bn{i}_gamma"), relay.var(f"bn{i}_beta"),
                                relay.var(f"bn{i}_moving_mean"),
                                relay.var(f"bn{i}_moving_var"))[0]
        x = relay.nn.relu(x)
    x = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(x))
    x = relay.nn.dense(x, relay.var("fc_weight"), units=10)
    net = relay.Function(relay.analysis.free_vars(x), x)
    return testing.create_workload(net)


def get_val_data(n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield rng.uniform(-1, 1, size=data_shape).astype("float32")


def calibrate_dataset():
    for i, data in enumerate(get_val_data(2 * calibration_samples, seed=0)):
        if i * batch_size >= calibration_samples:
            break
        yield {"data": data}


def quantize(mod, params, data_aware):
    if data_aware:
        with relay.quantize.qconfig(calibrate_mode="kl_divergence", weight_scale="max"):
            mod = relay.quantize.quantize(mod, params, dataset=calibrate_dataset())
    else:
        with relay.quantize.qconfig(calibrate_mode="global_scale", global_scale=8.0):
            mod = relay.quantize.quantize(mod, params)
    return mod


def run_inference(mod, params=None):
    model = relay.create_executor("vm", mod, dev, target).evaluate()
    return np.concatenate([model(data, **(params or {})).numpy()
                           for data in get_val_data(3, seed=1)])


@pytest.mark.parametrize("data_aware", [True, False])
def test_quantize_and_run(data_aware):
    mod, params = get_model()
    qmod = quantize(mod, params, data_aware=data_aware)
    text = qmod.astext(show_meta_data=False)
    # the quantized program: the second convolution reads int8 and accumulates in int32;
    # the first convolution (skip_conv_layers=[0]) and the dense (skip_dense_layer) stay float
    assert 'dtype="int8"' in text and text.count('out_dtype="int32"') == 1
    assert "Tensor[(16, 8, 3, 3), int8]" in text and "Tensor[(8, 3, 3, 3), float32]" in text
    assert "Tensor[(10, 16), float32]" in text
    assert "simulated_quantize" not in text and "nn.batch_norm" not in text
    if not data_aware:  # power-of-two scales requantize with shifts
        assert "right_shift(" in text
    expected = run_inference(mod, params)
    got = run_inference(qmod)
    assert got.shape == expected.shape == (3, 10)
    err = np.abs(got - expected).max() / np.abs(expected).max()
    assert err < 0.15, err


def test_qconfig_scope_and_errors():
    with relay.quantize.qconfig(calibrate_mode="kl_divergence", weight_scale="max") as cfg:
        assert relay.quantize.current_qconfig() is cfg
        assert cfg.calibrate_mode == "kl_divergence" and cfg.weight_scale == "max"
    assert relay.quantize.current_qconfig().calibrate_mode == "global_scale"
    mod, params = get_model()
    with pytest.raises(ValueError, match="data"):
        with relay.quantize.qconfig(calibrate_mode="kl_divergence"):
            relay.quantize.quantize(mod, params, dataset=[{"image": np.zeros(data_shape)}])
