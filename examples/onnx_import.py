"""Import an ONNX model into Relay, compile it, and check it against ONNX Runtime.

A small convolutional network with a transformer-style head is built in PyTorch, exported to
ONNX, imported with ``relay.frontend.from_onnx``, compiled with ``relay.build`` at opt_level 3
and run on the graph executor; the result must match ONNX Runtime (or PyTorch when ONNX Runtime
is not installed) to 1e-4.

    pip install -e '.[onnx,torch]'
    python examples/onnx_import.py
"""

from __future__ import annotations

import io
import sys
import warnings

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def build_torch_model():
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1, groups=2), nn.Hardswish())
            self.norm = nn.LayerNorm(32)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            f = self.features(x)                       # (N, 32, 16, 16)
            tokens = f.flatten(2).transpose(1, 2)      # (N, 256, 32): shape ops fold away
            attn = torch.softmax(tokens @ tokens.transpose(1, 2) / 32 ** 0.5, dim=-1)
            pooled = self.norm(attn @ tokens).mean(dim=1)
            return self.head(nn.functional.gelu(pooled))

    torch.manual_seed(0)
    return Net().eval()


def main() -> int:
    try:
        import onnx
        import torch
    except ImportError:
        print("this example needs onnx and torch: pip install -e '.[onnx,torch]'")
        return 0
    model = build_torch_model()
    x = torch.randn(2, 3, 32, 32)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), buf, input_names=["image"], opset_version=17,
                          dynamo=False)
    onnx_model = onnx.load_from_string(buf.getvalue())

    mod, params = relay.frontend.from_onnx(onnx_model, shape={"image": (2, 3, 32, 32)})
    print("imported:", mod["main"].astext().splitlines()[1][:100], "...")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    gm.set_input("image", x.numpy())
    gm.run()
    ours = gm.get_output(0).numpy()

    try:
        import onnxruntime as ort

        sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
        ref, source = sess.run(None, {"image": x.numpy()})[0], "onnxruntime"
    except ImportError:
        with torch.no_grad():
            ref, source = model(x).numpy(), "pytorch"
    err = float(np.abs(ours - ref).max())
    print(f"output {ours.shape}; max |minitvm - {source}| = {err:.2e}")
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
