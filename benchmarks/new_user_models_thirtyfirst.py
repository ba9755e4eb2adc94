"""The thirty-first round of ``bench_new_user_models``: a Gated DeltaNet LM (the delta-rule
linear-attention recurrence S <- g S + beta (v - S k) k^T unrolled over tokens, L2-normalized
queries and keys, a short causal depthwise conv, a gated RMSNorm output), DeepSeek's native
sparse attention (compressed block keys by a mean over blocks, the top-n blocks per query by
``topk`` turned into a token mask by ``scatter`` + ``repeat_interleave``, a sliding window, the
three branches mixed by sigmoid gates), a Qwen3-style decoder (``F.rms_norm`` on each head's
queries and keys, YaRN-scaled rotary frequencies, ``F.scaled_dot_product_attention`` with
``enable_gqa=True`` and ``is_causal=True``, ``nn.RMSNorm``), a speculative-decoding verify step
(draft and target LMs score the same draft tokens, acceptance by a given uniform below
``p / q``, the accepted prefix by a ``cumsum`` of rejections, the residual distribution
``relu(p - q)`` read at the first rejection by ``gather``), Meta's HSTU generative recommender (pointwise SiLU
attention without a softmax, a relative time bias from log-bucketized timestamp gaps looked up
by a 2-D ``Embedding`` index), a TTT-Linear layer (a per-head inner linear model trained on the
tokens by one gradient step per mini-batch, in its dual form ``Q W - eta tril(Q K^T) E``),
DeepSeek-V3 routing (sigmoid affinities, an aux-free bias used only for choosing,
group-limited top-k by a group mask ``scatter``-ed from the top groups, the chosen weights
renormalized and ``scatter``-ed into a dense combine matrix, a shared expert), a paged-KV decode
step (key / value pools indexed by a per-sequence block table, lengths masked by ``arange``),
an FSQ image tokenizer (finite scalar quantization by ``tanh`` bounds and ``round``, codes to
int64 indices by a mixed-radix sum and back by ``//`` and ``%``), a soft rasterizer (triangle
coverage by a sigmoid of signed edge distances, barycentric depth, a softmax over faces with a
background term), nGPT (every hidden state on the unit hypersphere by ``F.normalize``, learned
eigen learning rates, scaled cosine logits) and a TabPFN-style in-context classifier (attention
across a row's features and then across rows, test rows attending to the training rows only,
training labels embedded as an input). Kept apart so the main script stays readable."""

from __future__ import annotations

import math


def thirtyfirst_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- Gated DeltaNet ----------------------------------------------------------------------
    class PreNormLM(nn.Module):
        """A pre-norm residual language model: an embedding (plus learned positions when
        ``seq``), ``depth`` blocks of a token mixer (``mixer()``) and a feed-forward net
        (``ffn_mult * d`` wide, activation ``act``), each behind its LayerNorm, and a head."""

        def __init__(self, vocab, d, depth, mixer, ffn_mult, act, seq=None):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(torch.randn(seq, d) * 0.02) if seq else None
            self.mix = nn.ModuleList([mixer() for _ in range(depth)])
            self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.ffn = nn.ModuleList([nn.Sequential(nn.Linear(d, ffn_mult * d), act(),
                                                    nn.Linear(ffn_mult * d, d))
                                      for _ in range(depth)])
            self.head = nn.Linear(d, vocab)

        def forward(self, ids):
            x = self.emb(ids) if self.pos is None else self.emb(ids) + self.pos
            for mix, n1, n2, ffn in zip(self.mix, self.n1, self.n2, self.ffn):
                x = x + mix(n1(x))
                x = x + ffn(n2(x))
            return self.head(x)

    class GatedDeltaLayer(nn.Module):
        """Yang et al. 2025: per head a (dv, dk) state decayed by g = exp(-softplus(.)) and
        corrected toward each new value by the delta rule with strength beta = sigmoid(.);
        q / k after a causal depthwise conv (kernel 4), SiLU and L2 normalization."""

        def __init__(self, d, heads):
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.conv = nn.Conv1d(3 * d, 3 * d, 4, groups=3 * d, padding=3)
            self.ab = nn.Linear(d, 2 * heads)
            self.gate, self.out = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.norm_w = nn.Parameter(torch.ones(self.dh))

        def forward(self, x):
            b, t, d = x.shape
            h, dh = self.h, self.dh
            u = self.conv(self.qkv(x).transpose(1, 2))[..., :t].transpose(1, 2)
            q, k, v = F.silu(u).view(b, t, 3, h, dh).unbind(2)
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1) / math.sqrt(dh)
            a, beta = self.ab(x).view(b, t, 2, h).unbind(2)
            g, beta = torch.exp(-F.softplus(a)), torch.sigmoid(beta)      # (b, t, h)
            state = torch.zeros(b, h, dh, dh)
            outs = []
            for i in range(t):
                kt, vt = k[:, i], v[:, i]                                  # (b, h, dh)
                state = state * g[:, i, :, None, None]
                err = vt - (state @ kt[..., None]).squeeze(-1)
                state = state + beta[:, i, :, None, None] * err[..., None] * kt[..., None, :]
                outs.append((state @ q[:, i, :, :, None]).squeeze(-1))
            o = torch.stack(outs, 1)                                       # (b, t, h, dh)
            o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm_w
            o = o.reshape(b, t, d) * F.silu(self.gate(x))
            return self.out(o)

    class GatedDeltaNetLM(PreNormLM):
        def __init__(self, vocab=256, d=96, heads=4, depth=2):
            super().__init__(vocab, d, depth, lambda: GatedDeltaLayer(d, heads), 2, nn.SiLU)

    # -- native sparse attention -------------------------------------------------------------
    class NSAttention(nn.Module):
        """Yuan et al. 2025: compressed attention over block summaries (a mean of each block's
        keys / values plus a learned projection), selected attention over the ``n_sel`` blocks
        the compressed scores rank highest (summed over the heads), sliding-window attention;
        per-head sigmoid gates mix the three."""

        def __init__(self, d, heads, block=8, n_sel=2, window=8):
            super().__init__()
            self.h, self.dh, self.bs, self.n_sel, self.w = heads, d // heads, block, n_sel, window
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ck, self.cv = nn.Linear(self.dh, self.dh), nn.Linear(self.dh, self.dh)
            self.gates = nn.Linear(d, 3 * heads)

        def forward(self, x):
            b, t, d = x.shape
            h, dh, bs = self.h, self.dh, self.bs
            nb = t // bs
            q, k, v = self.qkv(x).view(b, t, 3, h, dh).permute(2, 0, 3, 1, 4)  # (b, h, t, dh)
            scale = 1.0 / math.sqrt(dh)
            pos = torch.arange(t)
            # compressed branch: block j is visible from query i once it has started
            kc = self.ck(k.view(b, h, nb, bs, dh).mean(3))
            vc = self.cv(v.view(b, h, nb, bs, dh).mean(3))
            sc = (q @ kc.transpose(-1, -2)) * scale                        # (b, h, t, nb)
            block_start = torch.arange(nb) * bs
            sc = sc.masked_fill(block_start[None, :] > pos[:, None], float("-inf"))
            pc = sc.softmax(-1)
            o_cmp = pc @ vc
            # selected branch: the top blocks by importance shared over heads
            top = pc.sum(1).topk(self.n_sel, -1)[1]                        # (b, t, n_sel)
            chosen = torch.zeros(b, t, nb).scatter(-1, top, 1.0)
            chosen = chosen.repeat_interleave(bs, -1) > 0.5                 # (b, t, t)
            causal = pos[None, :] <= pos[:, None]
            s = (q @ k.transpose(-1, -2)) * scale                          # (b, h, t, t)
            sel = chosen[:, None] & causal
            o_sel = s.masked_fill(~sel, float("-inf")).softmax(-1) @ v
            # sliding window branch
            win = causal & (pos[:, None] - pos[None, :] < self.w)
            o_win = s.masked_fill(~win, float("-inf")).softmax(-1) @ v
            g = torch.sigmoid(self.gates(x)).view(b, t, 3, h).permute(2, 0, 3, 1)[..., None]
            o = g[0] * o_cmp + g[1] * o_sel + g[2] * o_win                 # (b, h, t, dh)
            return self.out(o.transpose(1, 2).reshape(b, t, d))

    class NSALM(PreNormLM):
        def __init__(self, vocab=320, d=128, heads=4, seq=64, depth=2):
            super().__init__(vocab, d, depth, lambda: NSAttention(d, heads), 4, nn.GELU, seq)

    # -- Qwen3-style decoder -----------------------------------------------------------------
    def yarn_inv_freq(dim, base=10000.0, factor=4.0, orig=32, beta_fast=32.0, beta_slow=1.0):
        """YaRN (Peng et al. 2023): frequencies whose wavelength exceeds the original context
        are interpolated by ``factor``, short ones kept, a linear ramp between."""
        pos = base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        extra, inter = 1.0 / pos, 1.0 / (factor * pos)

        def corr(rot):
            return dim * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))
        lo, hi = max(math.floor(corr(beta_fast)), 0), min(math.ceil(corr(beta_slow)), dim - 1)
        ramp = ((torch.arange(dim // 2, dtype=torch.float64) - lo) / max(hi - lo, 1e-3))
        keep = 1.0 - ramp.clamp(0, 1)
        return (inter * (1 - keep) + extra * keep).float()

    class Qwen3Block(nn.Module):
        def __init__(self, d, heads, kv_heads, seq):
            super().__init__()
            self.h, self.kv, self.dh = heads, kv_heads, d // heads
            self.q = nn.Linear(d, d, bias=False)
            self.kvp = nn.Linear(d, 2 * kv_heads * self.dh, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.q_norm = nn.Parameter(torch.ones(self.dh) + 0.1 * torch.randn(self.dh))
            self.k_norm = nn.Parameter(torch.ones(self.dh) + 0.1 * torch.randn(self.dh))
            self.n1, self.n2 = nn.RMSNorm(d, eps=1e-6), nn.RMSNorm(d, eps=1e-6)
            self.up = nn.Linear(d, 2 * 3 * d, bias=False)
            self.down = nn.Linear(3 * d, d, bias=False)
            ang = torch.outer(torch.arange(seq, dtype=torch.float32), yarn_inv_freq(self.dh))
            mscale = 0.1 * math.log(4.0) + 1.0
            self.register_buffer("cos", torch.cos(ang).repeat(1, 2) * mscale)
            self.register_buffer("sin", torch.sin(ang).repeat(1, 2) * mscale)

        def rope(self, x):
            x1, x2 = x.chunk(2, -1)
            return x * self.cos + torch.cat([-x2, x1], -1) * self.sin

        def forward(self, x):
            b, t, d = x.shape
            y = self.n1(x)
            q = self.q(y).view(b, t, self.h, self.dh)
            k, v = self.kvp(y).view(b, t, 2, self.kv, self.dh).unbind(2)
            q = F.rms_norm(q, (self.dh,), self.q_norm, 1e-6).transpose(1, 2)
            k = F.rms_norm(k, (self.dh,), self.k_norm, 1e-6).transpose(1, 2)
            q, k = self.rope(q), self.rope(k)
            a = F.scaled_dot_product_attention(q, k, v.transpose(1, 2), is_causal=True,
                                               enable_gqa=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
            gate, up = self.up(self.n2(x)).chunk(2, -1)
            return x + self.down(F.silu(gate) * up)

    class Qwen3Mini(nn.Module):
        def __init__(self, vocab=512, d=128, heads=8, kv_heads=2, seq=48, depth=2):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([Qwen3Block(d, heads, kv_heads, seq)
                                         for _ in range(depth)])
            self.norm = nn.RMSNorm(d, eps=1e-6)

        def forward(self, ids):
            x = self.emb(ids)
            for blk in self.blocks:
                x = blk(x)
            return self.norm(x) @ self.emb.weight.t()

    # -- speculative decoding verify ---------------------------------------------------------
    class CausalConvLM(nn.Module):
        """A small causal conv LM (left-padded ``Conv1d`` stack) as draft or target."""

        def __init__(self, vocab, d, layers, k=3):
            super().__init__()
            self.emb, self.k = nn.Embedding(vocab, d), k
            self.convs = nn.ModuleList([nn.Conv1d(d, 2 * d, k) for _ in range(layers)])
            self.head = nn.Linear(d, vocab)

        def forward(self, ids):
            x = self.emb(ids).transpose(1, 2)
            for conv in self.convs:
                x = x + F.glu(conv(F.pad(x, (self.k - 1, 0))), 1)
            return self.head(x.transpose(1, 2))

    class SpecDecodeVerify(nn.Module):
        """Leviathan et al. 2023: the target scores the prefix plus ``n`` draft tokens in one
        pass; draft token i is accepted when u_i < p_i(x_i) / q_i(x_i); the accepted count is
        the number of leading positions with no rejection so far; the next token is drawn from
        norm(relu(p - q)) at the first rejection (from p after the last draft when all pass),
        here returned as that distribution."""

        def __init__(self, vocab=256, n=4):
            super().__init__()
            self.n = n
            self.draft, self.target = CausalConvLM(vocab, 48, 2), CausalConvLM(vocab, 128, 4)

        def forward(self, ids, draft, u):                          # (b, T) (b, n) (b, n)
            n = self.n
            seq = torch.cat([ids, draft], 1)
            t = ids.shape[1]
            p = self.target(seq)[:, t - 1:].softmax(-1)            # (b, n + 1, V)
            q = self.draft(seq)[:, t - 1:t - 1 + n].softmax(-1)    # (b, n, V)
            px = p[:, :n].gather(-1, draft[..., None]).squeeze(-1)
            qx = q.gather(-1, draft[..., None]).squeeze(-1)
            accept = (u < (px / qx).clamp(max=1.0)).float()
            # the accepted prefix: no rejection up to and including i (a running count of
            # rejections, as ``cumprod`` has no ONNX export)
            n_acc = ((1.0 - accept).cumsum(-1) == 0).float().sum(-1, keepdim=True)  # (b, 1)
            resid = F.relu(p[:, :n] - q)
            resid = resid / resid.sum(-1, keepdim=True).clamp(min=1e-9)
            cand = torch.cat([resid, p[:, n:]], 1)                  # (b, n + 1, V)
            idx = n_acc.long()[..., None].expand(-1, 1, cand.shape[-1])
            nxt = cand.gather(1, idx).squeeze(1)
            return torch.cat([n_acc, nxt], -1)

    # -- HSTU --------------------------------------------------------------------------------
    class HSTULayer(nn.Module):
        """Zhai et al. 2024: U, V, Q, K = split(SiLU(f1(x))); A = SiLU(Q K^T + rab) / T under a
        causal mask (no softmax); y = f2(LayerNorm(A V) * U) + x. The relative bias adds a
        position-gap table and a time-gap table indexed by bucket(log |t_i - t_j|)."""

        def __init__(self, d, heads, seq, buckets=32):
            super().__init__()
            self.h, self.dh, self.buckets = heads, d // heads, buckets
            self.f1, self.f2 = nn.Linear(d, 4 * d), nn.Linear(d, d)
            self.norm_in, self.norm_av = nn.LayerNorm(d), nn.LayerNorm(d)
            self.time_bias = nn.Embedding(buckets, heads)
            self.pos_bias = nn.Parameter(torch.randn(heads, 2 * seq - 1) * 0.1)
            idx = torch.arange(seq)
            self.register_buffer("rel", (idx[:, None] - idx[None, :]) + seq - 1)
            self.register_buffer("causal", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

        def forward(self, x, ts):                                  # (b, T, d) (b, T)
            b, t, d = x.shape
            u, v, q, k = F.silu(self.f1(self.norm_in(x))).chunk(4, -1)
            q = q.view(b, t, self.h, self.dh).transpose(1, 2)
            k = k.view(b, t, self.h, self.dh).transpose(1, 2)
            v = v.view(b, t, self.h, self.dh).transpose(1, 2)
            gap = (ts[:, :, None] - ts[:, None, :]).abs()
            bucket = (torch.log1p(gap) / 0.5).floor().long().clamp(0, self.buckets - 1)
            rab = self.time_bias(bucket).permute(0, 3, 1, 2) + self.pos_bias[:, self.rel]
            a = F.silu(q @ k.transpose(-1, -2) + rab) / t
            a = a * self.causal
            y = (a @ v).transpose(1, 2).reshape(b, t, d)
            return x + self.f2(self.norm_av(y) * u)

    class HSTURec(nn.Module):
        def __init__(self, items=2000, d=64, heads=2, seq=50, depth=2):
            super().__init__()
            self.item = nn.Embedding(items, d)
            self.layers = nn.ModuleList([HSTULayer(d, heads, seq) for _ in range(depth)])
            self.norm = nn.LayerNorm(d)

        def forward(self, items, ts):
            x = self.item(items)
            for layer in self.layers:
                x = layer(x, ts)
            user = F.normalize(self.norm(x[:, -1]), dim=-1)
            return user @ F.normalize(self.item.weight, dim=-1).t()  # (b, items)

    # -- TTT-Linear --------------------------------------------------------------------------
    class TTTLinear(nn.Module):
        """Sun et al. 2024: each head's hidden state is a linear model W trained online on
        the self-supervised pairs (k_s, v_s) with a token-dependent rate eta_s; per
        mini-batch of ``m`` tokens one gradient step from the mini-batch's initial W, with
        the outputs in the dual form z = q W0 - tril(Q K^T) (eta * E), E = 2 (K W0 - V)."""

        def __init__(self, d, heads, m=16, base_lr=0.5):
            super().__init__()
            self.h, self.dh, self.m, self.base_lr = heads, d // heads, m, base_lr
            self.qkv, self.lr = nn.Linear(d, 3 * d), nn.Linear(d, heads)
            self.w0 = nn.Parameter(torch.randn(heads, self.dh, self.dh) * 0.02)
            self.gate, self.out = nn.Linear(d, d), nn.Linear(d, d)
            self.norm = nn.LayerNorm(self.dh)

        def forward(self, x):
            b, t, d = x.shape
            h, dh, m = self.h, self.dh, self.m
            q, k, v = self.qkv(x).view(b, t, 3, h, dh).permute(2, 0, 3, 1, 4)  # (b, h, t, dh)
            k = F.normalize(k, dim=-1)
            eta = (self.base_lr * torch.sigmoid(self.lr(x))).transpose(1, 2)[..., None]
            tri = torch.tril(torch.ones(m, m))
            w = self.w0.expand(b, h, dh, dh)
            outs = []
            for c in range(t // m):
                sl = slice(c * m, (c + 1) * m)
                qc, kc, vc, ec = q[:, :, sl], k[:, :, sl], v[:, :, sl], eta[:, :, sl]
                err = 2.0 * (kc @ w - vc) * ec                          # (b, h, m, dh)
                z = qc @ w - ((qc @ kc.transpose(-1, -2)) * tri) @ err
                outs.append(z)
                w = w - kc.transpose(-1, -2) @ err
            z = self.norm(torch.cat(outs, 2)).transpose(1, 2).reshape(b, t, d)
            return self.out(z * F.gelu(self.gate(x)))

    class TTTNet(PreNormLM):
        def __init__(self, vocab=256, d=128, heads=4, depth=2):
            super().__init__(vocab, d, depth, lambda: TTTLinear(d, heads), 4, nn.GELU)

    # -- DeepSeek-V3 MoE ---------------------------------------------------------------------
    class DSV3MoE(nn.Module):
        """DeepSeek-AI 2024: sigmoid affinities; an aux-loss-free bias added only to choose
        experts; experts in ``groups``, each group scored by its two best biased affinities,
        only the ``topk_groups`` best groups eligible; the top ``k`` experts' unbiased
        affinities renormalized and scaled; a shared SwiGLU expert always on."""

        def __init__(self, d=96, experts=16, hidden=64, groups=4, topk_groups=2, k=4,
                     scale=2.5):
            super().__init__()
            self.e, self.g, self.tg, self.k, self.scale = experts, groups, topk_groups, k, scale
            self.router = nn.Linear(d, experts, bias=False)
            self.register_buffer("bias", torch.randn(experts) * 0.1)
            self.w_in = nn.Parameter(torch.randn(experts, d, 2 * hidden) / math.sqrt(d))
            self.w_out = nn.Parameter(torch.randn(experts, hidden, d) / math.sqrt(hidden))
            self.shared_in, self.shared_out = nn.Linear(d, 2 * hidden), nn.Linear(hidden, d)

        def forward(self, x):                                      # (n, d)
            n = x.shape[0]
            s = torch.sigmoid(self.router(x))                      # (n, E)
            biased = s + self.bias
            gs = biased.view(n, self.g, -1).topk(2, -1)[0].sum(-1)  # (n, G)
            top_g = gs.topk(self.tg, -1)[1]
            gmask = torch.zeros(n, self.g).scatter(1, top_g, 1.0)
            emask = gmask.repeat_interleave(self.e // self.g, 1) > 0.5
            idx = biased.masked_fill(~emask, float("-inf")).topk(self.k, -1)[1]
            w = s.gather(1, idx)
            w = w / w.sum(-1, keepdim=True) * self.scale
            combine = torch.zeros(n, self.e).scatter(1, idx, w)    # (n, E)
            hid = torch.einsum("nd,edh->enh", x, self.w_in)
            a, b = hid.chunk(2, -1)
            y = torch.einsum("enh,ehd->end", F.silu(a) * b, self.w_out)
            routed = torch.einsum("ne,end->nd", combine, y)
            sa, sb = self.shared_in(x).chunk(2, -1)
            return routed + self.shared_out(F.silu(sa) * sb)

    class DSV3MoENet(nn.Module):
        def __init__(self, fin=32, d=96, depth=2, out=10):
            super().__init__()
            self.inp = nn.Linear(fin, d)
            self.moe = nn.ModuleList([DSV3MoE(d) for _ in range(depth)])
            self.norms = nn.ModuleList([nn.RMSNorm(d) for _ in range(depth)])
            self.head = nn.Linear(d, out)

        def forward(self, x):                                      # (b, T, fin)
            b, t, _ = x.shape
            h = self.inp(x).reshape(b * t, -1)
            for moe, norm in zip(self.moe, self.norms):
                h = h + moe(norm(h))
            return self.head(h).view(b, t, -1)

    # -- paged KV-cache decode ---------------------------------------------------------------
    class PagedDecode(nn.Module):
        """vLLM's paged attention, one decode step: each sequence's keys and values live in
        fixed-size blocks of a shared pool, found through its row of the block table; the
        positions past its length are masked; the new token's key / value join at the end;
        grouped-query heads by ``repeat_interleave``; returns the logits and the new K / V
        for the caller to write back."""

        def __init__(self, d=128, heads=8, kv_heads=2, vocab=512):
            super().__init__()
            self.h, self.kv, self.dh = heads, kv_heads, d // heads
            self.q = nn.Linear(d, d)
            self.kvp = nn.Linear(d, 2 * kv_heads * self.dh)
            self.o = nn.Linear(d, d)
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.head = nn.Linear(d, vocab)

        def forward(self, x, k_pool, v_pool, block_table, lens):
            # x (b, d); pools (blocks, bs, kv, dh); block_table (b, mb) int64; lens (b,) int64
            b, d = x.shape
            y = self.norm1(x)
            q = self.q(y).view(b, self.h, 1, self.dh)
            k_new, v_new = self.kvp(y).view(b, 2, self.kv, self.dh).unbind(1)
            mb, bs = block_table.shape[1], k_pool.shape[1]
            k = k_pool[block_table].reshape(b, mb * bs, self.kv, self.dh)
            v = v_pool[block_table].reshape(b, mb * bs, self.kv, self.dh)
            k = torch.cat([k, k_new[:, None]], 1).transpose(1, 2)  # (b, kv, L + 1, dh)
            v = torch.cat([v, v_new[:, None]], 1).transpose(1, 2)
            rep = self.h // self.kv
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            valid = torch.arange(mb * bs)[None, :] < lens[:, None]
            valid = torch.cat([valid, torch.ones(b, 1, dtype=torch.bool)], 1)
            s = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh)     # (b, h, 1, L + 1)
            s = s.masked_fill(~valid[:, None, None], float("-inf"))
            a = (s.softmax(-1) @ v).reshape(b, d)
            x = x + self.o(a)
            x = x + self.mlp(self.norm2(x))
            return torch.cat([self.head(x), k_new.flatten(1), v_new.flatten(1)], -1)

    # -- FSQ tokenizer -----------------------------------------------------------------------
    class FSQTokenizer(nn.Module):
        """Mentzer et al. 2023: the encoder's latent, ``len(levels)`` channels, is bounded by
        tanh (shifted for even level counts) and rounded to the grid; codes become one int64
        index by a mixed-radix sum, decoded back into grid values by ``//`` and ``%`` before
        the decoder - the round trip a tokenizer serving a generator runs."""

        def __init__(self, levels=(8, 8, 8, 5, 5), c=64):
            super().__init__()
            lv = torch.tensor(levels, dtype=torch.float32)
            basis = torch.cumprod(torch.tensor([1] + list(levels[:-1])), 0)
            self.register_buffer("levels", lv)
            self.register_buffer("basis", basis)                   # int64
            self.register_buffer("half_l", (lv - 1) * (1 + 1e-3) / 2)
            self.register_buffer("offset", torch.where(lv % 2 == 0, 0.5, 0.0))
            self.register_buffer("shift", torch.atanh(self.offset / self.half_l))
            self.register_buffer("half_w", torch.div(lv, 2, rounding_mode="floor"))
            n = len(levels)
            self.enc = nn.Sequential(nn.Conv2d(3, c, 4, 2, 1), nn.SiLU(),
                                     nn.Conv2d(c, c, 4, 2, 1), nn.SiLU(), nn.Conv2d(c, n, 1))
            self.dec = nn.Sequential(nn.Conv2d(n, c, 3, 1, 1), nn.SiLU(),
                                     nn.ConvTranspose2d(c, c, 4, 2, 1), nn.SiLU(),
                                     nn.ConvTranspose2d(c, 3, 4, 2, 1))

        def forward(self, img):
            z = self.enc(img).permute(0, 2, 3, 1)                  # (b, h, w, L)
            bounded = torch.tanh(z + self.shift) * self.half_l - self.offset
            codes = torch.round(bounded)                           # in [-half_w, half_w]
            idx = ((codes + self.half_w).long() * self.basis).sum(-1)  # (b, h, w) int64
            digits = (idx[..., None] // self.basis) % self.levels.long()
            zq = (digits.float() - self.half_w) / self.half_w
            rec = self.dec(zq.permute(0, 3, 1, 2))
            return torch.cat([rec.flatten(1), idx.flatten(1).float()], 1)

    # -- soft rasterizer ---------------------------------------------------------------------
    class SoftRasterizer(nn.Module):
        """Liu et al. 2019: a latent code deforms a base set of triangles and colours them; each
        pixel's coverage of each face is sigmoid(d / sigma) of its signed distance to the
        nearest edge; depth by barycentric interpolation; colours blended by a softmax over
        faces of coverage-weighted inverse depth, against a background."""

        def __init__(self, faces=24, side=32, latent=16, sigma=0.02, gamma=0.1):
            super().__init__()
            self.f, self.sigma, self.gamma = faces, sigma, gamma
            g = torch.Generator().manual_seed(7)
            centers = torch.rand(faces, 1, 2, generator=g) * 1.4 - 0.7
            ang = torch.rand(faces, 1, generator=g) * 2 * math.pi + \
                torch.tensor([0.0, 2.1, 4.2])
            tri = centers + 0.3 * torch.stack([torch.cos(ang), torch.sin(ang)], -1)
            depth = torch.rand(faces, 1, 1, generator=g).expand(faces, 3, 1) + 0.5
            self.register_buffer("base", torch.cat([tri, depth], -1))     # (F, 3, 3)
            self.mlp = nn.Sequential(nn.Linear(latent, 128), nn.ReLU(),
                                     nn.Linear(128, faces * 12))
            ax = torch.linspace(-1, 1, side)
            yy, xx = torch.meshgrid(ax, ax, indexing="ij")
            self.register_buffer("pix", torch.stack([xx, yy], -1).view(-1, 2))  # (P, 2)

        def forward(self, z):                                      # (b, latent)
            b = z.shape[0]
            out = self.mlp(z).view(b, self.f, 12)
            verts = self.base + 0.1 * torch.tanh(out[..., :9]).view(b, self.f, 3, 3)
            color = torch.sigmoid(out[..., 9:])                    # (b, F, 3)
            a = verts[..., :2]                                     # (b, F, 3, 2)
            e = a.roll(-1, 2) - a                                  # edge i: v_i -> v_{i+1}
            p = self.pix[None, :, None, None, :]                   # (1, P, 1, 1, 2)
            rel = p - a[:, None]                                   # (b, P, F, 3, 2)
            cross = e[:, None, ..., 0] * rel[..., 1] - e[:, None, ..., 1] * rel[..., 0]
            area = (e[..., 0, 0] * e[..., 2, 1] - e[..., 0, 1] * e[..., 2, 0])  # (b, F)
            sign = torch.sign(-area)[:, None, :, None]
            dist = cross * sign / e.norm(dim=-1)[:, None].clamp(min=1e-6)
            cover = torch.sigmoid(dist.min(-1)[0] / self.sigma)   # (b, P, F)
            bary = cross.roll(-1, -1) / cross.sum(-1, keepdim=True)  # opposite edge / 2 area
            zpix = (bary * verts[:, None, :, :, 2]).sum(-1)        # (b, P, F)
            logit = (1.0 / zpix.clamp(min=0.1)) / self.gamma
            logit = logit.masked_fill(cover < 1e-3, -1e4) + torch.log(cover.clamp(min=1e-6))
            bg = torch.full_like(logit[..., :1], 1.0 / self.gamma)
            w = torch.cat([logit, bg], -1).softmax(-1)
            img = (w[..., :-1, None] * color[:, None]).sum(2) + w[..., -1:] * 0.5
            return img.transpose(1, 2)                             # (b, 3, P)

    # -- nGPT --------------------------------------------------------------------------------
    class NGPTBlock(nn.Module):
        """Loshchilov et al. 2024: h <- norm(h + alpha (norm(block(h)) - h)) for attention and
        MLP; q and k normalized per head and scaled by a learned s_qk, softmax scale
        sqrt(d_k); the MLP's u and v scaled by s_u and s_v sqrt(d)."""

        def __init__(self, d, heads, seq):
            super().__init__()
            self.h, self.dh, self.d = heads, d // heads, d
            self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
            self.uv, self.down = nn.Linear(d, 8 * d, bias=False), nn.Linear(4 * d, d, bias=False)
            self.alpha_a = nn.Parameter(torch.full((d,), 0.05))
            self.alpha_m = nn.Parameter(torch.full((d,), 0.05))
            self.s_qk = nn.Parameter(torch.ones(heads, 1, self.dh))
            self.s_u, self.s_v = nn.Parameter(torch.ones(4 * d)), nn.Parameter(torch.ones(4 * d))
            self.register_buffer("causal", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))

        def forward(self, h):
            b, t, d = h.shape
            q, k, v = self.qkv(h).view(b, t, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
            q = F.normalize(q, dim=-1) * self.s_qk
            k = F.normalize(k, dim=-1) * self.s_qk
            s = (q @ k.transpose(-1, -2)) * math.sqrt(self.dh)
            a = s.masked_fill(self.causal, float("-inf")).softmax(-1) @ v
            ha = F.normalize(self.o(a.transpose(1, 2).reshape(b, t, d)), dim=-1)
            h = F.normalize(h + self.alpha_a * (ha - h), dim=-1)
            u, v2 = self.uv(h).chunk(2, -1)
            hm = F.normalize(self.down(u * self.s_u * F.silu(v2 * self.s_v * math.sqrt(d))),
                             dim=-1)
            return F.normalize(h + self.alpha_m * (hm - h), dim=-1)

    class NGPT(nn.Module):
        def __init__(self, vocab=400, d=128, heads=4, seq=48, depth=3):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([NGPTBlock(d, heads, seq) for _ in range(depth)])
            self.unemb = nn.Parameter(torch.randn(vocab, d))
            self.s_z = nn.Parameter(torch.full((vocab,), 10.0))

        def forward(self, ids):
            h = F.normalize(self.emb(ids), dim=-1)
            for blk in self.blocks:
                h = blk(h)
            return (h @ F.normalize(self.unemb, dim=-1).t()) * self.s_z

    # -- TabPFN-style in-context classifier --------------------------------------------------
    class TwoAxisLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.feat = nn.MultiheadAttention(d, heads, batch_first=True)
            self.rows_q, self.rows_kv = nn.Linear(d, d), nn.Linear(d, 2 * d)
            self.rows_o, self.h = nn.Linear(d, d), heads
            self.n1, self.n2, self.n3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
            self.ffn = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

        def forward(self, x, n_train):                             # (b, N, C, d)
            b, n, c, d = x.shape
            y = self.n1(x).reshape(b * n, c, d)
            x = x + self.feat(y, y, y, need_weights=False)[0].view(b, n, c, d)
            # across rows: every row attends to the training rows only
            y = self.n2(x).transpose(1, 2)                         # (b, C, N, d)
            dh = d // self.h
            q = self.rows_q(y).view(b, c, n, self.h, dh).transpose(2, 3)
            k, v = self.rows_kv(y[:, :, :n_train]).view(b, c, n_train, 2, self.h, dh) \
                .permute(3, 0, 1, 4, 2, 5)
            a = ((q @ k.transpose(-1, -2)) / math.sqrt(dh)).softmax(-1) @ v
            a = self.rows_o(a.transpose(2, 3).reshape(b, c, n, d)).transpose(1, 2)
            x = x + a
            return x + self.ffn(self.n3(x))

    class TabPFNMini(nn.Module):
        """Hollmann et al. 2025 (TabPFN v2's layout): each cell a token (a value embedding plus
        a feature embedding); a label column holds the embedded training labels and a learned
        query for test rows; layers alternate attention across a row's cells and across rows
        (to the training rows); the test rows' label tokens give the class logits."""

        def __init__(self, features=10, classes=4, d=64, heads=4, depth=2, n_train=48):
            super().__init__()
            self.n_train = n_train
            self.val = nn.Linear(1, d)
            self.feat_emb = nn.Parameter(torch.randn(features, d) * 0.1)
            self.label_emb = nn.Embedding(classes, d)
            self.test_query = nn.Parameter(torch.randn(d) * 0.1)
            self.layers = nn.ModuleList([TwoAxisLayer(d, heads) for _ in range(depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, x, y_train):                             # (b, N, F) (b, n_train)
            b, n, f = x.shape
            mu = x[:, :self.n_train].mean(1, keepdim=True)
            sd = x[:, :self.n_train].std(1, keepdim=True) + 1e-6
            cells = self.val(((x - mu) / sd)[..., None]) + self.feat_emb   # (b, N, F, d)
            lab = torch.cat([self.label_emb(y_train),
                             self.test_query.expand(b, n - self.n_train, -1)], 1)
            h = torch.cat([cells, lab[:, :, None]], 2)             # (b, N, F + 1, d)
            for layer in self.layers:
                h = layer(h, self.n_train)
            return self.head(self.norm(h[:, self.n_train:, -1]))  # (b, n_test, classes)

    # -- inputs ------------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def token_ids(b, t, vocab, seed):
        def make():
            return {"ids": torch.randint(0, vocab, (b, t), generator=gen(seed))}
        return make

    def spec_inputs(b=4, t=24, n=4, vocab=256, seed=311):
        def make():
            g = gen(seed)
            return {"ids": torch.randint(0, vocab, (b, t), generator=g),
                    "draft": torch.randint(0, vocab, (b, n), generator=g),
                    "u": torch.rand(b, n, generator=g)}
        return make

    def hstu_inputs(b=8, t=50, items=2000, seed=312):
        def make():
            g = gen(seed)
            gaps = torch.rand(b, t, generator=g) * 3600.0
            return {"items": torch.randint(0, items, (b, t), generator=g),
                    "ts": torch.cumsum(gaps, 1)}
        return make

    def paged_inputs(b=4, d=128, blocks=40, bs=16, kv=2, dh=16, mb=8, seed=313):
        def make():
            g = gen(seed)
            table = torch.randperm(blocks, generator=g)[:b * mb].view(b, mb)
            return {"x": torch.randn(b, d, generator=g),
                    "k_pool": torch.randn(blocks, bs, kv, dh, generator=g),
                    "v_pool": torch.randn(blocks, bs, kv, dh, generator=g),
                    "block_table": table,
                    "lens": torch.tensor([128, 37, 100, 5])}
        return make

    def tab_inputs(b=4, n=64, f=10, n_train=48, classes=4, seed=314):
        def make():
            g = gen(seed)
            return {"x": torch.randn(b, n, f, generator=g) * 3 + 1,
                    "y_train": torch.randint(0, classes, (b, n_train), generator=g)}
        return make

    return {
        "gated_deltanet": (GatedDeltaNetLM, token_ids(4, 32, 256, 315)),
        "nsa_sparse_attn": (NSALM, token_ids(2, 64, 320, 316)),
        "qwen3_qknorm_gqa": (Qwen3Mini, token_ids(4, 48, 512, 317)),
        "spec_decode_verify": (SpecDecodeVerify, spec_inputs()),
        "hstu_generative": (HSTURec, hstu_inputs()),
        "ttt_linear": (TTTNet, token_ids(4, 64, 256, 318)),
        "deepseekv3_moe": (DSV3MoENet, (4, 16, 32)),
        "paged_kv_decode": (PagedDecode, paged_inputs()),
        "fsq_tokenizer": (FSQTokenizer, (2, 3, 64, 64)),
        "soft_rasterizer": (SoftRasterizer, (2, 16)),
        "ngpt_hypersphere": (NGPT, token_ids(4, 48, 400, 319)),
        "tabpfn_incontext": (TabPFNMini, tab_inputs()),
    }
