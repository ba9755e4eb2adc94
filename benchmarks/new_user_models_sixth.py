"""The sixth round of ``bench_new_user_models``: SegFormer's overlapping patch embedding and
spatial-reduction attention, PoolFormer's pooling token mixer, a stacked-hourglass network,
ENet's asymmetric and dilated PReLU bottlenecks, BiFPN's normalized weighted fusion,
Conv-TasNet's dilated depthwise conv1d with global layer norm, MaxViT's block and grid
attention, ESRGAN's residual-in-residual dense blocks, a NeRF MLP, Perceiver's latent
cross-attention, LeNet-5 and a ResNet-D. Kept apart so the main script stays readable."""

from __future__ import annotations


def sixth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    def cbr(i, o, k, s=1, p=None, act=nn.ReLU, groups=1):
        p = k // 2 if p is None else p
        return nn.Sequential(nn.Conv2d(i, o, k, s, p, groups=groups, bias=False),
                             nn.BatchNorm2d(o), act())

    # -- SegFormer -------------------------------------------------------------------------
    class EfficientAttention(nn.Module):
        """Self-attention whose keys and values come from the tokens reduced by a strided conv
        (kernel = stride = ``sr``) and a LayerNorm."""

        def __init__(self, d, heads, sr):
            super().__init__()
            self.h, self.sr = heads, sr
            self.q, self.kv, self.proj = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
            if sr > 1:
                self.red, self.norm = nn.Conv2d(d, d, sr, sr), nn.LayerNorm(d)

        def forward(self, x, hh, ww):
            b, n, d = x.shape
            q = self.q(x).reshape(b, n, self.h, d // self.h).permute(0, 2, 1, 3)
            if self.sr > 1:
                y = x.permute(0, 2, 1).reshape(b, d, hh, ww)
                x = self.norm(self.red(y).reshape(b, d, -1).permute(0, 2, 1))
            kv = self.kv(x).reshape(b, -1, 2, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            k, v = kv[0], kv[1]
            a = (q @ k.transpose(-2, -1)) * (d // self.h) ** -0.5
            y = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)
            return self.proj(y)

    class MixFFN(nn.Module):
        """Linear, a 3x3 depthwise conv over the token grid, GELU, linear."""

        def __init__(self, d, e=4):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(d, d * e), nn.Linear(d * e, d)
            self.dw = nn.Conv2d(d * e, d * e, 3, 1, 1, groups=d * e)

        def forward(self, x, hh, ww):
            b, n, _ = x.shape
            x = self.fc1(x)
            x = self.dw(x.transpose(1, 2).reshape(b, -1, hh, ww)).flatten(2).transpose(1, 2)
            return self.fc2(F.gelu(x))

    class SegBlock(nn.Module):
        def __init__(self, d, heads, sr):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn, self.ffn = EfficientAttention(d, heads, sr), MixFFN(d)

        def forward(self, x, hh, ww):
            x = x + self.attn(self.n1(x), hh, ww)
            return x + self.ffn(self.n2(x), hh, ww)

    class SegFormerMini(nn.Module):
        """Four stages of overlapping patch embeddings (7x7/4, then 3x3/2 convs and a
        LayerNorm), efficient attention with spatial reduction 8/4/2/1, Mix-FFN; the all-MLP
        decoder: each stage projected, bilinearly resized to 1/4, concatenated, fused."""

        def __init__(self, dims=(16, 32, 64, 128), heads=(1, 2, 4, 8), srs=(8, 4, 2, 1),
                     classes=19, dec=64):
            super().__init__()
            self.embeds, self.blocks, self.norms = nn.ModuleList(), nn.ModuleList(), \
                nn.ModuleList()
            prev = 3
            for i, d in enumerate(dims):
                k, s = (7, 4) if i == 0 else (3, 2)
                self.embeds.append(nn.ModuleList([nn.Conv2d(prev, d, k, s, k // 2),
                                                  nn.LayerNorm(d)]))
                self.blocks.append(SegBlock(d, heads[i], srs[i]))
                self.norms.append(nn.LayerNorm(d))
                prev = d
            self.mlps = nn.ModuleList([nn.Linear(d, dec) for d in dims])
            self.fuse = cbr(4 * dec, dec, 1)
            self.cls = nn.Conv2d(dec, classes, 1)

        def forward(self, x):
            b = x.shape[0]
            feats = []
            for (conv, ln), blk, norm in zip(self.embeds, self.blocks, self.norms, strict=True):
                x = conv(x)
                hh, ww = x.shape[2], x.shape[3]
                t = ln(x.flatten(2).transpose(1, 2))
                t = norm(blk(t, hh, ww))
                x = t.transpose(1, 2).reshape(b, -1, hh, ww)
                feats.append(x)
            size = feats[0].shape[2:]
            outs = [F.interpolate(m(f.flatten(2).transpose(1, 2)).transpose(1, 2)
                                  .reshape(b, -1, f.shape[2], f.shape[3]), size=size,
                                  mode="bilinear", align_corners=False)
                    for m, f in zip(self.mlps, feats, strict=True)]
            return self.cls(self.fuse(torch.cat(outs[::-1], 1)))

    # -- PoolFormer ------------------------------------------------------------------------
    class PoolBlock(nn.Module):
        """GroupNorm(1), the token mixer avgpool(x) - x (padding not counted), GroupNorm(1),
        a 1x1-conv MLP with GELU; layer scales on both residuals."""

        def __init__(self, d):
            super().__init__()
            self.n1, self.n2 = nn.GroupNorm(1, d), nn.GroupNorm(1, d)
            self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
            self.mlp = nn.Sequential(nn.Conv2d(d, 4 * d, 1), nn.GELU(), nn.Conv2d(4 * d, d, 1))
            self.s1 = nn.Parameter(torch.full((d, 1, 1), 0.5))
            self.s2 = nn.Parameter(torch.full((d, 1, 1), 0.5))

        def forward(self, x):
            y = self.n1(x)
            x = x + self.s1 * (self.pool(y) - y)
            return x + self.s2 * self.mlp(self.n2(x))

    def poolformer_mini(dims=(32, 64, 128, 256), depths=(2, 2, 4, 2)):
        layers, prev = [], 3
        for i, (d, n) in enumerate(zip(dims, depths, strict=True)):
            layers.append(nn.Conv2d(prev, d, 7, 4, 2) if i == 0 else nn.Conv2d(prev, d, 3, 2, 1))
            layers += [PoolBlock(d) for _ in range(n)]
            prev = d
        return nn.Sequential(*layers, nn.GroupNorm(1, prev), nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Linear(prev, 100))

    # -- Stacked hourglass -----------------------------------------------------------------
    class Residual(nn.Module):
        """The hourglass' pre-activation bottleneck (BN-ReLU-conv x3), 1x1 skip if widths
        differ."""

        def __init__(self, i, o):
            super().__init__()
            m = o // 2
            self.body = nn.Sequential(nn.BatchNorm2d(i), nn.ReLU(), nn.Conv2d(i, m, 1),
                                      nn.BatchNorm2d(m), nn.ReLU(), nn.Conv2d(m, m, 3, 1, 1),
                                      nn.BatchNorm2d(m), nn.ReLU(), nn.Conv2d(m, o, 1))
            self.skip = nn.Conv2d(i, o, 1) if i != o else nn.Identity()

        def forward(self, x):
            return self.body(x) + self.skip(x)

    class Hourglass(nn.Module):
        """Max pool down, a residual, the inner hourglass (or a residual at the bottom), a
        residual, nearest upsampling, added to the full-resolution branch; unrolled per
        level."""

        def __init__(self, depth, c):
            super().__init__()
            self.depth = depth
            self.up1 = nn.ModuleList([Residual(c, c) for _ in range(depth)])
            self.low1 = nn.ModuleList([Residual(c, c) for _ in range(depth)])
            self.low3 = nn.ModuleList([Residual(c, c) for _ in range(depth)])
            self.bottom = Residual(c, c)

        def forward(self, x):
            skips = []
            for i in range(self.depth):
                skips.append(self.up1[i](x))
                x = self.low1[i](F.max_pool2d(x, 2, 2))
            x = self.bottom(x)
            for i in reversed(range(self.depth)):
                x = F.interpolate(self.low3[i](x), scale_factor=2, mode="nearest") + skips[i]
            return x

    class StackedHourglass(nn.Module):
        def __init__(self, c=64, joints=16, stacks=2, depth=3):
            super().__init__()
            self.stem = nn.Sequential(cbr(3, 32, 7, 2), Residual(32, c), nn.MaxPool2d(2, 2),
                                      Residual(c, c))
            self.hgs = nn.ModuleList([Hourglass(depth, c) for _ in range(stacks)])
            self.feats = nn.ModuleList([nn.Sequential(Residual(c, c), cbr(c, c, 1))
                                        for _ in range(stacks)])
            self.heads = nn.ModuleList([nn.Conv2d(c, joints, 1) for _ in range(stacks)])
            self.back_f = nn.ModuleList([nn.Conv2d(c, c, 1) for _ in range(stacks - 1)])
            self.back_h = nn.ModuleList([nn.Conv2d(joints, c, 1) for _ in range(stacks - 1)])

        def forward(self, x):
            x = self.stem(x)
            outs = []
            for i, hg in enumerate(self.hgs):
                f = self.feats[i](hg(x))
                h = self.heads[i](f)
                outs.append(h)
                if i < len(self.back_f):
                    x = x + self.back_f[i](f) + self.back_h[i](h)
            return torch.stack(outs, 1)

    # -- ENet ------------------------------------------------------------------------------
    class Initial(nn.Module):
        """A 3x3/2 conv of 13 channels concatenated with the 2x2 max pool of the image."""

        def __init__(self, o=16):
            super().__init__()
            self.conv = nn.Conv2d(3, o - 3, 3, 2, 1, bias=False)
            self.bn, self.act = nn.BatchNorm2d(o), nn.PReLU(o)

        def forward(self, x):
            return self.act(self.bn(torch.cat([self.conv(x), F.max_pool2d(x, 2, 2)], 1)))

    class ENetBottleneck(nn.Module):
        """1x1 (2x2/2 when downsampling) projection, a regular, dilated or asymmetric (5x1
        then 1x5) conv, 1x1 expansion, each BN-PReLU; dropout; a main branch max-pooled and
        zero-padded in channels when downsampling."""

        def __init__(self, i, o, kind="regular", dilation=1, down=False):
            super().__init__()
            m = i // 4
            self.down, self.pad = down, o - i
            first = nn.Conv2d(i, m, 2, 2, bias=False) if down else nn.Conv2d(i, m, 1, bias=False)
            if kind == "asym":
                mid = nn.Sequential(nn.Conv2d(m, m, (5, 1), 1, (2, 0), bias=False),
                                    nn.Conv2d(m, m, (1, 5), 1, (0, 2), bias=False))
            else:
                mid = nn.Conv2d(m, m, 3, 1, dilation, dilation, bias=False)
            self.ext = nn.Sequential(first, nn.BatchNorm2d(m), nn.PReLU(m), mid,
                                     nn.BatchNorm2d(m), nn.PReLU(m),
                                     nn.Conv2d(m, o, 1, bias=False), nn.BatchNorm2d(o),
                                     nn.Dropout2d(0.1))
            self.act = nn.PReLU(o)

        def forward(self, x):
            main = x
            if self.down:
                main = F.max_pool2d(x, 2, 2)
            if self.pad:
                b, _, hh, ww = main.shape
                main = torch.cat([main, main.new_zeros(b, self.pad, hh, ww)], 1)
            return self.act(main + self.ext(x))

    class ENetUp(nn.Module):
        """The decoder's upsampling bottleneck: a 1x1 conv and nearest upsampling on the main
        branch, a transposed conv on the extension."""

        def __init__(self, i, o):
            super().__init__()
            m = i // 4
            self.main = nn.Sequential(nn.Conv2d(i, o, 1, bias=False), nn.BatchNorm2d(o))
            self.ext = nn.Sequential(nn.Conv2d(i, m, 1, bias=False), nn.BatchNorm2d(m),
                                     nn.ReLU(), nn.ConvTranspose2d(m, m, 2, 2, bias=False),
                                     nn.BatchNorm2d(m), nn.ReLU(),
                                     nn.Conv2d(m, o, 1, bias=False), nn.BatchNorm2d(o))

        def forward(self, x):
            return F.relu(F.interpolate(self.main(x), scale_factor=2) + self.ext(x))

    def enet_mini(classes=12):
        return nn.Sequential(
            Initial(16), ENetBottleneck(16, 64, down=True), ENetBottleneck(64, 64),
            ENetBottleneck(64, 64), ENetBottleneck(64, 128, down=True),
            ENetBottleneck(128, 128), ENetBottleneck(128, 128, dilation=2),
            ENetBottleneck(128, 128, "asym"), ENetBottleneck(128, 128, dilation=4),
            ENetBottleneck(128, 128), ENetBottleneck(128, 128, dilation=8),
            ENetBottleneck(128, 128, "asym"), ENetUp(128, 64), ENetBottleneck(64, 64),
            ENetUp(64, 16), ENetBottleneck(16, 16), nn.ConvTranspose2d(16, classes, 2, 2))

    # -- BiFPN -----------------------------------------------------------------------------
    class Fuse(nn.Module):
        """Fast normalized fusion: relu(w) / (sum + eps) weights the inputs, then SiLU and a
        depthwise-separable conv with BN."""

        def __init__(self, n, c):
            super().__init__()
            self.w = nn.Parameter(torch.linspace(0.5, 1.5, n))
            self.conv = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False),
                                      nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c))

        def forward(self, *xs):
            w = F.relu(self.w)
            w = w / (w.sum() + 1e-4)
            return self.conv(F.silu(sum(w[i] * x for i, x in enumerate(xs))))

    class BiFPNLayer(nn.Module):
        """Top-down (nearest upsampling) then bottom-up (3x3/2 max pooling) over P3-P7."""

        def __init__(self, c, levels=5):
            super().__init__()
            self.n = levels
            self.td = nn.ModuleList([Fuse(2, c) for _ in range(levels - 1)])
            self.bu = nn.ModuleList([Fuse(3, c) for _ in range(levels - 2)] + [Fuse(2, c)])

        def forward(self, ps):
            td = [None] * self.n
            td[-1] = ps[-1]
            for i in range(self.n - 2, -1, -1):
                td[i] = self.td[i](ps[i], F.interpolate(td[i + 1], size=ps[i].shape[-2:],
                                                        mode="nearest"))
            out = [td[0]]
            for i in range(1, self.n):
                down = F.max_pool2d(out[-1], 3, 2, 1)
                if i < self.n - 1:
                    out.append(self.bu[i - 1](ps[i], td[i], down))
                else:
                    out.append(self.bu[i - 1](ps[i], down))
            return out

    class BiFPNMini(nn.Module):
        """A small backbone's C3-C5, lateral 1x1 convs, P6/P7 by strided max pooling, two
        BiFPN layers, a shared class head on every level, the outputs flattened and joined."""

        def __init__(self, c=48, classes=9, layers=2):
            super().__init__()
            self.c2 = nn.Sequential(cbr(3, 16, 3, 2, act=nn.SiLU), cbr(16, 24, 3, 2, act=nn.SiLU))
            self.c3 = cbr(24, 40, 3, 2, act=nn.SiLU)
            self.c4 = cbr(40, 80, 3, 2, act=nn.SiLU)
            self.c5 = cbr(80, 112, 3, 2, act=nn.SiLU)
            self.lat = nn.ModuleList([nn.Conv2d(i, c, 1) for i in (40, 80, 112)])
            self.fpn = nn.ModuleList([BiFPNLayer(c) for _ in range(layers)])
            self.head = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c), nn.Conv2d(c, c, 1),
                                      nn.SiLU(), nn.Conv2d(c, classes, 1))

        def forward(self, x):
            c3 = self.c3(self.c2(x))
            c4 = self.c4(c3)
            c5 = self.c5(c4)
            ps = [lat(f) for lat, f in zip(self.lat, (c3, c4, c5), strict=True)]
            ps.append(F.max_pool2d(ps[-1], 3, 2, 1))
            ps.append(F.max_pool2d(ps[-1], 3, 2, 1))
            for layer in self.fpn:
                ps = layer(ps)
            b = x.shape[0]
            return torch.cat([self.head(p).sigmoid().reshape(b, -1) for p in ps], 1)

    # -- Conv-TasNet -----------------------------------------------------------------------
    class GlobalLayerNorm(nn.Module):
        """gLN: the mean and variance over channels and time together, per-channel affine."""

        def __init__(self, c):
            super().__init__()
            self.g = nn.Parameter(torch.ones(1, c, 1) * 1.1)
            self.b = nn.Parameter(torch.full((1, c, 1), 0.05))

        def forward(self, x):
            mean = x.mean((1, 2), keepdim=True)
            var = ((x - mean) ** 2).mean((1, 2), keepdim=True)
            return self.g * (x - mean) / torch.sqrt(var + 1e-8) + self.b

    class TCNBlock(nn.Module):
        def __init__(self, b, h, p, d):
            super().__init__()
            self.body = nn.Sequential(nn.Conv1d(b, h, 1), nn.PReLU(), GlobalLayerNorm(h),
                                      nn.Conv1d(h, h, p, padding=d * (p - 1) // 2, dilation=d,
                                                groups=h),
                                      nn.PReLU(), GlobalLayerNorm(h))
            self.res, self.skip = nn.Conv1d(h, b, 1), nn.Conv1d(h, b, 1)

        def forward(self, x):
            y = self.body(x)
            return x + self.res(y), self.skip(y)

    class ConvTasNetMini(nn.Module):
        """Encoder conv1d (16 taps, stride 8) with ReLU, gLN, a bottleneck, two repeats of
        dilated TCN blocks (1, 2, 4, 8) summing skips, PReLU, sigmoid masks for two speakers,
        a transposed-conv1d decoder."""

        def __init__(self, n=64, l=16, b=32, h=64, p=3, x=4, r=2, spk=2):
            super().__init__()
            self.spk, self.n = spk, n
            self.enc = nn.Conv1d(1, n, l, l // 2, bias=False)
            self.ln, self.bott = GlobalLayerNorm(n), nn.Conv1d(n, b, 1)
            self.blocks = nn.ModuleList([TCNBlock(b, h, p, 2 ** i) for _ in range(r)
                                         for i in range(x)])
            self.mask = nn.Sequential(nn.PReLU(), nn.Conv1d(b, spk * n, 1))
            self.dec = nn.ConvTranspose1d(n, 1, l, l // 2, bias=False)

        def forward(self, wav):
            w = F.relu(self.enc(wav))
            y = self.bott(self.ln(w))
            skip = 0
            for blk in self.blocks:
                y, s = blk(y)
                skip = skip + s
            m = torch.sigmoid(self.mask(skip)).view(w.shape[0], self.spk, self.n, -1)
            src = (w[:, None] * m).reshape(w.shape[0] * self.spk, self.n, -1)
            return self.dec(src).view(w.shape[0], self.spk, -1)

    # -- MaxViT ----------------------------------------------------------------------------
    class WindowAttention(nn.Module):
        """Multi-head self-attention within windows of P x P tokens, with a learned relative
        position bias; ``grid`` picks the dilated grid partition instead of the blocks."""

        def __init__(self, d, heads, p, grid):
            super().__init__()
            self.h, self.dh, self.p, self.grid = heads, d // heads, p, grid
            self.norm, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), \
                nn.Linear(d, d)
            self.bias = nn.Parameter(torch.randn(heads, (2 * p - 1) ** 2) * 0.1)
            c = torch.stack(torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij"))
            c = c.flatten(1)
            rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + p - 1
            self.register_buffer("idx", rel[..., 0] * (2 * p - 1) + rel[..., 1])
            self.ffn = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(),
                                     nn.Linear(4 * d, d))

        def partition(self, x):
            b, hh, ww, d = x.shape
            p = self.p
            if self.grid:   # token (i, j) of window (g1, g2) sits at (i * H/P + g1, ...)
                x = x.view(b, p, hh // p, p, ww // p, d).permute(0, 2, 4, 1, 3, 5)
            else:
                x = x.view(b, hh // p, p, ww // p, p, d).permute(0, 1, 3, 2, 4, 5)
            return x.reshape(-1, p * p, d)

        def unpartition(self, x, b, hh, ww):
            p, d = self.p, x.shape[-1]
            if self.grid:
                x = x.view(b, hh // p, ww // p, p, p, d).permute(0, 3, 1, 4, 2, 5)
            else:
                x = x.view(b, hh // p, ww // p, p, p, d).permute(0, 1, 3, 2, 4, 5)
            return x.reshape(b, hh, ww, d)

        def forward(self, x):
            b, hh, ww, d = x.shape
            t = self.partition(self.norm(x))
            n = t.shape[1]
            qkv = self.qkv(t).view(-1, n, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            a = (q @ k.transpose(-2, -1)) / math.sqrt(self.dh)
            a = a + self.bias[:, self.idx]
            y = (a.softmax(-1) @ v).transpose(1, 2).reshape(-1, n, d)
            x = x + self.unpartition(self.proj(y), b, hh, ww)
            return x + self.ffn(x)

    class MaxViTBlock(nn.Module):
        """An MBConv (1x1, 3x3 depthwise, squeeze-excite, 1x1) then block and grid attention
        on the channels-last map."""

        def __init__(self, i, o, s, heads, p):
            super().__init__()
            m = 4 * o
            self.mb = nn.Sequential(nn.BatchNorm2d(i), cbr(i, m, 1, act=nn.GELU),
                                    cbr(m, m, 3, s, act=nn.GELU, groups=m),
                                    nn.Conv2d(m, o, 1))
            self.short = nn.Sequential(nn.AvgPool2d(s, s), nn.Conv2d(i, o, 1)) if s > 1 \
                else nn.Identity()
            self.block = WindowAttention(o, heads, p, grid=False)
            self.gridw = WindowAttention(o, heads, p, grid=True)

        def forward(self, x):
            x = self.short(x) + self.mb(x)
            x = self.gridw(self.block(x.permute(0, 2, 3, 1)))
            return x.permute(0, 3, 1, 2)

    def maxvit_mini():
        return nn.Sequential(cbr(3, 32, 3, 2, act=nn.GELU), cbr(32, 32, 3, act=nn.GELU),
                             MaxViTBlock(32, 48, 2, 2, 4), MaxViTBlock(48, 96, 2, 4, 4),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(96),
                             nn.Linear(96, 100))

    # -- ESRGAN ----------------------------------------------------------------------------
    class DenseBlock(nn.Module):
        """Five 3x3 convs, each on the concatenation of the input and all earlier outputs,
        LeakyReLU(0.2); the output scaled by 0.2 onto the input."""

        def __init__(self, nf, gc):
            super().__init__()
            self.convs = nn.ModuleList([nn.Conv2d(nf + k * gc, gc if k < 4 else nf, 3, 1, 1)
                                        for k in range(5)])

        def forward(self, x):
            feats = [x]
            for k, conv in enumerate(self.convs):
                y = conv(torch.cat(feats, 1))
                if k < 4:
                    feats.append(F.leaky_relu(y, 0.2))
            return x + 0.2 * y

    class RRDB(nn.Module):
        def __init__(self, nf, gc):
            super().__init__()
            self.blocks = nn.Sequential(*[DenseBlock(nf, gc) for _ in range(3)])

        def forward(self, x):
            return x + 0.2 * self.blocks(x)

    class RRDBNet(nn.Module):
        """ESRGAN's generator, small: a first conv, RRDBs and a trunk conv around a long skip,
        x4 upsampling by two conv + pixel shuffle + LeakyReLU steps, two output convs."""

        def __init__(self, nf=32, gc=16, blocks=2):
            super().__init__()
            self.first = nn.Conv2d(3, nf, 3, 1, 1)
            self.body = nn.Sequential(*[RRDB(nf, gc) for _ in range(blocks)])
            self.trunk = nn.Conv2d(nf, nf, 3, 1, 1)
            self.up = nn.ModuleList([nn.Conv2d(nf, 4 * nf, 3, 1, 1) for _ in range(2)])
            self.hr, self.last = nn.Conv2d(nf, nf, 3, 1, 1), nn.Conv2d(nf, 3, 3, 1, 1)

        def forward(self, x):
            f = self.first(x)
            f = f + self.trunk(self.body(f))
            for up in self.up:
                f = F.leaky_relu(F.pixel_shuffle(up(f), 2), 0.2)
            return self.last(F.leaky_relu(self.hr(f), 0.2))

    # -- NeRF ------------------------------------------------------------------------------
    class NeRFMLP(nn.Module):
        """Sin/cos positional encodings of points (10 octaves) and view directions (4), an
        8-layer MLP with the encoded points concatenated again at layer 5, a density head and a
        view-dependent colour head."""

        def __init__(self, w=128, lp=10, ld=4):
            super().__init__()
            self.register_buffer("fp", (2.0 ** torch.arange(lp)) * math.pi)
            self.register_buffer("fd", (2.0 ** torch.arange(ld)) * math.pi)
            ip, idr = 3 + 6 * lp, 3 + 6 * ld
            self.pts = nn.ModuleList([nn.Linear(ip, w)] + [
                nn.Linear(w + ip if k == 4 else w, w) for k in range(1, 8)])
            self.sigma, self.feat = nn.Linear(w, 1), nn.Linear(w, w)
            self.view, self.rgb = nn.Linear(w + idr, w // 2), nn.Linear(w // 2, 3)

        @staticmethod
        def encode(x, freqs):
            xf = (x[..., None] * freqs).flatten(-2)
            return torch.cat([x, torch.sin(xf), torch.cos(xf)], -1)

        def forward(self, pts, dirs):
            ep = self.encode(pts, self.fp)
            h = ep
            for k, lin in enumerate(self.pts):
                if k == 4:
                    h = torch.cat([ep, h], -1)
                h = F.relu(lin(h))
            sigma = F.relu(self.sigma(h))
            d = dirs / dirs.norm(dim=-1, keepdim=True)
            c = F.relu(self.view(torch.cat([self.feat(h), self.encode(d, self.fd)], -1)))
            return torch.cat([torch.sigmoid(self.rgb(c)), sigma], -1)

    def nerf_inputs(n=4096):
        g = torch.Generator().manual_seed(25)
        return {"pts": torch.rand(n, 3, generator=g) * 2 - 1,
                "dirs": torch.randn(n, 3, generator=g)}

    # -- Perceiver -------------------------------------------------------------------------
    class CrossAttention(nn.Module):
        def __init__(self, dq, dkv, heads, d):
            super().__init__()
            self.h, self.d = heads, d
            self.nq, self.nkv = nn.LayerNorm(dq), nn.LayerNorm(dkv)
            self.q, self.k, self.v = nn.Linear(dq, d), nn.Linear(dkv, d), nn.Linear(dkv, d)
            self.o = nn.Linear(d, dq)

        def forward(self, q, kv):
            b, n, _ = q.shape
            m = kv.shape[1]
            qn, kvn = self.nq(q), self.nkv(kv)
            qh = self.q(qn).view(b, n, self.h, -1).transpose(1, 2)
            kh = self.k(kvn).view(b, m, self.h, -1).transpose(1, 2)
            vh = self.v(kvn).view(b, m, self.h, -1).transpose(1, 2)
            a = torch.softmax(qh @ kh.transpose(-1, -2) / math.sqrt(self.d // self.h), -1)
            return q + self.o((a @ vh).transpose(1, 2).reshape(b, n, self.d))

    class PerceiverMini(nn.Module):
        """Learned latents (64 x 128) cross-attend to 512 Fourier-featured input tokens, then
        latent self-attention blocks with GELU MLPs, repeated twice with shared weights; the
        mean latent is classified."""

        def __init__(self, din=32, latents=64, d=128, heads=4, depth=2, repeats=2):
            super().__init__()
            self.repeats = repeats
            self.latents = nn.Parameter(torch.randn(latents, d) * 0.5)
            self.inp = nn.Linear(din, d)
            self.cross = CrossAttention(d, d, 1, d)
            self.cross_mlp = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(),
                                           nn.Linear(2 * d, d))
            self.selfs = nn.ModuleList([CrossAttention(d, d, heads, d) for _ in range(depth)])
            self.mlps = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d),
                                                     nn.GELU(), nn.Linear(2 * d, d))
                                       for _ in range(depth)])
            self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 10))

        def forward(self, x):
            kv = self.inp(x)
            z = self.latents[None].expand(x.shape[0], -1, -1)
            for _ in range(self.repeats):
                z = self.cross(z, kv)
                z = z + self.cross_mlp(z)
                for sa, mlp in zip(self.selfs, self.mlps, strict=True):
                    z = sa(z, z)
                    z = z + mlp(z)
            return self.head(z.mean(1))

    # -- LeNet-5 and ResNet-D --------------------------------------------------------------
    def lenet5():
        return nn.Sequential(nn.Conv2d(1, 6, 5), nn.Tanh(), nn.AvgPool2d(2, 2),
                             nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2, 2), nn.Flatten(),
                             nn.Linear(400, 120), nn.Tanh(), nn.Linear(120, 84), nn.Tanh(),
                             nn.Linear(84, 10))

    class BottleneckD(nn.Module):
        """A bottleneck whose stride sits on the 3x3 conv and whose downsampling shortcut is a
        2x2 average pool (ceil mode, padding not counted) then a 1x1 conv."""

        def __init__(self, i, m, o, s):
            super().__init__()
            self.body = nn.Sequential(cbr(i, m, 1), cbr(m, m, 3, s),
                                      nn.Conv2d(m, o, 1, bias=False), nn.BatchNorm2d(o))
            short = []
            if s > 1:
                short.append(nn.AvgPool2d(s, s, ceil_mode=True, count_include_pad=False))
            if s > 1 or i != o:
                short += [nn.Conv2d(i, o, 1, bias=False), nn.BatchNorm2d(o)]
            self.short = nn.Sequential(*short)

        def forward(self, x):
            return F.relu(self.body(x) + self.short(x))

    def resnet_d(widths=(64, 128, 256, 512), depths=(2, 2, 2, 2)):
        layers = [cbr(3, 16, 3, 2), cbr(16, 16, 3), cbr(16, 32, 3), nn.MaxPool2d(3, 2, 1)]
        prev = 32
        for k, (w, n) in enumerate(zip(widths, depths, strict=True)):
            for j in range(n):
                layers.append(BottleneckD(prev, w // 4, w, 2 if j == 0 and k > 0 else 1))
                prev = w
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(prev, 100))

    image = (1, 3, 128, 128)
    return {
        "segformer_mini": (SegFormerMini, image),
        "poolformer_mini": (poolformer_mini, image),
        "hourglass_mini": (StackedHourglass, image),
        "enet_mini": (enet_mini, image),
        "bifpn_mini": (BiFPNMini, image),
        "convtasnet_mini": (ConvTasNetMini, (1, 1, 8000)),
        "maxvit_mini": (maxvit_mini, (1, 3, 64, 64)),
        "rrdb_sr": (RRDBNet, (1, 3, 32, 32)),
        # dicts: the 4096 points are not a batch (bench_dynamic_batch skips them)
        "nerf_mlp": (NeRFMLP, nerf_inputs),
        "perceiver_mini": (PerceiverMini, (1, 512, 32)),
        "lenet5": (lenet5, (1, 1, 32, 32)),
        "resnet_d": (resnet_d, image),
    }
