"""relay.frontend.from_pytorch and from_exported_program on torch's order statistics and
scans: ``median`` / ``nanmedian`` (global and along a dim, keepdim, ties, NaN), ``cummax`` /
``cummin`` (ties take the later index, NaN sticks), ``logcumsumexp`` (no underflow far below
the running maximum) and ``pdist`` (several p); each built native and compared with eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402


def _ties(*shape, seed=0):
    """float32 small integers: many ties per row."""
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.integers(0, 4, shape).astype("float32"))


def _perm(*shape, seed=3):
    """float32 distinct values: the order is unique, so are the indices."""
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

    _check(Fn(fn), _ties(5, 6))


def test_median_indices_odd_and_even_lengths():
    _check(Fn(lambda x: torch.median(x, 1)[1]), _perm(3, 8))
    _check(Fn(lambda x: torch.median(x, 0, True)[1]), _perm(5, 4))


def test_median_propagates_nan():
    x = _with_nan(_randn(4, 5), (1, 2), (3, 0))
    _check(Fn(lambda x: torch.median(x, 1)[0]), x)


def test_nanmedian_skips_nan():
    x = _with_nan(_randn(4, 6), (1, 2), (2, 0), (2, 5), (3, slice(None)))
    _check(Fn(lambda x: torch.nanmedian(x, 1)[0]), x)


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin])
def test_cumulative_extreme_values_and_later_tie_index(op):
    def fn(x):
        values, indices = op(x, 1)
        return torch.cat([values.flatten(), indices.flatten().float(),
                          op(x, 0)[1].flatten().float()])

    _check(Fn(fn), _ties(3, 9))


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin])
def test_cumulative_extreme_nan_sticks(op):
    x = _with_nan(_randn(2, 7), (0, 2), (0, 5), (1, 6))
    _check(Fn(lambda x: torch.cat([op(x, -1)[0], op(x, -1)[1].float()])), x)


def test_cummax_of_integers():
    x = torch.from_numpy(np.random.default_rng(2).integers(-5, 5, (4, 5)))
    _check(Fn(lambda x: torch.cummax(x, 1)[0] * 10 + torch.cummax(x, 1)[1]), x)


def test_logcumsumexp_dims_and_wide_range():
    x = _randn(3, 10) * 3.0
    x[0, :4] = torch.tensor([-200.0, 50.0, -300.0, float("-inf")])
    _check(Fn(lambda x: torch.logcumsumexp(x, 1)), x, rtol=1e-5, atol=1e-5)
    _check(Fn(lambda x: torch.logcumsumexp(x, 0)), _randn(6, 2), rtol=1e-5, atol=1e-5)


def test_pdist_every_kind_of_p():
    x = _randn(6, 4)
    x[4] = x[1]  # a zero distance
    ps = (2.0, 1.0, 0.0, 3.0, float("inf"))
    mod = _check(Fn(lambda x: torch.stack([torch.pdist(x, p) for p in ps])), x, rtol=1e-5,
                 atol=1e-5)
    assert "take" in mod.astext()


def test_mode_smallest_of_equally_frequent_and_last_index():
    x = torch.tensor([[3.0, 1, 3, 1, 2, 5], [2, 2, 7, 7, 7, 0], [4, 4, 4, 4, 4, 4]])

    def fn(x):
        values, indices = torch.mode(x, 1)
        kept = torch.mode(x, 0, True)
        return torch.cat([values, indices.float(), kept[0][0], kept[1][0].float()])

    _check(Fn(fn), x)
    _check(Fn(lambda x: torch.mode(x)[1]), torch.from_numpy(
        np.random.default_rng(1).integers(0, 3, (4, 7))))


@pytest.mark.parametrize("bins, lo, hi", [(4, 0.0, 5.0), (7, 0.0, 0.0), (5, -1.0, 1.0)])
def test_histc_edges_outside_and_data_range(bins, lo, hi):
    x = torch.cat([_randn(30), torch.tensor([0.0, 1.0, 2.0, 5.0, 6.0, -1.0, float("nan")])])
    if lo == hi:
        x = x[:-1]  # torch takes a NaN minimum as the range
    _check(Fn(lambda x: torch.histc(x, bins, lo, hi)), x.view(1, -1))


def test_histc_of_constant_data_widens_the_range():
    _check(Fn(lambda x: torch.histc(x, 3)), torch.ones(2, 3))


def test_median_and_nanmedian_with_infinities_beside_nan():
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[nan, inf, 1.0, -inf], [2.0, nan, inf, 5.0], [inf, 3.0, nan, nan],
                      [-inf, nan, 0.5, inf]])
    _check(Fn(lambda x: torch.cat([torch.median(x, 1)[0], torch.nanmedian(x, 1)[0],
                                   torch.nanmedian(x, 1)[1].float()])), x)


def _quantile_input():
    """Ties, a NaN in one row, a whole NaN column, an inf: every branch of torch's ranks."""
    x = _ties(4, 7, 5, seed=2) + 0.25 * _perm(4, 7, 5) / 140
    x = _with_nan(x, (0, 2, 1), (1, slice(None), 3))
    x[2, 3, 0] = float("inf")
    return x


class _Quantiles(torch.nn.Module):
    """A quantile forecaster's read-out (round 17): q a buffer (runtime data to the importer),
    one of its entries, or a number."""

    def __init__(self, fn, interpolation):
        super().__init__()
        self.fn, self.interpolation = fn, interpolation
        self.register_buffer("q", torch.tensor([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]))

    def forward(self, x):
        i = self.interpolation
        return torch.cat([
            self.fn(x, self.q, dim=1, interpolation=i).flatten(),
            self.fn(x, self.q[3], dim=-1, keepdim=True, interpolation=i).flatten(),
            self.fn(x, self.q, interpolation=i),
            self.fn(x, 0.3, dim=0, interpolation=i).flatten(),
            self.fn(x, 0.7, keepdim=True, interpolation=i).flatten()])


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "nearest", "midpoint"])
@pytest.mark.parametrize("fn", [torch.quantile, torch.nanquantile])
def test_quantile_interpolations_nan_q_forms(fn, interpolation):
    text = _check(_Quantiles(fn, interpolation), _quantile_input(), exported=False).astext()
    assert "argsort(" in text and "gather(" in text


def test_quantile_through_torch_export():
    _check(Fn(lambda x: torch.quantile(x, torch.tensor([0.2, 0.75]), dim=1)),
           _quantile_input())


def test_quantile_of_integers_is_refused():
    from minitvm import relay
    from minitvm.relay.frontend import ImportError_

    traced = torch.jit.trace(Fn(lambda x: torch.quantile(x, 0.5, dim=0)), (_randn(3, 4),))
    with pytest.raises(ImportError_, match="expects a floating-point input, got int32"):
        relay.frontend.from_pytorch(traced, [("x", ((3, 4), "int32"))])
