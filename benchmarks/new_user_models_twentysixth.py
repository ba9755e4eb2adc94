"""The twenty-sixth round of ``bench_new_user_models``: SlowFast (a 3D-conv slow pathway at a low
frame rate and a thin fast one at a high rate, joined by time-strided ``Conv3d`` lateral
connections), BiSeNet (a spatial path and a context path whose attention refinement modules gate
features by a pooled ``sigmoid``, fused by a feature fusion module, upsampled ``align_corners``),
ChebNet (Chebyshev graph convolutions by the recurrence T_k = 2 L T_{k-1} - T_{k-2} on a dense
scaled Laplacian built from each batch's adjacency), NeuMF neural collaborative filtering (GMF
and MLP towers over separate user / item embeddings, any number of pairs), an FCOS head (shared
GroupNorm towers over three FPN levels, a learned per-level scale inside ``exp``, centerness,
boxes from a location grid), a YOLOv4-style CSP darknet (``Mish``, cross-stage partial blocks,
SPP by stride-1 max pools of 5 / 9 / 13), an Attention U-Net (additive attention gates on the
skips), PVTv2 (overlapping patch embeddings, spatial-reduction attention, a depthwise conv in the
MLP), RotatE knowledge-graph scoring (relations as phase rotations, complex distances by
``torch.linalg.vector_norm`` over the real / imaginary parts, self-adversarial negative weights),
GRU-D (a hand-written GRU over irregular series with learned input and hidden decays and mean
imputation of missing values), a PixelCNN++-style discretized logistic mixture likelihood
(``softplus`` / ``log_softmax`` / ``logsumexp`` / edge cases by ``torch.where``) and a mesh
feature net (face normals by ``torch.linalg.cross``, areas, area-weighted vertex normals by
``index_add``). Kept apart so the main script stays readable."""

from __future__ import annotations

import math


def twentysixth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    def cbr(cin, cout, k=3, s=1, groups=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    # -- SlowFast -------------------------------------------------------------------------
    def c3(cin, cout, k, s=(1, 1, 1)):
        return nn.Sequential(nn.Conv3d(cin, cout, k, s, tuple(x // 2 for x in k), bias=False),
                             nn.BatchNorm3d(cout), nn.ReLU())

    class SlowFast(nn.Module):
        """Feichtenhofer et al. 2019: the slow path sees every ``alpha``-th frame with wide
        channels and no temporal kernel early; the fast path sees all frames with ``beta``
        of the channels; fast -> slow laterals are (5, 1, 1) convs of temporal stride alpha."""

        def __init__(self, width=32, alpha=4, beta=8, classes=10):
            super().__init__()
            fw = width // beta * 2
            self.alpha = alpha
            self.slow_stem = c3(3, width, (1, 7, 7), (1, 2, 2))
            self.fast_stem = c3(3, fw, (5, 7, 7), (1, 2, 2))
            self.lat1 = nn.Conv3d(fw, 2 * fw, (5, 1, 1), (alpha, 1, 1), (2, 0, 0))
            self.slow1 = c3(width + 2 * fw, 2 * width, (1, 3, 3), (1, 2, 2))
            self.fast1 = c3(fw, 2 * fw, (3, 3, 3), (1, 2, 2))
            self.lat2 = nn.Conv3d(2 * fw, 4 * fw, (5, 1, 1), (alpha, 1, 1), (2, 0, 0))
            self.slow2 = c3(2 * width + 4 * fw, 4 * width, (3, 3, 3), (1, 2, 2))
            self.fast2 = c3(2 * fw, 4 * fw, (3, 3, 3), (1, 2, 2))
            self.head = nn.Linear(4 * width + 4 * fw, classes)

        def forward(self, clip):                                   # (b, 3, t, h, w)
            slow = self.slow_stem(clip[:, :, ::self.alpha])
            fast = self.fast_stem(clip)
            slow = self.slow1(torch.cat([slow, self.lat1(fast)], 1))
            fast = self.fast1(fast)
            slow = self.slow2(torch.cat([slow, self.lat2(fast)], 1))
            fast = self.fast2(fast)
            feat = torch.cat([F.adaptive_avg_pool3d(slow, 1), F.adaptive_avg_pool3d(fast, 1)], 1)
            return self.head(feat.flatten(1))

    # -- BiSeNet --------------------------------------------------------------------------
    class ARM(nn.Module):
        """Attention refinement: features times a sigmoid of their pooled 1x1 projection."""

        def __init__(self, cin, cout):
            super().__init__()
            self.conv = cbr(cin, cout)
            self.att = nn.Sequential(nn.Conv2d(cout, cout, 1, bias=False), nn.BatchNorm2d(cout),
                                     nn.Sigmoid())

        def forward(self, x):
            x = self.conv(x)
            return x * self.att(F.adaptive_avg_pool2d(x, 1))

    class FFM(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv = cbr(cin, cout, 1)
            self.att = nn.Sequential(nn.Conv2d(cout, cout // 4, 1), nn.ReLU(),
                                     nn.Conv2d(cout // 4, cout, 1), nn.Sigmoid())

        def forward(self, sp, cp):
            x = self.conv(torch.cat([sp, cp], 1))
            return x + x * self.att(F.adaptive_avg_pool2d(x, 1))

    class BiSeNet(nn.Module):
        def __init__(self, width=32, classes=11):
            super().__init__()
            w = width
            self.spatial = nn.Sequential(cbr(3, w, 7, 2), cbr(w, w, 3, 2), cbr(w, 2 * w, 3, 2))
            self.c1 = nn.Sequential(cbr(3, w, 3, 2), cbr(w, w, 3, 2))             # /4
            self.c2 = nn.Sequential(cbr(w, 2 * w, 3, 2), cbr(2 * w, 2 * w))       # /8
            self.c3 = nn.Sequential(cbr(2 * w, 4 * w, 3, 2), cbr(4 * w, 4 * w))   # /16
            self.c4 = nn.Sequential(cbr(4 * w, 8 * w, 3, 2), cbr(8 * w, 8 * w))   # /32
            self.arm16, self.arm32 = ARM(4 * w, 2 * w), ARM(8 * w, 2 * w)
            self.gap = cbr(8 * w, 2 * w, 1)
            self.ffm = FFM(4 * w, 4 * w)
            self.out = nn.Sequential(cbr(4 * w, 2 * w), nn.Conv2d(2 * w, classes, 1))

        def forward(self, x):
            h, w = x.shape[-2:]
            sp = self.spatial(x)
            f16 = self.c3(self.c2(self.c1(x)))
            f32 = self.c4(f16)
            tail = self.gap(F.adaptive_avg_pool2d(f32, 1))
            up32 = F.interpolate(self.arm32(f32) + tail, size=f16.shape[-2:], mode="bilinear",
                                 align_corners=True)
            up16 = F.interpolate(self.arm16(f16) + up32, size=sp.shape[-2:], mode="bilinear",
                                 align_corners=True)
            logits = self.out(self.ffm(sp, up16))
            return F.interpolate(logits, size=(h, w), mode="bilinear", align_corners=True)

    # -- ChebNet --------------------------------------------------------------------------
    class ChebConv(nn.Module):
        def __init__(self, cin, cout, k):
            super().__init__()
            self.k = k
            self.lin = nn.Linear(k * cin, cout)

        def forward(self, x, lap):                                 # (b, n, f), (b, n, n)
            ts = [x, lap @ x]
            for _ in range(2, self.k):
                ts.append(2 * (lap @ ts[-1]) - ts[-2])
            return self.lin(torch.cat(ts[:self.k], -1))

    class ChebNet(nn.Module):
        """Defferrard et al. 2016 on a batch of graphs given as dense adjacencies (padded
        nodes have no edges and are left out of the pooled readout)."""

        def __init__(self, fin=16, hidden=64, k=4, layers=3, classes=6):
            super().__init__()
            dims = [fin] + [hidden] * layers
            self.convs = nn.ModuleList([ChebConv(dims[i], dims[i + 1], k)
                                        for i in range(layers)])
            self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(),
                                      nn.Linear(hidden, classes))

        def forward(self, x, adj, node_mask):                      # node_mask (b, n) float
            deg = adj.sum(-1)
            dinv = torch.where(deg > 0, deg.clamp_min(1e-6).rsqrt(), torch.zeros_like(deg))
            lap = -(dinv.unsqueeze(-1) * adj * dinv.unsqueeze(-2))  # L / lmax*2 - I, lmax = 2
            keep = node_mask.unsqueeze(-1)
            for conv in self.convs:
                x = F.relu(conv(x, lap)) * keep
            mean = x.sum(1) / keep.sum(1).clamp_min(1.0)
            mx = x.masked_fill(keep == 0, -1e4).amax(1)
            return self.head(torch.cat([mean, mx], -1))

    # -- NeuMF ----------------------------------------------------------------------------
    class NeuMF(nn.Module):
        """He et al. 2017: GMF (elementwise product of embeddings) and an MLP over the
        concatenated embeddings, joined by a final linear layer into a click probability."""

        def __init__(self, users=5000, items=8000, gmf=32, mlp=(128, 64, 32)):
            super().__init__()
            self.ug, self.ig = nn.Embedding(users, gmf), nn.Embedding(items, gmf)
            self.um, self.im = nn.Embedding(users, mlp[0] // 2), nn.Embedding(items, mlp[0] // 2)
            layers = []
            for a, b in zip(mlp[:-1], mlp[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            self.mlp = nn.Sequential(*layers)
            self.out = nn.Linear(gmf + mlp[-1], 1)

        def forward(self, user, item):                             # (b,), (b,) int
            g = self.ug(user) * self.ig(item)
            m = self.mlp(torch.cat([self.um(user), self.im(item)], -1))
            return torch.sigmoid(self.out(torch.cat([g, m], -1))).squeeze(-1)

    # -- FCOS -----------------------------------------------------------------------------
    class FCOS(nn.Module):
        """Tian et al. 2019: per-location class scores, distances (l, t, r, b) as
        exp(s_level * x) * stride, centerness; scores sqrt(cls * ctr), boxes decoded."""

        def __init__(self, width=32, classes=8, img=128, towers=2):
            super().__init__()
            w = width
            self.c2 = nn.Sequential(cbr(3, w, 3, 2), cbr(w, w, 3, 2), cbr(w, w, 3, 2))     # /8
            self.c3, self.c4 = cbr(w, 2 * w, 3, 2), cbr(2 * w, 4 * w, 3, 2)              # /16 /32
            self.lat = nn.ModuleList([nn.Conv2d(c, w, 1) for c in (w, 2 * w, 4 * w)])
            self.smooth = nn.ModuleList([nn.Conv2d(w, w, 3, 1, 1) for _ in range(3)])

            def tower():
                layers = []
                for _ in range(towers):
                    layers += [nn.Conv2d(w, w, 3, 1, 1), nn.GroupNorm(8, w), nn.ReLU()]
                return nn.Sequential(*layers)

            self.cls_tower, self.box_tower = tower(), tower()
            self.cls = nn.Conv2d(w, classes, 3, 1, 1)
            self.reg, self.ctr = nn.Conv2d(w, 4, 3, 1, 1), nn.Conv2d(w, 1, 3, 1, 1)
            self.scales = nn.Parameter(torch.ones(3))
            self.strides = (8, 16, 32)
            for i, s in enumerate(self.strides):
                n = img // s
                ys, xs = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
                loc = torch.stack([xs, ys], -1).reshape(-1, 2).float() * s + s // 2
                self.register_buffer(f"loc{i}", loc)

        def forward(self, x):
            f8 = self.c2(x)
            f16 = self.c3(f8)
            f32 = self.c4(f16)
            p32 = self.lat[2](f32)
            p16 = self.lat[1](f16) + F.interpolate(p32, scale_factor=2, mode="nearest")
            p8 = self.lat[0](f8) + F.interpolate(p16, scale_factor=2, mode="nearest")
            outs = []
            for i, p in enumerate((p8, p16, p32)):
                p = self.smooth[i](p)
                ct, bt = self.cls_tower(p), self.box_tower(p)
                cls = torch.sigmoid(self.cls(ct)).flatten(2).transpose(1, 2)      # (b, hw, C)
                ctr = torch.sigmoid(self.ctr(bt)).flatten(2).transpose(1, 2)      # (b, hw, 1)
                dist = torch.exp(self.scales[i] * self.reg(bt)) * self.strides[i]
                dist = dist.flatten(2).transpose(1, 2)                            # (b, hw, 4)
                loc = getattr(self, f"loc{i}")
                boxes = torch.cat([loc - dist[..., :2], loc + dist[..., 2:]], -1)
                outs.append(torch.cat([torch.sqrt(cls * ctr), boxes], -1))
            return torch.cat(outs, 1)

    # -- YOLOv4 CSP darknet ---------------------------------------------------------------
    def cbm(cin, cout, k=3, s=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False),
                             nn.BatchNorm2d(cout), nn.Mish())

    class CSPStage(nn.Module):
        """Downsample, then split into a shortcut half and a half through residual blocks,
        concatenated and mixed by a 1x1 (Wang et al. 2020)."""

        def __init__(self, cin, cout, blocks):
            super().__init__()
            h = cout // 2
            self.down = cbm(cin, cout, 3, 2)
            self.part1, self.part2 = cbm(cout, h, 1), cbm(cout, h, 1)
            self.blocks = nn.ModuleList([nn.Sequential(cbm(h, h, 1), cbm(h, h, 3))
                                         for _ in range(blocks)])
            self.after = cbm(h, h, 1)
            self.mix = cbm(2 * h, cout, 1)

        def forward(self, x):
            x = self.down(x)
            a, b = self.part1(x), self.part2(x)
            for blk in self.blocks:
                b = b + blk(b)
            return self.mix(torch.cat([self.after(b), a], 1))

    class YOLOv4CSP(nn.Module):
        def __init__(self, width=16, classes=5, anchors=3):
            super().__init__()
            w = width
            self.stem = cbm(3, w)
            self.s1, self.s2 = CSPStage(w, 2 * w, 1), CSPStage(2 * w, 4 * w, 2)
            self.s3, self.s4 = CSPStage(4 * w, 8 * w, 2), CSPStage(8 * w, 16 * w, 1)
            self.pre_spp = nn.Sequential(cbm(16 * w, 8 * w, 1), cbm(8 * w, 16 * w),
                                         cbm(16 * w, 8 * w, 1))
            self.post_spp = cbm(32 * w, 8 * w, 1)
            self.reduce = cbm(8 * w, 4 * w, 1)
            self.fuse = nn.Sequential(cbm(12 * w, 4 * w, 1), cbm(4 * w, 8 * w))
            self.heads = nn.ModuleList([nn.Conv2d(8 * w, anchors * (5 + classes), 1)
                                        for _ in range(2)])

        def forward(self, x):
            x = self.s2(self.s1(self.stem(x)))
            f16 = self.s3(x)
            f32 = self.pre_spp(self.s4(f16))
            spp = torch.cat([f32] + [F.max_pool2d(f32, k, 1, k // 2) for k in (5, 9, 13)], 1)
            f32 = self.post_spp(spp)
            up = F.interpolate(self.reduce(f32), scale_factor=2, mode="nearest")
            f16 = self.fuse(torch.cat([up, f16], 1))
            return torch.cat([self.heads[0](f16).flatten(2), self.heads[1](f32).flatten(2)], 2)

    # -- Attention U-Net ------------------------------------------------------------------
    class AttentionGate(nn.Module):
        """Oktay et al. 2018: alpha = sigmoid(psi(relu(W_x x_strided + W_g g))), upsampled,
        multiplies the skip connection."""

        def __init__(self, cx, cg, ci):
            super().__init__()
            self.wx = nn.Conv2d(cx, ci, 2, 2, bias=False)
            self.wg = nn.Conv2d(cg, ci, 1)
            self.psi = nn.Sequential(nn.Conv2d(ci, 1, 1), nn.Sigmoid())
            self.out = nn.Sequential(nn.Conv2d(cx, cx, 1), nn.BatchNorm2d(cx))

        def forward(self, x, g):
            a = self.psi(F.relu(self.wx(x) + self.wg(g)))
            a = F.interpolate(a, size=x.shape[-2:], mode="bilinear", align_corners=False)
            return self.out(x * a)

    class AttUNet(nn.Module):
        def __init__(self, width=16, classes=3, depth=3):
            super().__init__()
            ws = [width * 2 ** i for i in range(depth + 1)]
            self.enc = nn.ModuleList([nn.Sequential(cbr(3 if i == 0 else ws[i - 1], ws[i]),
                                                    cbr(ws[i], ws[i]))
                                      for i in range(depth + 1)])
            self.gates = nn.ModuleList([AttentionGate(ws[i], ws[i + 1], ws[i] // 2)
                                        for i in range(depth)])
            self.ups = nn.ModuleList([nn.ConvTranspose2d(ws[i + 1], ws[i], 2, 2)
                                      for i in range(depth)])
            self.dec = nn.ModuleList([nn.Sequential(cbr(2 * ws[i], ws[i]), cbr(ws[i], ws[i]))
                                      for i in range(depth)])
            self.out = nn.Conv2d(ws[0], classes, 1)

        def forward(self, x):
            skips = []
            for i, enc in enumerate(self.enc):
                x = enc(x if i == 0 else F.max_pool2d(x, 2))
                skips.append(x)
            for i in reversed(range(len(self.dec))):
                skip = self.gates[i](skips[i], x)
                x = self.dec[i](torch.cat([skip, self.ups[i](x)], 1))
            return self.out(x)

    # -- PVTv2 ----------------------------------------------------------------------------
    class SRAttention(nn.Module):
        """Keys and values from the tokens reduced by a stride-``sr`` conv and a LayerNorm."""

        def __init__(self, d, heads, sr):
            super().__init__()
            self.heads, self.dh, self.sr = heads, d // heads, sr
            self.q, self.kv, self.proj = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
            if sr > 1:
                self.reduce, self.norm = nn.Conv2d(d, d, sr, sr), nn.LayerNorm(d)

        def forward(self, x, h, w):
            b, n, d = x.shape
            q = self.q(x).view(b, n, self.heads, self.dh).transpose(1, 2)
            if self.sr > 1:
                r = self.reduce(x.transpose(1, 2).reshape(b, d, h, w)).flatten(2).transpose(1, 2)
                r = self.norm(r)
            else:
                r = x
            k, v = self.kv(r).view(b, -1, 2, self.heads, self.dh).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.dh), -1)
            return self.proj((a @ v).transpose(1, 2).reshape(b, n, d))

    class PVTBlock(nn.Module):
        def __init__(self, d, heads, sr, ratio=4):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = SRAttention(d, heads, sr)
            self.fc1, self.fc2 = nn.Linear(d, ratio * d), nn.Linear(ratio * d, d)
            self.dw = nn.Conv2d(ratio * d, ratio * d, 3, 1, 1, groups=ratio * d)

        def forward(self, x, h, w):
            x = x + self.attn(self.n1(x), h, w)
            y = self.fc1(self.n2(x))
            b, n, c = y.shape
            y = self.dw(y.transpose(1, 2).reshape(b, c, h, w)).flatten(2).transpose(1, 2)
            return x + self.fc2(F.gelu(y))

    class PVTv2(nn.Module):
        def __init__(self, dims=(32, 64, 128), heads=(1, 2, 4), srs=(4, 2, 1), depth=2,
                     classes=10):
            super().__init__()
            cins = (3,) + tuple(dims[:-1])
            self.embeds = nn.ModuleList([nn.Conv2d(c, d, 7 if i == 0 else 3, 4 if i == 0 else 2,
                                                   3 if i == 0 else 1)
                                         for i, (c, d) in enumerate(zip(cins, dims))])
            self.enorms = nn.ModuleList([nn.LayerNorm(d) for d in dims])
            self.stages = nn.ModuleList([nn.ModuleList([PVTBlock(d, hd, sr) for _ in range(depth)])
                                         for d, hd, sr in zip(dims, heads, srs)])
            self.norms = nn.ModuleList([nn.LayerNorm(d) for d in dims])
            self.head = nn.Linear(dims[-1], classes)

        def forward(self, x):
            b = x.shape[0]
            for embed, enorm, blocks, norm in zip(self.embeds, self.enorms, self.stages,
                                                  self.norms):
                x = embed(x)
                h, w = x.shape[-2:]
                t = enorm(x.flatten(2).transpose(1, 2))
                for blk in blocks:
                    t = blk(t, h, w)
                t = norm(t)
                x = t.transpose(1, 2).reshape(b, -1, h, w)
            return self.head(t.mean(1))

    # -- RotatE ---------------------------------------------------------------------------
    class RotatE(nn.Module):
        """Sun et al. 2019: score(h, r, t) = gamma - || h o e^{i theta_r} - t ||, the modulus of
        each complex coordinate by a vector norm over its (re, im) pair; the negatives' scores
        also give their self-adversarial weights softmax(alpha * score)."""

        def __init__(self, entities=4000, relations=64, dim=128, gamma=12.0, alpha=1.0):
            super().__init__()
            self.gamma, self.alpha = gamma, alpha
            self.range = (gamma + 2.0) / dim
            self.ent = nn.Embedding(entities, 2 * dim)
            self.rel = nn.Embedding(relations, dim)
            nn.init.uniform_(self.ent.weight, -self.range, self.range)
            nn.init.uniform_(self.rel.weight, -self.range, self.range)

        def forward(self, head, rel, tails):                        # (b,), (b,), (b, k) int
            hr, hi = self.ent(head).unsqueeze(1).chunk(2, -1)
            phase = self.rel(rel).unsqueeze(1) / (self.range / math.pi)
            c, s = torch.cos(phase), torch.sin(phase)
            rr, ri = hr * c - hi * s, hr * s + hi * c               # (b, 1, d)
            tr, ti = self.ent(tails).chunk(2, -1)                   # (b, k, d)
            dist = torch.linalg.vector_norm(torch.stack([rr - tr, ri - ti], 0), dim=0)
            score = self.gamma - dist.sum(-1)                       # (b, k)
            weight = torch.softmax(self.alpha * score[:, 1:], -1)
            neg = (weight * F.logsigmoid(-score[:, 1:])).sum(-1, keepdim=True)
            return torch.cat([score, F.logsigmoid(score[:, :1]), neg], -1)

    # -- GRU-D ----------------------------------------------------------------------------
    class GRUD(nn.Module):
        """Che et al. 2018: a missing input is imputed as a decayed mix of its last observed
        value and its empirical mean, gamma_x = exp(-relu(w_x * delta + b_x)); the hidden
        state decays by gamma_h = exp(-relu(W_h delta + b_h)) before each GRU update, whose
        gates also see the mask."""

        def __init__(self, feats=16, hidden=64, classes=2):
            super().__init__()
            self.hidden = hidden
            self.register_buffer("mean", torch.linspace(-0.5, 0.5, feats))
            self.wx = nn.Parameter(torch.rand(feats) * 0.5)
            self.bx = nn.Parameter(torch.zeros(feats))
            self.decay_h = nn.Linear(feats, hidden)
            self.gates = nn.Linear(2 * feats + hidden, 2 * hidden)
            self.cand_x = nn.Linear(2 * feats, hidden)
            self.cand_h = nn.Linear(hidden, hidden, bias=False)
            self.head = nn.Linear(hidden, classes)

        def forward(self, x, mask, delta):                          # (b, t, f) each
            b, t, _ = x.shape
            h = x.new_zeros(b, self.hidden)
            last = self.mean.expand(b, -1)
            for i in range(t):
                xi, mi, di = x[:, i], mask[:, i], delta[:, i]
                gx = torch.exp(-F.relu(self.wx * di + self.bx))
                last = mi * xi + (1 - mi) * last
                xh = mi * xi + (1 - mi) * (gx * last + (1 - gx) * self.mean)
                h = torch.exp(-F.relu(self.decay_h(di))) * h
                z, r = torch.sigmoid(self.gates(torch.cat([xh, h, mi], -1))).chunk(2, -1)
                cand = torch.tanh(self.cand_x(torch.cat([xh, mi], -1)) + self.cand_h(r * h))
                h = (1 - z) * h + z * cand
            return self.head(h)

    # -- PixelCNN++ discretized logistic mixture ------------------------------------------
    class DLMLNet(nn.Module):
        """A small conv net predicting, per pixel, ``mixtures`` logistic components (logit
        weight, per-channel mean and log-scale, RGB coupling coefficients); the output is each
        image's negative log-likelihood in bits per dimension, the bins at -1 / 1 taking the
        open tails and a near-flat bin its density (Salimans et al. 2017)."""

        def __init__(self, width=48, mixtures=5, blocks=3):
            super().__init__()
            self.m = mixtures
            self.inp = nn.Conv2d(3, width, 3, 1, 1)
            self.body = nn.ModuleList([nn.Sequential(nn.ELU(), nn.Conv2d(width, width, 3, 1, 1),
                                                     nn.ELU(), nn.Conv2d(width, width, 3, 1, 1))
                                       for _ in range(blocks)])
            self.out = nn.Conv2d(width, 10 * mixtures, 1)

        def forward(self, x):                                       # (b, 3, h, w) in [-1, 1]
            h = self.inp(x)
            for blk in self.body:
                h = h + blk(h)
            p = self.out(F.elu(h)).permute(0, 2, 3, 1)              # (b, h, w, 10m)
            b, hh, ww, _ = p.shape
            m = self.m
            logit_pi = p[..., :m]
            rest = p[..., m:].reshape(b, hh, ww, 3, 3 * m)
            means, log_s = rest[..., :m], rest[..., m:2 * m].clamp_min(-7.0)
            coeff = torch.tanh(rest[..., 2 * m:])
            xs = x.permute(0, 2, 3, 1).unsqueeze(-1)                # (b, h, w, 3, 1)
            m1 = means[..., 1, :] + coeff[..., 0, :] * xs[..., 0, :]
            m2 = means[..., 2, :] + coeff[..., 1, :] * xs[..., 0, :] + \
                coeff[..., 2, :] * xs[..., 1, :]
            means = torch.stack([means[..., 0, :], m1, m2], -2)
            centered = xs - means
            inv_s = torch.exp(-log_s)
            plus, minus = inv_s * (centered + 1 / 255), inv_s * (centered - 1 / 255)
            cdf_plus, cdf_minus = torch.sigmoid(plus), torch.sigmoid(minus)
            log_cdf_plus = plus - F.softplus(plus)                  # log sigmoid(plus)
            log_one_minus_cdf_min = -F.softplus(minus)
            mid = inv_s * centered
            log_pdf_mid = mid - log_s - 2 * F.softplus(mid)
            cdf_delta = cdf_plus - cdf_minus
            inner = torch.where(cdf_delta > 1e-5, torch.log(cdf_delta.clamp_min(1e-12)),
                                log_pdf_mid - math.log(127.5))
            log_probs = torch.where(xs < -0.999, log_cdf_plus,
                                    torch.where(xs > 0.999, log_one_minus_cdf_min, inner))
            log_probs = log_probs.sum(3) + F.log_softmax(logit_pi, -1)
            nll = -torch.logsumexp(log_probs, -1).sum((1, 2))
            return nll / (hh * ww * 3 * math.log(2.0))

    # -- mesh feature net -----------------------------------------------------------------
    def grid_faces(n):
        """The triangles of an n x n vertex grid (two per cell)."""
        idx = torch.arange(n * n).view(n, n)
        a, b = idx[:-1, :-1].flatten(), idx[:-1, 1:].flatten()
        c, d = idx[1:, :-1].flatten(), idx[1:, 1:].flatten()
        return torch.cat([torch.stack([a, b, c], 1), torch.stack([b, d, c], 1)], 0)

    class MeshNet(nn.Module):
        """Per-face normals by a cross product of two edges and areas by its norm,
        area-weighted vertex normals by ``index_add`` over the faces' corners, then a
        per-vertex MLP over (position, normal, area share) with a max-pooled global code."""

        def __init__(self, grid=24, hidden=64, classes=8):
            super().__init__()
            self.register_buffer("faces", grid_faces(grid))
            self.verts = grid * grid
            self.local = nn.Sequential(nn.Linear(7, hidden), nn.ReLU(),
                                       nn.Linear(hidden, hidden), nn.ReLU())
            self.mix = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden))
            self.head = nn.Linear(hidden, classes)

        def forward(self, verts):                                   # (b, v, 3)
            b = verts.shape[0]
            f = self.faces
            v0, v1, v2 = verts[:, f[:, 0]], verts[:, f[:, 1]], verts[:, f[:, 2]]
            fn = torch.linalg.cross(v1 - v0, v2 - v0, dim=-1)       # (b, F, 3), |fn| = 2 area
            area = torch.linalg.vector_norm(fn, dim=-1, keepdim=True)
            vn = verts.new_zeros(b, self.verts, 3)
            va = verts.new_zeros(b, self.verts, 1)
            for k in range(3):
                vn = vn.index_add(1, f[:, k], fn)
                va = va.index_add(1, f[:, k], area)
            vn = vn / vn.norm(dim=-1, keepdim=True).clamp_min(1e-8)
            feat = self.local(torch.cat([verts, vn, va / va.sum(1, keepdim=True)], -1))
            glob = feat.amax(1, keepdim=True).expand_as(feat)
            h = self.mix(torch.cat([feat, glob], -1))
            return self.head(h.amax(1))

    # -- inputs ---------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def graphs(b=8, n=48, f=16, seed=261):
        def make():
            g = gen(seed)
            lens = torch.randint(n // 2, n + 1, (b,), generator=g)
            keep = (torch.arange(n).unsqueeze(0) < lens.unsqueeze(1)).float()
            a = (torch.rand(b, n, n, generator=g) < 0.12).float()
            a = torch.triu(a, 1)
            a = (a + a.transpose(1, 2)) * keep.unsqueeze(1) * keep.unsqueeze(2)
            return {"x": torch.randn(b, n, f, generator=g) * keep.unsqueeze(-1), "adj": a,
                    "node_mask": keep}
        return make

    def pairs(b=512, users=5000, items=8000, seed=262):
        def make():
            g = gen(seed)
            return {"user": torch.randint(0, users, (b,), generator=g),
                    "item": torch.randint(0, items, (b,), generator=g)}
        return make

    def triples(b=64, k=64, entities=4000, relations=64, seed=263):
        def make():
            g = gen(seed)
            return {"head": torch.randint(0, entities, (b,), generator=g),
                    "rel": torch.randint(0, relations, (b,), generator=g),
                    "tails": torch.randint(0, entities, (b, k + 1), generator=g)}
        return make

    def series(b=16, t=48, f=16, seed=264):
        def make():
            g = gen(seed)
            mask = (torch.rand(b, t, f, generator=g) < 0.4).float()
            gaps = torch.rand(b, t, 1, generator=g) + 0.5
            # delta: time since each feature was last observed
            delta = torch.zeros(b, t, f)
            for i in range(1, t):
                delta[:, i] = gaps[:, i] + (1 - mask[:, i - 1]) * delta[:, i - 1]
            return {"x": torch.randn(b, t, f, generator=g) * mask, "mask": mask, "delta": delta}
        return make

    def images(b=4, size=32, seed=265):
        def make():
            g = gen(seed)
            x = torch.randint(0, 256, (b, 3, size, size), generator=g).float() / 127.5 - 1
            return {"x": x}
        return make

    def meshes(b=4, grid=24, seed=266):
        def make():
            g = gen(seed)
            u = torch.linspace(0, 1, grid)
            ys, xs = torch.meshgrid(u, u, indexing="ij")
            base = torch.stack([xs, ys, torch.zeros_like(xs)], -1).reshape(1, -1, 3)
            amp = torch.rand(b, 1, 1, generator=g) * 0.3
            freq = torch.rand(b, 1, 1, generator=g) * 4 + 1
            z = amp * torch.sin(freq * math.pi * base[..., :1]) * \
                torch.cos(freq * math.pi * base[..., 1:2])
            noise = torch.randn(b, grid * grid, 3, generator=g) * 0.005
            return {"verts": base + torch.cat([torch.zeros(b, grid * grid, 2), z], -1) + noise}
        return make

    return {
        "slowfast_mini": (SlowFast, (2, 3, 16, 48, 48)),
        "bisenet_arm": (BiSeNet, (2, 3, 128, 128)),
        "chebnet_graph": (ChebNet, graphs()),
        "neumf_ncf": (NeuMF, pairs()),
        "fcos_head": (FCOS, (2, 3, 128, 128)),
        "yolov4_csp_mish": (YOLOv4CSP, (1, 3, 128, 128)),
        "attention_unet": (AttUNet, (2, 3, 64, 64)),
        "pvtv2_sra": (PVTv2, (4, 3, 64, 64)),
        "rotate_kg": (RotatE, triples()),
        "grud_irregular": (GRUD, series()),
        "pixelcnnpp_dlml": (DLMLNet, images()),
        "mesh_normals": (MeshNet, meshes()),
    }
