"""The eleventh round of new-user architectures through relay.frontend.from_pytorch, small: a
gated PixelCNN (masked conv weights computed in forward), CoordConv with a soft-argmax head
(linspace / meshgrid from the input's shape), Longformer's banded attention mask from arange
comparisons, a Mistral block (grouped-query attention by expand + reshape, a sliding-window
causal mask from tril / triu offsets, RoPE from torch.outer, SwiGLU), Informer's ProbSparse
attention (topk, a gather of active queries, an index_put into the mean of V, circular
Conv1d, ELU + MaxPool1d distilling), N-BEATS trend / seasonality bases, a TimesNet block (rfft
amplitudes weighting period folds), Show-Attend-Tell's LSTMCell decoder with additive
attention, SuperPoint's heads (65-way softmax, pixel_shuffle, max-pool NMS, normalized
descriptors), a MiDaS reassemble + fusion stage (ConvTranspose2d, align_corners=True
upsampling), a Stable-Diffusion VAE attention + upsampling block and a SELU / CELU tabular
net with nn.Bilinear; each built at opt_level 3 and checked against eager PyTorch with every
kernel native. (SegNet's max_unpool2d cannot be traced by torch.jit.trace; its torch.export
import is tested in test_pytorch_cells_unpool.py.)"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_module as _seeded  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402


class MaskedConv(nn.Conv2d):
    def __init__(self, kind, cin, cout, k):
        super().__init__(cin, cout, k, padding=k // 2)
        mask = torch.ones_like(self.weight)
        mask[:, :, k // 2, k // 2 + (kind == "B"):] = 0
        mask[:, :, k // 2 + 1:] = 0
        self.register_buffer("mask", mask)

    def forward(self, x):
        return F.conv2d(x, self.weight * self.mask, self.bias, padding=self.padding)


class PixelCNN(nn.Module):
    def __init__(self, c=6):
        super().__init__()
        self.first, self.gated = MaskedConv("A", 3, c, 5), MaskedConv("B", c, 2 * c, 3)
        self.out = nn.Conv2d(c, 3 * 4, 1)

    def forward(self, x):
        h = self.first(x)
        a, b = self.gated(h).chunk(2, 1)
        y = self.out(h + torch.tanh(a) * torch.sigmoid(b))
        return y.view(y.shape[0], 3, 4, *y.shape[2:]).log_softmax(2)


class CoordSoftArgmax(nn.Module):
    def __init__(self, k=3):
        super().__init__()
        self.conv = nn.Conv2d(2 + 3, k, 3, padding=1)

    def forward(self, x):
        b, _, h, w = x.shape
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w),
                                indexing="ij")
        coords = torch.stack([xs, ys, torch.sqrt(xs * xs + ys * ys)])
        heat = self.conv(torch.cat([x, coords.unsqueeze(0).expand(b, -1, -1, -1)], 1))
        k = heat.shape[1]
        prob = heat.flatten(2).softmax(-1).view(b, k, h, w)
        return torch.stack([(prob.sum(2) * torch.linspace(-1, 1, w)).sum(-1),
                            (prob.sum(3) * torch.linspace(-1, 1, h)).sum(-1)], -1)


class SlidingWindow(nn.Module):
    def __init__(self, d=8, heads=2, window=2):
        super().__init__()
        self.h, self.window, self.qkv = heads, window, nn.Linear(d, 3 * d)

    def forward(self, x):
        b, n, d = x.shape
        pos = torch.arange(n)
        i, j = pos[:, None], pos[None, :]
        keep = ((i - j).abs() <= self.window) | (i == 0) | (j == 0)
        q, k, v = self.qkv(x).view(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.h)
        a = s.masked_fill(~keep, float("-inf")).softmax(-1)
        return (a @ v).transpose(1, 2).reshape(b, n, d)


class MistralAttention(nn.Module):
    def __init__(self, d=16, heads=4, kv=2, window=3):
        super().__init__()
        self.h, self.kv, self.hd, self.window = heads, kv, d // heads, window
        self.q, self.k = nn.Linear(d, d, bias=False), nn.Linear(d, kv * self.hd, bias=False)
        self.v = nn.Linear(d, kv * self.hd, bias=False)
        self.gate, self.up, self.down = nn.Linear(d, 24), nn.Linear(d, 24), nn.Linear(24, d)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, self.hd, 2) / self.hd))

    def repeat_kv(self, t):
        b, hkv, n, hd = t.shape
        r = self.h // hkv
        return t[:, :, None].expand(b, hkv, r, n, hd).reshape(b, hkv * r, n, hd)

    def forward(self, x):
        b, n, d = x.shape
        ang = torch.outer(torch.arange(n, dtype=torch.float32), self.inv_freq)
        ang = torch.cat([ang, ang], -1)

        def rope(t):
            t1, t2 = t.chunk(2, -1)
            return t * ang.cos() + torch.cat([-t2, t1], -1) * ang.sin()

        q = rope(self.q(x).view(b, n, self.h, self.hd).transpose(1, 2))
        k = rope(self.k(x).view(b, n, self.kv, self.hd).transpose(1, 2))
        v = self.v(x).view(b, n, self.kv, self.hd).transpose(1, 2)
        ones = torch.ones(n, n, dtype=torch.bool)
        mask = ones.tril() & ones.triu(-(self.window - 1))
        y = F.scaled_dot_product_attention(q, self.repeat_kv(k), self.repeat_kv(v),
                                           attn_mask=mask)
        x = x + y.transpose(1, 2).reshape(b, n, d)
        return x + self.down(F.silu(self.gate(x)) * self.up(x))


class ProbSparse(nn.Module):
    def __init__(self, d=8, heads=2, n=12, u=4):
        super().__init__()
        self.h, self.hd, self.u = heads, d // heads, u
        self.qkv = nn.Linear(d, 3 * d)
        self.register_buffer("sample", torch.randint(0, n, (n, u),
                                                     generator=torch.Generator().manual_seed(3)))
        self.conv = nn.Conv1d(d, d, 3, padding=1, padding_mode="circular")
        self.pool = nn.MaxPool1d(3, 2, 1)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        qk = (q.unsqueeze(-2) @ k[:, :, self.sample].transpose(-2, -1)).squeeze(-2)
        top = (qk.max(-1)[0] - qk.sum(-1) / n).topk(self.u, sorted=False)[1]
        bi, hi = torch.arange(b)[:, None, None], torch.arange(self.h)[None, :, None]
        s = (q[bi, hi, top] @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        ctx = v.mean(-2, keepdim=True).expand(b, self.h, n, self.hd).clone()
        ctx[bi, hi, top] = s.softmax(-1) @ v
        y = ctx.transpose(1, 2).reshape(b, n, d)
        return self.pool(F.elu(self.conv(y.transpose(1, 2))))


class NBeats(nn.Module):
    def __init__(self, back=12, fore=4):
        super().__init__()
        t_b, t_f = torch.arange(back) / back, torch.arange(fore) / fore
        self.register_buffer("trend_b", torch.stack([t_b ** p for p in range(3)]))
        self.register_buffer("trend_f", torch.stack([t_f ** p for p in range(3)]))
        f = torch.arange(1, 3)[:, None] * 2 * math.pi
        self.register_buffer("season_b", torch.cat([torch.cos(f * t_b), torch.sin(f * t_b)]))
        self.register_buffer("season_f", torch.cat([torch.cos(f * t_f), torch.sin(f * t_f)]))
        self.mlp1 = nn.Sequential(nn.Linear(back, 16), nn.ReLU(), nn.Linear(16, 3, bias=False))
        self.mlp2 = nn.Sequential(nn.Linear(back, 16), nn.ReLU(), nn.Linear(16, 4, bias=False))

    def forward(self, x):
        level = x[:, -1:].abs() + 1
        r = x / level
        t = self.mlp1(r)
        r = r - t @ self.trend_b
        s = self.mlp2(r)
        return (t @ self.trend_f + s @ self.season_f) * level


class TimesBlock(nn.Module):
    def __init__(self, d=4, n=12, periods=(4, 3, 5)):
        super().__init__()
        self.periods = periods
        self.register_buffer("freq", torch.tensor([n // p for p in periods]))
        self.convs = nn.ModuleList([nn.Conv2d(d, d, 2 * i + 1, padding=i) for i in range(2)])

    def forward(self, x):
        b, t, c = x.shape
        weight = torch.fft.rfft(x, dim=1).abs().mean(-1)[:, self.freq].softmax(-1)
        outs = []
        for p in self.periods:
            length = -(-t // p) * p
            y = F.pad(x, (0, 0, 0, length - t)) if length != t else x
            y = y.reshape(b, length // p, p, c).permute(0, 3, 1, 2)
            y = torch.stack([conv(y) for conv in self.convs], -1).mean(-1)
            outs.append(F.gelu(y).permute(0, 2, 3, 1).reshape(b, length, c)[:, :t])
        return x + (torch.stack(outs, -1) * weight[:, None, None, :]).sum(-1)


class ShowAttendTell(nn.Module):
    def __init__(self, c=6, vocab=11, hidden=8, steps=3):
        super().__init__()
        self.steps = steps
        self.enc_att, self.dec_att, self.full = nn.Linear(c, 5), nn.Linear(hidden, 5), \
            nn.Linear(5, 1)
        self.emb, self.cell, self.fc = nn.Embedding(vocab, 4), nn.LSTMCell(4 + c, hidden), \
            nn.Linear(hidden, vocab)
        self.init_h, self.init_c, self.beta = nn.Linear(c, hidden), nn.Linear(c, hidden), \
            nn.Linear(hidden, c)

    def forward(self, feats, tokens):
        mean = feats.mean(1)
        h, c = torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean))
        keys, words, out = self.enc_att(feats), self.emb(tokens), []
        for t in range(self.steps):
            alpha = self.full(torch.tanh(keys + self.dec_att(h).unsqueeze(1))).squeeze(-1)
            ctx = (feats * alpha.softmax(-1).unsqueeze(-1)).sum(1) * torch.sigmoid(self.beta(h))
            h, c = self.cell(torch.cat([words[:, t], ctx], -1), (h, c))
            out.append(self.fc(h))
        return torch.stack(out, 1)


class SuperPointHeads(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.det, self.desc = nn.Conv2d(c, 65, 1), nn.Conv2d(c, 6, 1)

    def forward(self, f):
        heat = F.pixel_shuffle(self.det(f).softmax(1)[:, :-1], 8)
        heat = torch.where(heat == F.max_pool2d(heat, 5, 1, 2), heat, torch.zeros_like(heat))
        d = F.normalize(self.desc(f), p=2, dim=1)
        return torch.cat([heat.flatten(1), d.flatten(1)], 1)


class MiDaSStage(nn.Module):
    def __init__(self, d=8, c=4, g=3):
        super().__init__()
        self.g = g
        self.readout = nn.Sequential(nn.Linear(2 * d, d), nn.GELU())
        self.proj, self.up = nn.Conv2d(d, c, 1), nn.ConvTranspose2d(c, c, 2, 2)
        self.rcu = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, tokens):
        cls, p = tokens[:, :1], tokens[:, 1:]
        x = self.readout(torch.cat([p, cls.expand_as(p)], -1))
        x = self.up(self.proj(x.transpose(1, 2).reshape(x.shape[0], -1, self.g, self.g)))
        x = x + self.rcu(F.relu(x))
        return F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=True)


class VAEAttentionUp(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.norm = nn.GroupNorm(4, c)
        self.q, self.k, self.v, self.o = (nn.Linear(c, c) for _ in range(4))
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        b, c, h, w = x.shape
        t = self.norm(x).flatten(2).transpose(1, 2)
        y = F.scaled_dot_product_attention(self.q(t), self.k(t), self.v(t))
        x = x + self.o(y).transpose(1, 2).reshape(b, c, h, w)
        return self.conv(F.silu(F.interpolate(x, scale_factor=2.0, mode="nearest")))


class SNNBilinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(7, 3)
        self.inter = nn.Bilinear(5, 3, 4)
        self.deep = nn.Sequential(nn.Linear(12, 16), nn.SELU(), nn.AlphaDropout(0.1),
                                  nn.Linear(16, 2), nn.CELU(0.5))

    def forward(self, num, cat):
        e = self.emb(cat)
        return self.deep(torch.cat([num, e, self.inter(num, e)], -1))


def test_pixelcnn_masked_gated():
    _run(_seeded(PixelCNN), torch.rand(1, 3, 8, 8))


def test_coordconv_soft_argmax():
    _run(_seeded(CoordSoftArgmax), _randn(2, 2, 6, 7))


def test_longformer_sliding_window_mask():
    _run(_seeded(SlidingWindow), _randn(2, 9, 8))


def test_mistral_gqa_sliding_window_rope_swiglu():
    _run(_seeded(MistralAttention), _randn(1, 7, 16), rtol=1e-4, atol=1e-5)


def test_informer_probsparse_circular_distill():
    _run(_seeded(ProbSparse), _randn(2, 12, 8), rtol=1e-4, atol=1e-5)


def test_nbeats_bases():
    _run(_seeded(NBeats), _randn(3, 12) + 4)


def test_timesnet_fft_period_folds():
    _run(_seeded(TimesBlock), _randn(2, 12, 4), rtol=1e-4, atol=1e-5)


def test_show_attend_tell_lstm_cell():
    _run(_seeded(ShowAttendTell), _randn(2, 5, 6), _ints(11, 2, 3), rtol=1e-4, atol=1e-5)


def test_superpoint_heads():
    _run(_seeded(SuperPointHeads), _randn(1, 8, 2, 3))


def test_midas_reassemble_fusion():
    _run(_seeded(MiDaSStage), _randn(1, 10, 8))


def test_vae_attention_nearest_up():
    _run(_seeded(VAEAttentionUp), _randn(1, 8, 4, 3), rtol=1e-4, atol=1e-5)


def test_snn_selu_bilinear():
    _run(_seeded(SNNBilinear), _randn(4, 5), _ints(7, 4))
