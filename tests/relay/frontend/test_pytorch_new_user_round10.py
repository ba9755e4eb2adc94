"""The tenth round of new-user architectures through relay.frontend.from_pytorch, small: GFNet's
global filter (rfft2, a complex weight, irfft2), EfficientViT's ReLU linear attention (a ones
column padded onto v), ToMe's token merging (argsort, gather, scatter_reduce mean), an
Instant-NGP hash grid (floor, int64 hashing by ^ and &, a table gather, trilinear weights),
RetNet's retention (a decay mask built in the graph, GroupNorm over heads), the Differential
Transformer (two softmaxes subtracted, nn.RMSNorm), a DiT block (adaLN-Zero, timestep
embedding, einsum unpatchify), leaky integrate-and-fire spiking layers, RAFT's correlation
lookup (a pooled all-pairs volume sampled by grid_sample, a ConvGRU), SAM's mask decoder
(Fourier features, two-way attention, ConvTranspose2d, hypernetwork masks), EnCodec
(reflect-padded strided Conv1d, ELU, a residual vector quantizer), xLSTM's parallel mLSTM
(logsigmoid, cumsum, a max-stabilized gate matrix) and Restormer (transposed attention,
gated depthwise FFN, PixelUnshuffle / PixelShuffle); each built at opt_level 3 and checked
against eager PyTorch with every kernel native."""

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


class GlobalFilterBlock(nn.Module):
    def __init__(self, d=6, h=4, w=5):
        super().__init__()
        self.h, self.w = h, w
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.weight = nn.Parameter(torch.randn(h, w // 2 + 1, d, 2))
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        b, n, c = x.shape
        y = torch.fft.rfft2(self.n1(x).view(b, self.h, self.w, c), dim=(1, 2), norm="ortho")
        y = torch.fft.irfft2(y * torch.view_as_complex(self.weight), s=(self.h, self.w),
                             dim=(1, 2), norm="ortho").reshape(b, n, c)
        return x + self.mlp(self.n2(y))


class LiteMLA(nn.Module):
    def __init__(self, c=8, dim=4):
        super().__init__()
        self.dim = dim
        self.qkv = nn.Conv2d(c, 3 * c, 1, bias=False)
        self.agg = nn.Conv2d(3 * c, 3 * c, 5, padding=2, groups=3 * c, bias=False)
        self.proj = nn.Conv2d(2 * c, c, 1)

    def forward(self, x):
        b, _, h, w = x.shape
        qkv = self.qkv(x)
        ms = torch.cat([qkv, self.agg(qkv)], 1).reshape(b, -1, 3 * self.dim, h * w)
        q, k, v = ms.transpose(-1, -2).split(self.dim, -1)
        q, k = F.relu(q), F.relu(k)
        v = F.pad(v, (0, 1), value=1.0)
        out = q @ (k.transpose(-1, -2) @ v)
        out = out[..., :-1] / (out[..., -1:] + 1e-15)
        return self.proj(out.transpose(-1, -2).reshape(b, -1, h, w))


class ToMe(nn.Module):
    def __init__(self, d=8, r=2):
        super().__init__()
        self.r, self.lin = r, nn.Linear(d, d)

    def forward(self, x):
        x = self.lin(x)
        m = x / x.norm(dim=-1, keepdim=True)
        node_max, node_idx = (m[:, ::2] @ m[:, 1::2].transpose(-1, -2)).max(-1)
        edge = node_max.argsort(-1, descending=True)[..., None]
        unm, src = edge[:, self.r:], edge[:, :self.r]
        dst = node_idx[..., None].gather(1, src)
        xa, xb, c = x[:, ::2], x[:, 1::2], x.shape[-1]
        merged = xb.scatter_reduce(1, dst.expand(-1, -1, c),
                                   xa.gather(1, src.expand(-1, -1, c)), reduce="mean")
        return torch.cat([xa.gather(1, unm.expand(-1, -1, c)), merged], 1)


class HashGrid(nn.Module):
    def __init__(self, levels=2, log2_table=5, feat=2):
        super().__init__()
        self.res, self.mask = [4.0, 6.0][:levels], 2 ** log2_table - 1
        self.table = nn.Parameter(torch.rand(levels, 2 ** log2_table, feat) - 0.5)
        self.register_buffer("primes", torch.tensor([1, 2654435761, 805459861]))
        self.register_buffer("corners", torch.tensor(
            [[(c >> 2) & 1, (c >> 1) & 1, c & 1] for c in range(8)]))

    def forward(self, x):
        feats = []
        for lvl, res in enumerate(self.res):
            p = x * res
            p0 = torch.floor(p)
            h = (p0.long()[:, None, :] + self.corners) * self.primes
            idx = (h[..., 0] ^ h[..., 1] ^ h[..., 2]) & self.mask
            w = torch.where(self.corners.bool(), (p - p0)[:, None], 1 - (p - p0)[:, None])
            feats.append((self.table[lvl][idx] * w.prod(-1)[..., None]).sum(1))
        return torch.cat(feats, -1)


class Retention(nn.Module):
    def __init__(self, d=8, heads=2):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.qkv, self.g = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.register_buffer("log_gamma",
                             torch.log(1 - 2.0 ** (-2 - torch.arange(heads).float())))
        self.gn = nn.GroupNorm(heads, d, affine=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = (t.view(b, n, self.h, self.hd).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, -1))
        pos = torch.arange(n)
        decay = torch.exp(self.log_gamma[:, None, None] * (pos[:, None] - pos[None]).float())
        decay = decay.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), 0.0)
        s = (q @ k.transpose(-1, -2)) * decay / decay.sum(-1, keepdim=True).sqrt()
        s = s / s.abs().sum(-1, keepdim=True).clamp(min=1.0)
        y = self.gn((s @ v).transpose(1, 2).reshape(b * n, d)).view(b, n, d)
        return F.silu(self.g(x)) * y


class DiffAttention(nn.Module):
    def __init__(self, d=8, heads=2):
        super().__init__()
        self.h, self.hd = heads, d // heads // 2
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.lq1, self.lk1, self.lq2, self.lk2 = (nn.Parameter(0.3 * torch.randn(self.hd))
                                                  for _ in range(4))
        self.norm, self.pre = nn.RMSNorm(2 * self.hd), nn.RMSNorm(d)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.pre(x)).chunk(3, -1)
        q = q.reshape(b, n, 2 * self.h, self.hd).transpose(1, 2)
        k = k.reshape(b, n, 2 * self.h, self.hd).transpose(1, 2)
        v = v.reshape(b, n, self.h, 2 * self.hd).transpose(1, 2)
        mask = torch.ones(n, n, dtype=torch.bool).triu(1)
        a = (q @ k.transpose(-1, -2)).masked_fill(mask, float("-inf")).softmax(-1)
        a = a.view(b, self.h, 2, n, n)
        lam = torch.exp((self.lq1 * self.lk1).sum()) - torch.exp((self.lq2 * self.lk2).sum())
        y = self.norm((a[:, :, 0] - (lam + 0.2) * a[:, :, 1]) @ v)
        return y.transpose(1, 2).reshape(b, n, d)


class DiTTail(nn.Module):
    def __init__(self, d=8, p=2, c=3):
        super().__init__()
        self.p, self.c = p, c
        self.embed = nn.Conv2d(c, d, p, p)
        self.t_mlp = nn.Linear(16, d)
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(d, 3 * d))
        self.norm = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.out = nn.Linear(d, p * p * c)

    def forward(self, x, t):
        n, _, hh, ww = x.shape
        freqs = torch.exp(-math.log(10000.0) * torch.arange(8, dtype=torch.float32) / 8)
        args = t[:, None] * freqs[None]
        cond = self.t_mlp(torch.cat([torch.cos(args), torch.sin(args)], -1))
        shift, scale, gate = self.ada(cond).chunk(3, dim=1)
        tok = self.embed(x).flatten(2).transpose(1, 2)
        tok = tok + gate[:, None] * (self.norm(tok) * (1 + scale[:, None]) + shift[:, None])
        h, w = hh // self.p, ww // self.p
        y = self.out(tok).reshape(n, h, w, self.p, self.p, self.c)
        return torch.einsum("nhwpqc->nchpwq", y).reshape(n, self.c, hh, ww)


class Spiking(nn.Module):
    def __init__(self, steps=4):
        super().__init__()
        self.steps = steps
        self.conv, self.fc = nn.Conv2d(1, 4, 3, padding=1), nn.Linear(4 * 16, 3)

    def forward(self, x):
        cur = 3.0 * self.conv(x)
        m1 = s1 = torch.zeros_like(cur)
        m2 = s2 = torch.zeros(x.shape[0], 3)
        out = 0
        for _ in range(self.steps):
            m1 = 0.9 * m1 + cur - s1
            s1 = (m1 > 1.0).float()
            m2 = 0.9 * m2 + self.fc(F.max_pool2d(s1, 2).flatten(1)) - s2
            s2 = (m2 > 1.0).float()
            out = out + m2
        return out / self.steps


class RAFTLookup(nn.Module):
    def __init__(self, c=6, hid=4, r=1):
        super().__init__()
        self.r = r
        d = torch.arange(-r, r + 1, dtype=torch.float32)
        dy, dx = torch.meshgrid(d, d, indexing="ij")
        self.register_buffer("delta", torch.stack([dx, dy], -1).view(1, 2 * r + 1, 2 * r + 1, 2))
        self.z = nn.Conv2d(hid + 2 * (2 * r + 1) ** 2, hid, 3, padding=1)
        self.q = nn.Conv2d(hid + 2 * (2 * r + 1) ** 2, hid, 3, padding=1)
        self.flow = nn.Conv2d(hid, 2, 3, padding=1)
        self.hid = hid

    def forward(self, f1, f2):
        b, c, h, w = f1.shape
        corr = torch.einsum("bchw,bcuv->bhwuv", f1, f2) / math.sqrt(c)
        pyramid = [corr.reshape(b * h * w, 1, h, w)]
        pyramid.append(F.avg_pool2d(pyramid[0], 2, 2))
        ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32),
                                torch.arange(w, dtype=torch.float32), indexing="ij")
        coords0 = torch.stack([xs, ys], 0)[None].expand(b, -1, -1, -1)
        coords, net = coords0, torch.zeros(b, self.hid, h, w)
        for _ in range(2):
            centre = coords.permute(0, 2, 3, 1).reshape(b * h * w, 1, 1, 2)
            feats = []
            for i, lvl in enumerate(pyramid):
                pts = centre / 2 ** i + self.delta
                hh, ww = lvl.shape[-2:]
                grid = torch.stack([2 * pts[..., 0] / (ww - 1) - 1,
                                    2 * pts[..., 1] / (hh - 1) - 1], -1)
                feats.append(F.grid_sample(lvl, grid, align_corners=True).view(b, h, w, -1))
            hx = torch.cat([net, torch.cat(feats, -1).permute(0, 3, 1, 2)], 1)
            z = torch.sigmoid(self.z(hx))
            net = (1 - z) * net + z * torch.tanh(self.q(hx))
            coords = coords + self.flow(net)
        return coords - coords0


class SAMDecoder(nn.Module):
    def __init__(self, d=8, masks=2):
        super().__init__()
        self.masks = masks
        self.register_buffer("g", torch.randn(2, d // 2))
        self.point_emb = nn.Parameter(torch.randn(2, d))
        self.tokens = nn.Parameter(torch.randn(masks, d))
        self.t2i = nn.MultiheadAttention(d, 2, batch_first=True)
        self.i2t = nn.MultiheadAttention(d, 2, batch_first=True)
        self.up = nn.Sequential(nn.ConvTranspose2d(d, 4, 2, 2), nn.GELU())
        self.hyper = nn.ModuleList([nn.Linear(d, 4) for _ in range(masks)])

    def pe(self, c):
        c = (2 * c - 1) @ self.g * (2 * math.pi)
        return torch.cat([torch.sin(c), torch.cos(c)], -1)

    def forward(self, emb, points, labels):
        b, c, h, w = emb.shape
        pts = self.pe(points / 16.0) + torch.where(labels[..., None] == 1, self.point_emb[1],
                                                   self.point_emb[0])
        tok = torch.cat([self.tokens[None].expand(b, -1, -1), pts], 1)
        ys = (torch.arange(h, dtype=torch.float32) + 0.5) / h
        xs = (torch.arange(w, dtype=torch.float32) + 0.5) / w
        img_pe = self.pe(torch.stack([xs[None].expand(h, w), ys[:, None].expand(h, w)], -1))
        img = emb.flatten(2).transpose(1, 2)
        k = img + img_pe.reshape(1, h * w, c)
        tok = tok + self.t2i(tok, k, img, need_weights=False)[0]
        img = img + self.i2t(k, tok, tok, need_weights=False)[0]
        up = self.up(img.transpose(1, 2).reshape(b, c, h, w))
        hyp = torch.stack([m(tok[:, i]) for i, m in enumerate(self.hyper)], 1)
        return (hyp @ up.flatten(2)).view(b, self.masks, *up.shape[-2:])


class EnCodecRVQ(nn.Module):
    def __init__(self, d=6, codebooks=2, bins=8):
        super().__init__()
        self.c1, self.c2 = nn.Conv1d(1, 4, 7), nn.Conv1d(4, d, 4, 2)
        self.codebooks = nn.Parameter(torch.randn(codebooks, bins, d))

    def forward(self, wav):
        x = F.elu(self.c1(F.pad(wav, (3, 3), mode="reflect")))
        z = self.c2(F.pad(x, (1, 1), mode="reflect")).transpose(1, 2)
        res, q = z, torch.zeros_like(z)
        for cb in self.codebooks:
            dist = res.pow(2).sum(-1, keepdim=True) - 2 * res @ cb.T + cb.pow(2).sum(-1)
            pick = F.embedding(dist.argmin(-1), cb)
            q, res = q + pick, res - pick
        return torch.cat([q, z], -1)


class MLSTM(nn.Module):
    def __init__(self, d=8, heads=2):
        super().__init__()
        self.h = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.gates = nn.Linear(3 * d, 2 * heads)
        self.gn = nn.GroupNorm(heads, d)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, -1)
        ig, fg = self.gates(torch.cat([q, k, v], -1)).transpose(1, 2).chunk(2, 1)
        lf = F.logsigmoid(fg).cumsum(-1)
        q, k, v = (t.view(b, n, self.h, -1).transpose(1, 2) for t in (q, k, v))
        logd = lf[..., :, None] - lf[..., None, :] + ig[..., None, :]
        logd = logd.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
        mx = logd.max(-1, keepdim=True).values
        c = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) * torch.exp(logd - mx)
        norm = torch.maximum(c.sum(-1, keepdim=True).abs(), torch.exp(-mx))
        y = (c / (norm + 1e-6)) @ v
        return self.gn(y.transpose(1, 2).reshape(b * n, d)).view(b, n, d)


class Restormer(nn.Module):
    def __init__(self, c=4, heads=2):
        super().__init__()
        self.h = heads
        self.temp = nn.Parameter(1 + 0.1 * torch.randn(heads, 1, 1))
        self.qkv = nn.Conv2d(c, 3 * c, 1, bias=False)
        self.dw = nn.Conv2d(3 * c, 3 * c, 3, padding=1, groups=3 * c, bias=False)
        self.ffn_in = nn.Conv2d(c, 4 * c, 1, bias=False)
        self.ffn_dw = nn.Conv2d(4 * c, 4 * c, 3, padding=1, groups=4 * c, bias=False)
        self.ffn_out = nn.Conv2d(2 * c, c, 1, bias=False)
        self.down = nn.Sequential(nn.Conv2d(c, c // 2, 3, padding=1), nn.PixelUnshuffle(2))
        self.up = nn.Sequential(nn.Conv2d(2 * c, 4 * c, 3, padding=1), nn.PixelShuffle(2))

    def forward(self, x):
        b, c, h, w = x.shape
        t = x.flatten(2).transpose(1, 2)
        t = (t - t.mean(-1, keepdim=True)) / torch.sqrt(t.var(-1, keepdim=True,
                                                             unbiased=False) + 1e-5)
        y = t.transpose(1, 2).reshape(b, c, h, w)
        q, k, v = (z.reshape(b, self.h, c // self.h, h * w) for z in self.dw(self.qkv(y))
                   .chunk(3, 1))
        a = (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-1, -2)
             * self.temp).softmax(-1)
        x = x + (a @ v).reshape(b, c, h, w)
        g1, g2 = self.ffn_dw(self.ffn_in(x)).chunk(2, 1)
        x = x + self.ffn_out(F.gelu(g1) * g2)
        return self.up(self.down(x))


def test_gfnet_global_filter():
    _run(_seeded(GlobalFilterBlock), _randn(2, 20, 6), rtol=1e-4, atol=1e-5)


def test_efficientvit_relu_linear_attention():
    _run(_seeded(LiteMLA), _randn(1, 8, 6, 5), rtol=1e-4, atol=1e-5)


def test_tome_bipartite_merge():
    _run(_seeded(ToMe), _randn(2, 10, 8))


def test_instant_ngp_hash_grid():
    _run(_seeded(HashGrid), torch.rand(64, 3))


def test_retnet_retention_decay_mask():
    _run(_seeded(Retention), _randn(2, 7, 8), rtol=1e-4, atol=1e-5)


def test_diff_transformer_attention_rms_norm():
    _run(_seeded(DiffAttention), _randn(2, 6, 8), rtol=1e-4, atol=1e-5)


def test_dit_adaln_unpatchify():
    _run(_seeded(DiTTail), _randn(2, 3, 4, 6), torch.tensor([10.0, 500.0]),
         rtol=1e-4, atol=1e-5)


def test_spiking_lif_thresholds():
    _run(_seeded(Spiking), torch.rand(2, 1, 8, 8))


def test_raft_correlation_lookup_convgru():
    _run(_seeded(RAFTLookup), _randn(1, 6, 4, 4), _randn(1, 6, 4, 4, seed=1),
         rtol=1e-4, atol=1e-4)


def test_sam_two_way_hypernetwork_masks():
    _run(_seeded(SAMDecoder), _randn(1, 8, 4, 4), torch.tensor([[[3.0, 9.0], [12.0, 5.0]]]),
         torch.tensor([[1, 0]]), rtol=1e-4, atol=1e-5)


def test_encodec_reflect_conv_rvq():
    _run(_seeded(EnCodecRVQ), _randn(1, 1, 40))


def test_xlstm_parallel_mlstm():
    _run(_seeded(MLSTM), _randn(2, 6, 8), rtol=1e-4, atol=1e-4)


def test_restormer_transposed_attention_pixel_shuffles():
    _run(_seeded(Restormer), _randn(1, 4, 6, 8), rtol=1e-4, atol=1e-5)


def test_tokens_through_retention_and_diff_attention():
    """Both token mixers after one embedding, as the RetNet / Diff Transformer models stack
    them."""

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.ret, self.diff = nn.Embedding(30, 8), Retention(), DiffAttention()

        def forward(self, idx):
            x = self.emb(idx)
            x = x + self.ret(x)
            return x + self.diff(x)

    _run(_seeded(Stack), _ints(30, 2, 7), rtol=1e-4, atol=1e-5)
