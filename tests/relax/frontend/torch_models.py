"""Torch models shared by the Relax importer tests: a BERT-style attention layer and a helper
giving BatchNorm layers non-trivial running statistics (so folding them is exercised)."""

import torch

nn = torch.nn


class Attention(nn.Module):
    """A BERT-style encoder layer: multi-head self-attention (separate q/k/v projections),
    residual + LayerNorm, GELU feed-forward, residual + LayerNorm."""

    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.proj = nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 32), nn.GELU(), nn.Linear(32, d))

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = (p(x).reshape(b, t, self.heads, hd).transpose(1, 2)
                   for p in (self.q, self.k, self.v))
        a = torch.softmax(q @ k.transpose(-2, -1) / hd**0.5, dim=-1)
        y = (a @ v).transpose(1, 2).reshape(b, t, d)
        x = self.ln1(x + self.proj(y))
        return self.ln2(x + self.ff(x))


def randomize_bn(model):
    gen = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.rand(n, generator=gen) * 0.2 - 0.1)
            m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
    return model.eval()
