"""relax.frontend.torch.from_exported_program on the gaps the ninth round of new-user models
found (benchmarks/new_user_models_ninth.py): ``unfold`` (``Tensor.unfold``, PatchTST's
patches), ``_cdist_forward`` (``torch.cdist``, SchNet's interatomic distances, by differences
for few rows and by a matmul for many, as torch) and ``bucketize`` (DCN-v2's binned dense
features). Built and run on the Relax VM against PyTorch eager, plus the ops' forms in the
imported module."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import Fn  # noqa: E402
from .exported_program_run import run_exported as _run  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


@pytest.mark.parametrize("shape,dim,size,step", [
    ((2, 3, 20), -1, 4, 2),    # overlapping patches along the last axis
    ((2, 9, 5), 1, 3, 3),      # a middle axis: the size axis moves last
    ((7, 4), 0, 2, 1),
    ((2, 10), 1, 3, 4),        # a step past the size, a remainder dropped
])
def test_unfold(shape, dim, size, step):
    text = _run(lambda x: x.unfold(dim, size, step) * 2.0, _rand(*shape))
    assert "R.take" in text


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
def test_cdist_few_rows_by_differences(p):
    text = _run(lambda a, b: torch.cdist(a, b, p=p), _rand(2, 7, 3), _rand(2, 5, 3, seed=1))
    assert "R.matmul" not in text


def test_cdist_many_rows_by_matmul():
    """More than 25 rows: torch takes |a|^2 + |b|^2 - 2 a.b, and so does the import."""
    text = _run(lambda a, b: torch.cdist(a, b), _rand(1, 30, 4), _rand(1, 27, 4, seed=1))
    assert "R.matmul" in text


def test_cdist_self_distances_zero_diagonal():
    """SchNet's cdist(pos, pos): the diagonal exactly zero by differences (few rows)."""
    _run(lambda a: torch.cdist(a, a) + torch.eye(6), _rand(1, 6, 3) * 2.0)


_BOUNDS = torch.tensor([-1.0, 0.0, 0.5, 1.0])
_VALUES = torch.tensor([[-2.0, -1.0, 0.0, 0.25, 0.5, 1.0, 3.0], [1.0, 0.7, -0.5, -1.0, 2.0,
                                                                 0.0, 0.5]])


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("out_int32", [False, True])
def test_bucketize(right, out_int32):
    _run(lambda x: torch.bucketize(x, _BOUNDS, out_int32=out_int32, right=right), _VALUES)


@pytest.mark.parametrize("shape,kw", [
    ((1, 2 * 49, 121), dict(output_size=32, kernel_size=7, stride=3, padding=3)),
    ((2, 4 * 6, 15), dict(output_size=(5, 7), kernel_size=(2, 3), dilation=(2, 1),
                          stride=(1, 2), padding=(1, 0))),
    ((3 * 4, 9), dict(output_size=4, kernel_size=2)),                # an unbatched input
])
def test_fold_kept_whole_and_gathered(shape, kw):
    """nn.Fold: col2im kept out of the decomposition (it would be an index_put accumulating
    over skipped axes), imported as two takes and a sum."""
    fold = torch.nn.Fold(**kw)
    text = _run(lambda x: fold(x), _rand(*shape))
    assert text.count("R.take") == 2 and "index_put" not in text



def _run_close(fn, x, tol=1e-5):
    """``fn`` exported, imported, built and run on the VM against eager within ``tol`` (the
    filter sums round differently from torch's); the imported module's TVMScript."""
    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax.frontend.torch import from_exported_program

    model = Fn(fn).eval()
    with torch.no_grad():
        ref = model(x).numpy()
    mod = from_exported_program(torch.export.export(model, (x,)))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](tvm.nd.array(x.numpy()))
    out = (out if hasattr(out, "numpy") else out[0]).numpy()
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)
    return mod.script()


@pytest.mark.parametrize("mode,kw,lowering", [
    ("bilinear", dict(size=(16, 20)), "taps"),        # a downscale: 5-tap bands
    ("bilinear", dict(scale_factor=0.5), "taps"),
    ("bilinear", dict(size=(50, 64)), "taps"),        # an upscale: 2-tap bands, width first
    ("bicubic", dict(scale_factor=(0.3, 1.5)), "taps"),
    ("bicubic", dict(size=(16, 20)), "dense"),        # 10-tap bands over a short input
    ("bicubic", dict(scale_factor=0.5), "dense"),
])
def test_antialiased_resize(mode, kw, lowering):
    """torchvision's Resize on tensors: F.interpolate(antialias=True), down and up: per axis a
    sum of gathered filter taps, both passes materialized, or two matmuls."""
    import torch.nn.functional as F

    text = _run_close(lambda x: F.interpolate(x, mode=mode, antialias=True, **kw),
                      _rand(2, 3, 37, 50))
    if lowering == "dense":
        assert text.count("R.matmul") == 2 and "R.take" not in text
    else:
        assert "R.matmul" not in text and "R.take" in text
        assert text.count("R.stop_fusion") == 2


def test_antialiased_resize_with_aligned_corners_is_an_error():
    import torch.nn.functional as F

    from minitvm.relax.frontend.torch import TorchImportError, from_exported_program

    ep = torch.export.export(Fn(lambda x: F.interpolate(x, size=(5, 6), mode="bilinear",
                                                        antialias=True, align_corners=True)),
                             (_rand(1, 1, 9, 9),))
    with pytest.raises(TorchImportError, match="align_corners=True is not supported"):
        from_exported_program(ep)
