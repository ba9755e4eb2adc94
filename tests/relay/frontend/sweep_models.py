"""Small but realistic torch models beyond ResNet/MobileNet/BERT, shared by the sweep tests of
the PyTorch importers (Relax exported-program, Relay TorchScript, torch.compile)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ViTBlock(nn.Module):
    def __init__(self, d=32, heads=4, patch=4, img=16):
        super().__init__()
        self.proj = nn.Conv2d(3, d, patch, patch)
        n = (img // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, n + 1, d))
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        cls = self.cls.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.mlp(self.ln2(x))
        return self.head(x[:, 0])


class ViTSdpa(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.h = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln(x)).chunk(3, dim=-1)
        q = q.view(b, t, self.h, d // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, d // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, d // self.h).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v)
        return x + self.o(y.transpose(1, 2).reshape(b, t, d))


class MaskedSdpa(nn.Module):
    def forward(self, q, mask):
        causal = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        return causal + F.scaled_dot_product_attention(q, q, q, attn_mask=mask)


def _mask():
    m = torch.rand(5, 5, generator=torch.Generator().manual_seed(2)) > 0.3
    m[:, 0] = True  # every query sees at least one key
    return m


class GPT2Block(nn.Module):
    def __init__(self, d=32, heads=4, t=8):
        super().__init__()
        self.h = heads
        self.ln1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.triu(torch.ones(t, t, dtype=torch.bool), 1))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.h, -1).permute(0, 2, 1, 3)
        k = k.view(b, t, self.h, -1).permute(0, 2, 1, 3)
        v = v.view(b, t, self.h, -1).permute(0, 2, 1, 3)
        att = (q @ k.transpose(-2, -1)) / (d // self.h) ** 0.5
        att = att.masked_fill(self.mask[:t, :t], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).permute(0, 2, 1, 3).contiguous().view(b, t, d)
        x = x + self.c_proj(y)
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPTCausalTriu(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.q = nn.Linear(d, d)

    def forward(self, x):
        t = x.shape[1]
        s = self.q(x) @ x.transpose(1, 2)
        m = torch.triu(torch.ones(t, t), diagonal=1).bool()
        s = s.masked_fill(m, -1e9)
        return torch.softmax(s, -1) @ x


class UNetBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(4, 8, 3, 2, 1)
        self.up = nn.ConvTranspose2d(8, 4, 2, 2)
        self.out = nn.Conv2d(8 + 4 + 4 + 4, 4, 1)

    def forward(self, x):
        d = F.relu(self.down(x))
        u = self.up(d)
        a = F.interpolate(d[:, :4], scale_factor=2, mode="nearest")
        b = F.interpolate(d[:, 4:], scale_factor=2, mode="bilinear", align_corners=True)
        c = F.interpolate(d[:, :4], size=x.shape[-2:], mode="bilinear", align_corners=False)
        return self.out(torch.cat([u, a, b, c, x], 1)[:, :20])


class LSTMModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return self.fc(y[:, -1]) + h[-1].sum(-1, keepdim=True)


class GRUModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(8, 16, batch_first=True)
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        y, h = self.rnn(x)
        return self.fc(y.mean(1)) + self.fc(h[0])


class BiGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(8, 12, num_layers=2, bidirectional=True)

    def forward(self, x):
        y, h = self.rnn(x)
        return y, h


class TextClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16)
        self.fc = nn.Linear(16, 4)

    def forward(self, idx):
        return self.fc(self.emb(idx).mean(dim=1))


class SEBlock(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, 1, 1, groups=c)
        self.bn = nn.BatchNorm2d(c)
        self.fc1 = nn.Conv2d(c, 4, 1)
        self.fc2 = nn.Conv2d(4, c, 1)
        self.pw = nn.Conv2d(c, c, 1)

    def forward(self, x):
        y = F.silu(self.bn(self.conv(x)))
        s = F.adaptive_avg_pool2d(y, 1)
        s = torch.sigmoid(self.fc2(F.silu(self.fc1(s))))
        y = y * s
        return F.hardswish(self.pw(y)) + F.hardsigmoid(x) + F.relu6(x)


class BNMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(),
                                 nn.Dropout(0.1), nn.Linear(32, 32), nn.BatchNorm1d(32),
                                 nn.LeakyReLU(0.2), nn.Linear(32, 2))

    def forward(self, x):
        return self.net(x)


class NormConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.gn = nn.GroupNorm(2, 8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.inn = nn.InstanceNorm2d(8, affine=True)
        self.elu = nn.ELU()

    def forward(self, x):
        return self.elu(self.inn(self.c2(F.relu(self.gn(self.c1(x))))))


class TensorOps(nn.Module):
    def forward(self, x, idx):
        a = torch.where(x > 0, x, x * 0.1).clamp(-1.0, 2.0)
        am = torch.argmax(a, dim=-1, keepdim=True)
        tv, ti = torch.topk(a, 3, dim=-1)
        g = torch.gather(a, 1, am)
        s = torch.index_select(a, 0, idx)
        c1, c2 = torch.chunk(a, 2, dim=1)
        p, q = torch.split(a, [3, 5], dim=1)
        r = a.permute(1, 0).flatten()
        e = g.expand(-1, 8)
        rp = p.repeat(1, 2)
        cs = torch.cumsum(a, dim=1)
        return (tv.sum() + ti.float().sum() + g.sum() + s.sum() + (c1 * c2).sum()
                + q.sum() + r.sum() + e.sum() + rp.sum() + cs.sum() + am.float().sum())


class EinsumModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 6, 5))

    def forward(self, x, y):
        a = torch.einsum("bij,bjk->bik", x, y)
        b = torch.einsum("bik,kmn->bimn", a, self.w)
        return b.sum(-1) + torch.einsum("bii->bi", x[:, :, :4]).sum(-1, keepdim=True)[:, :, None]


class PoolModel(nn.Module):
    def forward(self, x):
        a = F.max_pool2d(x, 3, 2, ceil_mode=True)
        b = F.avg_pool2d(x, 3, 2, padding=1, count_include_pad=False)
        c = F.pixel_shuffle(x[:, :4], 2)
        return a.sum((2, 3)) + b.mean((2, 3)) + c.amax((2, 3)).repeat(1, 8)


class MultiOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        return {"logits": y, "probs": torch.softmax(y, -1)}


class TupleOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        return y, torch.tanh(y), y.max(dim=-1)[0]


def mkbn(m):
    """Non-trivial BatchNorm running statistics, eval mode."""
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
            mod.running_mean.copy_(torch.randn(mod.num_features, generator=g) * 0.1)
            mod.running_var.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
    return m.eval()


CASES = {
    "vit_mha": (ViTBlock, lambda: (torch.randn(2, 3, 16, 16),), 1e-4),
    "vit_sdpa": (ViTSdpa, lambda: (torch.randn(2, 9, 32),), 1e-4),
    "masked_sdpa": (MaskedSdpa, lambda: (torch.randn(2, 2, 5, 8), _mask()), 1e-4),
    "gpt2_block": (GPT2Block, lambda: (torch.randn(2, 8, 32),), 1e-4),
    "gpt_triu": (GPTCausalTriu, lambda: (torch.randn(2, 8, 16),), 1e-4),
    "unet": (UNetBlock, lambda: (torch.randn(1, 4, 16, 16),), 1e-4),
    "lstm": (LSTMModel, lambda: (torch.randn(2, 5, 8),), 1e-3),
    "gru": (GRUModel, lambda: (torch.randn(2, 5, 8),), 1e-3),
    "bigru": (BiGRU, lambda: (torch.randn(4, 2, 8),), 1e-3),
    "textcls": (TextClassifier, lambda: (torch.randint(0, 100, (2, 7)),), 1e-4),
    "se_block": (SEBlock, lambda: (torch.randn(1, 16, 8, 8),), 1e-4),
    "bn_mlp": (BNMLP, lambda: (torch.randn(4, 10),), 1e-4),
    "norm_conv": (NormConv, lambda: (torch.randn(2, 3, 8, 8),), 1e-4),
    "tensor_ops": (TensorOps, lambda: (torch.randn(4, 8), torch.tensor([2, 0, 3])), 1e-4),
    "einsum": (EinsumModel, lambda: (torch.randn(2, 4, 4), torch.randn(2, 4, 4)), 1e-4),
    "pool": (PoolModel, lambda: (torch.randn(1, 8, 9, 9),), 1e-4),
    "dict_out": (MultiOut, lambda: (torch.randn(2, 8),), 1e-4),
    "tuple_out": (TupleOut, lambda: (torch.randn(2, 8),), 1e-4),
}


def flat(o):
    """The tensors of a (nested) tuple / list / dict output, in order."""
    if isinstance(o, dict):
        return [t for v in o.values() for t in flat(v)]
    if isinstance(o, (tuple, list)):
        return [t for v in o for t in flat(v)]
    return [o]


def check_outputs(outs, ref, tol):
    """Our outputs (numpy) equal the torch reference ``ref`` (a possibly nested output)."""
    import numpy as np

    ref = [r.detach().numpy() for r in flat(ref)]
    assert len(outs) == len(ref)
    for o, r in zip(outs, ref, strict=True):
        np.testing.assert_allclose(np.asarray(o), r, rtol=tol, atol=tol)


def check_torch_compile(model, args, tol):
    """``torch.compile(model, backend="minitvm")`` compiles every graph (no fallback) and
    matches eager."""
    from minitvm.contrib import torch_backend

    torch._dynamo.reset()
    torch_backend.fallback_reasons.clear()
    try:
        compiled = torch.compile(model, backend="minitvm")
        with torch.no_grad():
            out, ref = compiled(*args), model(*args)
        assert torch_backend.fallback_reasons == []
        check_outputs([o.detach().numpy() for o in flat(out)], ref, tol)
    finally:
        torch._dynamo.reset()
