"""The seventh round of new-user architectures through relay.frontend.from_pytorch, small:
WaveNet's gated dilated causal conv1d, Res2Net's hierarchical split-add-concat, a character CNN
(embedding, max over time), a DS-CNN keyword spotter (10x4 stride-2 stem, depthwise-separable
blocks), DGCNN's EdgeConv (top-k neighbours gathered by flat index), a VQ-VAE's codebook
argmin and lookup, NetVLAD's normalized residual pooling, a Glow step (LU 1x1 conv built with
``torch.diag``, affine coupling, log-determinant), involution by ``F.unfold``, CondConv's
per-sample kernels as a grouped conv, sparsemax (sort, cumsum, gather) and a KAN layer's
B-spline bases; each built at opt_level 3 and checked against eager PyTorch with every kernel
native."""

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


class WaveNet(nn.Module):
    """Causal dilated conv1d (left padding), tanh * sigmoid gates from one conv's two halves,
    residual and skip 1x1 convs, the skips summed."""

    def __init__(self, c=8, skip=6):
        super().__init__()
        self.dil = (1, 2, 4, 8)
        self.convs = nn.ModuleList([nn.Conv1d(c, 2 * c, 2, dilation=d) for d in self.dil])
        self.res = nn.ModuleList([nn.Conv1d(c, c, 1) for _ in self.dil])
        self.skip = nn.ModuleList([nn.Conv1d(c, skip, 1) for _ in self.dil])

    def forward(self, x):
        total = 0
        for d, conv, res, skip in zip(self.dil, self.convs, self.res, self.skip, strict=True):
            f, g = conv(F.pad(x, (d, 0))).chunk(2, 1)
            z = torch.tanh(f) * torch.sigmoid(g)
            x = x + res(z)
            total = total + skip(z)
        return F.relu(total)


class Res2(nn.Module):
    """Four channel groups: the first passes, each later one convolves its split plus the
    previous output; concatenated, a 1x1 conv, the residual."""

    def __init__(self, c=16, scale=4):
        super().__init__()
        self.scale, w = scale, c // scale
        self.convs = nn.ModuleList([nn.Sequential(nn.Conv2d(w, w, 3, 1, 1), nn.BatchNorm2d(w),
                                                  nn.ReLU()) for _ in range(scale - 1)])
        self.out = nn.Conv2d(c, c, 1)

    def forward(self, x):
        parts = torch.split(x, x.shape[1] // self.scale, 1)
        outs, prev = [parts[0]], None
        for k, conv in enumerate(self.convs):
            prev = conv(parts[k + 1] if prev is None else parts[k + 1] + prev)
            outs.append(prev)
        return F.relu(x + self.out(torch.cat(outs, 1)))


class CharCNN(nn.Module):
    def __init__(self, vocab=30, d=8, c=12):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.convs = nn.ModuleList([nn.Conv1d(d, c, k, padding=k // 2) for k in (3, 5)])
        self.fc = nn.Linear(2 * c, 4)

    def forward(self, idx):
        x = self.emb(idx).transpose(1, 2)
        feats = [F.max_pool1d(F.relu(conv(x)), 3, 3).max(dim=2).values for conv in self.convs]
        return self.fc(torch.cat(feats, 1))


def dscnn():
    def cbr(i, o, k, s=1, p=0, g=1):
        return [nn.Conv2d(i, o, k, s, p, groups=g, bias=False), nn.BatchNorm2d(o), nn.ReLU()]

    return nn.Sequential(*cbr(1, 16, (10, 4), 2, (5, 1)), *cbr(16, 16, 3, 1, 1, 16),
                         *cbr(16, 16, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(16, 12))


class EdgeConv(nn.Module):
    """Pairwise distances, top-k neighbours, neighbours gathered by indexing the flattened
    points with batch-offset indices, (x_j - x_i, x_i) through a 1x1 conv, max over k."""

    def __init__(self, c=3, o=8, k=4):
        super().__init__()
        self.k = k
        self.conv = nn.Sequential(nn.Conv2d(2 * c, o, 1), nn.LeakyReLU(0.2))

    def forward(self, x):
        b, c, n = x.shape
        dist = 2 * x.transpose(2, 1) @ x - (x ** 2).sum(1, keepdim=True) \
            - (x ** 2).sum(1, keepdim=True).transpose(2, 1)
        idx = dist.topk(self.k, dim=-1).indices + torch.arange(b).view(-1, 1, 1) * n
        pts = x.transpose(2, 1).reshape(b * n, c)
        nb = pts[idx.reshape(-1)].view(b, n, self.k, c)
        ctr = x.transpose(2, 1).reshape(b, n, 1, c).expand(-1, -1, self.k, -1)
        e = torch.cat([nb - ctr, ctr], 3).permute(0, 3, 1, 2)
        return self.conv(e).max(dim=-1).values


class VectorQuantizer(nn.Module):
    """Squared distances to the codebook, argmin, the codes looked up, a conv after."""

    def __init__(self, d=4, codes=16):
        super().__init__()
        self.codebook = nn.Embedding(codes, d)
        self.post = nn.Conv2d(d, 3, 3, 1, 1)

    def forward(self, z):
        b, d, hh, ww = z.shape
        flat = z.permute(0, 2, 3, 1).reshape(-1, d)
        w = self.codebook.weight
        dist = (flat ** 2).sum(1, keepdim=True) - 2 * flat @ w.t() + (w ** 2).sum(1)
        q = self.codebook(dist.argmin(1)).view(b, hh, ww, d).permute(0, 3, 1, 2)
        return self.post(q)


class NetVLAD(nn.Module):
    def __init__(self, d=8, k=4):
        super().__init__()
        self.assign = nn.Conv2d(d, k, 1)
        self.centroids = nn.Parameter(torch.rand(k, d))

    def forward(self, x):
        b, d = x.shape[:2]
        x = F.normalize(x, p=2, dim=1)
        a = F.softmax(self.assign(x).flatten(2), 1)
        vlad = a @ x.flatten(2).transpose(1, 2) - a.sum(-1, keepdim=True) * self.centroids
        return F.normalize(F.normalize(vlad, p=2, dim=2).reshape(b, -1), p=2, dim=1)


class GlowStep(nn.Module):
    """Squeeze (space to depth), actnorm, the LU 1x1 conv whose weight is computed in the
    forward (``torch.diag`` of the exponentiated log scales), an affine coupling; the
    log-determinant is returned with z."""

    def __init__(self, c=12, hidden=8):
        super().__init__()
        self.loc = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
        self.logs = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
        p, lo, up = torch.linalg.lu(torch.linalg.qr(torch.randn(c, c))[0])
        self.register_buffer("p", p)
        self.register_buffer("sign", torch.sign(torch.diagonal(up)))
        self.lo, self.up = nn.Parameter(torch.tril(lo, -1)), nn.Parameter(torch.triu(up, 1))
        self.log_s = nn.Parameter(torch.log(torch.diagonal(up).abs()))
        self.net = nn.Sequential(nn.Conv2d(c // 2, hidden, 3, 1, 1), nn.ReLU(),
                                 nn.Conv2d(hidden, c, 3, 1, 1))

    def forward(self, x):
        b, c, hh, ww = x.shape
        x = x.view(b, c, hh // 2, 2, ww // 2, 2).permute(0, 1, 3, 5, 2, 4)
        x = x.reshape(b, 4 * c, hh // 2, ww // 2)
        x = (x + self.loc) * torch.exp(self.logs)
        w = self.p @ (torch.tril(self.lo, -1) + torch.eye(4 * c)) @ (
            torch.triu(self.up, 1) + torch.diag(self.sign * torch.exp(self.log_s)))
        x = F.conv2d(x, w[:, :, None, None])
        xa, xb = x.chunk(2, 1)
        s, t = self.net(xa).chunk(2, 1)
        s = torch.tanh(s)
        z = torch.cat([xa, xb * torch.exp(s) + t], 1)
        logdet = x.shape[2] * x.shape[3] * (self.logs.sum() + self.log_s.sum()) \
            + s.flatten(1).sum(1)
        return torch.cat([z.flatten(1), logdet[:, None] * 1e-2], 1)


class Involution(nn.Module):
    """Per-pixel K x K kernels per channel group from a 1x1 bottleneck, applied to F.unfold's
    neighbourhoods; stride 2 (the kernel generated from the average-pooled input)."""

    def __init__(self, c=8, k=3, s=2, groups=2):
        super().__init__()
        self.k, self.s, self.g = k, s, groups
        self.gen = nn.Sequential(nn.AvgPool2d(s, s), nn.Conv2d(c, c // 2, 1), nn.ReLU(),
                                 nn.Conv2d(c // 2, k * k * groups, 1))

    def forward(self, x):
        b, c = x.shape[:2]
        w = self.gen(x)
        oh, ow = w.shape[2], w.shape[3]
        w = w.view(b, self.g, 1, self.k * self.k, oh, ow)
        u = F.unfold(x, self.k, padding=self.k // 2, stride=self.s)
        u = u.view(b, self.g, c // self.g, self.k * self.k, oh, ow)
        return (w * u).sum(3).view(b, c, oh, ow)


class CondConv(nn.Module):
    """Routing weights from the pooled input mix four expert kernels per sample; the batch
    folded into channels, one conv with groups = batch."""

    def __init__(self, i=4, o=6, k=3, experts=4):
        super().__init__()
        self.o, self.k = o, k
        self.route = nn.Linear(i, experts)
        self.weight = nn.Parameter(torch.randn(experts, o, i, k, k) * 0.3)

    def forward(self, x):
        b, c, hh, ww = x.shape
        r = torch.sigmoid(self.route(x.mean((2, 3))))
        w = (r[:, :, None] * self.weight.flatten(1)[None]).sum(1).view(b * self.o, c, self.k,
                                                                        self.k)
        y = F.conv2d(x.reshape(1, b * c, hh, ww), w, stride=2, padding=1, groups=b)
        return y.view(b, self.o, y.shape[2], y.shape[3])


def sparsemax(z, dim=-1):
    zs = torch.sort(z, dim=dim, descending=True).values
    rng = torch.arange(1, z.shape[dim] + 1, dtype=z.dtype)
    cs = zs.cumsum(dim)
    k = (1 + rng * zs > cs).to(z.dtype).sum(dim, keepdim=True)
    tau = (cs.gather(dim, k.long() - 1) - 1) / k
    return torch.clamp(z - tau, min=0)


class SparsemaxAttention(nn.Module):
    def __init__(self, d=8, heads=2):
        super().__init__()
        self.h = heads
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.h, -1).permute(2, 0, 3, 1, 4).unbind(0)
        a = sparsemax(q @ k.transpose(-1, -2) / math.sqrt(d // self.h))
        return x + self.o((a @ v).transpose(1, 2).reshape(b, n, d))


class KAN(nn.Module):
    """Cubic B-spline bases of each input on a uniform knot grid (indicators, then the
    Cox-de Boor recursion), mixed by spline coefficients, plus a SiLU base branch."""

    def __init__(self, i=6, o=5, grid=4, order=3):
        super().__init__()
        self.order = order
        self.register_buffer("knots", torch.arange(-order, grid + order + 1,
                                                   dtype=torch.float32) * (2.0 / grid) - 1)
        self.base = nn.Linear(i, o)
        self.coef = nn.Parameter(torch.randn(o, i * (grid + order)) * 0.3)

    def forward(self, x):
        g, xe = self.knots, torch.tanh(x)[..., None]
        b = ((xe >= g[:-1]) & (xe < g[1:])).to(x.dtype)
        for p in range(1, self.order + 1):
            b = ((xe - g[:-(p + 1)]) / (g[p:-1] - g[:-(p + 1)]) * b[..., :-1]
                 + (g[p + 1:] - xe) / (g[p + 1:] - g[1:-p]) * b[..., 1:])
        return self.base(F.silu(x)) + F.linear(b.flatten(1), self.coef)


def test_wavenet_gated_causal_conv1d():
    _run(_seeded(WaveNet), _randn(1, 8, 64))


def test_res2net_hierarchical_split():
    _run(_seeded(Res2), _randn(1, 16, 10, 10))


def test_char_cnn_max_over_time():
    _run(_seeded(CharCNN), _ints(30, 2, 60))


def test_dscnn_keyword_spotting():
    _run(_seeded(dscnn), _randn(1, 1, 49, 10))


def test_dgcnn_edgeconv_topk_gather():
    _run(_seeded(EdgeConv), _randn(2, 3, 32))


def test_vqvae_codebook_argmin():
    _run(_seeded(VectorQuantizer), _randn(1, 4, 6, 6))


def test_netvlad():
    _run(_seeded(NetVLAD), _randn(2, 8, 5, 5))


def test_glow_step_lu_conv_diag():
    _run(_seeded(GlowStep), _randn(1, 3, 8, 8), rtol=1e-4, atol=1e-4)


def test_involution_unfold():
    _run(_seeded(Involution), _randn(1, 8, 10, 10))


def test_condconv_grouped_over_batch():
    _run(_seeded(CondConv), _randn(3, 4, 9, 9))


def test_sparsemax_attention():
    _run(_seeded(SparsemaxAttention), _randn(2, 7, 8))


def test_kan_bspline_bases():
    _run(_seeded(KAN), _randn(4, 6) * 2)
