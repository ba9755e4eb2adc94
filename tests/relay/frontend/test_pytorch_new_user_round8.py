"""The eighth round of new-user architectures through relay.frontend.from_pytorch, small: RWKV
(token shift by a cropping pad, causal linear attention by cumsum, squared-ReLU channel mix), a
bidirectional Mamba mixer (softplus step sizes, a selective scan as a Python loop, torch.flip),
a LLaMA-style block (grouped-query attention by repeat_interleave, ALiBi biases, RMSNorm,
SwiGLU, a tied output head), a modulated deformable conv (per-pixel offsets read by grid_sample
with border padding and align_corners=True), graph attention (softmax over incoming edges by
scatter_reduce amax and index_add), weight-standardized convs with GroupNorm and FiLM, a
TabTransformer (column embeddings, Mish), a log-mel front end (reflect-padded STFT as a conv1d,
mel matmul, log1p), ConvNeXt-V2's GRN (linalg.vector_norm), a NAFNet block (PixelUnshuffle,
SimpleGate, ICNR PixelShuffle), gMLP's spatial gating with logsumexp pooling and NeRF's volume
rendering (cumprod); each built at opt_level 3 and checked against eager PyTorch with every
kernel native."""

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


class RWKV(nn.Module):
    """Token shift (F.pad with a negative width), elu+1 keys, cumsum numerator and
    denominator, a receptance gate, a squared-ReLU channel mix."""

    def __init__(self, d=8):
        super().__init__()
        self.mix = nn.Parameter(torch.rand(d))
        self.k, self.v, self.r = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.ck, self.cv = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        p = F.pad(x, (0, 0, 1, -1))
        m = x * self.mix + p * (1 - self.mix)
        k = F.elu(self.k(m)) + 1
        x = x + torch.sigmoid(self.r(m)) * torch.cumsum(k * self.v(m), 1) / torch.cumsum(k, 1)
        return x + self.cv(torch.relu(self.ck(F.pad(x, (0, 0, 1, -1)))) ** 2)


class BiMamba(nn.Module):
    """A causal depthwise conv cut to length, softplus step sizes, B and C from the input,
    h = exp(dt A) h + dt B x looped over time, run forward and on the flipped sequence."""

    def __init__(self, d=6, state=4):
        super().__init__()
        self.state = state
        self.conv = nn.Conv1d(d, d, 3, groups=d, padding=2)
        self.xp = nn.Linear(d, 1 + 2 * state)
        self.dt = nn.Linear(1, d)
        self.a_log = nn.Parameter(torch.log(torch.arange(1, state + 1).float()).repeat(d, 1))

    def scan(self, x):
        n = x.shape[1]
        u = F.silu(self.conv(x.transpose(1, 2))[..., :n].transpose(1, 2))
        dt, bm, cm = self.xp(u).split([1, self.state, self.state], -1)
        dt = F.softplus(self.dt(dt))
        a = -torch.exp(self.a_log)
        h, ys = torch.zeros(x.shape[0], x.shape[2], self.state), []
        for t in range(n):
            h = torch.exp(dt[:, t, :, None] * a) * h \
                + dt[:, t, :, None] * bm[:, t, None, :] * u[:, t, :, None]
            ys.append((h * cm[:, t, None, :]).sum(-1))
        return torch.stack(ys, 1)

    def forward(self, x):
        return self.scan(x) + torch.flip(self.scan(torch.flip(x, [1])), [1])


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(1 + 0.1 * torch.randn(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.w


class LlamaAlibi(nn.Module):
    """Embeddings, RMSNorm, 4 query heads over 2 key/value heads (repeat_interleave), ALiBi
    biases with a causal mask, SwiGLU, the head tied to the embedding matrix."""

    def __init__(self, vocab=30, d=16, n=7, heads=4, kv=2):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv, d // heads
        self.emb = nn.Embedding(vocab, d)
        self.n1, self.n2, self.nf = RMSNorm(d), RMSNorm(d), RMSNorm(d)
        self.q, self.kvp = nn.Linear(d, d, bias=False), nn.Linear(d, 2 * kv * self.hd)
        self.o = nn.Linear(d, d, bias=False)
        self.gate, self.up, self.down = nn.Linear(d, 24), nn.Linear(d, 24), nn.Linear(24, d)
        slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
        pos = torch.arange(n)
        bias = slopes[:, None, None] * (pos[None, :] - pos[:, None]).float()
        self.register_buffer("bias", bias.masked_fill(torch.ones(n, n).triu(1).bool(), -1e9))

    def forward(self, idx):
        x = self.emb(idx)
        b, n, d = x.shape
        h = self.n1(x)
        q = self.q(h).view(b, n, self.h, self.hd).transpose(1, 2)
        k, v = self.kvp(h).view(b, n, 2, self.kv, self.hd).permute(2, 0, 3, 1, 4)
        k, v = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
        a = (q @ k.transpose(-1, -2) / math.sqrt(self.hd) + self.bias).softmax(-1)
        x = x + self.o((a @ v).transpose(1, 2).reshape(b, n, d))
        h = self.n2(x)
        x = x + self.down(F.silu(self.gate(h)) * self.up(h))
        return F.linear(self.nf(x), self.emb.weight)


class DeformConv(nn.Module):
    """Offsets and sigmoid modulation per pixel and 3x3 tap from a conv; each tap's grid read
    by bilinear grid_sample (border padding, align_corners=True); taps mixed by a 1x1 conv."""

    def __init__(self, c=4, o=6):
        super().__init__()
        self.off = nn.Conv2d(c, 27, 3, 1, 1)
        nn.init.normal_(self.off.weight, std=0.3)
        self.mix = nn.Conv2d(9 * c, o, 1)
        r = torch.arange(3).float() - 1
        ty, tx = torch.meshgrid(r, r, indexing="ij")
        self.register_buffer("taps", torch.stack([tx.flatten(), ty.flatten()], -1))

    def forward(self, x):
        b, c, hh, ww = x.shape
        o = self.off(x)
        off = o[:, :18].view(b, 9, 2, hh, ww).permute(0, 1, 3, 4, 2)
        px = torch.arange(ww).float().view(1, 1, 1, ww) + self.taps[:, 0].view(1, 9, 1, 1) \
            + off[..., 0]
        py = torch.arange(hh).float().view(1, 1, hh, 1) + self.taps[:, 1].view(1, 9, 1, 1) \
            + off[..., 1]
        grid = torch.stack([2 * px / (ww - 1) - 1, 2 * py / (hh - 1) - 1], -1)
        s = F.grid_sample(x, grid.view(b, 9 * hh, ww, 2), mode="bilinear",
                          padding_mode="border", align_corners=True)
        s = s.view(b, c, 9, hh, ww) * torch.sigmoid(o[:, 18:])[:, None]
        return self.mix(s.reshape(b, c * 9, hh, ww))


class GAT(nn.Module):
    """Two heads over a fixed edge list; per-edge LeakyReLU scores, the softmax over each
    node's incoming edges (max by scatter_reduce amax, sums by index_add), ELU."""

    def __init__(self, n=12, f=5, o=4, heads=2):
        super().__init__()
        self.n, self.h, self.o = n, heads, o
        g = torch.Generator().manual_seed(4)
        src = torch.cat([torch.randint(0, n, (30,), generator=g), torch.arange(n)])
        dst = torch.cat([torch.randint(0, n, (30,), generator=g), torch.arange(n)])
        self.register_buffer("src", src)
        self.register_buffer("dst", dst)
        self.lin = nn.Linear(f, heads * o, bias=False)
        self.a_s, self.a_d = nn.Parameter(torch.randn(1, heads, o)), nn.Parameter(
            torch.randn(1, heads, o))

    def forward(self, x):
        h = self.lin(x).view(-1, self.h, self.o)
        e = F.leaky_relu((h * self.a_s).sum(-1)[self.src] + (h * self.a_d).sum(-1)[self.dst],
                         0.2)
        idx = self.dst[:, None].expand(-1, self.h)
        mx = torch.full((self.n, self.h), -1e9).scatter_reduce(0, idx, e, "amax")
        w = torch.exp(e - mx[self.dst])
        den = torch.zeros(self.n, self.h).index_add(0, self.dst, w)
        msg = (w / den[self.dst])[..., None] * h[self.src]
        return F.elu(torch.zeros(self.n, self.h, self.o).index_add(0, self.dst, msg).flatten(1))


class StdConv(nn.Conv2d):
    def forward(self, x):
        w = self.weight
        w = (w - w.mean((1, 2, 3), keepdim=True)) / torch.sqrt(
            w.var((1, 2, 3), keepdim=True, unbiased=False) + 1e-10)
        return F.conv2d(x, w, self.bias, self.stride, self.padding)


class FiLMStd(nn.Module):
    """Weight-standardized 3x3 convs, GroupNorm, the activation scaled and shifted by (1 +
    gamma, beta) from a label embedding."""

    def __init__(self, c=8):
        super().__init__()
        self.emb = nn.Embedding(5, 6)
        self.film = nn.Linear(6, 2 * c)
        self.c1, self.c2 = StdConv(3, c, 3, 1, 1), StdConv(c, c, 3, 2, 1, bias=False)
        self.gn = nn.GroupNorm(4, c)

    def forward(self, x, label):
        gamma, beta = self.film(self.emb(label))[:, :, None, None].chunk(2, 1)
        y = F.relu(self.gn(self.c1(x)) * (1 + gamma) + beta)
        return self.c2(y)


class TabTransformer(nn.Module):
    """Categorical columns through one table with per-column offsets plus column
    embeddings, a transformer layer, the layer-normed continuous features, an MLP with Mish."""

    def __init__(self, cards=(3, 5, 4), conts=2, d=8):
        super().__init__()
        self.register_buffer("offsets", torch.tensor([0] + list(cards[:-1])).cumsum(0))
        self.emb = nn.Embedding(sum(cards), d)
        self.col = nn.Parameter(torch.randn(len(cards), d))
        self.tx = nn.TransformerEncoderLayer(d, 2, 16, dropout=0.0, batch_first=True)
        self.cnorm = nn.LayerNorm(conts)
        self.mlp = nn.Sequential(nn.Linear(len(cards) * d + conts, 12), nn.Mish(),
                                 nn.Linear(12, 1))

    def forward(self, cat, cont):
        tok = self.tx(self.emb(cat + self.offsets) + self.col)
        return self.mlp(torch.cat([tok.flatten(1), self.cnorm(cont)], 1))


class LogMel(nn.Module):
    """Reflect padding, a Hann-windowed DFT as one strided conv1d, power, a mel matrix,
    log1p, per-band normalization over time."""

    def __init__(self, n_fft=32, hop=8, mels=6):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        t, f = torch.arange(n_fft).float(), torch.arange(n_fft // 2 + 1).float()
        ang = 2 * math.pi * f[:, None] * t[None] / n_fft
        win = torch.hann_window(n_fft)
        self.register_buffer("kern", torch.cat([torch.cos(ang) * win,
                                                -torch.sin(ang) * win])[:, None])
        self.register_buffer("fbank", torch.rand(n_fft // 2 + 1, mels))

    def forward(self, wav):
        x = F.pad(wav[:, None], (self.n_fft // 2, self.n_fft // 2), mode="reflect")
        re, im = F.conv1d(x, self.kern, stride=self.hop).chunk(2, 1)
        mel = torch.log1p((re * re + im * im).transpose(1, 2) @ self.fbank)
        return (mel - mel.mean(1, keepdim=True)) / (mel.std(1, keepdim=True) + 1e-5)


class GRNBlock(nn.Module):
    """ConvNeXt-V2: depthwise 7x7, channels-last LayerNorm, GELU MLP with global response
    normalization (spatial L2 norm by linalg.vector_norm over its channel mean)."""

    def __init__(self, c=8):
        super().__init__()
        self.dw, self.norm = nn.Conv2d(c, c, 7, 1, 3, groups=c), nn.LayerNorm(c)
        self.pw1, self.pw2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma, self.beta = nn.Parameter(torch.randn(4 * c)), nn.Parameter(
            torch.randn(4 * c))

    def forward(self, x):
        y = F.gelu(self.pw1(self.norm(self.dw(x).permute(0, 2, 3, 1))))
        gx = torch.linalg.vector_norm(y, 2, dim=(1, 2), keepdim=True)
        y = self.gamma * (y * gx / (gx.mean(-1, keepdim=True) + 1e-6)) + self.beta + y
        return x + self.pw2(y).permute(0, 3, 1, 2)


class NAF(nn.Module):
    """PixelUnshuffle down, a NAF block (channel LayerNorm written out, depthwise conv,
    SimpleGate, simplified channel attention), ICNR-initialized 1x1 + PixelShuffle up."""

    def __init__(self, c=4):
        super().__init__()
        self.down = nn.Sequential(nn.PixelUnshuffle(2), nn.Conv2d(4 * c, 2 * c, 1))
        self.c1 = nn.Conv2d(2 * c, 4 * c, 1)
        self.dw = nn.Conv2d(4 * c, 4 * c, 3, 1, 1, groups=4 * c)
        self.sca = nn.Conv2d(2 * c, 2 * c, 1)
        up = nn.Conv2d(2 * c, 4 * c, 1, bias=False)
        with torch.no_grad():
            up.weight.copy_(torch.randn(c, 2 * c, 1, 1).repeat_interleave(4, 0))
        self.up = nn.Sequential(up, nn.PixelShuffle(2))

    def forward(self, x):
        y = self.down(x)
        mu = y.mean(1, keepdim=True)
        n = (y - mu) / torch.sqrt((y - mu).pow(2).mean(1, keepdim=True) + 1e-6)
        a, b = self.dw(self.c1(n)).chunk(2, 1)
        g = a * b
        y = y + g * self.sca(F.adaptive_avg_pool2d(g, 1))
        return x + self.up(y)


class GMLP(nn.Module):
    """gMLP's spatial gating (a linear layer over the token axis gating half the channels),
    logsumexp pooling over tokens."""

    def __init__(self, vocab=40, n=9, d=8):
        super().__init__()
        self.emb, self.norm, self.vnorm = nn.Embedding(vocab, d), nn.LayerNorm(d), \
            nn.LayerNorm(2 * d)
        self.inp, self.out = nn.Linear(d, 4 * d), nn.Linear(2 * d, d)
        self.proj = nn.Linear(n, n)

    def forward(self, idx):
        x = self.emb(idx)
        u, v = F.gelu(self.inp(self.norm(x))).chunk(2, -1)
        x = x + self.out(u * self.proj(self.vnorm(v).transpose(1, 2)).transpose(1, 2))
        return torch.logsumexp(2 * x, 1) / 2


class NeRFRender(nn.Module):
    """Samples along rays, sin/cos encoding, an MLP to density and colour, alpha
    compositing with an exclusive cumprod transmittance; colour, depth and opacity."""

    def __init__(self, samples=8, w=16):
        super().__init__()
        self.register_buffer("t", torch.linspace(2.0, 6.0, samples))
        self.register_buffer("freqs", 2.0 ** torch.arange(3) * math.pi)
        self.mlp = nn.Sequential(nn.Linear(21, w), nn.ReLU(), nn.Linear(w, 4))

    def forward(self, o, d):
        pts = o[:, None] + d[:, None] * self.t[:, None]
        a = pts[..., None] * self.freqs
        h = self.mlp(torch.cat([pts, torch.sin(a).flatten(-2), torch.cos(a).flatten(-2)], -1))
        sigma, rgb = F.relu(h[..., 0]), torch.sigmoid(h[..., 1:])
        delta = torch.cat([self.t[1:] - self.t[:-1], torch.full((1,), 1e10)])
        alpha = 1 - torch.exp(-sigma * delta * d.norm(dim=-1, keepdim=True))
        trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha + 1e-10], -1),
                              -1)[:, :-1]
        wts = alpha * trans
        return torch.cat([(wts[..., None] * rgb).sum(1), (wts * self.t).sum(1, keepdim=True),
                          wts.sum(1, keepdim=True)], -1)


def test_rwkv_token_shift_cumsum_attention():
    _run(_seeded(RWKV), _randn(2, 9, 8))


def test_bidirectional_mamba_selective_scan():
    _run(_seeded(BiMamba), _randn(1, 7, 6))


def test_llama_gqa_alibi_tied_head():
    _run(_seeded(LlamaAlibi), _ints(30, 2, 7))


def test_modulated_deformable_conv_grid_sample_border():
    _run(_seeded(DeformConv), _randn(1, 4, 6, 7))


def test_gat_scatter_softmax():
    _run(_seeded(GAT), _randn(12, 5))


def test_weight_standardization_groupnorm_film():
    _run(_seeded(FiLMStd), _randn(2, 3, 8, 8), torch.tensor([1, 4]))


def test_tab_transformer_column_embeddings_mish():
    cat = torch.stack([_ints(k, 4, seed=k) for k in (3, 5, 4)], 1)
    _run(_seeded(TabTransformer), cat, _randn(4, 2))


def test_logmel_stft_as_conv():
    _run(_seeded(LogMel), _randn(2, 200) * 0.1, rtol=1e-4, atol=1e-4)


def test_convnextv2_grn_vector_norm():
    _run(_seeded(GRNBlock), _randn(1, 8, 6, 6))


def test_nafnet_pixel_unshuffle_simple_gate():
    _run(_seeded(NAF), _randn(1, 4, 8, 6))


def test_gmlp_spatial_gating_logsumexp():
    _run(_seeded(GMLP), _ints(40, 2, 9))


def test_nerf_volume_rendering_cumprod():
    _run(_seeded(NeRFRender), _randn(10, 3) * 0.1, _randn(10, 3, seed=1) * 0.3 + 1.0)
