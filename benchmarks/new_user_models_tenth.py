"""The tenth round of ``bench_new_user_models``: GFNet (a global filter: ``torch.fft.rfft2``, a
complex weight, ``irfft2``), EfficientViT's ReLU linear attention (multi-scale depthwise
aggregation of q/k/v, ``F.pad`` of v with ones, a division by the padded column), a ViT with
token merging (ToMe's bipartite matching: ``argsort``, ``gather``, ``scatter_reduce`` mean), an
Instant-NGP hash-grid field (``floor``, int64 products, ``^`` and ``&`` on hashed corners, an
embedding gather, trilinear weights), RetNet (decay masks built in the graph from ``arange``,
``exp`` and ``tril``, GroupNorm over heads, a swish gate), the Differential Transformer (two
softmaxes subtracted with a re-parametrized lambda, ``nn.RMSNorm``), DiT (sinusoidal timestep
embedding, adaLN-Zero modulation, an ``einsum`` unpatchify), a leaky integrate-and-fire spiking
CNN (thresholds by comparison cast to float over unrolled time steps), RAFT (an all-pairs
correlation volume, its average-pooled pyramid, ``grid_sample`` window lookups, a ConvGRU
unrolled over refinements), SAM's mask decoder (random Fourier position encodings, two-way
attention, ``ConvTranspose2d`` + channel LayerNorm, hypernetwork masks), EnCodec's encoder
(reflect-padded strided Conv1d, ELU, an LSTM with a skip, a residual vector quantizer by
``argmin``), xLSTM's parallel mLSTM (``logsigmoid``, ``cumsum``, a max-stabilized exponential
gate matrix) and Restormer (transposed channel attention on L2-normalized rows, a gated
depthwise FFN, ``PixelUnshuffle``/``PixelShuffle``). Kept apart so the main script stays
readable."""

from __future__ import annotations


def tenth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    def mlp(d, hidden, act=nn.GELU):
        return nn.Sequential(nn.Linear(d, hidden), act(), nn.Linear(hidden, d))

    # -- GFNet -----------------------------------------------------------------------------
    class GlobalFilter(nn.Module):
        """Tokens on an h x w grid to the frequency domain, times a learned complex filter,
        and back (orthonormal FFTs)."""

        def __init__(self, d, h, w):
            super().__init__()
            self.h, self.w = h, w
            self.weight = nn.Parameter(0.02 * torch.randn(h, w // 2 + 1, d, 2))

        def forward(self, x):
            b, n, c = x.shape
            xf = torch.fft.rfft2(x.view(b, self.h, self.w, c), dim=(1, 2), norm="ortho")
            xf = xf * torch.view_as_complex(self.weight)
            y = torch.fft.irfft2(xf, s=(self.h, self.w), dim=(1, 2), norm="ortho")
            return y.reshape(b, n, c)

    class GFNetMini(nn.Module):
        def __init__(self, d=96, depth=4, grid=16, classes=100):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 4, 4)
            self.pos = nn.Parameter(0.02 * torch.randn(1, grid * grid, d))
            self.blocks = nn.ModuleList([nn.ModuleDict({
                "n1": nn.LayerNorm(d), "filter": GlobalFilter(d, grid, grid),
                "n2": nn.LayerNorm(d), "mlp": mlp(d, 4 * d)}) for _ in range(depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, x):
            x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
            for b in self.blocks:
                x = x + b["mlp"](b["n2"](b["filter"](b["n1"](x))))
            return self.head(self.norm(x).mean(1))

    # -- EfficientViT (MIT) ----------------------------------------------------------------
    class LiteMLA(nn.Module):
        """ReLU linear attention over q/k/v and their 5x5 depthwise-aggregated copies: v padded
        with a ones column, so one matmul gives both the numerator and the normalizer."""

        def __init__(self, c, dim=16):
            super().__init__()
            self.dim, heads = dim, c // dim
            self.qkv = nn.Conv2d(c, 3 * c, 1, bias=False)
            self.agg = nn.Sequential(
                nn.Conv2d(3 * c, 3 * c, 5, padding=2, groups=3 * c, bias=False),
                nn.Conv2d(3 * c, 3 * c, 1, groups=3 * heads, bias=False))
            self.proj = nn.Sequential(nn.Conv2d(2 * c, c, 1, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            b, _, h, w = x.shape
            qkv = self.qkv(x)
            ms = torch.cat([qkv, self.agg(qkv)], 1)
            ms = ms.reshape(b, -1, 3 * self.dim, h * w).transpose(-1, -2)
            q, k, v = ms.split(self.dim, -1)
            q, k = F.relu(q), F.relu(k)
            v = F.pad(v, (0, 1), mode="constant", value=1.0)
            out = q @ (k.transpose(-1, -2) @ v)
            out = out[..., :-1] / (out[..., -1:] + 1e-15)
            return self.proj(out.transpose(-1, -2).reshape(b, -1, h, w))

    class MBConv(nn.Module):
        def __init__(self, i, o, stride=1, e=4):
            super().__init__()
            m = i * e
            self.body = nn.Sequential(
                nn.Conv2d(i, m, 1), nn.Hardswish(),
                nn.Conv2d(m, m, 3, stride, 1, groups=m), nn.Hardswish(),
                nn.Conv2d(m, o, 1, bias=False), nn.BatchNorm2d(o))
            self.res = stride == 1 and i == o

        def forward(self, x):
            y = self.body(x)
            return x + y if self.res else y

    class EfficientViTMini(nn.Module):
        def __init__(self, classes=100):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                      nn.Hardswish())
            self.convs = nn.Sequential(MBConv(16, 32, 2), MBConv(32, 32), MBConv(32, 64, 2),
                                       MBConv(64, 64, 2))
            self.vit = nn.ModuleList([nn.ModuleList([LiteMLA(64), MBConv(64, 64)])
                                      for _ in range(2)])
            self.down = MBConv(64, 128, 2)
            self.vit2 = nn.ModuleList([nn.ModuleList([LiteMLA(128), MBConv(128, 128)])
                                       for _ in range(2)])
            self.head = nn.Sequential(nn.Conv2d(128, 256, 1), nn.Hardswish(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                      nn.Linear(256, classes))

        def forward(self, x):
            x = self.convs(self.stem(x))
            for att, ffn in self.vit:
                x = ffn(x + att(x))
            x = self.down(x)
            for att, ffn in self.vit2:
                x = ffn(x + att(x))
            return self.head(x)

    # -- ToMe ------------------------------------------------------------------------------
    def merge_tokens(x, r):
        """ToMe's bipartite soft matching: alternate tokens split into sets A and B; the ``r``
        A tokens most similar to some B token are averaged into it, the rest kept."""
        metric = x / x.norm(dim=-1, keepdim=True)
        a, b = metric[:, ::2], metric[:, 1::2]
        node_max, node_idx = (a @ b.transpose(-1, -2)).max(dim=-1)
        edge_idx = node_max.argsort(dim=-1, descending=True)[..., None]
        unm_idx, src_idx = edge_idx[:, r:], edge_idx[:, :r]
        dst_idx = node_idx[..., None].gather(1, src_idx)
        xa, xb = x[:, ::2], x[:, 1::2]
        c = x.shape[-1]
        unm = xa.gather(1, unm_idx.expand(-1, -1, c))
        src = xa.gather(1, src_idx.expand(-1, -1, c))
        dst = xb.scatter_reduce(1, dst_idx.expand(-1, -1, c), src, reduce="mean")
        return torch.cat([unm, dst], 1)

    class ToMeViT(nn.Module):
        def __init__(self, d=128, depth=4, r=8, classes=100):
            super().__init__()
            self.r = r
            self.patch = nn.Conv2d(3, d, 16, 16)
            self.pos = nn.Parameter(0.02 * torch.randn(1, 64, d))
            self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(
                d, 4, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                norm_first=True) for _ in range(depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, x):
            x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
            for blk in self.blocks:
                x = merge_tokens(blk(x), self.r)
            return self.head(self.norm(x).mean(1))

    # -- Instant-NGP -----------------------------------------------------------------------
    class HashGridField(nn.Module):
        """Multi-resolution hash encoding: per level, the 8 corners of each point's cell are
        hashed (coordinates times primes, XORed, masked to the table size), their features
        gathered and blended trilinearly; a small MLP gives density and colour."""

        def __init__(self, levels=8, log2_table=12, feat=2, base=16, growth=1.5):
            super().__init__()
            self.res = [float(math.floor(base * growth ** lvl)) for lvl in range(levels)]
            self.mask = 2 ** log2_table - 1
            self.table = nn.Parameter(0.5 * torch.rand(levels, 2 ** log2_table, feat) - 0.25)
            self.register_buffer("primes", torch.tensor([1, 2654435761, 805459861]))
            self.register_buffer("corners", torch.tensor(
                [[(c >> 2) & 1, (c >> 1) & 1, c & 1] for c in range(8)]))
            self.mlp = nn.Sequential(nn.Linear(levels * feat, 64), nn.ReLU(),
                                     nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))

        def forward(self, x):
            feats = []
            for lvl, res in enumerate(self.res):
                p = x * res
                p0 = torch.floor(p)
                frac = p - p0
                c = p0.long()[:, None, :] + self.corners
                h = c * self.primes
                idx = (h[..., 0] ^ h[..., 1] ^ h[..., 2]) & self.mask
                f = self.table[lvl][idx]
                w = torch.where(self.corners.bool(), frac[:, None], 1 - frac[:, None]).prod(-1)
                feats.append((f * w[..., None]).sum(1))
            out = self.mlp(torch.cat(feats, -1))
            return torch.cat([F.softplus(out[:, :1]), torch.sigmoid(out[:, 1:])], -1)

    # -- RetNet ----------------------------------------------------------------------------
    class Retention(nn.Module):
        """Parallel retention: q k^T times a per-head decay mask gamma^(i-j) (zero above the
        diagonal) built in the graph, rows scaled by their absolute sums, GroupNorm over
        heads, a swish gate."""

        def __init__(self, d, heads):
            super().__init__()
            self.h, self.hd = heads, d // heads
            self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
            self.g, self.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.register_buffer("log_gamma",
                                 torch.log(1 - 2.0 ** (-5 - torch.arange(heads).float())))
            self.gn = nn.GroupNorm(heads, d, affine=False)

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = (m(x).view(b, n, self.h, self.hd).transpose(1, 2)
                       for m in (self.q, self.k, self.v))
            pos = torch.arange(n, device=x.device)
            diff = (pos[:, None] - pos[None, :]).float()
            decay = torch.exp(self.log_gamma[:, None, None] * diff)
            decay = decay.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), 0.0)
            decay = decay / decay.sum(-1, keepdim=True).sqrt()
            s = (q @ k.transpose(-1, -2)) * self.hd ** -0.5 * decay
            s = s / s.abs().sum(-1, keepdim=True).clamp(min=1.0)
            y = (s @ v).transpose(1, 2).reshape(b * n, d)
            y = self.gn(y).view(b, n, d)
            return self.o(F.silu(self.g(x)) * y)

    class RetNetMini(nn.Module):
        def __init__(self, vocab=1000, d=128, heads=4, depth=3):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList([nn.ModuleDict({
                "n1": nn.LayerNorm(d), "ret": Retention(d, heads), "n2": nn.LayerNorm(d),
                "ffn": mlp(d, 2 * d)}) for _ in range(depth)])
            self.norm, self.out = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.emb(idx)
            for lyr in self.layers:
                x = x + lyr["ret"](lyr["n1"](x))
                x = x + lyr["ffn"](lyr["n2"](x))
            return self.out(self.norm(x))

    # -- Differential Transformer ----------------------------------------------------------
    class DiffAttention(nn.Module):
        """Two causal softmax maps per head from split q/k halves, the second subtracted with
        weight lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init; per-head RMSNorm."""

        def __init__(self, d, heads, layer):
            super().__init__()
            self.h, self.hd = heads, d // heads // 2
            self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
            self.o = nn.Linear(d, d, bias=False)
            self.lam_init = 0.8 - 0.6 * math.exp(-0.3 * layer)
            self.lq1, self.lk1, self.lq2, self.lk2 = (
                nn.Parameter(0.1 * torch.randn(self.hd)) for _ in range(4))
            self.norm = nn.RMSNorm(2 * self.hd, eps=1e-5)

        def forward(self, x):
            b, n, d = x.shape
            q = self.q(x).view(b, n, 2 * self.h, self.hd).transpose(1, 2)
            k = self.k(x).view(b, n, 2 * self.h, self.hd).transpose(1, 2)
            v = self.v(x).view(b, n, self.h, 2 * self.hd).transpose(1, 2)
            causal = torch.ones(n, n, dtype=torch.bool).triu(1)
            a = (q @ k.transpose(-1, -2) * self.hd ** -0.5).masked_fill(causal, float("-inf"))
            a = a.softmax(-1).view(b, self.h, 2, n, n)
            lam = (torch.exp((self.lq1 * self.lk1).sum()) - torch.exp((self.lq2 * self.lk2).sum())
                   + self.lam_init)
            y = self.norm((a[:, :, 0] - lam * a[:, :, 1]) @ v) * (1 - self.lam_init)
            return self.o(y.transpose(1, 2).reshape(b, n, d))

    class SwiGLU(nn.Module):
        def __init__(self, d, hidden):
            super().__init__()
            self.w1, self.w3 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
            self.w2 = nn.Linear(hidden, d, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class DiffTransformerMini(nn.Module):
        def __init__(self, vocab=1000, d=128, heads=4, depth=3):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList([nn.ModuleDict({
                "n1": nn.RMSNorm(d), "attn": DiffAttention(d, heads, i + 1),
                "n2": nn.RMSNorm(d), "ffn": SwiGLU(d, 256)}) for i in range(depth)])
            self.norm, self.out = nn.RMSNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.emb(idx)
            for lyr in self.layers:
                x = x + lyr["attn"](lyr["n1"](x))
                x = x + lyr["ffn"](lyr["n2"](x))
            return self.out(self.norm(x))

    # -- DiT -------------------------------------------------------------------------------
    def timestep_embedding(t, dim):
        half = dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], -1)

    def modulate(x, shift, scale):
        return x * (1 + scale[:, None]) + shift[:, None]

    class DiTBlock(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.n1 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.n2 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * d, d))
            self.ada = nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d))

        def forward(self, x, c):
            sh1, sc1, g1, sh2, sc2, g2 = self.ada(c).chunk(6, dim=1)
            h = modulate(self.n1(x), sh1, sc1)
            x = x + g1[:, None] * self.attn(h, h, h, need_weights=False)[0]
            return x + g2[:, None] * self.mlp(modulate(self.n2(x), sh2, sc2))

    class DiTMini(nn.Module):
        """Latent 4x32x32, patches of 2, class-conditional; predicts noise and variance."""

        def __init__(self, d=128, depth=4, heads=4, p=2, classes=10):
            super().__init__()
            self.p, self.c_out, self.d = p, 8, d
            self.x_emb = nn.Conv2d(4, d, p, p)
            self.pos = nn.Parameter(0.02 * torch.randn(1, 256, d))
            self.t_mlp = nn.Sequential(nn.Linear(256, d), nn.SiLU(), nn.Linear(d, d))
            self.y_emb = nn.Embedding(classes + 1, d)
            self.blocks = nn.ModuleList([DiTBlock(d, heads) for _ in range(depth)])
            self.nf = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
            self.ada_f = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
            self.lin_f = nn.Linear(d, p * p * self.c_out)

        def forward(self, x, t, y):
            n, _, hh, ww = x.shape
            x = self.x_emb(x).flatten(2).transpose(1, 2) + self.pos
            c = self.t_mlp(timestep_embedding(t, 256)) + self.y_emb(y)
            for blk in self.blocks:
                x = blk(x, c)
            shift, scale = self.ada_f(c).chunk(2, dim=1)
            x = self.lin_f(modulate(self.nf(x), shift, scale))
            h, w = hh // self.p, ww // self.p
            x = x.reshape(n, h, w, self.p, self.p, self.c_out)
            x = torch.einsum("nhwpqc->nchpwq", x)
            return x.reshape(n, self.c_out, h * self.p, w * self.p)

    def dit_inputs():
        g = torch.Generator().manual_seed(12)
        return {"x": torch.randn(1, 4, 32, 32, generator=g), "t": torch.tensor([437.0]),
                "y": torch.tensor([3])}

    # -- spiking CNN -----------------------------------------------------------------------
    class SpikingCNN(nn.Module):
        """snnTorch-style leaky integrate-and-fire neurons: the membrane decays by beta, adds
        its input, spikes (a comparison cast to float) past the threshold and is reset by
        subtraction; the static image is fed at each of ``steps`` unrolled time steps and the
        output spikes' membrane potentials averaged."""

        def __init__(self, steps=6, beta=0.9, th=1.0, classes=10):
            super().__init__()
            self.steps, self.beta, self.th = steps, beta, th
            self.c1 = nn.Sequential(nn.Conv2d(1, 16, 5, padding=2), nn.BatchNorm2d(16))
            self.c2 = nn.Sequential(nn.Conv2d(16, 32, 5, padding=2), nn.BatchNorm2d(32))
            self.fc = nn.Linear(32 * 7 * 7, classes)

        def lif(self, mem, spk, cur):
            mem = self.beta * mem + cur - spk * self.th
            return mem, (mem > self.th).float()

        def forward(self, x):
            cur1 = 4.0 * self.c1(x)
            m1 = s1 = torch.zeros_like(cur1)
            m2 = s2 = m3 = s3 = None
            out = 0
            for _ in range(self.steps):
                m1, s1 = self.lif(m1, s1, cur1)
                cur2 = 2.0 * F.max_pool2d(self.c2(F.max_pool2d(s1, 2)), 2)
                if m2 is None:
                    m2 = s2 = torch.zeros_like(cur2)
                m2, s2 = self.lif(m2, s2, cur2)
                cur3 = self.fc(s2.flatten(1))
                if m3 is None:
                    m3 = s3 = torch.zeros_like(cur3)
                m3, s3 = self.lif(m3, s3, cur3)
                out = out + m3
            return out / self.steps

    # -- RAFT ------------------------------------------------------------------------------
    class ConvGRU(nn.Module):
        def __init__(self, h, i):
            super().__init__()
            self.z = nn.Conv2d(h + i, h, 3, padding=1)
            self.r = nn.Conv2d(h + i, h, 3, padding=1)
            self.q = nn.Conv2d(h + i, h, 3, padding=1)

        def forward(self, h, x):
            hx = torch.cat([h, x], 1)
            z, r = torch.sigmoid(self.z(hx)), torch.sigmoid(self.r(hx))
            q = torch.tanh(self.q(torch.cat([r * h, x], 1)))
            return (1 - z) * h + z * q

    class RAFTMini(nn.Module):
        """Features at 1/8 resolution, an all-pairs correlation volume pooled into a 3-level
        pyramid, (2r+1)^2 windows looked up around the current flow by ``grid_sample``, a
        ConvGRU update unrolled ``iters`` times, the flow upsampled bilinearly."""

        def __init__(self, c=64, hid=48, levels=3, radius=3, iters=4):
            super().__init__()
            self.levels, self.r, self.iters = levels, radius, iters

            def enc(o):
                return nn.Sequential(
                    nn.Conv2d(3, 32, 7, 2, 3), nn.InstanceNorm2d(32), nn.ReLU(),
                    nn.Conv2d(32, 48, 3, 2, 1), nn.InstanceNorm2d(48), nn.ReLU(),
                    nn.Conv2d(48, 64, 3, 2, 1), nn.InstanceNorm2d(64), nn.ReLU(),
                    nn.Conv2d(64, o, 1))

            self.fnet, self.cnet = enc(c), enc(2 * hid)
            self.hid = hid
            cor = levels * (2 * radius + 1) ** 2
            self.menc_c = nn.Sequential(nn.Conv2d(cor, 64, 1), nn.ReLU())
            self.menc_f = nn.Sequential(nn.Conv2d(2, 32, 7, padding=3), nn.ReLU())
            self.menc = nn.Sequential(nn.Conv2d(96, hid - 2, 3, padding=1), nn.ReLU())
            self.gru = ConvGRU(hid, 2 * hid)
            self.flow_head = nn.Sequential(nn.Conv2d(hid, 64, 3, padding=1), nn.ReLU(),
                                           nn.Conv2d(64, 2, 3, padding=1))
            d = torch.arange(-radius, radius + 1, dtype=torch.float32)
            dy, dx = torch.meshgrid(d, d, indexing="ij")
            self.register_buffer("delta", torch.stack([dx, dy], -1).view(
                1, 2 * radius + 1, 2 * radius + 1, 2))

        def lookup(self, pyramid, coords):
            b, _, h, w = coords.shape
            centre = coords.permute(0, 2, 3, 1).reshape(b * h * w, 1, 1, 2)
            out = []
            for i, corr in enumerate(pyramid):
                pts = centre / 2 ** i + self.delta
                hh, ww = corr.shape[-2:]
                gx = 2 * pts[..., 0] / (ww - 1) - 1
                gy = 2 * pts[..., 1] / (hh - 1) - 1
                s = F.grid_sample(corr, torch.stack([gx, gy], -1), align_corners=True)
                out.append(s.view(b, h, w, -1))
            return torch.cat(out, -1).permute(0, 3, 1, 2)

        def forward(self, im1, im2):
            f1, f2 = self.fnet(im1), self.fnet(im2)
            b, c, h, w = f1.shape
            corr = torch.einsum("bchw,bcuv->bhwuv", f1, f2) / math.sqrt(c)
            pyramid = [corr.reshape(b * h * w, 1, h, w)]
            for _ in range(self.levels - 1):
                pyramid.append(F.avg_pool2d(pyramid[-1], 2, 2))
            net, inp = self.cnet(im1).split([self.hid, self.hid], 1)
            net, inp = torch.tanh(net), F.relu(inp)
            ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32),
                                    torch.arange(w, dtype=torch.float32), indexing="ij")
            coords0 = torch.stack([xs, ys], 0)[None].expand(b, -1, -1, -1)
            coords1 = coords0
            for _ in range(self.iters):
                flow = coords1 - coords0
                m = torch.cat([self.menc_c(self.lookup(pyramid, coords1)),
                               self.menc_f(flow)], 1)
                m = torch.cat([self.menc(m), flow], 1)
                net = self.gru(net, torch.cat([inp, m], 1))
                coords1 = coords1 + self.flow_head(net)
            return F.interpolate(8 * (coords1 - coords0), scale_factor=8, mode="bilinear",
                                 align_corners=True)

    def frame_pair():
        g = torch.Generator().manual_seed(13)
        im1 = torch.rand(1, 3, 128, 128, generator=g)
        im2 = torch.roll(im1, shifts=(3, -2), dims=(2, 3)) + 0.05 * torch.randn(
            1, 3, 128, 128, generator=g)
        return {"im1": im1, "im2": im2}

    # -- SAM mask decoder ------------------------------------------------------------------
    class RandomFourierPE(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.register_buffer("g", torch.randn(2, d // 2))

        def forward(self, coords):                    # [..., 2] in [0, 1]
            c = (2 * coords - 1) @ self.g * (2 * math.pi)
            return torch.cat([torch.sin(c), torch.cos(c)], -1)

    class DownAttention(nn.Module):
        def __init__(self, d, heads, down=1):
            super().__init__()
            self.h, inner = heads, d // down
            self.q, self.k, self.v = (nn.Linear(d, inner) for _ in range(3))
            self.o = nn.Linear(inner, d)

        def forward(self, q, k, v):
            b = q.shape[0]

            def split(t):
                return t.view(b, t.shape[1], self.h, -1).transpose(1, 2)

            q, k, v = split(self.q(q)), split(self.k(k)), split(self.v(v))
            a = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).softmax(-1)
            return self.o((a @ v).transpose(1, 2).flatten(2))

    class TwoWayBlock(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.self_attn = DownAttention(d, heads)
            self.t2i, self.i2t = DownAttention(d, heads, 2), DownAttention(d, heads, 2)
            self.mlp = mlp(d, 2 * d, nn.ReLU)
            self.n1, self.n2, self.n3, self.n4 = (nn.LayerNorm(d) for _ in range(4))

        def forward(self, tok, img, tok_pe, img_pe):
            q = tok + tok_pe
            tok = self.n1(tok + self.self_attn(q, q, tok))
            q, k = tok + tok_pe, img + img_pe
            tok = self.n2(tok + self.t2i(q, k, img))
            tok = self.n3(tok + self.mlp(tok))
            q, k = tok + tok_pe, img + img_pe
            img = self.n4(img + self.i2t(k, q, tok))
            return tok, img

    class LayerNorm2d(nn.Module):
        def __init__(self, c, eps=1e-6):
            super().__init__()
            self.w, self.b, self.eps = nn.Parameter(torch.ones(c)), nn.Parameter(
                torch.zeros(c)), eps

        def forward(self, x):
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.eps)
            return self.w[:, None, None] * x + self.b[:, None, None]

    class SAMMaskDecoder(nn.Module):
        """Prompt points (pixel coordinates and +1/-1 labels) and a 64x16x16 image embedding
        to 4 low-resolution masks: random Fourier features for points and the dense grid,
        two two-way blocks, a final token-to-image attention, a 4x ConvTranspose2d upscaling
        and one hypernetwork MLP per mask token."""

        def __init__(self, d=64, heads=4, masks=4, size=256.0):
            super().__init__()
            self.size, self.masks = size, masks
            self.pe = RandomFourierPE(d)
            self.point_emb = nn.Parameter(0.1 * torch.randn(2, d))
            self.not_a_point = nn.Parameter(0.1 * torch.randn(d))
            self.no_mask = nn.Parameter(0.1 * torch.randn(d))
            self.tokens = nn.Parameter(0.1 * torch.randn(1 + masks, d))
            self.blocks = nn.ModuleList([TwoWayBlock(d, heads) for _ in range(2)])
            self.final = DownAttention(d, heads, 2)
            self.nf = nn.LayerNorm(d)
            self.up = nn.Sequential(nn.ConvTranspose2d(d, d // 4, 2, 2), LayerNorm2d(d // 4),
                                    nn.GELU(), nn.ConvTranspose2d(d // 4, d // 8, 2, 2),
                                    nn.GELU())
            self.hyper = nn.ModuleList([nn.Sequential(
                nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d // 8))
                for _ in range(masks)])

        def forward(self, emb, points, labels):
            b, c, h, w = emb.shape
            pts = self.pe((points + 0.5) / self.size)
            lab = labels[..., None]
            pts = torch.where(lab == -1, self.not_a_point.expand_as(pts), pts)
            pts = pts + torch.where(lab == 1, self.point_emb[1], self.point_emb[0]) * (lab != -1)
            tok = torch.cat([self.tokens[None].expand(b, -1, -1), pts], 1)
            ys = (torch.arange(h, dtype=torch.float32) + 0.5) / h
            xs = (torch.arange(w, dtype=torch.float32) + 0.5) / w
            grid = torch.stack([xs[None].expand(h, w), ys[:, None].expand(h, w)], -1)
            img_pe = self.pe(grid).reshape(1, h * w, c)
            img = (emb + self.no_mask[None, :, None, None]).flatten(2).transpose(1, 2)
            q = tok
            for blk in self.blocks:
                q, img = blk(q, img, tok, img_pe)
            q = self.nf(q + self.final(q + tok, img + img_pe, img))
            up = self.up(img.transpose(1, 2).reshape(b, c, h, w))
            hyp = torch.stack([m(q[:, 1 + i]) for i, m in enumerate(self.hyper)], 1)
            bb, cc, hh, ww = up.shape
            return (hyp @ up.view(bb, cc, hh * ww)).view(bb, self.masks, hh, ww)

    def sam_inputs():
        g = torch.Generator().manual_seed(14)
        return {"emb": torch.randn(1, 64, 16, 16, generator=g),
                "points": torch.tensor([[[70.0, 120.0], [180.0, 40.0], [0.0, 0.0]]]),
                "labels": torch.tensor([[1, 0, -1]])}

    # -- EnCodec ---------------------------------------------------------------------------
    class SConv1d(nn.Module):
        """Conv1d with EnCodec's non-causal reflect padding (the extra right pad keeping the
        output length at ceil(T / stride))."""

        def __init__(self, i, o, k, stride=1, dilation=1):
            super().__init__()
            self.conv = nn.Conv1d(i, o, k, stride, dilation=dilation)
            self.k, self.s = (k - 1) * dilation + 1, stride

        def forward(self, x):
            pad = self.k - self.s
            t = x.shape[-1]
            frames = (t - self.k + pad) / self.s + 1
            extra = int((math.ceil(frames) - 1) * self.s + self.k - pad - t)
            right = pad // 2
            return self.conv(F.pad(x, (pad - right, right + extra), mode="reflect"))

    class EnCodecMini(nn.Module):
        def __init__(self, ch=16, strides=(2, 4, 5), d=64, codebooks=4, bins=256):
            super().__init__()
            layers, c = [SConv1d(1, ch, 7)], ch
            for s in strides:
                layers += [ResUnit(c), nn.ELU(), SConv1d(c, 2 * c, 2 * s, s)]
                c *= 2
            self.enc = nn.Sequential(*layers)
            self.lstm = nn.LSTM(c, c, 2)
            self.out = nn.Sequential(nn.ELU(), SConv1d(c, d, 7))
            self.codebooks = nn.Parameter(torch.randn(codebooks, bins, d))

        def forward(self, wav):
            z = self.enc(wav).permute(2, 0, 1)
            z = self.lstm(z)[0] + z
            z = self.out(z.permute(1, 2, 0)).transpose(1, 2)   # B T D
            res, q = z, torch.zeros_like(z)
            for cb in self.codebooks:
                dist = res.pow(2).sum(-1, keepdim=True) - 2 * res @ cb.T + cb.pow(2).sum(-1)
                pick = F.embedding(dist.argmin(-1), cb)
                q, res = q + pick, res - pick
            return q.transpose(1, 2)

    class ResUnit(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.body = nn.Sequential(nn.ELU(), SConv1d(c, c // 2, 3), nn.ELU(),
                                      SConv1d(c // 2, c, 1))

        def forward(self, x):
            return x + self.body(x)

    def waveform():
        g = torch.Generator().manual_seed(15)
        t = torch.arange(8000).float() / 16000
        return {"wav": (0.3 * torch.sin(2 * math.pi * 220 * t)
                        + 0.05 * torch.randn(8000, generator=g)).view(1, 1, 8000)}

    # -- xLSTM mLSTM -----------------------------------------------------------------------
    class MLSTMLayer(nn.Module):
        """The parallel mLSTM: input gates i and log-sigmoid forget gates f give the gate
        matrix log D_ij = sum_{j<l<=i} f_l + i_j (causal), stabilized by its row max before
        the exponential; rows normalized by max(|sum|, exp(-max)); multi-head GroupNorm; an
        up-projection with a causal conv and a SiLU output gate."""

        def __init__(self, d, heads=4, up=2):
            super().__init__()
            inner, self.h = up * d, heads
            self.up = nn.Linear(d, 2 * inner)
            self.conv = nn.Conv1d(inner, inner, 4, padding=3, groups=inner)
            self.q, self.k = nn.Linear(inner, inner), nn.Linear(inner, inner)
            self.v = nn.Linear(inner, inner)
            self.ig, self.fg = nn.Linear(3 * inner, heads), nn.Linear(3 * inner, heads)
            self.gn = nn.GroupNorm(heads, inner)
            self.skip = nn.Parameter(torch.ones(inner))
            self.down = nn.Linear(inner, d)

        def forward(self, x):
            b, n, _ = x.shape
            xm, z = self.up(x).chunk(2, -1)
            xc = F.silu(self.conv(xm.transpose(1, 2))[..., :n].transpose(1, 2))
            q, k, v = self.q(xc), self.k(xc), self.v(xm)
            qkv = torch.cat([q, k, v], -1)
            ig = self.ig(qkv).transpose(1, 2)                      # B H N
            lf = F.logsigmoid(self.fg(qkv)).transpose(1, 2).cumsum(-1)

            def heads(t):
                return t.view(b, n, self.h, -1).transpose(1, 2)

            q, k, v = heads(q), heads(k), heads(v)
            logd = lf[..., :, None] - lf[..., None, :] + ig[..., None, :]
            causal = torch.ones(n, n, dtype=torch.bool).tril()
            logd = logd.masked_fill(~causal, float("-inf"))
            mx = logd.max(-1, keepdim=True).values
            c = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) * torch.exp(logd - mx)
            norm = torch.maximum(c.sum(-1, keepdim=True).abs(), torch.exp(-mx))
            hh = (c / (norm + 1e-6)) @ v
            hh = self.gn(hh.transpose(1, 2).reshape(b * n, -1)).view(b, n, -1)
            return self.down((hh + self.skip * xc) * F.silu(z))

    class XLSTMMini(nn.Module):
        def __init__(self, vocab=1000, d=128, depth=3):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList([nn.ModuleDict({
                "n": nn.LayerNorm(d), "m": MLSTMLayer(d)}) for _ in range(depth)])
            self.norm, self.out = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.emb(idx)
            for lyr in self.layers:
                x = x + lyr["m"](lyr["n"](x))
            return self.out(self.norm(x))

    # -- Restormer -------------------------------------------------------------------------
    class ChannelLayerNorm(nn.Module):
        """Restormer's LayerNorm: over channels of b (hw) c, variance written out by hand."""

        def __init__(self, c):
            super().__init__()
            self.w, self.b = nn.Parameter(torch.ones(c)), nn.Parameter(torch.zeros(c))

        def forward(self, x):
            b, c, h, w = x.shape
            t = x.flatten(2).transpose(1, 2)
            mu = t.mean(-1, keepdim=True)
            var = t.var(-1, keepdim=True, unbiased=False)
            t = (t - mu) / torch.sqrt(var + 1e-5) * self.w + self.b
            return t.transpose(1, 2).reshape(b, c, h, w)

    class MDTA(nn.Module):
        """Transposed attention: c/heads x c/heads maps between L2-normalized channel rows,
        scaled by a learned per-head temperature."""

        def __init__(self, c, heads):
            super().__init__()
            self.h = heads
            self.temp = nn.Parameter(torch.ones(heads, 1, 1) + 0.1 * torch.randn(heads, 1, 1))
            self.qkv = nn.Sequential(nn.Conv2d(c, 3 * c, 1, bias=False),
                                     nn.Conv2d(3 * c, 3 * c, 3, padding=1, groups=3 * c,
                                               bias=False))
            self.o = nn.Conv2d(c, c, 1, bias=False)

        def forward(self, x):
            b, c, h, w = x.shape
            q, k, v = (t.reshape(b, self.h, c // self.h, h * w)
                       for t in self.qkv(x).chunk(3, 1))
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
            a = (q @ k.transpose(-1, -2) * self.temp).softmax(-1)
            return self.o((a @ v).reshape(b, c, h, w))

    class GDFN(nn.Module):
        def __init__(self, c, e=2.66):
            super().__init__()
            hid = int(c * e)
            self.inp = nn.Conv2d(c, 2 * hid, 1, bias=False)
            self.dw = nn.Conv2d(2 * hid, 2 * hid, 3, padding=1, groups=2 * hid, bias=False)
            self.out = nn.Conv2d(hid, c, 1, bias=False)

        def forward(self, x):
            a, g = self.dw(self.inp(x)).chunk(2, 1)
            return self.out(F.gelu(a) * g)

    class RestormerBlock(nn.Module):
        def __init__(self, c, heads):
            super().__init__()
            self.n1, self.attn = ChannelLayerNorm(c), MDTA(c, heads)
            self.n2, self.ffn = ChannelLayerNorm(c), GDFN(c)

        def forward(self, x):
            x = x + self.attn(self.n1(x))
            return x + self.ffn(self.n2(x))

    class RestormerMini(nn.Module):
        def __init__(self, c=24):
            super().__init__()
            self.embed = nn.Conv2d(3, c, 3, padding=1, bias=False)
            self.enc1 = RestormerBlock(c, 1)
            self.down1 = nn.Sequential(nn.Conv2d(c, c // 2, 3, padding=1, bias=False),
                                       nn.PixelUnshuffle(2))
            self.enc2 = RestormerBlock(2 * c, 2)
            self.down2 = nn.Sequential(nn.Conv2d(2 * c, c, 3, padding=1, bias=False),
                                       nn.PixelUnshuffle(2))
            self.mid = nn.Sequential(RestormerBlock(4 * c, 4), RestormerBlock(4 * c, 4))
            self.up2 = nn.Sequential(nn.Conv2d(4 * c, 8 * c, 3, padding=1, bias=False),
                                     nn.PixelShuffle(2))
            self.red2 = nn.Conv2d(4 * c, 2 * c, 1, bias=False)
            self.dec2 = RestormerBlock(2 * c, 2)
            self.up1 = nn.Sequential(nn.Conv2d(2 * c, 4 * c, 3, padding=1, bias=False),
                                     nn.PixelShuffle(2))
            self.dec1 = RestormerBlock(2 * c, 1)
            self.out = nn.Conv2d(2 * c, 3, 3, padding=1, bias=False)

        def forward(self, img):
            e1 = self.enc1(self.embed(img))
            e2 = self.enc2(self.down1(e1))
            m = self.mid(self.down2(e2))
            d2 = self.dec2(self.red2(torch.cat([self.up2(m), e2], 1)))
            d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
            return self.out(d1) + img

    def tokens(vocab, n, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"idx": torch.randint(0, vocab, (1, n), generator=g)}
        return make

    def points():
        g = torch.Generator().manual_seed(16)
        return {"x": torch.rand(4096, 3, generator=g)}

    return {
        "gfnet_mini": (GFNetMini, (1, 3, 64, 64)),
        "efficientvit_mini": (EfficientViTMini, (1, 3, 128, 128)),
        "tome_vit": (ToMeViT, (1, 3, 128, 128)),
        "hashgrid_field": (HashGridField, points),
        "retnet_mini": (RetNetMini, tokens(1000, 64, 17)),
        "diff_transformer": (DiffTransformerMini, tokens(1000, 64, 18)),
        "dit_mini": (DiTMini, dit_inputs),
        "spiking_cnn": (SpikingCNN, lambda: {"x": torch.rand(1, 1, 28, 28)}),
        "raft_mini": (RAFTMini, frame_pair),
        "sam_decoder": (SAMMaskDecoder, sam_inputs),
        "encodec_mini": (EnCodecMini, waveform),
        "xlstm_mini": (XLSTMMini, tokens(1000, 64, 19)),
        "restormer_mini": (RestormerMini, lambda: {"img": torch.rand(1, 3, 64, 64)}),
    }
