"""The thirteenth round of ``bench_new_user_models``: a Mixtral-style sparse mixture of experts
whose tokens are dispatched to capacity-limited expert slots (top-2 routing, slot positions
from a ``cumsum`` of ``one_hot`` choices, ``scatter`` into and ``gather`` out of a slot buffer,
batched experts by ``bmm``), Medusa speculative-decoding heads (residual draft heads on a
shared LM head, ``topk`` candidates arranged into a fixed tree by index buffers, path scores
from ``log_softmax`` gathers), a vision-language connector (InternVL's pixel-shuffle token
merging by ``view``/``permute``, BLIP-2's Q-Former with learned queries cross-attending
through an ``nn.MultiheadAttention`` whose ``kdim`` differs from its width), a VITS text encoder
with its duration predictor and monotonic-path length regulator (``ceil(exp(logw))``,
``cumsum`` and sequence masks over a fixed frame budget, expansion by ``bmm``), SigLIP's
contrastive head (two towers, attention-probe pooling, the pairwise sigmoid loss by
``logsigmoid`` against ``2 * eye - 1``), ColBERT late interaction (masked MaxSim of normalized
token embeddings by ``einsum``), a neural-spline flow (rational-quadratic spline coupling:
``softmax``/``cumsum`` knots, bin search by counting, ``gather`` of knot parameters, linear
tails by ``where``), an AWQ 4-bit decoder MLP (weights packed two per ``uint8`` and unpacked by
shifts and masks, ``float16`` group scales cast up, a ``bfloat16`` embedding table), a Llama
step with Hugging Face's static KV cache (``index_copy_`` and index-put writes at
``cache_position``, position ids from a left-padded ``attention_mask`` by ``cumsum`` and
``masked_fill``, ``finfo.min`` masks), RT-DETR's multi-scale deformable attention
(``grid_sample`` over two levels with learned offsets around reference points), a Vocos vocoder
(ConvNeXt 1-D blocks, an inverse STFT as a DFT-basis ``conv_transpose1d`` over-lap-add divided
by the window envelope) and a 2-D Gaussian-splatting renderer (covariances from rotations and
scales, depth sort by ``argsort``, front-to-back compositing by an exclusive product as a
``cumsum`` of ``log1p``). Kept
apart so the main script stays readable."""

from __future__ import annotations


def thirteenth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(1.0 + 0.1 * torch.randn(d))

        def forward(self, x):
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    class CausalSelfAttention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h, self.qkv, self.o = heads, nn.Linear(d, 3 * d, bias=False), \
                nn.Linear(d, d, bias=False)

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o(a.transpose(1, 2).reshape(b, n, d))

    # -- Mixtral-style sparse MoE with capacity-limited dispatch ----------------------------
    class SparseMoE(nn.Module):
        """Top-2 routing; each (token, choice) pair takes the next free slot of its expert
        (first choices before second ones), pairs past the capacity are dropped to a spare
        row; the experts run batched over their slots and the outputs are gathered back."""

        def __init__(self, d, experts, hidden, tokens, k=2, factor=1.25):
            super().__init__()
            self.e, self.k = experts, k
            self.cap = int(math.ceil(factor * tokens * k / experts))
            self.router = nn.Linear(d, experts, bias=False)
            self.w1 = nn.Parameter(torch.randn(experts, d, hidden) * d ** -0.5)
            self.w3 = nn.Parameter(torch.randn(experts, d, hidden) * d ** -0.5)
            self.w2 = nn.Parameter(torch.randn(experts, hidden, d) * hidden ** -0.5)

        def forward(self, x):
            shape = x.shape
            x = x.reshape(-1, shape[-1])
            t, d = x.shape
            probs = self.router(x).softmax(-1)
            top_w, top_i = probs.topk(self.k, -1)
            top_w = top_w / top_w.sum(-1, keepdim=True)
            choice = top_i.t().reshape(-1)                       # (k * t,) first choices first
            onehot = F.one_hot(choice, self.e)
            pos = ((onehot.cumsum(0) - 1) * onehot).sum(-1)     # slot within the expert
            keep = pos < self.cap
            slot = torch.where(keep, choice * self.cap + pos, self.e * self.cap)
            token = torch.arange(t).repeat(self.k)
            buf = torch.zeros(self.e * self.cap + 1, d).scatter(
                0, slot[:, None].expand(-1, d), x[token])
            h = buf[:-1].view(self.e, self.cap, d)
            h = torch.bmm(F.silu(torch.bmm(h, self.w1)) * torch.bmm(h, self.w3), self.w2)
            h = torch.cat([h.reshape(-1, d), torch.zeros(1, d)], 0)
            y = h.gather(0, slot[:, None].expand(-1, d)) * \
                (top_w.t().reshape(-1) * keep.float())[:, None]
            return y.view(self.k, t, d).sum(0).view(shape)

    class MixtralMini(nn.Module):
        def __init__(self, vocab=2048, d=128, heads=4, layers=2, experts=8, tokens=64):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.attn = nn.ModuleList(CausalSelfAttention(d, heads) for _ in range(layers))
            self.moe = nn.ModuleList(SparseMoE(d, experts, 2 * d, tokens)
                                     for _ in range(layers))
            self.norms = nn.ModuleList(RMSNorm(d) for _ in range(2 * layers + 1))
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.emb(idx)
            for i, (attn, moe) in enumerate(zip(self.attn, self.moe)):
                x = x + attn(self.norms[2 * i](x))
                x = x + moe(self.norms[2 * i + 1](x))
            return self.head(self.norms[-1](x))

    # -- Medusa draft heads ----------------------------------------------------------------
    class MedusaMini(nn.Module):
        """A small decoder, then Medusa's heads on its last hidden state: head ``i`` guesses
        token ``t + i + 1``; the top-k guesses of each head form a fixed candidate tree whose
        paths are scored by summed log-probabilities (the verifier's ranking)."""

        def __init__(self, vocab=4096, d=128, heads=4, layers=2, draft=3, k=4):
            super().__init__()
            self.k = k
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(0.02 * torch.randn(256, d))
            self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(
                d, heads, 4 * d, 0.0, activation="gelu", batch_first=True, norm_first=True)
                for _ in range(layers))
            self.ln = nn.LayerNorm(d)
            self.lm_head = nn.Linear(d, vocab, bias=False)
            self.draft = nn.ModuleList(nn.Linear(d, d) for _ in range(draft))
            # the tree: every path picks one of the top-k of each head (k ** draft paths,
            # trimmed to the first 32 by index order), as rows of (head, rank)
            paths = torch.cartesian_prod(*[torch.arange(k)] * draft)[:32]
            self.register_buffer("paths", paths + torch.arange(draft) * k)  # flat (head, rank)
            self.register_buffer("mask", torch.triu(torch.full((256, 256), float("-inf")), 1))

        def forward(self, idx):
            n = idx.shape[1]
            x = self.emb(idx) + self.pos[:n]
            for blk in self.blocks:
                x = blk(x, src_mask=self.mask[:n, :n])
            h = self.ln(x)[:, -1]                                # (b, d)
            base = self.lm_head(h).log_softmax(-1)
            logps = torch.stack([self.lm_head(h + F.silu(f(h))).log_softmax(-1)
                                 for f in self.draft], 1)        # (b, draft, vocab)
            top_lp, top_id = logps.topk(self.k, -1)              # (b, draft, k)
            flat_lp = top_lp.flatten(1)                          # (b, draft * k)
            path_lp = flat_lp[:, self.paths].cumsum(-1)          # (b, paths, draft)
            first = base.max(-1, keepdim=True)
            ids = top_id.flatten(1)[:, self.paths]
            # the verifier's view: the base model's log-prob of each drafted token, per path
            agree = base.gather(1, ids.flatten(1)).view_as(path_lp)
            return torch.cat([first.values[:, :, None].expand(-1, path_lp.shape[1], 1),
                              path_lp, agree], -1)

    # -- VLM connector: pixel shuffle + Q-Former ---------------------------------------------
    class VLMConnector(nn.Module):
        """A one-layer ViT, InternVL's pixel shuffle (2 x 2 neighbouring tokens merged into one
        of 4x the width) with its MLP projector, and a Q-Former layer (learned queries: self-
        attention, cross-attention into the image tokens of another width, an MLP) projected
        to the language model's width; both token sets are concatenated."""

        def __init__(self, d=96, llm=256, patch=8, img=64, queries=16, qd=128, heads=4):
            super().__init__()
            self.side = img // patch
            self.patch = nn.Conv2d(3, d, patch, patch)
            self.pos = nn.Parameter(0.02 * torch.randn(1, self.side ** 2, d))
            self.vit = nn.TransformerEncoderLayer(d, heads, 4 * d, 0.0, activation="gelu",
                                                  batch_first=True, norm_first=True)
            self.mlp1 = nn.Sequential(nn.LayerNorm(4 * d), nn.Linear(4 * d, llm), nn.GELU(),
                                      nn.Linear(llm, llm))
            self.queries = nn.Parameter(0.02 * torch.randn(1, queries, qd))
            self.self_attn = nn.MultiheadAttention(qd, heads, batch_first=True)
            self.cross = nn.MultiheadAttention(qd, heads, kdim=d, vdim=d, batch_first=True)
            self.ln = nn.ModuleList(nn.LayerNorm(qd) for _ in range(3))
            self.ffn = nn.Sequential(nn.Linear(qd, 4 * qd), nn.GELU(), nn.Linear(4 * qd, qd))
            self.proj = nn.Linear(qd, llm)

        def pixel_shuffle(self, x, r=2):
            b, n, c = x.shape
            x = x.reshape(b, self.side, self.side // r, c * r)
            x = x.permute(0, 2, 1, 3).contiguous().view(b, self.side // r, self.side // r,
                                                         c * r * r)
            return x.permute(0, 2, 1, 3).contiguous().view(b, -1, c * r * r)

        def forward(self, x):
            t = self.vit(self.patch(x).flatten(2).transpose(1, 2) + self.pos)
            merged = self.mlp1(self.pixel_shuffle(t))
            q = self.queries.expand(t.shape[0], -1, -1)
            h = self.ln[0](q)
            q = q + self.self_attn(h, h, h, need_weights=False)[0]
            q = q + self.cross(self.ln[1](q), t, t, need_weights=False)[0]
            q = q + self.ffn(self.ln[2](q))
            return torch.cat([self.proj(q), merged], 1)

    # -- VITS duration predictor and length regulator -----------------------------------------
    class ChannelNorm(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.transpose(1, -1)).transpose(1, -1)

    class VITSMini(nn.Module):
        """A text encoder over a padded batch (lengths as an input), VITS's deterministic
        duration predictor, and the monotonic alignment path built from cumulative durations
        and sequence masks over a fixed budget of ``frames``, expanding the encoder's prior
        to frames for a convolutional decoder."""

        def __init__(self, vocab=128, d=96, frames=256, scale=4.0):
            super().__init__()
            self.frames, self.scale = frames, scale
            self.emb = nn.Embedding(vocab, d)
            self.enc = nn.ModuleList(nn.Conv1d(d, d, 5, padding=2) for _ in range(3))
            self.enc_norm = nn.ModuleList(ChannelNorm(d) for _ in range(3))
            self.dp = nn.ModuleList([nn.Conv1d(d, d, 3, padding=1), nn.Conv1d(d, d, 3,
                                                                             padding=1)])
            self.dp_norm = nn.ModuleList(ChannelNorm(d) for _ in range(2))
            self.dp_out = nn.Conv1d(d, 1, 1)
            self.stats = nn.Conv1d(d, 2 * 16, 1)
            self.dec = nn.Sequential(nn.Conv1d(16, 64, 7, padding=3), nn.LeakyReLU(0.1),
                                     nn.Conv1d(64, 64, 7, padding=3), nn.LeakyReLU(0.1),
                                     nn.Conv1d(64, 1, 7, padding=3), nn.Tanh())

        def forward(self, tokens, lengths):
            n = tokens.shape[1]
            x_mask = (torch.arange(n)[None, :] < lengths[:, None]).unsqueeze(1).float()
            x = self.emb(tokens).transpose(1, 2) * math.sqrt(self.emb.embedding_dim)
            for conv, norm in zip(self.enc, self.enc_norm):
                x = norm(x + F.relu(conv(x * x_mask))) * x_mask
            h = x.detach()
            for conv, norm in zip(self.dp, self.dp_norm):
                h = norm(F.relu(conv(h * x_mask)))
            logw = self.dp_out(h * x_mask) * x_mask
            w = torch.ceil(torch.exp(logw) * x_mask * self.scale)       # (b, 1, n)
            cum = torch.cumsum(w, -1).squeeze(1)                         # (b, n)
            steps = torch.arange(self.frames, dtype=cum.dtype)
            upto = (steps[None, None, :] < cum[:, :, None]).float()     # (b, n, frames)
            path = upto - F.pad(upto, (0, 0, 1, 0))[:, :-1]              # one token per frame
            y_len = torch.clamp_min(w.sum((1, 2)), 1).clamp(max=self.frames)
            y_mask = (steps[None, :] < y_len[:, None]).unsqueeze(1).float()
            m, logs = self.stats(x).split(16, 1)
            z = (torch.bmm(m, path) + torch.exp(torch.bmm(logs, path)) * 0.3) * y_mask
            return self.dec(z) * y_mask

    # -- SigLIP contrastive head -----------------------------------------------------------
    class SigLIPMini(nn.Module):
        """Tiny image and text towers, the image side pooled by an attention probe (MAP
        head), L2-normalized embeddings, and the pairwise sigmoid loss matrix: each pair's
        ``-logsigmoid(label * (t * <i, j> + b))`` with label +1 on the diagonal, -1 off it."""

        def __init__(self, d=128, heads=4, vocab=1000, patch=8):
            super().__init__()
            self.patch = nn.Conv2d(3, d, patch, patch)
            self.img_pos = nn.Parameter(0.02 * torch.randn(1, 16, d))
            self.img = nn.TransformerEncoderLayer(d, heads, 4 * d, 0.0, activation="gelu",
                                                  batch_first=True, norm_first=True)
            self.probe = nn.Parameter(0.02 * torch.randn(1, 1, d))
            self.map = nn.MultiheadAttention(d, heads, batch_first=True)
            self.map_ln, self.map_mlp = nn.LayerNorm(d), nn.Sequential(
                nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))
            self.tok = nn.Embedding(vocab, d)
            self.txt_pos = nn.Parameter(0.02 * torch.randn(1, 16, d))
            self.txt = nn.TransformerEncoderLayer(d, heads, 4 * d, 0.0, activation="gelu",
                                                  batch_first=True, norm_first=True)
            self.txt_ln, self.txt_head = nn.LayerNorm(d), nn.Linear(d, d)
            self.t_prime = nn.Parameter(torch.tensor(math.log(10.0)))
            self.bias = nn.Parameter(torch.tensor(-10.0))

        def forward(self, images, text):
            v = self.img(self.patch(images).flatten(2).transpose(1, 2) + self.img_pos)
            p = self.map(self.probe.expand(v.shape[0], -1, -1), v, v, need_weights=False)[0]
            v = (p + self.map_mlp(self.map_ln(p)))[:, 0]
            t = self.txt(self.tok(text) + self.txt_pos)
            t = self.txt_head(self.txt_ln(t)[:, -1])
            v, t = F.normalize(v, dim=-1), F.normalize(t, dim=-1)
            logits = v @ t.t() * self.t_prime.exp() + self.bias
            labels = 2 * torch.eye(logits.shape[0]) - 1
            return -F.logsigmoid(labels * logits)

    # -- ColBERT late interaction ----------------------------------------------------------
    class ColBERTMini(nn.Module):
        """One encoder for queries and padded documents (pad id 0), a linear down to 64
        dims, L2 normalization, and MaxSim: each query token's best document token, padding
        excluded, summed over the query's tokens."""

        def __init__(self, vocab=3000, d=128, heads=4, dim=64, layers=2):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(0.02 * torch.randn(1, 128, d))
            self.layers = nn.ModuleList(nn.TransformerEncoderLayer(
                d, heads, 4 * d, 0.0, activation="gelu", batch_first=True)
                for _ in range(layers))
            self.lin = nn.Linear(d, dim, bias=False)

        def encode(self, ids):
            keep = ids != 0
            x = self.emb(ids) + self.pos[:, :ids.shape[1]]
            for layer in self.layers:
                x = layer(x, src_key_padding_mask=~keep)
            return F.normalize(self.lin(x), dim=-1) * keep.unsqueeze(-1)

        def forward(self, query, docs):
            q, dv = self.encode(query), self.encode(docs)
            sim = torch.einsum("qd,nkd->nqk", q[0], dv)
            sim = sim.masked_fill((docs == 0)[:, None, :], -1e4)
            return sim.max(-1).values.sum(-1)

    # -- Neural spline flow ------------------------------------------------------------------
    def rq_spline(x, w, h, dv, bound=3.0, min_w=1e-3, min_h=1e-3, min_d=1e-3):
        """The rational-quadratic spline of Durkan et al. on [-bound, bound] with identity
        tails: ``x`` (..., ), unnormalized widths/heights (..., K), derivatives (..., K - 1);
        returns (y, log |dy/dx|)."""
        inside = (x >= -bound) & (x <= bound)
        k = w.shape[-1]
        w = min_w + (1 - min_w * k) * w.softmax(-1)
        h = min_h + (1 - min_h * k) * h.softmax(-1)
        cw = F.pad(torch.cumsum(w, -1), (1, 0)) * 2 * bound - bound
        ch = F.pad(torch.cumsum(h, -1), (1, 0)) * 2 * bound - bound
        cw = torch.cat([cw[..., :-1], torch.full_like(cw[..., -1:], bound)], -1)
        ch = torch.cat([ch[..., :-1], torch.full_like(ch[..., -1:], bound)], -1)
        edge = math.log(math.exp(1 - min_d) - 1)
        d = min_d + F.softplus(F.pad(dv, (1, 1), value=edge))
        xc = x.clamp(-bound, bound)
        probe = torch.cat([cw[..., :-1], cw[..., -1:] + 1e-6], -1)
        b = (xc[..., None] >= probe).sum(-1, keepdim=True) - 1
        x0, y0 = cw.gather(-1, b), ch.gather(-1, b)
        bw, bh = (cw[..., 1:] - cw[..., :-1]).gather(-1, b), (ch[..., 1:] - ch[..., :-1]).gather(-1, b)
        d0, d1 = d.gather(-1, b), d[..., 1:].gather(-1, b)
        s = bh / bw
        th = (xc[..., None] - x0) / bw
        t1 = th * (1 - th)
        den = s + (d1 + d0 - 2 * s) * t1
        y = y0 + bh * (s * th.pow(2) + d0 * t1) / den
        dydx = s.pow(2) * (d1 * th.pow(2) + 2 * s * t1 + d0 * (1 - th).pow(2)) / den.pow(2)
        y, lad = y.squeeze(-1), torch.log(dydx).squeeze(-1)
        return torch.where(inside, y, x), torch.where(inside, lad, torch.zeros_like(lad))

    class SplineCoupling(nn.Module):
        def __init__(self, dim, bins, hidden, flip):
            super().__init__()
            self.half, self.bins, self.flip = dim // 2, bins, flip
            self.net = nn.Sequential(nn.Linear(self.half, hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden), nn.ReLU(),
                                     nn.Linear(hidden, (dim - self.half) * (3 * bins - 1)))

        def forward(self, x):
            if self.flip:
                x = x.flip(-1)
            a, b = x[:, :self.half], x[:, self.half:]
            p = self.net(a).view(x.shape[0], b.shape[1], 3 * self.bins - 1)
            w, h, dv = p.split([self.bins, self.bins, self.bins - 1], -1)
            y, lad = rq_spline(b, w / 8.0, h / 8.0, dv)
            out = torch.cat([a, y], -1)
            return (out.flip(-1) if self.flip else out), lad.sum(-1)

    class NSFMini(nn.Module):
        """Four spline couplings alternating halves, and the standard-normal log density of
        the result plus the log-determinants (a flow's ``log_prob``)."""

        def __init__(self, dim=16, bins=8, hidden=128, layers=4):
            super().__init__()
            self.layers = nn.ModuleList(SplineCoupling(dim, bins, hidden, i % 2 == 1)
                                        for i in range(layers))

        def forward(self, x):
            total = torch.zeros(x.shape[0])
            for layer in self.layers:
                x, lad = layer(x)
                total = total + lad
            base = -0.5 * (x.pow(2) + math.log(2 * math.pi)).sum(-1)
            return torch.stack([base + total, total], -1)

    # -- AWQ int4 decoder MLP ----------------------------------------------------------------
    class AWQLinear(nn.Module):
        """A linear layer whose 4-bit weights are stored two per byte (low nibble first) with
        4-bit zero points and ``float16`` scales per group of input channels."""

        def __init__(self, cin, cout, group=32):
            super().__init__()
            self.group = group
            w = torch.randn(cout, cin) * cin ** -0.5
            g = w.view(cout, cin // group, group)
            lo, hi = g.amin(-1, keepdim=True), g.amax(-1, keepdim=True)
            scale = (hi - lo) / 15
            zero = torch.round(-lo / scale).clamp(0, 15)
            q = torch.round(g / scale + zero).clamp(0, 15).to(torch.uint8).view(cout, cin)
            self.register_buffer("qweight", q[:, 0::2] | (q[:, 1::2] << 4))
            z = zero.view(cout, -1).to(torch.uint8)
            self.register_buffer("qzeros", z[:, 0::2] | (z[:, 1::2] << 4))
            self.register_buffer("scales", scale.view(cout, -1).half())
            self.bias = nn.Parameter(0.01 * torch.randn(cout))

        def forward(self, x):
            q = torch.stack([self.qweight & 0xF, self.qweight >> 4], -1).flatten(1)
            z = torch.stack([self.qzeros & 0xF, self.qzeros >> 4], -1).flatten(1)
            cout = q.shape[0]
            w = (q.view(cout, -1, self.group).float() - z.float()[..., None]) * \
                self.scales.float()[..., None]
            return F.linear(x, w.view(cout, -1), self.bias)

    class AWQMini(nn.Module):
        def __init__(self, vocab=2048, d=128, layers=2):
            super().__init__()
            self.register_buffer("emb", (0.5 * torch.randn(vocab, d)).to(torch.bfloat16))
            self.norms = nn.ModuleList(RMSNorm(d) for _ in range(layers + 1))
            self.gate = nn.ModuleList(AWQLinear(d, 3 * d) for _ in range(layers))
            self.up = nn.ModuleList(AWQLinear(d, 3 * d) for _ in range(layers))
            self.down = nn.ModuleList(AWQLinear(3 * d, d) for _ in range(layers))
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = F.embedding(idx, self.emb).float()
            for i in range(len(self.gate)):
                h = self.norms[i](x)
                x = x + self.down[i](F.silu(self.gate[i](h)) * self.up[i](h))
            return self.head(self.norms[-1](x))

    # -- Llama step with a static KV cache -------------------------------------------------
    def rotate_half(x):
        a, b = x.chunk(2, -1)
        return torch.cat([-b, a], -1)

    class StaticCacheLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h, self.hd = heads, d // heads
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
            self.gate, self.up = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False)
            self.down = nn.Linear(2 * d, d, bias=False)

        def forward(self, x, k_cache, v_cache, cache_position, cos, sin, mask):
            b, n, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, n, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k_cache = k_cache.clone()
            k_cache.index_copy_(2, cache_position, k)
            v_cache = v_cache.clone()
            v_cache[:, :, cache_position] = v
            s = q @ k_cache.transpose(-1, -2) / math.sqrt(self.hd) + mask
            a = (s.softmax(-1) @ v_cache).transpose(1, 2).reshape(b, n, d)
            x = x + self.o(a)
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class StaticCacheLlama(nn.Module):
        """One prefill chunk against Hugging Face's static cache: a left-padded batch whose
        ``attention_mask`` spans the whole cache, ``cache_position`` naming the slots this
        chunk writes; rotary positions count only real tokens."""

        def __init__(self, vocab=2048, d=128, heads=4, layers=2):
            super().__init__()
            self.hd = d // heads
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(StaticCacheLayer(d, heads) for _ in range(layers))
            self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)
            self.register_buffer("inv", 1.0 / 10000 ** (torch.arange(0, self.hd, 2).float()
                                                        / self.hd))

        def forward(self, idx, attention_mask, cache_position, k_cache, v_cache):
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids = position_ids.masked_fill(attention_mask == 0, 1)
            pos = position_ids[:, cache_position]                                # (b, n)
            ang = pos[..., None].float() * self.inv
            ang = torch.cat([ang, ang], -1)[:, None]
            cos, sin = ang.cos(), ang.sin()
            total = attention_mask.shape[1]
            lowest = torch.finfo(torch.float32).min
            mask = torch.full((idx.shape[1], total), lowest)
            mask = mask * (torch.arange(total)[None, :] > cache_position[:, None])
            mask = mask[None, None].expand(idx.shape[0], 1, -1, -1).clone()
            pad = (mask == 0) & (attention_mask[:, None, None, :] == 0)
            mask = mask.masked_fill(pad, lowest)
            x = self.emb(idx)
            for i, layer in enumerate(self.layers):
                x = layer(x, k_cache[:, i], v_cache[:, i], cache_position, cos, sin, mask)
            return self.head(self.norm(x))

    # -- RT-DETR multi-scale deformable attention -------------------------------------------
    class MSDeformAttn(nn.Module):
        def __init__(self, d, heads, levels, points):
            super().__init__()
            self.h, self.l, self.p = heads, levels, points
            self.offsets = nn.Linear(d, heads * levels * points * 2)
            self.weights = nn.Linear(d, heads * levels * points)
            self.value, self.out = nn.Linear(d, d), nn.Linear(d, d)

        def forward(self, q, ref, value, shapes):
            b, nq, d = q.shape
            hd = d // self.h
            v = self.value(value).view(b, -1, self.h, hd)
            off = self.offsets(q).view(b, nq, self.h, self.l, self.p, 2)
            attw = self.weights(q).view(b, nq, self.h, self.l * self.p).softmax(-1)
            attw = attw.view(b, nq, self.h, self.l, self.p)
            norm = torch.tensor([[w, h] for h, w in shapes], dtype=torch.float32)
            loc = ref[:, :, None, None, None, :] + off / norm[None, None, None, :, None, :]
            grids = 2 * loc - 1
            out, start = [], 0
            for lvl, (h, w) in enumerate(shapes):
                vl = v[:, start:start + h * w].permute(0, 2, 3, 1).reshape(b * self.h, hd, h, w)
                start += h * w
                g = grids[:, :, :, lvl].transpose(1, 2).flatten(0, 1)    # (b*h, nq, p, 2)
                out.append(F.grid_sample(vl, g, mode="bilinear", padding_mode="zeros",
                                         align_corners=False))           # (b*h, hd, nq, p)
            samp = torch.stack(out, -2).flatten(-2)                      # (b*h, hd, nq, l*p)
            aw = attw.transpose(1, 2).reshape(b * self.h, 1, nq, self.l * self.p)
            o = (samp * aw).sum(-1).view(b, self.h * hd, nq).transpose(1, 2)
            return self.out(o)

    class RTDETRMini(nn.Module):
        """A two-level conv backbone, then an RT-DETR decoder layer: learned queries with
        reference points, self-attention, deformable cross-attention into both levels, an FFN,
        and the box / class heads (boxes refine the reference points in logit space)."""

        def __init__(self, d=96, queries=60, heads=4, classes=20, points=4):
            super().__init__()
            self.c3 = nn.Sequential(nn.Conv2d(3, 48, 3, 2, 1), nn.BatchNorm2d(48), nn.SiLU(),
                                    nn.Conv2d(48, d, 3, 2, 1), nn.BatchNorm2d(d), nn.SiLU())
            self.c4 = nn.Sequential(nn.Conv2d(d, d, 3, 2, 1), nn.BatchNorm2d(d), nn.SiLU())
            self.query = nn.Parameter(0.1 * torch.randn(1, queries, d))
            self.ref = nn.Parameter(torch.randn(1, queries, 2))
            self.self_attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.cross = MSDeformAttn(d, heads, 2, points)
            self.ln = nn.ModuleList(nn.LayerNorm(d) for _ in range(3))
            self.ffn = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))
            self.box = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))
            self.cls = nn.Linear(d, classes)

        def forward(self, x):
            f3 = self.c3(x)
            f4 = self.c4(f3)
            shapes = [tuple(f3.shape[-2:]), tuple(f4.shape[-2:])]
            value = torch.cat([f3.flatten(2), f4.flatten(2)], 2).transpose(1, 2)
            q = self.query.expand(x.shape[0], -1, -1)
            ref = self.ref.sigmoid().expand(x.shape[0], -1, -1)
            q = self.ln[0](q + self.self_attn(q, q, q, need_weights=False)[0])
            q = self.ln[1](q + self.cross(q, ref, value, shapes))
            q = self.ln[2](q + self.ffn(q))
            inv = torch.log(ref.clamp(1e-5, 1 - 1e-5) / (1 - ref).clamp(1e-5, 1 - 1e-5))
            delta = self.box(q)
            boxes = torch.cat([(delta[..., :2] + inv).sigmoid(), delta[..., 2:].sigmoid()], -1)
            return torch.cat([boxes, self.cls(q).sigmoid()], -1)

    # -- Vocos vocoder -----------------------------------------------------------------------
    class ConvNeXt1d(nn.Module):
        def __init__(self, c, hidden):
            super().__init__()
            self.dw = nn.Conv1d(c, c, 7, padding=3, groups=c)
            self.ln = nn.LayerNorm(c)
            self.pw1, self.pw2 = nn.Linear(c, hidden), nn.Linear(hidden, c)
            self.gamma = nn.Parameter(0.1 * torch.ones(c))

        def forward(self, x):
            h = self.dw(x).transpose(1, 2)
            h = self.gamma * self.pw2(F.gelu(self.pw1(self.ln(h))))
            return x + h.transpose(1, 2)

    class VocosMini(nn.Module):
        """Mel frames through ConvNeXt 1-D blocks to a log-magnitude and a phase per bin, then
        the inverse STFT a user exports: the inverse real DFT and the Hann window folded into
        one ``conv_transpose1d`` kernel (hop-strided overlap-add), divided by the summed
        squared window, ``n_fft // 2`` trimmed from each end."""

        def __init__(self, mels=32, c=128, hidden=384, layers=3, n_fft=64, hop=16):
            super().__init__()
            self.n_fft, self.hop = n_fft, hop
            self.embed = nn.Conv1d(mels, c, 7, padding=3)
            self.ln_in = nn.LayerNorm(c)
            self.blocks = nn.ModuleList(ConvNeXt1d(c, hidden) for _ in range(layers))
            self.ln_out = nn.LayerNorm(c)
            bins = n_fft // 2 + 1
            self.out = nn.Linear(c, 2 * bins)
            win = torch.hann_window(n_fft, periodic=True)
            t = torch.arange(n_fft, dtype=torch.float64)
            f = torch.arange(bins, dtype=torch.float64)
            ang = 2 * math.pi * f[:, None] * t[None, :] / n_fft
            weight = torch.full((bins, 1), 2.0, dtype=torch.float64)
            weight[0] = weight[-1] = 1.0
            cos = (weight * torch.cos(ang) / n_fft).float() * win
            sin = (-weight * torch.sin(ang) / n_fft).float() * win
            self.register_buffer("basis", torch.cat([cos, sin], 0)[:, None, :])
            self.register_buffer("win_sq", (win ** 2)[None, None, :])

        def forward(self, mel):
            x = self.embed(mel)
            x = self.ln_in(x.transpose(1, 2)).transpose(1, 2)
            for blk in self.blocks:
                x = blk(x)
            mag, phase = self.out(self.ln_out(x.transpose(1, 2))).transpose(1, 2).chunk(2, 1)
            mag = torch.exp(mag).clamp(max=100.0)
            spec = torch.cat([mag * torch.cos(phase), mag * torch.sin(phase)], 1)
            y = F.conv_transpose1d(spec, self.basis, stride=self.hop)
            env = F.conv_transpose1d(torch.ones(1, 1, spec.shape[-1]), self.win_sq,
                                     stride=self.hop)
            pad = self.n_fft // 2
            return (y / env.clamp(min=1e-11))[..., pad:-pad]

    # -- 2-D Gaussian splatting ---------------------------------------------------------------
    class SplatMini(nn.Module):
        """A latent code decoded by an MLP into N 2-D Gaussians (means, log scales, angles,
        colours, opacities, depths) rendered front to back at ``side x side``: conic from
        ``R S S^T R^T`` inverted in closed form, per-pixel alpha capped at 0.99, the Gaussians
        sorted by depth, transmittance an exclusive product of ``1 - alpha``."""

        def __init__(self, latent=64, n=96, side=32, hidden=256):
            super().__init__()
            self.n, self.side = n, side
            self.mlp = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden), nn.ReLU(),
                                     nn.Linear(hidden, n * 10))
            ys, xs = torch.meshgrid(torch.arange(side) + 0.5, torch.arange(side) + 0.5,
                                    indexing="ij")
            self.register_buffer("pix", torch.stack([xs, ys], -1).view(-1, 2))

        def forward(self, z):
            b = z.shape[0]
            p = self.mlp(z).view(b, self.n, 10)
            mean = torch.sigmoid(p[..., :2]) * self.side
            scale = torch.exp(p[..., 2:4] * 0.5 + 0.5)
            ang = p[..., 4] * math.pi
            color, opacity = torch.sigmoid(p[..., 5:8]), torch.sigmoid(p[..., 8])
            depth = p[..., 9]
            c, s = torch.cos(ang), torch.sin(ang)
            rot = torch.stack([c, -s, s, c], -1).view(b, self.n, 2, 2)
            m = rot * scale[..., None, :]
            cov = m @ m.transpose(-1, -2)
            det = cov[..., 0, 0] * cov[..., 1, 1] - cov[..., 0, 1] * cov[..., 1, 0]
            conic = torch.stack([cov[..., 1, 1], -cov[..., 0, 1], cov[..., 0, 0]], -1) / \
                det[..., None]
            order = torch.argsort(depth, -1)
            take = order[..., None]
            mean = mean.gather(1, take.expand(-1, -1, 2))
            conic = conic.gather(1, take.expand(-1, -1, 3))
            color = color.gather(1, take.expand(-1, -1, 3))
            opacity = opacity.gather(1, order)
            d = self.pix[None, :, None, :] - mean[:, None]               # (b, pix, n, 2)
            power = -0.5 * (conic[:, None, :, 0] * d[..., 0] ** 2 + conic[:, None, :, 2] *
                            d[..., 1] ** 2) - conic[:, None, :, 1] * d[..., 0] * d[..., 1]
            alpha = (opacity[:, None] * torch.exp(power.clamp(max=0.0))).clamp(max=0.99)
            # transmittance before each Gaussian: exp of an exclusive cumsum of log(1 - a)
            # (the log form of cumprod, which torch's ONNX exporters lack)
            logt = torch.log1p(-alpha)
            trans = torch.exp(torch.cumsum(logt, -1) - logt)
            img = torch.einsum("bpn,bnc->bpc", alpha * trans, color)
            return img.transpose(1, 2).reshape(b, 3, self.side, self.side)

    # -- inputs ------------------------------------------------------------------------------
    def tokens(vocab, n, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"idx": torch.randint(0, vocab, (1, n), generator=g)}
        return make

    def vits_inputs():
        g = torch.Generator().manual_seed(41)
        return {"tokens": torch.randint(1, 128, (1, 48), generator=g),
                "lengths": torch.tensor([40])}

    def siglip_inputs():
        g = torch.Generator().manual_seed(42)
        return {"images": torch.randn(4, 3, 32, 32, generator=g),
                "text": torch.randint(0, 1000, (4, 16), generator=g)}

    def colbert_inputs():
        g = torch.Generator().manual_seed(43)
        docs = torch.randint(1, 3000, (8, 64), generator=g)
        lens = torch.randint(20, 65, (8,), generator=g)
        docs = docs * (torch.arange(64)[None, :] < lens[:, None])
        return {"query": torch.randint(1, 3000, (1, 32), generator=g), "docs": docs}

    def static_cache_inputs():
        g = torch.Generator().manual_seed(44)
        b, total, n, layers, heads, hd = 2, 64, 16, 2, 4, 32
        mask = torch.ones(b, total, dtype=torch.int64)
        mask[1, :5] = 0                                            # the second row left-padded
        return {"idx": torch.randint(0, 2048, (b, n), generator=g),
                "attention_mask": mask,
                "cache_position": torch.arange(24, 24 + n),
                "k_cache": torch.randn(b, layers, heads, total, hd, generator=g),
                "v_cache": torch.randn(b, layers, heads, total, hd, generator=g)}

    return {
        "mixtral_moe": (MixtralMini, tokens(2048, 64, 51)),
        "medusa_heads": (MedusaMini, tokens(4096, 48, 52)),
        "vlm_connector": (VLMConnector, (1, 3, 64, 64)),
        "vits_duration": (VITSMini, vits_inputs),
        "siglip_mini": (SigLIPMini, siglip_inputs),
        "colbert_maxsim": (ColBERTMini, colbert_inputs),
        "nsf_spline": (NSFMini, (256, 16)),
        "awq_int4_mlp": (AWQMini, tokens(2048, 32, 53)),
        "static_cache_llama": (StaticCacheLlama, static_cache_inputs),
        "rtdetr_msdeform": (RTDETRMini, (1, 3, 64, 64)),
        "vocos_istft": (VocosMini, (1, 32, 64)),
        "gsplat_mini": (SplatMini, (1, 64)),
    }
