"""Relax's torch.export import of a QAT conv (``relax/frontend/torch/aten_fake_quant_conv``): a
conv of an 8-bit fake-quantized input and a constant fake-quantized weight (scales and zero
points as buffers, as ``torch.ao`` FakeQuantize keeps them) becomes the int32 conv of the 8-bit
values scaled after (on a VNNI host), equal to eager up to float rounding; a range wider than
8 bits, or a weight from an input, keeps the float conv."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="building the QAT model needs `torch`")

from torch_qat_nets import default_qconfig_qat_net  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402
from minitvm.schedule.conv_vnni import products_available  # noqa: E402

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
    # (without VNNI: the float32 conv of the integers; a 10-bit range: the float conv)
    assert _conv_dtypes(mod) == ["void" if not integer else
                                 "int32" if products_available() else "float32"]
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


def _qw(w, zp=0):
    """``w`` fake-quantized per output channel over int8 (zero points ``zp``), its scales
    computed in the program from the weight (constants after folding)."""
    scale = w.detach().abs().amax(tuple(range(1, w.dim()))) / 100
    return torch.fake_quantize_per_channel_affine(
        w, scale, torch.full((w.shape[0],), zp, dtype=torch.int32), 0, -128, 127)


class QatMobileBlock(torch.nn.Module):
    """A depthwise 3x3 conv of an input fake-quantized with tensor qparams (buffers: the
    ``_tensor_qparams`` form, zero point ``zp``), a grouped conv with weight zero points, a
    conv1d and a linear with weight zero points, every activation and weight fake-quantized
    over 8 bits."""

    def __init__(self, zp=0):
        super().__init__()
        self.dw = torch.nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.gc = torch.nn.Conv2d(16, 32, 3, 2, 1, groups=4)
        self.c1 = torch.nn.Conv1d(32, 16, 3, 1, 1)
        self.fc = torch.nn.Linear(16, 24)
        self.register_buffer("s", torch.tensor([0.03]))
        self.register_buffer("z", torch.tensor([zp], dtype=torch.int32))

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, self.s, self.z, 0, 255)
        y = F.relu(F.conv2d(x, _qw(self.dw.weight), self.dw.bias, 1, 1, 1, 16))
        y = torch.fake_quantize_per_tensor_affine(y, 0.02, 0, 0, 255)
        y = F.conv2d(y, _qw(self.gc.weight, 3), self.gc.bias, 2, 1, 1, 4)
        y = torch.fake_quantize_per_tensor_affine(y.flatten(2), 0.02, -3, -128, 127)
        y = F.conv1d(y, _qw(self.c1.weight), self.c1.bias, 1, 1)
        y = torch.fake_quantize_per_tensor_affine(y.transpose(1, 2), 0.05, 128, 0, 255)
        return F.linear(y, _qw(self.fc.weight, 2), self.fc.bias)


def _products(mod) -> list:
    """(op, input dtype, output dtype, groups) of each conv2d / matmul binding of main."""
    found = []
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            name = getattr(getattr(b.value, "op", None), "name", "")
            if name in ("relax.nn.conv2d", "relax.nn.conv1d", "relax.matmul"):
                groups = int(b.value.attrs.groups) if "conv" in name else None
                found.append((name[6:], str(b.value.args[0].struct_info.dtype),
                              str(b.var.struct_info.dtype), groups))
    return found


@pytest.mark.parametrize("zp", [0, 128], ids=["zero-point-0", "zero-point-128"])
def test_qat_mobile_block_sums_integers(zp):
    """The depthwise and grouped convs sum the integers as float32 convs (the depthwise one
    reading the uint8 input where its zero point is 0), the conv1d runs as the int32 conv
    over a row and the linear as the int32 matmul (VNNI); eager's values up to rounding."""
    torch.manual_seed(6)
    model = QatMobileBlock(zp).eval()
    x = torch.randn(*SHAPE)
    with torch.no_grad():
        ref = model(x).numpy()
    mod = from_exported_program(torch.export.export(model, (x,)))
    found = _products(mod)
    depthwise = ("nn.conv2d", "uint8" if zp == 0 else "float32", "float32", 16)
    assert found[:2] == [depthwise, ("nn.conv2d", "float32", "float32", 4)]
    if products_available():
        assert found[2:] == [("nn.conv2d", "uint8", "int32", 1), ("matmul", "uint8", "int32", None)]
    else:  # (the conv in float32; the matmul on AVX2's int16 pairs: products_available)
        assert [f[2] for f in found[2:]] == \
            ["float32", "int32" if products_available() else "float32"]
    out = _run(mod, x.numpy())
    np.testing.assert_allclose(out, ref, rtol=0, atol=2e-6 * np.abs(ref).max())


class Disabled(torch.nn.Module):
    """Fake quantization switched off by a buffer flag (``torch.ao``'s
    ``fake_quant_enabled`` = 0): ``x`` passes as it is and the conv stays float."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(16, 16, 3, 1, 1)
        self.register_buffer("s", torch.tensor([0.03]))
        self.register_buffer("z", torch.tensor([0], dtype=torch.int32))
        self.register_buffer("on", torch.tensor([0], dtype=torch.uint8))

    def forward(self, x):
        x = torch.ops.aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
            x, self.s, self.z, self.on, 0, 255)[0]
        return F.conv2d(x, _qw(self.conv.weight), self.conv.bias, 1, 1)


def test_disabled_fake_quantization_keeps_the_float_conv():
    torch.manual_seed(7)
    model = Disabled().eval()
    x = torch.randn(*SHAPE)
    with torch.no_grad():
        ref = model(x).numpy()
    mod = from_exported_program(torch.export.export(model, (x,)))
    assert _conv_dtypes(mod) == ["void"]
    np.testing.assert_allclose(_run(mod, x.numpy()), ref, rtol=0,
                               atol=2e-6 * np.abs(ref).max())


def test_torch_ao_default_qconfig_exports_and_runs_integer_convs():
    """torch.ao's default QAT qconfig (``FusedMovingAvgObsFakeQuantize``) exports as
    ``_fused_moving_avg_obs_fq_helper_functional`` over the modules' buffers: with the
    observers disabled it is the fake quantization (the pointwise conv the int32 conv on
    VNNI, the depthwise one a float32 conv of the 8-bit input); with them on, refused."""
    torch.manual_seed(10)
    model = default_qconfig_qat_net(SHAPE)
    x = torch.randn(*SHAPE)
    with torch.no_grad():
        ref = model(x).numpy()
    mod = from_exported_program(torch.export.export(model, (x,)))
    found = _products(mod)
    assert found[1] == ("nn.conv2d", "uint8", "float32", 16)
    assert found[2][2] == ("int32" if products_available() else "float32")
    np.testing.assert_allclose(_run(mod, x.numpy()), ref, rtol=0,
                               atol=2e-6 * np.abs(ref).max())
    observing = default_qconfig_qat_net(SHAPE, observe=True)
    with pytest.raises(ValueError, match="observer is enabled.*disable_observer"):
        from_exported_program(torch.export.export(observing, (x,)))


class DeclinedByVnni(torch.nn.Module):
    """One-group convs VNNI declines: a 3 -> 128 stem (too few input channels) and a 128 -> 12
    3x3 conv (12 output channels: off VNNI's step) whose weights all quantize to +-127 (sums
    of 1152 products of up to 128 x 127 pass 2**24: two ranges of input channels)."""

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
    """The stem is one float32 conv of q - 128 and the integer weights, the wide conv two
    float32 convs over input channels 0..63 and 64..127 added in int32; eager's values up to
    float rounding."""
    torch.manual_seed(11)
    model = DeclinedByVnni().eval()
    x = torch.randn(1, 3, 6, 6) * 2
    with torch.no_grad():
        ref = model(x).numpy()
    mod = from_exported_program(torch.export.export(model, (x,)))
    found = _products(mod)
    assert found == [("nn.conv2d", "float32", "float32", 1)] * 3
    weights = [b.value.args[1] for block in mod["main"].body.blocks for b in block.bindings
               if getattr(getattr(b.value, "op", None), "name", "") == "relax.nn.conv2d"]
    assert [tuple(int(d) for d in w.data.shape) for w in weights] == [
        (128, 3, 3, 3), (12, 64, 3, 3), (12, 64, 3, 3)]
    assert all(np.array_equal(np.round(v := w.data.numpy()), v) for w in weights)
    text = str(mod)
    assert text.count('R.astype(') >= 3 and '"int32"' in text
    np.testing.assert_allclose(_run(mod, x.numpy()), ref, rtol=0,
                               atol=2e-6 * np.abs(ref).max())


class WideLinear(torch.nn.Module):
    """A linear of 1100 -> 12 features whose weights all quantize to +-127 (sums of 1100
    products of up to 128 x 127 pass 2**24), of an input fake-quantized with zero point
    128, or of 24 features with per-channel weight zero points."""

    def __init__(self, k=1100):
        super().__init__()
        self.register_buffer("w", torch.where(torch.randn(12, k) > 0, 0.3, -0.3))
        self.register_buffer("b", torch.randn(12))
        self.k = k

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 0.03, 128, 0, 255)
        if self.k == 1100:
            w = torch.fake_quantize_per_tensor_affine(self.w, 0.3 / 127, 0, -128, 127)
        else:
            w = _qw(self.w, 2)
        return F.linear(x, w, self.b)


@pytest.mark.parametrize("k, pieces", [(24, 1), (1100, 2)])
def test_qat_linear_without_vnni_sums_integers_in_float32(monkeypatch, k, pieces):
    """Without VNNI nor AVX2's int16 pairs (switched off here) a QAT linear is the float32
    matmul of the integers (one, or one per range of K cast to int32 and added), scaled
    after; eager's values up to float rounding."""
    from minitvm.schedule import conv_vnni

    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    monkeypatch.setattr(conv_vnni, "pairs_available", lambda: False)
    torch.manual_seed(14)
    model = WideLinear(k).eval()
    x = torch.randn(2, k) * 2
    with torch.no_grad():
        ref = model(x).numpy()
    mod = from_exported_program(torch.export.export(model, (x,)))
    found = [(b.value.args[1], str(b.var.struct_info.dtype))
             for block in mod["main"].body.blocks for b in block.bindings
             if getattr(getattr(b.value, "op", None), "name", "") == "relax.matmul"]
    assert [dt for _, dt in found] == ["float32"] * pieces
    assert all(np.array_equal(np.round(v := w.data.numpy()), v) for w, _ in found)
    np.testing.assert_allclose(_run(mod, x.numpy()), ref, rtol=0,
                               atol=2e-6 * np.abs(ref).max())
