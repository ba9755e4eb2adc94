"""The default ``from_pytorch`` import of a QAT conv or linear (``aten_fake_quant_conv``): a
conv2d (linear) of an 8-bit fake-quantized input and a constant fake-quantized weight becomes
the int32 conv (dense) of the 8-bit values scaled after (on a VNNI host), equal to eager up to
float rounding; a range wider than 8 bits, or a weight that is not a constant, keeps the float
op."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="building the QAT model needs `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.analysis import post_order_visit  # noqa: E402
from minitvm.schedule.conv_vnni import available as vnni_available  # noqa: E402

F = torch.nn.functional
SHAPE = (1, 16, 8, 8)


class QatConvBlock(torch.nn.Module):
    """Two 16 -> 16 3x3 convs with per-channel int8 weights, between per-tensor fake
    quantizations of the activations (``act``: (qmin, qmax, zero point) of the input's)."""

    def __init__(self, act=(0, 255, 128), weight_zp=0):
        super().__init__()
        self.a, self.b = torch.nn.Conv2d(16, 16, 3, 1, 1), torch.nn.Conv2d(16, 16, 3, 2, 1)
        self.act, self.weight_zp = act, weight_zp

    def _w(self, w):
        scale = w.detach().abs().amax((1, 2, 3)) / 100
        zp = torch.full((w.shape[0],), self.weight_zp, dtype=torch.int32)
        return torch.fake_quantize_per_channel_affine(w, scale, zp, 0, -128, 127)

    def forward(self, x):
        lo, hi, zp = self.act
        x = torch.fake_quantize_per_tensor_affine(x, 0.03, zp, lo, hi)
        y = F.relu(F.conv2d(x, self._w(self.a.weight), self.a.bias, 1, 1))
        y = torch.fake_quantize_per_tensor_affine(y, 0.02, 0, 0, 255)
        return F.conv2d(y, self._w(self.b.weight), self.b.bias, 2, 1)


def _convs(mod) -> list:
    """(input dtype, output dtype) of each nn.conv2d."""
    found = []
    post_order_visit(mod["main"], lambda e: found.append(
        (e.args[0].checked_type.dtype, e.checked_type.dtype))
        if isinstance(e, relay.Call) and getattr(e.op, "name", "") == "nn.conv2d" else None)
    return found


def _run(mod, *inputs):
    with tvm.transform.PassContext(opt_level=3):
        return relay.create_executor("graph", mod=mod, target="llvm").evaluate()(
            *inputs).numpy()


def _check_close(out, ref):
    """Within float rounding of eager (the ONNX default import's agreement)."""
    np.testing.assert_allclose(out, ref, rtol=0, atol=2e-6 * np.abs(ref).max())


@pytest.mark.parametrize("act, weight_zp", [((0, 255, 128), 0), ((-128, 127, 5), 3)],
                         ids=["uint8", "int8-zero-points"])
def test_qat_conv_block_runs_integer_convs(act, weight_zp):
    torch.manual_seed(0)
    model = QatConvBlock(act, weight_zp).eval()
    x = torch.randn(*SHAPE)
    with torch.no_grad():
        ref = model(x).numpy()
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(model, (x,)),
                                         [("x", (SHAPE, "float32"))])
    convs = _convs(mod)
    if vnni_available():  # the int32 conv of 8-bit values (one more int32 conv: window sums)
        assert all(dt == "int32" for _, dt in convs) and ("float32", "float32") not in convs
        assert {src for src, _ in convs} >= {"uint8"}
    else:
        assert convs == [("float32", "float32")] * 2
    _check_close(_run(mod, x.numpy()), ref)


class WideRange(QatConvBlock):
    """The input fake-quantized over 0..1023 (10 bits)."""

    def __init__(self):
        super().__init__((0, 1023, 0))


def test_wider_than_8_bits_keeps_the_float_conv():
    torch.manual_seed(1)
    model = WideRange().eval()
    x = torch.rand(*SHAPE) * 20
    with torch.no_grad():
        ref = model(x).numpy()
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(model, (x,)),
                                         [("x", (SHAPE, "float32"))])
    convs = _convs(mod)
    assert convs[0] == ("float32", "float32")  # (the second conv reads an 8-bit range)
    assert len(convs) == 2 and (convs[1][1] == "int32") == vnni_available()
    _check_close(_run(mod, x.numpy()), ref)


def test_weight_from_an_input_keeps_the_float_conv():
    def qat_conv(x, w, scale):
        x = torch.fake_quantize_per_tensor_affine(x, 0.03, 128, 0, 255)
        w = torch.fake_quantize_per_channel_affine(w, scale, torch.zeros(16, dtype=torch.int32),
                                                   0, -128, 127)
        return F.conv2d(x, w, None, 1, 1)

    torch.manual_seed(2)
    x, w = torch.randn(*SHAPE), torch.randn(16, 16, 3, 3) * 0.1
    scale = w.abs().amax((1, 2, 3)) / 127
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(qat_conv, (x, w, scale)),
                                         [("x", (SHAPE, "float32")),
                                          ("w", ((16, 16, 3, 3), "float32")),
                                          ("scale", ((16,), "float32"))])
    assert _convs(mod) == [("float32", "float32")]
    _check_close(_run(mod, x.numpy(), w.numpy(), scale.numpy()), qat_conv(x, w, scale).numpy())


class QatLinear(torch.nn.Module):
    """A linear of an 8-bit fake-quantized input (``bits``: its range) and per-channel int8
    weights (with zero points)."""

    def __init__(self, bits=(0, 255, 128)):
        super().__init__()
        self.fc, self.bits = torch.nn.Linear(32, 16), bits

    def forward(self, x):
        lo, hi, zp = self.bits
        x = torch.fake_quantize_per_tensor_affine(x, 0.03, zp, lo, hi)
        scale = self.fc.weight.detach().abs().amax(1) / 100
        w = torch.fake_quantize_per_channel_affine(
            self.fc.weight, scale, torch.arange(16, dtype=torch.int32) % 5 - 2, 0, -128, 127)
        return F.linear(x, w, self.fc.bias)


@pytest.mark.parametrize("bits", [(0, 255, 128), (-128, 127, -3), (0, 511, 0)],
                         ids=["uint8", "int8", "9-bit"])
def test_qat_linear_runs_the_integer_dense(bits):
    torch.manual_seed(3)
    model = QatLinear(bits).eval()
    x = torch.randn(2, 3, 32) * (4 if bits[1] > 255 else 1)
    with torch.no_grad():
        ref = model(x).numpy()
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(model, (x,)),
                                         [("x", ((2, 3, 32), "float32"))])
    dense = []
    post_order_visit(mod["main"], lambda e: dense.append(
        (e.args[0].checked_type.dtype, e.checked_type.dtype))
        if isinstance(e, relay.Call) and getattr(e.op, "name", "") == "nn.dense" else None)
    integer = vnni_available() and bits[1] <= 255
    assert dense == [("uint8", "int32") if integer else ("float32", "float32")]
    _check_close(_run(mod, x.numpy()), ref)
