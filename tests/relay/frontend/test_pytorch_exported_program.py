"""relay.frontend.pytorch.from_exported_program on what torch.export records and the TorchScript path
never sees: ``aten.conv_transpose{1,2}d`` (``nn.ConvTranspose``: a VQ-VAE decoder) and the
``_assert_tensor_metadata`` check after ``.to(dtype)`` (sparsemax, a KAN's mask); each built
at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from torch import nn  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.relay.frontend.pytorch import from_exported_program  # noqa: E402


def _run(model, *inputs):
    model = model.eval()
    with torch.no_grad():
        ref = model(*inputs).numpy()
        ep = torch.export.export(model, inputs)
    mod, params = from_exported_program(ep)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for p, t in zip(mod["main"].params, inputs, strict=False):
        g.set_input(p.name_hint, t.numpy())
    g.run()
    out = g.get_output(0).numpy()
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    assert [k for k, v in lib.get_lib().kernels.items() if v.kind != "native"] == []
    return ep


def _randn(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def _targets(ep):
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.ConvTranspose2d(6, 4, 4, 2, 1), (1, 6, 5, 5)),
    (lambda: nn.ConvTranspose2d(6, 4, 3, 2, 1, output_padding=1, groups=2, bias=False),
     (2, 6, 4, 3)),
    (lambda: nn.ConvTranspose2d(4, 4, 3, 1, 2, dilation=2), (1, 4, 6, 6)),
    (lambda: nn.ConvTranspose1d(5, 3, 8, 4, 2), (2, 5, 9)),
])
def test_conv_transpose(make, shape):
    torch.manual_seed(0)
    ep = _run(make(), _randn(*shape))
    assert any("conv_transpose" in t for t in _targets(ep))


class MaskCount(nn.Module):
    """Counts through ``.to(dtype)``: the indicator of knot intervals and a long index."""

    def forward(self, x):
        g = torch.linspace(-1, 1, 6)
        b = ((x[..., None] >= g[:-1]) & (x[..., None] < g[1:])).to(x.dtype)
        k = b.sum(-1).to(torch.long)
        return b.sum(-1) + k.to(x.dtype) * 0.5 + x


def test_assert_tensor_metadata_computes_nothing():
    ep = _run(MaskCount(), _randn(3, 7) * 0.8)
    assert any("_assert_tensor_metadata" in t for t in _targets(ep))


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.utils.weight_norm(nn.Conv1d(4, 6, 3, padding=2, dilation=2)), (2, 4, 9)),
    (lambda: nn.utils.weight_norm(nn.Linear(5, 3), dim=1), (4, 5)),
    (lambda: nn.utils.weight_norm(nn.Conv2d(3, 4, 3), dim=None), (1, 3, 6, 6)),
])
def test_weight_norm(make, shape):
    """``nn.utils.weight_norm`` (a TCN's convolutions) reaches torch.export as ``_weight_norm``:
    the norm over every axis but ``dim`` (all of them for ``dim=None``)."""
    torch.manual_seed(0)
    m = make()
    with torch.no_grad():  # g away from ||v|| so that a wrong norm shows
        m.weight_g.mul_(torch.rand_like(m.weight_g) + 0.5)
    ep = _run(m, _randn(*shape))
    assert "aten._weight_norm.default" in _targets(ep)


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.Conv2d(4, 4, 7, padding="same", groups=4), (1, 4, 9, 9)),  # ConvMixer's
    (lambda: nn.Conv2d(3, 5, (4, 3), padding="same", dilation=(1, 2)), (2, 3, 8, 7)),  # odd
    (lambda: nn.Conv1d(3, 5, 4, padding="same"), (2, 3, 10)),
    (lambda: nn.Conv3d(2, 3, (2, 3, 3), padding="same"), (1, 2, 4, 5, 5)),
    (lambda: nn.Conv2d(3, 5, 3, padding="valid"), (1, 3, 6, 6)),
])
def test_conv_string_padding(make, shape):
    """torch.export keeps ``padding="same"`` / ``"valid"`` as strings (TorchScript sees them
    resolved); an even kernel pads one more at the end, as torch does."""
    torch.manual_seed(0)
    _run(make(), _randn(*shape))


class _TensordotEmpty(nn.Module):
    """An MMoE's experts by ``tensordot`` (the Keras original's one weight tensor), with
    contracted axes that need moving, and ``new_empty`` filled by slice writes (as
    ``nn.AdaptiveLogSoftmaxWithLoss.log_prob`` builds its output)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 5, 3) / 3)

    def forward(self, x, y):
        experts = torch.tensordot(x, self.w, dims=([1], [0]))              # (b, 5, 3)
        pair = torch.tensordot(y, experts, dims=([0, 2], [2, 0]))          # (4, 5)
        out = x.new_empty((x.shape[0], 8))
        out[:, :5] = experts.sum(-1)
        out[:, 5:] = x[:, :3]
        return torch.cat([out.flatten(), pair.flatten()])


def test_tensordot_and_new_empty_on_both_torch_paths():
    from frontend_models import check_traced_native

    torch.manual_seed(0)
    ep = _run(_TensordotEmpty(), _randn(2, 6), _randn(3, 4, 2, seed=1))
    assert {"aten.tensordot.default", "aten.new_empty.default"} <= _targets(ep)
    torch.manual_seed(0)
    check_traced_native(_TensordotEmpty().eval(), _randn(2, 6), _randn(3, 4, 2, seed=1))
