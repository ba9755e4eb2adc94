"""The eleventh round of ``bench_new_user_models``: a gated PixelCNN (masked convs whose weight is
``weight * mask`` computed in ``forward``, ``chunk`` into tanh and sigmoid halves), CoordConv with a
soft-argmax head (``linspace`` and ``meshgrid`` built from the input's shape, a radius channel, a
softmax over flattened pixels weighting the coordinates), Longformer's sliding-window attention (a
banded mask from ``arange`` comparisons plus a global token), a Mistral-style decoder (grouped-query
attention by ``expand`` + ``reshape``, a sliding-window causal mask from ``tril``/``triu`` with
diagonal offsets, RoPE from ``torch.outer``, SwiGLU, tied embeddings), Informer's ProbSparse
attention (a sparsity measure over sampled keys, ``topk``, a gather of the active queries and an
``index_put`` of their context into the mean of V, circular-padded Conv1d embeddings, a distilling
Conv1d + ELU + MaxPool1d), N-BEATS (trend and seasonality bases, backcast residuals), TimesNet
(``torch.fft.rfft`` amplitudes weighting period folds of the series into 2D, an Inception block),
SegNet (``max_pool2d`` with ``return_indices`` and ``max_unpool2d``), Show-Attend-Tell (an
``nn.LSTMCell`` decoder unrolled over teacher-forced tokens with additive attention), SuperPoint
(a 65-way softmax, its dustbin dropped, ``pixel_shuffle`` to a full-resolution heatmap, max-pool
NMS, L2-normalized descriptors), a MiDaS-style DPT (ViT tokens reassembled into a feature pyramid
with a projected readout, ``ConvTranspose2d``, ``align_corners=True`` bilinear fusion), a
Stable-Diffusion VAE decoder (GroupNorm + SiLU resnet blocks, single-head spatial attention,
nearest upsampling), a self-normalizing tabular net (SELU, CELU, ``AlphaDropout``,
``nn.Bilinear`` feature interaction), a hypernetwork's dynamic convolution (``F.conv2d`` with a
weight computed from an input, grouped per sample) and a Demucs-style waveform U-Net (Conv1d +
GLU, a bidirectional LSTM bottleneck, ConvTranspose1d with cropped skips). Kept apart so the
main script stays readable."""

from __future__ import annotations


def eleventh_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- gated PixelCNN --------------------------------------------------------------------
    class MaskedConv2d(nn.Conv2d):
        """A conv that sees only pixels above and to the left (type ``A`` hides the centre too):
        its weight is multiplied by a fixed mask on every call, as PixelCNN code does."""

        def __init__(self, kind, cin, cout, k):
            super().__init__(cin, cout, k, padding=k // 2)
            mask = torch.ones_like(self.weight)
            mask[:, :, k // 2, k // 2 + (kind == "B"):] = 0
            mask[:, :, k // 2 + 1:] = 0
            self.register_buffer("mask", mask)

        def forward(self, x):
            return F.conv2d(x, self.weight * self.mask, self.bias, padding=self.padding)

    class GatedBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = MaskedConv2d("B", c, 2 * c, 3)
            self.out = nn.Conv2d(c, c, 1)

        def forward(self, x):
            a, b = self.conv(x).chunk(2, dim=1)
            return x + self.out(torch.tanh(a) * torch.sigmoid(b))

    class PixelCNNMini(nn.Module):
        def __init__(self, c=48, depth=6, levels=16):
            super().__init__()
            self.levels = levels
            self.first = MaskedConv2d("A", 3, c, 7)
            self.blocks = nn.Sequential(*[GatedBlock(c) for _ in range(depth)])
            self.head = nn.Sequential(nn.ReLU(), nn.Conv2d(c, c, 1), nn.ReLU(),
                                      nn.Conv2d(c, 3 * levels, 1))

        def forward(self, img):
            logits = self.head(self.blocks(self.first(img)))
            b, _, h, w = logits.shape
            return logits.view(b, 3, self.levels, h, w).log_softmax(2)

    # -- CoordConv + soft-argmax -----------------------------------------------------------
    def add_coords(x):
        """x with three more channels: its pixel coordinates in [-1, 1] and their radius."""
        b, _, h, w = x.shape
        ys, xs = torch.meshgrid(torch.linspace(-1.0, 1.0, h), torch.linspace(-1.0, 1.0, w),
                                indexing="ij")
        coords = torch.stack([xs, ys, torch.sqrt(xs * xs + ys * ys)])
        return torch.cat([x, coords.unsqueeze(0).expand(b, -1, -1, -1)], 1)

    class CoordConv(nn.Module):
        def __init__(self, cin, cout, stride=1):
            super().__init__()
            self.conv = nn.Conv2d(cin + 3, cout, 3, stride, 1, bias=False)
            self.bn = nn.BatchNorm2d(cout)

        def forward(self, x):
            return F.relu(self.bn(self.conv(add_coords(x))))

    class CoordConvKeypoints(nn.Module):
        """Regresses ``k`` keypoints as the softmax-weighted mean of the pixel coordinates
        (DSNT / integral regression)."""

        def __init__(self, k=8):
            super().__init__()
            self.body = nn.Sequential(CoordConv(3, 32, 2), CoordConv(32, 64, 2), CoordConv(64, 64),
                                      CoordConv(64, 64))
            self.heat = nn.Conv2d(64, k, 1)

        def forward(self, img):
            heat = self.heat(self.body(img))
            b, k, h, w = heat.shape
            prob = heat.flatten(2).softmax(-1).view(b, k, h, w)
            gx = torch.linspace(-1.0, 1.0, w)
            gy = torch.linspace(-1.0, 1.0, h)
            x = (prob.sum(2) * gx).sum(-1)
            y = (prob.sum(3) * gy).sum(-1)
            return torch.stack([x, y], -1)

    # -- Longformer ------------------------------------------------------------------------
    class SlidingWindowLayer(nn.Module):
        def __init__(self, d, heads, window):
            super().__init__()
            self.h, self.window = heads, window
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            b, n, d = x.shape
            pos = torch.arange(n)
            i, j = pos[:, None], pos[None, :]
            # a band of half-width ``window`` plus the first token attending and attended globally
            keep = ((i - j).abs() <= self.window) | (i == 0) | (j == 0)
            q, k, v = self.qkv(x).view(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            s = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.h)
            a = s.masked_fill(~keep, float("-inf")).softmax(-1)
            y = (a @ v).transpose(1, 2).reshape(b, n, d)
            x = self.n1(x + self.proj(y))
            return self.n2(x + self.ff(x))

    class LongformerMini(nn.Module):
        def __init__(self, vocab=1000, d=128, heads=4, depth=3, n=256, window=16, classes=4):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(n, d)
            self.norm = nn.LayerNorm(d)
            self.layers = nn.ModuleList([SlidingWindowLayer(d, heads, window)
                                         for _ in range(depth)])
            self.pool, self.cls = nn.Linear(d, d), nn.Linear(d, classes)

        def forward(self, idx):
            x = self.norm(self.tok(idx) + self.pos(torch.arange(idx.shape[1])))
            for layer in self.layers:
                x = layer(x)
            return self.cls(torch.tanh(self.pool(x[:, 0])))

    # -- Mistral-style decoder -------------------------------------------------------------
    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(1.0 + 0.1 * torch.randn(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def rotate_half(x):
        x1, x2 = x.chunk(2, -1)
        return torch.cat([-x2, x1], -1)

    class MistralBlock(nn.Module):
        def __init__(self, d, heads, kv_heads, window, hidden):
            super().__init__()
            self.h, self.kv, self.hd, self.window = heads, kv_heads, d // heads, window
            self.q = nn.Linear(d, d, bias=False)
            self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
            self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.gate = nn.Linear(d, hidden, bias=False)
            self.up = nn.Linear(d, hidden, bias=False)
            self.down = nn.Linear(hidden, d, bias=False)
            self.n1, self.n2 = RMSNorm(d), RMSNorm(d)

        def repeat_kv(self, t):
            b, hkv, n, hd = t.shape
            rep = self.h // hkv
            return t[:, :, None].expand(b, hkv, rep, n, hd).reshape(b, hkv * rep, n, hd)

        def forward(self, x, cos, sin):
            b, n, d = x.shape
            y = self.n1(x)
            q = self.q(y).view(b, n, self.h, self.hd).transpose(1, 2)
            k = self.k(y).view(b, n, self.kv, self.hd).transpose(1, 2)
            v = self.v(y).view(b, n, self.kv, self.hd).transpose(1, 2)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k, v = self.repeat_kv(k), self.repeat_kv(v)
            ones = torch.ones(n, n, dtype=torch.bool)
            # causal, and no further back than ``window`` tokens
            allowed = ones.tril() & ones.triu(-(self.window - 1))
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
            x = x + self.o(att.transpose(1, 2).reshape(b, n, d))
            y = self.n2(x)
            return x + self.down(F.silu(self.gate(y)) * self.up(y))

    class MistralMini(nn.Module):
        def __init__(self, vocab=1000, d=128, heads=8, kv_heads=2, depth=3, window=24,
                     hidden=352):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([MistralBlock(d, heads, kv_heads, window, hidden)
                                         for _ in range(depth)])
            self.norm = RMSNorm(d)
            hd = d // heads
            self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, hd, 2) / hd))

        def forward(self, idx):
            n = idx.shape[1]
            ang = torch.outer(torch.arange(n, dtype=torch.float32), self.inv_freq)
            ang = torch.cat([ang, ang], -1)
            cos, sin = ang.cos(), ang.sin()
            x = self.emb(idx)
            for blk in self.blocks:
                x = blk(x, cos, sin)
            return F.linear(self.norm(x)[:, -1], self.emb.weight)

    # -- Informer --------------------------------------------------------------------------
    class ProbSparseAttention(nn.Module):
        """Only the ``u`` queries whose scores over a fixed sample of keys are least uniform
        (max minus mean) attend; the others take the mean of V."""

        def __init__(self, d, heads, n, factor=5):
            super().__init__()
            self.h, self.hd = heads, d // heads
            self.u = min(n, int(factor * math.ceil(math.log(n))))
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            g = torch.Generator().manual_seed(5)
            self.register_buffer("sample", torch.randint(0, n, (n, self.u), generator=g))

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
            k_sample = k[:, :, self.sample[:n]]                          # B H N U hd
            qk = (q.unsqueeze(-2) @ k_sample.transpose(-2, -1)).squeeze(-2)
            m = qk.max(-1)[0] - qk.sum(-1) / n
            top = m.topk(self.u, sorted=False)[1]                       # B H u
            bi = torch.arange(b)[:, None, None]
            hi = torch.arange(self.h)[None, :, None]
            scores = (q[bi, hi, top] @ k.transpose(-2, -1)) / math.sqrt(self.hd)
            ctx = v.mean(-2, keepdim=True).expand(b, self.h, n, self.hd).clone()
            ctx[bi, hi, top] = scores.softmax(-1) @ v
            return self.o(ctx.transpose(1, 2).reshape(b, n, d))

    class InformerLayer(nn.Module):
        def __init__(self, d, heads, n):
            super().__init__()
            self.att = ProbSparseAttention(d, heads, n)
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Conv1d(d, 2 * d, 1), nn.GELU(), nn.Conv1d(2 * d, d, 1))

        def forward(self, x):
            x = self.n1(x + self.att(x))
            return self.n2(x + self.ff(x.transpose(1, 2)).transpose(1, 2))

    class Distill(nn.Module):
        """Halves the sequence between layers: circular conv, BatchNorm, ELU, max-pool."""

        def __init__(self, d):
            super().__init__()
            self.conv = nn.Conv1d(d, d, 3, padding=1, padding_mode="circular")
            self.bn, self.pool = nn.BatchNorm1d(d), nn.MaxPool1d(3, 2, 1)

        def forward(self, x):
            return self.pool(F.elu(self.bn(self.conv(x.transpose(1, 2))))).transpose(1, 2)

    class InformerMini(nn.Module):
        def __init__(self, features=7, d=64, heads=4, n=96, horizon=24):
            super().__init__()
            self.value = nn.Conv1d(features, d, 3, padding=1, padding_mode="circular",
                                   bias=False)
            pe = torch.zeros(n, d)
            pos = torch.arange(n).float()[:, None]
            div = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
            pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
            self.register_buffer("pe", pe)
            self.l1, self.d1 = InformerLayer(d, heads, n), Distill(d)
            self.l2 = InformerLayer(d, heads, n // 2)
            self.head = nn.Linear(d * (n // 2), horizon * features)
            self.horizon, self.features = horizon, features

        def forward(self, x):                                            # B L C
            h = self.value(x.transpose(1, 2)).transpose(1, 2) + self.pe[:x.shape[1]]
            h = self.l2(self.d1(self.l1(h)))
            return self.head(h.flatten(1)).view(-1, self.horizon, self.features)

    # -- N-BEATS ---------------------------------------------------------------------------
    class NBeatsBlock(nn.Module):
        """An MLP to expansion coefficients, projected on fixed backcast / forecast bases
        (polynomial for trend, Fourier for seasonality) or learned ones (generic)."""

        def __init__(self, kind, back, fore, width=256, layers=4, degree=3, harmonics=8):
            super().__init__()
            stack = []
            for i in range(layers):
                stack += [nn.Linear(back if i == 0 else width, width), nn.ReLU()]
            self.mlp, self.kind = nn.Sequential(*stack), kind
            tb, tf = torch.arange(back) / back, torch.arange(fore) / fore
            if kind == "trend":
                basis_b = torch.stack([tb ** p for p in range(degree + 1)])
                basis_f = torch.stack([tf ** p for p in range(degree + 1)])
            elif kind == "seasonality":
                freqs = torch.arange(1, harmonics + 1)[:, None] * 2 * math.pi
                basis_b = torch.cat([torch.ones(1, back), torch.cos(freqs * tb),
                                     torch.sin(freqs * tb)])
                basis_f = torch.cat([torch.ones(1, fore), torch.cos(freqs * tf),
                                     torch.sin(freqs * tf)])
            if kind == "generic":
                self.theta_b, self.theta_f = nn.Linear(width, back), nn.Linear(width, fore)
            else:
                self.theta = nn.Linear(width, basis_b.shape[0], bias=False)
                self.register_buffer("basis_b", basis_b)
                self.register_buffer("basis_f", basis_f)

        def forward(self, x):
            h = self.mlp(x)
            if self.kind == "generic":
                return self.theta_b(h), self.theta_f(h)
            t = self.theta(h)
            return t @ self.basis_b, t @ self.basis_f

    class NBeatsMini(nn.Module):
        def __init__(self, back=96, fore=24):
            super().__init__()
            self.blocks = nn.ModuleList(
                [NBeatsBlock("trend", back, fore) for _ in range(2)]
                + [NBeatsBlock("seasonality", back, fore) for _ in range(2)]
                + [NBeatsBlock("generic", back, fore) for _ in range(2)])

        def forward(self, x):
            # scale by the last value, as N-BEATS practice does, and undo it on the forecast
            level = x[:, -1:].abs() + 1.0
            res = x / level
            forecast = torch.zeros_like(x[:, :1])
            for blk in self.blocks:
                b, f = blk(res)
                res, forecast = res - b, forecast + f
            return forecast * level

    # -- TimesNet --------------------------------------------------------------------------
    class InceptionBlock(nn.Module):
        def __init__(self, cin, cout, kernels=3):
            super().__init__()
            self.convs = nn.ModuleList([nn.Conv2d(cin, cout, 2 * i + 1, padding=i)
                                        for i in range(kernels)])

        def forward(self, x):
            return torch.stack([c(x) for c in self.convs], -1).mean(-1)

    class TimesBlock(nn.Module):
        """Folds the series by each of a few periods into 2D (cycles x phase), convolves, and
        mixes the unfolded results by softmax weights from the FFT amplitude at each period's
        frequency. The periods are fixed at construction, as a trace fixes them anyway."""

        def __init__(self, d, hidden, n, periods):
            super().__init__()
            self.periods, self.n = periods, n
            self.register_buffer("freq", torch.tensor([n // p for p in periods]))
            self.conv = nn.Sequential(InceptionBlock(d, hidden), nn.GELU(),
                                      InceptionBlock(hidden, d))

        def forward(self, x):                                             # B T C
            b, t, c = x.shape
            amp = torch.fft.rfft(x, dim=1).abs().mean(-1)                  # B F
            weight = amp[:, self.freq].softmax(-1)                         # B K
            outs = []
            for p in self.periods:
                length = -(-t // p) * p
                y = F.pad(x, (0, 0, 0, length - t)) if length != t else x
                y = y.reshape(b, length // p, p, c).permute(0, 3, 1, 2)
                y = self.conv(y).permute(0, 2, 3, 1).reshape(b, length, c)
                outs.append(y[:, :t])
            res = torch.stack(outs, -1)
            return x + (res * weight[:, None, None, :]).sum(-1)

    class TimesNetMini(nn.Module):
        def __init__(self, features=7, d=32, n=96, horizon=24, periods=(24, 12, 8)):
            super().__init__()
            self.embed = nn.Conv1d(features, d, 3, padding=1, padding_mode="circular")
            self.blocks = nn.ModuleList([TimesBlock(d, 2 * d, n, periods) for _ in range(2)])
            self.norm = nn.LayerNorm(d)
            self.predict = nn.Linear(n, horizon)
            self.out = nn.Linear(d, features)

        def forward(self, x):                                             # B T C
            mean = x.mean(1, keepdim=True)
            std = torch.sqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5)
            h = self.embed(((x - mean) / std).transpose(1, 2)).transpose(1, 2)
            for blk in self.blocks:
                h = self.norm(blk(h))
            y = self.out(self.predict(h.transpose(1, 2)).transpose(1, 2))
            return y * std + mean

    # -- SegNet ----------------------------------------------------------------------------
    def cbr(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    class SegNetMini(nn.Module):
        """Encoder max-pools remember their argmax; the decoder unpools into those places."""

        def __init__(self, widths=(16, 32, 64), classes=12):
            super().__init__()
            ins = (3,) + widths[:-1]
            self.enc = nn.ModuleList([nn.Sequential(cbr(i, o), cbr(o, o))
                                      for i, o in zip(ins, widths, strict=True)])
            outs = widths[-2::-1] + (widths[0],)
            self.dec = nn.ModuleList([nn.Sequential(cbr(i, i), cbr(i, o))
                                      for i, o in zip(widths[::-1], outs, strict=True)])
            self.cls = nn.Conv2d(widths[0], classes, 3, padding=1)

        def forward(self, x):
            idx = []
            for e in self.enc:
                x, i = F.max_pool2d(e(x), 2, 2, return_indices=True)
                idx.append(i)
            for d, i in zip(self.dec, idx[::-1], strict=True):
                x = d(F.max_unpool2d(x, i, 2, 2))
            return self.cls(x)

    # -- Show, Attend and Tell -------------------------------------------------------------
    class ShowAttendTell(nn.Module):
        def __init__(self, vocab=500, c=128, emb=64, hidden=128, att=64, steps=8):
            super().__init__()
            self.steps = steps
            self.cnn = nn.Sequential(cbr(3, 32), nn.MaxPool2d(2), cbr(32, 64), nn.MaxPool2d(2),
                                     cbr(64, c), nn.AdaptiveAvgPool2d(8))
            self.emb = nn.Embedding(vocab, emb)
            self.init_h, self.init_c = nn.Linear(c, hidden), nn.Linear(c, hidden)
            self.enc_att, self.dec_att = nn.Linear(c, att), nn.Linear(hidden, att)
            self.full_att = nn.Linear(att, 1)
            self.f_beta = nn.Linear(hidden, c)
            self.cell = nn.LSTMCell(emb + c, hidden)
            self.fc = nn.Linear(hidden, vocab)

        def forward(self, img, tokens):
            feats = self.cnn(img).flatten(2).transpose(1, 2)              # B 64 C
            mean = feats.mean(1)
            h, c = torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean))
            keys = self.enc_att(feats)
            words = self.emb(tokens)
            logits = []
            for t in range(self.steps):
                e = self.full_att(torch.tanh(keys + self.dec_att(h).unsqueeze(1))).squeeze(-1)
                alpha = e.softmax(-1)
                ctx = (feats * alpha.unsqueeze(-1)).sum(1) * torch.sigmoid(self.f_beta(h))
                h, c = self.cell(torch.cat([words[:, t], ctx], -1), (h, c))
                logits.append(self.fc(h))
            return torch.stack(logits, 1)

    # -- SuperPoint ------------------------------------------------------------------------
    class SuperPointMini(nn.Module):
        def __init__(self, widths=(32, 32, 64, 64), desc=128):
            super().__init__()
            layers, cin = [], 1
            for i, w in enumerate(widths):
                layers += [nn.Conv2d(cin, w, 3, padding=1), nn.ReLU(),
                           nn.Conv2d(w, w, 3, padding=1), nn.ReLU()]
                if i < len(widths) - 1:
                    layers.append(nn.MaxPool2d(2))
                cin = w
            self.enc = nn.Sequential(*layers)
            self.det = nn.Sequential(nn.Conv2d(cin, 128, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(128, 65, 1))
            self.desc = nn.Sequential(nn.Conv2d(cin, 128, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(128, desc, 1))

        def forward(self, img):
            f = self.enc(img)
            prob = self.det(f).softmax(1)[:, :-1]                         # the dustbin dropped
            heat = F.pixel_shuffle(prob, 8)                               # B 1 H W
            keep = heat == F.max_pool2d(heat, 5, 1, 2)                    # NMS by max-pooling
            heat = torch.where(keep, heat, torch.zeros_like(heat))
            d = F.normalize(self.desc(f), p=2, dim=1)
            return torch.cat([heat.flatten(1), d.flatten(1)], 1)

    # -- MiDaS / DPT -----------------------------------------------------------------------
    class ViTLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.att = nn.MultiheadAttention(d, heads, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            y = self.n1(x)
            x = x + self.att(y, y, y, need_weights=False)[0]
            return x + self.mlp(self.n2(x))

    class Reassemble(nn.Module):
        """Tokens back to a feature map: the readout (class) token concatenated to every patch
        token and projected, then resampled by ``scale`` (transposed conv up, strided conv
        down)."""

        def __init__(self, d, c, scale):
            super().__init__()
            self.readout = nn.Sequential(nn.Linear(2 * d, d), nn.GELU())
            self.proj = nn.Conv2d(d, c, 1)
            if scale > 1:
                self.resample = nn.ConvTranspose2d(c, c, scale, scale)
            elif scale < 1:
                self.resample = nn.Conv2d(c, c, 3, int(1 / scale), 1)
            else:
                self.resample = nn.Identity()
            self.out = nn.Conv2d(c, c, 3, padding=1, bias=False)

        def forward(self, tokens, g):
            cls, patches = tokens[:, :1], tokens[:, 1:]
            x = self.readout(torch.cat([patches, cls.expand_as(patches)], -1))
            x = x.transpose(1, 2).reshape(x.shape[0], -1, g, g)
            return self.out(self.resample(self.proj(x)))

    class ResidualConvUnit(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)

        def forward(self, x):
            return x + self.c2(F.relu(self.c1(F.relu(x))))

    class Fusion(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.skip, self.rcu, self.out = ResidualConvUnit(c), ResidualConvUnit(c), \
                nn.Conv2d(c, c, 1)

        def forward(self, x, skip=None):
            if skip is not None:
                x = x + self.skip(skip)
            x = F.interpolate(self.rcu(x), scale_factor=2.0, mode="bilinear",
                              align_corners=True)
            return self.out(x)

    class MiDaSMini(nn.Module):
        def __init__(self, d=96, heads=4, depth=4, patch=8, size=64, c=32):
            super().__init__()
            self.g = size // patch
            self.patch = nn.Conv2d(3, d, patch, patch)
            self.cls = nn.Parameter(0.02 * torch.randn(1, 1, d))
            self.pos = nn.Parameter(0.02 * torch.randn(1, self.g * self.g + 1, d))
            self.layers = nn.ModuleList([ViTLayer(d, heads) for _ in range(depth)])
            self.reassemble = nn.ModuleList([Reassemble(d, c, s) for s in (4, 2, 1, 0.5)])
            self.fuse = nn.ModuleList([Fusion(c) for _ in range(4)])
            self.head = nn.Sequential(nn.Conv2d(c, c // 2, 3, padding=1),
                                      nn.Upsample(scale_factor=2, mode="bilinear",
                                                  align_corners=True),
                                      nn.Conv2d(c // 2, 16, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 1, 1))

        def forward(self, img):
            x = self.patch(img).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
            taps = []
            for layer in self.layers:
                x = layer(x)
                taps.append(x)
            f1, f2, f3, f4 = [r(t, self.g) for r, t in zip(self.reassemble, taps, strict=True)]
            p = self.fuse[3](f4)
            p = self.fuse[2](p, f3)
            p = self.fuse[1](p, f2)
            p = self.fuse[0](p, f1)
            return self.head(p).squeeze(1)

    # -- Stable-Diffusion VAE decoder ------------------------------------------------------
    class VAEResBlock(nn.Module):
        def __init__(self, cin, cout, groups=8):
            super().__init__()
            self.n1, self.c1 = nn.GroupNorm(groups, cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.n2, self.c2 = nn.GroupNorm(groups, cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x):
            h = self.c1(F.silu(self.n1(x)))
            return self.skip(x) + self.c2(F.silu(self.n2(h)))

    class VAEAttention(nn.Module):
        """Single-head self-attention over the pixels of a feature map."""

        def __init__(self, c, groups=8):
            super().__init__()
            self.norm = nn.GroupNorm(groups, c)
            self.q, self.k, self.v, self.o = (nn.Linear(c, c) for _ in range(4))

        def forward(self, x):
            b, c, h, w = x.shape
            t = self.norm(x).flatten(2).transpose(1, 2)
            y = F.scaled_dot_product_attention(self.q(t), self.k(t), self.v(t))
            return x + self.o(y).transpose(1, 2).reshape(b, c, h, w)

    class VAEDecoderMini(nn.Module):
        def __init__(self, latent=4, widths=(64, 64, 32)):
            super().__init__()
            self.post_quant = nn.Conv2d(latent, latent, 1)
            self.conv_in = nn.Conv2d(latent, widths[0], 3, padding=1)
            self.mid = nn.ModuleList([VAEResBlock(widths[0], widths[0]),
                                      VAEAttention(widths[0]),
                                      VAEResBlock(widths[0], widths[0])])
            ups, cin = [], widths[0]
            for i, w in enumerate(widths):
                blocks = [VAEResBlock(cin, w), VAEResBlock(w, w)]
                if i < len(widths) - 1:
                    blocks.append(nn.Upsample(scale_factor=2.0, mode="nearest"))
                    blocks.append(nn.Conv2d(w, w, 3, padding=1))
                ups.append(nn.Sequential(*blocks))
                cin = w
            self.up = nn.Sequential(*ups)
            self.out = nn.Sequential(nn.GroupNorm(8, cin), nn.SiLU(),
                                     nn.Conv2d(cin, 3, 3, padding=1))

        def forward(self, z):
            x = self.conv_in(self.post_quant(z / 0.18215))
            for m in self.mid:
                x = m(x)
            return self.out(self.up(x))

    # -- self-normalizing tabular net ------------------------------------------------------
    class SNNTabular(nn.Module):
        """SELU layers (LeCun-normal init, AlphaDropout), a CELU branch, and an ``nn.Bilinear``
        interaction between the numeric and the embedded categorical features."""

        def __init__(self, numeric=24, cats=(20, 15, 8), emb=8, width=256, classes=3):
            super().__init__()
            self.embs = nn.ModuleList([nn.Embedding(n, emb) for n in cats])
            d_cat = emb * len(cats)
            self.inter = nn.Bilinear(numeric, d_cat, 32)
            layers, cin = [], numeric + d_cat + 32
            for _ in range(3):
                lin = nn.Linear(cin, width)
                nn.init.normal_(lin.weight, std=1.0 / math.sqrt(cin))
                layers += [lin, nn.SELU(), nn.AlphaDropout(0.1)]
                cin = width
            self.deep = nn.Sequential(*layers)
            self.side = nn.Sequential(nn.Linear(numeric, 64), nn.CELU(0.5))
            self.head = nn.Linear(width + 64, classes)

        def forward(self, num, cat):
            e = torch.cat([emb(cat[:, i]) for i, emb in enumerate(self.embs)], -1)
            x = torch.cat([num, e, self.inter(num, e)], -1)
            return self.head(torch.cat([self.deep(x), self.side(num)], -1))

    # -- a hypernetwork's dynamic convolution ---------------------------------------------
    class HyperConvNet(nn.Module):
        """A conditioning vector generates the weights of two convs (a hypernetwork, as in
        dynamic filter networks and style-conditioned decoders): ``F.conv2d`` with a weight
        computed from an input, per sample by grouping the batch into channels."""

        def __init__(self, c=32, z=16, k=3):
            super().__init__()
            self.c, self.k = c, k
            self.stem = nn.Conv2d(3, c, 3, padding=1)
            self.hyper = nn.Sequential(nn.Linear(z, 64), nn.ReLU(),
                                       nn.Linear(64, 2 * c * c * k * k + 2 * c))
            self.head = nn.Conv2d(c, 3, 3, padding=1)

        def forward(self, img, z):
            b, _, h, w = img.shape
            c, k = self.c, self.k
            x = F.relu(self.stem(img))
            params = self.hyper(z)
            ws, bs = params[:, :2 * c * c * k * k], params[:, 2 * c * c * k * k:]
            for i in range(2):
                wi = ws[:, i * c * c * k * k:(i + 1) * c * c * k * k].reshape(b * c, c, k, k)
                bi = bs[:, i * c:(i + 1) * c].reshape(b * c)
                y = F.conv2d(x.reshape(1, b * c, h, w), wi / math.sqrt(c * k * k), bi,
                             padding=k // 2, groups=b)
                x = x + F.relu(y.reshape(b, c, h, w))
            return self.head(x)

    # -- Demucs ----------------------------------------------------------------------------
    class DemucsMini(nn.Module):
        """Waveform U-Net: strided Conv1d + ReLU + 1x1 Conv1d + GLU down, a bidirectional LSTM
        in the bottleneck, ConvTranspose1d up with skip connections cropped to length."""

        def __init__(self, chin=1, hidden=16, depth=3, k=8, s=4):
            super().__init__()
            self.enc, self.dec = nn.ModuleList(), nn.ModuleList()
            cin = chin
            for i in range(depth):
                self.enc.append(nn.Sequential(nn.Conv1d(cin, hidden, k, s), nn.ReLU(),
                                              nn.Conv1d(hidden, 2 * hidden, 1), nn.GLU(1)))
                dec = [nn.Conv1d(hidden, 2 * hidden, 3, padding=1), nn.GLU(1),
                       nn.ConvTranspose1d(hidden, cin, k, s)]
                if i > 0:
                    dec.append(nn.ReLU())
                self.dec.insert(0, nn.Sequential(*dec))
                cin, hidden = hidden, 2 * hidden
            self.lstm = nn.LSTM(cin, cin, 2, bidirectional=True)
            self.lstm_out = nn.Linear(2 * cin, cin)

        def forward(self, wav):
            mono = wav.mean(1, keepdim=True)
            std = mono.std(-1, keepdim=True)
            x = wav / (1e-3 + std)
            skips = []
            for enc in self.enc:
                x = enc(x)
                skips.append(x)
            y = self.lstm(x.permute(2, 0, 1))[0]
            x = self.lstm_out(y).permute(1, 2, 0)
            for dec in self.dec:
                skip = skips.pop()
                x = dec(x + skip[..., :x.shape[-1]])
            return x * std

    # -- inputs ----------------------------------------------------------------------------
    def tokens(vocab, n, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"idx": torch.randint(0, vocab, (1, n), generator=g)}
        return make

    def series(batch, n, c, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            t = torch.arange(n, dtype=torch.float32)
            wave = torch.sin(2 * math.pi * t / 24)[None, :, None]
            return {"x": wave + 0.3 * torch.randn(batch, n, c, generator=g)}
        return make

    def nbeats_inputs():
        g = torch.Generator().manual_seed(21)
        t = torch.arange(96, dtype=torch.float32)
        return {"x": 5.0 + torch.sin(2 * math.pi * t / 12) + 0.2 * torch.randn(16, 96,
                                                                                generator=g)}

    def caption_inputs():
        g = torch.Generator().manual_seed(22)
        return {"img": torch.randn(1, 3, 64, 64, generator=g),
                "tokens": torch.randint(0, 500, (1, 8), generator=g)}

    def tabular_inputs():
        g = torch.Generator().manual_seed(23)
        return {"num": torch.randn(32, 24, generator=g),
                "cat": torch.stack([torch.randint(0, n, (32,), generator=g)
                                    for n in (20, 15, 8)], 1)}

    def hyper_inputs():
        g = torch.Generator().manual_seed(24)
        return {"img": torch.rand(2, 3, 32, 32, generator=g), "z": torch.randn(2, 16, generator=g)}

    return {
        "pixelcnn_mini": (PixelCNNMini, lambda: {"img": torch.rand(1, 3, 28, 28)}),
        "coordconv_kpts": (CoordConvKeypoints, (1, 3, 64, 64)),
        "longformer_mini": (LongformerMini, tokens(1000, 256, 24)),
        "mistral_mini": (MistralMini, tokens(1000, 64, 25)),
        "informer_mini": (InformerMini, series(1, 96, 7, 26)),
        "nbeats_mini": (NBeatsMini, nbeats_inputs),
        "timesnet_mini": (TimesNetMini, series(1, 96, 7, 27)),
        "segnet_mini": (SegNetMini, (1, 3, 64, 64)),
        "show_attend_tell": (ShowAttendTell, caption_inputs),
        "superpoint_mini": (SuperPointMini, lambda: {"img": torch.rand(1, 1, 64, 64)}),
        "midas_mini": (MiDaSMini, (1, 3, 64, 64)),
        "sd_vae_decoder": (VAEDecoderMini, (1, 4, 16, 16)),
        "snn_tabular": (SNNTabular, tabular_inputs),
        "hyper_dynconv": (HyperConvNet, hyper_inputs),
        "demucs_mini": (DemucsMini, lambda: {"wav": torch.randn(1, 1, 4000)}),
    }
