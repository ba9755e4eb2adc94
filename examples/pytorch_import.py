"""PyTorch into minitvm, two ways: ``relay.frontend.from_pytorch`` on a traced module, and
``torch.compile(model, backend="minitvm")``; both are checked against eager PyTorch.

    pip install -e '.[torch]'
    python examples/pytorch_import.py
"""

from __future__ import annotations

import sys

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def build_model():
    import torch
    from torch import nn

    class Block(nn.Module):
        """A pre-norm transformer block."""

        def __init__(self, dim=32, heads=4):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
            q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
                       for t in (q, k, v))
            att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, s, d))
            return x + self.mlp(self.ln2(x))

    torch.manual_seed(0)
    return Block().eval()


def main() -> int:
    try:
        import torch
    except ImportError:
        print("this example needs torch: pip install -e '.[torch]'")
        return 0
    model = build_model()
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        ref = model(x).numpy()

    # 1. TorchScript -> Relay -> relay.build
    traced = torch.jit.trace(model, (x,))
    mod, params = relay.frontend.from_pytorch(traced, [("x", (2, 10, 32))])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    gm.set_input("x", x.numpy())
    gm.run()
    ours = gm.get_output(0).numpy()
    print(f"from_pytorch:  max |diff| = {np.abs(ours - ref).max():.2e}")
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4)

    # 2. torch.compile with the minitvm Dynamo backend
    compiled = torch.compile(model, backend="minitvm")
    with torch.no_grad():
        out = compiled(x).numpy()
    print(f"torch.compile: max |diff| = {np.abs(out - ref).max():.2e}")
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
