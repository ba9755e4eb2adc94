"""relax.frontend.torch.from_exported_program on models beyond the acceptance trio (ViT /
GPT-2 blocks, UNet upsampling, LSTM / GRU, SE blocks, group / instance norm, indexing ops,
einsum, pooling variants, dict and tuple outputs), against eager PyTorch; dynamic batch."""

from __future__ import annotations

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import OpNotImplemented, from_exported_program  # noqa: E402

_spec = importlib.util.spec_from_file_location(  # the models shared with the Relay sweep
    "sweep_models", pathlib.Path(__file__).parents[2] / "relay" / "frontend" / "sweep_models.py")
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)


def _export(model, args, dynamic_shapes=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(model, args, dynamic_shapes=dynamic_shapes)


def _outputs(value):
    if hasattr(value, "numpy"):
        return [value.numpy()]
    return [t for v in value for t in _outputs(v)]


def _check(vm, model, args, tol):
    outs = _outputs(vm["main"](*[a.numpy() for a in args]))
    with torch.no_grad():
        ref = [r.numpy() for r in sweep.flat(model(*args))]
    assert len(outs) == len(ref)
    for o, r in zip(outs, ref, strict=True):
        np.testing.assert_allclose(o, r, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(sweep.CASES))
def test_exported_model_matches_eager(name):
    cls, make_args, tol = sweep.CASES[name]
    torch.manual_seed(0)
    model = sweep.mkbn(cls())
    args = make_args()
    mod = from_exported_program(_export(model, args))
    _check(relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu()), model, args, tol)


@pytest.mark.parametrize("name", ["vit_sdpa", "gpt2_block", "lstm", "se_block"])
def test_dynamic_batch_builds_once(name):
    cls, make_args, tol = sweep.CASES[name]
    torch.manual_seed(0)
    model = sweep.mkbn(cls())
    (x,) = make_args()
    x = torch.randn(2, *x.shape[1:])  # an example batch of 1 would be specialised
    ep = _export(model, (x,), {"x": {0: torch.export.Dim("batch", min=1, max=32)}})
    vm = relax.VirtualMachine(relax.build(from_exported_program(ep), "llvm"), tvm.cpu())
    for b in (1, 5):
        _check(vm, model, (torch.randn(b, *x.shape[1:]),), tol)


def test_sdpa_is_kept_whole():
    """scaled_dot_product_attention is imported as matmul / softmax / matmul, not the
    decomposition's any / full_like guards."""
    model = sweep.ViTSdpa().eval()
    text = from_exported_program(_export(model, (torch.randn(1, 4, 32),))).script()
    assert text.count("R.nn.softmax(") == 1
    assert text.count("R.matmul(") == 2 + 2  # q @ k^T, p @ v, plus the two Linear layers
    assert "full_like" not in text


def test_negative_select_reads_the_last_row():
    class Last(torch.nn.Module):
        def forward(self, x):
            return x[:, -1] * 2 + x[-1]

    x = torch.randn(3, 3)
    mod = from_exported_program(_export(Last(), (x,)))
    assert "R.take(" in mod.script()
    _check(relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu()), Last(), (x,), 1e-6)


def test_unsupported_ops_are_all_named():
    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.special.i1e(x) + torch.special.i1e(x * 2) + torch.special.i1(x)

    with pytest.raises(OpNotImplemented) as e:
        from_exported_program(_export(Odd(), (torch.randn(4),)))
    assert "i1e.default (x2)" in str(e.value) and "special_i1" in str(e.value)
