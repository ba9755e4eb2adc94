"""TVM's Relax "Importing Models from ML Frameworks" tutorial with ``import minitvm as tvm``:
``from_exported_program(keep_params_as_input=True, unwrap_unit_return_tuple=True)`` +
``detach_params``, a ``custom_convert_map`` converter written against
``exported_program_translator.ExportedProgramImporter`` (``retrieve_args``,
``block_builder``), the "zero" pipeline + ``tvm.compile`` checked against PyTorch, and the
ONNX path (``torch.onnx.export``, ``from_onnx(keep_params_in_input=True)``) checked against
ONNX Runtime. (Its TFLite section needs TensorFlow, absent here, as the tutorial allows.)"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the tutorial starts from PyTorch")

from minitvm.relax.frontend.torch.exported_program_translator import (  # noqa: E402
    ExportedProgramImporter,
)
from torch import nn  # noqa: E402
from torch.export import export  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = self.pool(x).flatten(1)
        x = self.fc(x)
        return x


def model_and_program():
    torch.manual_seed(0)
    torch_model = SimpleCNN().eval()
    example_args = (torch.randn(1, 3, 32, 32),)
    with torch.no_grad():
        exported_program = export(torch_model, example_args)
    return torch_model, example_args, exported_program


def test_import_from_pytorch_and_verify(capsys):
    torch_model, _, exported_program = model_and_program()
    with torch.no_grad():
        mod = from_exported_program(exported_program, keep_params_as_input=True,
                                    unwrap_unit_return_tuple=True)
    mod, params = relax.frontend.detach_params(mod)
    mod.show()
    shown = capsys.readouterr().out
    assert "def main(x: R.Tensor((1, 3, 32, 32), dtype=\"float32\")" in shown
    assert "-> R.Tensor((1, 10), dtype=\"float32\")" in shown  # unwrapped: no 1-tuple
    # the parameters (batch norm's running statistics are buffers: constants)
    assert [tuple(p.shape) for p in params["main"]] == [(16, 3, 3, 3), (16,), (16,), (16,),
                                                        (10, 16), (10,)]

    mod_compiled = relax.get_pipeline("zero")(mod)
    exec_module = tvm.compile(mod_compiled, target="llvm")
    dev = tvm.cpu()
    vm = relax.VirtualMachine(exec_module, dev)
    input_data = np.random.rand(1, 3, 32, 32).astype("float32")
    tvm_input = tvm.runtime.tensor(input_data, dev)
    tvm_params = [tvm.runtime.tensor(p, dev) for p in params["main"]]
    tvm_out = vm["main"](tvm_input, *tvm_params).numpy()
    with torch.no_grad():
        pt_out = torch_model(torch.from_numpy(input_data)).numpy()
    np.testing.assert_allclose(tvm_out, pt_out, rtol=1e-5, atol=1e-5)


def test_custom_convert_map():
    calls = []

    def convert_sigmoid(node: torch.fx.Node, importer: ExportedProgramImporter) -> relax.Var:
        """Custom converter: map an op to relax.op.sigmoid."""
        calls.append(node.name)
        args = importer.retrieve_args(node)
        return importer.block_builder.emit(relax.op.sigmoid(args[0]))

    class Gate(nn.Module):
        def forward(self, x):
            return x * torch.sigmoid(x)

    x = torch.randn(2, 5)
    exported_program = export(Gate(), (x,))
    mod = from_exported_program(exported_program,
                                custom_convert_map={"sigmoid.default": convert_sigmoid})
    assert calls and "R.sigmoid(" in mod.script()
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    out = vm["main"](tvm.runtime.tensor(x.numpy()))[0].numpy()
    np.testing.assert_allclose(out, (x * torch.sigmoid(x)).numpy(), rtol=1e-6, atol=1e-6)

    def not_an_expr(node, importer):
        return 1.0

    with pytest.raises(Exception, match="custom converter of sigmoid.default"):
        from_exported_program(exported_program,
                              custom_convert_map={"sigmoid.default": not_an_expr})


def test_import_from_onnx(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from minitvm.relax.frontend.onnx import from_onnx

    torch_model, _, _ = model_and_program()
    dummy_input = torch.randn(1, 3, 32, 32)
    onnx_path = str(tmp_path / "simple_cnn.onnx")
    # (dynamo=False: the TorchScript exporter, seconds faster than the default for this test)
    torch.onnx.export(torch_model, dummy_input, onnx_path, input_names=["input"],
                      dynamo=False)
    onnx_model = onnx.load(onnx_path)
    mod_onnx = from_onnx(onnx_model, keep_params_in_input=True)
    mod_onnx, params_onnx = relax.frontend.detach_params(mod_onnx)
    assert "R.nn.conv2d(input, " in mod_onnx.script()
    vm = relax.VirtualMachine(tvm.compile(mod_onnx, target="llvm"), tvm.cpu())
    data = np.random.default_rng(0).random((1, 3, 32, 32)).astype("float32")
    out = vm["main"](tvm.runtime.tensor(data),
                     *[tvm.runtime.tensor(p) for p in params_onnx["main"]]).numpy()
    ref = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(
        None, {"input": data})[0]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
