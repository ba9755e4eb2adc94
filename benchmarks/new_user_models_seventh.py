"""The seventh round of ``bench_new_user_models``: WaveNet's gated dilated causal conv1d,
Res2Net's hierarchical split-add-concat block, a character-level CNN text classifier, a DS-CNN
keyword spotter, DGCNN's EdgeConv (k nearest neighbours by top-k, gathered), a VQ-VAE (codebook
argmin and lookup), NetVLAD pooling, a RealNVP flow (squeeze, actnorm, affine couplings,
log-determinant), involution (kernels generated per pixel, applied by unfold), CondConv
(per-sample mixed weights as a grouped conv), sparsemax attention (sort, cumsum, gather) and a
Kolmogorov-Arnold network (B-spline bases). Kept apart so the main script stays readable."""

from __future__ import annotations


def seventh_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    def cbr(i, o, k, s=1, p=None, act=nn.ReLU, groups=1):
        p = k // 2 if p is None else p
        return nn.Sequential(nn.Conv2d(i, o, k, s, p, groups=groups, bias=False),
                             nn.BatchNorm2d(o), act())

    # -- WaveNet ---------------------------------------------------------------------------
    class WaveNetLayer(nn.Module):
        """A dilated causal conv1d (left zero padding), the gate tanh(f) * sigmoid(g), a 1x1
        residual and a 1x1 skip output."""

        def __init__(self, c, skip, d):
            super().__init__()
            self.d = d
            self.conv = nn.Conv1d(c, 2 * c, 2, dilation=d)
            self.res, self.skip = nn.Conv1d(c, c, 1), nn.Conv1d(c, skip, 1)

        def forward(self, x):
            f, g = self.conv(F.pad(x, (self.d, 0))).chunk(2, 1)
            z = torch.tanh(f) * torch.sigmoid(g)
            return x + self.res(z), self.skip(z)

    class WaveNetMini(nn.Module):
        """Mu-law one-hot inputs (256 classes) by a causal 1x1 conv, two stacks of dilations
        1..128, skips summed, ReLU-1x1-ReLU-1x1 to 256 logits per sample."""

        def __init__(self, c=32, skip=64, classes=256, stacks=2, depth=8):
            super().__init__()
            self.inp = nn.Conv1d(classes, c, 1)
            self.layers = nn.ModuleList([WaveNetLayer(c, skip, 2 ** i) for _ in range(stacks)
                                         for i in range(depth)])
            self.out = nn.Sequential(nn.ReLU(), nn.Conv1d(skip, skip, 1), nn.ReLU(),
                                     nn.Conv1d(skip, classes, 1))

        def forward(self, x):
            x = self.inp(x)
            total = 0
            for layer in self.layers:
                x, s = layer(x)
                total = total + s
            return self.out(total)

    def wavenet_inputs(n=1024):
        g = torch.Generator().manual_seed(31)
        idx = torch.randint(0, 256, (1, n), generator=g)
        return {"x": F.one_hot(idx, 256).permute(0, 2, 1).float().contiguous()}

    # -- Res2Net ---------------------------------------------------------------------------
    class Res2Block(nn.Module):
        """A bottleneck whose 3x3 stage works on ``scale`` channel groups: group i gets the
        conv of (its split + the previous group's output); the first split passes through (or
        is average pooled when striding); the groups are concatenated back."""

        def __init__(self, i, o, s=1, scale=4, width=16):
            super().__init__()
            self.scale, self.s = scale, s
            self.c1 = cbr(i, width * scale, 1)
            self.convs = nn.ModuleList([cbr(width, width, 3, s) for _ in range(scale - 1)])
            self.pool = nn.AvgPool2d(3, s, 1) if s > 1 else None
            self.c3 = nn.Sequential(nn.Conv2d(width * scale, o, 1, bias=False),
                                    nn.BatchNorm2d(o))
            self.short = (nn.Sequential(nn.Conv2d(i, o, 1, s, bias=False), nn.BatchNorm2d(o))
                          if s > 1 or i != o else nn.Identity())

        def forward(self, x):
            parts = torch.chunk(self.c1(x), self.scale, 1)
            outs, prev = [], None
            for k, conv in enumerate(self.convs):
                y = parts[k] if prev is None or self.s > 1 else parts[k] + prev
                prev = conv(y)
                outs.append(prev)
            outs.append(self.pool(parts[-1]) if self.pool is not None else parts[-1])
            return F.relu(self.c3(torch.cat(outs, 1)) + self.short(x))

    def res2net_mini():
        return nn.Sequential(cbr(3, 32, 3, 2), nn.MaxPool2d(3, 2, 1), Res2Block(32, 64),
                             Res2Block(64, 64), Res2Block(64, 128, 2, width=24),
                             Res2Block(128, 128, width=24), Res2Block(128, 256, 2, width=32),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 100))

    # -- Character CNN ---------------------------------------------------------------------
    class CharCNN(nn.Module):
        """Character embeddings (70 symbols), conv1d banks of widths 3/5/7 with ReLU, the max
        over time of each, dropout, a 2-layer classifier."""

        def __init__(self, vocab=70, d=32, c=96, classes=4):
            super().__init__()
            self.emb = nn.Embedding(vocab, d, padding_idx=0)
            self.convs = nn.ModuleList([nn.Conv1d(d, c, k, padding=k // 2) for k in (3, 5, 7)])
            self.conv2 = nn.Conv1d(c, c, 3, padding=1)
            self.fc = nn.Sequential(nn.Dropout(0.5), nn.Linear(3 * c, 128), nn.ReLU(),
                                    nn.Linear(128, classes))

        def forward(self, idx):
            x = self.emb(idx).transpose(1, 2)
            feats = []
            for conv in self.convs:
                y = F.max_pool1d(F.relu(conv(x)), 3, 3)
                feats.append(F.relu(self.conv2(y)).max(dim=2).values)
            return self.fc(torch.cat(feats, 1))

    def char_inputs(n=1014):
        g = torch.Generator().manual_seed(32)
        return {"idx": torch.randint(0, 70, (1, n), generator=g)}

    # -- DS-CNN keyword spotting -----------------------------------------------------------
    def dscnn_kws(c=64, classes=12, blocks=4):
        """A 10x4 conv with stride 2x2 on 49 frames x 10 MFCCs, depthwise-separable blocks,
        global average pooling."""
        layers = [cbr(1, c, (10, 4), 2, (5, 1))]
        for _ in range(blocks):
            layers += [cbr(c, c, 3, groups=c), cbr(c, c, 1)]
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(c, classes))

    # -- DGCNN -----------------------------------------------------------------------------
    def knn_features(x, k):
        """For points ``x`` (B, C, N): the edge features (x_j - x_i, x_i) of each point's k
        nearest neighbours in feature space, (B, 2C, N, k)."""
        inner = -2 * torch.matmul(x.transpose(2, 1), x)
        sq = (x ** 2).sum(1, keepdim=True)
        dist = -sq - inner - sq.transpose(2, 1)
        idx = dist.topk(k, dim=-1).indices                    # (B, N, k)
        b, c, n = x.shape
        base = torch.arange(b).view(-1, 1, 1) * n
        flat = (idx + base).reshape(-1)
        pts = x.transpose(2, 1).reshape(b * n, c)
        nb = pts[flat].view(b, n, k, c)
        ctr = x.transpose(2, 1).reshape(b, n, 1, c).expand(-1, -1, k, -1)
        return torch.cat([nb - ctr, ctr], 3).permute(0, 3, 1, 2)

    class EdgeConv(nn.Module):
        def __init__(self, i, o, k):
            super().__init__()
            self.k = k
            self.conv = nn.Sequential(nn.Conv2d(2 * i, o, 1, bias=False), nn.BatchNorm2d(o),
                                      nn.LeakyReLU(0.2))

        def forward(self, x):
            return self.conv(knn_features(x, self.k)).max(dim=-1).values

    class DGCNNMini(nn.Module):
        """Three EdgeConvs (dynamic graphs, k=10) on 512 points, concatenated, a 1x1 conv1d,
        global max and mean pooling, an MLP classifier."""

        def __init__(self, k=10, classes=40):
            super().__init__()
            self.e1, self.e2, self.e3 = EdgeConv(3, 32, k), EdgeConv(32, 32, k), \
                EdgeConv(32, 64, k)
            self.fuse = nn.Sequential(nn.Conv1d(128, 256, 1, bias=False), nn.BatchNorm1d(256),
                                      nn.LeakyReLU(0.2))
            self.head = nn.Sequential(nn.Linear(512, 128), nn.ReLU(), nn.Linear(128, classes))

        def forward(self, x):
            x1 = self.e1(x)
            x2 = self.e2(x1)
            x3 = self.e3(x2)
            f = self.fuse(torch.cat([x1, x2, x3], 1))
            return self.head(torch.cat([f.amax(-1), f.mean(-1)], 1))

    # -- VQ-VAE ----------------------------------------------------------------------------
    class VQVAEMini(nn.Module):
        """A strided conv encoder to 16x16 latents of 32 channels, nearest codebook entry
        (512 codes) by argmin of squared distances, the codes looked up, a transposed-conv
        decoder with residual blocks."""

        def __init__(self, d=32, codes=512, c=64):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(3, c, 4, 2, 1), nn.ReLU(),
                                     nn.Conv2d(c, c, 4, 2, 1), nn.ReLU(), nn.Conv2d(c, d, 1))
            self.codebook = nn.Embedding(codes, d)
            nn.init.uniform_(self.codebook.weight, -1.0, 1.0)
            self.res = nn.Sequential(nn.ReLU(), nn.Conv2d(d, d, 3, 1, 1), nn.ReLU(),
                                     nn.Conv2d(d, d, 1))
            self.dec = nn.Sequential(nn.ConvTranspose2d(d, c, 4, 2, 1), nn.ReLU(),
                                     nn.ConvTranspose2d(c, 3, 4, 2, 1))

        def forward(self, x):
            z = self.enc(x)
            b, d, hh, ww = z.shape
            flat = z.permute(0, 2, 3, 1).reshape(-1, d)
            w = self.codebook.weight
            dist = (flat ** 2).sum(1, keepdim=True) - 2 * flat @ w.t() + (w ** 2).sum(1)
            q = self.codebook(dist.argmin(1)).view(b, hh, ww, d).permute(0, 3, 1, 2)
            q = q + self.res(q)
            return torch.tanh(self.dec(q))

    # -- NetVLAD ---------------------------------------------------------------------------
    class NetVLAD(nn.Module):
        """Soft assignment of each local descriptor to 32 clusters (1x1 conv, softmax), the
        assignment-weighted residuals to the centroids summed, intra-normalized per cluster,
        flattened and L2-normalized."""

        def __init__(self, d=128, clusters=32):
            super().__init__()
            self.assign = nn.Conv2d(d, clusters, 1)
            self.centroids = nn.Parameter(torch.rand(clusters, d))

        def forward(self, x):
            b, d = x.shape[:2]
            x = F.normalize(x, p=2, dim=1)
            a = F.softmax(self.assign(x).view(b, -1, x.shape[2] * x.shape[3]), 1)   # B K N
            xf = x.view(b, d, -1)                                                    # B D N
            vlad = a @ xf.transpose(1, 2) - a.sum(-1, keepdim=True) * self.centroids  # B K D
            vlad = F.normalize(vlad, p=2, dim=2)
            return F.normalize(vlad.reshape(b, -1), p=2, dim=1)

    def netvlad_mini():
        return nn.Sequential(cbr(3, 32, 3, 2), cbr(32, 64, 3, 2), cbr(64, 64, 3),
                             cbr(64, 128, 3, 2), cbr(128, 128, 3), NetVLAD())

    # -- RealNVP ---------------------------------------------------------------------------
    def squeeze(x):
        """Space-to-depth by 2: (B, C, H, W) -> (B, 4C, H/2, W/2)."""
        b, c, hh, ww = x.shape
        x = x.view(b, c, hh // 2, 2, ww // 2, 2).permute(0, 1, 3, 5, 2, 4)
        return x.reshape(b, 4 * c, hh // 2, ww // 2)

    class Coupling(nn.Module):
        """ActNorm, Glow's invertible 1x1 conv in its LU form (W = P L (U + diag(sign e^s)),
        log|det W| = sum s), then an affine coupling: half the channels give a scale
        (tanh-bounded, exponentiated) and shift for the other half; each step's
        log-determinant summed."""

        def __init__(self, c, hidden):
            super().__init__()
            self.loc = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
            self.logs = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
            p, lo, up = torch.linalg.lu(torch.linalg.qr(torch.randn(c, c))[0])
            d = torch.diagonal(up)
            self.register_buffer("p", p)
            self.register_buffer("sign", torch.sign(d))
            self.register_buffer("lmask", torch.tril(torch.ones(c, c), -1))
            self.register_buffer("eye", torch.eye(c))
            self.lo, self.up = nn.Parameter(lo), nn.Parameter(torch.triu(up, 1))
            self.log_s = nn.Parameter(torch.log(d.abs()))
            self.net = nn.Sequential(nn.Conv2d(c // 2, hidden, 3, 1, 1), nn.ReLU(),
                                     nn.Conv2d(hidden, hidden, 1), nn.ReLU(),
                                     nn.Conv2d(hidden, c, 3, 1, 1))
            self.scale = nn.Parameter(torch.ones(1, c // 2, 1, 1))

        def forward(self, x, logdet):
            hw = x.shape[2] * x.shape[3]
            x = (x + self.loc) * torch.exp(self.logs)
            lo = self.lo * self.lmask + self.eye
            # the diagonal by broadcasting onto the identity: torch's ONNX export has no aten::diag
            up = self.up * self.lmask.t() + self.eye * (self.sign * torch.exp(self.log_s))
            w = self.p @ lo @ up
            x = F.conv2d(x, w[:, :, None, None])
            logdet = logdet + hw * (self.logs.sum() + self.log_s.sum())
            xa, xb = x.chunk(2, 1)
            s, t = self.net(xa).chunk(2, 1)
            s = self.scale * torch.tanh(s)
            xb = xb * torch.exp(s) + t
            return torch.cat([xa, xb], 1), logdet + s.flatten(1).sum(1)

    class RealNVPMini(nn.Module):
        """Two scales of squeeze + 3 couplings on a 32x32 image; returns z flattened and the
        bits per dimension under a standard normal, concatenated."""

        def __init__(self, hidden=64):
            super().__init__()
            self.levels = nn.ModuleList([nn.ModuleList([Coupling(c, hidden) for _ in range(3)])
                                         for c in (12, 48)])

        def forward(self, x):
            logdet = torch.zeros(x.shape[0])
            for level in self.levels:
                x = squeeze(x)
                for step in level:
                    x, logdet = step(x, logdet)
            z = x.flatten(1)
            logp = -0.5 * (z ** 2 + math.log(2 * math.pi)).sum(1) + logdet
            bits = -logp / (z.shape[1] * math.log(2))  # bits per dimension, as flows report
            return torch.cat([z, bits[:, None]], 1)

    # -- Involution ------------------------------------------------------------------------
    class Involution(nn.Module):
        """A K x K kernel per pixel and channel group generated from the pixel (1x1 reduce,
        BN-ReLU, 1x1 span), applied to the unfolded K x K neighbourhood."""

        def __init__(self, c, k=7, s=1, groups=4, r=4):
            super().__init__()
            self.k, self.s, self.g = k, s, groups
            self.pool = nn.AvgPool2d(s, s) if s > 1 else nn.Identity()
            self.reduce = cbr(c, c // r, 1)
            self.span = nn.Conv2d(c // r, k * k * groups, 1)

        def forward(self, x):
            b, c, hh, ww = x.shape
            w = self.span(self.reduce(self.pool(x)))
            oh, ow = w.shape[2], w.shape[3]
            w = w.view(b, self.g, 1, self.k * self.k, oh, ow)
            u = F.unfold(x, self.k, padding=self.k // 2, stride=self.s)
            u = u.view(b, self.g, c // self.g, self.k * self.k, oh, ow)
            return (w * u).sum(3).view(b, c, oh, ow)

    class InvBlock(nn.Module):
        def __init__(self, i, m, s):
            super().__init__()
            self.body = nn.Sequential(cbr(i, m, 1), Involution(m, 7, s), nn.BatchNorm2d(m),
                                      nn.ReLU(), nn.Conv2d(m, i, 1, bias=False),
                                      nn.BatchNorm2d(i))
            self.short = nn.AvgPool2d(s, s) if s > 1 else nn.Identity()

        def forward(self, x):
            return F.relu(self.body(x) + self.short(x))

    def rednet_mini():
        return nn.Sequential(cbr(3, 32, 3, 2), cbr(32, 64, 3, 2), InvBlock(64, 32, 1),
                             InvBlock(64, 32, 2), InvBlock(64, 32, 1), cbr(64, 128, 1),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 100))

    # -- CondConv --------------------------------------------------------------------------
    class CondConv(nn.Module):
        """E expert kernels mixed per sample by sigmoid routing weights from the pooled input;
        the per-sample kernels applied as one grouped conv over the batch folded into
        channels."""

        def __init__(self, i, o, k, s=1, experts=4):
            super().__init__()
            self.o, self.k, self.s = o, k, s
            self.route = nn.Linear(i, experts)
            self.weight = nn.Parameter(torch.randn(experts, o, i, k, k) / math.sqrt(i * k * k))

        def forward(self, x):
            b, c, hh, ww = x.shape
            r = torch.sigmoid(self.route(x.mean((2, 3))))                    # B E
            w = (r[:, :, None] * self.weight.flatten(1)[None]).sum(1)        # B (O I K K)
            w = w.view(b * self.o, c, self.k, self.k)
            y = F.conv2d(x.reshape(1, b * c, hh, ww), w, stride=self.s, padding=self.k // 2,
                         groups=b)
            return y.view(b, self.o, y.shape[2], y.shape[3])

    class CondConvNet(nn.Module):
        """A stem, CondConv + BN-ReLU stages (64 -> 128 channels), pooled classifier; batch 2
        so that the samples' kernels differ."""

        def __init__(self):
            super().__init__()
            self.stem = cbr(3, 32, 3, 2)
            self.convs = nn.ModuleList([CondConv(32, 64, 3, 2), CondConv(64, 64, 3),
                                        CondConv(64, 128, 3, 2), CondConv(128, 128, 3)])
            self.bns = nn.ModuleList([nn.BatchNorm2d(c) for c in (64, 64, 128, 128)])
            self.fc = nn.Linear(128, 100)

        def forward(self, x):
            x = self.stem(x)
            for conv, bn in zip(self.convs, self.bns, strict=True):
                x = F.relu(bn(conv(x)))
            return self.fc(x.mean((2, 3)))

    # -- Sparsemax attention ---------------------------------------------------------------
    def sparsemax(z, dim=-1):
        """Euclidean projection onto the simplex: sort descending, the support size from the
        cumulative sums, the threshold tau gathered at it, max(z - tau, 0)."""
        zs = torch.sort(z, dim=dim, descending=True).values
        n = z.shape[dim]
        rng = torch.arange(1, n + 1, dtype=z.dtype)
        view = [1] * z.dim()
        view[dim] = -1
        rng = rng.view(view)
        cs = zs.cumsum(dim)
        support = (1 + rng * zs > cs).to(z.dtype)
        k = support.sum(dim, keepdim=True)
        tau = (cs.gather(dim, k.long() - 1) - 1) / k
        return torch.clamp(z - tau, min=0)

    class SparseBlock(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h = heads
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ffn = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, n, 3, self.h, -1).permute(2, 0, 3, 1, 4)
            a = sparsemax(q @ k.transpose(-1, -2) / math.sqrt(d // self.h))
            x = x + self.o((a @ v).transpose(1, 2).reshape(b, n, d))
            return x + self.ffn(self.n2(x))

    class SparsemaxTransformer(nn.Module):
        """Token embeddings and learned positions, two pre-norm blocks whose attention weights
        are sparsemax instead of softmax, mean pooled, a sparsemax output distribution."""

        def __init__(self, vocab=1000, n=64, d=64, heads=4, depth=2, classes=10):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(n, d) * 0.1)
            self.blocks = nn.ModuleList([SparseBlock(d, heads) for _ in range(depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, idx):
            x = self.emb(idx) + self.pos
            for blk in self.blocks:
                x = blk(x)
            return sparsemax(self.head(self.norm(x).mean(1)))

    def sparse_inputs():
        g = torch.Generator().manual_seed(33)
        return {"idx": torch.randint(0, 1000, (1, 64), generator=g)}

    # -- KAN -------------------------------------------------------------------------------
    class KANLayer(nn.Module):
        """A Kolmogorov-Arnold layer: per input, cubic B-spline bases on a uniform grid of
        8 intervals over [-1, 1] (Cox-de Boor from the indicator of each knot interval), mixed
        by learned spline coefficients, plus a SiLU base branch."""

        def __init__(self, i, o, grid=8, order=3):
            super().__init__()
            self.order = order
            h = 2.0 / grid
            knots = torch.arange(-order, grid + order + 1, dtype=torch.float32) * h - 1
            self.register_buffer("knots", knots)
            self.base = nn.Linear(i, o)
            self.coef = nn.Parameter(torch.randn(o, i * (grid + order)) * 0.1)

        def bases(self, x):
            g = self.knots
            x = x[..., None]
            b = ((x >= g[:-1]) & (x < g[1:])).to(x.dtype)
            for p in range(1, self.order + 1):
                b = ((x - g[:-(p + 1)]) / (g[p:-1] - g[:-(p + 1)]) * b[..., :-1]
                     + (g[p + 1:] - x) / (g[p + 1:] - g[1:-p]) * b[..., 1:])
            return b

        def forward(self, x):
            return self.base(F.silu(x)) + F.linear(self.bases(x).flatten(1), self.coef)

    def kan_mini():
        return nn.Sequential(nn.Tanh(), KANLayer(64, 128), nn.Tanh(), KANLayer(128, 64),
                             nn.Tanh(), KANLayer(64, 10))

    image = (1, 3, 128, 128)
    return {
        "wavenet_mini": (WaveNetMini, wavenet_inputs),
        "res2net_mini": (res2net_mini, image),
        "char_cnn": (CharCNN, char_inputs),
        "dscnn_kws": (dscnn_kws, (1, 1, 49, 10)),
        # dicts: the 512 points are one sample but not an image (bench_dynamic_batch skips it)
        "dgcnn_mini": (DGCNNMini, lambda: {"x": torch.randn(1, 3, 512)}),
        "vqvae_mini": (VQVAEMini, (1, 3, 64, 64)),
        "netvlad_mini": (netvlad_mini, image),
        "realnvp_mini": (RealNVPMini, (1, 3, 32, 32)),
        "rednet_mini": (rednet_mini, image),
        # a dict: the batch is folded into the conv's groups, which a trace fixes at 2
        "condconv_mini": (CondConvNet, lambda: {"x": torch.randn(2, 3, 64, 64)}),
        "sparsemax_tx": (SparsemaxTransformer, sparse_inputs),
        "kan_mini": (kan_mini, (32, 64)),
    }
