"""relay.frontend.from_pytorch (TorchScript) and from_exported_program (whose range checks of
the data-dependent sizes are dropped) on ops whose result shape depends on the data:
``torch.unique`` (``_unique2``: Relay's native ``unique`` sliced to the count; sorted values,
each NaN its own, inverse in the input's shape, counts), ``torch.unique(dim=)`` and
``torch.unique_consecutive`` (``frontend_common.unique_plan``), ``torch.nonzero`` (``argwhere``) and ``torch.bincount``
(length from the data or minlength, weights), run on the Relay VM
against eager, dtype and shape included."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn  # noqa: E402
from torch_unique_cases import (  # noqa: E402
    NAN_ORDER_FREE,
    UNIQUE_CONSECUTIVE,
    UNIQUE_DIM,
    UNIQUE_NAN,
    assert_matches_torch,
    torch_outputs,
)

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend.pytorch import from_exported_program  # noqa: E402


def _ints(high, *shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, high, shape))


def _check_vm(fn, x) -> str:
    """Import ``fn`` on ``x`` traced and exported, run each on the Relay VM and compare with
    eager exactly; returns the traced import's text."""
    model = Fn(fn)
    want = model(x).numpy()
    traced = torch.jit.trace(model, (x,), check_trace=False)
    mods = [relay.frontend.from_pytorch(traced, [("i0", (tuple(x.shape), str(x.dtype)[6:]))]),
            from_exported_program(torch.export.export(model, (x,)))]
    for mod, params in mods:
        with tvm.transform.PassContext(opt_level=3):
            run = relay.create_executor("vm", mod=mod, target="llvm", params=params).evaluate()
        got = run(x.numpy())
        got = (got if hasattr(got, "numpy") else got[0]).numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    return mods[0][0].astext()


@pytest.mark.parametrize("part", [0, 1, 2])
def test_unique_values_inverse_counts(part):
    text = _check_vm(lambda x: torch.unique(x, return_inverse=True, return_counts=True)[part],
                     _ints(5, 4, 6) - 2)
    assert "unique(" in text


def test_unique_of_floats():
    _check_vm(lambda x: torch.unique(x, return_counts=True)[1], _ints(4, 30).float() * 0.25)
    _check_vm(lambda x: torch.unique(x * 2.0), _ints(4, 3, 5).float())


def test_nonzero():
    x = _ints(3, 4, 5)
    x[1] = 0
    assert "argwhere(" in _check_vm(torch.nonzero, x)
    _check_vm(lambda x: torch.nonzero(x > 0.5), torch.linspace(0.0, 1.0, 9))


@pytest.mark.parametrize("minlength", [0, 3, 12])
def test_bincount_length_from_the_data_or_minlength(minlength):
    text = _check_vm(lambda x: torch.bincount(x, minlength=minlength), _ints(6, 25))
    assert "scatter_elements(" in text


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_bincount_weights_keep_their_dtype(dtype):
    _check_vm(lambda x: torch.bincount(x, (x.to(dtype) - 1.5) * 0.25), _ints(5, 16, seed=2))


def _imports(fn, x):
    model = Fn(fn)
    traced = torch.jit.trace(model, (x,), check_trace=False)
    return [relay.frontend.from_pytorch(traced, [("i0", (tuple(x.shape), str(x.dtype)[6:]))]),
            from_exported_program(torch.export.export(model, (x,)))]


CASES = {**{f"dim_{k}": v for k, v in UNIQUE_DIM.items()},
         **{f"consecutive_{k}": v for k, v in UNIQUE_CONSECUTIVE.items()},
         **{f"nan_{k}": v for k, v in UNIQUE_NAN.items()}}


@pytest.mark.parametrize("name", list(CASES))
def test_unique_dim_consecutive_and_nan_match_eager(name):
    """All outputs of each case, traced and exported, in a strict build (no numpy kernel)."""
    fn, x = CASES[name]
    want = torch_outputs(fn, x)
    for mod, params in _imports(fn, x):
        assert "unique(" in mod.astext() or x.numel() == 1  # one element: folded
        with tvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.strict_native": True}):
            run = relay.create_executor("vm", mod=mod, target="llvm", params=params).evaluate()
        got = run(x.numpy())
        got = [got.numpy()] if hasattr(got, "numpy") else [g.numpy() for g in got]
        assert_matches_torch(got, want, x, name.removeprefix("nan_") in NAN_ORDER_FREE)



def test_bincount_scatters_in_one_symbolic_kernel_at_every_length():
    """The counts' length comes from the data: the one-pass scatter into it is one symbolic
    kernel (lowered through its rule), right at two lengths without a specialization (the
    length itself, a value-dependent shape, is still specialized by design)."""
    from minitvm.relay.backend.vm.symbolic import SymbolicKernel

    model = Fn(lambda x: torch.bincount(x))
    x = _ints(6, 25)
    traced = torch.jit.trace(model, (x,), check_trace=False)
    mod, params = relay.frontend.from_pytorch(traced, [("i0", ((25,), "int64"))])
    exe = relay.vm.compile(mod, target="llvm", params=params)
    scatters = [k.run for k in exe.kernels if "scatter" in k.name]
    assert scatters and all(isinstance(r, SymbolicKernel) for r in scatters)
    vm = tvm.runtime.vm.VirtualMachine(exe, tvm.cpu())
    for high in (6, 11):  # lengths 6 and 11
        xv = _ints(high, 25, seed=high)
        np.testing.assert_array_equal(vm.run(xv.numpy()).numpy(), torch.bincount(xv).numpy())
    assert all(r._fallback is None for r in scatters)
