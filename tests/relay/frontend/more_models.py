"""Models a new user brings beyond the acceptance trio and the sweep models (VGG with dropout,
SqueezeNet fire modules, DenseNet blocks, EfficientNet MBConv + squeeze-excitation, a ViT with
patch embedding and SDPA, a GPT-2 with embeddings and a causal tril mask, a UNet with
ConvTranspose2d and interpolation, a bidirectional LSTM text classifier, indexing / reduction /
padding ops), shared by the Relay, Relax and torch.compile tests."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class VGGish(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                               nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(True),
                               nn.MaxPool2d(2, 2))
        self.pool = nn.AdaptiveAvgPool2d((3, 3))
        self.c = nn.Sequential(nn.Linear(16 * 9, 32), nn.ReLU(True), nn.Dropout(0.5), nn.Linear(32, 10))

    def forward(self, x):
        return self.c(torch.flatten(self.pool(self.f(x)), 1))


class Fire(nn.Module):
    def __init__(self, cin, s, e):
        super().__init__()
        self.sq = nn.Conv2d(cin, s, 1)
        self.e1 = nn.Conv2d(s, e, 1)
        self.e3 = nn.Conv2d(s, e, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.sq(x))
        return torch.cat([F.relu(self.e1(x)), F.relu(self.e3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 16, 3, stride=2)
        self.p = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.f1 = Fire(16, 4, 8)
        self.f2 = Fire(16, 4, 8)
        self.cls = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(16, 5, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        x = self.p(F.relu(self.c(x)))
        x = self.f2(self.f1(x))
        return torch.flatten(self.cls(x), 1)


class DenseLayer(nn.Module):
    def __init__(self, cin, g):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.c1 = nn.Conv2d(cin, 2 * g, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(2 * g)
        self.c2 = nn.Conv2d(2 * g, g, 3, padding=1, bias=False)

    def forward(self, feats):
        x = torch.cat(feats, 1)
        return self.c2(F.relu(self.bn2(self.c1(F.relu(self.bn1(x))))))


class DenseNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.layers = nn.ModuleList([DenseLayer(8 + 4 * i, 4) for i in range(3)])
        self.trans = nn.Sequential(nn.BatchNorm2d(20), nn.ReLU(), nn.Conv2d(20, 10, 1), nn.AvgPool2d(2, 2))
        self.fc = nn.Linear(10, 3)

    def forward(self, x):
        feats = [self.stem(x)]
        for layer in self.layers:
            feats.append(layer(feats))
        x = self.trans(torch.cat(feats, 1))
        x = F.adaptive_avg_pool2d(F.relu(x), (1, 1))
        return self.fc(torch.flatten(x, 1))


class MBConv(nn.Module):
    def __init__(self, c=8, e=4):
        super().__init__()
        h = c * e
        self.exp = nn.Sequential(nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.SiLU())
        self.dw = nn.Sequential(nn.Conv2d(h, h, 3, 1, 1, groups=h, bias=False), nn.BatchNorm2d(h), nn.SiLU())
        self.se1 = nn.Conv2d(h, 2, 1)
        self.se2 = nn.Conv2d(2, h, 1)
        self.proj = nn.Sequential(nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))
        self.head = nn.Sequential(nn.Conv2d(c, 16, 1), nn.BatchNorm2d(16), nn.SiLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(16, 4))

    def forward(self, x):
        y = self.dw(self.exp(x))
        s = y.mean((2, 3), keepdim=True)
        s = torch.sigmoid(self.se2(F.silu(self.se1(s))))
        y = self.proj(y * s)
        return self.head(x + y)


class ViTPatch(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.h = heads
        self.pe = nn.Conv2d(3, d, 4, 4)
        self.cls = nn.Parameter(torch.zeros(1, 1, d).normal_())
        self.pos = nn.Parameter(torch.zeros(1, 17, d).normal_())
        self.ln1 = nn.LayerNorm(d, eps=1e-6)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Dropout(0.0), nn.Linear(64, d))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 5)

    def forward(self, x):
        B = x.shape[0]
        x = self.pe(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(B, -1, -1), x), dim=1) + self.pos
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        x = x + self.mlp(self.ln2(x))
        return self.head(self.norm(x)[:, 0])


class GPT2(nn.Module):
    def __init__(self, v=50, d=32, heads=4, maxt=16):
        super().__init__()
        self.h = heads
        self.wte = nn.Embedding(v, d)
        self.wpe = nn.Embedding(maxt, d)
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.Linear(d, 3 * d)
        self.cproj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fcp = nn.Linear(4 * d, d)
        self.lnf = nn.LayerNorm(d)

    def forward(self, idx):
        b, t = idx.shape
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        d = x.shape[-1]
        q, k, v = self.attn(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.h, d // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, d // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, d // self.h).transpose(1, 2)
        att = q @ k.transpose(-2, -1) * (1.0 / (d // self.h) ** 0.5)
        mask = torch.tril(torch.ones(t, t, device=idx.device)).view(1, 1, t, t)
        att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.cproj(y)
        x = x + self.fcp(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        logits = self.lnf(x) @ self.wte.weight.t()
        return logits


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(4, 8), nn.ReLU())
        self.e2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.e3 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.up1 = nn.ConvTranspose2d(16, 16, 3, stride=2, padding=1, output_padding=1)
        self.d1 = nn.Conv2d(32, 8, 3, padding=1)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.d2 = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(a)
        c = self.e3(b)
        u = torch.cat([self.up1(c), b], dim=1)
        u = F.relu(self.d1(u))
        u = torch.cat([self.up2(u), F.interpolate(a, scale_factor=1.0, mode="nearest")], 1)
        return torch.sigmoid(self.d2(u))


class LSTMText(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(60, 12, padding_idx=0)
        self.lstm = nn.LSTM(12, 8, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(8 + 16, 3)

    def forward(self, idx):
        y, (h, c) = self.lstm(self.emb(idx))
        feat = torch.cat([h[-1], y.max(dim=1).values], dim=-1)
        return F.log_softmax(self.fc(feat), dim=-1)


class MiscOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 5))
        self.gn = nn.GroupNorm(3, 6)

    def forward(self, x, idx):
        # x: (2, 6, 5)
        a = torch.einsum("bcf,cf->bc", x, self.w)
        b = torch.einsum("bij,bkj->bik", x, x)
        c0, c1, c2 = x.chunk(3, dim=1)
        s = torch.split(x, 2, dim=2)
        g = x[:, idx]                      # tensor index
        g2 = x[idx[:2] % 2, :, idx[:2]]    # advanced, paired index
        w = torch.where(x > 0.2, x, torch.zeros_like(x))
        cl = torch.clamp(x, min=-0.5)
        cl2 = x.clamp(max=0.3)
        cs = torch.cumsum(x, dim=-1)
        am = torch.argmax(x, dim=1)
        amin = x.argmin(-1)
        gn = self.gn(x.unsqueeze(-1)).squeeze(-1)
        ap = F.adaptive_avg_pool1d(x, 3)
        mp = F.adaptive_max_pool2d(x.unsqueeze(1), (3, 2))
        return (a.sum(1) + b.sum((1, 2)) + (c0 * c2 - c1).sum((1, 2)) + s[-1].sum((1, 2))
                + g.sum((1, 2)) + g2.sum(-1) + w.sum((1, 2)) + cl.sum((1, 2)) + cl2.sum((1, 2))
                + cs[..., -1].sum(-1) + am.float().sum(-1) + amin.float().sum(-1)
                + gn.sum((1, 2)) + ap.sum((1, 2)) + mp.sum((1, 2, 3)))


class MoreOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 6, 3, padding=2, dilation=2)
        self.bn = nn.BatchNorm1d(6)
        self.pr = nn.PReLU(6)
        self.ln = nn.LayerNorm(7, elementwise_affine=False)

    def forward(self, x):
        # x: (2, 4, 7)
        y = self.pr(self.bn(self.c1(x)))
        y = F.pad(y, (1, 1), mode="reflect")[..., 1:-1]
        y = self.ln(y)
        z = F.normalize(y, dim=-1) + torch.flip(y, [-1]) + torch.roll(y, 2, -1)
        z = z + F.softplus(y) + F.mish(y) + torch.rsqrt(y * y + 1) + y.std(-1, keepdim=True)
        z = z + y.var(-1, unbiased=False, keepdim=True) + torch.norm(y, dim=-1, keepdim=True)
        z = z + F.max_pool1d(y, 3, 1, 1) + F.avg_pool1d(y, 3, 1, 1)
        m = torch.baddbmm(z, z, torch.ones(2, 7, 7), beta=0.5, alpha=2.0)
        n = torch.addmm(torch.ones(7), z[0], torch.ones(7, 7))
        t = z.new_zeros(2, 6, 7) + torch.full_like(z, 0.5) + torch.ones_like(z)
        return m + n + t + z.narrow(-1, 0, 7) + torch.nan_to_num(torch.log(y.abs()))


class NegativeIndex(nn.Module):
    def forward(self, x, idx):
        return x[:, idx - 3][..., :3] + x[:, :, idx - 4] + x[idx - 2, idx - 3].sum(-1)[None, :, None]


class TransformerLayers(nn.Module):
    """nn.TransformerEncoderLayer, pre- and post-norm (TorchScript traces its fast path)."""

    def __init__(self):
        super().__init__()
        self.pre = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                              norm_first=True)
        self.post = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                               activation="gelu")

    def forward(self, x):
        return self.post(self.pre(x))


class Audio(nn.Module):
    """Grouped strided Conv1d, ConvTranspose1d, a 2-D LayerNorm, linear resize, 1-D pooling."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv1d(2, 8, 5, stride=2, padding=2, groups=2)
        self.t = nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1)
        self.ln = nn.LayerNorm([4, 16])

    def forward(self, x):
        y = self.ln(self.t(F.gelu(self.c(x))))
        return (F.interpolate(y, scale_factor=2, mode="linear", align_corners=False),
                F.adaptive_max_pool1d(y, 4))


class Segmenter(nn.Module):
    """Reflect-padded and padding="same" convs, resizes, a per-pixel argmax, logsumexp."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect")
        self.c2 = nn.Conv2d(4, 4, 3, padding="same")

    def forward(self, x):
        y = self.c2(torch.relu(self.c(x)))
        z = F.interpolate(y, size=(10, 7), mode="bilinear", align_corners=False)
        w = F.interpolate(y, scale_factor=0.5, mode="nearest")
        return z.softmax(1).argmax(1), w.flatten(1).logsumexp(-1), torch.max(y, 1, True)[0]


class PaddedAttention(nn.Module):
    """nn.MultiheadAttention with a key padding mask (TorchScript traces its fast path)."""

    def __init__(self):
        super().__init__()
        self.m = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x, pad):
        return self.m(x, x, x, key_padding_mask=pad)[0]


def _pad_mask():
    return torch.tensor([[False] * 4 + [True], [False] * 5])


CASES = {
    "vgg": (VGGish, lambda: (torch.randn(2, 3, 16, 16),), 1e-4, True),
    "squeezenet": (SqueezeNet, lambda: (torch.randn(2, 3, 33, 33),), 1e-4, True),
    "densenet": (DenseNet, lambda: (torch.randn(2, 3, 8, 8),), 1e-4, True),
    "mbconv": (MBConv, lambda: (torch.randn(2, 8, 8, 8),), 1e-4, True),
    "vit": (ViTPatch, lambda: (torch.randn(2, 3, 16, 16),), 1e-4, True),
    "gpt2": (GPT2, lambda: (torch.randint(0, 50, (2, 8)),), 1e-4, True),
    "unet": (UNet, lambda: (torch.randn(2, 3, 16, 16),), 1e-4, True),
    "lstm_text": (LSTMText, lambda: (torch.randint(0, 60, (2, 4)),), 1e-4, False),
    "misc": (MiscOps, lambda: (torch.randn(2, 6, 5), torch.tensor([3, 1, 4])), 1e-4, False),
    "more": (MoreOps, lambda: (torch.randn(2, 4, 7),), 1e-4, False),
    "negative_index": (NegativeIndex, lambda: (torch.randn(2, 3, 4), torch.tensor([0, 1, 2])),
                       1e-5, False),
    "transformer_layers": (TransformerLayers, lambda: (torch.randn(2, 5, 16),), 1e-4, False),
    "audio": (Audio, lambda: (torch.randn(2, 2, 16),), 1e-4, True),
    "segmenter": (Segmenter, lambda: (torch.randn(2, 3, 8, 8),), 1e-4, True),
    "padded_attention": (PaddedAttention, lambda: (torch.randn(2, 5, 16), _pad_mask()), 1e-4,
                         False),
}
"""name -> (model class, example inputs, tolerance, whether the batch dim can be dynamic)"""


def mkbn(m):
    """Non-trivial BatchNorm statistics and affine weights, eval mode."""
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
            mod.running_mean.copy_(torch.randn(mod.num_features, generator=g) * 0.1)
            mod.running_var.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
            mod.weight.data.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
            mod.bias.data.copy_(torch.randn(mod.num_features, generator=g) * 0.1)
    return m.eval()
