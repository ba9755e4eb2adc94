"""relax.frontend.torch.from_exported_program on ops the eleventh round of new-user models found
missing (benchmarks/new_user_models_eleventh.py): the ``empty`` / ``copy`` / ``slice_scatter``
that circular padding (Informer's and TimesNet's ``Conv1d(padding_mode="circular")``) and slice
assignment decompose into, ``nn.Bilinear`` (kept whole: one matmul) and the ``_trilinear`` it
decomposes into elsewhere (an einsum), the indices of ``max_pool2d(return_indices=True)`` and
``max_unpool2d`` (SegNet's decoder: a gather from non-overlapping pool windows, an
``index_put`` otherwise). Built and run on the Relax VM against eager, dtype included."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from .exported_program_run import run_exported as _run  # noqa: E402
from .exported_program_run import run_exported_module as _run_module  # noqa: E402


def _randn(*shape, seed=0):
    return torch.from_numpy(__import__("numpy").random.default_rng(seed).standard_normal(
        shape).astype("float32"))


def _seeded(cls, *args):
    torch.manual_seed(1)
    return cls(*args)


@pytest.mark.parametrize("pad", [1, 3])
def test_circular_conv1d(pad):
    text = _run_module(_seeded(nn.Conv1d, 3, 4, 2 * pad + 1, 1, pad, 1, 1, True, "circular"),
                       _randn(2, 3, 9))
    assert "R.slice_scatter(" in text


def test_circular_conv2d():
    _run_module(_seeded(nn.Conv2d, 2, 3, 3, 1, 2, 1, 1, True, "circular"), _randn(1, 2, 6, 5))


def test_slice_and_select_assignment():
    def f(x, y):
        z = x.clone()
        z[:, 1:4] = y
        z[:, 0] = 2.0
        z[:, 5::2] = y[:, :2] * 3
        z[:, -1] = y[:, 0]
        return z

    text = _run(f, _randn(2, 9), _randn(2, 3, seed=1))
    assert "R.slice_scatter(" in text


def test_copy_casts_to_the_destination_dtype():
    def f(x, i):
        z = torch.zeros(2, 5)
        z[:, 1:3] = i  # int64 written into float32
        return z + x

    _run(f, _randn(2, 5), torch.tensor([[1, 2], [3, 4]]))


def test_bilinear_is_one_matmul():
    text = _run_module(_seeded(nn.Bilinear, 4, 5, 3), _randn(6, 4), _randn(6, 5, seed=1))
    assert "R.matmul(" in text and "einsum" not in text


def test_bilinear_leading_dims_no_bias():
    _run_module(_seeded(nn.Bilinear, 4, 5, 3, False), _randn(2, 3, 4), _randn(2, 3, 5, seed=1))


def test_trilinear_as_einsum():
    w = _randn(3, 4, 5, seed=2)

    def f(x, y):
        return torch._trilinear(x, w, y, [1, 3], [0], [1, 2], [2, 3])

    text = _run(f, _randn(6, 4), _randn(6, 5, seed=1))
    assert "R.einsum(" in text


@pytest.mark.parametrize("kernel,stride,pad,ceil,shape", [
    (2, 2, 0, False, (2, 3, 8, 8)), (3, 2, 1, False, (1, 2, 9, 7)), (2, 2, 0, True, (1, 2, 7, 9))])
def test_max_pool2d_indices(kernel, stride, pad, ceil, shape):
    def f(x):
        v, i = F.max_pool2d(x, kernel, stride, pad, ceil_mode=ceil, return_indices=True)
        return i

    _run(f, torch.round(_randn(*shape) * 2))


def test_unused_indices_are_not_computed():
    text = _run_module(nn.MaxPool2d(2), _randn(1, 2, 6, 6))
    assert "R.argmax(" not in text


@pytest.mark.parametrize("kernel,stride,pad,size,shape", [
    (2, 2, 0, None, (2, 3, 8, 8)), (2, 2, 0, (7, 9), (1, 2, 7, 9)),
    (3, 3, 1, (7, 8), (1, 2, 7, 8))])
def test_max_unpool2d_gathers_from_disjoint_windows(kernel, stride, pad, size, shape):
    def f(x):
        v, i = F.max_pool2d(x, kernel, stride, pad, return_indices=True)
        return F.max_unpool2d(v * 2.0, i, kernel, stride, pad, output_size=size)

    text = _run(f, _randn(*shape))
    assert "index_put" not in text and "R.take(" in text


def test_max_unpool2d_overlapping_windows_index_put():
    def f(x):
        v, i = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        return F.max_unpool2d(v, i, 3, 2, 1, output_size=(6, 6))

    assert "R.index_put(" in _run(f, _randn(1, 2, 6, 6))


class _EmptyOfFlattenedBatch(nn.Module):
    """``new_empty`` sized by a product of a symbolic batch (``x.reshape(-1, 4)`` of a
    ``(b, 3, 4)`` input: ``3 * b`` rows), filled by slice writes, as
    ``nn.AdaptiveLogSoftmaxWithLoss.log_prob`` builds its output."""

    def forward(self, x):
        h = x.reshape(-1, 4)
        out = h.new_empty((h.shape[0], 6))
        out[:, :4] = h
        out[:, 4:] = h[:, :2] * 2
        return out


def test_empty_sized_by_a_symbolic_product():
    import numpy as np

    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax.frontend.torch import from_exported_program

    model = _EmptyOfFlattenedBatch()
    ep = torch.export.export(model, (_randn(2, 3, 4),),
                             dynamic_shapes=({0: torch.export.Dim("b")},))
    mod = from_exported_program(ep)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for b in (1, 3):
        x = _randn(b, 3, 4, seed=b)
        out = vm["main"](tvm.nd.array(x.numpy()))
        out = out if hasattr(out, "numpy") else out[0]
        np.testing.assert_allclose(out.numpy(), model(x).numpy(), rtol=1e-6)
