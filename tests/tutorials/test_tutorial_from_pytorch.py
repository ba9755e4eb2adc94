"""TVM's "Compile PyTorch Models" tutorial with ``import minitvm as tvm``: trace a model with
``torch.jit.trace``, import it with ``relay.frontend.from_pytorch(scripted, shape_list)``, build
at opt_level 3 for ``Target("llvm", host="llvm")``, run it on the graph executor and compare
with PyTorch. A small conv net with random weights stands in for the downloaded ResNet-18."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch tutorial needs torch")

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402


class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(torch.flatten(self.pool(y), 1))


def test_compile_pytorch_model():
    torch.manual_seed(0)
    model = SmallNet().eval()
    input_shape = [1, 3, 16, 16]
    input_data = torch.randn(input_shape)
    scripted_model = torch.jit.trace(model, input_data).eval()

    input_name = "input0"
    shape_list = [(input_name, input_shape)]
    mod, params = relay.frontend.from_pytorch(scripted_model, shape_list)
    assert "nn.conv2d" in mod.astext(show_meta_data=False)

    target = tvm.target.Target("llvm", host="llvm")
    dev = tvm.cpu(0)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=target, params=params)

    m = graph_executor.GraphModule(lib["default"](dev))
    m.set_input(input_name, tvm.nd.array(input_data.numpy().astype("float32")))
    m.run()
    tvm_output = m.get_output(0)
    with torch.no_grad():
        torch_output = model(input_data).numpy()
    np.testing.assert_allclose(tvm_output.numpy(), torch_output, rtol=1e-5, atol=1e-5)
    assert np.argmax(tvm_output.numpy()[0]) == np.argmax(torch_output[0])


def test_from_pytorch_keywords():
    """The keyword arguments of TVM's from_pytorch are accepted (input given as (shape, dtype))."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    x = torch.randn(1, 3, 8, 8)
    scripted = torch.jit.trace(model, x)
    mod, params = relay.frontend.from_pytorch(
        scripted, [("input0", ((1, 3, 8, 8), "float32"))], default_dtype="float32",
        use_parser_friendly_name=True, keep_quantized_weight=False)
    out = relay.create_executor("graph", mod=mod, device=tvm.cpu(0), target="llvm") \
        .evaluate()(x.numpy(), **params).numpy()
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
