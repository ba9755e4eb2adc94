"""torch.unique (flattened and along ``dim``) and torch.unique_consecutive cases shared by the
Relay and Relax PyTorch importer tests, and the comparison with eager. Needs torch (the
importing test skips first).

torch keeps each NaN its own value, sorted after +inf; which NaN group each NaN position gets
follows its ``std::sort`` (stable for up to 16 elements, not beyond), so ``NAN_ORDER_FREE``
cases compare the NaN positions' inverse indices as a set."""

from __future__ import annotations

import numpy as np
import torch

NAN = float("nan")


def _ints(high, *shape, seed=0, dtype=torch.int64):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, high, shape)).to(dtype)


def _runs(*shape, seed=0):
    """Floats with runs of equal values, NaN (never equal to the one before) and -0.0 / 0.0."""
    rng = np.random.default_rng(seed)
    x = np.repeat(rng.choice([0.0, -0.0, 1.5, NAN, -2.0], size=shape[0]), 2)[:shape[0]]
    x = np.broadcast_to(x.reshape((-1,) + (1,) * (len(shape) - 1)), shape).copy()
    return torch.from_numpy(x.astype("float32"))


def _nan_rows():
    x = torch.tensor([[5.0, NAN], [0.0, 1.0], [5.0, NAN], [0.0, 1.0], [-0.0, 1.0], [2.0, 2.0]])
    return x


UNIQUE_DIM = {
    "rows": (lambda x: torch.unique(x, dim=0, return_inverse=True, return_counts=True),
             _ints(3, 40, 3) - 1),
    "columns": (lambda x: torch.unique(x, dim=1, return_inverse=True, return_counts=True),
                _ints(2, 3, 30)),
    "last_dim_of_3d": (lambda x: torch.unique(x, dim=-1, return_inverse=True,
                                              return_counts=True), _ints(2, 2, 2, 25, seed=1)),
    "middle_dim_unsorted": (lambda x: torch.unique(x, sorted=False, dim=1,
                                                   return_inverse=True), _ints(2, 2, 20, 2)),
    "one_column": (lambda x: torch.unique(x, dim=0, return_counts=True), _ints(6, 30, 1) * 3),
    "float_rows_nan_and_zero": (lambda x: torch.unique(x, dim=0, return_inverse=True,
                                                       return_counts=True), _nan_rows()),
    "uint8_rows": (lambda x: torch.unique(x, dim=0, return_inverse=True),
                   _ints(3, 20, 2, dtype=torch.uint8)),
    "bool_values_only": (lambda x: torch.unique(x, dim=0), _ints(2, 12, 3, dtype=torch.bool)),
}

UNIQUE_CONSECUTIVE = {
    "flat_ints": (lambda x: torch.unique_consecutive(x, return_inverse=True,
                                                     return_counts=True),
                  torch.sort(_ints(5, 30)).values[torch.arange(30) % 7 != 0]),
    "matrix_inverse_shape": (lambda x: torch.unique_consecutive(x, return_inverse=True,
                                                                return_counts=True),
                             _ints(2, 4, 6)),
    "floats_nan_zero": (lambda x: torch.unique_consecutive(x, return_inverse=True,
                                                           return_counts=True), _runs(24)),
    "rows": (lambda x: torch.unique_consecutive(x, dim=0, return_inverse=True,
                                                return_counts=True), _runs(16, 3)),
    "columns": (lambda x: torch.unique_consecutive(x, dim=1, return_inverse=True,
                                                   return_counts=True),
                torch.repeat_interleave(_ints(2, 2, 10), 2, dim=1)),
    "values_only": (lambda x: torch.unique_consecutive(x), _ints(2, 25, dtype=torch.int32)),
    "single_element": (lambda x: torch.unique_consecutive(x, return_inverse=True,
                                                          return_counts=True),
                       torch.tensor([7], dtype=torch.int64)),
    "float64_nan_runs": (lambda x: torch.unique_consecutive(x, return_inverse=True,
                                                            return_counts=True),
                         _runs(30, seed=2).double()),
    "bool_matrix": (lambda x: torch.unique_consecutive(x, return_inverse=True,
                                                       return_counts=True),
                    _ints(2, 3, 9, seed=3, dtype=torch.bool)),
}

UNIQUE_NAN = {
    "few_nans_exact": (lambda x: torch.unique(x, return_inverse=True, return_counts=True),
                       torch.tensor([NAN, 1.0, NAN, 2.0, 1.0, NAN, -0.0, 0.0, 2.0])),
    "many_nans": (lambda x: torch.unique(x, return_inverse=True, return_counts=True),
                  torch.where(torch.rand(200, generator=torch.Generator().manual_seed(0)) < 0.2,
                              NAN, _ints(5, 200).float())),
}
NAN_ORDER_FREE = {"many_nans"}


def torch_outputs(fn, x) -> list[np.ndarray]:
    out = fn(x)
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


def assert_matches_torch(got: list[np.ndarray], want: list[np.ndarray], x,
                         nan_order_free: bool = False) -> None:
    """Each output equal to eager's, dtype and shape included (NaN equal to NaN). With
    ``nan_order_free`` the inverse indices (the second output) of NaN positions are compared as
    a set: torch's sort assigns them in an unspecified order."""
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, g.shape, w.dtype, w.shape)
        if nan_order_free and k == 1:
            nan = np.isnan(x.numpy())
            np.testing.assert_array_equal(g[~nan], w[~nan])
            np.testing.assert_array_equal(np.sort(g[nan]), np.sort(w[nan]))
        else:
            np.testing.assert_array_equal(g, w)
