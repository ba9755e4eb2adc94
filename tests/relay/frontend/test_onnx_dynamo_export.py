"""The ONNX file ``torch.onnx.export`` writes without options (the dynamo exporter, torch's
default since 2.9), through both ONNX importers: a conv net, an attention block on
``F.scaled_dot_product_attention`` and an LSTM, each compared with PyTorch eager."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="exporting needs the `torch` extra")
pytest.importorskip("onnx", reason="the ONNX importers need the `onnx` package")
pytest.importorskip("onnxscript", reason="torch's dynamo exporter needs onnxscript (onnx extra)")
from frontend_models import build_and_run  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402

F = torch.nn.functional


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(y.mean((2, 3)))


class Attention(torch.nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads, self.qkv, self.out = heads, torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).split(d, -1)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + F.gelu(self.out(y.transpose(1, 2).reshape(b, t, d)))


class Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(6, 12, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0][:, -1]


CASES = [(ConvNet, (2, 3, 16, 16)), (Attention, (2, 10, 32)), (Recurrent, (3, 7, 6))]


def _export(model, x):
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        return torch.onnx.export(model, (x,), dynamo=True, input_names=["x"]).model_proto


@pytest.mark.parametrize("ctor, shape", CASES, ids=[c[0].__name__ for c in CASES])
def test_dynamo_export_imports_in_both_dialects(ctor, shape):
    torch.manual_seed(0)
    model = ctor().eval()
    x = torch.randn(shape)
    with torch.no_grad():
        want = model(x).numpy()
    om = _export(model, x)
    assert om.opset_import[0].version >= 18
    mod, params = relay.frontend.from_onnx(om, {"x": shape})
    np.testing.assert_allclose(build_and_run(mod, params, {"x": x.numpy()})[0], want,
                               rtol=1e-4, atol=1e-5)
    vm = relax.VirtualMachine(relax.build(relax.frontend.onnx.from_onnx(om), "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.nd.array(x.numpy())).numpy(), want, rtol=1e-4,
                               atol=1e-5)
