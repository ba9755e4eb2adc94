"""The sixth round of new-user architectures through relay.frontend.from_pytorch, small: SegFormer's
overlapping patch embedding and spatial-reduction attention with a Mix-FFN, PoolFormer's
``avgpool(x) - x`` mixer, an hourglass, ENet's asymmetric / dilated PReLU bottlenecks, BiFPN's
normalized fusion, Conv-TasNet's dilated depthwise conv1d and global layer norm, MaxViT's block
and grid attention, ESRGAN's dense blocks and pixel shuffle, a NeRF MLP (sin/cos encodings,
inline in the kernels), Perceiver's latent cross-attention, LeNet-5 and ResNet-D's average-pool
shortcut; each built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402


def _seeded(cls, *args):
    torch.manual_seed(1)
    return cls(*args)


class SegFormerStage(nn.Module):
    """An overlapping patch embedding (3x3/2 conv, LayerNorm), attention whose keys and values
    come from a 2x2/2 conv of the token grid, a Mix-FFN with a 3x3 depthwise conv."""

    def __init__(self, cin=3, d=16, heads=2, sr=2):
        super().__init__()
        self.h = heads
        self.embed, self.ln0 = nn.Conv2d(cin, d, 3, 2, 1), nn.LayerNorm(d)
        self.n1, self.n2, self.nr = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.kv, self.proj = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.red = nn.Conv2d(d, d, sr, sr)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.dw = nn.Conv2d(4 * d, 4 * d, 3, 1, 1, groups=4 * d)

    def forward(self, x):
        x = self.embed(x)
        b, d, hh, ww = x.shape
        t = self.ln0(x.flatten(2).transpose(1, 2))
        y = self.n1(t)
        q = self.q(y).reshape(b, -1, self.h, d // self.h).permute(0, 2, 1, 3)
        r = self.nr(self.red(y.transpose(1, 2).reshape(b, d, hh, ww)).flatten(2).transpose(1, 2))
        kv = self.kv(r).reshape(b, -1, 2, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = (q @ kv[0].transpose(-2, -1) * (d // self.h) ** -0.5).softmax(-1) @ kv[1]
        t = t + self.proj(a.transpose(1, 2).reshape(b, -1, d))
        y = self.fc1(self.n2(t)).transpose(1, 2).reshape(b, -1, hh, ww)
        t = t + self.fc2(F.gelu(self.dw(y).flatten(2).transpose(1, 2)))
        return t.transpose(1, 2).reshape(b, d, hh, ww)


class PoolMixer(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.n1, self.n2 = nn.GroupNorm(1, d), nn.GroupNorm(2, d)
        self.mlp = nn.Sequential(nn.Conv2d(d, 2 * d, 1), nn.GELU(), nn.Conv2d(2 * d, d, 1))
        self.s = nn.Parameter(torch.linspace(0.2, 1.0, d)[:, None, None])

    def forward(self, x):
        y = self.n1(x)
        x = x + self.s * (F.avg_pool2d(y, 3, 1, 1, count_include_pad=False) - y)
        return x + self.mlp(self.n2(x))


class Hourglass(nn.Module):
    def __init__(self, c=8, depth=2):
        super().__init__()
        self.depth = depth
        self.skip = nn.ModuleList([nn.Conv2d(c, c, 3, 1, 1) for _ in range(depth)])
        self.down = nn.ModuleList([nn.Conv2d(c, c, 3, 1, 1) for _ in range(depth)])
        self.up = nn.ModuleList([nn.Conv2d(c, c, 1) for _ in range(depth)])

    def forward(self, x):
        skips = []
        for i in range(self.depth):
            skips.append(self.skip[i](x))
            x = F.relu(self.down[i](F.max_pool2d(x, 2, 2)))
        for i in reversed(range(self.depth)):
            x = F.interpolate(self.up[i](x), scale_factor=2, mode="nearest") + skips[i]
        return x


class ENetBlock(nn.Module):
    """A downsampling bottleneck (2x2/2 conv; max pool and zero channels on the main branch),
    then an asymmetric (5x1, 1x5) and a dilated one, all BN-PReLU."""

    def __init__(self, i=8, o=16):
        super().__init__()
        m = o // 4
        self.pad = o - i
        self.down = nn.Sequential(nn.Conv2d(i, m, 2, 2, bias=False), nn.BatchNorm2d(m),
                                  nn.PReLU(m), nn.Conv2d(m, o, 1, bias=False))
        self.asym = nn.Sequential(nn.Conv2d(o, m, 1), nn.PReLU(),
                                  nn.Conv2d(m, m, (5, 1), 1, (2, 0)),
                                  nn.Conv2d(m, m, (1, 5), 1, (0, 2)), nn.BatchNorm2d(m),
                                  nn.PReLU(m), nn.Conv2d(m, o, 1))
        self.dil = nn.Sequential(nn.Conv2d(o, m, 3, 1, 4, 4), nn.PReLU(m), nn.Conv2d(m, o, 1))
        self.acts = nn.ModuleList([nn.PReLU(o) for _ in range(3)])

    def forward(self, x):
        main = F.max_pool2d(x, 2, 2)
        b, _, hh, ww = main.shape
        main = torch.cat([main, main.new_zeros(b, self.pad, hh, ww)], 1)
        x = self.acts[0](main + self.down(x))
        x = self.acts[1](x + self.asym(x))
        return self.acts[2](x + self.dil(x))


class BiFPNFuse(nn.Module):
    """Three levels: top-down by nearest resizing, bottom-up by 3x3/2 max pooling, each node a
    relu-normalized weighted sum, SiLU, a depthwise-separable conv."""

    def __init__(self, c=8):
        super().__init__()
        self.w = nn.ParameterList([nn.Parameter(torch.tensor(v)) for v in
                                   ([0.7, 1.3], [1.1, 0.4], [0.5, 1.0, 0.8], [1.2, 0.3])])
        self.convs = nn.ModuleList([nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c),
                                                  nn.Conv2d(c, c, 1)) for _ in range(4)])

    def node(self, k, *xs):
        w = F.relu(self.w[k])
        w = w / (w.sum() + 1e-4)
        return self.convs[k](F.silu(sum(w[i] * x for i, x in enumerate(xs))))

    def forward(self, p3, p4, p5):
        t4 = self.node(0, p4, F.interpolate(p5, size=p4.shape[-2:], mode="nearest"))
        t3 = self.node(1, p3, F.interpolate(t4, size=p3.shape[-2:], mode="nearest"))
        o4 = self.node(2, p4, t4, F.max_pool2d(t3, 3, 2, 1))
        o5 = self.node(3, p5, F.max_pool2d(o4, 3, 2, 1))
        b = p3.shape[0]
        return torch.cat([t3.reshape(b, -1), o4.reshape(b, -1), o5.reshape(b, -1)], 1)


class TasNet(nn.Module):
    """An encoder conv1d (8 taps, stride 4), global layer norm, dilated depthwise conv1d blocks
    with PReLU, sigmoid masks and a transposed-conv1d decoder."""

    def __init__(self, n=16, h=24):
        super().__init__()
        self.enc = nn.Conv1d(1, n, 8, 4, bias=False)
        self.blocks = nn.ModuleList([nn.ModuleList([
            nn.Conv1d(n, h, 1), nn.PReLU(),
            nn.Conv1d(h, h, 3, padding=d, dilation=d, groups=h), nn.PReLU(),
            nn.Conv1d(h, n, 1)]) for d in (1, 2, 4)])
        self.mask = nn.Conv1d(n, 2 * n, 1)
        self.dec = nn.ConvTranspose1d(n, 1, 8, 4, bias=False)

    @staticmethod
    def gln(x):
        mean = x.mean((1, 2), keepdim=True)
        return (x - mean) / torch.sqrt(((x - mean) ** 2).mean((1, 2), keepdim=True) + 1e-8)

    def forward(self, wav):
        w = F.relu(self.enc(wav))
        y = self.gln(w)
        for a, p1, dw, p2, b in self.blocks:
            y = y + b(self.gln(p2(dw(self.gln(p1(a(y)))))))
        m = torch.sigmoid(self.mask(y)).view(w.shape[0], 2, w.shape[1], -1)
        return self.dec((w[:, None] * m).reshape(-1, w.shape[1], w.shape[2]))


class BlockGridAttention(nn.Module):
    """Windows of P x P tokens (blocks), then the dilated grid, each with a relative position
    bias gathered from a table."""

    def __init__(self, d=16, heads=2, p=2):
        super().__init__()
        self.h, self.p = heads, p
        self.qkv = nn.ModuleList([nn.Linear(d, 3 * d) for _ in range(2)])
        self.bias = nn.Parameter(torch.randn(heads, (2 * p - 1) ** 2) * 0.5)
        c = torch.stack(torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")).flatten(1)
        rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + p - 1
        self.register_buffer("idx", rel[..., 0] * (2 * p - 1) + rel[..., 1])

    def attend(self, t, qkv):
        n, d = t.shape[1], t.shape[2]
        z = qkv(t).view(-1, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = z[0] @ z[1].transpose(-2, -1) / math.sqrt(d // self.h) + self.bias[:, self.idx]
        return (a.softmax(-1) @ z[2]).transpose(1, 2).reshape(-1, n, d)

    def forward(self, x):
        b, hh, ww, d = x.shape
        p = self.p
        t = x.view(b, hh // p, p, ww // p, p, d).permute(0, 1, 3, 2, 4, 5).reshape(-1, p * p, d)
        t = self.attend(t, self.qkv[0]).view(b, hh // p, ww // p, p, p, d)
        x = x + t.permute(0, 1, 3, 2, 4, 5).reshape(b, hh, ww, d)
        g = x.view(b, p, hh // p, p, ww // p, d).permute(0, 2, 4, 1, 3, 5).reshape(-1, p * p, d)
        g = self.attend(g, self.qkv[1]).view(b, hh // p, ww // p, p, p, d)
        return x + g.permute(0, 3, 1, 4, 2, 5).reshape(b, hh, ww, d)


class DenseUp(nn.Module):
    """ESRGAN's dense block (each 3x3 conv on the concatenation of all earlier outputs,
    LeakyReLU 0.2, the output scaled by 0.2) and a conv + pixel-shuffle x2 upsampling."""

    def __init__(self, nf=8, gc=4):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(nf + k * gc, gc if k < 3 else nf, 3, 1, 1)
                                    for k in range(4)])
        self.up = nn.Conv2d(nf, 4 * nf, 3, 1, 1)

    def forward(self, x):
        feats = [x]
        for k, conv in enumerate(self.convs):
            y = conv(torch.cat(feats, 1))
            if k < 3:
                feats.append(F.leaky_relu(y, 0.2))
        x = x + 0.2 * y
        return F.leaky_relu(F.pixel_shuffle(self.up(x), 2), 0.2)


class NeRF(nn.Module):
    """Sin/cos encodings up to 2^7 pi (arguments in the hundreds), a skip concatenation, the
    view direction normalized."""

    def __init__(self, w=32, lp=8):
        super().__init__()
        self.register_buffer("f", (2.0 ** torch.arange(lp)) * math.pi)
        ip = 3 + 6 * lp
        self.l1, self.l2, self.l3 = nn.Linear(ip, w), nn.Linear(w, w), nn.Linear(w + ip, w)
        self.out = nn.Linear(w + 3, 4)

    def forward(self, pts, dirs):
        xf = (pts[..., None] * self.f).flatten(-2)
        e = torch.cat([pts, torch.sin(xf), torch.cos(xf)], -1)
        h = F.relu(self.l2(F.relu(self.l1(e))))
        h = F.relu(self.l3(torch.cat([e, h], -1)))
        d = dirs / dirs.norm(dim=-1, keepdim=True)
        return self.out(torch.cat([h, d], -1))


class Perceiver(nn.Module):
    """Learned latents expanded over the batch cross-attend to the inputs, then self-attend."""

    def __init__(self, din=8, n=6, d=16, heads=2):
        super().__init__()
        self.h = heads
        self.latents = nn.Parameter(torch.randn(n, d))
        self.inp, self.ln = nn.Linear(din, d), nn.LayerNorm(d)
        self.q, self.k, self.v = (nn.ModuleList([nn.Linear(d, d) for _ in range(2)])
                                  for _ in range(3))

    def attend(self, j, z, kv):
        b, n, d = z.shape

        def split(t):
            return t.view(b, t.shape[1], self.h, -1).transpose(1, 2)

        q, k, v = split(self.q[j](z)), split(self.k[j](kv)), split(self.v[j](kv))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.h), -1)
        return z + (a @ v).transpose(1, 2).reshape(b, n, d)

    def forward(self, x):
        z = self.latents[None].expand(x.shape[0], -1, -1)
        z = self.attend(0, z, self.ln(self.inp(x)))
        return self.attend(1, z, self.ln(z)).mean(1)


class ResNetDShortcut(nn.Module):
    """A 3-conv stem, then a stride-2 block whose shortcut is a 2x2 average pool (ceil mode,
    padding not counted: odd sizes) and a 1x1 conv."""

    def __init__(self, c=8):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.BatchNorm2d(c), nn.ReLU(),
                                  nn.Conv2d(c, c, 3, 1, 1), nn.ReLU())
        self.body = nn.Sequential(nn.Conv2d(c, c, 1), nn.ReLU(), nn.Conv2d(c, 2 * c, 3, 2, 1),
                                  nn.BatchNorm2d(2 * c))
        self.short = nn.Sequential(nn.AvgPool2d(2, 2, ceil_mode=True, count_include_pad=False),
                                   nn.Conv2d(c, 2 * c, 1), nn.BatchNorm2d(2 * c))

    def forward(self, x):
        x = self.stem(x)
        return F.relu(self.body(x) + self.short(x))


def lenet5():
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.Tanh(), nn.AvgPool2d(2, 2), nn.Conv2d(6, 16, 5),
                         nn.Tanh(), nn.AvgPool2d(2, 2), nn.Flatten(), nn.Linear(400, 120),
                         nn.Tanh(), nn.Linear(120, 84), nn.Tanh(), nn.Linear(84, 10))


def test_segformer_stage():
    _run(_seeded(SegFormerStage), _randn(1, 3, 16, 16))


def test_poolformer_mixer():
    _run(_seeded(PoolMixer), _randn(2, 8, 7, 7))


def test_hourglass():
    _run(_seeded(Hourglass), _randn(1, 8, 16, 16))


def test_enet_bottlenecks():
    _run(_seeded(ENetBlock), _randn(1, 8, 16, 16))


def test_bifpn_fusion():
    _run(_seeded(BiFPNFuse), _randn(1, 8, 16, 16), _randn(1, 8, 8, 8, seed=1),
         _randn(1, 8, 4, 4, seed=2))


def test_convtasnet():
    _run(_seeded(TasNet), _randn(2, 1, 400))


def test_maxvit_block_and_grid_attention():
    _run(_seeded(BlockGridAttention), _randn(2, 4, 4, 16))


def test_rrdb_dense_block_pixel_shuffle():
    _run(_seeded(DenseUp), _randn(1, 8, 6, 6))


def test_nerf_mlp():
    pts = torch.from_numpy(np.random.default_rng(4).uniform(-1, 1, (256, 3)).astype("float32"))
    _run(_seeded(NeRF), pts, _randn(256, 3, seed=5))


def test_perceiver_cross_attention():
    _run(_seeded(Perceiver), _randn(2, 20, 8))


def test_lenet5():
    _run(_seeded(lenet5), _randn(2, 1, 32, 32))


def test_resnet_d_average_pool_shortcut():
    _run(_seeded(ResNetDShortcut), _randn(1, 3, 22, 22))
