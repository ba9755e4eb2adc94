"""The twelfth round of new-user architectures (benchmarks/new_user_models_twelfth.py) through
relay.frontend.from_pytorch, small: a Gemma-2 decoding step (the KV cache an input, GQA by
repeat_interleave, positions offset by the cache length, a sliding-window mask, tanh
soft-capping, ``1 + w`` RMSNorm, GeGLU), a Phi parallel block (partial rotary, per-head q/k
RMSNorm, scaled_dot_product_attention), Mamba-2's chunked SSD (segsum from cumsum and -inf
filled tril masks, four-operand einsum), Griffin's RG-LRU unrolled, YOLOv8's C2f and DFL box
decoding with anchors from meshgrid, Mask2Former's masked cross-attention, an EGNN layer over an
edge list (index_select, index_add_, scatter_reduce amax), Nystromformer's iterative
pseudo-inverse, BigVGAN's anti-aliased Snake-beta with weight-normed convs, xDeepFM's CIN and a
Hyena operator (rfft / irfft padded to 2L); each built at opt_level 3 and checked against eager
PyTorch with every kernel native. (BitNet's round-to-nearest quantization flips a value where
two builds differ by an ulp, so its BitLinear is checked on inputs away from the ties.)"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_module as _seeded  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402


def _rotate_half(x):
    a, b = x.chunk(2, -1)
    return torch.cat([-b, a], -1)


def _rope(positions, dim):
    inv = 1.0 / 10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    ang = positions.float()[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], -1)
    return ang.cos(), ang.sin()


def _rms(x, w, eps=1e-6):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


class GemmaStep(nn.Module):
    def __init__(self, d=16, heads=4, kv_heads=2, window=3):
        super().__init__()
        self.h, self.kvh, self.hd, self.window = heads, kv_heads, d // heads, window
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.w = nn.Parameter(0.1 * torch.randn(d))
        self.up = nn.Linear(d, 4 * d, bias=False)
        self.down = nn.Linear(2 * d, d, bias=False)

    def forward(self, x, past_k, past_v):
        b, n, _ = x.shape
        h = _rms(x, 1.0 + self.w)
        qpos = torch.arange(n) + past_k.shape[2]
        cos, sin = _rope(qpos, self.hd)
        q = self.q(h).view(b, n, self.h, self.hd).transpose(1, 2)
        k, v = self.kv(h).view(b, n, 2, self.kvh, self.hd).permute(2, 0, 3, 1, 4)
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        k = torch.cat([past_k, k], 2).repeat_interleave(self.h // self.kvh, 1)
        v = torch.cat([past_v, v], 2).repeat_interleave(self.h // self.kvh, 1)
        s = torch.tanh(q @ k.transpose(-1, -2) / self.hd ** 0.5 / 50.0) * 50.0
        kpos = torch.arange(k.shape[2])
        hidden = (kpos[None, :] > qpos[:, None]) | (kpos[None, :] <= qpos[:, None] - self.window)
        a = (s.masked_fill(hidden, float("-inf")).softmax(-1) @ v).transpose(1, 2)
        x = x + self.o(a.reshape(b, n, -1))
        g, u = self.up(x).chunk(2, -1)
        return torch.tanh(self.down(F.gelu(g, approximate="tanh") * u) / 30.0) * 30.0


class PhiBlock(nn.Module):
    def __init__(self, d=16, heads=2, rot=4):
        super().__init__()
        self.h, self.hd, self.rot = heads, d // heads, rot
        self.ln, self.qkv = nn.LayerNorm(d), nn.Linear(d, 3 * d)
        self.qw, self.kw = nn.Parameter(torch.rand(self.hd) + 0.5), \
            nn.Parameter(torch.rand(self.hd) + 0.5)
        self.fc1, self.fc2, self.dense = nn.Linear(d, 2 * d), nn.Linear(2 * d, d), nn.Linear(d, d)

    def forward(self, x):
        b, n, d = x.shape
        cos, sin = _rope(torch.arange(n), self.rot)
        h = self.ln(x)
        q, k, v = self.qkv(h).view(b, n, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)

        def rotary(t):
            r, p = t[..., :self.rot], t[..., self.rot:]
            return torch.cat([r * cos + _rotate_half(r) * sin, p], -1)

        q, k = rotary(_rms(q, self.qw)), rotary(_rms(k, self.kw))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.dense(a.transpose(1, 2).reshape(b, n, d)) + \
            self.fc2(F.gelu(self.fc1(h), approximate="tanh"))


def _segsum(x):
    t = x.shape[-1]
    x = x.unsqueeze(-1).expand(*x.shape, t)
    x = x.masked_fill(~torch.tril(torch.ones(t, t, dtype=torch.bool), -1), 0.0)
    x = torch.cumsum(x, -2)
    return x.masked_fill(~torch.tril(torch.ones(t, t, dtype=torch.bool)), float("-inf"))


class ChunkedSSD(nn.Module):
    def __init__(self, d=8, heads=2, state=4, chunk=4):
        super().__init__()
        self.h, self.n, self.chunk = heads, state, chunk
        self.proj = nn.Linear(d, heads * d + 2 * state + heads)
        self.a_log = nn.Parameter(torch.log(torch.linspace(1.0, 4.0, heads)))

    def forward(self, u):
        bs, n, d = u.shape
        x, b, c, dt = self.proj(u).split([self.h * d, self.n, self.n, self.h], -1)
        dt = F.softplus(dt)
        x = x.view(bs, n, self.h, d) * dt.unsqueeze(-1)
        a = -torch.exp(self.a_log) * dt
        nc, ln = n // self.chunk, self.chunk
        x = x.reshape(bs, nc, ln, self.h, d)
        b = b.unsqueeze(2).expand(bs, n, self.h, self.n).reshape(bs, nc, ln, self.h, self.n)
        c = c.unsqueeze(2).expand(bs, n, self.h, self.n).reshape(bs, nc, ln, self.h, self.n)
        a = a.reshape(bs, nc, ln, self.h).permute(0, 3, 1, 2)
        a_cum = torch.cumsum(a, -1)
        y = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", c, b, torch.exp(_segsum(a)), x)
        states = torch.einsum("bclhn,bhcl,bclhp->bchpn", b, torch.exp(a_cum[..., -1:] - a_cum), x)
        states = torch.cat([torch.zeros_like(states[:, :1]), states], 1)
        across = torch.exp(_segsum(F.pad(a_cum[..., -1], (1, 0))))
        states = torch.einsum("bhzc,bchpn->bzhpn", across, states)[:, :-1]
        y = y + torch.einsum("bclhn,bchpn,bhcl->bclhp", c, states, torch.exp(a_cum))
        return y.reshape(bs, n, -1)


class RGLRU(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.ga, self.gx = nn.Linear(d, d), nn.Linear(d, d)
        self.conv = nn.Conv1d(d, d, 4, groups=d, padding=3)
        self.lam = nn.Parameter(torch.linspace(0.5, 4.0, d))

    def forward(self, x):
        x = self.conv(x.transpose(1, 2))[..., :x.shape[1]].transpose(1, 2)
        log_a = -8.0 * torch.sigmoid(self.ga(x)) * F.softplus(self.lam)
        xin = x * torch.sigmoid(self.gx(x)) * torch.sqrt(1.0 - torch.exp(2.0 * log_a))
        a, h, out = torch.exp(log_a), torch.zeros_like(x[:, 0]), []
        for t in range(x.shape[1]):
            h = a[:, t] * h + xin[:, t]
            out.append(h)
        return torch.stack(out, 1)


class YoloDFL(nn.Module):
    """A C2f block, a box and a class head, DFL decoding against meshgrid anchors."""

    def __init__(self, c=8, bins=4, nc=3, stride=8.0):
        super().__init__()
        self.bins, self.nc, self.stride = bins, nc, stride
        self.cv1, self.cv2 = nn.Conv2d(c, c, 1), nn.Conv2d(3 * c // 2, c, 1)
        self.m = nn.Conv2d(c // 2, c // 2, 3, padding=1)
        self.head = nn.Conv2d(c, 4 * bins + nc, 1)
        self.dfl = nn.Conv2d(bins, 1, 1, bias=False).requires_grad_(False)
        self.dfl.weight.data[:] = torch.arange(bins, dtype=torch.float32).view(1, bins, 1, 1)

    def forward(self, x):
        ys = list(F.silu(self.cv1(x)).chunk(2, 1))
        ys.append(ys[-1] + F.silu(self.m(ys[-1])))
        out = self.head(F.silu(self.cv2(torch.cat(ys, 1))))
        b, _, h, w = out.shape
        box, cls = out.view(b, -1, h * w).split([4 * self.bins, self.nc], 1)
        dist = self.dfl(box.view(b, 4, self.bins, -1).transpose(2, 1).softmax(1)).view(b, 4, -1)
        gy, gx = torch.meshgrid(torch.arange(h) + 0.5, torch.arange(w) + 0.5, indexing="ij")
        anchor = torch.stack([gx, gy], -1).view(-1, 2).transpose(0, 1).unsqueeze(0)
        lt, rb = dist.chunk(2, 1)
        dbox = torch.cat([anchor + (rb - lt) / 2, lt + rb], 1) * self.stride
        return torch.cat([dbox, cls.sigmoid()], 1)


class MaskedCrossAttention(nn.Module):
    def __init__(self, c=8, queries=4, heads=2):
        super().__init__()
        self.heads = heads
        self.q = nn.Parameter(torch.randn(queries, c))
        self.attn = nn.MultiheadAttention(c, heads, batch_first=True)
        self.embed = nn.Linear(c, c)

    def forward(self, feat):
        b = feat.shape[0]
        q = self.q.unsqueeze(0).expand(b, -1, -1)
        masks = torch.einsum("bqc,bchw->bqhw", self.embed(q), feat)
        small = F.interpolate(masks, scale_factor=0.5, mode="bilinear", align_corners=False)
        hidden = small.sigmoid().flatten(2) < 0.5
        hidden = hidden & ~hidden.all(-1, keepdim=True)
        hidden = hidden.unsqueeze(1).expand(-1, self.heads, -1, -1).flatten(0, 1)
        mem = F.avg_pool2d(feat, 2).flatten(2).transpose(1, 2)
        q = q + self.attn(q, mem, mem, attn_mask=hidden, need_weights=False)[0]
        return torch.einsum("bqc,bchw->bqhw", q, feat)


class EGNNLayer(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.edge = nn.Sequential(nn.Linear(2 * d + 1, d), nn.SiLU())
        self.coord = nn.Linear(d, 1)
        self.node = nn.Linear(3 * d, d)

    def forward(self, h, pos, edges):
        src, dst = edges[0], edges[1]
        diff = pos.index_select(0, dst) - pos.index_select(0, src)
        radial = (diff * diff).sum(-1, keepdim=True)
        m = self.edge(torch.cat([h.index_select(0, dst), h.index_select(0, src), radial], 1))
        count = torch.zeros_like(pos[:, :1]).index_add_(0, dst, torch.ones_like(radial))
        shift = torch.zeros_like(pos).index_add_(0, dst, diff * self.coord(m))
        peak = torch.zeros_like(h).scatter_reduce(0, dst.unsqueeze(1).expand_as(m), m, "amax")
        h = h + self.node(torch.cat([h, torch.zeros_like(h).index_add_(0, dst, m), peak], 1))
        return torch.cat([h, pos + shift / count.clamp(min=1.0)], 1)


class Nystrom(nn.Module):
    def __init__(self, d=8, landmarks=4, iters=6):
        super().__init__()
        self.m, self.iters, self.qkv = landmarks, iters, nn.Linear(d, 3 * d)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, -1)
        q = q / d ** 0.5
        ql = q.reshape(b, self.m, n // self.m, d).mean(-2)
        kl = k.reshape(b, self.m, n // self.m, d).mean(-2)
        k2 = (ql @ kl.transpose(-1, -2)).softmax(-1)
        eye = torch.eye(self.m)
        z = k2.transpose(-1, -2) / (k2.abs().sum(-2).max() * k2.abs().sum(-1).max())
        for _ in range(self.iters):
            kz = k2 @ z
            z = (0.25 * z) @ (13 * eye - kz @ (15 * eye - kz @ (7 * eye - kz)))
        return ((q @ kl.transpose(-1, -2)).softmax(-1) @ z) @ \
            ((ql @ k.transpose(-1, -2)).softmax(-1) @ v)


class AntiAliasSnake(nn.Module):
    def __init__(self, c=4, taps=6):
        super().__init__()
        self.c, self.taps = c, taps
        t = torch.arange(-taps // 2, taps // 2) + 0.5
        f = torch.kaiser_window(taps, beta=4.0, periodic=False) * torch.sinc(0.5 * t)
        self.register_buffer("filt", (f / f.sum()).view(1, 1, taps))
        self.log_alpha, self.log_beta = nn.Parameter(0.1 * torch.randn(c)), \
            nn.Parameter(0.1 * torch.randn(c))
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(c, c, 3, padding=2,
                                                                    dilation=2))

    def forward(self, x):
        filt, p = self.filt.expand(self.c, -1, -1), self.taps // 2 - 1
        up = 2 * F.conv_transpose1d(F.pad(x, (p, p), mode="replicate"), filt, stride=2,
                                    groups=self.c)
        up = up[..., 3 * p:-3 * p]
        alpha, beta = self.log_alpha.exp()[:, None], self.log_beta.exp()[:, None]
        up = up + 1.0 / (beta + 1e-9) * torch.sin(up * alpha).pow(2)
        down = F.conv1d(F.pad(up, (p, p + 1), mode="replicate"), filt, stride=2, groups=self.c)
        return self.conv(down)


class CIN(nn.Module):
    def __init__(self, cards=(5, 7, 3), d=4, h=6):
        super().__init__()
        self.register_buffer("offsets", torch.tensor([0, *cards[:-1]]).cumsum(0))
        self.emb = nn.Embedding(sum(cards), d)
        self.conv1, self.conv2 = nn.Conv1d(len(cards) ** 2, h, 1), \
            nn.Conv1d(h // 2 * len(cards), h, 1)

    def forward(self, cat):
        x0 = self.emb(cat + self.offsets)
        b, m, d = x0.shape
        z = F.relu(self.conv1(torch.einsum("bhd,bmd->bhmd", x0, x0).reshape(b, -1, d)))
        xk, direct = z.split([z.shape[1] // 2, z.shape[1] // 2], 1)
        z2 = F.relu(self.conv2(torch.einsum("bhd,bmd->bhmd", xk, x0).reshape(b, -1, d)))
        return torch.sigmoid(torch.cat([direct.sum(-1), z2.sum(-1)], 1))


class Hyena(nn.Module):
    def __init__(self, d=4, n=12):
        super().__init__()
        self.d = d
        self.proj = nn.Linear(d, 2 * d)
        t = torch.linspace(0, 1, n)[:, None]
        self.register_buffer("z", torch.cat([t, torch.cos(3 * t), torch.sin(3 * t)], -1))
        self.mlp = nn.Linear(3, d)
        self.bias = nn.Parameter(torch.randn(d, 1))

    def forward(self, x):
        n = x.shape[1]
        gate, v = self.proj(x).transpose(1, 2).split(self.d, 1)
        filt = (torch.sin(self.mlp(self.z[:n])) * torch.exp(-2.0 * self.z[:n, :1])).t()
        k_f = torch.fft.rfft(filt, n=2 * n) / (2 * n)
        y = torch.fft.irfft(torch.fft.rfft(v, n=2 * n) * k_f, n=2 * n, norm="forward")[..., :n]
        return (gate * (y + v * self.bias)).transpose(1, 2)


def test_gemma2_kv_cache_step():
    _run(_seeded(GemmaStep), _randn(1, 3, 16), _randn(1, 2, 5, 4, seed=1),
         _randn(1, 2, 5, 4, seed=2), rtol=1e-4, atol=1e-5)


def test_phi_partial_rotary_qk_norm():
    _run(_seeded(PhiBlock), _randn(2, 6, 16), rtol=1e-4, atol=1e-5)


def test_mamba2_chunked_ssd():
    _run(_seeded(ChunkedSSD), _randn(1, 8, 8), rtol=1e-4, atol=1e-5)


def test_griffin_rg_lru():
    _run(_seeded(RGLRU), _randn(2, 6, 8), rtol=1e-4, atol=1e-5)


def test_yolov8_c2f_dfl_anchors():
    _run(_seeded(YoloDFL), _randn(1, 8, 4, 5), rtol=1e-4, atol=1e-4)


def test_mask2former_masked_attention():
    _run(_seeded(MaskedCrossAttention), _randn(1, 8, 4, 4), rtol=1e-4, atol=1e-5)


def test_egnn_edge_list():
    g = torch.Generator().manual_seed(0)
    n, k = 6, 3
    dst = torch.arange(n).repeat_interleave(k)
    src = (dst + torch.randint(1, n, (n * k,), generator=g)) % n
    _run(_seeded(EGNNLayer), _randn(n, 8), _randn(n, 3, seed=1), torch.stack([src, dst]),
         rtol=1e-4, atol=1e-5)


def test_nystrom_pseudo_inverse():
    _run(_seeded(Nystrom), _randn(1, 8, 8), rtol=1e-3, atol=1e-4)


def test_bigvgan_anti_aliased_snake():
    _run(_seeded(AntiAliasSnake), _randn(1, 4, 16), rtol=1e-4, atol=1e-5)


def test_xdeepfm_cin():
    cat = torch.stack([_ints(c, 5, seed=s) for s, c in enumerate((5, 7, 3))], 1)
    _run(_seeded(CIN), cat)


def test_hyena_fft_long_conv():
    _run(_seeded(Hyena), _randn(1, 12, 4), rtol=1e-4, atol=1e-5)


def test_bitlinear_ternary_round_clamp():
    class BitLinear(nn.Linear):
        def forward(self, x):
            s = 127.0 / x.abs().amax(-1, keepdim=True).clamp(min=1e-5)
            xq = x + ((x * s).round().clamp(-128, 127) / s - x).detach()
            ws = 1.0 / self.weight.abs().mean().clamp(min=1e-5)
            wq = self.weight + ((self.weight * ws).round().clamp(-1, 1) / ws
                                - self.weight).detach()
            return F.relu(F.linear(xq, wq)) ** 2

    # integers over 127 scaled back by the row's max: x * s lands on integers, far from ties
    x = torch.tensor([[127.0, -64.0, 3.0, 100.0, -127.0, 5.0], [50.0, 127.0, 0.0, -1.0,
                                                               -20.0, 7.0]]) / 127.0
    _run(_seeded(BitLinear, 6, 5, False), x)
