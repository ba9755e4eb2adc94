"""The seventeenth round of ``bench_new_user_models``: EfficientFormer (4-D meta-blocks with a
pooling token mixer, then 3-D meta-blocks with multi-head attention plus a learned attention
bias gathered by relative-offset index), CvT (convolutional token embeddings by overlapping
strided convs, queries / keys / values by depthwise conv + BatchNorm projections with strided
keys and values, a class token in the last stage), a Funnel-Transformer encoder (the query
sequence mean-pooled by ``avg_pool1d`` between blocks while keys and values keep the full
length), BigBird block-sparse attention (each query block gathers its window, global and fixed
random key blocks by index, the global blocks attend everywhere), a Fourier Neural Operator
(``rfft2``, the low modes of both signs mixed by complex weights through ``einsum`` on real and
imaginary parts, ``irfft2`` back, a pointwise path), a DeepLabV3+ decoder (ASPP with
dilations and an image-pooling branch, the low-level skip at stride 4, ``align_corners``
bilinear upsampling), KPConv (point features spread over fixed kernel points by a linear
correlation of neighbour offsets to each kernel point, neighbours by ``cdist`` + ``topk``), a
T5 decoder step stack (causal self-attention with unidirectional relative-position buckets,
cross-attention to an encoder memory, gated-GELU feed-forward, RMSNorm), a BYOL online /
target pair (projector and predictor MLPs with ``BatchNorm1d``, ``F.normalize`` and the
symmetric cosine loss per sample), a VAE with the reparameterization trick (the noise an
input, so seeded), a quantile forecaster (Monte-Carlo samples reduced by ``torch.quantile``,
the predicted quantile heads made monotone by ``sort``), and H3 (a shift SSM on the keys as a
causal depthwise conv, a diagonal SSM kernel by ``rfft`` / ``irfft`` convolution, multiplicative
gating by the values and queries). Kept apart so the main script stays readable."""

from __future__ import annotations


def seventeenth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    def conv_bn(cin, cout, k=3, s=1, p=None, d=1, groups=1, act=True):
        p = (k // 2) * d if p is None else p
        layers = [nn.Conv2d(cin, cout, k, s, p, dilation=d, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, nn.ReLU()) if act else nn.Sequential(*layers)

    # -- EfficientFormer ------------------------------------------------------------------
    class Meta4D(nn.Module):
        """x - avgpool(x) token mixing (PoolFormer's), then a conv-BN MLP."""

        def __init__(self, c):
            super().__init__()
            self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
            self.mlp = nn.Sequential(nn.Conv2d(c, 4 * c, 1), nn.BatchNorm2d(4 * c), nn.GELU(),
                                     nn.Conv2d(4 * c, c, 1), nn.BatchNorm2d(c))

        def forward(self, x):
            x = x + (self.pool(x) - x)
            return x + self.mlp(x)

    class BiasedAttention(nn.Module):
        """Multi-head attention with a learned per-head bias indexed by |dy|, |dx|."""

        def __init__(self, d, heads, side):
            super().__init__()
            self.h, self.scale = heads, (d // heads) ** -0.5
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
            pts = torch.stack([ys.flatten(), xs.flatten()], 1)
            off = (pts[:, None] - pts[None]).abs()
            self.register_buffer("bias_idx", off[..., 0] * side + off[..., 1])
            self.bias = nn.Parameter(0.1 * torch.randn(heads, side * side))

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-2, -1)) * self.scale + self.bias[:, self.bias_idx]
            return self.proj((att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d))

    class Meta3D(nn.Module):
        def __init__(self, d, heads, side):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = BiasedAttention(d, heads, side)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            x = x + self.attn(self.n1(x))
            return x + self.mlp(self.n2(x))

    class EfficientFormerMini(nn.Module):
        def __init__(self, img=64, widths=(16, 32, 48), depths=(2, 2), heads=4, d3=2,
                     classes=100):
            super().__init__()
            self.stem = nn.Sequential(conv_bn(3, widths[0] // 2, s=2),
                                      conv_bn(widths[0] // 2, widths[0], s=2))
            layers, c = [], widths[0]
            for w, n in zip(widths[1:], depths, strict=True):
                layers += [Meta4D(c) for _ in range(n)] + [conv_bn(c, w, s=2, act=False)]
                c = w
            self.stages = nn.Sequential(*layers)
            side = img // 4 // 2 ** len(depths)
            self.last = nn.ModuleList([Meta3D(c, heads, side) for _ in range(d3)])
            self.norm = nn.LayerNorm(c)
            self.head = nn.Linear(c, classes)

        def forward(self, x):
            x = self.stages(self.stem(x)).flatten(2).transpose(1, 2)
            for blk in self.last:
                x = blk(x)
            return self.head(self.norm(x).mean(1))

    # -- CvT ------------------------------------------------------------------------------
    class ConvProjAttention(nn.Module):
        """q/k/v from depthwise 3x3 conv + BN on the token map (k, v at stride 2)."""

        def __init__(self, d, heads, cls):
            super().__init__()
            self.h, self.cls = heads, cls
            self.q = nn.Sequential(nn.Conv2d(d, d, 3, 1, 1, groups=d, bias=False),
                                   nn.BatchNorm2d(d))
            self.kv = nn.Sequential(nn.Conv2d(d, d, 3, 2, 1, groups=d, bias=False),
                                    nn.BatchNorm2d(d))
            self.lq, self.lk, self.lv = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.proj = nn.Linear(d, d)

        def forward(self, x, hw):
            b, _, d = x.shape
            if self.cls:
                c, x = x[:, :1], x[:, 1:]
            m = x.transpose(1, 2).reshape(b, d, *hw)
            q = self.q(m).flatten(2).transpose(1, 2)
            kv = self.kv(m).flatten(2).transpose(1, 2)
            k = v = kv
            if self.cls:
                q, k, v = torch.cat([c, q], 1), torch.cat([c, k], 1), torch.cat([c, v], 1)

            def heads(t):
                return t.reshape(b, t.shape[1], self.h, d // self.h).transpose(1, 2)

            q, k, v = heads(self.lq(q)), heads(self.lk(k)), heads(self.lv(v))
            o = F.scaled_dot_product_attention(q, k, v)
            return self.proj(o.transpose(1, 2).reshape(b, -1, d))

    class CvTBlock(nn.Module):
        def __init__(self, d, heads, cls):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = ConvProjAttention(d, heads, cls)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x, hw):
            x = x + self.attn(self.n1(x), hw)
            return x + self.mlp(self.n2(x))

    class CvTMini(nn.Module):
        def __init__(self, widths=(16, 32, 64), heads=(1, 2, 4), depths=(1, 1, 2), classes=100):
            super().__init__()
            self.embeds, self.norms, self.stages = nn.ModuleList(), nn.ModuleList(), \
                nn.ModuleList()
            c = 3
            for i, (w, h, n) in enumerate(zip(widths, heads, depths, strict=True)):
                k, s = (7, 4) if i == 0 else (3, 2)
                self.embeds.append(nn.Conv2d(c, w, k, s, k // 2))
                self.norms.append(nn.LayerNorm(w))
                self.stages.append(nn.ModuleList(
                    [CvTBlock(w, h, i == len(widths) - 1) for _ in range(n)]))
                c = w
            self.cls = nn.Parameter(0.02 * torch.randn(1, 1, widths[-1]))
            self.norm = nn.LayerNorm(widths[-1])
            self.head = nn.Linear(widths[-1], classes)

        def forward(self, x):
            last = len(self.stages) - 1
            for i, (emb, norm, blocks) in enumerate(zip(self.embeds, self.norms, self.stages,
                                                        strict=True)):
                x = emb(x)
                b, c, h, w = x.shape
                t = norm(x.flatten(2).transpose(1, 2))
                if i == last:
                    t = torch.cat([self.cls.expand(b, -1, -1), t], 1)
                for blk in blocks:
                    t = blk(t, (h, w))
                if i < last:
                    x = t.transpose(1, 2).reshape(b, c, h, w)
            return self.head(self.norm(t[:, 0]))

    # -- Funnel Transformer ---------------------------------------------------------------
    class FunnelLayer(nn.Module):
        """Post-norm block; with ``pool`` the queries are the stride-2 mean of the input."""

        def __init__(self, d, heads, pool):
            super().__init__()
            self.pool = pool
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x, key_pad):
            q = F.avg_pool1d(x.transpose(1, 2), 2, 2, ceil_mode=True).transpose(1, 2) \
                if self.pool else x
            a = self.attn(q, x, x, key_padding_mask=key_pad, need_weights=False)[0]
            x = self.n1(q + a)
            return self.n2(x + self.ff(x))

    class FunnelEncoder(nn.Module):
        def __init__(self, vocab=1000, d=64, heads=4, blocks=(2, 2, 2), n=128, classes=2):
            super().__init__()
            self.emb = nn.Embedding(vocab, d, padding_idx=0)
            self.pos = nn.Parameter(0.02 * torch.randn(1, n, d))
            self.norm = nn.LayerNorm(d)
            self.layers = nn.ModuleList()
            self.pools = []
            for bi, depth in enumerate(blocks):
                for li in range(depth):
                    self.pools.append(bi > 0 and li == 0)
                    self.layers.append(FunnelLayer(d, heads, self.pools[-1]))
            self.head = nn.Linear(d, classes)

        def forward(self, idx):
            pad = idx == 0
            x = self.norm(self.emb(idx) + self.pos[:, :idx.shape[1]])
            for layer, pool in zip(self.layers, self.pools, strict=True):
                if pool:
                    # the keys of a pooling layer are the unpooled sequence; later layers see
                    # the pooled one (a pooled position is padding when both halves are)
                    x_keys_pad = pad
                    pad = -F.max_pool1d(-pad[:, None].float(), 2, 2, ceil_mode=True)[:, 0] > 0
                    x = layer(x, x_keys_pad)
                else:
                    x = layer(x, pad)
            keep = (~pad).float()[..., None]
            return self.head((x * keep).sum(1) / keep.sum(1).clamp(min=1))

    # -- BigBird --------------------------------------------------------------------------
    class BigBirdAttention(nn.Module):
        """Block-sparse attention: every middle query block sees 3 sliding blocks, the first and
        last (global) blocks and ``rand`` fixed random blocks, gathered by an index buffer;
        the two global query blocks attend to every key."""

        def __init__(self, d, heads, n, block, rand, seed):
            super().__init__()
            self.h, self.bs = heads, block
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            nb = n // block
            g = torch.Generator().manual_seed(seed)
            rows = []
            for i in range(1, nb - 1):
                near = {0, nb - 1, i - 1, i, i + 1}
                pool = torch.tensor([j for j in range(nb) if j not in near])
                pick = pool[torch.randperm(len(pool), generator=g)[:rand]]
                rows.append(torch.cat([torch.tensor([i - 1, i, i + 1, 0, nb - 1]), pick]))
            self.register_buffer("blocks", torch.stack(rows))           # (nb-2, 5 + rand)

        def forward(self, x):
            b, n, d = x.shape
            hd, bs = d // self.h, self.bs
            nb = n // bs
            q, k, v = self.qkv(x).reshape(b, n, 3, self.h, hd).permute(2, 0, 3, 1, 4)
            q = q * hd ** -0.5
            qb = q.reshape(b, self.h, nb, bs, hd)
            kb, vb = k.reshape(b, self.h, nb, bs, hd), v.reshape(b, self.h, nb, bs, hd)
            idx = self.blocks.reshape(-1)
            kg = kb[:, :, idx].reshape(b, self.h, nb - 2, -1, hd)
            vg = vb[:, :, idx].reshape(b, self.h, nb - 2, -1, hd)
            mid = (qb[:, :, 1:-1] @ kg.transpose(-2, -1)).softmax(-1) @ vg
            ends = torch.cat([qb[:, :, :1], qb[:, :, -1:]], 2).reshape(b, self.h, 2 * bs, hd)
            ends = ((ends @ k.transpose(-2, -1)).softmax(-1) @ v).reshape(b, self.h, 2, bs, hd)
            out = torch.cat([ends[:, :, :1], mid, ends[:, :, 1:]], 2)
            return self.proj(out.reshape(b, self.h, n, hd).transpose(1, 2).reshape(b, n, d))

    class BigBirdEncoder(nn.Module):
        def __init__(self, vocab=1000, d=64, heads=4, layers=2, n=256, block=16, rand=2,
                     classes=4):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(0.02 * torch.randn(1, n, d))
            self.attn = nn.ModuleList([BigBirdAttention(d, heads, n, block, rand, 70 + i)
                                       for i in range(layers)])
            self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            self.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            self.ff = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                                   nn.Linear(4 * d, d)) for _ in range(layers)])
            self.head = nn.Linear(d, classes)

        def forward(self, idx):
            x = self.emb(idx) + self.pos
            for attn, n1, n2, ff in zip(self.attn, self.n1, self.n2, self.ff, strict=True):
                x = x + attn(n1(x))
                x = x + ff(n2(x))
            return self.head(x[:, 0])

    # -- Fourier Neural Operator ----------------------------------------------------------
    class SpectralConv2d(nn.Module):
        """The lowest ``modes`` frequencies (positive and negative rows) times complex
        channel-mixing weights, kept as (re, im) pairs and multiplied out by einsum."""

        def __init__(self, c, modes):
            super().__init__()
            self.m = modes
            s = 1 / (c * c)
            self.w1 = nn.Parameter(s * torch.rand(2, c, c, modes, modes))
            self.w2 = nn.Parameter(s * torch.rand(2, c, c, modes, modes))

        @staticmethod
        def cmul(xr, xi, w):
            wr, wi = w[0], w[1]
            return (torch.einsum("bixy,ioxy->boxy", xr, wr)
                    - torch.einsum("bixy,ioxy->boxy", xi, wi),
                    torch.einsum("bixy,ioxy->boxy", xr, wi)
                    + torch.einsum("bixy,ioxy->boxy", xi, wr))

        def forward(self, x):
            b, c, h, w = x.shape
            m = self.m
            xf = torch.fft.rfft2(x)
            xr, xi = xf.real, xf.imag
            top = self.cmul(xr[:, :, :m, :m], xi[:, :, :m, :m], self.w1)
            bot = self.cmul(xr[:, :, -m:, :m], xi[:, :, -m:, :m], self.w2)
            zeros = x.new_zeros(b, c, h - 2 * m, m)
            re = torch.cat([top[0], zeros, bot[0]], 2)
            im = torch.cat([top[1], zeros, bot[1]], 2)
            pad = (0, w // 2 + 1 - m)
            out = torch.complex(F.pad(re, pad), F.pad(im, pad))
            return torch.fft.irfft2(out, s=(h, w))

    class FNO2d(nn.Module):
        def __init__(self, c=24, modes=8, layers=4, cin=1, cout=1):
            super().__init__()
            self.lift = nn.Linear(cin + 2, c)
            self.spectral = nn.ModuleList([SpectralConv2d(c, modes) for _ in range(layers)])
            self.point = nn.ModuleList([nn.Conv2d(c, c, 1) for _ in range(layers)])
            self.out = nn.Sequential(nn.Linear(c, 64), nn.GELU(), nn.Linear(64, cout))

        def forward(self, a):
            b, h, w, _ = a.shape
            gy = torch.linspace(0, 1, h).reshape(1, h, 1, 1).expand(b, h, w, 1)
            gx = torch.linspace(0, 1, w).reshape(1, 1, w, 1).expand(b, h, w, 1)
            x = self.lift(torch.cat([a, gy, gx], -1)).permute(0, 3, 1, 2)
            last = len(self.point) - 1
            for i, (sp, pw) in enumerate(zip(self.spectral, self.point, strict=True)):
                x = sp(x) + pw(x)
                if i < last:
                    x = F.gelu(x)
            return self.out(x.permute(0, 2, 3, 1))

    # -- DeepLabV3+ -----------------------------------------------------------------------
    class ASPP(nn.Module):
        def __init__(self, cin, c, rates):
            super().__init__()
            self.branches = nn.ModuleList([conv_bn(cin, c, 1)] +
                                          [conv_bn(cin, c, 3, d=r) for r in rates])
            self.image = nn.Sequential(nn.AdaptiveAvgPool2d(1), conv_bn(cin, c, 1))
            self.fuse = conv_bn(c * (len(rates) + 2), c, 1)

        def forward(self, x):
            pooled = F.interpolate(self.image(x), size=x.shape[2:], mode="bilinear",
                                   align_corners=False)
            return self.fuse(torch.cat([br(x) for br in self.branches] + [pooled], 1))

    class DeepLabV3Plus(nn.Module):
        def __init__(self, widths=(16, 24, 48, 96), aspp=48, low=16, rates=(2, 4, 6),
                     classes=6):
            super().__init__()
            w = widths
            self.stem = nn.Sequential(conv_bn(3, w[0], s=2), conv_bn(w[0], w[1], s=2),
                                      conv_bn(w[1], w[1]))                       # stride 4
            self.deep = nn.Sequential(conv_bn(w[1], w[2], s=2), conv_bn(w[2], w[2]),
                                      conv_bn(w[2], w[3], s=2), conv_bn(w[3], w[3], d=2))
            self.aspp = ASPP(w[3], aspp, rates)
            self.low = conv_bn(w[1], low, 1)
            self.dec = nn.Sequential(conv_bn(aspp + low, aspp), conv_bn(aspp, aspp))
            self.cls = nn.Conv2d(aspp, classes, 1)

        def forward(self, x):
            size = x.shape[2:]
            f4 = self.stem(x)
            a = self.aspp(self.deep(f4))
            a = F.interpolate(a, size=f4.shape[2:], mode="bilinear", align_corners=True)
            y = self.cls(self.dec(torch.cat([a, self.low(f4)], 1)))
            return F.interpolate(y, size=size, mode="bilinear", align_corners=True)

    # -- KPConv ---------------------------------------------------------------------------
    class KPConv(nn.Module):
        """Rigid KPConv: neighbour j's feature weighted by max(0, 1 - |p_j - p_i - k_m| / s)
        for each kernel point k_m, summed over neighbours, then one matrix per kernel point."""

        def __init__(self, cin, cout, kpoints=15, k=16, radius=1.0):
            super().__init__()
            self.k, self.sigma = k, radius * 0.6
            g = torch.Generator().manual_seed(71)
            kp = torch.randn(kpoints - 1, 3, generator=g)
            kp = kp / kp.norm(dim=-1, keepdim=True) * radius * 0.66
            self.register_buffer("kernel", torch.cat([torch.zeros(1, 3), kp]))  # (M, 3)
            self.weight = nn.Parameter(torch.randn(kpoints, cin, cout) / math.sqrt(cin * 4))
            self.bn = nn.BatchNorm1d(cout)

        def forward(self, xyz, feat):
            b, n, _ = xyz.shape
            nbr = torch.cdist(xyz, xyz).topk(self.k, -1, largest=False).indices   # (b, n, k)
            flat = (nbr + torch.arange(b)[:, None, None] * n).reshape(-1)
            rel = xyz.reshape(b * n, 3)[flat].reshape(b, n, self.k, 3) - xyz[:, :, None]
            dist = (rel[:, :, :, None] - self.kernel).norm(dim=-1)          # (b, n, k, M)
            infl = torch.clamp(1 - dist / self.sigma, min=0)
            nf = feat.reshape(b * n, -1)[flat].reshape(b, n, self.k, -1)     # (b, n, k, c)
            per_kp = torch.einsum("bnkm,bnkc->bnmc", infl, nf)
            out = torch.einsum("bnmc,mco->bno", per_kp, self.weight)
            return F.leaky_relu(self.bn(out.transpose(1, 2)).transpose(1, 2), 0.1)

    class KPConvNet(nn.Module):
        def __init__(self, widths=(32, 64, 64), kpoints=15, k=16, classes=10):
            super().__init__()
            self.inp = nn.Linear(3, widths[0])
            self.convs = nn.ModuleList([KPConv(a, b, kpoints, k)
                                        for a, b in zip(widths[:-1], widths[1:], strict=True)])
            self.head = nn.Linear(widths[-1], classes)

        def forward(self, xyz):
            f = F.relu(self.inp(xyz))
            for conv in self.convs:
                f = conv(xyz, f)
            return self.head(f.max(1).values)

    # -- T5 decoder -----------------------------------------------------------------------
    def causal_buckets(q_len, k_len, buckets, max_dist):
        """T5's unidirectional buckets: exact below buckets/2, log-spaced up to max_dist."""
        rel = torch.arange(k_len)[None] - torch.arange(q_len)[:, None]
        n = torch.clamp(-rel, min=0)
        exact = buckets // 2
        log = exact + (torch.log(n.float().clamp(min=1) / exact) / math.log(max_dist / exact)
                       * (buckets - exact)).long()
        return torch.where(n < exact, n, torch.clamp(log, max=buckets - 1))

    class T5RMS(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(1 + 0.1 * torch.randn(d))

        def forward(self, x):
            return self.w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    class T5Attn(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h = heads
            self.q, self.k = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.v, self.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)

        def forward(self, x, mem, bias):
            b, n, d = x.shape
            m = mem.shape[1]
            q = self.q(x).reshape(b, n, self.h, -1).transpose(1, 2)
            k = self.k(mem).reshape(b, m, self.h, -1).transpose(1, 2)
            v = self.v(mem).reshape(b, m, self.h, -1).transpose(1, 2)
            att = q @ k.transpose(-2, -1)                     # T5: no 1/sqrt(d) scaling
            if bias is not None:
                att = att + bias
            return self.o((att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d))

    class T5Decoder(nn.Module):
        def __init__(self, vocab=1000, d=64, heads=4, layers=2, ff=128, buckets=32,
                     max_dist=128):
            super().__init__()
            self.buckets, self.max_dist = buckets, max_dist
            self.emb = nn.Embedding(vocab, d)
            self.rel = nn.Embedding(buckets, heads)
            self.self_attn = nn.ModuleList([T5Attn(d, heads) for _ in range(layers)])
            self.cross = nn.ModuleList([T5Attn(d, heads) for _ in range(layers)])
            self.norms = nn.ModuleList([T5RMS(d) for _ in range(3 * layers + 1)])
            self.wi = nn.ModuleList([nn.Linear(d, 2 * ff, bias=False) for _ in range(layers)])
            self.wo = nn.ModuleList([nn.Linear(ff, d, bias=False) for _ in range(layers)])
            self.lm = nn.Linear(d, vocab, bias=False)

        def forward(self, idx, memory):
            n = idx.shape[1]
            bias = self.rel(causal_buckets(n, n, self.buckets, self.max_dist)).permute(2, 0, 1)
            causal = torch.triu(torch.full((n, n), float("-inf")), 1)
            bias = (bias + causal)[None]
            x = self.emb(idx)
            for i, (sa, ca, wi, wo) in enumerate(zip(self.self_attn, self.cross, self.wi,
                                                     self.wo, strict=True)):
                h = self.norms[3 * i](x)
                x = x + sa(h, h, bias)
                x = x + ca(self.norms[3 * i + 1](x), memory, None)
                gate, up = wi(self.norms[3 * i + 2](x)).chunk(2, -1)
                x = x + wo(F.gelu(gate, approximate="tanh") * up)
            return self.lm(self.norms[-1](x) * x.shape[-1] ** -0.5)

    # -- BYOL -----------------------------------------------------------------------------
    def mlp_bn(cin, hidden, cout):
        return nn.Sequential(nn.Linear(cin, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                             nn.Linear(hidden, cout))

    class BYOL(nn.Module):
        """Online encoder + projector + predictor and a target encoder + projector (EMA
        weights, here a perturbed copy); the loss 2 - 2 cos per sample, symmetrized."""

        def __init__(self, widths=(16, 32, 64), proj=64, hidden=128):
            super().__init__()

            def encoder():
                layers, c = [], 3
                for w in widths:
                    layers += [conv_bn(c, w, s=2), conv_bn(w, w)]
                    c = w
                return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())

            self.online = nn.Sequential(encoder(), mlp_bn(widths[-1], hidden, proj))
            self.predictor = mlp_bn(proj, hidden, proj)
            self.target = nn.Sequential(encoder(), mlp_bn(widths[-1], hidden, proj))

        def forward(self, view1, view2):
            def loss(p, z):
                return 2 - 2 * (F.normalize(p, dim=-1) * F.normalize(z, dim=-1)).sum(-1)

            p1, p2 = self.predictor(self.online(view1)), self.predictor(self.online(view2))
            z1, z2 = self.target(view1), self.target(view2)
            return loss(p1, z2) + loss(p2, z1)

    # -- VAE ------------------------------------------------------------------------------
    class ConvVAE(nn.Module):
        """Encoder to (mu, log-variance), z = mu + eps * exp(logvar / 2) with eps an input,
        a transposed-conv decoder; the output is the reconstruction's BCE plus the KL per
        sample (the negative ELBO)."""

        def __init__(self, widths=(16, 32, 64), latent=16, img=32):
            super().__init__()
            layers, c = [], 1
            for w in widths:
                layers += [nn.Conv2d(c, w, 4, 2, 1), nn.LeakyReLU(0.2)]
                c = w
            self.enc = nn.Sequential(*layers, nn.Flatten())
            self.side = img // 2 ** len(widths)
            flat = widths[-1] * self.side ** 2
            self.mu, self.logvar = nn.Linear(flat, latent), nn.Linear(flat, latent)
            self.up = nn.Linear(latent, flat)
            layers = []
            rev = list(widths[::-1]) + [1]
            for a, b in zip(rev[:-1], rev[1:], strict=True):
                layers += [nn.ConvTranspose2d(a, b, 4, 2, 1), nn.LeakyReLU(0.2)]
            self.dec = nn.Sequential(*layers[:-1])
            self.c = widths[-1]

        def forward(self, x, eps):
            h = self.enc(x)
            mu, logvar = self.mu(h), self.logvar(h)
            z = mu + eps * torch.exp(0.5 * logvar)
            logits = self.dec(self.up(z).reshape(-1, self.c, self.side, self.side))
            rec = F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum((1, 2, 3))
            kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(-1)
            return rec + kl

    # -- quantile forecaster --------------------------------------------------------------
    class QuantileForecaster(nn.Module):
        """A GRU over the history, Monte-Carlo dropout-free samples from a Gaussian head driven
        by given noise, summarized by ``torch.quantile``; a direct quantile head made monotone
        by ``sort``; both stacked."""

        def __init__(self, features=4, hidden=32, horizon=12, samples=64,
                     quantiles=(0.1, 0.5, 0.9)):
            super().__init__()
            self.horizon = horizon
            self.gru = nn.GRU(features, hidden, batch_first=True)
            self.mean = nn.Linear(hidden, horizon)
            self.scale = nn.Linear(hidden, horizon)
            self.direct = nn.Linear(hidden, horizon * len(quantiles))
            self.register_buffer("q", torch.tensor(quantiles))

        def forward(self, history, noise):
            _, h = self.gru(history)
            h = h[-1]
            mean, scale = self.mean(h), F.softplus(self.scale(h)) + 1e-3
            draws = mean[:, None] + scale[:, None] * noise             # (b, samples, horizon)
            mc = torch.quantile(draws, self.q, dim=1).permute(1, 2, 0)  # (b, horizon, q)
            direct = self.direct(h).reshape(-1, self.horizon, self.q.shape[0])
            direct = direct.sort(-1).values
            return torch.cat([mc, direct], -1)

    # -- H3 -------------------------------------------------------------------------------
    class H3Layer(nn.Module):
        """q, k, v projections; a shift SSM on k (a causal depthwise conv of its taps), times v;
        a diagonal SSM (kernel sum_n C_n exp(-dt a_n l) B_n, by FFT convolution), times q."""

        def __init__(self, d, heads, state=16, shift=4, length=256):
            super().__init__()
            self.h, self.shift = heads, shift
            self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.o = nn.Linear(d, d)
            self.shift_taps = nn.Parameter(0.3 * torch.randn(d, 1, shift))
            self.log_a = nn.Parameter(torch.log(torch.linspace(0.5, 4, state)).repeat(d, 1))
            self.log_dt = nn.Parameter(math.log(0.01) + torch.rand(d, 1) * math.log(10))
            self.c = nn.Parameter(torch.randn(d, state) / math.sqrt(state))
            self.skip = nn.Parameter(torch.randn(d))

        def kernel(self, length):
            decay = -torch.exp(self.log_a) * torch.exp(self.log_dt)          # (d, state)
            steps = torch.arange(length, dtype=torch.float32)
            return (self.c[:, :, None] * torch.exp(decay[:, :, None] * steps)).sum(1)

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.q(x), self.k(x), self.v(x)
            k = F.conv1d(F.pad(k.transpose(1, 2), (self.shift - 1, 0)), self.shift_taps,
                         groups=d)                                             # (b, d, n)
            kv = k * v.transpose(1, 2)
            kf = torch.fft.rfft(self.kernel(n), n=2 * n)
            y = torch.fft.irfft(torch.fft.rfft(kv, n=2 * n) * kf, n=2 * n)[..., :n]
            y = y + kv * self.skip[:, None]
            return self.o(q * y.transpose(1, 2))

    class H3LM(nn.Module):
        def __init__(self, vocab=1000, d=64, heads=1, layers=2, state=16, n=256):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList([H3Layer(d, heads, state, length=n)
                                         for _ in range(layers)])
            self.norms = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            self.mlps = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                                     nn.Linear(2 * d, d))
                                       for _ in range(layers)])
            self.out = nn.Linear(d, vocab)

        def forward(self, idx):
            x = self.emb(idx)
            for layer, norm, mlp in zip(self.layers, self.norms, self.mlps, strict=True):
                x = x + layer(norm(x))
                x = x + mlp(x)
            return self.out(x)

    # -- inputs ---------------------------------------------------------------------------
    def tokens(vocab, b, n, seed, pad_tail=0):
        def make():
            g = torch.Generator().manual_seed(seed)
            idx = torch.randint(1, vocab, (b, n), generator=g)
            if pad_tail:
                idx[-1, n - pad_tail:] = 0
            return {"idx": idx}
        return make

    def fno_inputs(b=2, side=32, seed=72):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"a": torch.randn(b, side, side, 1, generator=g)}
        return make

    def point_cloud(b=2, n=256, seed=73):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"xyz": torch.rand(b, n, 3, generator=g) * 4}
        return make

    def t5_inputs(vocab=1000, b=2, n=32, m=48, d=64, seed=74):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"idx": torch.randint(0, vocab, (b, n), generator=g),
                    "memory": torch.randn(b, m, d, generator=g)}
        return make

    def two_views(b=8, side=64, seed=75):
        def make():
            g = torch.Generator().manual_seed(seed)
            x = torch.rand(b, 3, side, side, generator=g)
            return {"view1": x, "view2": torch.flip(x, (3,)) * 0.9 + 0.05}
        return make

    def vae_inputs(b=8, side=32, latent=16, seed=76):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"x": torch.rand(b, 1, side, side, generator=g),
                    "eps": torch.randn(b, latent, generator=g)}
        return make

    def forecast_inputs(b=16, t=48, features=4, samples=64, horizon=12, seed=77):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"history": torch.randn(b, t, features, generator=g),
                    "noise": torch.randn(b, samples, horizon, generator=g)}
        return make

    return {
        "efficientformer": (EfficientFormerMini, (1, 3, 64, 64)),
        "cvt_mini": (CvTMini, (1, 3, 64, 64)),
        "funnel_encoder": (FunnelEncoder, tokens(1000, 2, 128, 78, pad_tail=40)),
        "bigbird_sparse": (BigBirdEncoder, tokens(1000, 2, 256, 79)),
        "fno2d": (FNO2d, fno_inputs()),
        "deeplabv3plus": (DeepLabV3Plus, (1, 3, 128, 128)),
        "kpconv_net": (KPConvNet, point_cloud()),
        "t5_decoder": (T5Decoder, t5_inputs()),
        "byol_pair": (BYOL, two_views()),
        "vae_reparam": (ConvVAE, vae_inputs()),
        "quantile_forecast": (QuantileForecaster, forecast_inputs()),
        "h3_lm": (H3LM, tokens(1000, 2, 256, 80)),
    }
