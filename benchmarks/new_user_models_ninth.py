"""The ninth round of ``bench_new_user_models``: LeViT (an attention-bias table gathered by a
relative-offset index, Hardswish, BatchNorm1d after linear layers), DeBERTa's disentangled
attention (content-to-position and position-to-content scores gathered from clamped relative
distances), a HiFi-GAN generator (weight-normalized convs by parametrization, ConvTranspose1d,
dilated residual stacks, LeakyReLU), PatchTST (RevIN, ``Tensor.unfold`` patching, BatchNorm
transformer), DLinear (replicate-padded moving average by AvgPool1d), SchNet (``torch.cdist``,
Gaussian radial bases, cosine cutoff, shifted softplus), a YOLOv5 (Focus space-to-depth by
strided slicing, C3, SPPF's chained max pools, grid decode), CenterNet's decode (3x3 max-pool
peak keeping, ``topk``, ``gather`` of sizes and offsets), ALBERT (factorized embeddings, one layer
shared by every depth, ``scaled_dot_product_attention``), a Set Transformer (ISAB with induced
points, PMA pooling), DCN-v2 with bucketized dense features (``torch.bucketize``,
``EmbeddingBag``, low-rank cross layers), a speech LSTM with projections (``proj_size``), a
T2T-ViT (``nn.Unfold`` soft splits), a bicubic-upsampling VDSR, FuseFormer's soft split and
composition (``nn.Fold`` over overlapping patches), an ArcFace embedder (PReLU, BatchNorm1d,
``F.normalize`` cosine logits) and a CLIP image tower that resizes its input as torchvision's
``Resize`` does (``antialias=True``). Kept apart so the main script stays readable."""

from __future__ import annotations


def ninth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import itertools
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- LeViT -----------------------------------------------------------------------------
    class LinearBN(nn.Module):
        """A bias-free linear layer followed by BatchNorm1d over the flattened tokens."""

        def __init__(self, i, o):
            super().__init__()
            self.lin, self.bn = nn.Linear(i, o, bias=False), nn.BatchNorm1d(o)

        def forward(self, x):
            return self.bn(self.lin(x).flatten(0, 1)).reshape(x.shape[0], x.shape[1], -1)

    class LeViTAttention(nn.Module):
        """Per-head learned biases, one per absolute (dy, dx) offset between two positions of
        the ``res`` x ``res`` grid, gathered into an N x N table by an index buffer."""

        def __init__(self, d, heads, key_dim, res):
            super().__init__()
            self.h, self.kd, self.vd = heads, key_dim, 2 * key_dim
            self.qkv = LinearBN(d, heads * (2 * key_dim + self.vd))
            self.proj = nn.Sequential(nn.Hardswish(), LinearBN(heads * self.vd, d))
            pts = list(itertools.product(range(res), range(res)))
            offsets, idxs = {}, []
            for p1 in pts:
                for p2 in pts:
                    off = (abs(p1[0] - p2[0]), abs(p1[1] - p2[1]))
                    idxs.append(offsets.setdefault(off, len(offsets)))
            self.biases = nn.Parameter(0.1 * torch.randn(heads, len(offsets)))
            self.register_buffer("bias_idx", torch.tensor(idxs).view(len(pts), len(pts)))

        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = self.qkv(x).view(b, n, self.h, -1).split([self.kd, self.kd, self.vd], 3)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            a = q @ k.transpose(-2, -1) * self.kd ** -0.5 + self.biases[:, self.bias_idx]
            y = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, n, self.h * self.vd)
            return self.proj(y)

    class LeViTMini(nn.Module):
        def __init__(self, d=128, depth=3, classes=100):
            super().__init__()
            def cb(i, o):
                return [nn.Conv2d(i, o, 3, 2, 1, bias=False), nn.BatchNorm2d(o)]
            self.stem = nn.Sequential(*cb(3, 16), nn.Hardswish(), *cb(16, 32), nn.Hardswish(),
                                      *cb(32, 64), nn.Hardswish(), *cb(64, d))
            self.attn = nn.ModuleList([LeViTAttention(d, 4, 16, 8) for _ in range(depth)])
            self.mlp = nn.ModuleList([nn.Sequential(LinearBN(d, 2 * d), nn.Hardswish(),
                                                    LinearBN(2 * d, d)) for _ in range(depth)])
            self.head = nn.Sequential(nn.BatchNorm1d(d), nn.Linear(d, classes))

        def forward(self, x):
            x = self.stem(x).flatten(2).transpose(1, 2)
            for a, m in zip(self.attn, self.mlp, strict=True):
                x = x + a(x)
                x = x + m(x)
            return self.head(x.mean(1))

    # -- DeBERTa ---------------------------------------------------------------------------
    class DisentangledAttention(nn.Module):
        """Content-to-content, content-to-position and position-to-content scores; relative
        distances clamped to [-k, k) index a shared table of 2k position embeddings, each
        score table read back per (i, j) by ``gather``; scaled by 1/sqrt(3 d_head)."""

        def __init__(self, d, heads, n, k):
            super().__init__()
            self.h, self.hd, self.k = heads, d // heads, k
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.pos_q, self.pos_k = nn.Linear(d, d), nn.Linear(d, d)
            self.norm = nn.LayerNorm(d)
            pos = torch.arange(n)
            rel = torch.clamp(pos[:, None] - pos[None, :], -k, k - 1) + k
            self.register_buffer("c2p", rel)
            self.register_buffer("p2c", torch.clamp(-(pos[:, None] - pos[None, :]), -k, k - 1)
                                 + k)

        def heads(self, t):
            return t.view(t.shape[0], -1, self.h, self.hd).transpose(1, 2)

        def forward(self, x, rel_emb):
            b, n, d = x.shape
            q, k, v = (self.heads(t) for t in self.qkv(x).chunk(3, -1))
            pk = self.heads(self.pos_k(rel_emb)[None])       # 1 H 2k hd
            pq = self.heads(self.pos_q(rel_emb)[None])
            c2c = q @ k.transpose(-1, -2)
            c2p = torch.gather(q @ pk.transpose(-1, -2), -1,
                               self.c2p.expand(b, self.h, n, n))
            p2c = torch.gather(k @ pq.transpose(-1, -2), -1,
                               self.p2c.expand(b, self.h, n, n)).transpose(-1, -2)
            a = ((c2c + c2p + p2c) / math.sqrt(3 * self.hd)).softmax(-1)
            y = (a @ v).transpose(1, 2).reshape(b, n, d)
            return self.norm(x + self.o(y))

    class DeBERTaMini(nn.Module):
        def __init__(self, vocab=2000, d=128, n=64, depth=2, k=16):
            super().__init__()
            self.emb, self.rel = nn.Embedding(vocab, d), nn.Parameter(torch.randn(2 * k, d))
            self.ln = nn.LayerNorm(d)
            self.attn = nn.ModuleList([DisentangledAttention(d, 4, n, k) for _ in range(depth)])
            self.ff = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                                   nn.Linear(4 * d, d)) for _ in range(depth)])
            self.fn = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.cls = nn.Linear(d, 3)

        def forward(self, idx):
            x = self.ln(self.emb(idx))
            for a, f, nrm in zip(self.attn, self.ff, self.fn, strict=True):
                x = a(x, self.rel)
                x = nrm(x + f(x))
            return self.cls(x[:, 0])

    def tokens(vocab, n, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"idx": torch.randint(0, vocab, (1, n), generator=g)}
        return make

    # -- HiFi-GAN --------------------------------------------------------------------------
    wn = nn.utils.parametrizations.weight_norm

    class HiFiRes(nn.Module):
        """Kernel-3 residual stack at dilations 1, 3, 5, each a LeakyReLU + dilated
        weight-normed conv + LeakyReLU + plain weight-normed conv."""

        def __init__(self, c):
            super().__init__()
            self.c1 = nn.ModuleList([wn(nn.Conv1d(c, c, 3, 1, dil, dil)) for dil in (1, 3, 5)])
            self.c2 = nn.ModuleList([wn(nn.Conv1d(c, c, 3, 1, 1)) for _ in range(3)])

        def forward(self, x):
            for a, b in zip(self.c1, self.c2, strict=True):
                x = x + b(F.leaky_relu(a(F.leaky_relu(x, 0.1)), 0.1))
            return x

    class HiFiGANMini(nn.Module):
        def __init__(self, mels=40, c=96, ups=(8, 8)):
            super().__init__()
            self.pre = wn(nn.Conv1d(mels, c, 7, 1, 3))
            self.ups, self.res = nn.ModuleList(), nn.ModuleList()
            for i, u in enumerate(ups):
                ci, co = c // 2 ** i, c // 2 ** (i + 1)
                self.ups.append(wn(nn.ConvTranspose1d(ci, co, 2 * u, u, u // 2)))
                self.res.append(HiFiRes(co))
            self.post = wn(nn.Conv1d(c // 2 ** len(ups), 1, 7, 1, 3))

        def forward(self, x):
            x = self.pre(x)
            for up, res in zip(self.ups, self.res, strict=True):
                x = res(up(F.leaky_relu(x, 0.1)))
            return torch.tanh(self.post(F.leaky_relu(x)))

    # -- PatchTST / DLinear ----------------------------------------------------------------
    class BNTransformerLayer(nn.Module):
        """Post-norm attention and feed-forward with BatchNorm1d over the model dimension."""

        def __init__(self, d, heads):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.bn1, self.bn2 = nn.BatchNorm1d(d), nn.BatchNorm1d(d)
            self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

        def forward(self, x):
            x = self.bn1((x + self.attn(x, x, x, need_weights=False)[0]).transpose(1, 2))
            x = x.transpose(1, 2)
            return self.bn2((x + self.ff(x)).transpose(1, 2)).transpose(1, 2)

    class PatchTSTMini(nn.Module):
        """Channel-independent: each series normalized by its own mean and std (RevIN),
        end-padded by replication, cut into overlapping patches by ``Tensor.unfold``,
        embedded, encoded, flattened to the horizon and de-normalized."""

        def __init__(self, length=336, horizon=96, patch=16, stride=8, d=64, depth=2):
            super().__init__()
            self.patch, self.stride = patch, stride
            n = (length + stride - patch) // stride + 1
            self.emb, self.pos = nn.Linear(patch, d), nn.Parameter(0.02 * torch.randn(n, d))
            self.rev_w, self.rev_b = nn.Parameter(torch.ones(1)), nn.Parameter(torch.zeros(1))
            self.layers = nn.ModuleList([BNTransformerLayer(d, 4) for _ in range(depth)])
            self.head = nn.Linear(n * d, horizon)

        def forward(self, x):                              # B C L
            b, c, _ = x.shape
            mu = x.mean(-1, keepdim=True)
            sd = torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
            x = (x - mu) / sd * self.rev_w + self.rev_b
            x = torch.cat([x, x[..., -1:].expand(-1, -1, self.stride)], -1)
            p = x.unfold(-1, self.patch, self.stride)      # B C N P
            h = self.emb(p).flatten(0, 1) + self.pos
            for layer in self.layers:
                h = layer(h)
            y = self.head(h.reshape(b, c, -1))
            return (y - self.rev_b) / (self.rev_w + 1e-10) * sd + mu

    class DLinear(nn.Module):
        """Series decomposition: a moving average (AvgPool1d over the series padded by
        repeating its first and last values) is the trend, the rest the season; one
        linear map over time each, summed."""

        def __init__(self, length=336, horizon=96, kernel=25):
            super().__init__()
            self.half = (kernel - 1) // 2
            self.avg = nn.AvgPool1d(kernel, 1)
            self.trend, self.season = nn.Linear(length, horizon), nn.Linear(length, horizon)

        def forward(self, x):                              # B L C
            front = x[:, :1].repeat(1, self.half, 1)
            end = x[:, -1:].repeat(1, self.half, 1)
            t = self.avg(torch.cat([front, x, end], 1).permute(0, 2, 1))
            s = x.permute(0, 2, 1) - t
            return (self.trend(t) + self.season(s)).permute(0, 2, 1)

    # -- SchNet ----------------------------------------------------------------------------
    class SSP(nn.Module):
        def forward(self, x):
            return F.softplus(x) - math.log(2.0)

    class Interaction(nn.Module):
        """Continuous-filter convolution: filters from the distances' radial bases times a
        cosine cutoff, summed over neighbours of the atom-wise features."""

        def __init__(self, d, rbf):
            super().__init__()
            self.filt = nn.Sequential(nn.Linear(rbf, d), SSP(), nn.Linear(d, d))
            self.in2f = nn.Linear(d, d, bias=False)
            self.out = nn.Sequential(nn.Linear(d, d), SSP(), nn.Linear(d, d))

        def forward(self, h, rbf, cut):
            w = self.filt(rbf) * cut[..., None]             # B N N D
            m = (w * self.in2f(h)[:, None]).sum(2)
            return h + self.out(m)

    class SchNetMini(nn.Module):
        def __init__(self, d=64, n_rbf=32, cutoff=5.0, depth=3):
            super().__init__()
            self.emb, self.cutoff = nn.Embedding(10, d), cutoff
            self.register_buffer("mu", torch.linspace(0, cutoff, n_rbf))
            self.gamma = 0.5 / (cutoff / (n_rbf - 1)) ** 2
            self.blocks = nn.ModuleList([Interaction(d, n_rbf) for _ in range(depth)])
            self.out = nn.Sequential(nn.Linear(d, d // 2), SSP(), nn.Linear(d // 2, 1))

        def forward(self, z, pos):
            dist = torch.cdist(pos, pos)
            rbf = torch.exp(-self.gamma * (dist[..., None] - self.mu) ** 2)
            eye = torch.eye(pos.shape[1])
            cut = 0.5 * (torch.cos(dist * math.pi / self.cutoff) + 1) \
                * (dist < self.cutoff).float() * (1 - eye)
            h = self.emb(z)
            for blk in self.blocks:
                h = blk(h, rbf, cut)
            return self.out(h).sum(1)

    def molecule():
        g = torch.Generator().manual_seed(9)
        return {"z": torch.randint(0, 10, (1, 24), generator=g),
                "pos": 2.0 * torch.randn(1, 24, 3, generator=g)}

    # -- YOLOv5 ----------------------------------------------------------------------------
    def cbs(i, o, k=1, s=1):
        return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, bias=False), nn.BatchNorm2d(o),
                             nn.SiLU())

    class Focus(nn.Module):
        """Space to depth by four strided slices, then a conv."""

        def __init__(self, i, o):
            super().__init__()
            self.conv = cbs(4 * i, o, 3)

        def forward(self, x):
            return self.conv(torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2],
                                        x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1))

    class C3(nn.Module):
        def __init__(self, i, o, n=1):
            super().__init__()
            m = o // 2
            self.a, self.b, self.out = cbs(i, m), cbs(i, m), cbs(2 * m, o)
            self.m = nn.ModuleList([nn.Sequential(cbs(m, m), cbs(m, m, 3)) for _ in range(n)])

        def forward(self, x):
            y = self.a(x)
            for blk in self.m:
                y = y + blk(y)
            return self.out(torch.cat([y, self.b(x)], 1))

    class SPPF(nn.Module):
        """Three chained 5x5 stride-1 max pools, all four stages concatenated."""

        def __init__(self, i, o):
            super().__init__()
            self.a, self.b = cbs(i, i // 2), cbs(2 * i, o)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            x = self.a(x)
            y1 = self.pool(x)
            y2 = self.pool(y1)
            return self.b(torch.cat([x, y1, y2, self.pool(y2)], 1))

    class YOLOv5Mini(nn.Module):
        """Focus stem, C3 stages to stride 32, SPPF, one detection level decoded to boxes
        (sigmoid, grid offsets, anchor-scaled squares)."""

        def __init__(self, classes=20, na=3, size=160):
            super().__init__()
            self.body = nn.Sequential(Focus(3, 16), cbs(16, 32, 3, 2), C3(32, 32),
                                      cbs(32, 64, 3, 2), C3(64, 64, 2), cbs(64, 128, 3, 2),
                                      C3(128, 128), cbs(128, 256, 3, 2), SPPF(256, 256))
            self.na, self.no, g = na, classes + 5, size // 32
            self.det = nn.Conv2d(256, na * self.no, 1)
            ys, xs = torch.meshgrid(torch.arange(g), torch.arange(g), indexing="ij")
            self.register_buffer("grid", torch.stack([xs, ys], -1).float().view(1, 1, g, g, 2))
            self.register_buffer("anchor", torch.tensor([[116., 90.], [156., 198.],
                                                         [373., 326.]]).view(1, na, 1, 1, 2))

        def forward(self, x):
            p = self.det(self.body(x))
            b, _, g, _ = p.shape
            p = p.view(b, self.na, self.no, g, g).permute(0, 1, 3, 4, 2).sigmoid()
            xy = (p[..., :2] * 2 - 0.5 + self.grid) * 32
            wh = (p[..., 2:4] * 2) ** 2 * self.anchor
            return torch.cat([xy, wh, p[..., 4:]], -1).view(b, -1, self.no)

    # -- CenterNet -------------------------------------------------------------------------
    class CenterNetMini(nn.Module):
        """A strided conv backbone, two ConvTranspose2d upsamplings, heatmap / size /
        offset heads; decoded by keeping 3x3 max-pool peaks, the top 32 scores over all
        classes, and the size and offset gathered at their positions."""

        def __init__(self, classes=8, k=32):
            super().__init__()
            self.k, self.classes = k, classes
            layers, c = [], 3
            for o in (32, 64, 128, 128):
                layers += [nn.Conv2d(c, o, 3, 2, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
                c = o
            for o in (64, 64):
                layers += [nn.ConvTranspose2d(c, o, 4, 2, 1, bias=False), nn.BatchNorm2d(o),
                           nn.ReLU()]
                c = o
            self.body = nn.Sequential(*layers)

            def head(o):
                return nn.Sequential(nn.Conv2d(c, 32, 3, 1, 1), nn.ReLU(), nn.Conv2d(32, o, 1))
            self.hm, self.wh, self.off = head(classes), head(2), head(2)

        def forward(self, x):
            f = self.body(x)
            heat = self.hm(f).sigmoid()
            b, _, h, w = heat.shape
            heat = heat * (F.max_pool2d(heat, 3, 1, 1) == heat).float()
            scores, inds = heat.view(b, -1).topk(self.k)
            cls = torch.div(inds, h * w, rounding_mode="floor")
            pix = inds % (h * w)
            ys = torch.div(pix, w, rounding_mode="floor").float()
            xs = (pix % w).float()
            idx = pix[:, None].expand(b, 2, self.k)
            wh = self.wh(f).view(b, 2, -1).gather(2, idx)
            off = self.off(f).view(b, 2, -1).gather(2, idx)
            cx, cy = xs + off[:, 0], ys + off[:, 1]
            return torch.stack([cx - wh[:, 0] / 2, cy - wh[:, 1] / 2, cx + wh[:, 0] / 2,
                                cy + wh[:, 1] / 2, scores, cls.float()], -1)

    # -- ALBERT ----------------------------------------------------------------------------
    class ALBERTLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h = heads
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff1, self.ff2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, mask):
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = self.ln1(x + self.o(y.transpose(1, 2).reshape(b, n, d)))
            return self.ln2(x + self.ff2(F.gelu(self.ff1(x), approximate="tanh")))

    class ALBERTMini(nn.Module):
        """Factorized embeddings (vocab -> 64 -> d), one transformer layer applied at each
        of six depths, a padding mask as an additive float bias, a tanh pooler."""

        def __init__(self, vocab=3000, e=64, d=192, depth=6):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, e), nn.Embedding(128, e)
            self.eln, self.proj = nn.LayerNorm(e), nn.Linear(e, d)
            self.layer, self.depth = ALBERTLayer(d, 4), depth
            self.pool, self.cls = nn.Linear(d, d), nn.Linear(d, 2)

        def forward(self, idx, attn):
            n = idx.shape[1]
            x = self.proj(self.eln(self.tok(idx) + self.pos(torch.arange(n))))
            mask = ((1.0 - attn[:, None, None, :].float()) * -1e4)
            for _ in range(self.depth):
                x = self.layer(x, mask)
            return self.cls(torch.tanh(self.pool(x[:, 0])))

    def albert_inputs():
        g = torch.Generator().manual_seed(21)
        attn = torch.ones(1, 96, dtype=torch.long)
        attn[:, 80:] = 0
        return {"idx": torch.randint(0, 3000, (1, 96), generator=g), "attn": attn}

    # -- Set Transformer -------------------------------------------------------------------
    class MAB(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))

        def forward(self, q, kv):
            h = self.ln1(q + self.attn(q, kv, kv, need_weights=False)[0])
            return self.ln2(h + self.ff(h))

    class ISAB(nn.Module):
        """Induced-set attention: m learned points attend to the set, the set to them."""

        def __init__(self, d, heads, m):
            super().__init__()
            self.ind = nn.Parameter(torch.randn(1, m, d))
            self.m1, self.m2 = MAB(d, heads), MAB(d, heads)

        def forward(self, x):
            h = self.m1(self.ind.expand(x.shape[0], -1, -1), x)
            return self.m2(x, h)

    class SetTransformerMini(nn.Module):
        """Point cloud classifier: ISAB encoder, PMA pooling to 2 seeds, self-attention over
        the seeds, a linear head on their flattening."""

        def __init__(self, d=128, classes=40):
            super().__init__()
            self.inp = nn.Linear(3, d)
            self.enc = nn.Sequential(ISAB(d, 4, 16), ISAB(d, 4, 16))
            self.seeds = nn.Parameter(torch.randn(1, 2, d))
            self.pma, self.sab = MAB(d, 4), MAB(d, 4)
            self.head = nn.Linear(2 * d, classes)

        def forward(self, x):
            h = self.enc(self.inp(x))
            s = self.pma(self.seeds.expand(x.shape[0], -1, -1), h)
            return self.head(self.sab(s, s).flatten(1))

    # -- DCN-v2 ----------------------------------------------------------------------------
    class DCNv2Rec(nn.Module):
        """CTR model: dense features bucketized at fixed boundaries and embedded, one
        categorical id per field, a multi-hot field averaged by EmbeddingBag; low-rank
        cross layers x0 * (U (V x) + b) + x beside a deep tower; a sigmoid."""

        def __init__(self, n_dense=8, fields=6, card=1000, e=16, cross=3, rank=32):
            super().__init__()
            self.register_buffer("bounds", torch.linspace(-2.0, 2.0, 15))
            self.dense_emb = nn.Embedding(n_dense * 16, e)
            self.register_buffer("dense_off", torch.arange(n_dense) * 16)
            self.cat_emb = nn.Embedding(fields * card, e)
            self.register_buffer("cat_off", torch.arange(fields) * card)
            self.bag = nn.EmbeddingBag(5000, e, mode="mean")
            d = (n_dense + fields + 1) * e
            self.v = nn.ModuleList([nn.Linear(d, rank, bias=False) for _ in range(cross)])
            self.u = nn.ModuleList([nn.Linear(rank, d) for _ in range(cross)])
            self.deep = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 128),
                                      nn.ReLU())
            self.out = nn.Linear(d + 128, 1)

        def forward(self, dense, cat, tags):
            b = dense.shape[0]
            dz = self.dense_emb(torch.bucketize(dense, self.bounds) + self.dense_off)
            x0 = torch.cat([dz.flatten(1), self.cat_emb(cat + self.cat_off).flatten(1),
                            self.bag(tags)], 1).view(b, -1)
            x = x0
            for v, u in zip(self.v, self.u, strict=True):
                x = x0 * u(v(x)) + x
            return torch.sigmoid(self.out(torch.cat([x, self.deep(x0)], 1)))

    def ctr_inputs():
        g = torch.Generator().manual_seed(31)
        return {"dense": torch.randn(16, 8, generator=g),
                "cat": torch.randint(0, 1000, (16, 6), generator=g),
                "tags": torch.randint(0, 5000, (16, 10), generator=g)}

    # -- speech LSTM with projections ------------------------------------------------------
    class LSTMProj(nn.Module):
        """Two LSTM layers of 256 cells projected to 96 (``proj_size``), frame classifier."""

        def __init__(self, feats=40, hidden=256, proj=96, classes=48):
            super().__init__()
            self.lstm = nn.LSTM(feats, hidden, 2, batch_first=True, proj_size=proj)
            self.out = nn.Linear(proj, classes)

        def forward(self, x):
            return self.out(self.lstm(x)[0]).log_softmax(-1)

    # -- T2T-ViT ---------------------------------------------------------------------------
    class TokenAttention(nn.Module):
        """Single-head attention that changes the width (as T2T's token transformers do)."""

        def __init__(self, i, d):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(i), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(i, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).chunk(3, -1)
            a = (q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).softmax(-1)
            x = v + self.proj(a @ v)
            return x + self.mlp(self.ln2(x))

    class T2TViTMini(nn.Module):
        """Soft splits by nn.Unfold (7x7 stride 4, then 3x3 stride 2 twice) with token
        attention between, the tokens folded back to a grid each time; a ViT on top."""

        def __init__(self, d=128, depth=2, classes=100):
            super().__init__()
            self.sp0, self.sp1, self.sp2 = (nn.Unfold(7, stride=4, padding=2),
                                            nn.Unfold(3, stride=2, padding=1),
                                            nn.Unfold(3, stride=2, padding=1))
            self.t1, self.t2 = TokenAttention(3 * 49, 32), TokenAttention(32 * 9, 32)
            self.emb = nn.Linear(32 * 9, d)
            self.cls = nn.Parameter(torch.zeros(1, 1, d))
            self.pos = nn.Parameter(0.02 * torch.randn(1, 65, d))
            self.vit = nn.ModuleList([nn.TransformerEncoderLayer(
                d, 4, 2 * d, dropout=0.0, activation="gelu", batch_first=True,
                norm_first=True) for _ in range(depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, x):
            b = x.shape[0]
            t = self.t1(self.sp0(x).transpose(1, 2))                 # B 32*32 32
            t = self.t2(self.sp1(t.transpose(1, 2).reshape(b, 32, 32, 32)).transpose(1, 2))
            t = self.sp2(t.transpose(1, 2).reshape(b, 32, 16, 16)).transpose(1, 2)
            t = torch.cat([self.cls.expand(b, -1, -1), self.emb(t)], 1) + self.pos
            for layer in self.vit:
                t = layer(t)
            return self.head(self.norm(t[:, 0]))

    # -- VDSR with bicubic upsampling ------------------------------------------------------
    class VDSRBicubic(nn.Module):
        """The low-resolution image upscaled 2x bicubically, a residual predicted by a plain
        3x3 conv stack on it, added."""

        def __init__(self, c=32, depth=8):
            super().__init__()
            layers = [nn.Conv2d(3, c, 3, 1, 1), nn.ReLU()]
            for _ in range(depth - 2):
                layers += [nn.Conv2d(c, c, 3, 1, 1), nn.ReLU()]
            self.body = nn.Sequential(*layers, nn.Conv2d(c, 3, 3, 1, 1))

        def forward(self, x):
            up = F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False)
            return (up + self.body(up)).clamp(0, 1)

    # -- FuseFormer -------------------------------------------------------------------------
    class SoftSplitCompose(nn.Module):
        """FuseFormer's feed-forward: tokens composed back to the frame by nn.Fold (the
        overlapping 7x7 stride-3 patches summed, divided by the overlap count), then split
        again by nn.Unfold, mixed by a linear layer in between."""

        def __init__(self, d, c, size, k=7, s=3, p=3):
            super().__init__()
            self.fold = nn.Fold(size, k, padding=p, stride=s)
            self.unfold = nn.Unfold(k, padding=p, stride=s)
            self.fc1, self.fc2 = nn.Linear(d, c * k * k), nn.Linear(c * k * k, d)
            ones = torch.ones(1, c * k * k, ((size[0] + 2 * p - k) // s + 1) ** 2)
            self.register_buffer("count", self.fold(ones))

        def forward(self, x):                                  # B L d
            h = self.fold(F.gelu(self.fc1(x)).transpose(1, 2)) / self.count
            return x + self.fc2(self.unfold(h).transpose(1, 2))

    class FuseFormerMini(nn.Module):
        """Video inpainting: a conv encoder per frame, soft split to overlapping patch
        tokens of every frame, transformer blocks whose feed-forward is the soft
        composition above, composed back and decoded by a transposed conv."""

        def __init__(self, c=32, d=128, k=7, s=3, p=3, frames=2, depth=2):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(4, c, 3, 2, 1), nn.LeakyReLU(0.2),
                                     nn.Conv2d(c, c, 3, 1, 1), nn.LeakyReLU(0.2))
            self.size, self.frames = (32, 32), frames
            self.split = nn.Unfold(k, padding=p, stride=s)
            self.embed = nn.Linear(c * k * k, d)
            self.attn = nn.ModuleList([nn.MultiheadAttention(d, 4, batch_first=True)
                                       for _ in range(depth)])
            self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.ff = nn.ModuleList([SoftSplitCompose(d, c // 2, self.size, k, s, p)
                                     for _ in range(depth)])
            self.out = nn.Linear(d, c * k * k)
            self.compose = nn.Fold(self.size, k, padding=p, stride=s)
            self.dec = nn.Sequential(nn.ConvTranspose2d(c, c, 4, 2, 1), nn.LeakyReLU(0.2),
                                     nn.Conv2d(c, 3, 3, 1, 1))

        def forward(self, frames, masks):                     # B T 3 H W, B T 1 H W
            b, t = frames.shape[:2]
            x = torch.cat([frames * (1 - masks), masks], 2).flatten(0, 1)
            f = self.enc(x)
            tok = self.embed(self.split(f).transpose(1, 2))    # BT L d
            tok = tok.view(b, -1, tok.shape[-1])               # B (T L) d
            for a, n1, n2, ff in zip(self.attn, self.n1, self.n2, self.ff, strict=True):
                h = n1(tok)
                tok = tok + a(h, h, h, need_weights=False)[0]
                y = n2(tok).view(b * t, -1, tok.shape[-1])
                tok = ff(y).view(b, -1, tok.shape[-1])
            y = self.compose(self.out(tok.view(b * t, -1, tok.shape[-1])).transpose(1, 2))
            out = torch.tanh(self.dec(y + f)).view(b, t, 3, 64, 64)
            return frames * (1 - masks) + out * masks

    def video_inputs():
        g = torch.Generator().manual_seed(41)
        masks = torch.zeros(1, 2, 1, 64, 64)
        masks[..., 16:40, 20:48] = 1.0
        return {"frames": torch.rand(1, 2, 3, 64, 64, generator=g) * 2 - 1, "masks": masks}

    # -- ArcFace ----------------------------------------------------------------------------
    class IRBlock(nn.Module):
        """InsightFace's improved residual block: BN, conv, BN, PReLU, strided conv, BN."""

        def __init__(self, i, o, s):
            super().__init__()
            self.body = nn.Sequential(nn.BatchNorm2d(i), nn.Conv2d(i, o, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(o), nn.PReLU(o),
                                      nn.Conv2d(o, o, 3, s, 1, bias=False), nn.BatchNorm2d(o))
            self.short = nn.Sequential(nn.Conv2d(i, o, 1, s, bias=False), nn.BatchNorm2d(o)) \
                if s != 1 or i != o else nn.Identity()

        def forward(self, x):
            return self.body(x) + self.short(x)

    class ArcFaceMini(nn.Module):
        """An IR-ResNet face embedder (BN + dropout-free flatten + linear + BatchNorm1d to a
        128-d embedding), L2-normalized by F.normalize, scored against normalized class
        centres by cosine similarity times ArcFace's scale."""

        def __init__(self, ids=500, emb=128):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32),
                                      nn.PReLU(32))
            self.body = nn.Sequential(IRBlock(32, 32, 2), IRBlock(32, 64, 2), IRBlock(64, 64, 1),
                                      IRBlock(64, 128, 2), IRBlock(128, 128, 2))
            self.bn, self.fc = nn.BatchNorm2d(128), nn.Linear(128 * 7 * 7, emb)
            self.feat = nn.BatchNorm1d(emb)
            self.centres = nn.Parameter(torch.randn(ids, emb))

        def forward(self, x):
            e = self.feat(self.fc(self.bn(self.body(self.stem(x))).flatten(1)))
            return 64.0 * F.linear(F.normalize(e), F.normalize(self.centres, dim=1))

    # -- CLIP image tower with its preprocessing ----------------------------------------------
    class CLIPVisionResize(nn.Module):
        """A camera frame resized in the model as torchvision's Resize does on tensors
        (bilinear with antialias=True, 240x320 -> 112x112), normalized by CLIP's mean and std,
        a ViT of 16x16 patches (pre-norm, GELU), the class token projected and L2-normalized."""

        def __init__(self, d=192, depth=3, out=128):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.4815, 0.4578, 0.4082]).view(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor([0.2686, 0.2613, 0.2758]).view(1, 3, 1, 1))
            self.patch = nn.Conv2d(3, d, 16, 16, bias=False)
            self.cls = nn.Parameter(0.02 * torch.randn(1, 1, d))
            self.pos = nn.Parameter(0.02 * torch.randn(1, 50, d))
            self.pre = nn.LayerNorm(d)
            self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(
                d, 3, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                norm_first=True) for _ in range(depth)])
            self.post, self.proj = nn.LayerNorm(d), nn.Linear(d, out, bias=False)

        def forward(self, x):
            x = F.interpolate(x, size=(112, 112), mode="bilinear", antialias=True)
            x = self.patch((x - self.mean) / self.std).flatten(2).transpose(1, 2)
            x = self.pre(torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos)
            for blk in self.blocks:
                x = blk(x)
            return F.normalize(self.proj(self.post(x[:, 0])), dim=-1)

    def series(shape, axis, seed):
        """Noise plus a slow sine along the time ``axis``."""
        def make():
            g = torch.Generator().manual_seed(seed)
            view = [1] * len(shape)
            view[axis] = shape[axis]
            wave = torch.sin(0.1 * torch.arange(shape[axis]).float()).view(view)
            return {"x": torch.randn(*shape, generator=g) + wave}
        return make

    return {
        "levit_mini": (LeViTMini, (1, 3, 128, 128)),
        "deberta_mini": (DeBERTaMini, tokens(2000, 64, 11)),
        "hifigan_mini": (HiFiGANMini, (1, 40, 32)),
        "patchtst_mini": (PatchTSTMini, series((1, 7, 336), 2, 5)),
        "dlinear": (DLinear, series((1, 336, 7), 1, 6)),
        "schnet_mini": (SchNetMini, molecule),
        "yolov5_mini": (YOLOv5Mini, (1, 3, 160, 160)),
        "centernet_mini": (CenterNetMini, (1, 3, 128, 128)),
        "albert_mini": (ALBERTMini, albert_inputs),
        "set_transformer": (SetTransformerMini, (1, 256, 3)),
        "dcnv2_rec": (DCNv2Rec, ctr_inputs),
        "lstm_proj": (LSTMProj, (1, 100, 40)),
        "t2t_vit_mini": (T2TViTMini, (1, 3, 128, 128)),
        "vdsr_bicubic": (VDSRBicubic, lambda: {"x": torch.rand(1, 3, 64, 64)}),
        "fuseformer_mini": (FuseFormerMini, video_inputs),
        "arcface_mini": (ArcFaceMini, (1, 3, 112, 112)),
        "clip_vision_resize": (CLIPVisionResize, lambda: {"x": torch.rand(1, 3, 240, 320)}),
    }
