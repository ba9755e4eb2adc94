"""Relax grid sampling gathers whole pixel rows (``relax.frontend.spatial.grid_sample_2d``):
the image is read as (N, H*W, C) and each tap's index and weight belong to a sample position,
not to each of its channels (RT-DETR's deformable attention: 0.96-0.99 -> 0.73-0.76 ms, below
ONNX Runtime's 0.82). Numerics against torch through torch.export and ONNX, every mode the
decomposition takes, a symbolic batch; the gathers in the IR read rows. Bicubic, reflection
padding and 3-D inputs call the shared native kernel (``topi.grid_sample``) instead."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the Relax PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402


class Sample(torch.nn.Module):
    def __init__(self, mode, padding, align):
        super().__init__()
        self.args = dict(mode=mode, padding_mode=padding, align_corners=align)

    def forward(self, x, grid):
        return F.grid_sample(x, grid, **self.args)


def _inputs(n=2, c=5, h=7, w=9, ho=4, wo=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, h, w, generator=g)
    grid = torch.rand(n, ho, wo, 2, generator=g) * 2.4 - 1.2  # some samples outside
    return x, grid


def _run(mod, *arrays):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(a) for a in arrays])
    return (out[0] if isinstance(out, tuple) else out).numpy()  # (torch.export: a tuple)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border"])
@pytest.mark.parametrize("align", [False, True])
def test_matches_torch(mode, padding, align):
    model = Sample(mode, padding, align).eval()
    x, grid = _inputs()
    mod = from_exported_program(torch.export.export(model, (x, grid)))
    got = _run(mod, x.numpy(), grid.numpy())
    np.testing.assert_allclose(got, model(x, grid).numpy(), rtol=1e-5, atol=1e-5)


def test_gathers_read_pixel_rows():
    x, grid = _inputs()
    mod = from_exported_program(torch.export.export(Sample("bilinear", "zeros", False),
                                                    (x, grid)))
    text = mod.script()
    # four taps, each a gather of whole rows along the pixel axis of (N, H*W, C)
    assert text.count("R.gather_elements(") == 4
    assert text.count("axis=1") >= 4
    assert "R.Tensor((2, 63, 5)" in text


def test_symbolic_batch_through_onnx():
    onnx = pytest.importorskip("onnx", reason="the ONNX path needs `onnx`")
    import io

    model = Sample("bilinear", "border", True).eval()
    x, grid = _inputs(n=2)
    buf = io.BytesIO()
    torch.onnx.export(model, (x, grid), buf, dynamo=False, opset_version=17,
                      input_names=["x", "grid"], dynamic_axes={"x": {0: "b"}, "grid": {0: "b"}})
    mod = relax.frontend.onnx.from_onnx(onnx.load_from_string(buf.getvalue()))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for n in (1, 3):
        x, grid = _inputs(n=n, seed=n)
        got = vm["main"](tvm.nd.array(x.numpy()), tvm.nd.array(grid.numpy())).numpy()
        np.testing.assert_allclose(got, model(x, grid).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,padding", [("bicubic", "zeros"), ("bicubic", "border"),
                                          ("bicubic", "reflection"), ("bilinear", "reflection"),
                                          ("nearest", "reflection")])
@pytest.mark.parametrize("align", [False, True])
def test_kernel_modes_match_torch(mode, padding, align):
    """What the row decomposition does not take is one call of the shared native kernel."""
    model = Sample(mode, padding, align).eval()
    x, grid = _inputs()
    mod = from_exported_program(torch.export.export(model, (x, grid)))
    assert "grid_sample" in [gv.name_hint for gv in mod.functions]
    got = _run(mod, x.numpy(), grid.numpy())
    np.testing.assert_allclose(got, model(x, grid).numpy(), rtol=1e-4, atol=3e-5)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_volumetric_matches_torch(mode, padding):
    model = Sample(mode, padding, False).eval()
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, 4, 5, 6, generator=g)
    grid = torch.rand(2, 3, 2, 4, 3, generator=g) * 2.4 - 1.2
    mod = from_exported_program(torch.export.export(model, (x, grid)))
    got = _run(mod, x.numpy(), grid.numpy())
    np.testing.assert_allclose(got, model(x, grid).numpy(), rtol=1e-5, atol=1e-5)
