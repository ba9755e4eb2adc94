"""relax.frontend.torch.from_exported_program on torch's special functions composed by
``frontend_common.torch_special``: ``special.log_ndtr`` (converted whole, and as torch.export
decomposes it: ``special_erfcx``, ``erfc`` and a ``log1p`` of values below float32's
epsilon), ``special.ndtr`` (whole; against ``math.erfc`` down its left tail),
``special.ndtri``, ``i0`` and ``frexp``; run on the Relax VM and compared with eager on random
and edge inputs, to 2e-6 relative (measured max 5.2e-7), frexp bit-exact."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from torch_special_cases import EDGES, ndtr_exact, seeded  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402

from .exported_program_run import Fn  # noqa: E402


def _run(fn, x, decompose: bool):
    """Eager's outputs and the VM's (as numpy arrays, in order)."""
    model = Fn(fn).eval()
    with torch.no_grad():
        ref = model(x)
    ref = [r.numpy() for r in (ref if isinstance(ref, tuple) else (ref,))]
    mod = from_exported_program(torch.export.export(model, (x,)),
                                run_ep_decomposition=decompose, unwrap_unit_return_tuple=True)
    out = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())["main"](
        tvm.nd.array(x.numpy()))
    return ref, [o.numpy() for o in ((out,) if hasattr(out, "numpy") else out)]


def _check(fn, x, decompose: bool):
    (ref,), (out,) = _run(fn, x, decompose)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=2e-6, atol=3e-45, equal_nan=True)


@pytest.mark.parametrize("decompose", [True, False], ids=["decomposed", "whole"])
def test_log_ndtr_both_tails(decompose):
    x = torch.cat([seeded(3.0), torch.linspace(-40, 10, 301), torch.tensor(EDGES)])
    _check(torch.special.log_ndtr, x, decompose)


def test_ndtr_left_tail_whole():
    """Converted whole: float32 precision against ``math.erfc`` down the left tail
    (torch's kernel, like torch.export's decomposition, is ``(1 + erf(x / sqrt(2))) / 2``,
    0 below about -5.4 in float32: within its absolute error of that everywhere)."""
    x = torch.cat([seeded(3.0), torch.linspace(-40, 10, 301), torch.tensor(EDGES)])
    (ref,), (out,) = _run(torch.special.ndtr, x, False)
    exact = ndtr_exact(x)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_allclose(out, exact, rtol=2e-6, atol=3e-45, equal_nan=True)
    np.testing.assert_allclose(out, ref, rtol=0, atol=2e-7, equal_nan=True)
    assert out[np.nanargmin(np.abs(x.numpy() + 7.0))] > 1e-13  # eager's float32 gives 0 here


def test_ndtri_near_0_and_1():
    p = torch.cat([torch.from_numpy(np.random.default_rng(1).random(400).astype("float32")),
                   torch.logspace(-38, -1, 80), 1 - torch.logspace(-7, -1, 60),
                   torch.tensor([0.0, 1.0, -0.1, 1.1, 0.5, 0.02425, 1e-45, float("nan")])])
    _check(torch.special.ndtri, p, True)


def test_i0_series_asymptotic_and_overflow():
    x = torch.cat([seeded(20.0), torch.linspace(-95, 95, 381),
                   torch.tensor([0.0, 12.0, -12.0, float("inf"), float("nan")])])
    _check(torch.special.i0, x, True)
    _check(torch.i0, torch.arange(-20, 21), True)


def test_log1p_of_tiny_values():
    _check(torch.log1p, torch.tensor([1e-10, -3e-8, 2e-7, -0.5, 3.0, 0.0, float("inf"), -1.0]),
           True)


def test_frexp_exact():
    powers = torch.exp2(torch.arange(-149.0, 128.0))
    x = torch.cat([seeded(1e3), powers, -0.75 * powers,
                   torch.tensor([0.0, -0.0, 1e-45, 3.4e38, float("inf"), float("-inf"),
                                 float("nan")])])
    ref, out = _run(torch.frexp, x, True)
    assert [o.dtype for o in out] == [r.dtype for r in ref] == [np.float32, np.int32]
    for o, r in zip(out, ref, strict=True):
        np.testing.assert_array_equal(o, r)
