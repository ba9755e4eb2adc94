"""The twelfth round of ``bench_new_user_models``: a Gemma-2 decoding step (the KV cache of each
layer an input, grouped-query attention by ``repeat_interleave``, absolute positions offset by
the cache's length, alternating sliding-window and global causal masks, ``tanh`` soft-capping
of attention scores and of the tied-embedding logits, ``1 + w`` RMSNorm before and after each
sub-layer, a tanh-GELU GeGLU), a Phi-style parallel block (attention and MLP read the same
LayerNorm, rotary on the first quarter of each head only, Qwen3's per-head RMSNorm on
queries and keys), Mamba-2's chunked state-space dual (``segsum`` from ``cumsum`` and ``tril``
masks filled with ``-inf``, four-operand ``einsum``, a gated RMSNorm), Griffin's RG-LRU (a
causal depthwise Conv1d, a gated diagonal recurrence unrolled over time with ``softplus`` and
``sqrt(1 - a^2)``), a YOLOv8 detector (C2f blocks, SPPF, decoupled heads, distribution focal
loss decoding as a softmax integral by a fixed 1x1 conv, anchors from ``meshgrid``), a
Mask2Former decoder (masked cross-attention whose boolean mask comes from the previous
layer's mask logits resized bilinearly, fully masked rows unmasked), an E(n)-equivariant GNN
(an ``edge_index`` input, ``index_select`` gathers, ``scatter_add_`` sums and means and a
``scatter_reduce`` max over edges), a Nystromformer (landmark means, an iterative Moore-Penrose pseudo-inverse
of a softmax kernel, a depthwise ``(k, 1)`` conv on V), BitNet b1.58 (ternary weights and
8-bit activations quantized in ``forward`` with ``round``/``clamp`` and a straight-through
``detach``, squared ReLU), BigVGAN (Snake-beta activations between kaiser-sinc anti-aliasing
filters as grouped ``conv_transpose1d`` / ``conv1d`` with replicate padding, weight-normed
convs), xDeepFM (a compressed interaction network from ``einsum`` outer products and 1x1
Conv1d over one offset embedding table) and a Hyena operator (an implicit long filter from a
sine-activated MLP of positions with an exponential decay window, FFT convolution by
``rfft``/``irfft`` padded to ``2L``). Kept apart so the main script stays readable."""

from __future__ import annotations


def twelfth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    def rotate_half(x):
        a, b = x.chunk(2, -1)
        return torch.cat([-b, a], -1)

    def rope_tables(positions, dim, base=10000.0):
        """cos and sin of shape (len(positions), dim) for half-split rotary embeddings."""
        inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
        ang = positions.float()[:, None] * inv[None, :]
        ang = torch.cat([ang, ang], -1)
        return ang.cos(), ang.sin()

    class RMSNorm(nn.Module):
        """RMSNorm as Hugging Face's Llama / Qwen code writes it (``pow``, ``mean``,
        ``rsqrt``), not ``nn.RMSNorm``: the TorchScript ONNX exporter has no ``aten::rms_norm``."""

        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(1.0 + 0.1 * torch.randn(d))

        def forward(self, x):
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    # -- Gemma-2 decoding step with a KV cache ---------------------------------------------
    class GemmaRMSNorm(nn.Module):
        """Gemma's RMSNorm: the learned weight is an offset from one."""

        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(0.1 * torch.randn(d))

        def forward(self, x):
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
            return x * (1.0 + self.weight)

    class Gemma2Layer(nn.Module):
        def __init__(self, d, heads, kv_heads, window, softcap=50.0):
            super().__init__()
            self.h, self.kvh, self.hd = heads, kv_heads, d // heads
            self.window, self.softcap = window, softcap
            self.q = nn.Linear(d, heads * self.hd, bias=False)
            self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
            self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
            self.o = nn.Linear(heads * self.hd, d, bias=False)
            self.norms = nn.ModuleList([GemmaRMSNorm(d) for _ in range(4)])
            self.gate = nn.Linear(d, 3 * d, bias=False)
            self.up = nn.Linear(d, 3 * d, bias=False)
            self.down = nn.Linear(3 * d, d, bias=False)

        def forward(self, x, past_k, past_v, cos, sin, qpos):
            b, n, _ = x.shape
            h = self.norms[0](x)
            q = self.q(h).view(b, n, self.h, self.hd).transpose(1, 2)
            k = self.k(h).view(b, n, self.kvh, self.hd).transpose(1, 2)
            v = self.v(h).view(b, n, self.kvh, self.hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = torch.cat([past_k, k], 2)
            v = torch.cat([past_v, v], 2)
            rep = self.h // self.kvh
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            s = q @ k.transpose(-1, -2) * self.hd ** -0.5
            s = torch.tanh(s / self.softcap) * self.softcap
            kpos = torch.arange(k.shape[2])
            hidden = kpos[None, :] > qpos[:, None]
            if self.window:
                hidden = hidden | (kpos[None, :] <= qpos[:, None] - self.window)
            s = s.masked_fill(hidden, float("-inf"))
            a = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, n, -1)
            x = x + self.norms[1](self.o(a))
            h = self.norms[2](x)
            h = self.down(F.gelu(self.gate(h), approximate="tanh") * self.up(h))
            return x + self.norms[3](h)

    class Gemma2Step(nn.Module):
        """Decodes ``idx`` (the next tokens) given each layer's cached keys and values, stacked
        as (batch, layer, kv head, position, channel)."""

        def __init__(self, vocab=2048, d=128, heads=4, kv_heads=2, layers=4, window=16):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList([Gemma2Layer(d, heads, kv_heads,
                                                     window if i % 2 == 0 else 0)
                                         for i in range(layers)])
            self.norm, self.d, self.hd = GemmaRMSNorm(d), d, d // heads

        def forward(self, idx, past_k, past_v):
            n, past = idx.shape[1], past_k.shape[3]
            x = self.emb(idx) * self.d ** 0.5
            qpos = torch.arange(n) + past
            cos, sin = rope_tables(qpos, self.hd)
            for i, layer in enumerate(self.layers):
                x = layer(x, past_k[:, i], past_v[:, i], cos, sin, qpos)
            logits = self.norm(x) @ self.emb.weight.t()
            return torch.tanh(logits / 30.0) * 30.0

    # -- Phi-style parallel block, partial rotary, per-head q/k RMSNorm --------------------
    class PhiBlock(nn.Module):
        def __init__(self, d, heads, rot):
            super().__init__()
            self.h, self.hd, self.rot = heads, d // heads, rot
            self.ln = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.q_norm, self.k_norm = RMSNorm(self.hd), RMSNorm(self.hd)
            self.dense = nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def rotary(self, x, cos, sin):
            r, p = x[..., :self.rot], x[..., self.rot:]
            return torch.cat([r * cos + rotate_half(r) * sin, p], -1)

        def forward(self, x, cos, sin):
            b, n, d = x.shape
            h = self.ln(x)
            q, k, v = self.qkv(h).view(b, n, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
            q = self.rotary(self.q_norm(q), cos, sin)
            k = self.rotary(self.k_norm(k), cos, sin)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            a = self.dense(a.transpose(1, 2).reshape(b, n, d))
            return x + a + self.fc2(F.gelu(self.fc1(h), approximate="tanh"))

    class PhiMini(nn.Module):
        def __init__(self, vocab=2048, d=128, heads=4, layers=3):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.rot = (d // heads) // 4
            self.blocks = nn.ModuleList([PhiBlock(d, heads, self.rot) for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(self, idx):
            x = self.emb(idx)
            cos, sin = rope_tables(torch.arange(idx.shape[1]), self.rot)
            for blk in self.blocks:
                x = blk(x, cos, sin)
            return self.head(self.ln(x))

    # -- Mamba-2 chunked SSD ---------------------------------------------------------------
    def segsum(x):
        """out[..., i, j] = x[..., j+1] + ... + x[..., i] for j <= i, -inf above the diagonal."""
        t = x.shape[-1]
        x = x.unsqueeze(-1).expand(*x.shape, t)
        x = x.masked_fill(~torch.tril(torch.ones(t, t, dtype=torch.bool), -1), 0.0)
        x = torch.cumsum(x, -2)
        return x.masked_fill(~torch.tril(torch.ones(t, t, dtype=torch.bool)), float("-inf"))

    def ssd_chunked(x, a, b, c, chunk):
        """y of the selective scan h_t = exp(a_t) h_{t-1} + b_t x_t, y_t = c_t h_t, by blocks:
        x (B, L, H, P), a (B, L, H), b and c (B, L, H, N)."""
        bs, n, hh, p = x.shape
        nc = n // chunk
        x = x.reshape(bs, nc, chunk, hh, p)
        b = b.reshape(bs, nc, chunk, hh, -1)
        c = c.reshape(bs, nc, chunk, hh, -1)
        a = a.reshape(bs, nc, chunk, hh).permute(0, 3, 1, 2)
        a_cum = torch.cumsum(a, -1)
        decay = torch.exp(segsum(a))
        y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", c, b, decay, x)
        to_end = torch.exp(a_cum[..., -1:] - a_cum)
        states = torch.einsum("bclhn,bhcl,bclhp->bchpn", b, to_end, x)
        states = torch.cat([torch.zeros_like(states[:, :1]), states], 1)
        across = torch.exp(segsum(F.pad(a_cum[..., -1], (1, 0))))
        states = torch.einsum("bhzc,bchpn->bzhpn", across, states)[:, :-1]
        y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", c, states, torch.exp(a_cum))
        return (y_diag + y_off).reshape(bs, n, hh, p)

    class Mamba2Block(nn.Module):
        def __init__(self, d, state=16, headdim=16, conv=4, chunk=16):
            super().__init__()
            inner = 2 * d
            self.h, self.p, self.n, self.chunk, self.inner = inner // headdim, headdim, \
                state, chunk, inner
            conv_ch = inner + 2 * state
            self.norm = RMSNorm(d)
            self.in_proj = nn.Linear(d, 2 * inner + 2 * state + self.h, bias=False)
            self.conv = nn.Conv1d(conv_ch, conv_ch, conv, groups=conv_ch, padding=conv - 1)
            self.dt_bias = nn.Parameter(torch.rand(self.h) - 2.0)
            self.a_log = nn.Parameter(torch.log(torch.linspace(1.0, 8.0, self.h)))
            self.skip = nn.Parameter(torch.ones(self.h))
            self.out_norm = RMSNorm(inner)
            self.out_proj = nn.Linear(inner, d, bias=False)

        def forward(self, u):
            bs, n, _ = u.shape
            z, xbc, dt = self.in_proj(self.norm(u)).split(
                [self.inner, self.inner + 2 * self.n, self.h], -1)
            xbc = F.silu(self.conv(xbc.transpose(1, 2))[..., :n].transpose(1, 2))
            x, b, c = xbc.split([self.inner, self.n, self.n], -1)
            dt = F.softplus(dt + self.dt_bias)
            a = -torch.exp(self.a_log)
            x = x.view(bs, n, self.h, self.p)
            y = ssd_chunked(x * dt.unsqueeze(-1), a * dt,
                            b.unsqueeze(2).expand(bs, n, self.h, self.n),
                            c.unsqueeze(2).expand(bs, n, self.h, self.n), self.chunk)
            y = (y + x * self.skip[:, None]).reshape(bs, n, -1)
            return u + self.out_proj(self.out_norm(y * F.silu(z)))

    class Mamba2Mini(nn.Module):
        def __init__(self, vocab=1024, d=96, layers=3):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.Sequential(*[Mamba2Block(d) for _ in range(layers)])
            self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            return self.head(self.norm(self.blocks(self.emb(idx))))

    # -- Griffin's recurrent block (RG-LRU) ------------------------------------------------
    class RGLRU(nn.Module):
        """h_t = a_t * h_{t-1} + sqrt(1 - a_t^2) * (i_t * x_t), a_t = sigma(lambda)^(8 r_t)."""

        def __init__(self, d):
            super().__init__()
            self.gate_a, self.gate_x = nn.Linear(d, d), nn.Linear(d, d)
            self.lam = nn.Parameter(torch.linspace(0.5, 4.0, d))

        def forward(self, x):
            r, i = torch.sigmoid(self.gate_a(x)), torch.sigmoid(self.gate_x(x))
            log_a = -8.0 * r * F.softplus(self.lam)
            a = torch.exp(log_a)
            xin = x * i * torch.sqrt(1.0 - torch.exp(2.0 * log_a))
            h = torch.zeros_like(x[:, 0])
            out = []
            for t in range(x.shape[1]):
                h = a[:, t] * h + xin[:, t]
                out.append(h)
            return torch.stack(out, 1)

    class GriffinBlock(nn.Module):
        def __init__(self, d, width=4):
            super().__init__()
            self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
            self.branch_y, self.branch_x = nn.Linear(d, d), nn.Linear(d, d)
            self.conv = nn.Conv1d(d, d, width, groups=d, padding=width - 1)
            self.lru, self.out = RGLRU(d), nn.Linear(d, d)
            self.mlp_gate, self.mlp_up = nn.Linear(d, 3 * d), nn.Linear(d, 3 * d)
            self.mlp_down = nn.Linear(3 * d, d)

        def forward(self, x):
            n = x.shape[1]
            h = self.norm1(x)
            y = F.gelu(self.branch_y(h), approximate="tanh")
            u = self.conv(self.branch_x(h).transpose(1, 2))[..., :n].transpose(1, 2)
            x = x + self.out(y * self.lru(u))
            h = self.norm2(x)
            return x + self.mlp_down(F.gelu(self.mlp_gate(h), approximate="tanh") * self.mlp_up(h))

    class GriffinMini(nn.Module):
        def __init__(self, vocab=1024, d=96, layers=2):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.Sequential(*[GriffinBlock(d) for _ in range(layers)])
            self.norm = RMSNorm(d)

        def forward(self, idx):
            return self.norm(self.blocks(self.emb(idx))) @ self.emb.weight.t()

    # -- YOLOv8 with DFL decoding ----------------------------------------------------------
    class ConvBNSiLU(nn.Sequential):
        def __init__(self, cin, cout, k=3, s=1):
            super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, bias=False),
                             nn.BatchNorm2d(cout), nn.SiLU())

    class Bottleneck(nn.Module):
        def __init__(self, c, shortcut=True):
            super().__init__()
            self.cv1, self.cv2, self.add = ConvBNSiLU(c, c), ConvBNSiLU(c, c), shortcut

        def forward(self, x):
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class C2f(nn.Module):
        def __init__(self, cin, cout, n=1, shortcut=True):
            super().__init__()
            self.c = cout // 2
            self.cv1 = ConvBNSiLU(cin, 2 * self.c, 1)
            self.cv2 = ConvBNSiLU((2 + n) * self.c, cout, 1)
            self.m = nn.ModuleList([Bottleneck(self.c, shortcut) for _ in range(n)])

        def forward(self, x):
            ys = list(self.cv1(x).chunk(2, 1))
            ys.extend(m(ys[-1]) for m in self.m)
            return self.cv2(torch.cat(ys, 1))

    class SPPF(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.cv1, self.cv2 = ConvBNSiLU(c, c // 2, 1), ConvBNSiLU(c * 2, c, 1)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            x = self.cv1(x)
            y1 = self.pool(x)
            y2 = self.pool(y1)
            return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))

    class DFL(nn.Module):
        """The expected value of a 16-bin distribution: softmax, then a fixed 1x1 conv."""

        def __init__(self, bins=16):
            super().__init__()
            self.bins = bins
            self.conv = nn.Conv2d(bins, 1, 1, bias=False).requires_grad_(False)
            self.conv.weight.data[:] = torch.arange(bins, dtype=torch.float32).view(1, bins, 1, 1)

        def forward(self, x):
            b, _, a = x.shape
            return self.conv(x.view(b, 4, self.bins, a).transpose(2, 1).softmax(1)).view(b, 4, a)

    class YOLOv8Mini(nn.Module):
        def __init__(self, nc=10, w=(16, 32, 64, 96, 128), bins=16):
            super().__init__()
            self.nc, self.bins, self.strides = nc, bins, (8, 16, 32)
            self.stem = nn.Sequential(ConvBNSiLU(3, w[0], 3, 2), ConvBNSiLU(w[0], w[1], 3, 2),
                                      C2f(w[1], w[1]))
            self.p3 = nn.Sequential(ConvBNSiLU(w[1], w[2], 3, 2), C2f(w[2], w[2], 2))
            self.p4 = nn.Sequential(ConvBNSiLU(w[2], w[3], 3, 2), C2f(w[3], w[3], 2))
            self.p5 = nn.Sequential(ConvBNSiLU(w[3], w[4], 3, 2), C2f(w[4], w[4]), SPPF(w[4]))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.td4 = C2f(w[4] + w[3], w[3], shortcut=False)
            self.td3 = C2f(w[3] + w[2], w[2], shortcut=False)
            self.down3 = ConvBNSiLU(w[2], w[2], 3, 2)
            self.bu4 = C2f(w[2] + w[3], w[3], shortcut=False)
            self.down4 = ConvBNSiLU(w[3], w[3], 3, 2)
            self.bu5 = C2f(w[3] + w[4], w[4], shortcut=False)
            cb, cc = 4 * bins, max(nc, w[2])
            self.box = nn.ModuleList(nn.Sequential(ConvBNSiLU(c, cb), ConvBNSiLU(cb, cb),
                                                   nn.Conv2d(cb, 4 * bins, 1))
                                     for c in (w[2], w[3], w[4]))
            self.cls = nn.ModuleList(nn.Sequential(ConvBNSiLU(c, cc), ConvBNSiLU(cc, cc),
                                                   nn.Conv2d(cc, nc, 1))
                                     for c in (w[2], w[3], w[4]))
            self.dfl = DFL(bins)

        def forward(self, img):
            c3 = self.p3(self.stem(img))
            c4 = self.p4(c3)
            c5 = self.p5(c4)
            t4 = self.td4(torch.cat([self.up(c5), c4], 1))
            n3 = self.td3(torch.cat([self.up(t4), c3], 1))
            n4 = self.bu4(torch.cat([self.down3(n3), t4], 1))
            n5 = self.bu5(torch.cat([self.down4(n4), c5], 1))
            b = img.shape[0]
            boxes, scores, anchors, strides = [], [], [], []
            for feat, box, cls, s in zip((n3, n4, n5), self.box, self.cls, self.strides):
                _, _, h, w = feat.shape
                boxes.append(box(feat).view(b, 4 * self.bins, -1))
                scores.append(cls(feat).view(b, self.nc, -1))
                ys, xs = torch.meshgrid(torch.arange(h) + 0.5, torch.arange(w) + 0.5,
                                        indexing="ij")
                anchors.append(torch.stack([xs, ys], -1).view(-1, 2))
                strides.append(torch.full((h * w, 1), float(s)))
            anchor = torch.cat(anchors).transpose(0, 1).unsqueeze(0)
            stride = torch.cat(strides).transpose(0, 1)
            lt, rb = self.dfl(torch.cat(boxes, 2)).chunk(2, 1)
            x1y1, x2y2 = anchor - lt, anchor + rb
            dbox = torch.cat([(x1y1 + x2y2) / 2, x2y2 - x1y1], 1) * stride
            return torch.cat([dbox, torch.cat(scores, 2).sigmoid()], 1)

    # -- Mask2Former transformer decoder ---------------------------------------------------
    class Mask2FormerMini(nn.Module):
        def __init__(self, c=64, queries=16, classes=20, heads=4, layers=3):
            super().__init__()
            self.heads = heads
            self.backbone = nn.ModuleList([
                nn.Sequential(nn.Conv2d(3, c, 4, 4), nn.GroupNorm(8, c), nn.ReLU()),
                nn.Sequential(nn.Conv2d(c, c, 3, 2, 1), nn.GroupNorm(8, c), nn.ReLU()),
                nn.Sequential(nn.Conv2d(c, c, 3, 2, 1), nn.GroupNorm(8, c), nn.ReLU())])
            self.level_embed = nn.Parameter(0.02 * torch.randn(3, c))
            self.query_feat = nn.Parameter(torch.randn(queries, c))
            self.query_pos = nn.Parameter(torch.randn(queries, c))
            self.cross = nn.ModuleList(nn.MultiheadAttention(c, heads, batch_first=True)
                                       for _ in range(layers))
            self.self_attn = nn.ModuleList(nn.MultiheadAttention(c, heads, batch_first=True)
                                           for _ in range(layers))
            self.ffn = nn.ModuleList(nn.Sequential(nn.Linear(c, 2 * c), nn.ReLU(),
                                                   nn.Linear(2 * c, c)) for _ in range(layers))
            self.norms = nn.ModuleList(nn.LayerNorm(c) for _ in range(3 * layers + 1))
            self.cls = nn.Linear(c, classes + 1)
            self.mask_embed = nn.Sequential(nn.Linear(c, c), nn.ReLU(), nn.Linear(c, c))

        def predict(self, q, mask_feat, size):
            q = self.norms[-1](q)
            masks = torch.einsum("bqc,bchw->bqhw", self.mask_embed(q), mask_feat)
            attn = F.interpolate(masks, size=size, mode="bilinear", align_corners=False)
            hidden = attn.sigmoid().flatten(2) < 0.5
            hidden = hidden & ~hidden.all(-1, keepdim=True)
            hidden = hidden.unsqueeze(1).expand(-1, self.heads, -1, -1).flatten(0, 1)
            return self.cls(q), masks, hidden

        def forward(self, img):
            feats, x = [], img
            for stage in self.backbone:
                x = stage(x)
                feats.append(x)
            mask_feat = feats[0]
            memory = [feats[2 - i].flatten(2).transpose(1, 2) + self.level_embed[i]
                      for i in range(3)]
            sizes = [feats[2 - i].shape[-2:] for i in range(3)]
            b = img.shape[0]
            q = self.query_feat.unsqueeze(0).expand(b, -1, -1)
            pos = self.query_pos.unsqueeze(0)
            _, _, hidden = self.predict(q, mask_feat, sizes[0])
            for i, (cross, sa, ffn) in enumerate(zip(self.cross, self.self_attn, self.ffn)):
                mem = memory[i % 3]
                q = self.norms[3 * i](q + cross(q + pos, mem, mem, attn_mask=hidden,
                                                need_weights=False)[0])
                q = self.norms[3 * i + 1](q + sa(q + pos, q + pos, q, need_weights=False)[0])
                q = self.norms[3 * i + 2](q + ffn(q))
                logits, masks, hidden = self.predict(q, mask_feat, sizes[(i + 1) % 3])
            return torch.einsum("bqk,bqhw->bkhw", logits.softmax(-1)[..., :-1], masks.sigmoid())

    # -- E(n)-equivariant GNN over an edge list --------------------------------------------
    class EGNNLayer(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.edge = nn.Sequential(nn.Linear(2 * d + 1, d), nn.SiLU(), nn.Linear(d, d),
                                      nn.SiLU())
            self.coord = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, 1, bias=False))
            self.node = nn.Sequential(nn.Linear(3 * d, d), nn.SiLU(), nn.Linear(d, d))

        def forward(self, h, pos, src, dst):
            diff = pos.index_select(0, dst) - pos.index_select(0, src)
            radial = (diff * diff).sum(-1, keepdim=True)
            m = self.edge(torch.cat([h.index_select(0, dst), h.index_select(0, src), radial], 1))
            shift = diff / (radial.sqrt() + 1.0) * self.coord(m)
            # the reference code's unsorted_segment_sum / _mean: scatter_add_ by destination
            at = dst.unsqueeze(1)
            count = torch.zeros_like(pos[:, :1]).scatter_add_(0, at, torch.ones_like(radial))
            mean_shift = torch.zeros_like(pos).scatter_add_(0, at.expand_as(shift), shift) / \
                count.clamp(min=1.0)
            agg = torch.zeros_like(h).scatter_add_(0, at.expand_as(m), m)
            peak = torch.zeros_like(h).scatter_reduce(0, at.expand_as(m), m, "amax")
            return h + self.node(torch.cat([h, agg, peak], 1)), pos + mean_shift

    class EGNNMini(nn.Module):
        def __init__(self, atom_types=10, d=64, layers=4):
            super().__init__()
            self.emb = nn.Embedding(atom_types, d)
            self.layers = nn.ModuleList(EGNNLayer(d) for _ in range(layers))
            self.head = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, 1))

        def forward(self, atoms, pos, edge_index):
            src, dst = edge_index[0], edge_index[1]
            h = self.emb(atoms)
            for layer in self.layers:
                h, pos = layer(h, pos, src, dst)
            return torch.cat([self.head(h), pos], 1)

    # -- Nystromformer ---------------------------------------------------------------------
    class NystromAttention(nn.Module):
        def __init__(self, d, heads, landmarks, iters=6, conv=33):
            super().__init__()
            self.h, self.hd, self.m, self.iters = heads, d // heads, landmarks, iters
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.conv = nn.Conv2d(heads, heads, (conv, 1), padding=(conv // 2, 0), groups=heads,
                                  bias=False)

        def pinv(self, k):
            eye = torch.eye(k.shape[-1])
            v = k.transpose(-1, -2) / (k.abs().sum(-2).max() * k.abs().sum(-1).max())
            for _ in range(self.iters):
                kv = k @ v
                v = (0.25 * v) @ (13 * eye - kv @ (15 * eye - kv @ (7 * eye - kv)))
            return v

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
            q = q * self.hd ** -0.5
            q_l = q.reshape(b, self.h, self.m, n // self.m, self.hd).mean(-2)
            k_l = k.reshape(b, self.h, self.m, n // self.m, self.hd).mean(-2)
            k1 = (q @ k_l.transpose(-1, -2)).softmax(-1)
            k2 = (q_l @ k_l.transpose(-1, -2)).softmax(-1)
            k3 = (q_l @ k.transpose(-1, -2)).softmax(-1)
            y = (k1 @ self.pinv(k2)) @ (k3 @ v) + self.conv(v)
            return self.out(y.transpose(1, 2).reshape(b, n, d))

    class NystromformerMini(nn.Module):
        def __init__(self, vocab=1000, d=96, heads=4, landmarks=16, layers=2, classes=5):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(0.02 * torch.randn(512, d))
            self.attn = nn.ModuleList(NystromAttention(d, heads, landmarks)
                                      for _ in range(layers))
            self.mlp = nn.ModuleList(nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                                   nn.Linear(2 * d, d)) for _ in range(layers))
            self.ln = nn.ModuleList(nn.LayerNorm(d) for _ in range(2 * layers))
            self.head = nn.Linear(d, classes)

        def forward(self, idx):
            x = self.emb(idx) + self.pos[:idx.shape[1]]
            for i, (attn, mlp) in enumerate(zip(self.attn, self.mlp)):
                x = self.ln[2 * i](x + attn(x))
                x = self.ln[2 * i + 1](x + mlp(x))
            return self.head(x.mean(1))

    # -- BitNet b1.58 ----------------------------------------------------------------------
    class BitLinear(nn.Linear):
        """A linear layer with ternary weights and per-token 8-bit activations, quantized on
        every call (the straight-through estimator's ``detach`` as training code has it)."""

        def forward(self, x):
            s = 127.0 / x.abs().amax(-1, keepdim=True).clamp(min=1e-5)
            xq = x + ((x * s).round().clamp(-128, 127) / s - x).detach()
            w = self.weight
            ws = 1.0 / w.abs().mean().clamp(min=1e-5)
            wq = w + ((w * ws).round().clamp(-1, 1) / ws - w).detach()
            return F.linear(xq, wq, self.bias)

    class BitBlock(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h = heads
            self.n1, self.n2, self.n3 = RMSNorm(d), RMSNorm(d), RMSNorm(4 * d)
            self.qkv, self.o = BitLinear(d, 3 * d, bias=False), BitLinear(d, d, bias=False)
            self.up, self.down = BitLinear(d, 4 * d, bias=False), BitLinear(4 * d, d, bias=False)

        def forward(self, x, cos, sin):
            b, n, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, n, 3, self.h, -1).permute(2, 0, 3, 1, 4)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, n, d))
            return x + self.down(self.n3(F.relu(self.up(self.n2(x))) ** 2))

    class BitNetMini(nn.Module):
        def __init__(self, vocab=1024, d=128, heads=4, layers=3):
            super().__init__()
            self.emb, self.hd = nn.Embedding(vocab, d), d // heads
            self.blocks = nn.ModuleList(BitBlock(d, heads) for _ in range(layers))
            self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.emb(idx)
            cos, sin = rope_tables(torch.arange(idx.shape[1]), self.hd)
            for blk in self.blocks:
                x = blk(x, cos, sin)
            return self.head(self.norm(x))

    # -- BigVGAN ---------------------------------------------------------------------------
    def kaiser_sinc(cutoff, half_width, taps):
        """A low-pass filter: a sinc at ``cutoff`` (of the sample rate) under a Kaiser window."""
        half = taps // 2
        atten = 2.285 * (half - 1) * math.pi * 4 * half_width + 7.95
        beta = 0.1102 * (atten - 8.7) if atten > 50 else 0.5842 * (atten - 21) ** 0.4 + \
            0.07886 * (atten - 21)
        window = torch.kaiser_window(taps, beta=beta, periodic=False)
        t = torch.arange(-half, half) + 0.5 if taps % 2 == 0 else torch.arange(taps) - half
        f = 2 * cutoff * window * torch.sinc(2 * cutoff * t)
        return (f / f.sum()).view(1, 1, taps)

    class SnakeBeta(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.log_alpha = nn.Parameter(0.1 * torch.randn(c))
            self.log_beta = nn.Parameter(0.1 * torch.randn(c))

        def forward(self, x):
            alpha = self.log_alpha.exp()[None, :, None]
            beta = self.log_beta.exp()[None, :, None]
            return x + 1.0 / (beta + 1e-9) * torch.sin(x * alpha).pow(2)

    class AntiAliasAct(nn.Module):
        """Upsample 2x, Snake-beta, downsample 2x, each resampling a kaiser-sinc filter."""

        def __init__(self, c, taps=12):
            super().__init__()
            self.act, self.c, self.taps = SnakeBeta(c), c, taps
            self.register_buffer("filt", kaiser_sinc(0.25, 0.3, taps))
            self.pad = taps // 2 - 1
            self.crop_l = self.pad * 2 + (taps - 2) // 2
            self.crop_r = self.pad * 2 + (taps - 2 + 1) // 2

        def forward(self, x):
            filt = self.filt.expand(self.c, -1, -1)
            up = 2 * F.conv_transpose1d(F.pad(x, (self.pad, self.pad), mode="replicate"), filt,
                                        stride=2, groups=self.c)
            up = self.act(up[..., self.crop_l:-self.crop_r])
            half = self.taps // 2
            down = F.pad(up, (half - 1, half), mode="replicate")
            return F.conv1d(down, filt, stride=2, groups=self.c)

    def wn_conv(cin, cout, k, dilation=1):
        return nn.utils.parametrizations.weight_norm(
            nn.Conv1d(cin, cout, k, dilation=dilation, padding=dilation * (k - 1) // 2))

    class AMPBlock(nn.Module):
        def __init__(self, c, dilations=(1, 3, 5)):
            super().__init__()
            self.convs1 = nn.ModuleList(wn_conv(c, c, 3, d) for d in dilations)
            self.convs2 = nn.ModuleList(wn_conv(c, c, 3) for _ in dilations)
            self.acts = nn.ModuleList(AntiAliasAct(c) for _ in range(2 * len(dilations)))

        def forward(self, x):
            for i, (c1, c2) in enumerate(zip(self.convs1, self.convs2)):
                x = x + c2(self.acts[2 * i + 1](c1(self.acts[2 * i](x))))
            return x

    class BigVGANMini(nn.Module):
        def __init__(self, mels=32, c=64, ups=(4, 4)):
            super().__init__()
            self.pre = wn_conv(mels, c, 7)
            self.ups, self.blocks = nn.ModuleList(), nn.ModuleList()
            for r in ups:
                self.ups.append(nn.utils.parametrizations.weight_norm(
                    nn.ConvTranspose1d(c, c // 2, 2 * r, r, padding=r // 2)))
                c //= 2
                self.blocks.append(AMPBlock(c))
            self.act, self.post = AntiAliasAct(c), wn_conv(c, 1, 7)

        def forward(self, mel):
            x = self.pre(mel)
            for up, blk in zip(self.ups, self.blocks):
                x = blk(up(x))
            return torch.tanh(self.post(self.act(x)))

    # -- xDeepFM ---------------------------------------------------------------------------
    class XDeepFM(nn.Module):
        def __init__(self, cards=(100, 50, 30, 20, 200, 10, 40, 60, 25, 15, 80, 12), dense=8,
                     d=16, cin=(64, 64), mlp=(128, 64)):
            super().__init__()
            self.register_buffer("offsets", torch.tensor([0, *cards[:-1]]).cumsum(0))
            self.emb = nn.Embedding(sum(cards), d)
            self.first = nn.Embedding(sum(cards), 1)
            nn.init.normal_(self.emb.weight, std=0.1)
            nn.init.normal_(self.first.weight, std=0.01)
            self.dense_emb = nn.Parameter(0.1 * torch.randn(dense, d))
            self.dense_lin = nn.Linear(dense, 1)
            fields = len(cards) + dense
            self.cin = nn.ModuleList()
            prev, self.keep = fields, []
            for i, hk in enumerate(cin):
                self.cin.append(nn.Conv1d(prev * fields, hk, 1))
                last = i == len(cin) - 1
                self.keep.append(hk if last else hk // 2)
                prev = hk if last else hk // 2
            layers, width = [], fields * d
            for hid in mlp:
                layers += [nn.Linear(width, hid), nn.BatchNorm1d(hid), nn.ReLU()]
                width = hid
            self.dnn = nn.Sequential(*layers, nn.Linear(width, 1))
            self.cin_out = nn.Linear(sum(self.keep), 1)

        def forward(self, cat, num):
            ids = cat + self.offsets
            x0 = torch.cat([self.emb(ids), num.unsqueeze(-1) * self.dense_emb], 1)
            b, m, d = x0.shape
            xk, pooled = x0, []
            for conv, keep in zip(self.cin, self.keep):
                z = torch.einsum("bhd,bmd->bhmd", xk, x0).reshape(b, -1, d)
                z = F.relu(conv(z))
                if keep < z.shape[1]:
                    xk, direct = z.split([z.shape[1] - keep, keep], 1)
                else:
                    direct = z
                pooled.append(direct.sum(-1))
            logit = (self.first(ids).sum(1) + self.dense_lin(num) + self.dnn(x0.flatten(1))
                     + self.cin_out(torch.cat(pooled, 1)))
            return torch.sigmoid(logit)

    # -- Hyena -----------------------------------------------------------------------------
    class Sin(nn.Module):
        def __init__(self, d, w=10.0):
            super().__init__()
            self.freq = nn.Parameter(w * torch.ones(1, d))

        def forward(self, x):
            return torch.sin(self.freq * x)

    class HyenaFilter(nn.Module):
        """An implicit long-convolution filter: an MLP of position features times a decay."""

        def __init__(self, d, emb=17, order=64, max_len=512):
            super().__init__()
            t = torch.linspace(0, 1, max_len)[:, None]
            bands = (emb - 1) // 2
            w = 2 * math.pi * torch.arange(max_len)[:, None] / max_len
            f = torch.linspace(1e-4, bands - 1, bands)[None]
            z = torch.cat([t, torch.cos(f * w), -torch.sin(f * w)], -1)
            self.register_buffer("z", z)
            self.register_buffer("t", t)
            self.mlp = nn.Sequential(nn.Linear(emb, order), Sin(order), nn.Linear(order, order),
                                     Sin(order), nn.Linear(order, d, bias=False))
            fast, slow = math.log(1e-2) / 0.3, math.log(1e-2) / 1.5
            self.register_buffer("deltas", torch.linspace(slow, fast, d).abs()[None])

        def forward(self, n):
            h = self.mlp(self.z[:n]) * torch.exp(-self.t[:n] * self.deltas)
            return h.transpose(0, 1)

    class HyenaOperator(nn.Module):
        def __init__(self, d, order=2):
            super().__init__()
            self.d, self.order = d, order
            self.in_proj = nn.Linear(d, (order + 1) * d)
            self.short = nn.Conv1d((order + 1) * d, (order + 1) * d, 3, padding=2,
                                   groups=(order + 1) * d)
            self.filters = nn.ModuleList(HyenaFilter(d) for _ in range(order))
            self.bias = nn.Parameter(torch.randn(order, d, 1))
            self.out_proj = nn.Linear(d, d)

        def forward(self, x):
            n = x.shape[1]
            u = self.short(self.in_proj(x).transpose(1, 2))[..., :n]
            *gates, v = u.split(self.d, 1)
            for i, (gate, filt) in enumerate(zip(gates, self.filters)):
                k_f = torch.fft.rfft(filt(n), n=2 * n) / (2 * n)
                v_f = torch.fft.rfft(v, n=2 * n)
                y = torch.fft.irfft(v_f * k_f, n=2 * n, norm="forward")[..., :n]
                v = gate * (y + v * self.bias[i])
            return self.out_proj(v.transpose(1, 2))

    class HyenaMini(nn.Module):
        def __init__(self, vocab=1024, d=96, layers=2):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.mixers = nn.ModuleList(HyenaOperator(d) for _ in range(layers))
            self.mlps = nn.ModuleList(nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                                    nn.Linear(2 * d, d)) for _ in range(layers))
            self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(2 * layers + 1))
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.emb(idx)
            for i, (mix, mlp) in enumerate(zip(self.mixers, self.mlps)):
                x = x + mix(self.norms[2 * i](x))
                x = x + mlp(self.norms[2 * i + 1](x))
            return self.head(self.norms[-1](x))

    # -- inputs ----------------------------------------------------------------------------
    def tokens(vocab, n, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"idx": torch.randint(0, vocab, (1, n), generator=g)}
        return make

    def gemma_inputs():
        g = torch.Generator().manual_seed(31)
        return {"idx": torch.randint(0, 2048, (1, 4), generator=g),
                "past_k": torch.randn(1, 4, 2, 60, 32, generator=g),
                "past_v": torch.randn(1, 4, 2, 60, 32, generator=g)}

    def molecule_inputs():
        g = torch.Generator().manual_seed(32)
        n, k = 48, 8
        pos = 2.0 * torch.randn(n, 3, generator=g)
        dist = torch.cdist(pos, pos) + 1e9 * torch.eye(n)
        nbr = dist.topk(k, largest=False).indices
        edges = torch.stack([nbr.reshape(-1), torch.arange(n).repeat_interleave(k)])
        return {"atoms": torch.randint(0, 10, (n,), generator=g), "pos": pos,
                "edge_index": edges}

    def ctr_inputs():
        g = torch.Generator().manual_seed(33)
        cards = (100, 50, 30, 20, 200, 10, 40, 60, 25, 15, 80, 12)
        return {"cat": torch.stack([torch.randint(0, c, (64,), generator=g) for c in cards], 1),
                "num": torch.randn(64, 8, generator=g)}

    return {
        "gemma2_kvcache": (Gemma2Step, gemma_inputs),
        "phi_parallel": (PhiMini, tokens(2048, 64, 34)),
        "mamba2_ssd": (Mamba2Mini, tokens(1024, 64, 35)),
        "griffin_rglru": (GriffinMini, tokens(1024, 48, 36)),
        "yolov8_dfl": (YOLOv8Mini, (1, 3, 128, 128)),
        "mask2former_mini": (Mask2FormerMini, (1, 3, 128, 128)),
        "egnn_mini": (EGNNMini, molecule_inputs),
        "nystromformer_mini": (NystromformerMini, tokens(1000, 256, 37)),
        "bitnet_mini": (BitNetMini, tokens(1024, 64, 38)),
        "bigvgan_mini": (BigVGANMini, (1, 32, 32)),
        "xdeepfm_cin": (XDeepFM, ctr_inputs),
        "hyena_mini": (HyenaMini, tokens(1024, 128, 39)),
    }
