"""Models exported the way ``torch.onnx.export`` writes them with a dynamic batch, whose sizes
are computed from ``x.shape`` (a Range step, Pad widths, TopK's K, a Slice step, OneHot's
depth, Resize's sizes), through both ONNX importers: compiled once, run at batches 1, 3 and 7
against PyTorch eager."""

from __future__ import annotations

import io
import logging
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="exporting needs the `torch` extra")
onnx = pytest.importorskip("onnx", reason="the ONNX importers need the `onnx` package")

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.runtime import vm as runtime_vm  # noqa: E402

F = torch.nn.functional


class RangeStep(torch.nn.Module):
    def forward(self, x):
        return torch.arange(0, 20, x.shape[0]).to(x.dtype) + x.sum()


class PadWidths(torch.nn.Module):
    def forward(self, x):  # (a negative width at batch 1 crops)
        return F.pad(x, (x.shape[0] - 2, 1, 0, 0), value=-1.0)


class TopK(torch.nn.Module):
    def forward(self, x):
        return torch.topk(x, x.shape[0], dim=1)


class SliceStep(torch.nn.Module):
    def forward(self, x):
        return x[:, :: x.shape[0]]


class OneHotDepth(torch.nn.Module):
    def forward(self, x):
        return F.one_hot(x.argmax(1), num_classes=x.shape[0] + 8).to(x.dtype)


class ResizeSizes(torch.nn.Module):
    def forward(self, x):
        return F.interpolate(x, size=(x.shape[2] * 2, x.shape[3] + 1), mode="bilinear")


CASES = [RangeStep, PadWidths, TopK, SliceStep, OneHotDepth, ResizeSizes]


def _export(model, x):
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    buf = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), buf, dynamo=False, opset_version=18, input_names=["x"],
                          dynamic_axes={"x": {0: "N"}})
    return onnx.load_from_string(buf.getvalue())


def _relay(om):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, params = relay.frontend.from_onnx(om)
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm", params=params),
                                       tvm.cpu())
    return lambda x: vm.invoke("main", tvm.nd.array(x))


def _relax(om):
    vm = relax.VirtualMachine(relax.build(relax.frontend.onnx.from_onnx(om), "llvm"), tvm.cpu())
    return lambda x: vm["main"](tvm.nd.array(x))


@pytest.mark.parametrize("dialect", ["relay", "relax"])
@pytest.mark.parametrize("ctor", CASES, ids=[c.__name__ for c in CASES])
def test_exported_sizes_from_the_batch(ctor, dialect):
    model = ctor().eval()
    rest = (2, 4, 5) if ctor is ResizeSizes else (8,)
    run = (_relay if dialect == "relay" else _relax)(_export(model, torch.randn(3, *rest)))
    for n in (1, 3, 7):
        x = np.random.default_rng(n).standard_normal((n, *rest)).astype("float32")
        with torch.no_grad():
            want = model(torch.from_numpy(x))
        want = [w.numpy() for w in (want if isinstance(want, tuple) else (want,))]
        got = run(x)
        got = [got] if isinstance(got, tvm.nd.NDArray) else list(got)
        for g, w in zip(got, want, strict=True):
            assert g.numpy().shape == w.shape, (n, g.numpy().shape, w.shape)
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5)
