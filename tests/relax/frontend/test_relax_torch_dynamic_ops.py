"""relax.frontend.torch.from_exported_program on ops whose result shape depends on the data:
``torch.unique`` (``_unique2``: sorted values, each NaN its own, inverse indices in the input's
shape, counts; the native unique kernel), ``torch.unique(dim=)`` and
``torch.unique_consecutive`` (``frontend_common.unique_plan``, all outputs, also through
``from_fx``), ``torch.nonzero`` (``[count, ndim]``, its
count used by later ops) and ``torch.bincount`` (length from the data or minlength, weights);
built and run on the Relax VM against PyTorch eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from torch_unique_cases import (  # noqa: E402
    NAN_ORDER_FREE,
    UNIQUE_CONSECUTIVE,
    UNIQUE_DIM,
    UNIQUE_NAN,
    assert_matches_torch,
    torch_outputs,
)

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program, from_fx  # noqa: E402

from .exported_program_run import Fn  # noqa: E402
from .exported_program_run import run_exported as _run  # noqa: E402


def _ints(high, *shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, high, shape))


@pytest.mark.parametrize("part", [0, 1, 2])
def test_unique_values_inverse_counts_of_int64(part):
    text = _run(lambda x: torch.unique(x, return_inverse=True, return_counts=True)[part],
                _ints(7, 20) - 3)
    assert "call_tir" in text


def test_unique_of_a_float_matrix_inverse_keeps_its_shape():
    x = _ints(5, 4, 6).float() * 0.5
    x[0, 0] = -0.0  # equal to 0.0
    _run(lambda x: torch.unique(x, return_inverse=True)[1], x)
    _run(lambda x: torch.unique(x) * 2.0, x)


def test_nonzero_and_its_count_used_later():
    x = _ints(3, 4, 5)
    x[2] = 0  # an empty row
    _run(torch.nonzero, x)
    _run(lambda x: torch.nonzero(x).sum(0) + torch.nonzero(x).shape[0], x.float())


def test_nonzero_of_bool_and_1d():
    _run(lambda x: torch.nonzero(x > 0.5), torch.linspace(0.0, 1.0, 9))


@pytest.mark.parametrize("minlength", [0, 3, 12])
def test_bincount_length_from_the_data_or_minlength(minlength):
    text = _run(lambda x: torch.bincount(x, minlength=minlength), _ints(6, 25))
    assert "scatter_elements" in text


def test_bincount_weights_keep_their_dtype():
    _run(lambda x, w: torch.bincount(x, w), _ints(5, 16, seed=2),
         torch.linspace(-1.0, 2.0, 16))
    _run(lambda x, w: torch.bincount(x, w, 7), _ints(5, 16, seed=2),
         torch.linspace(-1.0, 2.0, 16, dtype=torch.float64))


# the plan is shared with the Relay test, which runs every case; here its Relax builder on each
# path (rows, columns, widened key, NaN, runs, a constant key)
CASES = {**{f"dim_{k}": UNIQUE_DIM[k] for k in ("rows", "columns", "float_rows_nan_and_zero",
                                                "uint8_rows")},
         **{f"consecutive_{k}": UNIQUE_CONSECUTIVE[k] for k in (
             "floats_nan_zero", "rows", "matrix_inverse_shape", "single_element",
            "float64_nan_runs")},
         **{f"nan_{k}": v for k, v in UNIQUE_NAN.items()}}


@pytest.mark.parametrize("name", list(CASES))
def test_unique_dim_consecutive_and_nan_match_eager(name):
    """All outputs of each case, through torch.export, on the native kernel (no numpy
    ``R.unique``)."""
    fn, x = CASES[name]
    want = torch_outputs(fn, x)
    mod = from_exported_program(torch.export.export(Fn(fn), (x,)))
    text = mod.script()
    assert "call_tir" in text and "R.unique" not in text
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x.numpy()))
    got = [got.numpy()] if hasattr(got, "numpy") else [g.numpy() for g in got]
    assert_matches_torch(got, want, x, name.removeprefix("nan_") in NAN_ORDER_FREE)


class _UniqueRowsAndRuns(torch.nn.Module):
    def forward(self, x):
        a = torch.unique(x, dim=0, return_inverse=True, return_counts=True)
        b = torch.unique_consecutive(x, dim=0, return_inverse=True, return_counts=True)
        return a[0], a[1], a[2], b[0], b[1], b[2]


def test_unique_dim_and_consecutive_through_from_fx():
    x = torch.tensor([[3, 1], [1, 2], [3, 1], [1, 2], [1, 2]])
    model = _UniqueRowsAndRuns()
    mod = from_fx(torch.fx.symbolic_trace(model), [([5, 2], "int64")])
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = [g.numpy() for g in vm["main"](tvm.nd.array(x.numpy()))]
    assert_matches_torch(got, torch_outputs(model, x), x)
