"""``torch.erfinv`` (``frontend_common.torch_special.erfinv``: ``ndtri((1 + y) / 2) / sqrt 2``
in float64, the Maclaurin series below 1e-4) through from_pytorch, the Relay torch.export
importer and the Relax one (OpNotImplemented in all three before: Gaussian-copula and flow
layers, a truncated-normal or NF4 quantile table built in the graph). Built native, compared
with eager on random values, both ends, tiny values, +-1 (+-inf), outside [-1, 1] (NaN)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn, build_run_native  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.relay.frontend.pytorch import from_exported_program  # noqa: E402


def _arguments():
    rng = np.random.default_rng(0)
    edge = 1 - torch.logspace(-7, -1, 30)
    return torch.cat([torch.from_numpy(rng.uniform(-1, 1, 300).astype("float32")), edge, -edge,
                      torch.logspace(-38, -2, 40), -torch.logspace(-38, -2, 40),
                      torch.tensor([0.0, -0.0, 1.0, -1.0, 1.5, -2.0, 1e-4, -1e-4, float("nan")])])


def test_erfinv_all_importers():
    from minitvm.relax.frontend.torch import from_exported_program as relax_import

    x = _arguments()
    model = Fn(torch.erfinv).eval()
    with torch.no_grad():
        ref = model(x).numpy()
        traced = torch.jit.trace(model, (x,))
        ep = torch.export.export(model, (x,))
    mod, params = relay.frontend.from_pytorch(traced, [("i0", (tuple(x.shape), "float32"))])
    emod, eparams = from_exported_program(ep)
    ex = relax.build(relax_import(ep), "llvm")
    assert ex.numpy_calls() == {}
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x.numpy()))
    outs = [build_run_native(mod, params, ["i0"], (x,)),
            build_run_native(emod, eparams, [p.name_hint for p in emod["main"].params][:1],
                             (x,)),
            (got if hasattr(got, "numpy") else got[0]).numpy()]
    for out in outs:
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=0, equal_nan=True)
