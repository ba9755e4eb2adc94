"""Import an ONNX model with a dynamic batch axis into Relax, build it once, and run it at
several batch sizes against ONNX Runtime.

A small CNN with a self-attention head is built in PyTorch, exported to ONNX with
``dynamic_axes={"image": {0: "batch"}}``, imported with ``relax.frontend.onnx.from_onnx`` (the
batch axis becomes the symbolic ``tir`` var ``batch``), compiled with ``relax.build`` and run on
the Relax VM. The same model also goes through ``torch.export`` with a dynamic ``Dim`` and
``relax.frontend.torch.from_exported_program``. Results must match to 1e-4.

    pip install -e '.[onnx,torch]'
    python examples/relax_onnx_import.py
"""

from __future__ import annotations

import io
import sys
import time
import warnings

import numpy as np

import minitvm as tvm
from minitvm import relax


def build_torch_model():
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.GELU())
            self.q, self.k, self.v = (nn.Linear(32, 32) for _ in range(3))
            self.norm = nn.LayerNorm(32)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            f = self.features(x)                       # (N, 32, 8, 8)
            t = f.flatten(2).transpose(1, 2)           # (N, 64, 32): shape ops stay symbolic
            a = torch.softmax(self.q(t) @ self.k(t).transpose(1, 2) / 32**0.5, dim=-1)
            t = self.norm(t + a @ self.v(t))
            return self.head(t.mean(dim=1))

    torch.manual_seed(0)
    return Net().eval()


def export_onnx(model, example) -> bytes:
    import torch

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), buf, input_names=["image"], output_names=["logits"],
                          opset_version=17, dynamo=False,
                          dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    return buf.getvalue()


def run(vm, x, unwrap) -> np.ndarray:
    out = vm["main"](x)
    return (out[0] if unwrap else out).numpy()


def main() -> int:
    try:
        import onnx  # noqa: F401
        import torch
    except ImportError as e:
        print(f"this example needs onnx and torch: {e}")
        return 0
    model = build_torch_model()
    example = torch.randn(2, 3, 16, 16)
    mods = {"onnx": relax.frontend.onnx.from_onnx(export_onnx(model, example))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, (example,), dynamic_shapes={
            "x": {0: torch.export.Dim("batch", min=1, max=64)}})
    mods["torch.export"] = relax.frontend.torch.from_exported_program(ep)
    print("imported; main's signature:")
    worst = 0.0
    for name, mod in mods.items():
        sig = next(line for line in mod.script().splitlines() if "def main" in line)
        print(f"  [{name}] {sig.strip()}")
        start = time.perf_counter()
        vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
        print(f"  [{name}] relax.build: {time.perf_counter() - start:.2f} s (one build, any batch)")
        for batch in (1, 4):
            x = np.random.RandomState(batch).randn(batch, 3, 16, 16).astype("float32")
            with torch.no_grad():
                ref = model(torch.from_numpy(x)).numpy()
            got = run(vm, x, unwrap=name == "torch.export")
            err = float(np.abs(got - ref).max())
            worst = max(worst, err)
            print(f"  [{name}] batch {batch}: output {got.shape}, max |diff| vs PyTorch {err:.2e}")
    ok = worst <= 1e-4
    print("OK" if ok else f"MISMATCH (max difference {worst:.2e} > 1e-4)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
