"""relay.frontend.from_onnx on a graph whose shapes depend on an input's values (nn.EmbeddingBag
with offsets, exported as a Loop of Slices from the offsets): Relay's graphs are static, so the
import asks for the input as a constant, naming it (NeedsConstantInput), rather than failing
with an anonymous "must be a constant"; bound with const_inputs, the model matches PyTorch."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
torch = pytest.importorskip("torch", reason="the model comes from PyTorch's exporter")

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.relay.frontend.onnx import NeedsConstantInput  # noqa: E402


class _Bags(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.bag = torch.nn.EmbeddingBag(30, 4, mode="sum")

    def forward(self, ids, offsets):
        return self.bag(ids, offsets) * 2.0


def _export():
    ids, offsets = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6]), torch.tensor([0, 3, 5])
    model = _Bags().eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids, offsets), buf, dynamo=False, opset_version=17,
                          input_names=["ids", "offsets"])
    with torch.no_grad():
        ref = model(ids, offsets).numpy()
    return onnx.load_from_string(buf.getvalue()), ids.numpy(), offsets.numpy(), ref


def test_offsets_are_named_as_the_input_to_bind():
    model, ids, offsets, _ = _export()
    with pytest.raises(NeedsConstantInput, match="graph input.*'offsets'.*const_inputs") as e:
        relay.frontend.from_onnx(model, {"ids": ids.shape, "offsets": offsets.shape})
    assert e.value.input_name == "offsets"


def test_bound_offsets_match_torch():
    model, ids, offsets, ref = _export()
    mod, params = relay.frontend.from_onnx(model, {"ids": ids.shape},
                                           const_inputs={"offsets": offsets})
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    gm.set_input("ids", ids)
    gm.run()
    np.testing.assert_allclose(gm.get_output(0).numpy(), ref, rtol=1e-5, atol=1e-6)


def test_onnx_backend_binds_it_itself():
    """The ONNX backend (which has the input values) re-imports with the named input bound."""
    from minitvm.relay.frontend import onnx_backend

    model, ids, offsets, ref = _export()
    out = onnx_backend.run_model(model, [ids, offsets])
    np.testing.assert_allclose(out[0], ref, rtol=1e-5, atol=1e-6)
