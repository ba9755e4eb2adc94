"""The ninth round of new-user architectures through relay.frontend.from_pytorch, small: LeViT
attention (a bias table gathered by a relative-offset index, Hardswish, BatchNorm1d after
linear layers), DeBERTa's disentangled attention (scores gathered at clamped relative
distances), HiFi-GAN (weight norm by parametrization, ConvTranspose1d, dilated residuals),
PatchTST (RevIN, Tensor.unfold patches, a BatchNorm transformer), DLinear (a replicate-padded
AvgPool1d moving average), SchNet (cdist, radial bases, cosine cutoff, shifted softplus), YOLOv5
(Focus slicing, SPPF's chained max pools, grid decode), CenterNet's decode (max-pool peaks,
topk, gather), ALBERT (one layer shared over depth, scaled_dot_product_attention with a float
mask), a Set Transformer (ISAB, PMA), DCN-v2 (bucketize, EmbeddingBag, low-rank crosses), an
LSTM with proj_size, T2T-ViT's nn.Unfold soft split, a bicubic VDSR, FuseFormer's nn.Fold soft
composition, an ArcFace head (PReLU, BatchNorm1d, F.normalize cosine logits) and a CLIP tower's
antialiased resize; each built at opt_level 3 and checked against eager PyTorch with every
kernel native."""

from __future__ import annotations

import itertools
import math

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_module as _seeded  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402


class LeViTAttention(nn.Module):
    """Per-head biases, one per (|dy|, |dx|) offset of a 3x3 grid, gathered into a 9x9 table;
    BatchNorm1d after the qkv projection; Hardswish before the output projection."""

    def __init__(self, d=8, heads=2, kd=2, res=3):
        super().__init__()
        self.h, self.kd = heads, kd
        self.qkv, self.bn = nn.Linear(d, heads * 4 * kd, bias=False), nn.BatchNorm1d(
            heads * 4 * kd)
        self.proj = nn.Linear(heads * 2 * kd, d)
        pts = list(itertools.product(range(res), range(res)))
        offsets, idxs = {}, []
        for p1, p2 in itertools.product(pts, pts):
            off = (abs(p1[0] - p2[0]), abs(p1[1] - p2[1]))
            idxs.append(offsets.setdefault(off, len(offsets)))
        self.biases = nn.Parameter(torch.randn(heads, len(offsets)))
        self.register_buffer("idx", torch.tensor(idxs).view(len(pts), len(pts)))

    def forward(self, x):
        b, n, _ = x.shape
        y = self.bn(self.qkv(x).flatten(0, 1)).view(b, n, self.h, -1)
        q, k, v = y.split([self.kd, self.kd, 2 * self.kd], 3)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        a = (q @ k.transpose(-2, -1) * self.kd ** -0.5 + self.biases[:, self.idx]).softmax(-1)
        return x + self.proj(F.hardswish((a @ v).transpose(1, 2).reshape(b, n, -1)))


class Disentangled(nn.Module):
    """Content-to-content plus content-to-position and position-to-content scores, each
    gathered at relative distances clamped to [-k, k)."""

    def __init__(self, d=8, n=7, k=3):
        super().__init__()
        self.qkv, self.pq, self.pk = nn.Linear(d, 3 * d), nn.Linear(d, d), nn.Linear(d, d)
        self.rel = nn.Parameter(torch.randn(2 * k, d))
        pos = torch.arange(n)
        self.register_buffer("c2p", torch.clamp(pos[:, None] - pos[None], -k, k - 1) + k)
        self.register_buffer("p2c", torch.clamp(pos[None] - pos[:, None], -k, k - 1) + k)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, -1)
        c2p = torch.gather(q @ self.pk(self.rel).T, -1, self.c2p.expand(b, n, n))
        p2c = torch.gather(k @ self.pq(self.rel).T, -1, self.p2c.expand(b, n, n))
        a = ((q @ k.transpose(1, 2) + c2p + p2c.transpose(1, 2)) / math.sqrt(3 * d))
        return a.softmax(-1) @ v


class HiFiGAN(nn.Module):
    """Weight-normed (parametrized) convs, a ConvTranspose1d upsampling, dilated residual
    convs with LeakyReLU, tanh out."""

    def __init__(self, mels=5, c=8):
        super().__init__()
        wn = nn.utils.parametrizations.weight_norm
        self.pre = wn(nn.Conv1d(mels, c, 7, 1, 3))
        self.up = wn(nn.ConvTranspose1d(c, c // 2, 8, 4, 2))
        self.res = nn.ModuleList([wn(nn.Conv1d(c // 2, c // 2, 3, 1, d, d)) for d in (1, 3)])
        self.post = wn(nn.Conv1d(c // 2, 1, 7, 1, 3))

    def forward(self, x):
        x = self.up(F.leaky_relu(self.pre(x), 0.1))
        for conv in self.res:
            x = x + conv(F.leaky_relu(x, 0.1))
        return torch.tanh(self.post(F.leaky_relu(x)))


class PatchTST(nn.Module):
    """RevIN, replicate end padding, Tensor.unfold patches, one BatchNorm transformer layer,
    a flatten head, de-normalized."""

    def __init__(self, length=24, horizon=6, patch=6, stride=3, d=8):
        super().__init__()
        self.patch, self.stride = patch, stride
        n = (length + stride - patch) // stride + 1
        self.emb = nn.Linear(patch, d)
        self.attn = nn.MultiheadAttention(d, 2, batch_first=True)
        self.bn = nn.BatchNorm1d(d)
        self.head = nn.Linear(n * d, horizon)

    def forward(self, x):
        b, c, _ = x.shape
        mu = x.mean(-1, keepdim=True)
        sd = torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
        x = (x - mu) / sd
        x = torch.cat([x, x[..., -1:].expand(-1, -1, self.stride)], -1)
        h = self.emb(x.unfold(-1, self.patch, self.stride)).flatten(0, 1)
        h = self.bn((h + self.attn(h, h, h, need_weights=False)[0]).transpose(1, 2))
        return self.head(h.transpose(1, 2).reshape(b, c, -1)) * sd + mu


class DLinear(nn.Module):
    """Trend by AvgPool1d over the series padded with its end values, season the rest."""

    def __init__(self, length=20, horizon=5, kernel=5):
        super().__init__()
        self.half = (kernel - 1) // 2
        self.avg = nn.AvgPool1d(kernel, 1)
        self.trend, self.season = nn.Linear(length, horizon), nn.Linear(length, horizon)

    def forward(self, x):
        pad = torch.cat([x[:, :1].repeat(1, self.half, 1), x,
                         x[:, -1:].repeat(1, self.half, 1)], 1)
        t = self.avg(pad.permute(0, 2, 1))
        return (self.trend(t) + self.season(x.permute(0, 2, 1) - t)).permute(0, 2, 1)


class SchNet(nn.Module):
    """cdist, Gaussian radial bases, a cosine cutoff without self-pairs, filter-weighted
    neighbour sums, shifted softplus, a summed readout."""

    def __init__(self, d=8, rbf=6, cutoff=3.0):
        super().__init__()
        self.emb, self.cutoff = nn.Embedding(5, d), cutoff
        self.register_buffer("mu", torch.linspace(0, cutoff, rbf))
        self.filt, self.lin = nn.Linear(rbf, d), nn.Linear(d, d)
        self.out = nn.Linear(d, 1)

    def forward(self, z, pos):
        dist = torch.cdist(pos, pos)
        rbf = torch.exp(-2.0 * (dist[..., None] - self.mu) ** 2)
        cut = 0.5 * (torch.cos(dist * math.pi / self.cutoff) + 1) \
            * (dist < self.cutoff).float() * (1 - torch.eye(pos.shape[1]))
        h = self.emb(z)
        m = (self.filt(rbf) * cut[..., None] * self.lin(h)[:, None]).sum(2)
        h = h + F.softplus(m) - math.log(2.0)
        return self.out(h).sum(1)


class YOLOv5(nn.Module):
    """Focus (four strided slices), SPPF (three chained 5x5 max pools), a decoded head."""

    def __init__(self, c=8, na=2, no=6):
        super().__init__()
        self.na, self.no = na, no
        self.focus = nn.Sequential(nn.Conv2d(12, c, 3, 2, 1), nn.BatchNorm2d(c), nn.SiLU())
        self.a, self.b = nn.Conv2d(c, c // 2, 1), nn.Conv2d(2 * c, c, 1)
        self.det = nn.Conv2d(c, na * no, 1)
        ys, xs = torch.meshgrid(torch.arange(4), torch.arange(4), indexing="ij")
        self.register_buffer("grid", torch.stack([xs, ys], -1).float().view(1, 1, 4, 4, 2))
        self.register_buffer("anchor", torch.tensor([[10., 13.], [16., 30.]]).view(1, na, 1,
                                                                                   1, 2))

    def forward(self, x):
        x = self.focus(torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2],
                                  x[..., 1::2, 1::2]], 1))
        y0 = self.a(x)
        y1 = F.max_pool2d(y0, 5, 1, 2)
        y2 = F.max_pool2d(y1, 5, 1, 2)
        p = self.det(F.silu(self.b(torch.cat([y0, y1, y2, F.max_pool2d(y2, 5, 1, 2)], 1))))
        p = p.view(1, self.na, self.no, 4, 4).permute(0, 1, 3, 4, 2).sigmoid()
        xy = (p[..., :2] * 2 - 0.5 + self.grid) * 8
        wh = (p[..., 2:4] * 2) ** 2 * self.anchor
        return torch.cat([xy, wh, p[..., 4:]], -1).view(1, -1, self.no)


class CenterNetDecode(nn.Module):
    """Heatmap peaks kept by a 3x3 max pool, the top 5 over classes and positions, sizes and
    offsets gathered there, boxes with score and class."""

    def __init__(self, c=6, classes=3, k=5):
        super().__init__()
        self.k = k
        self.hm, self.wh, self.off = nn.Conv2d(c, classes, 3, 1, 1), nn.Conv2d(c, 2, 1), \
            nn.Conv2d(c, 2, 1)

    def forward(self, f):
        heat = self.hm(f).sigmoid()
        b, _, h, w = heat.shape
        heat = heat * (F.max_pool2d(heat, 3, 1, 1) == heat).float()
        scores, inds = heat.view(b, -1).topk(self.k)
        pix = inds % (h * w)
        ys, xs = torch.div(pix, w, rounding_mode="floor").float(), (pix % w).float()
        idx = pix[:, None].expand(b, 2, self.k)
        wh = self.wh(f).view(b, 2, -1).gather(2, idx)
        off = self.off(f).view(b, 2, -1).gather(2, idx)
        cx, cy = xs + off[:, 0], ys + off[:, 1]
        cls = torch.div(inds, h * w, rounding_mode="floor").float()
        return torch.stack([cx - wh[:, 0], cy - wh[:, 1], cx + wh[:, 0], cy + wh[:, 1],
                            scores, cls], -1)


class ALBERT(nn.Module):
    """Factorized embeddings, one layer applied three times, SDPA with an additive padding
    mask, a tanh pooler."""

    def __init__(self, vocab=30, e=4, d=8, heads=2):
        super().__init__()
        self.h = heads
        self.emb, self.proj = nn.Embedding(vocab, e), nn.Linear(e, d)
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 16), nn.GELU(approximate="tanh"), nn.Linear(16, d))
        self.pool = nn.Linear(d, d)

    def forward(self, idx, attn):
        x = self.proj(self.emb(idx))
        b, n, d = x.shape
        mask = (1.0 - attn[:, None, None, :].float()) * -1e4
        for _ in range(3):
            q, k, v = self.qkv(x).view(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = self.ln1(x + self.o(y.transpose(1, 2).reshape(b, n, d)))
            x = self.ln2(x + self.ff(x))
        return torch.tanh(self.pool(x[:, 0]))


class SetTransformer(nn.Module):
    """ISAB (induced points attend to the set, the set to them) and PMA pooling by seeds,
    with nn.MultiheadAttention of unequal query and key lengths."""

    def __init__(self, d=8):
        super().__init__()
        self.inp = nn.Linear(3, d)
        self.ind, self.seed = nn.Parameter(torch.randn(1, 4, d)), nn.Parameter(
            torch.randn(1, 2, d))
        self.a1, self.a2, self.a3 = (nn.MultiheadAttention(d, 2, batch_first=True)
                                     for _ in range(3))
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        x = self.inp(x)
        b = x.shape[0]
        i = self.ind.expand(b, -1, -1)
        h = i + self.a1(i, x, x, need_weights=False)[0]
        x = self.ln(x + self.a2(x, h, h, need_weights=False)[0])
        s = self.seed.expand(b, -1, -1)
        return (s + self.a3(s, x, x, need_weights=False)[0]).flatten(1)


class DCNv2(nn.Module):
    """Bucketized dense features embedded, categorical ids, a mean EmbeddingBag, two
    low-rank cross layers beside a deep layer."""

    def __init__(self, e=3):
        super().__init__()
        self.register_buffer("bounds", torch.linspace(-1.0, 1.0, 5))
        self.register_buffer("offsets", torch.arange(4) * 6)
        self.demb, self.cemb = nn.Embedding(24, e), nn.Embedding(20, e)
        self.bag = nn.EmbeddingBag(15, e, mode="mean")
        d = 10 * e  # 4 binned, 5 categorical, 1 bag
        self.v = nn.ModuleList([nn.Linear(d, 4, bias=False) for _ in range(2)])
        self.u = nn.ModuleList([nn.Linear(4, d) for _ in range(2)])
        self.deep, self.out = nn.Linear(d, 6), nn.Linear(d + 6, 1)

    def forward(self, dense, cat, tags):
        x0 = torch.cat([self.demb(torch.bucketize(dense, self.bounds) + self.offsets).flatten(1),
                        self.cemb(cat).flatten(1), self.bag(tags)], 1)
        x = x0
        for v, u in zip(self.v, self.u, strict=True):
            x = x0 * u(v(x)) + x
        return torch.sigmoid(self.out(torch.cat([x, F.relu(self.deep(x0))], 1)))


class LSTMProj(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 8, 2, batch_first=True, proj_size=3)
        self.out = nn.Linear(3, 4)

    def forward(self, x):
        return self.out(self.lstm(x)[0]).log_softmax(-1)


class T2TSoftSplit(nn.Module):
    """nn.Unfold soft splits (overlapping, padded) with single-head token attention between,
    tokens folded back to a grid by reshape."""

    def __init__(self, d=6):
        super().__init__()
        self.sp0, self.sp1 = nn.Unfold(3, stride=2, padding=1), nn.Unfold(3, stride=2,
                                                                          padding=1)
        self.qkv, self.ln = nn.Linear(27, 3 * d), nn.LayerNorm(27)
        self.emb = nn.Linear(9 * d, 8)

    def forward(self, x):
        b = x.shape[0]
        t = self.sp0(x).transpose(1, 2)                       # B 16 27
        q, k, v = self.qkv(self.ln(t)).chunk(3, -1)
        t = v + (q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])).softmax(-1) @ v
        t = self.sp1(t.transpose(1, 2).reshape(b, -1, 4, 4)).transpose(1, 2)
        return self.emb(t)


class VDSR(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, c, 3, 1, 1), nn.ReLU(), nn.Conv2d(c, 3, 3, 1, 1))

    def forward(self, x):
        up = F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False)
        return (up + self.body(up)).clamp(0, 1)


class SoftComposition(nn.Module):
    """FuseFormer's feed-forward: tokens to overlapping patches folded into a frame by
    nn.Fold, divided by the overlap count, split again by nn.Unfold."""

    def __init__(self, d=6, c=2):
        super().__init__()
        self.fold, self.unfold = nn.Fold(8, 3, padding=1, stride=2), nn.Unfold(3, padding=1,
                                                                                stride=2)
        self.fc1, self.fc2 = nn.Linear(d, c * 9), nn.Linear(c * 9, d)
        self.register_buffer("count", self.fold(torch.ones(1, c * 9, 16)))

    def forward(self, x):
        h = self.fold(F.gelu(self.fc1(x)).transpose(1, 2)) / self.count
        return x + self.fc2(self.unfold(h).transpose(1, 2))


class ArcFaceHead(nn.Module):
    """PReLU conv features, BatchNorm1d embedding, F.normalize, scaled cosine logits."""

    def __init__(self, ids=7, emb=5):
        super().__init__()
        self.conv, self.act = nn.Conv2d(3, 4, 3, 2, 1), nn.PReLU(4)
        self.fc, self.bn = nn.Linear(4 * 4 * 4, emb), nn.BatchNorm1d(emb)
        self.centres = nn.Parameter(torch.randn(ids, emb))

    def forward(self, x):
        e = self.bn(self.fc(self.act(self.conv(x)).flatten(1)))
        return 64.0 * F.linear(F.normalize(e), F.normalize(self.centres, dim=1))


class ResizeNormalizePatches(nn.Module):
    """A CLIP tower's in-model preprocessing: an antialiased bilinear resize (torchvision's
    Resize on tensors), mean/std normalization, a patch embedding, an L2-normalized output."""

    def __init__(self, d=6):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.48, 0.46, 0.41]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.27, 0.26, 0.28]).view(1, 3, 1, 1))
        self.patch = nn.Conv2d(3, d, 4, 4)

    def forward(self, x):
        x = F.interpolate(x, size=(8, 8), mode="bilinear", antialias=True)
        return F.normalize(self.patch((x - self.mean) / self.std).flatten(1), dim=-1)


def test_levit_attention_bias_table():
    _run(_seeded(LeViTAttention), _randn(2, 9, 8))


def test_deberta_disentangled_attention():
    _run(_seeded(Disentangled), _randn(2, 7, 8))


def test_hifigan_weight_norm_conv_transpose():
    _run(_seeded(HiFiGAN), _randn(1, 5, 6), rtol=1e-4, atol=1e-5)


def test_patchtst_revin_unfold():
    _run(_seeded(PatchTST), _randn(2, 3, 24) + 1.0, rtol=1e-4, atol=1e-4)


def test_dlinear_replicate_moving_average():
    _run(_seeded(DLinear), _randn(2, 20, 3))


def test_schnet_cdist_radial_bases():
    _run(_seeded(SchNet), _ints(5, 1, 7), _randn(1, 7, 3) * 1.5)


def test_yolov5_focus_sppf_decode():
    _run(_seeded(YOLOv5), _randn(1, 3, 16, 16), rtol=1e-4, atol=1e-4)


def test_centernet_peak_topk_gather():
    _run(_seeded(CenterNetDecode), _randn(1, 6, 5, 7))


def test_albert_shared_layer_sdpa_mask():
    attn = torch.ones(2, 6, dtype=torch.long)
    attn[1, 4:] = 0
    _run(_seeded(ALBERT), _ints(30, 2, 6), attn, rtol=1e-4, atol=1e-5)


def test_set_transformer_isab_pma():
    _run(_seeded(SetTransformer), _randn(2, 10, 3))


def test_dcnv2_bucketize_embedding_bag_cross():
    _run(_seeded(DCNv2), _randn(4, 4), _ints(20, 4, 5, seed=1), _ints(15, 4, 3, seed=2))


def test_lstm_projections():
    _run(_seeded(LSTMProj), _randn(2, 6, 5), rtol=1e-4, atol=1e-5)


def test_t2t_unfold_soft_split():
    _run(_seeded(T2TSoftSplit), _randn(1, 3, 8, 8))


def test_vdsr_bicubic_upsample():
    _run(_seeded(VDSR), torch.rand(1, 3, 6, 5))


def test_fuseformer_fold_soft_composition():
    _run(_seeded(SoftComposition), _randn(2, 16, 6))


def test_arcface_normalized_cosine_logits():
    _run(_seeded(ArcFaceHead), _randn(2, 3, 8, 8), rtol=1e-4, atol=1e-4)


def test_clip_antialiased_resize_preprocessing():
    _run(_seeded(ResizeNormalizePatches), torch.rand(2, 3, 15, 20))
