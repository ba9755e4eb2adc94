"""relax.frontend.torch.from_exported_program on a new user's models (VGG, SqueezeNet, DenseNet,
MBConv, ViT, GPT-2, UNet, LSTM text classifier, transformer encoder layers, indexing /
reduction / padding ops) against eager PyTorch, with a dynamic batch dim where the model
allows one."""

from __future__ import annotations

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import TorchImportError, from_exported_program  # noqa: E402


def _load(name):
    path = pathlib.Path(__file__).parents[2] / "relay" / "frontend" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


models = _load("more_models")


def _export(model, args, dynamic_shapes=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(model, args, dynamic_shapes=dynamic_shapes)


def _outputs(value):
    if hasattr(value, "numpy"):
        return [value.numpy()]
    return [t for v in value for t in _outputs(v)]


def _flat(o):
    if isinstance(o, tuple | list):
        return [t for v in o for t in _flat(v)]
    return [o]


def _check(vm, model, args, tol):
    outs = _outputs(vm["main"](*[a.numpy() for a in args]))
    with torch.no_grad():
        ref = [r.numpy() for r in _flat(model(*args))]
    assert len(outs) == len(ref)
    for o, r in zip(outs, ref, strict=True):
        np.testing.assert_allclose(o, r, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(models.CASES))
def test_exported_model_matches_eager(name):
    """Exported with a dynamic batch where the model allows it; run at two batch sizes."""
    cls, make_args, tol, dynamic = models.CASES[name]
    torch.manual_seed(0)
    model = models.mkbn(cls())
    args = make_args()
    shapes = tuple({0: torch.export.Dim("batch", min=1, max=32)} for _ in args) \
        if dynamic else None
    vm = relax.VirtualMachine(relax.build(from_exported_program(_export(model, args, shapes)),
                                          "llvm"), tvm.cpu())
    _check(vm, model, args, tol)
    if dynamic:
        _check(vm, model, tuple(torch.cat([a, a[:1]]) for a in args), tol)


def test_index_with_two_tensors_is_one_take():
    class Pair(torch.nn.Module):
        def forward(self, x, i):
            return x[i, :, i]

    x, i = torch.randn(3, 2, 3), torch.tensor([2, -1, 0])
    mod = from_exported_program(_export(Pair(), (x, i)))
    assert mod.script().count("R.take(") == 1
    _check(relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu()), Pair(), (x, i), 1e-6)


def test_adaptive_max_pool_uneven_cells():
    """5 -> 2 does not divide: windows [0, 3) and [2, 5) overlap, as torch's do."""
    class Pool(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.adaptive_max_pool2d(x, (2, 3))

    x = torch.randn(1, 2, 5, 6)
    mod = from_exported_program(_export(Pool(), (x,)))
    assert "R.nn.max_pool2d(" not in mod.script()
    _check(relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu()), Pool(), (x,), 1e-6)


def test_boolean_mask_index_is_a_clear_error():
    class Masked(torch.nn.Module):
        def forward(self, x, m):
            return x[:, m]

    with pytest.raises(TorchImportError, match="boolean mask"):
        from_exported_program(_export(Masked(), (torch.randn(2, 4), torch.tensor([1, 0, 1, 1]) > 0)))
