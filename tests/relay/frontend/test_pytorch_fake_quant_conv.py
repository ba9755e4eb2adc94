"""The default ``from_pytorch`` import of a QAT conv or linear (``aten_fake_quant_conv``): a
conv2d (linear) of an 8-bit fake-quantized input and a constant fake-quantized weight becomes
the int32 conv (dense) of the 8-bit values scaled after (on a VNNI host), equal to eager up to
float rounding; a range wider than 8 bits, or a weight that is not a constant, keeps the float
op."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="building the QAT model needs `torch`")

from torch_qat_nets import default_qconfig_qat_net, qat_mobile_net  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.analysis import post_order_visit  # noqa: E402
from minitvm.schedule.conv_vnni import products_available  # noqa: E402

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
    if products_available():  # the int32 conv of 8-bit values (one more int32 conv: window sums)
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
    assert len(convs) == 2 and (convs[1][1] == "int32") == products_available()
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
    integer = products_available() and bits[1] <= 255  # (VNNI, or AVX2's int16 pairs)
    assert dense == [("uint8", "int32") if integer else ("float32", "float32")]
    _check_close(_run(mod, x.numpy()), ref)


def _qw(w, zp=0, lo=-128, hi=127):
    """``w`` fake-quantized per output channel over ``[lo, hi]`` (zero points ``zp``)."""
    scale = w.detach().abs().amax(tuple(range(1, w.dim()))) / 100
    return torch.fake_quantize_per_channel_affine(
        w, scale, torch.full((w.shape[0],), zp, dtype=torch.int32), 0, lo, hi)


class QatMobileBlock(torch.nn.Module):
    """A depthwise 3x3 conv (its input's zero point ``zp``), a grouped 3x3 conv (4 groups, int8
    weight zero points) and a conv1d over the flattened pixels, each of 8-bit fake-quantized
    activations and weights."""

    def __init__(self, zp=0):
        super().__init__()
        self.dw = torch.nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.gc = torch.nn.Conv2d(16, 32, 3, 2, 1, groups=4)
        self.c1 = torch.nn.Conv1d(32, 16, 3, 1, 1)
        self.zp = zp

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 0.03, self.zp, 0, 255)
        y = F.relu(F.conv2d(x, _qw(self.dw.weight), self.dw.bias, 1, 1, 1, 16))
        y = torch.fake_quantize_per_tensor_affine(y, 0.02, 0, 0, 255)
        y = F.conv2d(y, _qw(self.gc.weight, 3), self.gc.bias, 2, 1, 1, 4)
        y = torch.fake_quantize_per_tensor_affine(y.flatten(2), 0.02, -3, -128, 127)
        return F.conv1d(y, _qw(self.c1.weight), self.c1.bias, 1, 1)


def _conv_calls(mod) -> list:
    """(input dtype, weight dtype, output dtype, groups) of each conv."""
    found = []
    post_order_visit(mod["main"], lambda e: found.append(
        (e.args[0].checked_type.dtype, e.args[1].checked_type.dtype, e.checked_type.dtype,
         int(e.attrs.groups)))
        if isinstance(e, relay.Call) and getattr(e.op, "name", "").startswith("nn.conv")
        else None)
    return found


def _integer_weights(mod) -> list[bool]:
    """For each conv whose weight is a constant: are its values integers?"""
    found = []
    post_order_visit(mod["main"], lambda e: found.append(
        bool(np.all(np.round(v := e.args[1].data.numpy()) == v)))
        if isinstance(e, relay.Call) and getattr(e.op, "name", "").startswith("nn.conv") and
        isinstance(e.args[1], relay.Constant) else None)
    return found


@pytest.mark.parametrize("zp", [0, 128], ids=["relu-input", "zero-point-128"])
def test_qat_depthwise_grouped_and_conv1d_sum_integers(zp):
    """The depthwise and grouped convs sum the integers in float32 (exactly: the weights are
    the integers less their zero points), the depthwise one reading its uint8 input as it is
    when its zero point is 0; the conv1d is the int32 conv over one row on VNNI."""
    torch.manual_seed(4)
    model = QatMobileBlock(zp).eval()
    x = torch.randn(*SHAPE)
    with torch.no_grad():
        ref = model(x).numpy()
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(model, (x,)),
                                         [("x", (SHAPE, "float32"))])
    convs = _conv_calls(mod)
    depthwise = ("uint8" if zp == 0 else "float32", "float32", "float32", 16)
    row = ("uint8", "int8", "int32", 1) if products_available() else None
    assert convs[:2] == [depthwise, ("float32", "float32", "float32", 4)]
    assert convs[2] == row or not products_available()
    assert all(_integer_weights(mod)[:2])
    _check_close(_run(mod, x.numpy()), ref)


class WideGroups(torch.nn.Module):
    """A 2-group 3x3 conv of 64 channels a group whose weights all quantize to 127 (sums of 576
    products of up to 255 x 127: past 2**24), and a depthwise conv of a 10-bit input."""

    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.full((128, 64, 3, 3), 0.3))
        self.register_buffer("dw", torch.randn(128, 1, 3, 3))

    def forward(self, x):
        q = torch.fake_quantize_per_tensor_affine(x, 0.03, 0, 0, 255)
        w = torch.fake_quantize_per_tensor_affine(self.w, 0.3 / 127, 0, -128, 127)
        y = F.conv2d(q, w, None, 1, 1, 1, 2)
        wide = torch.fake_quantize_per_tensor_affine(x, 0.03, 0, 0, 1023)
        return y + F.conv2d(wide, _qw(self.dw), None, 1, 1, 1, 128)


def test_grouped_conv_past_exact_float_sums_or_wider_range_stays_float():
    torch.manual_seed(5)
    model = WideGroups().eval()
    x = torch.rand(1, 128, 4, 4) * 8
    with torch.no_grad():
        ref = model(x).numpy()
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(model, (x,)),
                                         [("x", ((1, 128, 4, 4), "float32"))])
    assert _conv_calls(mod) == [("float32", "float32", "float32", 2),
                                ("float32", "float32", "float32", 128)]
    assert _integer_weights(mod) == [False, False]  # (the folded float weights)
    _check_close(_run(mod, x.numpy()), ref)


def test_torch_ao_qat_mobile_block_runs_integer_convs():
    torch.manual_seed(8)
    model = qat_mobile_net(SHAPE)
    x = torch.randn(*SHAPE)
    with torch.no_grad():
        ref = model(x).numpy()
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(model, (x,)),
                                         [("x", (SHAPE, "float32"))])
    convs = _conv_calls(mod)
    # the depthwise conv sums the float32 integers q - z (the stub's zero point is not 0)
    assert convs[0] == ("float32", "float32", "float32", 16) and _integer_weights(mod)[0]
    assert convs[1] == (("uint8", "int8", "int32", 1) if products_available() else
                        ("float32", "float32", "float32", 1))
    _check_close(_run(mod, x.numpy()), ref)


def test_torch_ao_default_qconfig_fused_fake_quant():
    """``fused_moving_avg_obs_fake_quant`` with its observer off is the fake quantization by
    its buffers: the depthwise conv reads 8 bits, the pointwise one is the int32 conv; eager's
    values up to rounding. With the observer on the import is refused, naming the fix."""
    torch.manual_seed(9)
    model = default_qconfig_qat_net(SHAPE)
    x = torch.randn(*SHAPE)
    with torch.no_grad():
        ref = model(x).numpy()
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(model, (x,)),
                                         [("x", (SHAPE, "float32"))])
    convs = _conv_calls(mod)
    assert convs[1] == ("uint8", "float32", "float32", 16)
    assert convs[2][2] == ("int32" if products_available() else "float32")
    _check_close(_run(mod, x.numpy()), ref)
    observing = default_qconfig_qat_net(SHAPE, observe=True)
    with pytest.raises(ValueError, match="observer is enabled.*disable_observer"):
        relay.frontend.from_pytorch(torch.jit.trace(observing, (x,), check_trace=False),
                                    [("x", (SHAPE, "float32"))])


class DeclinedByVnni(torch.nn.Module):
    """One-group convs VNNI declines: a 3 -> 16 stem (too few input channels) and a 128 -> 12
    3x3 conv (12 output channels: off VNNI's step) whose weights all quantize to +-127, so its
    sums of 1152 products of up to 128 x 127 pass 2**24 (two ranges of input channels)."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 128, 3, 1, 1)
        sign = torch.where(torch.randn(12, 128, 3, 3) > 0, 1.0, -1.0)
        self.register_buffer("w", sign * 0.3)

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 0.03, 128, 0, 255)
        y = F.conv2d(x, _qw(self.stem.weight), self.stem.bias, 1, 1)
        y = torch.fake_quantize_per_tensor_affine(y, 0.05, 128, 0, 255)
        w = torch.fake_quantize_per_tensor_affine(self.w, 0.3 / 127, 0, -128, 127)
        return F.conv2d(y, w, None, 1, 1)


def test_one_group_convs_vnni_declines_sum_integers():
    """The stem is one float32 conv of the integers q - 128 and the integer weights; the wide
    conv two such convs over input channels 0..63 and 64..127, each cast to int32 and added:
    exact sums, eager's values up to float rounding."""
    torch.manual_seed(11)
    model = DeclinedByVnni().eval()
    x = torch.randn(1, 3, 6, 6) * 2
    with torch.no_grad():
        ref = model(x).numpy()
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(model, (x,)),
                                         [("x", ((1, 3, 6, 6), "float32"))])
    assert _conv_calls(mod) == [("float32", "float32", "float32", 1)] * 3
    assert all(_integer_weights(mod))
    widths = []
    post_order_visit(mod["main"], lambda e: widths.append(
        (e.args[0].checked_type.shape[1], e.checked_type.dtype))
        if isinstance(e, relay.Call) and getattr(e.op, "name", "") == "cast" and
        getattr(e.args[0], "op", None) is not None and
        getattr(e.args[0].op, "name", "") == "nn.conv2d" else None)
    assert [(int(c), dt) for c, dt in widths] == [(12, "int32"), (12, "int32")]
    _check_close(_run(mod, x.numpy()), ref)


class WideLinear(torch.nn.Module):
    """A linear of 1100 -> 12 features whose weights all quantize to +-127 (sums of 1100
    products of up to 128 x 127 pass 2**24), of an input fake-quantized with zero point 128."""

    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.where(torch.randn(12, 1100) > 0, 0.3, -0.3))
        self.register_buffer("b", torch.randn(12))

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 0.03, 128, 0, 255)
        w = torch.fake_quantize_per_tensor_affine(self.w, 0.3 / 127, 0, -128, 127)
        return F.linear(x, w, self.b)


@pytest.mark.parametrize("net, pieces", [("narrow", 1), ("wide", 2)])
def test_qat_linear_without_vnni_sums_integers_in_float32(monkeypatch, net, pieces):
    """Without VNNI nor AVX2's int16 pairs (switched off here) a QAT linear is the float32
    dense of the integers q - z against q_w - z_w (exact: one dense, or one per range of K
    cast to int32 and added), scaled after; eager's values up to float rounding."""
    from minitvm.schedule import conv_vnni

    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    monkeypatch.setattr(conv_vnni, "pairs_available", lambda: False)
    torch.manual_seed(13)
    model, shape = (QatLinear(), (2, 3, 32)) if net == "narrow" else (WideLinear(), (2, 1100))
    x = torch.randn(*shape) * 2
    with torch.no_grad():
        ref = model.eval()(x).numpy()
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(model, (x,)),
                                         [("x", (shape, "float32"))])
    dense = []
    post_order_visit(mod["main"], lambda e: dense.append(
        (e.args[0].checked_type.dtype, e.checked_type.dtype,
         bool(np.all(np.round(v := e.args[1].data.numpy()) == v))))
        if isinstance(e, relay.Call) and getattr(e.op, "name", "") == "nn.dense" else None)
    assert dense == [("float32", "float32", True)] * pieces
    _check_close(_run(mod, x.numpy()), ref)
