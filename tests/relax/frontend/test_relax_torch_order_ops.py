"""relax.frontend.torch.from_exported_program on torch's order statistics and scans:
``median`` / ``nanmedian`` (global and along a dim, keepdim, ties, NaN), ``cummax`` /
``cummin`` (ties take the later index, NaN sticks), ``logcumsumexp`` (no underflow far below
the running maximum) and ``pdist`` (``_pdist_forward``, several p); built and run on the Relax
VM against PyTorch eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import run_exported as _run  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def _ties(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, 4, shape).astype("float32"))


def _perm(*shape, seed=3):
    n = int(np.prod(shape))
    return torch.from_numpy(np.random.default_rng(seed).permutation(n).astype("float32")).view(
        *shape)


def _with_nan(x, *where):
    x = x.clone()
    for w in where:
        x[w] = float("nan")
    return x


def test_median_values_global_dims_keepdim_with_ties():
    def fn(x):
        return torch.cat([torch.median(x).reshape(1), torch.median(x, 1)[0],
                          torch.median(x, 0, True)[0][0], torch.median(x, -1, True)[0][:, 0]])

    text = _run(fn, _ties(5, 6))
    assert "R.argsort(" in text and "R.gather_elements(" in text


def test_median_indices_and_nan():
    _run(lambda x: torch.median(x, 1)[1], _perm(3, 8))
    _run(lambda x: torch.median(x, 0, True)[1], _perm(5, 4))
    _run(lambda x: torch.median(x, 1)[0], _with_nan(_rand(4, 5), (1, 2), (3, 0)))


def test_nanmedian_skips_nan():
    x = _with_nan(_rand(4, 6), (1, 2), (2, 0), (2, 5), (3, slice(None)))
    _run(lambda x: torch.nanmedian(x, 1)[0], x)


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin])
def test_cumulative_extreme_ties_and_nan(op):
    def fn(x):
        values, indices = op(x, 1)
        return torch.cat([values.flatten(), indices.flatten().float(),
                          op(x, 0)[1].flatten().float()])

    _run(fn, _ties(3, 9))
    x = _with_nan(_rand(2, 7), (0, 2), (0, 5), (1, 6))
    _run(lambda x: torch.cat([op(x, -1)[0], op(x, -1)[1].float()]), x)


def test_logcumsumexp_wide_range():
    x = _rand(3, 10) * 3.0
    x[0, :4] = torch.tensor([-200.0, 50.0, -300.0, float("-inf")])
    _run(lambda x: torch.logcumsumexp(x, 1), x)


def test_pdist_every_kind_of_p():
    x = _rand(6, 4)
    x[4] = x[1]
    ps = (2.0, 1.0, 0.0, 3.0, float("inf"))
    _run(lambda x: torch.stack([torch.pdist(x, p) for p in ps]), x)


def test_mode_smallest_of_equally_frequent_and_last_index():
    x = torch.tensor([[3.0, 1, 3, 1, 2, 5], [2, 2, 7, 7, 7, 0], [4, 4, 4, 4, 4, 4]])

    def fn(x):
        values, indices = torch.mode(x, 1)
        kept = torch.mode(x, 0, True)
        return torch.cat([values, indices.float(), kept[0][0], kept[1][0].float()])

    _run(fn, x)


@pytest.mark.parametrize("bins, lo, hi", [(4, 0.0, 5.0), (7, 0.0, 0.0)])
def test_histc(bins, lo, hi):
    x = torch.cat([_rand(30), torch.tensor([0.0, 1.0, 2.0, 5.0, 6.0, -1.0])])
    _run(lambda x: torch.histc(x, bins, lo, hi), x)
    _run(lambda x: torch.histc(x * 0.0, bins, lo, hi), x)


def test_median_and_nanmedian_with_infinities_beside_nan():
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[nan, inf, 1.0, -inf], [2.0, nan, inf, 5.0], [inf, 3.0, nan, nan],
                      [-inf, nan, 0.5, inf]])
    _run(lambda x: torch.cat([torch.median(x, 1)[0], torch.nanmedian(x, 1)[0],
                              torch.nanmedian(x, 1)[1].float()]), x)


def test_logcumsumexp_along_a_symbolic_batch():
    """A Cox partial likelihood's risk sets over a dynamic batch (DeepSurv): the scan axis is
    the symbolic one, so the masked prefix log-sum-exp; far below the running maximum and
    ``-inf`` entries as eager, at batch 7 and 3 of one build; a second axis scanned too."""
    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax.frontend.torch import from_exported_program

    class RiskSets(torch.nn.Module):
        def forward(self, x):
            return torch.logcumsumexp(x, 0) + torch.logcumsumexp(x, 1)

    model = RiskSets()
    x = _rand(7, 4) * 3.0
    x[:4, 0] = torch.tensor([-200.0, 50.0, -300.0, float("-inf")])
    x[0, 1] = float("-inf")
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("b")},))
    mod = from_exported_program(ep)
    assert "R.arange(" in mod.script()  # the masked form, not the unrolled scan
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for rows in (x, x[:3] * 0.5):
        out = vm["main"](tvm.nd.array(rows.numpy()))
        out = (out if hasattr(out, "numpy") else out[0]).numpy()
        np.testing.assert_allclose(out, model(rows).numpy(), rtol=1e-5, atol=1e-5)
