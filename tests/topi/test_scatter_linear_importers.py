"""Every scatter the importers emit, large enough for the one-pass stage, in both dialects:
ONNX ScatterElements (reduction none / add / mul / max / min) and ScatterND (none / add / mul /
max / min) against ONNX Runtime through ``relay.frontend.from_onnx`` and
``relax.frontend.onnx.from_onnx``; torch's scatter / scatter_add / scatter_reduce / index_put /
index_add against eager through ``torch.export`` into Relax and Relay. The indices repeat
targets and count from the end where the op allows it."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, relay
from minitvm.contrib import graph_executor
from minitvm.tir.function import PrimFunc

onnx = pytest.importorskip("onnx", reason="the ONNX cases need the onnx extra")
ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the reference")
torch = pytest.importorskip("torch", reason="the torch cases need the torch extra")

from onnx import TensorProto, helper  # noqa: E402

RNG = np.random.default_rng(5)


def _relay(mod, params, feed):
    with minitvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    for k, v in feed.items():
        m.set_input(k, v)
    m.run()
    return m.get_output(0).numpy()


def _relax(mod, arrays):
    """Run ``mod``'s main on ``arrays``; its scatters are legalized into the one pass."""
    legal = relax.transform.LegalizeOps()(mod)
    assert any(isinstance(f, PrimFunc) and "T_scatter_linear" in f.script()
               for f in legal.functions.values())
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), minitvm.cpu())
    out = vm["main"](*map(minitvm.nd.array, arrays))
    return out.numpy() if hasattr(out, "numpy") else out[0].numpy()


def _onnx_model(op: str, feed: dict, opset: int, **attrs):
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in feed.items()]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, feed["x"].shape)
    graph = helper.make_graph([helper.make_node(op, list(feed), ["y"], **attrs)], "g", ins,
                              [out])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check_onnx(model, feed):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"]).run(None, feed)[0]
    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feed.items()})
    np.testing.assert_allclose(_relay(mod, params, feed), want, rtol=1e-5, atol=1e-6)
    got = _relax(relax.frontend.onnx.from_onnx(model), list(feed.values()))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_onnx_scatter_elements(reduction):
    x = RNG.standard_normal((40, 24)).astype("float32")
    idx = RNG.integers(-40, 40, (60, 24)).astype("int64")  # repeats: ORT's order decides
    upd = RNG.standard_normal((60, 24)).astype("float32")
    if reduction == "none":  # (ORT's CPU kernel writes in order: the last repeat wins)
        idx[1::2] = idx[::2]
    feed = {"x": x, "i": idx, "u": upd}
    _check_onnx(_onnx_model("ScatterElements", feed, 18, axis=0, reduction=reduction), feed)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_onnx_scatter_nd(reduction):
    x = RNG.standard_normal((100, 16)).astype("float32")
    idx = RNG.integers(-100, 100, (150, 1)).astype("int64")
    upd = RNG.standard_normal((150, 16)).astype("float32")
    if reduction == "none":
        idx = np.arange(150).reshape(150, 1) % 100 - 50  # distinct targets (ONNX's rule)
    feed = {"x": x, "i": idx, "u": upd}
    _check_onnx(_onnx_model("ScatterND", feed, 18, reduction=reduction), feed)


class _Scatter(torch.nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def forward(self, x, i, u):
        k = self.kind
        if k == "scatter":
            return x.scatter(0, i, u)
        if k == "scatter_add":
            return x.scatter_add(0, i, u)
        if k in ("sum", "prod", "amax", "amin", "mean"):
            return x.scatter_reduce(0, i, u, k, include_self=k != "mean")
        if k == "index_add":
            return x.index_add(0, i[:, 0], u)
        if k == "index_put":
            return x.index_put((i[:, 0],), u, accumulate=False)
        return x.index_put((i[:, 0],), u, accumulate=True)


@pytest.mark.parametrize("kind", ["scatter", "scatter_add", "sum", "prod", "amax", "amin",
                                  "mean", "index_add", "index_put", "index_put_acc"])
def test_torch_export_scatters(kind):
    x = torch.randn(64, 16)
    i = torch.randint(0, 64, (200, 16))
    u = torch.randn(200, 16)
    if kind == "scatter":  # torch leaves repeated targets unspecified: one writer each
        i = torch.stack([torch.randperm(64)[:16] for _ in range(16)], 1)
        u = u[:16]
    if kind == "index_put":
        i = torch.randperm(64)[:50, None].expand(50, 16) - 32  # negative indices too
        u = u[:50]
    model = _Scatter(kind).eval()
    with torch.no_grad():
        want = model(x, i, u).numpy()
        ep = torch.export.export(model, (x, i, u))
    arrays = [t.numpy() for t in (x, i, u)]
    from minitvm.relax.frontend.torch import from_exported_program as to_relax
    from minitvm.relay.frontend.pytorch import from_exported_program as to_relay

    np.testing.assert_allclose(_relax(to_relax(ep), arrays), want, rtol=1e-5, atol=1e-5)
    mod, params = to_relay(ep)
    names = [p.name_hint for p in mod["main"].params]
    np.testing.assert_allclose(_relay(mod, params, dict(zip(names, arrays, strict=False))),
                               want, rtol=1e-5, atol=1e-5)
