"""TVM's "Compile ONNX Models" tutorial with ``import minitvm as tvm``: ``onnx.load``, then
``relay.frontend.from_onnx(onnx_model, shape_dict)`` and the tutorial's
``relay.build_module.create_executor("graph", mod, tvm.cpu(0), target, params).evaluate()``;
also the graph executor path and Relax's ONNX importer (``from_onnx`` + ``detach_params`` +
``tvm.compile`` + ``relax.VirtualMachine``). The model is a small conv net exported from PyTorch
here (no download); the reference output is ONNX Runtime's when present, else PyTorch's."""

from __future__ import annotations

import io

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX tutorial needs the onnx package")
torch = pytest.importorskip("torch", reason="the test model is exported from PyTorch")

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402


class SuperResolutionLike(torch.nn.Module):
    """The tutorial's super-resolution net in small: convs, relu, then a pixel shuffle."""

    def __init__(self, upscale: int = 2):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(8, upscale ** 2, 3, padding=1)
        self.shuffle = torch.nn.PixelShuffle(upscale)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.shuffle(self.conv3(x))


@pytest.fixture(scope="module")
def model_and_data():
    torch.manual_seed(0)
    net = SuperResolutionLike().eval()
    x = torch.randn(1, 1, 16, 16)
    f = io.BytesIO()
    torch.onnx.export(net, x, f, input_names=["input.1"], output_names=["out"], dynamo=False)
    onnx_model = onnx.load_from_string(f.getvalue())
    with torch.no_grad():
        ref = net(x).numpy()
    return onnx_model, x.numpy(), ref


def test_relay_create_executor(model_and_data):
    onnx_model, x, ref = model_and_data
    input_name = "input.1"
    shape_dict = {input_name: x.shape}
    mod, params = relay.frontend.from_onnx(onnx_model, shape_dict)
    text = mod.astext(show_meta_data=False)
    assert text.count("nn.conv2d(") == 3
    assert 'nn.depth_to_space(%7, block_size=2, mode="CRD")' in text
    with tvm.transform.PassContext(opt_level=1):
        executor = relay.build_module.create_executor(
            "graph", mod, tvm.cpu(0), "llvm", params).evaluate()
    tvm_output = executor(tvm.nd.array(x.astype("float32"))).numpy()
    assert tvm_output.shape == (1, 1, 32, 32)
    np.testing.assert_allclose(tvm_output, ref, rtol=1e-5, atol=1e-5)


def test_relay_build_graph_executor(model_and_data):
    onnx_model, x, ref = model_and_data
    mod, params = relay.frontend.from_onnx(onnx_model, {"input.1": x.shape}, freeze_params=True,
                                           dtype="float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("input.1", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-5, atol=1e-5)
    ort = pytest.importorskip("onnxruntime", reason="side-by-side check with ONNX Runtime")
    sess = ort.InferenceSession(onnx_model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(m.get_output(0).numpy(), sess.run(None, {"input.1": x})[0],
                               rtol=1e-5, atol=1e-5)


def test_relax_from_onnx(model_and_data):
    from minitvm.relax.frontend.onnx import from_onnx

    onnx_model, x, ref = model_and_data
    mod = from_onnx(onnx_model, shape_dict={"input.1": list(x.shape)}, keep_params_in_input=True)
    mod, params = relax.frontend.detach_params(mod)
    assert "R.nn.conv2d" in mod.script()
    mod = relax.transform.DecomposeOpsForInference()(mod)
    mod = relax.transform.LegalizeOps()(mod)
    ex = tvm.compile(mod, target="llvm")
    dev = tvm.cpu()
    vm = relax.VirtualMachine(ex, dev)
    out = vm["main"](tvm.nd.array(x, dev), *params["main"])
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
