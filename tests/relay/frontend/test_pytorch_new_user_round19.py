"""The nineteenth round of new-user architectures (benchmarks/new_user_models_nineteenth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors, each
built at opt_level 3 and checked against eager PyTorch with every kernel native; plus the
importer gaps the round found, each through the importers it touched."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_both_importers as _check_both  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("nineteenth")
_model, _rand = _round.model, _round.rand


def test_gru_state_into_gru_cell_left_unfrozen():
    """A GRU's final state fed to a GRUCell (a seq2seq decoder's first step): torch.jit.freeze
    leaves the GRU's weights as prim::GetAttr off ``self`` (OpNotImplemented before); the
    importer reads them from the module."""

    class EncoderThenCell(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = torch.nn.GRU(6, 8, batch_first=True)
            self.cell = torch.nn.GRUCell(8, 8)

        def forward(self, x):
            y, h = self.gru(x)
            return self.cell(y[:, -1], h[0])

    torch.manual_seed(3)
    m = EncoderThenCell().eval()
    x = _randn(2, 5, 6)
    traced = torch.jit.trace(m, (x,))
    frozen = torch.jit.freeze(traced)
    graph = frozen.graph.copy()
    torch._C._jit_pass_inline(graph)
    assert any(n.kind() == "prim::GetAttr" for n in graph.nodes())  # the case this covers
    _run(m, x, rtol=1e-5, atol=1e-6)


class _FakeQuantOps(torch.nn.Module):
    """Per tensor with Python and with tensor qparams, per channel along dim 1."""

    def __init__(self):
        super().__init__()
        self.register_buffer("ch_scale", torch.tensor([0.02, 0.05, 0.1, 0.25]))
        self.register_buffer("ch_zp", torch.tensor([0, 1, -2, 3], dtype=torch.int32))
        self.register_buffer("t_scale", torch.tensor([0.25]))
        self.register_buffer("t_zp", torch.tensor([2], dtype=torch.int32))

    def forward(self, x):
        a = torch.fake_quantize_per_tensor_affine(x, 0.25, 128, 0, 255)
        b = torch.fake_quantize_per_tensor_affine(x, self.t_scale, self.t_zp, -8, 7)
        c = torch.fake_quantize_per_channel_affine(x, self.ch_scale, self.ch_zp, 1, -127, 127)
        return torch.stack([a, b, c])


def _tie_ramp():
    """Values on a 1/8 grid (x / 0.25 lands on exact halves: torch rounds them to even) from
    -3 past the clamps to 3, shuffled over (2, 4, 5, 6)."""
    ramp = torch.arange(240, dtype=torch.float32) * 0.025 - 3.0
    ramp[::2] = torch.round(ramp[::2] * 8) / 8
    return ramp[torch.randperm(240, generator=torch.Generator().manual_seed(4))].view(
        2, 4, 5, 6)


def test_fake_quantize_relay_importers():
    """fake_quantize_per_tensor_affine (float / tensor qparams) and _per_channel_affine
    through from_pytorch and the Relay torch.export importer (OpNotImplemented before)."""
    mod = _check_both(_FakeQuantOps(), _tie_ramp(), rtol=0, atol=0)
    assert "round(" in mod.astext()


def test_fake_quantize_relax_importer():
    """The same through the Relax torch.export importer (its cachemask forms, the tensor
    qparams' with fake_quant_enabled), built native, equal to eager."""
    from minitvm import relax
    from minitvm.relax.frontend.torch import from_exported_program

    m, x = _FakeQuantOps().eval(), _tie_ramp()
    with torch.no_grad():
        ref = m(x).numpy()
        mod = from_exported_program(torch.export.export(m, (x,)))
    ex = relax.build(mod, "llvm")
    assert ex.numpy_calls() == {}
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](tvm.nd.array(x.numpy()))
    out = (out[0] if not hasattr(out, "numpy") else out).numpy()
    np.testing.assert_array_equal(out, ref)


def test_qat_fakequant_resnet():
    m = _model("qat_fakequant", widths=(8, 16), classes=3)
    _run(m, _rand(1, 3, 16, 16), rtol=1e-5, atol=1e-5)


class _ComplexRotary(torch.nn.Module):
    """DeepSeek / Llama-style rotary: pairs as complex numbers times a ``torch.polar`` buffer."""

    def __init__(self, t=6, d=8):
        super().__init__()
        ang = torch.outer(torch.arange(t).float(), 1.0 / 100 ** (torch.arange(0, d, 2) / d))
        self.register_buffer("freqs", torch.polar(torch.ones_like(ang), ang))

    def forward(self, x):                                   # (b, t, h, d)
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        z = z * self.freqs[:x.shape[1]].view(1, x.shape[1], 1, -1)
        return torch.view_as_real(z).flatten(3)


def test_complex_buffer_torch_export_importers():
    """A complex64 buffer reaches both torch.export importers as a constant (NDArray refused
    complex64 before: 'numpy dtype complex64 is not a tensor data type'); it becomes the pair
    of float constants complex values are, in Relay and in Relax."""
    from minitvm import relax
    from minitvm.relax.frontend.torch import from_exported_program as relax_import

    torch.manual_seed(5)
    m, x = _ComplexRotary().eval(), _randn(2, 6, 3, 8)
    _check_both(m, x, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        ref = m(x).numpy()
        mod = relax_import(torch.export.export(m, (x,)))
    ex = relax.build(mod, "llvm")
    assert ex.numpy_calls() == {}
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x.numpy()))
    out = (out[0] if not hasattr(out, "numpy") else out).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def _ints(high, *shape, seed=0, low=0):
    return torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed))


def test_bilstm_crf_viterbi_decode():
    m = _model("bilstm_crf", vocab=50, emb=8, hidden=8, tags=4)
    _run(m, _ints(50, 2, 6))


def test_cornernet_cummax_corner_pooling():
    m = _model("cornernet_mini", c=16, classes=2)
    _run(m, _rand(1, 3, 32, 32), rtol=1e-4, atol=1e-5)


def test_deepseek_latent_attention_complex_rotary():
    m = _model("deepseek_mla", vocab=50, d=32, heads=2, layers=1, max_len=16)
    _run(m, _ints(50, 1, 8), rtol=1e-4, atol=1e-5)


def test_soft_moe_slots():
    m = _model("soft_moe_vit", d=32, heads=2, depth=1, patch=8, classes=5, tokens=16)
    _run(m, _rand(1, 3, 32, 32), rtol=1e-4, atol=1e-5)


def test_simclr_nt_xent_loss():
    m = _model("simclr_ntxent", width=8, proj=8)
    _run(m, _rand(4, 3, 16, 16), _rand(4, 3, 16, 16, seed=1), rtol=1e-4, atol=1e-5)


def test_focal_dice_loss_heads():
    m = _model("seg_focal_dice", c=8)
    mask = (_rand(1, 1, 16, 16, seed=2) > 0.5).float()
    _run(m, _rand(1, 3, 16, 16), mask, rtol=1e-4, atol=1e-6)


def test_resnest_split_attention():
    m = _model("resnest_mini", widths=(8, 8, 8), classes=5)
    _run(m, _rand(1, 3, 32, 32), rtol=1e-4, atol=1e-5)


def test_gru_beam_search_topk_floor_div():
    m = _model("beam_search_gru", vocab=30, d=16, beams=3, steps=3)
    _run(m, _ints(30, 2, 5, low=2))


def test_pointrend_topk_grid_sample_scatter():
    m = _model("pointrend_mini", c=8, classes=3, points=8, steps=1)
    _run(m, _rand(1, 3, 32, 32), rtol=1e-4, atol=1e-5)


def test_nfnet_scaled_weight_standardization():
    m = _model("nfnet_mini", classes=5, width=16)
    _run(m, _rand(1, 3, 16, 16), rtol=1e-4, atol=1e-5)


def test_ntm_content_shift_addressing():
    m = _model("ntm_copy", inp=4, out=4, ctrl=16, n=8, m=6)
    _run(m, (_rand(2, 3, 4) > 0.5).float(), rtol=1e-4, atol=1e-5)
