"""The fourteenth round of ``bench_new_user_models``: PointNet++ (farthest point sampling as an
unrolled ``argmax``/``gather``/``minimum`` loop, a ball query by ``sort`` of masked indices,
3-NN feature propagation by ``topk(largest=False)`` and inverse-distance weights), PointPillars
(per-point ``hypot``/``atan2`` features, a pillar PFN, a scatter of pillars into a bird's-eye
canvas at int64 ``y * W + x`` indices), a TimeSformer with a tubelet ``Conv3d`` and divided
time/space attention by ``view``/``permute``, an X3D block stack (depthwise ``Conv3d`` with
``groups = C``, 3-D squeeze-excitation, ``AdaptiveAvgPool3d``), Graphormer (shortest-path
distances by an unrolled min-plus Floyd-Warshall, degree and distance ``Embedding`` lookups of
2-D int64 matrices, attention bias by ``baddbmm``), an SVTR-style OCR recognizer with a CTC
greedy decode (``argmax``, repeats collapsed against a shifted copy, blank removal, compaction by
``cumsum`` + ``scatter`` into a ``-1``-filled row), a LoRA-adapted Llama step (unmerged
``B(A(x))`` adapters, NTK-scaled rotary base, grouped-query ``repeat_interleave``) with a
top-k/top-p sampling head (``sort``, ``cumsum``, ``scatter`` back, inverse-CDF draw by
``searchsorted`` on a given uniform), a MaskGIT decoding step (confidence threshold by
``kthvalue``, cosine schedule), AlphaFold's Evoformer pair stack (outer-product mean, triangle
multiplicative updates and triangle attention by ``einsum``), a Temporal Fusion Transformer
(variable selection networks, GLU-gated residual networks, an LSTM, interpretable attention
with a shared value), StyleGAN2 (truncation by ``lerp``, weight demodulation, noise injection,
``conv_transpose2d`` upsampling) and DBNet's text-detection head (``pixel_unshuffle`` stem, FPN,
differentiable binarization). Kept apart so the main script stays readable."""

from __future__ import annotations


def fourteenth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- PointNet++ (single-scale grouping) ------------------------------------------------
    def farthest_points(xyz, m):
        """Indices (b, m) of ``m`` farthest-point samples of ``xyz`` (b, n, 3), from point 0."""
        b, n, _ = xyz.shape
        dist = torch.full_like(xyz[..., 0], 1e10)
        far = torch.zeros(b, 1, dtype=torch.long)
        picks = []
        for _ in range(m):
            picks.append(far)
            centre = xyz.gather(1, far[..., None].expand(-1, -1, 3))         # (b, 1, 3)
            dist = torch.minimum(dist, ((xyz - centre) ** 2).sum(-1))
            far = dist.argmax(-1, keepdim=True)
        return torch.cat(picks, 1)

    def ball_query(xyz, centres, radius, k):
        """For each centre, the first ``k`` point indices within ``radius`` (in index order),
        short groups padded with their first member (PointNet++'s query_ball_point)."""
        n = xyz.shape[1]
        d2 = torch.cdist(centres, xyz) ** 2                                  # (b, m, n)
        idx = torch.arange(n).expand_as(d2)
        idx = torch.where(d2 > radius ** 2, n, idx).sort(-1)[0][..., :k]
        return torch.where(idx == n, idx[..., :1], idx)

    class SetAbstraction(nn.Module):
        def __init__(self, m, radius, k, cin, widths):
            super().__init__()
            self.m, self.r, self.k = m, radius, k
            layers, c = [], cin + 3
            for w in widths:
                layers += [nn.Conv2d(c, w, 1), nn.BatchNorm2d(w), nn.ReLU()]
                c = w
            self.mlp = nn.Sequential(*layers)

        def forward(self, xyz, feats):
            b = xyz.shape[0]
            centres = xyz.gather(1, farthest_points(xyz, self.m)[..., None].expand(-1, -1, 3))
            idx = ball_query(xyz, centres, self.r, self.k)                   # (b, m, k)
            flat = idx.reshape(b, -1, 1)
            g_xyz = xyz.gather(1, flat.expand(-1, -1, 3)).view(b, self.m, self.k, 3)
            g = torch.cat([g_xyz - centres[:, :, None], feats.gather(
                1, flat.expand(-1, -1, feats.shape[-1])).view(b, self.m, self.k, -1)], -1)
            g = self.mlp(g.permute(0, 3, 1, 2))                              # (b, c, m, k)
            return centres, g.amax(-1).transpose(1, 2)

    class FeaturePropagation(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.mlp = nn.Sequential(nn.Conv1d(cin, cout, 1), nn.BatchNorm1d(cout), nn.ReLU())

        def forward(self, xyz, coarse_xyz, coarse, skip):
            d, idx = torch.cdist(xyz, coarse_xyz).topk(3, -1, largest=False)  # (b, n, 3)
            w = 1.0 / (d + 1e-8)
            w = w / w.sum(-1, keepdim=True)
            b, n, _ = idx.shape
            near = coarse.gather(1, idx.reshape(b, -1, 1).expand(-1, -1, coarse.shape[-1]))
            up = (near.view(b, n, 3, -1) * w[..., None]).sum(2)
            return self.mlp(torch.cat([up, skip], -1).transpose(1, 2)).transpose(1, 2)

    class PointNet2Mini(nn.Module):
        """Part segmentation: two set abstractions, two propagations back to every point."""

        def __init__(self, classes=8, m1=64, m2=16, k=16):
            super().__init__()
            self.sa1 = SetAbstraction(m1, 0.3, k, 3, (32, 32, 64))
            self.sa2 = SetAbstraction(m2, 0.6, k, 64, (64, 64, 128))
            self.fp2 = FeaturePropagation(128 + 64, 64)
            self.fp1 = FeaturePropagation(64 + 3, 64)
            self.head = nn.Sequential(nn.Conv1d(64, 64, 1), nn.ReLU(), nn.Conv1d(64, classes, 1))

        def forward(self, xyz):
            x1, f1 = self.sa1(xyz, xyz)
            x2, f2 = self.sa2(x1, f1)
            f1 = self.fp2(x1, x2, f2, f1)
            f0 = self.fp1(xyz, x1, f1, xyz)
            return self.head(f0.transpose(1, 2))

    # -- PointPillars ----------------------------------------------------------------------
    class PointPillarsMini(nn.Module):
        """Points arrive grouped into ``p`` pillars of ``k`` points (zero rows pad), with each
        pillar's int64 grid cell; the PFN's max-pooled features are scattered into a BEV canvas
        and an SSD-style head scores anchors."""

        def __init__(self, grid=32, c=32, anchors=2, classes=3, voxel=0.25):
            super().__init__()
            self.grid, self.c, self.voxel = grid, c, voxel
            self.pfn = nn.Sequential(nn.Linear(11, c), nn.BatchNorm1d(c), nn.ReLU())
            self.backbone = nn.Sequential(
                nn.Conv2d(c, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.ReLU(),
                nn.Conv2d(64, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU())
            self.up = nn.ConvTranspose2d(64, 64, 2, 2)
            self.cls = nn.Conv2d(64 + c, anchors * classes, 1)
            self.box = nn.Conv2d(64 + c, anchors * 7, 1)

        def forward(self, points, coords):
            b, p, k, _ = points.shape
            present = (points.abs().sum(-1, keepdim=True) > 0).float()        # (b, p, k, 1)
            count = present.sum(2, keepdim=True).clamp(min=1.0)
            mean = (points[..., :3] * present).sum(2, keepdim=True) / count
            centre = (coords[:, :, None, [1, 0]].float() + 0.5) * self.voxel
            r = torch.hypot(points[..., 0:1], points[..., 1:2])
            theta = torch.atan2(points[..., 1:2], points[..., 0:1])
            x = torch.cat([points, r, theta, points[..., :3] - mean,
                           points[..., :2] - centre], -1) * present          # (b, p, k, 11)
            x = self.pfn[0](x)
            x = self.pfn[2](self.pfn[1](x.view(-1, self.c)).view(b, p, k, self.c))
            pillars = x.amax(2)                                               # (b, p, c)
            flat = coords[..., 0] * self.grid + coords[..., 1]                # (b, p) int64
            canvas = torch.zeros(b, self.grid * self.grid, self.c).scatter(
                1, flat[..., None].expand(-1, -1, self.c), pillars)
            bev = canvas.transpose(1, 2).reshape(b, self.c, self.grid, self.grid)
            y = torch.cat([self.up(self.backbone(bev)), bev], 1)
            return torch.cat([self.cls(y).flatten(1), self.box(y).flatten(1)], 1)

    # -- TimeSformer (divided space-time attention) ----------------------------------------
    class DividedBlock(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.t_norm, self.s_norm, self.m_norm = nn.LayerNorm(d), nn.LayerNorm(d), \
                nn.LayerNorm(d)
            self.t_attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.s_attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.t_fc = nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x, t, s):
            b, _, d = x.shape
            cls, tok = x[:, :1], x[:, 1:]                                     # tok: (b, t*s, d)
            xt = tok.view(b, t, s, d).transpose(1, 2).reshape(b * s, t, d)
            h = self.t_norm(xt)
            xt = xt + self.t_fc(self.t_attn(h, h, h, need_weights=False)[0])
            tok = xt.view(b, s, t, d).transpose(1, 2).reshape(b, t * s, d)
            xs = torch.cat([cls.expand(-1, t, -1).reshape(b * t, 1, d),
                            tok.reshape(b * t, s, d)], 1)
            h = self.s_norm(xs)
            xs = xs + self.s_attn(h, h, h, need_weights=False)[0]
            cls = xs[:, :1].view(b, t, d).mean(1, keepdim=True)
            x = torch.cat([cls, xs[:, 1:].reshape(b, t * s, d)], 1)
            return x + self.mlp(self.m_norm(x))

    class TimeSformerMini(nn.Module):
        def __init__(self, frames=8, img=32, tube=2, patch=8, d=64, heads=4, layers=2,
                     classes=10):
            super().__init__()
            self.t, self.s = frames // tube, (img // patch) ** 2
            self.embed = nn.Conv3d(3, d, (tube, patch, patch), (tube, patch, patch))
            self.cls = nn.Parameter(0.02 * torch.randn(1, 1, d))
            self.pos = nn.Parameter(0.02 * torch.randn(1, 1, self.s, d))
            self.time = nn.Parameter(0.02 * torch.randn(1, self.t, 1, d))
            self.blocks = nn.ModuleList(DividedBlock(d, heads) for _ in range(layers))
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, video):                                             # (b, 3, T, H, W)
            x = self.embed(video).flatten(3).permute(0, 2, 3, 1)             # (b, t, s, d)
            x = (x + self.pos + self.time).flatten(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1)
            for blk in self.blocks:
                x = blk(x, self.t, self.s)
            return self.head(self.norm(x[:, 0]))

    # -- X3D ------------------------------------------------------------------------------
    class SE3d(nn.Module):
        def __init__(self, c, r=4):
            super().__init__()
            self.fc1, self.fc2 = nn.Conv3d(c, c // r, 1), nn.Conv3d(c // r, c, 1)

        def forward(self, x):
            s = F.adaptive_avg_pool3d(x, 1)
            return x * torch.sigmoid(self.fc2(F.relu(self.fc1(s))))

    class X3DBlock(nn.Module):
        def __init__(self, cin, cmid, cout, stride):
            super().__init__()
            self.a = nn.Sequential(nn.Conv3d(cin, cmid, 1, bias=False), nn.BatchNorm3d(cmid),
                                   nn.ReLU())
            self.b = nn.Sequential(nn.Conv3d(cmid, cmid, 3, (1, stride, stride), 1,
                                             groups=cmid, bias=False), nn.BatchNorm3d(cmid))
            self.se = SE3d(cmid)
            self.c = nn.Sequential(nn.Conv3d(cmid, cout, 1, bias=False), nn.BatchNorm3d(cout))
            self.skip = None if cin == cout and stride == 1 else nn.Sequential(
                nn.Conv3d(cin, cout, 1, (1, stride, stride), bias=False), nn.BatchNorm3d(cout))

        def forward(self, x):
            y = self.c(F.silu(self.se(self.b(self.a(x)))))
            return F.relu(y + (x if self.skip is None else self.skip(x)))

    class X3DMini(nn.Module):
        def __init__(self, c=24, classes=10):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv3d(3, c, (1, 3, 3), (1, 2, 2), (0, 1, 1), bias=False),
                nn.Conv3d(c, c, (5, 1, 1), 1, (2, 0, 0), groups=c, bias=False),
                nn.BatchNorm3d(c), nn.ReLU())
            self.blocks = nn.Sequential(X3DBlock(c, 2 * c, c, 2), X3DBlock(c, 2 * c, c, 1),
                                        X3DBlock(c, 4 * c, 2 * c, 2))
            self.head = nn.Sequential(nn.Conv3d(2 * c, 128, 1), nn.ReLU(),
                                      nn.AdaptiveAvgPool3d(1), nn.Flatten(),
                                      nn.Linear(128, classes))

        def forward(self, video):
            return self.head(self.blocks(self.stem(video)))

    # -- Graphormer ------------------------------------------------------------------------
    class GraphormerLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h, self.qkv, self.o = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ffn = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

        def forward(self, x, bias):                                           # bias (b*h, n, n)
            b, n, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, n, 3, self.h, d // self.h) \
                .permute(2, 0, 3, 1, 4).reshape(3, b * self.h, n, d // self.h)
            s = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=(d // self.h) ** -0.5)
            a = torch.bmm(s.softmax(-1), v).view(b, self.h, n, -1).transpose(1, 2)
            x = x + self.o(a.reshape(b, n, d))
            return x + self.ffn(self.n2(x))

    class GraphormerMini(nn.Module):
        """Molecule regression: atoms (int64 types), adjacency and bond types (int64); the
        shortest-path distances come from the adjacency by min-plus relaxation inside."""

        def __init__(self, atoms=32, bonds=5, d=64, heads=4, layers=2, n=16, max_dist=8):
            super().__init__()
            self.h, self.n, self.max_dist = heads, n, max_dist
            self.atom = nn.Embedding(atoms, d)
            self.degree = nn.Embedding(n, d)
            self.dist = nn.Embedding(max_dist + 2, heads)
            self.bond = nn.Embedding(bonds, heads)
            self.vnode = nn.Parameter(0.02 * torch.randn(1, 1, d))
            self.vdist = nn.Parameter(torch.zeros(1, heads, 1, 1))
            self.layers = nn.ModuleList(GraphormerLayer(d, heads) for _ in range(layers))
            self.norm, self.out = nn.LayerNorm(d), nn.Linear(d, 1)

        def forward(self, atoms, adj, bonds):
            b, n = atoms.shape
            deg = adj.sum(-1).clamp(max=self.n - 1)
            x = self.atom(atoms) + self.degree(deg)
            inf = torch.full_like(adj, 99)
            eye = torch.eye(n) > 0     # (a bool eye exports as a bool EyeLike, which ORT lacks)
            dist = torch.where(adj > 0, torch.ones_like(adj), inf).masked_fill(eye, 0)
            for k in range(n):
                dist = torch.minimum(dist, dist[:, :, k:k + 1] + dist[:, k:k + 1, :])
            dist = torch.where(dist >= 99, self.max_dist + 1, dist.clamp(max=self.max_dist))
            bias = (self.dist(dist) + self.bond(bonds) * adj[..., None]).permute(0, 3, 1, 2)
            # the virtual node's row and column take one learned bias per head
            bias = F.pad(bias, (1, 0, 1, 0)) + F.pad(torch.zeros(b, self.h, n, n),
                                                     (1, 0, 1, 0), value=1.0) * self.vdist
            x = torch.cat([self.vnode.expand(b, -1, -1), x], 1)
            bias = bias.reshape(b * self.h, n + 1, n + 1)
            for layer in self.layers:
                x = layer(x, bias)
            return self.out(self.norm(x[:, 0]))

    # -- SVTR-style recognizer with CTC greedy decoding -------------------------------------
    class MixingBlock(nn.Module):
        def __init__(self, d, heads, mask):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
            self.register_buffer("mask", mask)

        def forward(self, x):
            h = self.n1(x)
            x = x + self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
            return x + self.mlp(self.n2(x))

    class SVTRCTC(nn.Module):
        """Text-line recognizer: a conv stem, local (windowed by a ``|i - j| > w`` mask) then
        global mixing blocks, a height-collapsing pool, CTC log-probs; the greedy decode
        returns each line's label ids packed left, padded with ``-1``, next to the log-probs."""

        def __init__(self, charset=40, d=64, heads=4, h=32, w=128, window=3):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, d // 2, 3, 2, 1), nn.BatchNorm2d(d // 2),
                                      nn.GELU(), nn.Conv2d(d // 2, d, 3, 2, 1),
                                      nn.BatchNorm2d(d), nn.GELU())
            self.gh, self.gw = h // 4, w // 4
            pos = torch.arange(self.gh * self.gw)
            row, col = pos // self.gw, pos % self.gw
            near = ((row[:, None] - row[None]).abs() <= 1) & \
                ((col[:, None] - col[None]).abs() <= window)
            self.local = MixingBlock(d, heads, ~near)
            self.glob = MixingBlock(d, heads, torch.zeros(len(pos), len(pos), dtype=torch.bool))
            self.fc = nn.Linear(d, charset)

        def forward(self, img):
            x = self.stem(img).flatten(2).transpose(1, 2)                    # (b, hw, d)
            x = self.glob(self.local(x))
            b, _, d = x.shape
            x = x.view(b, self.gh, self.gw, d).mean(1)                        # (b, w, d)
            logp = self.fc(x).log_softmax(-1)
            best = logp.argmax(-1)                                            # (b, w) int64
            prev = F.pad(best, (1, 0), value=-1)[:, :-1]
            keep = (best != prev) & (best != 0)                               # blank = 0
            slot = torch.where(keep, keep.long().cumsum(-1) - 1, self.gw)
            out = torch.full((b, self.gw + 1), -1, dtype=torch.long).scatter(1, slot, best)
            return torch.cat([logp.flatten(1), out[:, :-1].float()], 1)

    # -- LoRA Llama with NTK rotary and a top-k / top-p sampler -----------------------------
    class LoRALinear(nn.Module):
        def __init__(self, cin, cout, rank=8, alpha=16):
            super().__init__()
            self.base = nn.Linear(cin, cout, bias=False)
            self.lora_a = nn.Linear(cin, rank, bias=False)
            self.lora_b = nn.Linear(rank, cout, bias=False)
            nn.init.normal_(self.lora_b.weight, std=0.02)
            self.scale = alpha / rank

        def forward(self, x):
            return self.base(x) + self.lora_b(self.lora_a(x)) * self.scale

    def ntk_rotary(n, hd, base=10000.0, alpha=4.0):
        base = base * alpha ** (hd / (hd - 2))
        inv = 1.0 / base ** (torch.arange(0, hd, 2).float() / hd)
        ang = torch.arange(n).float()[:, None] * inv[None]
        return torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()

    def rotate(x, cos, sin):
        x1, x2 = x.chunk(2, -1)
        return x * cos + torch.cat([-x2, x1], -1) * sin

    class LoRABlock(nn.Module):
        def __init__(self, d, heads, kv_heads):
            super().__init__()
            self.h, self.kv, self.hd = heads, kv_heads, d // heads
            self.q = LoRALinear(d, d)
            self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
            self.v = LoRALinear(d, kv_heads * self.hd)
            self.o = nn.Linear(d, d, bias=False)
            self.up, self.gate = nn.Linear(d, 2 * d, bias=False), LoRALinear(d, 2 * d)
            self.down = nn.Linear(2 * d, d, bias=False)
            self.n1, self.n2 = nn.RMSNorm(d, eps=1e-6), nn.RMSNorm(d, eps=1e-6)

        def forward(self, x, cos, sin):
            b, n, d = x.shape
            h = self.n1(x)
            q = self.q(h).view(b, n, self.h, self.hd).transpose(1, 2)
            k = self.k(h).view(b, n, self.kv, self.hd).transpose(1, 2)
            v = self.v(h).view(b, n, self.kv, self.hd).transpose(1, 2)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            rep = self.h // self.kv
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, n, d))
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class LoRASampler(nn.Module):
        """The last position's logits filtered by temperature, top-k and top-p (nucleus) as
        Hugging Face's warpers do (sort, cumsum of the sorted softmax, scatter the removal mask
        back), then one draw by inverse CDF: ``searchsorted`` of the given uniform ``u``."""

        def __init__(self, vocab=2048, d=128, heads=4, kv_heads=2, layers=2, top_k=50,
                     top_p=0.9, temperature=0.8, n=64):
            super().__init__()
            self.top_k, self.top_p, self.t = top_k, top_p, temperature
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList(LoRABlock(d, heads, kv_heads) for _ in range(layers))
            self.norm = nn.RMSNorm(d, eps=1e-6)
            self.head = nn.Linear(d, vocab, bias=False)
            cos, sin = ntk_rotary(n, d // heads)
            self.register_buffer("cos", cos)
            self.register_buffer("sin", sin)

        def forward(self, idx, u):
            n = idx.shape[1]
            x = self.emb(idx)
            for blk in self.blocks:
                x = blk(x, self.cos[:n], self.sin[:n])
            logits = self.head(self.norm(x[:, -1])) / self.t                  # (b, vocab)
            kth = logits.topk(self.top_k, -1)[0][:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
            srt, order = logits.sort(-1)                                      # ascending
            cum = srt.softmax(-1).cumsum(-1)
            drop = cum <= 1 - self.top_p
            drop[:, -1:] = False
            logits = logits.masked_fill(drop.scatter(1, order, drop), float("-inf"))
            probs = logits.softmax(-1)
            cdf = probs.cumsum(-1)
            token = torch.searchsorted(cdf, u * cdf[:, -1:]).clamp(max=probs.shape[-1] - 1)
            return torch.cat([probs, token.float()], 1)

    # -- MaskGIT decoding step -------------------------------------------------------------
    class MaskGITStep(nn.Module):
        """A bidirectional transformer over VQ tokens (``codes`` == mask id are unknown);
        one parallel-decoding step: greedy predictions with their confidence, the cosine
        schedule's count of tokens to keep masked, the threshold as the count-th smallest
        confidence (``kthvalue``) and the updated token grid."""

        def __init__(self, codes=256, d=96, heads=4, layers=2, side=8, step=2, steps=8):
            super().__init__()
            self.mask_id, self.n = codes, side * side
            ratio = math.cos(math.pi / 2 * (step + 1) / steps)
            self.remask = max(1, int(ratio * self.n))
            self.emb = nn.Embedding(codes + 1, d)
            self.pos = nn.Parameter(0.02 * torch.randn(1, self.n, d))
            self.tx = nn.TransformerEncoder(nn.TransformerEncoderLayer(
                d, heads, 4 * d, 0.0, activation="gelu", batch_first=True, norm_first=True),
                layers, enable_nested_tensor=False)
            self.out = nn.Linear(d, codes)

        def forward(self, codes):
            logits = self.out(self.tx(self.emb(codes) + self.pos))
            conf, pred = logits.softmax(-1).max(-1)
            unknown = codes == self.mask_id
            pred = torch.where(unknown, pred, codes)
            conf = torch.where(unknown, conf, torch.full_like(conf, 2.0))
            thresh = conf.kthvalue(self.remask, -1, keepdim=True)[0]
            new = torch.where(conf <= thresh, torch.full_like(pred, self.mask_id), pred)
            return torch.cat([new.float(), logits.logsumexp(-1)], 1)

    # -- Evoformer pair stack ---------------------------------------------------------------
    class TriangleMultiply(nn.Module):
        def __init__(self, c, hidden, outgoing):
            super().__init__()
            self.eq = "bikc,bjkc->bijc" if outgoing else "bkic,bkjc->bijc"
            self.norm, self.out_norm = nn.LayerNorm(c), nn.LayerNorm(hidden)
            self.ab, self.ab_gate = nn.Linear(c, 2 * hidden), nn.Linear(c, 2 * hidden)
            self.gate, self.out = nn.Linear(c, c), nn.Linear(hidden, c)

        def forward(self, z):
            z = self.norm(z)
            a, b = (self.ab(z) * torch.sigmoid(self.ab_gate(z))).chunk(2, -1)
            return torch.sigmoid(self.gate(z)) * self.out(self.out_norm(torch.einsum(
                self.eq, a, b)))

    class TriangleAttention(nn.Module):
        def __init__(self, c, heads, starting):
            super().__init__()
            self.h, self.starting = heads, starting
            self.norm = nn.LayerNorm(c)
            self.qkv, self.bias = nn.Linear(c, 3 * c, bias=False), nn.Linear(c, heads, bias=False)
            self.gate, self.o = nn.Linear(c, c), nn.Linear(c, c)

        def forward(self, z):
            if not self.starting:
                z = z.transpose(1, 2)
            b, n, _, c = z.shape
            z = self.norm(z)
            q, k, v = self.qkv(z).view(b, n, n, 3, self.h, c // self.h).unbind(3)
            bias = self.bias(z).permute(0, 3, 1, 2)[:, None]                  # (b, 1, h, n, n)
            s = torch.einsum("bijhc,bikhc->bihjk", q, k) * (c // self.h) ** -0.5 + bias
            a = torch.einsum("bihjk,bikhc->bijhc", s.softmax(-1), v).reshape(b, n, n, c)
            out = self.o(torch.sigmoid(self.gate(z)) * a)
            return out if self.starting else out.transpose(1, 2)

    class EvoformerMini(nn.Module):
        """MSA embedding -> outer-product mean into the pair representation -> triangle
        updates (outgoing, incoming) and triangle attention (starting, ending) -> a distogram."""

        def __init__(self, aa=21, seqs=8, c_m=32, c_z=32, c_op=8, heads=4, bins=16, blocks=1):
            super().__init__()
            self.msa = nn.Embedding(aa + 1, c_m)
            self.left, self.right = nn.Linear(aa, c_z), nn.Linear(aa, c_z)
            self.op_norm = nn.LayerNorm(c_m)
            self.op_a, self.op_b = nn.Linear(c_m, c_op), nn.Linear(c_m, c_op)
            self.op_out = nn.Linear(c_op * c_op, c_z)
            self.blocks = nn.ModuleList(nn.ModuleList([
                TriangleMultiply(c_z, c_z, True), TriangleMultiply(c_z, c_z, False),
                TriangleAttention(c_z, heads, True), TriangleAttention(c_z, heads, False)])
                for _ in range(blocks))
            self.trans = nn.Sequential(nn.LayerNorm(c_z), nn.Linear(c_z, 2 * c_z), nn.ReLU(),
                                       nn.Linear(2 * c_z, c_z))
            self.disto = nn.Linear(c_z, bins)

        def forward(self, msa):                                               # (b, s, n) int64
            seq = F.one_hot(msa[:, 0], 21).float()
            z = self.left(seq)[:, :, None] + self.right(seq)[:, None]       # (b, n, n, c_z)
            m = self.op_norm(self.msa(msa))
            a, b_ = self.op_a(m), self.op_b(m)
            outer = torch.einsum("bsic,bsjd->bijcd", a, b_) / msa.shape[1]
            z = z + self.op_out(outer.flatten(-2))
            for blk in self.blocks:
                for mod in blk:
                    z = z + mod(z)
                z = z + self.trans(z)
            logits = self.disto(z)
            return logits + logits.transpose(1, 2)

    # -- Temporal Fusion Transformer ------------------------------------------------------
    class GRN(nn.Module):
        """Gated residual network: ELU MLP, a GLU gate, residual, LayerNorm."""

        def __init__(self, cin, d, cout=None, context=None):
            super().__init__()
            cout = cout or d
            self.skip = nn.Linear(cin, cout) if cin != cout else nn.Identity()
            self.fc1 = nn.Linear(cin, d)
            self.ctx = nn.Linear(context, d, bias=False) if context else None
            self.fc2 = nn.Linear(d, d)
            self.glu = nn.Linear(d, 2 * cout)
            self.norm = nn.LayerNorm(cout)

        def forward(self, x, c=None):
            h = self.fc1(x)
            if self.ctx is not None:
                h = h + self.ctx(c)
            h = self.fc2(F.elu(h))
            return self.norm(self.skip(x) + F.glu(self.glu(h), -1))

    class VariableSelection(nn.Module):
        def __init__(self, nvars, d, context=None):
            super().__init__()
            self.embed = nn.ModuleList(nn.Linear(1, d) for _ in range(nvars))
            self.weights = GRN(nvars * d, d, nvars, context)
            self.grns = nn.ModuleList(GRN(d, d) for _ in range(nvars))

        def forward(self, x, c=None):                                         # x (b, t, nvars)
            e = [emb(x[..., i:i + 1]) for i, emb in enumerate(self.embed)]
            w = self.weights(torch.cat(e, -1), c).softmax(-1)                # (b, t, nvars)
            h = torch.stack([g(v) for g, v in zip(self.grns, e)], -1)        # (b, t, d, nvars)
            return (h * w[..., None, :]).sum(-1)

    class TFTMini(nn.Module):
        """Static covariates -> context; past and known-future variable selection; an LSTM
        encoder/decoder seeded by the static context; interpretable multi-head attention (heads
        share the value projection, their outputs averaged); three quantile outputs."""

        def __init__(self, static=3, past=5, future=3, d=32, heads=4, horizon=8, quantiles=3):
            super().__init__()
            self.h, self.horizon, self.quantiles = heads, horizon, quantiles
            self.static_vs = VariableSelection(static, d)
            self.ctx_sel, self.ctx_h, self.ctx_c = GRN(d, d), GRN(d, d), GRN(d, d)
            self.past_vs = VariableSelection(past, d, d)
            self.fut_vs = VariableSelection(future, d, d)
            self.enc = nn.LSTM(d, d, batch_first=True)
            self.dec = nn.LSTM(d, d, batch_first=True)
            self.post_lstm = nn.Linear(d, 2 * d)
            self.post_norm = nn.LayerNorm(d)
            self.q, self.k = nn.Linear(d, d), nn.Linear(d, d)
            self.v, self.o = nn.Linear(d, d // heads), nn.Linear(d // heads, d)
            self.ff = GRN(d, d)
            self.out = nn.Linear(d, quantiles)

        def forward(self, static, past, future):
            s = self.static_vs(static[:, None])[:, 0]
            cs = self.ctx_sel(s)[:, None]
            h0, c0 = self.ctx_h(s)[None], self.ctx_c(s)[None]
            xp = self.past_vs(past, cs)
            xf = self.fut_vs(future, cs)
            ep, (h, c) = self.enc(xp, (h0, c0))
            ef, _ = self.dec(xf, (h, c))
            x = torch.cat([xp, xf], 1)
            e = torch.cat([ep, ef], 1)
            x = self.post_norm(x + F.glu(self.post_lstm(e), -1))
            b, t, d = x.shape
            q = self.q(x).view(b, t, self.h, -1).transpose(1, 2)
            k = self.k(x).view(b, t, self.h, -1).transpose(1, 2)
            v = self.v(x)[:, None]                                            # shared value
            mask = torch.ones(t, t, dtype=torch.bool).tril()
            a = F.scaled_dot_product_attention(q, k, v.expand(-1, self.h, -1, -1),
                                               attn_mask=mask).mean(1)
            y = self.ff(x + self.o(a))[:, -self.horizon:]
            return self.out(y)

    # -- StyleGAN2 generator ----------------------------------------------------------------
    class ModConv(nn.Module):
        """Modulated conv, the non-fused form: scale the input by the style, convolve with
        the shared weight, scale the output by the demodulation coefficients."""

        def __init__(self, cin, cout, w_dim, k=3, up=False, demod=True, side=4):
            super().__init__()
            self.up, self.demod = up, demod
            self.weight = nn.Parameter(torch.randn(cout, cin, k, k))
            self.affine = nn.Linear(w_dim, cin)
            nn.init.ones_(self.affine.bias)
            self.noise = nn.Parameter(torch.full((1,), 0.1)) if demod else None
            self.bias = nn.Parameter(torch.zeros(1, cout, 1, 1))
            self.scale = 1 / math.sqrt(cin * k * k)
            res = side * (2 if up else 1)
            self.register_buffer("noise_const", torch.randn(1, 1, res, res))

        def forward(self, x, w):
            style = self.affine(w)                                            # (b, cin)
            weight = self.weight * self.scale
            x = x * style[:, :, None, None]
            if self.up:
                x = F.conv_transpose2d(x, weight.transpose(0, 1), stride=2, padding=1,
                                       output_padding=1)
            else:
                x = F.conv2d(x, weight, padding=weight.shape[-1] // 2)
            if self.demod:
                d = torch.rsqrt((weight[None] * style[:, None, :, None, None]).pow(2)
                                .sum([2, 3, 4]) + 1e-8)                       # (b, cout)
                x = x * d[:, :, None, None] + self.noise * self.noise_const
            return F.leaky_relu(x + self.bias, 0.2) * math.sqrt(2) if self.demod else \
                x + self.bias

    class StyleGAN2Mini(nn.Module):
        def __init__(self, z_dim=64, w_dim=64, c=64, mapping=4, psi=0.7):
            super().__init__()
            self.psi = psi
            layers = []
            for _ in range(mapping):
                layers += [nn.Linear(w_dim, w_dim), nn.LeakyReLU(0.2)]
            self.mapping = nn.Sequential(*layers)
            self.register_buffer("w_avg", 0.1 * torch.randn(w_dim))
            self.const = nn.Parameter(torch.randn(1, c, 4, 4))
            self.convs = nn.ModuleList([
                ModConv(c, c, w_dim, side=4), ModConv(c, c, w_dim, up=True, side=4),
                ModConv(c, c, w_dim, side=8), ModConv(c, c // 2, w_dim, up=True, side=8),
                ModConv(c // 2, c // 2, w_dim, side=16)])
            self.to_rgb = nn.ModuleList([ModConv(c, 3, w_dim, 1, demod=False),
                                         ModConv(c, 3, w_dim, 1, demod=False),
                                         ModConv(c // 2, 3, w_dim, 1, demod=False)])

        def forward(self, z):
            z = z * torch.rsqrt(z.pow(2).mean(1, keepdim=True) + 1e-8)       # pixel norm
            w = torch.lerp(self.w_avg, self.mapping(z), self.psi)             # truncation
            x = self.const.expand(z.shape[0], -1, -1, -1)
            x = self.convs[0](x, w)
            rgb = self.to_rgb[0](x, w)
            for i in range(2):
                x = self.convs[2 * i + 2](self.convs[2 * i + 1](x, w), w)
                rgb = F.interpolate(rgb, scale_factor=2, mode="bilinear",
                                    align_corners=False) + self.to_rgb[i + 1](x, w)
            return torch.tanh(rgb)

    # -- DBNet text detection ------------------------------------------------------------------
    def conv_bn(cin, cout, stride=1):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    class DBNetMini(nn.Module):
        """A ``pixel_unshuffle`` (space-to-depth) stem, a small backbone with four strides,
        an FPN by nearest upsampling, the probability and threshold maps by transposed convs
        and the differentiable binarization ``1 / (1 + exp(-k (P - T)))``."""

        def __init__(self, c=32, k=50.0):
            super().__init__()
            self.k = k
            self.stem = conv_bn(12, c)
            self.stages = nn.ModuleList([conv_bn(c, c), conv_bn(c, 2 * c, 2),
                                         conv_bn(2 * c, 4 * c, 2), conv_bn(4 * c, 4 * c, 2)])
            self.lat = nn.ModuleList(nn.Conv2d(w, c, 1) for w in (c, 2 * c, 4 * c, 4 * c))
            self.smooth = nn.ModuleList(nn.Conv2d(c, c // 4, 3, 1, 1) for _ in range(4))

            def head():
                return nn.Sequential(conv_bn(c, c // 4), nn.ConvTranspose2d(c // 4, c // 4, 2, 2),
                                     nn.BatchNorm2d(c // 4), nn.ReLU(),
                                     nn.ConvTranspose2d(c // 4, 1, 2, 2), nn.Sigmoid())
            self.prob, self.thresh = head(), head()

        def forward(self, img):
            x = self.stem(F.pixel_unshuffle(img, 2))
            feats = []
            for stage in self.stages:
                x = stage(x)
                feats.append(x)
            lat = [m(f) for m, f in zip(self.lat, feats)]
            for i in range(3, 0, -1):
                lat[i - 1] = lat[i - 1] + F.interpolate(lat[i], scale_factor=2, mode="nearest")
            size = lat[0].shape[-2:]
            fused = torch.cat([F.interpolate(s(f), size=size, mode="nearest")
                               for s, f in zip(self.smooth, lat)], 1)
            p, t = self.prob(fused), self.thresh(fused)
            return torch.cat([p, t, torch.reciprocal(1 + torch.exp(-self.k * (p - t)))], 1)

    # -- inputs ----------------------------------------------------------------------------
    def cloud(n, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"xyz": torch.rand(2, n, 3, generator=g)}
        return make

    def pillar_inputs():
        g = torch.Generator().manual_seed(61)
        b, p, k, grid, voxel = 2, 64, 16, 32, 0.25
        cells = torch.stack([torch.randperm(grid * grid, generator=g)[:p] for _ in range(b)])
        coords = torch.stack([cells // grid, cells % grid], -1)              # (b, p, 2) y, x
        xy = (coords[..., [1, 0]].float()[:, :, None] + torch.rand(b, p, k, 2, generator=g)) \
            * voxel
        pts = torch.cat([xy, torch.randn(b, p, k, 1, generator=g),
                         torch.rand(b, p, k, 1, generator=g)], -1)
        counts = torch.randint(1, k + 1, (b, p, 1, 1), generator=g)
        pts = pts * (torch.arange(k)[None, None, :, None] < counts)
        return {"points": pts, "coords": coords}

    def graph_inputs():
        g = torch.Generator().manual_seed(62)
        b, n = 2, 16
        up = (torch.rand(b, n, n, generator=g) < 0.2).long().triu(1)
        chain = torch.diag_embed(torch.ones(b, n - 1, dtype=torch.long), 1)
        chain[1, 7, 8] = 0                                         # the second graph in two parts
        adj = ((up + chain) > 0).long()
        adj = adj + adj.transpose(1, 2)
        bonds = torch.randint(1, 5, (b, n, n), generator=g) * adj
        return {"atoms": torch.randint(0, 32, (b, n), generator=g), "adj": adj,
                "bonds": bonds}

    def sampler_inputs():
        g = torch.Generator().manual_seed(63)
        return {"idx": torch.randint(0, 2048, (2, 48), generator=g),
                "u": torch.tensor([[0.37], [0.81]])}

    def maskgit_inputs():
        g = torch.Generator().manual_seed(64)
        codes = torch.randint(0, 256, (2, 64), generator=g)
        hidden = torch.rand(2, 64, generator=g) < 0.7
        return {"codes": torch.where(hidden, 256, codes)}

    def msa_inputs():
        g = torch.Generator().manual_seed(65)
        return {"msa": torch.randint(0, 21, (1, 8, 24), generator=g)}

    def tft_inputs():
        g = torch.Generator().manual_seed(66)
        return {"static": torch.randn(4, 3, generator=g), "past": torch.randn(4, 24, 5,
                                                                                 generator=g),
                "future": torch.randn(4, 8, 3, generator=g)}

    return {
        "pointnet2_ssg": (PointNet2Mini, cloud(512, 60)),
        "pointpillars_bev": (PointPillarsMini, pillar_inputs),
        "timesformer_mini": (TimeSformerMini, (1, 3, 8, 32, 32)),
        "x3d_mini": (X3DMini, (1, 3, 8, 64, 64)),
        "graphormer_mini": (GraphormerMini, graph_inputs),
        "svtr_ctc": (SVTRCTC, (2, 3, 32, 128)),
        "lora_topp_sampler": (LoRASampler, sampler_inputs),
        "maskgit_step": (MaskGITStep, maskgit_inputs),
        "evoformer_mini": (EvoformerMini, msa_inputs),
        "tft_mini": (TFTMini, tft_inputs),
        "stylegan2_mini": (StyleGAN2Mini, (2, 64)),
        "dbnet_mini": (DBNetMini, (1, 3, 128, 128)),
    }
