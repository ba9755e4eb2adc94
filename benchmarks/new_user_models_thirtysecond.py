"""The thirty-second round of ``bench_new_user_models``: a filterbank front end (an STFT as a
``conv1d`` with windowed DFT kernels, a mel matrix, a log, per-utterance mean / variance
normalization, delta and delta-delta features by a ``conv1d``, low-frame-rate stacking by
``unfold``), a ViT with register tokens and 2-D axial rotary positions, a DAB-DETR decoder
(anchor boxes embedded by sines, refined layer by layer through ``inverse_sigmoid``, a top-k
over every query and class, boxes to corners by ``gather``), a DDIM sampler with
classifier-free guidance (a doubled batch, a cosine schedule, four unrolled steps), a kNN-LM
(a datastore searched by ``topk`` over L2 distances, neighbour votes ``scatter_add``-ed onto the
vocabulary, mixed with the LM's softmax), a ListMLE ranker (``argsort`` of the labels, ``gather``,
``flip``, ``logcumsumexp``, NDCG@k by ``topk``), quotient-remainder and multi-hash Bloom
embeddings (int64 ``//``, ``%`` and multiply-add hashing, bag sums under a length mask), a
band-split RoFormer (non-uniform frequency bands each with its own norm and projection,
attention along time and then across bands, a GLU mask head), PaiNN (scalar and vector atom
features, sine radial bases under a cosine cutoff, messages ``index_add``-ed over an edge list),
LIIF (a local implicit image function: 3x3 feature unfolding, four shifted ``grid_sample``
nearest lookups, an area-weighted ensemble), a Point Transformer V3-style serializer (Morton
codes by int64 bit arithmetic, ``argsort``, patch attention in the serialized order, the order
undone by ``scatter``, voxel max pooling by ``index_reduce``, Fourier features by ``ldexp``) and xLSTM's sLSTM (exponential gates with a log-space stabilizer,
block-diagonal recurrent weights). Kept apart so the main script stays readable."""

from __future__ import annotations

import math


def thirtysecond_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- filterbank front end ----------------------------------------------------------------
    def mel_matrix(n_freq, n_mels, sr):
        """Triangular mel filters over ``n_freq`` linear bins (HTK mel scale)."""
        def mel(f):
            return 2595.0 * math.log10(1.0 + f / 700.0)
        pts = torch.linspace(mel(0.0), mel(sr / 2), n_mels + 2)
        hz = 700.0 * (10 ** (pts / 2595.0) - 1.0)
        freqs = torch.linspace(0, sr / 2, n_freq)
        lo, mid, hi = hz[:-2, None], hz[1:-1, None], hz[2:, None]
        up, down = (freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)
        return torch.clamp(torch.minimum(up, down), min=0.0)          # (n_mels, n_freq)

    class FbankLFR(nn.Module):
        """A Kaldi / FunASR-style front end then a TDNN: log-mel by a DFT conv, CMVN, deltas,
        frames stacked ``lfr`` at a time with stride ``lfr`` (a low frame rate)."""

        def __init__(self, n_fft=128, hop=64, n_mels=40, lfr=3, classes=12, sr=8000):
            super().__init__()
            n = torch.arange(n_fft, dtype=torch.float32)
            win = 0.5 - 0.5 * torch.cos(2 * math.pi * n / n_fft)
            k = torch.arange(n_fft // 2 + 1, dtype=torch.float32)[:, None]
            ang = 2 * math.pi * k * n / n_fft
            self.register_buffer("dft", torch.cat([torch.cos(ang) * win,
                                                   -torch.sin(ang) * win])[:, None])
            self.register_buffer("mel", mel_matrix(n_fft // 2 + 1, n_mels, sr))
            self.register_buffer("delta", torch.tensor([-2.0, -1.0, 0.0, 1.0, 2.0]) / 10.0)
            self.hop, self.nf, self.lfr = hop, n_fft // 2 + 1, lfr
            d = 3 * n_mels * lfr
            self.tdnn = nn.Sequential(nn.Conv1d(d, 128, 3, padding=2, dilation=2), nn.ReLU(),
                                      nn.BatchNorm1d(128), nn.Conv1d(128, 128, 3, padding=1),
                                      nn.ReLU(), nn.BatchNorm1d(128))
            self.head = nn.Linear(128, classes)

        def deltas(self, f):                                       # (b, m, t) along t
            b, m, t = f.shape
            x = F.pad(f.reshape(b * m, 1, t), (2, 2), mode="replicate")
            return F.conv1d(x, self.delta.view(1, 1, 5)).view(b, m, t)

        def forward(self, wav):                                    # (b, samples)
            spec = F.conv1d(wav[:, None], self.dft, stride=self.hop)   # (b, 2 nf, t)
            re, im = spec[:, :self.nf], spec[:, self.nf:]
            logmel = torch.log(torch.einsum("mf,bft->bmt", self.mel, re * re + im * im) + 1e-6)
            mu, sd = logmel.mean(-1, keepdim=True), logmel.std(-1, keepdim=True)
            f = (logmel - mu) / (sd + 1e-5)
            d1 = self.deltas(f)
            feats = torch.cat([f, d1, self.deltas(d1)], 1)         # (b, 3m, t)
            t = feats.shape[-1] // self.lfr * self.lfr
            stacked = F.unfold(feats[:, :, None, :t], (1, self.lfr), stride=(1, self.lfr))
            h = self.tdnn(stacked)                                 # (b, 128, t / lfr)
            return self.head(h.mean(-1))

    # -- ViT with registers and 2-D RoPE -----------------------------------------------------
    def axial_rope(gh, gw, dh, base=100.0):
        """cos / sin of 2-D axial rotary angles: half the pairs rotate with the row, half
        with the column."""
        q = dh // 4
        freqs = 1.0 / base ** (torch.arange(q, dtype=torch.float32) / q)
        ys, xs = torch.meshgrid(torch.arange(gh, dtype=torch.float32),
                                torch.arange(gw, dtype=torch.float32), indexing="ij")
        ang = torch.cat([ys.reshape(-1, 1) * freqs, xs.reshape(-1, 1) * freqs], 1)
        ang = torch.cat([ang, ang], 1)                             # (n, dh)
        return torch.cos(ang), torch.sin(ang)

    class RopeAttention(nn.Module):
        def __init__(self, d, heads, n_special):
            super().__init__()
            self.h, self.dh, self.ns = heads, d // heads, n_special
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

        def rotate(self, x, cos, sin):
            sp, pt = x[:, :, :self.ns], x[:, :, self.ns:]
            a, b = pt.chunk(2, -1)
            return torch.cat([sp, pt * cos + torch.cat([-b, a], -1) * sin], 2)

        def forward(self, x, cos, sin):
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
            q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
            att = ((q @ k.transpose(-1, -2)) / math.sqrt(self.dh)).softmax(-1)
            return self.proj((att @ v).transpose(1, 2).reshape(b, n, d))

    class ViTRegRope(nn.Module):
        """Darcet et al. 2024 register tokens (dropped at the output) and RoPE-ViT's axial
        2-D rotary positions on the patch tokens only; layer scale on both branches."""

        def __init__(self, img=32, patch=4, d=96, heads=4, depth=3, regs=4, classes=10):
            super().__init__()
            g = img // patch
            self.embed = nn.Conv2d(3, d, patch, patch)
            self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
            self.regs = nn.Parameter(torch.randn(1, regs, d) * 0.02)
            cos, sin = axial_rope(g, g, d // heads)
            self.register_buffer("cos", cos)
            self.register_buffer("sin", sin)
            self.attn = nn.ModuleList([RopeAttention(d, heads, 1 + regs) for _ in range(depth)])
            self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.mlp = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                                    nn.Linear(4 * d, d)) for _ in range(depth)])
            self.ls1 = nn.Parameter(torch.full((depth, d), 0.1))
            self.ls2 = nn.Parameter(torch.full((depth, d), 0.1))
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)
            self.nr = regs

        def forward(self, x):
            p = self.embed(x).flatten(2).transpose(1, 2)
            b = p.shape[0]
            h = torch.cat([self.cls.expand(b, -1, -1), self.regs.expand(b, -1, -1), p], 1)
            for i, (attn, n1, n2, mlp) in enumerate(zip(self.attn, self.n1, self.n2, self.mlp)):
                h = h + self.ls1[i] * attn(n1(h), self.cos, self.sin)
                h = h + self.ls2[i] * mlp(n2(h))
            h = self.norm(h)
            return self.head(torch.cat([h[:, 0], h[:, 1 + self.nr:].mean(1)], 0))

    # -- DAB-DETR decoder --------------------------------------------------------------------
    def inverse_sigmoid(x, eps=1e-5):
        x = x.clamp(0, 1)
        return torch.log(x.clamp(min=eps) / (1 - x).clamp(min=eps))

    def box_sine(boxes, d):
        """Each of (cx, cy, w, h) embedded by d / 4 sines and cosines (DAB-DETR)."""
        q = d // 8
        dim_t = 10000.0 ** (2 * torch.arange(q, dtype=torch.float32) / (2 * q))
        a = boxes[..., None] * (2 * math.pi) / dim_t                    # (b, n, 4, q)
        return torch.cat([a.sin(), a.cos()], -1).flatten(2)            # (b, n, d)

    class DABLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.sa = nn.MultiheadAttention(d, heads, batch_first=True)
            self.ca = nn.MultiheadAttention(d, heads, batch_first=True)
            self.ffn = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))
            self.n = nn.ModuleList([nn.LayerNorm(d) for _ in range(3)])
            self.scale = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))
            self.delta = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

        def forward(self, tgt, pos, mem, mem_pos):
            q = tgt + pos
            tgt = self.n[0](tgt + self.sa(q, q, tgt, need_weights=False)[0])
            q = tgt + pos * self.scale(tgt)
            tgt = self.n[1](tgt + self.ca(q, mem + mem_pos, mem, need_weights=False)[0])
            return self.n[2](tgt + self.ffn(tgt))

    class DABDETR(nn.Module):
        """Liu et al. 2022: learned anchor boxes as queries; each layer's query position is an
        MLP of the anchors' sine embedding and each layer refines the anchors by a delta in
        logit space. Inference: top-k over every (query, class) sigmoid score, the boxes
        gathered and turned into image-size corners."""

        def __init__(self, d=64, heads=4, queries=30, layers=3, classes=8, topk=20):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(),
                                          nn.Conv2d(32, d, 3, 2, 1), nn.ReLU(),
                                          nn.Conv2d(d, d, 3, 2, 1))
            self.anchors = nn.Parameter(torch.rand(queries, 4) * 0.8 + 0.1)
            self.tgt = nn.Parameter(torch.randn(queries, d))       # learned content queries
            self.pos_mlp = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))
            self.layers = nn.ModuleList([DABLayer(d, heads) for _ in range(layers)])
            self.cls = nn.Linear(d, classes)
            self.d, self.k, self.nc = d, topk, classes

        def forward(self, img):
            b, _, ih, iw = img.shape
            mem = self.backbone(img)                                   # (b, d, h, w)
            _, d, h, w = mem.shape
            ys, xs = torch.meshgrid((torch.arange(h, dtype=torch.float32) + 0.5) / h,
                                    (torch.arange(w, dtype=torch.float32) + 0.5) / w,
                                    indexing="ij")
            grid = torch.stack([xs, ys, torch.full_like(xs, 0.1), torch.full_like(xs, 0.1)], -1)
            mem_pos = box_sine(grid.view(1, h * w, 4), d)
            mem = mem.flatten(2).transpose(1, 2)
            boxes = self.anchors[None].expand(b, -1, -1)
            tgt = self.tgt[None].expand(b, -1, -1)
            for layer in self.layers:
                tgt = layer(tgt, self.pos_mlp(box_sine(boxes, d)), mem, mem_pos)
                boxes = torch.sigmoid(inverse_sigmoid(boxes) + layer.delta(tgt))
            prob = torch.sigmoid(self.cls(tgt)).flatten(1)                 # (b, q * nc)
            scores, idx = prob.topk(self.k, -1)
            chosen = boxes.gather(1, (idx // self.nc)[..., None].expand(-1, -1, 4))
            cx, cy, bw, bh = chosen.unbind(-1)
            xyxy = torch.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], -1)
            xyxy = xyxy * torch.tensor([iw, ih, iw, ih], dtype=torch.float32)
            labels = (idx % self.nc).to(torch.float32)
            return torch.cat([xyxy, scores[..., None], labels[..., None]], -1)

    # -- DDIM with classifier-free guidance -------------------------------------------------
    class TinyDenoiser(nn.Module):
        def __init__(self, c=3, ch=32, classes=10, temb=32):
            super().__init__()
            self.temb = temb
            self.t_mlp = nn.Sequential(nn.Linear(temb, ch), nn.SiLU(), nn.Linear(ch, 2 * ch))
            self.y_emb = nn.Embedding(classes + 1, 2 * ch)             # the last: no class
            self.inp = nn.Conv2d(c, ch, 3, padding=1)
            self.down = nn.Conv2d(ch, ch, 3, 2, 1)
            self.mid = nn.Conv2d(ch, ch, 3, padding=1)
            self.up = nn.ConvTranspose2d(ch, ch, 4, 2, 1)
            self.out = nn.Conv2d(2 * ch, c, 3, padding=1)
            self.gn1, self.gn2 = nn.GroupNorm(8, ch), nn.GroupNorm(8, ch)

        def forward(self, x, t, y):                                # t: (b,) float
            half = self.temb // 2
            f = torch.exp(-math.log(1000.0) * torch.arange(half, dtype=torch.float32) / half)
            e = t[:, None] * f
            s, sh = (self.t_mlp(torch.cat([e.sin(), e.cos()], -1)) + self.y_emb(y)).chunk(2, -1)
            h0 = F.silu(self.gn1(self.inp(x)))
            h = F.silu(self.down(h0))
            h = self.gn2(self.mid(h)) * (1 + s[..., None, None]) + sh[..., None, None]
            h = F.silu(self.up(F.silu(h)))
            return self.out(torch.cat([h, h0], 1))

    class DDIMSampler(nn.Module):
        """Song et al. 2021's deterministic DDIM update over ``steps`` of a cosine schedule,
        each step one denoiser call on the conditional and unconditional halves of a doubled
        batch mixed by the guidance scale (Ho & Salimans 2022)."""

        def __init__(self, steps=4, guidance=3.0, classes=10, T=1000):
            super().__init__()
            self.net, self.w, self.nc = TinyDenoiser(classes=classes), guidance, classes
            ts = torch.linspace(T - 1, 0, steps + 1).round()
            abar = torch.cos((ts / T + 0.008) / 1.008 * math.pi / 2) ** 2
            self.register_buffer("ts", ts)
            self.register_buffer("abar", abar.clamp(1e-4, 0.9999))

        def forward(self, noise, y):
            x, b = noise, noise.shape[0]
            yy = torch.cat([y, torch.full_like(y, self.nc)])
            for i in range(self.ts.shape[0] - 1):
                a, a_next = self.abar[i], self.abar[i + 1]
                t = self.ts[i].expand(2 * b)
                eps_c, eps_u = self.net(torch.cat([x, x]), t, yy).chunk(2)
                eps = eps_u + self.w * (eps_c - eps_u)
                x0 = ((x - (1 - a).sqrt() * eps) / a.sqrt()).clamp(-1, 1)
                x = a_next.sqrt() * x0 + (1 - a_next).sqrt() * eps
            return x

    # -- kNN-LM ------------------------------------------------------------------------------
    class KNNLM(nn.Module):
        """Khandelwal et al. 2020: a causal transformer LM whose next-token distribution is
        interpolated with a kNN distribution: the ``k`` nearest datastore keys (L2) to each
        context vector vote for their stored next tokens with softmax(-distance) weights."""

        def __init__(self, vocab=300, d=64, heads=4, seq=32, store=2048, k=16, lam=0.25):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(seq, d) * 0.02)
            layer = nn.TransformerEncoderLayer(d, heads, 2 * d, 0.0, batch_first=True,
                                               norm_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)
            self.register_buffer("keys", torch.randn(store, d))
            self.register_buffer("vals", torch.randint(0, vocab, (store,)))
            self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))
            self.k, self.lam, self.vocab = k, lam, vocab

        def forward(self, ids):
            b, t = ids.shape
            h = self.norm(self.enc(self.emb(ids) + self.pos[:t], mask=self.mask[:t, :t],
                                   is_causal=True))
            p_lm = self.head(h).softmax(-1)                                # (b, t, V)
            q = h.reshape(b * t, -1)
            dist = (q * q).sum(-1, keepdim=True) - 2 * q @ self.keys.T \
                + (self.keys * self.keys).sum(-1)
            neg, nn_idx = (-dist).topk(self.k, -1)                         # (bt, k)
            w = neg.softmax(-1)
            tokens = self.vals.take(nn_idx)
            p_knn = torch.zeros(b * t, self.vocab).scatter_add(1, tokens, w)
            p = self.lam * p_knn.view(b, t, -1) + (1 - self.lam) * p_lm
            return torch.log(p + 1e-9)

    # -- ListMLE ranker ----------------------------------------------------------------------
    class ListMLERanker(nn.Module):
        """A listwise ranker: an item-scoring MLP with list context (the items' mean), the
        Plackett-Luce negative log-likelihood of the label order (ListMLE: sort by label,
        reverse log-cumsum-exp of the scores) and NDCG@k of the predicted order."""

        def __init__(self, f=24, d=64, k=5):
            super().__init__()
            self.item = nn.Sequential(nn.Linear(2 * f, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(),
                                      nn.Linear(d, 1))
            self.k = k

        def forward(self, feats, labels):                         # (b, n, f), (b, n) float
            ctx = feats.mean(1, keepdim=True).expand_as(feats)
            s = self.item(torch.cat([feats, ctx], -1)).squeeze(-1)        # (b, n)
            order = labels.argsort(dim=-1, descending=True)
            s_sorted = s.gather(1, order)
            lse = torch.logcumsumexp(s_sorted.flip(-1), -1).flip(-1)
            nll = (lse - s_sorted).sum(-1)
            n = s.shape[1]
            disc = 1.0 / torch.log2(torch.arange(n, dtype=torch.float32) + 2.0)
            gain = 2.0 ** labels - 1
            top = s.topk(self.k, -1)[1]
            dcg = (gain.gather(1, top) * disc[:self.k]).sum(-1)
            ideal = (gain.sort(-1, descending=True)[0][:, :self.k] * disc[:self.k]).sum(-1)
            ndcg = dcg / ideal.clamp(min=1e-6)
            return torch.cat([s, nll[:, None], ndcg[:, None]], 1)

    # -- quotient-remainder and Bloom embeddings ---------------------------------------------
    class QRBloomCTR(nn.Module):
        """Shi et al. 2020's quotient-remainder trick (an id's ``// m`` and ``% m`` rows
        multiplied) for the large categorical fields, Bloom embeddings (``h`` universal hashes
        ``(a x + c) mod p mod m`` summed) for a multi-hot bag summed under its length, and a
        pairwise dot-product interaction before an MLP."""

        def __init__(self, fields=4, card=100_000, m=512, bag_rows=1000, hashes=3, d=16):
            super().__init__()
            self.m = m
            self.quot = nn.ModuleList([nn.Embedding(card // m + 1, d) for _ in range(fields)])
            self.rem = nn.ModuleList([nn.Embedding(m, d) for _ in range(fields)])
            self.bloom = nn.Embedding(bag_rows, d)
            gen = torch.Generator().manual_seed(32)
            self.register_buffer("ha", torch.randint(1, 2**20, (hashes,), generator=gen))
            self.register_buffer("hc", torch.randint(0, 2**20, (hashes,), generator=gen))
            self.p, self.rows = 2_147_483_647, bag_rows
            self.dense = nn.Sequential(nn.Linear(8, d), nn.ReLU())
            n = fields + 2
            self.register_buffer("iu", torch.triu_indices(n, n, 1))
            self.top = nn.Sequential(nn.Linear(d + n * (n - 1) // 2, 64), nn.ReLU(),
                                     nn.Linear(64, 1))

        def forward(self, cats, bag, bag_len, dense):      # (b, F) i64, (b, L) i64, (b,) i64
            embs = [q(cats[:, i] // self.m) * r(cats[:, i] % self.m)
                    for i, (q, r) in enumerate(zip(self.quot, self.rem))]
            hashed = (bag[..., None] * self.ha + self.hc) % self.p % self.rows  # (b, L, h)
            valid = torch.arange(bag.shape[1])[None] < bag_len[:, None]
            bag_vec = (self.bloom(hashed).sum(2) * valid[..., None]).sum(1)
            x = torch.stack(embs + [bag_vec, self.dense(dense)], 1)            # (b, n, d)
            inter = (x @ x.transpose(1, 2))[:, self.iu[0], self.iu[1]]
            return torch.sigmoid(self.top(torch.cat([x[:, -1], inter], 1)))

    # -- band-split RoFormer -----------------------------------------------------------------
    def rope_cs(n, dh, base=10000.0):
        inv = 1.0 / base ** (torch.arange(0, dh, 2, dtype=torch.float32) / dh)
        ang = torch.arange(n, dtype=torch.float32)[:, None] * inv
        return torch.cos(ang).repeat(1, 2), torch.sin(ang).repeat(1, 2)

    class RoAttn(nn.Module):
        def __init__(self, d, heads, n):
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.norm, self.qkv, self.out = nn.RMSNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
            cos, sin = rope_cs(n, self.dh)
            self.register_buffer("cos", cos)
            self.register_buffer("sin", sin)

        def forward(self, x):                                      # (B, n, d)
            bn, n, d = x.shape
            q, k, v = self.qkv(self.norm(x)).view(bn, n, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)

            def rot(z):
                a, b = z.chunk(2, -1)
                return z * self.cos + torch.cat([-b, a], -1) * self.sin
            o = F.scaled_dot_product_attention(rot(q), rot(k), v)
            return x + self.out(o.transpose(1, 2).reshape(bn, n, d))

    class BSRoFormer(nn.Module):
        """Lu et al. 2023 (band-split RoPE transformer for music separation): a complex
        spectrogram split into non-uniform bands, each band RMS-normed and projected by its own
        Linear, axial RoPE attention along time then across bands, and per band an MLP + GLU
        estimating a complex mask multiplied into the input."""

        def __init__(self, bands=(4, 4, 8, 8, 16, 25), t=32, d=48, heads=4, depth=2):
            super().__init__()
            self.bands = bands
            self.split = nn.ModuleList([nn.Sequential(nn.RMSNorm(2 * w), nn.Linear(2 * w, d))
                                        for w in bands])
            self.time = nn.ModuleList([RoAttn(d, heads, t) for _ in range(depth)])
            self.band = nn.ModuleList([RoAttn(d, heads, len(bands)) for _ in range(depth)])
            self.mask = nn.ModuleList([nn.Sequential(nn.RMSNorm(d), nn.Linear(d, 2 * d), nn.Tanh(),
                                                     nn.Linear(2 * d, 4 * w), nn.GLU(-1))
                                       for w in bands])

        def forward(self, spec):                                   # (b, 2, F, t)
            b, _, f, t = spec.shape
            x = spec.permute(0, 3, 2, 1)                           # (b, t, F, 2)
            parts = x.split(list(self.bands), 2)
            h = torch.stack([p(part.reshape(b, t, -1)) for p, part in zip(self.split, parts)],
                            2)                                     # (b, t, nb, d)
            nb, d = h.shape[2], h.shape[3]
            for ta, ba in zip(self.time, self.band):
                h = ta(h.transpose(1, 2).reshape(b * nb, t, d)).view(b, nb, t, d).transpose(1, 2)
                h = ba(h.reshape(b * t, nb, d)).view(b, t, nb, d)
            m = torch.cat([est(h[:, :, i]).view(b, t, -1, 2) for i, est in enumerate(self.mask)],
                          2)                                       # (b, t, F, 2)
            re = x[..., 0] * m[..., 0] - x[..., 1] * m[..., 1]
            im = x[..., 0] * m[..., 1] + x[..., 1] * m[..., 0]
            return torch.stack([re, im], 1).transpose(2, 3)        # (b, 2, F, t)

    # -- PaiNN -------------------------------------------------------------------------------
    class PaiNNLayer(nn.Module):
        def __init__(self, d, n_rbf, cutoff):
            super().__init__()
            self.d, self.cutoff = d, cutoff
            self.phi = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, 3 * d))
            self.w = nn.Linear(n_rbf, 3 * d)
            self.U, self.V = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.upd = nn.Sequential(nn.Linear(2 * d, d), nn.SiLU(), nn.Linear(d, 3 * d))
            self.register_buffer("n", torch.arange(1, n_rbf + 1, dtype=torch.float32))

        def forward(self, s, v, src, dst, vec):                    # s (N, d), v (N, 3, d)
            d = self.d
            r = vec.norm(dim=-1, keepdim=True)                     # (E, 1)
            rbf = torch.sin(self.n * math.pi * r / self.cutoff) / r
            fcut = 0.5 * (torch.cos(math.pi * r / self.cutoff) + 1) * (r < self.cutoff)
            x = self.phi(s)[src] * self.w(rbf) * fcut              # (E, 3d)
            ds, dvv, dvs = x.split(d, -1)
            dv = v[src] * dvv[:, None] + dvs[:, None] * (vec / r)[..., None]
            s = s.index_add(0, dst, ds)
            v = v.index_add(0, dst, dv)
            Uv, Vv = self.U(v), self.V(v)
            a = self.upd(torch.cat([s, Vv.norm(dim=1)], -1))
            avv, asv, ass = a.split(d, -1)
            v = v + avv[:, None] * Uv
            s = s + asv * (Uv * Vv).sum(1) + ass
            return s, v

    class PaiNN(nn.Module):
        """Schuett et al. 2021: rotation-equivariant message passing with a scalar and a
        3-vector feature per atom; a per-molecule energy read out by ``index_add`` over a
        batch vector."""

        def __init__(self, species=10, d=64, n_rbf=16, cutoff=5.0, layers=3, mols=4):
            super().__init__()
            self.emb = nn.Embedding(species, d)
            self.layers = nn.ModuleList([PaiNNLayer(d, n_rbf, cutoff) for _ in range(layers)])
            self.out = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, 1))
            self.d, self.mols = d, mols

        def forward(self, z, pos, edges, batch):
            src, dst = edges[0], edges[1]
            vec = pos[dst] - pos[src]
            s = self.emb(z)
            v = torch.zeros(z.shape[0], 3, self.d)
            for layer in self.layers:
                s, v = layer(s, v, src, dst, vec)
            e = self.out(s).squeeze(-1)
            return torch.zeros(self.mols).index_add(0, batch, e)

    # -- LIIF ----------------------------------------------------------------------------------
    class LIIF(nn.Module):
        """Chen et al. 2021: an encoder's features unfolded 3x3; every query coordinate reads
        the nearest latent of each of four shifted neighbours (``grid_sample`` nearest), an
        MLP of (latent, relative offset, cell size) predicts RGB, and the four predictions are
        blended by the areas of the opposite rectangles."""

        def __init__(self, ch=32, hidden=64):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(ch, ch, 3, padding=1))
            self.mlp = nn.Sequential(nn.Linear(9 * ch + 4, hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 3))

        def forward(self, img, coord, cell):                       # coord (b, q, 2) in [-1, 1]
            feat = self.enc(img)
            b, c, h, w = feat.shape
            feat = F.unfold(feat, 3, padding=1).view(b, 9 * c, h, w)
            rx, ry = 1.0 / w, 1.0 / h
            ys = -1 + ry + 2 * ry * torch.arange(h, dtype=torch.float32)
            xs = -1 + rx + 2 * rx * torch.arange(w, dtype=torch.float32)
            fy, fx = torch.meshgrid(ys, xs, indexing="ij")
            feat_coord = torch.stack([fy, fx], 0)[None].expand(b, 2, h, w)
            preds, areas = [], []
            for vy in (-1, 1):
                for vx in (-1, 1):
                    off = torch.tensor([vy * ry + 1e-6, vx * rx + 1e-6])
                    c_ = (coord + off).clamp(-1 + 1e-6, 1 - 1e-6)
                    grid = c_.flip(-1)[:, :, None]                # (b, q, 1, 2) as (x, y)
                    q_feat = F.grid_sample(feat, grid, mode="nearest", align_corners=False)
                    q_feat = q_feat[..., 0].transpose(1, 2)        # (b, q, 9c)
                    q_coord = F.grid_sample(feat_coord, grid, mode="nearest",
                                            align_corners=False)[..., 0].transpose(1, 2)
                    rel = (coord - q_coord) * torch.tensor([h, w], dtype=torch.float32)
                    rel_cell = cell * torch.tensor([h, w], dtype=torch.float32)
                    preds.append(self.mlp(torch.cat([q_feat, rel, rel_cell], -1)))
                    areas.append((rel[..., 0] * rel[..., 1]).abs() + 1e-9)
            total = areas[0] + areas[1] + areas[2] + areas[3]
            # each prediction weighted by the area of its diagonal opposite
            return sum(p * (a / total)[..., None]
                       for p, a in zip(preds, [areas[3], areas[2], areas[1], areas[0]]))

    # -- Point Transformer V3 serialization --------------------------------------------------
    class PTv3Serialized(nn.Module):
        """Wu et al. 2024: points quantized to a grid, a Morton (z-order) code by interleaving
        the bits of the three int64 cell indices with ``//``, ``%`` and multiplies, the
        points ``argsort``-ed by code, attention inside fixed patches of the serialized
        order, the features returned to the input order by a ``scatter`` of the permutation,
        then grid pooling: the max over each coarse voxel by ``index_reduce`` (amax), read
        back per point. Positions enter as octave Fourier features scaled by ``ldexp``."""

        def __init__(self, cin=3, d=64, heads=4, patch=32, bits=6, depth=2, classes=13, octaves=4):
            super().__init__()
            self.embed = nn.Sequential(nn.Linear(cin + 6 * octaves, d), nn.LayerNorm(d),
                                       nn.GELU())
            self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(d, heads, 2 * d, 0.0,
                                                                    batch_first=True,
                                                                    norm_first=True)
                                         for _ in range(depth)])
            self.head = nn.Linear(2 * d, classes)
            self.patch, self.bits, self.coarse, self.octaves = patch, bits, 2, octaves

        def forward(self, xyz, feats):                             # (b, n, 3), (b, n, 3)
            b, n, _ = xyz.shape
            lo = xyz.amin(1, keepdim=True)
            span = (xyz.amax(1, keepdim=True) - lo).clamp(min=1e-6)
            cells = ((xyz - lo) / span * (2 ** self.bits - 1)).floor().to(torch.int64)
            code = torch.zeros(b, n, dtype=torch.int64)
            for i in range(self.bits):
                bit = (cells // (2 ** i)) % 2                          # (b, n, 3)
                code = code + bit[..., 0] * (2 ** (3 * i)) + bit[..., 1] * (2 ** (3 * i + 1)) \
                    + bit[..., 2] * (2 ** (3 * i + 2))
            order = (code * n + torch.arange(n)).argsort(-1)       # ties by index
            # octave Fourier features of the normalized coordinates: x * 2^k by ldexp
            unit = (xyz - lo) / span
            k = torch.arange(self.octaves).repeat_interleave(3)
            ang = torch.ldexp(unit.repeat(1, 1, self.octaves), k) * math.pi
            h = self.embed(torch.cat([feats, ang.sin(), ang.cos()], -1))
            d = h.shape[-1]
            h = h.gather(1, order[..., None].expand(-1, -1, d))
            h = h.reshape(b * n // self.patch, self.patch, d)
            for blk in self.blocks:
                h = blk(h)
            h = h.reshape(b, n, d)
            back = torch.zeros_like(h).scatter(1, order[..., None].expand(-1, -1, d), h)
            # grid pooling: the max over each coarse voxel (the codes' top 2 bits per axis),
            # read back by every point of the voxel
            nv = 8 ** self.coarse
            voxel = code // (8 ** (self.bits - self.coarse)) + torch.arange(b)[:, None] * nv
            pooled = torch.zeros(b * nv, d).index_reduce(0, voxel.flatten(), back.flatten(0, 1),
                                                         "amax", include_self=False)
            return self.head(torch.cat([back, pooled[voxel]], -1))

    # -- sLSTM ---------------------------------------------------------------------------------
    class SLSTMCell(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.wx = nn.Linear(d, 4 * d)
            self.r = nn.Parameter(torch.randn(4, heads, self.dh, self.dh) / math.sqrt(self.dh))

        def forward(self, x):                                      # (b, t, d)
            b, t, d = x.shape
            hh, dh = self.h, self.dh
            gx = self.wx(x).view(b, t, 4, hh, dh)
            h = torch.zeros(b, hh, dh)
            c, n, m = torch.zeros(b, hh, dh), torch.ones(b, hh, dh), torch.zeros(b, hh, dh)
            outs = []
            for i in range(t):
                rec = torch.einsum("bhd,ghde->bghe", h, self.r)   # block-diagonal recurrence
                zi, ii, fi, oi = (gx[:, i] + rec).unbind(1)
                logf = F.logsigmoid(fi)
                m_new = torch.maximum(logf + m, ii)
                ig, fg = torch.exp(ii - m_new), torch.exp(logf + m - m_new)
                c = fg * c + ig * torch.tanh(zi)
                n = fg * n + ig
                h = torch.sigmoid(oi) * c / n
                m = m_new
                outs.append(h.reshape(b, d))
            return torch.stack(outs, 1)

    class SLSTMLM(nn.Module):
        """Beck et al. 2024's sLSTM: exponential input / forget gates kept finite by a running
        log-space maximum ``m``, a normalizer state, head-wise block-diagonal recurrent
        weights; pre-norm residual blocks with a gated FFN, group norm on the cell output."""

        def __init__(self, vocab=256, d=64, heads=4, depth=2):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.cells = nn.ModuleList([SLSTMCell(d, heads) for _ in range(depth)])
            self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.gn = nn.ModuleList([nn.GroupNorm(heads, d) for _ in range(depth)])
            self.ffn = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d),
                                                    nn.GLU(-1), nn.Linear(d, d))
                                      for _ in range(depth)])
            self.head = nn.Linear(d, vocab)

        def forward(self, ids):
            x = self.emb(ids)
            for cell, n1, gn, ffn in zip(self.cells, self.n1, self.gn, self.ffn):
                y = cell(n1(x))
                x = x + gn(y.transpose(1, 2)).transpose(1, 2)
                x = x + ffn(x)
            return self.head(x)

    # -- inputs ------------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def token_ids(b, t, vocab, seed):
        def make():
            return {"ids": torch.randint(0, vocab, (b, t), generator=gen(seed))}
        return make

    def ddim_inputs(b=4, seed=321):
        def make():
            g = gen(seed)
            return {"noise": torch.randn(b, 3, 16, 16, generator=g),
                    "y": torch.randint(0, 10, (b,), generator=g)}
        return make

    def rank_inputs(b=16, n=20, f=24, seed=322):
        def make():
            g = gen(seed)
            return {"feats": torch.randn(b, n, f, generator=g),
                    "labels": torch.rand(b, n, generator=g) * 4}   # graded, no ties
        return make

    def ctr_inputs(b=64, fields=4, bag=12, seed=323):
        def make():
            g = gen(seed)
            return {"cats": torch.randint(0, 100_000, (b, fields), generator=g),
                    "bag": torch.randint(0, 10**9, (b, bag), generator=g),
                    "bag_len": torch.randint(1, bag + 1, (b,), generator=g),
                    "dense": torch.randn(b, 8, generator=g)}
        return make

    def bsr_inputs(b=2, f=65, t=32, seed=324):
        def make():
            return {"spec": torch.randn(b, 2, f, t, generator=gen(seed))}
        return make

    def painn_inputs(mols=4, atoms=12, seed=325):
        def make():
            g = gen(seed)
            n = mols * atoms
            pos = torch.randn(n, 3, generator=g) * 1.5
            batch = torch.arange(mols).repeat_interleave(atoms)
            src, dst = [], []
            for m in range(mols):
                for i in range(atoms):
                    for j in range(atoms):
                        if i != j:
                            src.append(m * atoms + i)
                            dst.append(m * atoms + j)
            return {"z": torch.randint(0, 10, (n,), generator=g), "pos": pos,
                    "edges": torch.tensor([src, dst]), "batch": batch}
        return make

    def liif_inputs(b=2, h=16, q=256, scale=3.0, seed=326):
        def make():
            g = gen(seed)
            return {"img": torch.rand(b, 3, h, h, generator=g),
                    "coord": torch.rand(b, q, 2, generator=g) * 2 - 1,
                    "cell": torch.full((b, q, 2), 2.0 / (h * scale))}
        return make

    def ptv3_inputs(b=2, n=256, seed=327):
        def make():
            g = gen(seed)
            return {"xyz": torch.rand(b, n, 3, generator=g) * 4,
                    "feats": torch.rand(b, n, 3, generator=g)}
        return make

    return {
        "fbank_delta_lfr": (FbankLFR, (4, 8000)),
        "vit_reg_rope2d": (ViTRegRope, (4, 3, 32, 32)),
        "dab_detr_refine": (DABDETR, (2, 3, 64, 64)),
        "ddim_cfg_sampler": (DDIMSampler, ddim_inputs()),
        "knn_lm_interp": (KNNLM, token_ids(4, 32, 300, 328)),
        "listmle_ranker": (ListMLERanker, rank_inputs()),
        "qr_bloom_ctr": (QRBloomCTR, ctr_inputs()),
        "bs_roformer": (BSRoFormer, bsr_inputs()),
        "painn_mini": (PaiNN, painn_inputs()),
        "liif_upsampler": (LIIF, liif_inputs()),
        "ptv3_serialize": (PTv3Serialized, ptv3_inputs()),
        "slstm_lm": (SLSTMLM, token_ids(4, 24, 256, 329)),
    }
