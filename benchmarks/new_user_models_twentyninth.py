"""The twenty-ninth round of ``bench_new_user_models``: VoxelMorph (a 3-D U-Net's velocity field
integrated by scaling and squaring, each step a volumetric ``grid_sample``), a product-key
memory (two sub-key ``topk``s, their Cartesian product indexed by ``i * n + j``, a second
``topk`` and a weighted value lookup), a tree ensemble evaluated by traversal (Hummingbird's
strategy: per level an advanced-index lookup of each node's feature and threshold, a ``gather``
of the features and ``2 * node + 1 + (x >= t)``), a bootstrap particle filter (log-weights
normalized by ``logsumexp``, systematic resampling by ``cumsum`` + ``searchsorted``),
InceptionNeXt (depthwise band kernels of (1, 11) and (11, 1) on channel splits), MobileViTv2
(separable self-attention: a softmax context score over the patches of an unfolded map),
Graph WaveNet (a learned adjacency ``softmax(relu(E1 E2))``, diffusion convolutions by
``einsum``, gated dilated temporal convs), Mega (a multi-dimensional damped EMA whose kernel is
computed from its parameters and applied as a causal depthwise conv1d, single-head gated
attention with the Laplace function by ``erf``), expert-choice MoE (each expert takes its
top-k tokens by ``topk`` over the token axis, batched ``bmm`` experts, ``index_add`` back),
Charformer's GBST (block-pooled candidates of sizes 1-4 upsampled by ``repeat_interleave``,
calibrated block scores), a Linear Recurrent Unit written without complex numbers (lags
``t - s`` as int64, ``lambda^k`` as magnitude and angle) and a product-quantization search
(asymmetric distance tables gathered by int64 codes ``m * K + code``, ``topk`` of the
smallest). Kept apart so the main script stays readable."""

from __future__ import annotations

import math


def twentyninth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- VoxelMorph ------------------------------------------------------------------------
    def cbl3(i, o, s=1):
        return nn.Sequential(nn.Conv3d(i, o, 3, s, 1), nn.LeakyReLU(0.2))

    class VoxelMorph(nn.Module):
        """Balakrishnan et al. 2019 (diffeomorphic variant, Dalca et al.): a 3-D U-Net maps
        (moving, fixed) to a stationary velocity field; ``steps`` squarings integrate it
        (v <- v + v o v, each composition a trilinear ``grid_sample``); the moving volume is
        warped by the resulting displacement."""

        def __init__(self, size=16, steps=4):
            super().__init__()
            self.steps = steps
            self.e1, self.e2, self.e3 = cbl3(2, 8), cbl3(8, 16, 2), cbl3(16, 16, 2)
            self.d3, self.d2 = cbl3(32, 16), cbl3(24, 8)
            self.flow = nn.Conv3d(8, 3, 3, 1, 1)
            nn.init.normal_(self.flow.weight, 0.0, 0.05)
            ax = torch.linspace(-1.0, 1.0, size)
            z, y, x = torch.meshgrid(ax, ax, ax, indexing="ij")
            self.register_buffer("ident", torch.stack([x, y, z], -1)[None])  # (1, D, H, W, 3)

        def warp(self, vol, disp):                                 # disp (b, 3, D, H, W) (x, y, z)
            grid = self.ident + disp.permute(0, 2, 3, 4, 1)
            return F.grid_sample(vol, grid, mode="bilinear", padding_mode="border",
                                 align_corners=True)

        def forward(self, moving, fixed):
            x1 = self.e1(torch.cat([moving, fixed], 1))
            x2 = self.e2(x1)
            x3 = self.e3(x2)
            u = F.interpolate(x3, scale_factor=2.0, mode="nearest")
            u = self.d3(torch.cat([u, x2], 1))
            u = F.interpolate(u, scale_factor=2.0, mode="nearest")
            u = self.d2(torch.cat([u, x1], 1))
            v = self.flow(u) / (2 ** self.steps)
            for _ in range(self.steps):
                v = v + self.warp(v, v)
            return torch.cat([self.warp(moving, v), v], 1)

    # -- product-key memory ----------------------------------------------------------------
    class ProductKeyMemory(nn.Module):
        """Lample et al. 2019: a query split in halves scores two sets of ``n`` sub-keys; the
        top-k of each combine into k^2 candidates of the n^2 keys (index ``i * n + j``), whose
        top-k weights a lookup in an n^2-row value table; two heads summed."""

        def __init__(self, d, dk=32, n=32, k=8, heads=2):
            super().__init__()
            self.n, self.k, self.h, self.dk = n, k, heads, dk
            self.q = nn.Sequential(nn.Linear(d, heads * dk), nn.LayerNorm(heads * dk))
            self.k1 = nn.Parameter(torch.randn(heads, n, dk // 2) / math.sqrt(dk))
            self.k2 = nn.Parameter(torch.randn(heads, n, dk // 2) / math.sqrt(dk))
            self.values = nn.Embedding(n * n, d)
            nn.init.normal_(self.values.weight, 0.0, d ** -0.5)

        def forward(self, x):                                      # (b, t, d)
            b, t, _ = x.shape
            q = self.q(x).view(b * t, self.h, 2, self.dk // 2)
            s1 = torch.einsum("bhd,hnd->bhn", q[:, :, 0], self.k1)
            s2 = torch.einsum("bhd,hnd->bhn", q[:, :, 1], self.k2)
            v1, i1 = s1.topk(self.k, -1)
            v2, i2 = s2.topk(self.k, -1)
            scores = (v1[..., :, None] + v2[..., None, :]).flatten(-2)
            index = (i1[..., :, None] * self.n + i2[..., None, :]).flatten(-2)
            best, pos = scores.topk(self.k, -1)
            rows = index.gather(-1, pos)                           # (bt, h, k) int64
            w = best.softmax(-1)
            out = (self.values(rows) * w[..., None]).sum((1, 2))
            return out.view(b, t, -1)

    class PKMLM(nn.Module):
        """A small causal LM whose second block's FFN is a product-key memory."""

        def __init__(self, vocab=500, d=96, heads=4, seq=32):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(seq, d) * 0.02)
            self.blocks = nn.ModuleList([
                nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, batch_first=True,
                                           norm_first=True) for _ in range(2)])
            self.pkm_norm, self.pkm = nn.LayerNorm(d), ProductKeyMemory(d)
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)
            self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

        def forward(self, ids):
            x = self.emb(ids) + self.pos
            x = self.blocks[0](x, src_mask=self.mask)
            x = x + self.pkm(self.pkm_norm(x))
            x = self.blocks[1](x, src_mask=self.mask)
            return self.head(self.norm(x))

    # -- tree ensemble by traversal --------------------------------------------------------
    class TreeTraversal(nn.Module):
        """Nakandala et al. 2020 (Hummingbird) ``TreeTraversal``: ``trees`` perfect trees of
        ``depth`` levels as index tables; each level looks up every sample's node's feature and
        threshold, gathers that feature and steps to child ``2 * node + 1 + (x >= t)``; the
        leaves' class scores are averaged (a random forest's predict_proba)."""

        def __init__(self, features=24, trees=32, depth=6, classes=5):
            super().__init__()
            inner, self.depth = 2 ** depth - 1, depth
            g = torch.Generator().manual_seed(290)
            self.register_buffer("feat", torch.randint(0, features, (trees, inner), generator=g))
            self.register_buffer("thr", torch.randn(trees, inner, generator=g) * 0.8)
            leaves = torch.rand(trees, 2 ** depth, classes, generator=g) ** 3
            self.register_buffer("leaves", leaves / leaves.sum(-1, keepdim=True))
            self.register_buffer("tree", torch.arange(trees)[None])
            self.scale = nn.Linear(features, features)              # a learned feature transform

        def forward(self, x):                                      # (b, features)
            x = self.scale(x)
            node = torch.zeros(x.shape[0], self.tree.shape[1], dtype=torch.long)
            for _ in range(self.depth):
                f = self.feat[self.tree, node]                     # (b, trees)
                t = self.thr[self.tree, node]
                node = 2 * node + 1 + (torch.gather(x, 1, f) >= t).long()
            leaf = node - (2 ** self.depth - 1)
            return self.leaves[self.tree, leaf].mean(1)

    # -- particle filter -------------------------------------------------------------------
    class ParticleFilter(nn.Module):
        """One step of a bootstrap particle filter with learned models (Jonschkowski et al.
        2018): particles move by an MLP plus noise, are weighted by a Gaussian observation
        likelihood, normalized by ``logsumexp`` and resampled systematically (``cumsum`` of the
        weights, ``searchsorted`` of the stratified positions); returns the weighted mean, the
        effective sample size and the resampled particles."""

        def __init__(self, state=4, obs=6, hidden=64):
            super().__init__()
            self.move = nn.Sequential(nn.Linear(state, hidden), nn.Tanh(), nn.Linear(hidden, state))
            self.see = nn.Sequential(nn.Linear(state, hidden), nn.Tanh(), nn.Linear(hidden, obs))
            self.log_sigma = nn.Parameter(torch.tensor(-0.5))

        def forward(self, particles, logw, obs, noise, u):         # (b,P,s) (b,P) (b,o) (b,P,s) (b,1)
            b, p, s = particles.shape
            x = particles + self.move(particles) + 0.1 * noise
            err = (obs[:, None] - self.see(x)) / torch.exp(self.log_sigma)
            logw = logw - 0.5 * (err * err).sum(-1)
            logw = logw - torch.logsumexp(logw, -1, keepdim=True)
            w = torch.exp(logw)
            mean = (w[..., None] * x).sum(1)
            ess = 1.0 / (w * w).sum(-1, keepdim=True)
            cdf = torch.cumsum(w, -1)
            cdf = cdf / cdf[:, -1:]
            pos = (torch.arange(p, dtype=x.dtype)[None] + u) / p
            idx = torch.searchsorted(cdf, pos.contiguous()).clamp(max=p - 1)
            resampled = torch.gather(x, 1, idx[..., None].expand(b, p, s))
            return torch.cat([mean, ess, resampled.flatten(1)], 1)

    # -- InceptionNeXt ---------------------------------------------------------------------
    class InceptionDW(nn.Module):
        """Yu et al. 2023: an identity split and three depthwise branches (a 3x3 square, a
        1 x k and a k x 1 band) over channel groups of 1/8 each."""

        def __init__(self, c, band=11, ratio=0.125):
            super().__init__()
            g = int(c * ratio)
            self.split = (c - 3 * g, g, g, g)
            self.sq = nn.Conv2d(g, g, 3, 1, 1, groups=g)
            self.w = nn.Conv2d(g, g, (1, band), 1, (0, band // 2), groups=g)
            self.h = nn.Conv2d(g, g, (band, 1), 1, (band // 2, 0), groups=g)

        def forward(self, x):
            ident, a, b, c = torch.split(x, self.split, 1)
            return torch.cat([ident, self.sq(a), self.w(b), self.h(c)], 1)

    class MetaNeXtBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.mix, self.bn = InceptionDW(c), nn.BatchNorm2d(c)
            self.mlp = nn.Sequential(nn.Conv2d(c, 4 * c, 1), nn.GELU(), nn.Conv2d(4 * c, c, 1))
            self.gamma = nn.Parameter(torch.full((1, c, 1, 1), 0.1))

        def forward(self, x):
            return x + self.gamma * self.mlp(self.bn(self.mix(x)))

    class InceptionNeXt(nn.Module):
        def __init__(self, dims=(32, 64, 128, 256), depths=(1, 1, 2, 1), classes=100):
            super().__init__()
            layers, cin = [], 3
            for i, (d, n) in enumerate(zip(dims, depths)):
                k = 4 if i == 0 else 2
                layers += [nn.Conv2d(cin, d, k, k), nn.BatchNorm2d(d)]
                layers += [MetaNeXtBlock(d) for _ in range(n)]
                cin = d
            self.body = nn.Sequential(*layers)
            self.head = nn.Sequential(nn.Linear(cin, 2 * cin), nn.GELU(), nn.LayerNorm(2 * cin),
                                      nn.Linear(2 * cin, classes))

        def forward(self, x):
            return self.head(self.body(x).mean((2, 3)))

    # -- MobileViTv2 -----------------------------------------------------------------------
    class LinearSelfAttention(nn.Module):
        """Mehta & Rastegari 2022: one 1x1 conv gives a 1-channel query and d-channel keys and
        values; context scores are a softmax of the query over the patches; the context vector
        (keys weighted by the scores) scales ReLU(values)."""

        def __init__(self, d):
            super().__init__()
            self.d = d
            self.qkv = nn.Conv2d(d, 1 + 2 * d, 1)
            self.out = nn.Conv2d(d, d, 1)

        def forward(self, x):                                      # (b, d, P, N)
            q, k, v = torch.split(self.qkv(x), (1, self.d, self.d), 1)
            scores = q.softmax(-1)
            context = (k * scores).sum(-1, keepdim=True)
            return self.out(F.relu(v) * context)

    class MViTv2Block(nn.Module):
        def __init__(self, c, d, depth=2, patch=2):
            super().__init__()
            self.p = patch
            self.local = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False),
                                       nn.BatchNorm2d(c), nn.SiLU(), nn.Conv2d(c, d, 1, bias=False))
            self.layers = nn.ModuleList()
            for _ in range(depth):
                self.layers.append(nn.ModuleList([
                    nn.GroupNorm(1, d), LinearSelfAttention(d), nn.GroupNorm(1, d),
                    nn.Sequential(nn.Conv2d(d, 2 * d, 1), nn.SiLU(), nn.Conv2d(2 * d, d, 1))]))
            self.norm = nn.GroupNorm(1, d)
            self.proj = nn.Sequential(nn.Conv2d(d, c, 1, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            y = self.local(x)
            b, d, h, w = y.shape
            p = self.p
            # unfold: (b, d, h, w) -> (b, d, p*p, n) pixels of a patch position side by side
            y = y.reshape(b, d, h // p, p, w // p, p).permute(0, 1, 3, 5, 2, 4)
            y = y.reshape(b, d, p * p, (h // p) * (w // p))
            for n1, attn, n2, ffn in self.layers:
                y = y + attn(n1(y))
                y = y + ffn(n2(y))
            y = self.norm(y).reshape(b, d, p, p, h // p, w // p).permute(0, 1, 4, 2, 5, 3)
            return self.proj(y.reshape(b, d, h, w))

    def mv2(i, o, s, e=2):
        return nn.Sequential(nn.Conv2d(i, i * e, 1, bias=False), nn.BatchNorm2d(i * e), nn.SiLU(),
                             nn.Conv2d(i * e, i * e, 3, s, 1, groups=i * e, bias=False),
                             nn.BatchNorm2d(i * e), nn.SiLU(),
                             nn.Conv2d(i * e, o, 1, bias=False), nn.BatchNorm2d(o))

    class MobileViTv2(nn.Module):
        def __init__(self, classes=100):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU(),
                mv2(16, 32, 1), mv2(32, 48, 2), mv2(48, 48, 1), mv2(48, 64, 2),
                MViTv2Block(64, 64), mv2(64, 96, 2), MViTv2Block(96, 96, 3), mv2(96, 128, 2),
                MViTv2Block(128, 128))
            self.head = nn.Linear(128, classes)

        def forward(self, x):
            return self.head(self.body(x).mean((2, 3)))

    # -- Graph WaveNet ---------------------------------------------------------------------
    class GraphWaveNet(nn.Module):
        """Wu et al. 2019: gated dilated temporal convs (tanh x sigmoid) over (b, c, nodes,
        time), each followed by a diffusion graph conv over fixed forward / backward transition
        matrices and a self-adaptive one ``softmax(relu(E1 E2))``, skip connections summed."""

        def __init__(self, nodes=24, cin=2, c=32, skip=64, horizon=12, order=2,
                     dilations=(1, 2, 1, 2), emb=10):
            super().__init__()
            g = torch.Generator().manual_seed(291)
            adj = (torch.rand(nodes, nodes, generator=g) < 0.15).float() + torch.eye(nodes)
            self.register_buffer("fwd", adj / adj.sum(1, keepdim=True))
            self.register_buffer("bwd", adj.t() / adj.t().sum(1, keepdim=True))
            self.e1 = nn.Parameter(torch.randn(nodes, emb))
            self.e2 = nn.Parameter(torch.randn(emb, nodes))
            self.order, self.dil = order, dilations
            self.start = nn.Conv2d(cin, c, 1)
            self.filt = nn.ModuleList([nn.Conv2d(c, c, (1, 2), dilation=(1, d)) for d in dilations])
            self.gate = nn.ModuleList([nn.Conv2d(c, c, (1, 2), dilation=(1, d)) for d in dilations])
            self.skips = nn.ModuleList([nn.Conv2d(c, skip, 1) for _ in dilations])
            self.gcn = nn.ModuleList([nn.Conv2d(c * (3 * order + 1), c, 1) for _ in dilations])
            self.bns = nn.ModuleList([nn.BatchNorm2d(c) for _ in dilations])
            self.end = nn.Sequential(nn.ReLU(), nn.Conv2d(skip, 128, 1), nn.ReLU(),
                                     nn.Conv2d(128, horizon, 1))

        def forward(self, x):                                      # (b, cin, nodes, T)
            adp = F.softmax(F.relu(self.e1 @ self.e2), 1)
            supports = [self.fwd, self.bwd, adp]
            x = self.start(x)
            skip = 0
            for filt, gate, sk, gcn, bn in zip(self.filt, self.gate, self.skips, self.gcn,
                                               self.bns):
                res = x
                x = torch.tanh(filt(x)) * torch.sigmoid(gate(x))
                s = sk(x)
                skip = s if isinstance(skip, int) else skip[..., -s.shape[3]:] + s
                out = [x]
                for a in supports:
                    h = x
                    for _ in range(self.order):
                        h = torch.einsum("ncvl,vw->ncwl", h, a)
                        out.append(h)
                x = gcn(torch.cat(out, 1)) + res[..., -x.shape[3]:]
                x = bn(x)
            return self.end(skip[..., -1:]).squeeze(-1)             # (b, horizon, nodes)

    # -- Mega ------------------------------------------------------------------------------
    class MultiHeadEMA(nn.Module):
        """Ma et al. 2023: per channel ``h`` damped EMAs (rates p = sigmoid(alpha), damping
        q = 1 - p sigmoid(delta)) collapse into one causal kernel k[t] = sum_h gamma_h p_h
        beta_h q_h^t, applied as a depthwise conv1d over the left-padded sequence."""

        def __init__(self, d, heads=4, length=64):
            super().__init__()
            self.alpha = nn.Parameter(torch.randn(d, heads, 1) * 0.5)
            self.delta = nn.Parameter(torch.randn(d, heads, 1) * 0.5)
            self.beta = nn.Parameter(torch.randn(d, heads, 1) * 0.2 + 1.0)
            self.gamma = nn.Parameter(torch.randn(d, heads) / math.sqrt(heads))
            self.omega = nn.Parameter(torch.randn(d) * 0.1)
            self.register_buffer("t", torch.arange(length, dtype=torch.float32))

        def forward(self, x):                                      # (b, L, d)
            p = torch.sigmoid(self.alpha)
            q = 1.0 - p * torch.sigmoid(self.delta)
            vander = torch.exp(self.t * torch.log(q))              # (d, h, L)
            k = torch.einsum("dhl,dh->dl", p * self.beta * vander, self.gamma)
            L = x.shape[1]
            xt = F.pad(x.transpose(1, 2), (L - 1, 0))
            y = F.conv1d(xt, k.flip(-1)[:, None], groups=k.shape[0])
            return F.silu(y.transpose(1, 2) + x * self.omega)

    class MegaLayer(nn.Module):
        """The moving-average gated attention layer: the EMA output drives a shared z giving
        q and k by per-dimension scale and offset, a Laplace attention function (erf) under a
        causal mask, a reset gate and an update gate."""

        def __init__(self, d=96, z=48, v=192, length=64):
            super().__init__()
            self.norm, self.ema = nn.LayerNorm(d), MultiHeadEMA(d, length=length)
            self.vproj = nn.Linear(d, v)
            self.mx = nn.Linear(d, z + v + 2 * d)
            self.qk_w = nn.Parameter(torch.randn(2, z) * 0.1 + 1.0)
            self.qk_b = nn.Parameter(torch.zeros(2, z))
            self.h = nn.Linear(v, d)
            self.dims = (z, v, d, d)
            self.register_buffer("causal", torch.tril(torch.ones(length, length)))

        def forward(self, x):
            res = x
            x = self.norm(x)
            v = F.silu(self.vproj(x))
            mx = self.ema(x)
            z, r, u, hx = torch.split(self.mx(mx), self.dims, -1)
            z, r, u = F.silu(z), F.silu(r), torch.sigmoid(u)
            q = z * self.qk_w[0] + self.qk_b[0]
            k = z * self.qk_w[1] + self.qk_b[1]
            L = x.shape[1]
            s = (q @ k.transpose(1, 2)) / L
            mu, std = math.sqrt(0.5), math.sqrt(0.25 / math.pi)
            att = 0.5 * (1.0 + torch.erf((s - mu) / (std * math.sqrt(2.0)))) * self.causal
            h = F.silu(hx + self.h((att @ v) * r))
            return res + u * (h - res)

    class MegaLM(nn.Module):
        def __init__(self, vocab=256, d=96, depth=2, length=64):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList([MegaLayer(d, length=length) for _ in range(depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(self, ids):
            x = self.emb(ids)
            for layer in self.layers:
                x = layer(x)
            return self.head(self.norm(x))

    # -- expert-choice MoE -----------------------------------------------------------------
    class ExpertChoice(nn.Module):
        """Zhou et al. 2022: the router's token-to-expert affinities are transposed and every
        expert takes its ``capacity`` best tokens (``topk`` over tokens); experts run as
        batched ``bmm``; outputs weighted by the gate return to their tokens by ``index_add``
        (a token may get 0, 1 or several experts)."""

        def __init__(self, d, experts=4, hidden=128, factor=2):
            super().__init__()
            self.e, self.factor = experts, factor
            self.router = nn.Linear(d, experts, bias=False)
            self.w1 = nn.Parameter(torch.randn(experts, d, hidden) / math.sqrt(d))
            self.w2 = nn.Parameter(torch.randn(experts, hidden, d) / math.sqrt(hidden))

        def forward(self, x):                                      # (b, t, d)
            b, t, d = x.shape
            tokens = x.reshape(b * t, d)
            aff = self.router(tokens).softmax(-1)                   # (T, E)
            cap = b * t * self.factor // self.e
            gate, idx = aff.t().topk(cap, -1)                       # (E, cap)
            xin = tokens.index_select(0, idx.flatten()).view(self.e, cap, d)
            y = torch.bmm(F.gelu(torch.bmm(xin, self.w1)), self.w2) * gate[..., None]
            out = torch.zeros_like(tokens).index_add(0, idx.flatten(), y.reshape(-1, d))
            return out.view(b, t, d)

    class ECMoEClassifier(nn.Module):
        def __init__(self, vocab=400, d=64, heads=4, seq=32, classes=10, layers=2):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(seq, d) * 0.02)
            self.attn = nn.ModuleList([nn.MultiheadAttention(d, heads, batch_first=True)
                                       for _ in range(layers)])
            self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            self.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            self.moe = nn.ModuleList([ExpertChoice(d) for _ in range(layers)])
            self.head = nn.Linear(d, classes)

        def forward(self, ids):
            x = self.emb(ids) + self.pos
            for attn, n1, n2, moe in zip(self.attn, self.n1, self.n2, self.moe):
                h = n1(x)
                x = x + attn(h, h, h, need_weights=False)[0]
                x = x + moe(n2(x))
            return self.head(x.mean(1))

    # -- Charformer GBST -------------------------------------------------------------------
    class GBST(nn.Module):
        """Tay et al. 2021: candidate subword blocks of sizes 1..M by mean-pooling the byte
        embeddings, upsampled back by ``repeat_interleave``; a linear score per block size,
        softmax over sizes, calibrated by ``softmax(P P^T) P``; the mix is downsampled by
        ``rate``."""

        def __init__(self, d, max_block=4, rate=2):
            super().__init__()
            self.m, self.rate = max_block, rate
            self.conv = nn.Conv1d(d, d, max_block, padding=max_block - 1, groups=d)
            self.score = nn.Linear(d, 1)

        def forward(self, x):                                      # (b, L, d)
            L = x.shape[1]
            x = self.conv(x.transpose(1, 2))[..., :L].transpose(1, 2)   # causal depthwise
            blocks = []
            for m in range(1, self.m + 1):
                pooled = F.avg_pool1d(x.transpose(1, 2), m, m).transpose(1, 2)
                blocks.append(pooled.repeat_interleave(m, dim=1))
            blocks = torch.stack(blocks, 2)                        # (b, L, M, d)
            p = self.score(blocks).squeeze(-1).softmax(-1)         # (b, L, M)
            p = torch.softmax(p @ p.transpose(1, 2), -1) @ p
            mixed = (blocks * p[..., None]).sum(2)
            return F.avg_pool1d(mixed.transpose(1, 2), self.rate, self.rate).transpose(1, 2)

    class Charformer(nn.Module):
        def __init__(self, vocab=259, d=64, heads=4, length=96, depth=2, classes=8):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(length, d) * 0.02)
            self.gbst = GBST(d)
            self.enc = nn.ModuleList([
                nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu",
                                           batch_first=True) for _ in range(depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, ids):
            x = self.gbst(self.emb(ids) + self.pos)
            for layer in self.enc:
                x = layer(x)
            return self.head(self.norm(x).mean(1))

    # -- Linear Recurrent Unit -------------------------------------------------------------
    class LRU(nn.Module):
        """Orvieto et al. 2023 without complex dtypes: lambda = exp(-exp(nu) + i exp(theta)),
        the recurrence x_t = lambda x_{t-1} + gamma B u_t unrolled as a sum over lags
        k = t - s (int64) of |lambda|^k (cos k theta, sin k theta) times the real and imaginary
        parts of B u; y = Re(C x) + D u."""

        def __init__(self, h, n=32, r_min=0.5, r_max=0.95):
            super().__init__()
            u1, u2 = torch.rand(n), torch.rand(n)
            self.nu_log = nn.Parameter(torch.log(-0.5 * torch.log(u1 * (r_max ** 2 - r_min ** 2)
                                                                  + r_min ** 2)))
            self.theta_log = nn.Parameter(torch.log(u2 * math.pi / 4))
            lam_abs = torch.exp(-torch.exp(self.nu_log.detach()))
            self.gamma_log = nn.Parameter(torch.log(torch.sqrt(1 - lam_abs ** 2)))
            self.b_re = nn.Parameter(torch.randn(n, h) / math.sqrt(2 * h))
            self.b_im = nn.Parameter(torch.randn(n, h) / math.sqrt(2 * h))
            self.c_re = nn.Parameter(torch.randn(h, n) / math.sqrt(n))
            self.c_im = nn.Parameter(torch.randn(h, n) / math.sqrt(n))
            self.d = nn.Parameter(torch.randn(h))

        def forward(self, u):                                      # (b, L, h)
            L = u.shape[1]
            t = torch.arange(L)
            lag = t[:, None] - t[None, :]                           # int64 (L, L)
            keep = (lag >= 0).float()[..., None]
            k = lag.clamp(min=0).float()[..., None]                 # (L, L, 1)
            mag = torch.exp(-torch.exp(self.nu_log) * k) * keep     # (L, L, n)
            ang = torch.exp(self.theta_log) * k
            cos, sin = mag * torch.cos(ang), mag * torch.sin(ang)
            g = torch.exp(self.gamma_log)
            bu_re, bu_im = (u @ self.b_re.t()) * g, (u @ self.b_im.t()) * g
            x_re = torch.einsum("tsn,bsn->btn", cos, bu_re) - torch.einsum("tsn,bsn->btn", sin, bu_im)
            x_im = torch.einsum("tsn,bsn->btn", sin, bu_re) + torch.einsum("tsn,bsn->btn", cos, bu_im)
            return x_re @ self.c_re.t() - x_im @ self.c_im.t() + u * self.d

    class LRUNet(nn.Module):
        def __init__(self, fin=6, h=48, depth=2, classes=10):
            super().__init__()
            self.enc = nn.Linear(fin, h)
            self.norms = nn.ModuleList([nn.LayerNorm(h) for _ in range(depth)])
            self.lrus = nn.ModuleList([LRU(h) for _ in range(depth)])
            self.glus = nn.ModuleList([nn.Linear(h, 2 * h) for _ in range(depth)])
            self.head = nn.Linear(h, classes)

        def forward(self, x):                                      # (b, L, fin)
            x = self.enc(x)
            for norm, lru, glu in zip(self.norms, self.lrus, self.glus):
                x = x + F.glu(glu(F.gelu(lru(norm(x)))), -1)
            return self.head(x.mean(1))

    # -- product-quantization search -------------------------------------------------------
    class PQSearch(nn.Module):
        """Jegou et al. 2011 asymmetric distance computation behind a learned query tower: the
        query's M sub-vectors give an (M, K) table of squared distances to each sub-codebook;
        a database item's distance is the sum of the table entries its int64 codes select
        (flat index ``m * K + code``); returns the top 10 (smallest) distances and their ids."""

        def __init__(self, fin=32, d=64, m=8, k=64, top=10):
            super().__init__()
            self.m, self.k, self.top = m, k, top
            self.tower = nn.Sequential(nn.Linear(fin, 128), nn.ReLU(), nn.Linear(128, d))
            self.register_buffer("books", torch.randn(m, k, d // m,
                                                      generator=torch.Generator().manual_seed(292)))
            self.register_buffer("offset", torch.arange(m) * k)

        def forward(self, q, codes):                               # (b, fin), (N, M) int64
            z = F.normalize(self.tower(q), dim=-1).view(q.shape[0], self.m, 1, -1) * 4.0
            lut = ((z - self.books[None]) ** 2).sum(-1).flatten(1)  # (b, M*K)
            flat = (codes + self.offset).flatten()                  # (N*M,)
            dist = lut[:, flat].view(q.shape[0], codes.shape[0], self.m).sum(-1)
            best, ids = dist.topk(self.top, -1, largest=False)
            return torch.cat([best, ids.float()], 1)

    # -- inputs ----------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def volumes(size=16, seed=293):
        def make():
            g = gen(seed)
            ax = torch.linspace(-1, 1, size)
            z, y, x = torch.meshgrid(ax, ax, ax, indexing="ij")
            blob = torch.exp(-((x - 0.1) ** 2 + y ** 2 + (z + 0.1) ** 2) * 4)[None, None]
            fixed = torch.exp(-(x ** 2 + (y - 0.15) ** 2 + z ** 2) * 4)[None, None]
            return {"moving": blob + 0.05 * torch.rand(1, 1, size, size, size, generator=g),
                    "fixed": fixed + 0.05 * torch.rand(1, 1, size, size, size, generator=g)}
        return make

    def token_ids(b, t, vocab, seed):
        def make():
            return {"ids": torch.randint(0, vocab, (b, t), generator=gen(seed))}
        return make

    def tabular(b=256, features=24, seed=294):
        def make():
            return {"x": torch.randn(b, features, generator=gen(seed))}
        return make

    def particles(b=8, p=128, s=4, o=6, seed=295):
        def make():
            g = gen(seed)
            return {"particles": torch.randn(b, p, s, generator=g),
                    "logw": torch.log_softmax(torch.randn(b, p, generator=g), -1),
                    "obs": torch.randn(b, o, generator=g),
                    "noise": torch.randn(b, p, s, generator=g),
                    "u": torch.rand(b, 1, generator=g)}
        return make

    def traffic(b=4, cin=2, nodes=24, t=13, seed=296):
        def make():
            g = gen(seed)
            tt = torch.arange(t).float()
            base = torch.sin(tt / 3 + torch.rand(b, 1, nodes, 1, generator=g) * 6)
            x = torch.cat([base, (tt / t).expand(b, 1, nodes, t)], 1)
            return {"x": x + 0.1 * torch.randn(b, cin, nodes, t, generator=g)}
        return make

    def sensors(b=8, length=48, fin=6, seed=297):
        def make():
            return {"x": torch.randn(b, length, fin, generator=gen(seed))}
        return make

    def pq_queries(b=16, fin=32, n=4096, m=8, k=64, seed=298):
        def make():
            g = gen(seed)
            return {"q": torch.randn(b, fin, generator=g),
                    "codes": torch.randint(0, k, (n, m), generator=g)}
        return make

    return {
        "voxelmorph_3d": (VoxelMorph, volumes()),
        "pkm_memory_lm": (PKMLM, token_ids(4, 32, 500, 299)),
        "tree_traversal": (TreeTraversal, tabular()),
        "particle_filter": (ParticleFilter, particles()),
        "inceptionnext": (InceptionNeXt, (1, 3, 128, 128)),
        "mobilevitv2_mini": (MobileViTv2, (1, 3, 128, 128)),
        "graph_wavenet": (GraphWaveNet, traffic()),
        "mega_ema_lm": (MegaLM, token_ids(4, 64, 256, 300)),
        "expert_choice_moe": (ECMoEClassifier, token_ids(4, 32, 400, 301)),
        "charformer_gbst": (Charformer, token_ids(4, 96, 259, 302)),
        "lru_complexfree": (LRUNet, sensors()),
        "pq_adc_search": (PQSearch, pq_queries()),
    }
