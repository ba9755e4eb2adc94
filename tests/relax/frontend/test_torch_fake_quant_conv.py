"""Relax's torch.export import of a QAT conv (``relax/frontend/torch/aten_fake_quant_conv``): a
conv of an 8-bit fake-quantized input and a constant fake-quantized weight (scales and zero
points as buffers, as ``torch.ao`` FakeQuantize keeps them) becomes the int32 conv of the 8-bit
values scaled after (on a VNNI host), equal to eager up to float rounding; a range wider than
8 bits, or a weight from an input, keeps the float conv."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="building the QAT model needs `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402
from minitvm.schedule.conv_vnni import available as vnni_available  # noqa: E402

F = torch.nn.functional
SHAPE = (1, 16, 8, 8)


class QatConv(torch.nn.Module):
    """A 16 -> 16 3x3 conv with per-channel int8 weights (zero points ``weight_zp``) of a
    per-tensor fake-quantized input (``act``: qmin, qmax, zero point)."""

    def __init__(self, act=(0, 255, 128), weight_zp=0):
        super().__init__()
        self.conv, self.act = torch.nn.Conv2d(16, 16, 3, 1, 1), act
        self.register_buffer("w_scale", self.conv.weight.detach().abs().amax((1, 2, 3)) / 100)
        self.register_buffer("w_zp", torch.full((16,), weight_zp, dtype=torch.int32))

    def forward(self, x):
        lo, hi, zp = self.act
        x = torch.fake_quantize_per_tensor_affine(x, 0.03, zp, lo, hi)
        w = torch.fake_quantize_per_channel_affine(self.conv.weight, self.w_scale, self.w_zp, 0,
                                                   -128, 127)
        return F.conv2d(x, w, self.conv.bias, 1, 1)


def _conv_dtypes(mod) -> list[str]:
    """The out_dtype of each relax conv2d in the printed module ("void": the input's)."""
    text = str(mod)
    return [part.split('out_dtype="')[1].split('"')[0]
            for part in text.split("nn.conv2d(")[1:]]


def _run(mod, *inputs):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(v) for v in inputs])
    return (out[0] if not hasattr(out, "numpy") else out).numpy()


@pytest.mark.parametrize("act, weight_zp, integer",
                         [((0, 255, 128), 0, True), ((-128, 127, 5), 3, True),
                          ((0, 1023, 0), 0, False)], ids=["uint8", "int8-zero-points", "10-bit"])
def test_qat_conv_runs_the_integer_conv(act, weight_zp, integer):
    torch.manual_seed(0)
    model = QatConv(act, weight_zp).eval()
    x = torch.randn(*SHAPE) * (8 if act[1] > 255 else 1)
    with torch.no_grad():
        ref = model(x).numpy()
    mod = from_exported_program(torch.export.export(model, (x,)))
    assert _conv_dtypes(mod) == ["int32" if integer and vnni_available() else "void"]
    out = _run(mod, x.numpy())
    np.testing.assert_allclose(out, ref, rtol=0, atol=2e-6 * np.abs(ref).max())


def test_weight_from_an_input_keeps_the_float_conv():
    class FromInput(torch.nn.Module):
        def forward(self, x, w, scale):
            x = torch.fake_quantize_per_tensor_affine(x, 0.03, 128, 0, 255)
            w = torch.fake_quantize_per_channel_affine(
                w, scale, torch.zeros(16, dtype=torch.int32), 0, -128, 127)
            return F.conv2d(x, w, None, 1, 1)

    torch.manual_seed(2)
    x, w = torch.randn(*SHAPE), torch.randn(16, 16, 3, 3) * 0.1
    scale = w.abs().amax((1, 2, 3)) / 127
    mod = from_exported_program(torch.export.export(FromInput(), (x, w, scale)))
    assert _conv_dtypes(mod) == ["void"]
    out = _run(mod, x.numpy(), w.numpy(), scale.numpy())
    ref = FromInput()(x, w, scale).numpy()
    np.testing.assert_allclose(out, ref, rtol=0, atol=2e-6 * np.abs(ref).max())
