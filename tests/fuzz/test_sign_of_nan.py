"""``sign`` at NaN, each importer as its framework (stop 66): eager PyTorch and TFLite's kernel
give 0 (``x > 0 ? 1 : x < 0 ? -1 : 0``); ONNX Runtime keeps NaN in float32 / float64 and gives
0 in float16. Relay's and Relax's own ``sign`` keep NaN, numpy's rule."""

import numpy as np
import pytest

from minitvm.relay.frontend.tflite.builder import ModelBuilder

_X = [np.nan, -0.5, 0.0, 2.0, -np.inf]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_onnx_sign_keeps_nan_as_onnx_runtime(dtype):
    """Both ONNX importers made Sign 0 at NaN (eager's answer for ``torch.sign``); ORT, the
    reference for an ONNX file, keeps NaN in float32 and float64."""
    pytest.importorskip("onnxruntime", reason="ONNX Runtime gives the expected outputs")
    from onnx import helper

    from minitvm.testing import onnx_graphs as og
    from minitvm.testing.fuzz.onnx_differential import check_onnx_program
    from minitvm.testing.fuzz.onnx_generator import OnnxProgram

    et = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    m = og.model([helper.make_node("Sign", ["x"], ["y"])], [og.vi("x", et, [5])],
                 [og.vi("y", et, [5])], opset=17)
    m.ir_version = 8
    feeds = {"x": np.array(_X, dtype)}
    ref = [np.asarray(r) for r in og.ort_run(m, feeds)]
    np.testing.assert_array_equal(ref[0], np.array([np.nan, -1, 0, 1, -1], dtype))
    found = check_onnx_program(OnnxProgram(0, m, feeds, ref, 17))
    assert not found, "\n".join(str(f) for f in found)


def test_tflite_sign_is_zero_at_nan():
    """TFLite's SIGN was Relay's ``sign`` (NaN at NaN); TFLite's kernel compares: 0."""
    pytest.importorskip("tflite", reason="the model is a TFLite flatbuffer")
    from minitvm import relay
    from minitvm.relay.build_module import create_executor

    b = ModelBuilder()
    x = b.input("x", (5,))
    y = b.tensor("y", (5,))
    b.operator("SIGN", [x], [y])
    b.output(y)
    mod, params = relay.frontend.from_tflite(b.finish())
    got = create_executor("graph", mod=mod, target="llvm").evaluate()(np.array(_X, "float32"))
    np.testing.assert_array_equal(got.numpy(), np.array([0, -1, 0, 1, -1], "float32"))


def test_relax_torch_export_sign_of_float64():
    """Relax's torch.export importer refused ``torch.sign`` of a float64 tensor: its scalar 0
    (``AtenContext.tensor(0.0, like=x)``) was narrowed to float32, and ``where`` refused the
    mix. Eager gives 0 at NaN."""
    torch = pytest.importorskip("torch", reason="the program is a PyTorch module")
    from minitvm.relax import VirtualMachine
    from minitvm.relax import build as relax_build
    from minitvm.relax.frontend.torch import from_exported_program
    from minitvm.runtime import cpu

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.sign(x)

    x = torch.tensor(_X, dtype=torch.float64)
    mod = from_exported_program(torch.export.export(M(), (x,)))
    vm = VirtualMachine(relax_build(mod, target="llvm"), cpu())
    got = vm["main"](x.numpy().copy())
    got = got[0] if isinstance(got, list | tuple) else got
    np.testing.assert_array_equal(np.asarray(got.numpy()), torch.sign(x).numpy())
