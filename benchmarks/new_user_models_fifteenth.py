"""The fifteenth round of ``bench_new_user_models``: RetinaNet (an FPN with P6/P7, shared class
and box subnets with the focal-loss prior bias, anchors decoded after a ``topk`` over every
(anchor, class) score), a Tacotron 2 decoder (prenet, two ``LSTMCell``s, location-sensitive
attention by a ``Conv1d`` over the previous and cumulative alignments, masked by lengths, a
postnet), Reformer (LSH bucketing by ``argmax`` of random rotations, ``argsort`` into chunks
with look-one-back attention and a self mask, the sort undone by ``gather``, reversible
residuals, a chunked feed-forward), a causal Performer (FAVOR+ positive random features from a
QR-orthogonal projection, prefix sums by ``cumsum``), Linformer (keys and values projected along
the sequence), Transformer-XL (a segment memory, sinusoidal relative positions, the ``rel_shift``
pad-and-view trick), a pi-GAN SIREN (FiLM-conditioned ``sin`` layers over a ``meshgrid`` of
coordinates), a closed-form continuous-time (CfC) liquid network with an NCP-style sparse weight
mask and irregular time steps, Slot Attention (a softmax over slots, ``GRUCell`` updates, a
spatial broadcast decoder with alpha masks), S4D (a diagonal state-space kernel from complex
parameters, ``view_as_complex``, complex ``exp`` and ``einsum``, an FFT convolution), TabNet
with an ``entmax15`` attentive transformer (sort, cumulative moments, support by ``gather``) and
a ConvLSTM encoder-forecaster for nowcasting. Kept apart so the main script stays readable."""

from __future__ import annotations


def fifteenth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    def conv_bn(cin, cout, stride=1, k=3):
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    # -- RetinaNet -------------------------------------------------------------------------
    class RetinaNetMini(nn.Module):
        """C3-C5 from a small strided backbone, FPN P3-P7, the two four-conv subnets shared by
        every level, then the top ``topk`` (anchor, class) pairs decoded to clipped boxes."""

        def __init__(self, img=128, classes=8, c=64, topk=100, convs=4):
            super().__init__()
            self.k, self.topk, self.img = classes, topk, img
            self.stem = nn.Sequential(conv_bn(3, 32, 2), conv_bn(32, 32, 2))        # /4
            self.c3, self.c4 = conv_bn(32, 64, 2), conv_bn(64, 128, 2)             # /8 /16
            self.c5 = conv_bn(128, 256, 2)                                          # /32
            self.lat = nn.ModuleList(nn.Conv2d(w, c, 1) for w in (64, 128, 256))
            self.smooth = nn.ModuleList(nn.Conv2d(c, c, 3, 1, 1) for _ in range(3))
            self.p6, self.p7 = nn.Conv2d(256, c, 3, 2, 1), nn.Conv2d(c, c, 3, 2, 1)
            scales = [2 ** (i / 3) for i in range(3)]
            ratios = (0.5, 1.0, 2.0)
            a = len(scales) * len(ratios)

            def subnet(out):
                layers = []
                for _ in range(convs):
                    layers += [nn.Conv2d(c, c, 3, 1, 1), nn.ReLU()]
                return nn.Sequential(*layers, nn.Conv2d(c, out, 3, 1, 1))
            self.cls, self.box = subnet(a * classes), subnet(a * 4)
            # He-initialized subnets and a wide last class conv: the paper's N(0, 0.01) leaves
            # every score within float32 rounding of the prior, so a top-k of ties
            for conv in [*self.cls, *self.box]:
                if isinstance(conv, nn.Conv2d):
                    nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")
            nn.init.normal_(self.cls[-1].weight, std=0.5)
            nn.init.normal_(self.box[-1].weight, std=0.5)
            nn.init.constant_(self.cls[-1].bias, -math.log((1 - 0.01) / 0.01))
            anchors = []
            for level in range(3, 8):
                stride, side = 2 ** level, -(-img // 2 ** level)          # (P7 of 64: 1)
                ws = torch.tensor([4 * stride * s / math.sqrt(r) for r in ratios for s in scales])
                hs = torch.tensor([4 * stride * s * math.sqrt(r) for r in ratios for s in scales])
                ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
                cx = ((xs.reshape(-1, 1) + 0.5) * stride).expand(-1, a)
                cy = ((ys.reshape(-1, 1) + 0.5) * stride).expand(-1, a)
                anchors.append(torch.stack([cx, cy, ws.expand_as(cx), hs.expand_as(cy)], -1)
                               .reshape(-1, 4))
            self.register_buffer("anchors", torch.cat(anchors).float())

        def forward(self, img):
            c3 = self.c3(self.stem(img))
            c4 = self.c4(c3)
            c5 = self.c5(c4)
            p5 = self.lat[2](c5)
            p4 = self.lat[1](c4) + F.interpolate(p5, scale_factor=2, mode="nearest")
            p3 = self.lat[0](c3) + F.interpolate(p4, scale_factor=2, mode="nearest")
            p6 = self.p6(c5)
            levels = [self.smooth[0](p3), self.smooth[1](p4), self.smooth[2](p5), p6,
                      self.p7(F.relu(p6))]
            b = img.shape[0]
            logits = torch.cat([self.cls(p).permute(0, 2, 3, 1).reshape(b, -1, self.k)
                                for p in levels], 1)
            deltas = torch.cat([self.box(p).permute(0, 2, 3, 1).reshape(b, -1, 4)
                                for p in levels], 1)
            scores, idx = logits.sigmoid().flatten(1).topk(self.topk, -1)
            anchor = idx // self.k
            labels = idx % self.k
            d = deltas.gather(1, anchor[..., None].expand(-1, -1, 4))
            a = self.anchors[anchor]                                            # (b, topk, 4)
            dw = d[..., 2].clamp(max=math.log(1000 / 16))
            dh = d[..., 3].clamp(max=math.log(1000 / 16))
            cx = a[..., 0] + d[..., 0] * a[..., 2]
            cy = a[..., 1] + d[..., 1] * a[..., 3]
            w, h = a[..., 2] * dw.exp(), a[..., 3] * dh.exp()
            boxes = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], -1)
            boxes = boxes.clamp(0, self.img)
            return torch.cat([boxes, scores[..., None], labels[..., None].float()], -1)

    # -- Tacotron 2 decoder ----------------------------------------------------------------
    class Tacotron2Decoder(nn.Module):
        """``steps`` autoregressive decoder steps from a go frame over given encoder outputs,
        then the postnet; returns the refined mel frames with the stop probabilities."""

        def __init__(self, d_enc=128, mels=40, prenet=64, att_rnn=256, dec_rnn=256, att_dim=64,
                     loc_filters=16, loc_kernel=15, post=64, steps=8):
            super().__init__()
            self.mels, self.steps, self.att_rnn_n, self.dec_rnn_n = mels, steps, att_rnn, dec_rnn
            self.prenet = nn.Sequential(nn.Linear(mels, prenet), nn.ReLU(),
                                        nn.Linear(prenet, prenet), nn.ReLU())
            self.att_rnn = nn.LSTMCell(prenet + d_enc, att_rnn)
            self.query = nn.Linear(att_rnn, att_dim, bias=False)
            self.memory_layer = nn.Linear(d_enc, att_dim, bias=False)
            self.loc_conv = nn.Conv1d(2, loc_filters, loc_kernel, padding=loc_kernel // 2,
                                      bias=False)
            self.loc_dense = nn.Linear(loc_filters, att_dim, bias=False)
            self.v = nn.Linear(att_dim, 1, bias=False)
            self.dec_rnn = nn.LSTMCell(att_rnn + d_enc, dec_rnn)
            self.proj = nn.Linear(dec_rnn + d_enc, mels)
            self.gate = nn.Linear(dec_rnn + d_enc, 1)
            layers, c = [], mels
            for i in range(3):
                out = mels if i == 2 else post
                layers += [nn.Conv1d(c, out, 5, padding=2), nn.BatchNorm1d(out)]
                if i < 2:
                    layers.append(nn.Tanh())
                c = out
            self.postnet = nn.Sequential(*layers)

        def forward(self, memory, lengths):
            b, t, d = memory.shape
            mask = torch.arange(t)[None] >= lengths[:, None]
            processed = self.memory_layer(memory)
            frame = memory.new_zeros(b, self.mels)
            h_a = c_a = memory.new_zeros(b, self.att_rnn_n)
            h_d = c_d = memory.new_zeros(b, self.dec_rnn_n)
            att = att_cum = memory.new_zeros(b, t)
            ctx = memory.new_zeros(b, d)
            frames, gates = [], []
            for _ in range(self.steps):
                h_a, c_a = self.att_rnn(torch.cat([self.prenet(frame), ctx], -1), (h_a, c_a))
                loc = self.loc_dense(self.loc_conv(torch.stack([att, att_cum], 1))
                                     .transpose(1, 2))
                energy = self.v(torch.tanh(self.query(h_a)[:, None] + loc + processed))
                att = energy.squeeze(-1).masked_fill(mask, float("-inf")).softmax(-1)
                att_cum = att_cum + att
                ctx = torch.bmm(att[:, None], memory).squeeze(1)
                h_d, c_d = self.dec_rnn(torch.cat([h_a, ctx], -1), (h_d, c_d))
                out = torch.cat([h_d, ctx], -1)
                frame = self.proj(out)
                frames.append(frame)
                gates.append(self.gate(out))
            mel = torch.stack(frames, 2)                                        # (b, mels, T)
            mel = mel + self.postnet(mel)
            return torch.cat([mel, torch.stack(gates, 2).sigmoid()], 1)

    # -- Reformer --------------------------------------------------------------------------
    class LSHAttention(nn.Module):
        """Shared-QK attention inside LSH buckets: positions sorted by (bucket, position),
        cut into chunks that attend to themselves and the chunk before; a position sees itself
        only when nothing else is there."""

        def __init__(self, d, heads, buckets, chunk):
            super().__init__()
            self.h, self.dh, self.chunk = heads, d // heads, chunk
            self.qk = nn.Linear(d, d, bias=False)
            self.v = nn.Linear(d, d, bias=False)
            self.out = nn.Linear(d, d)
            self.register_buffer("rot", torch.randn(heads, d // heads, buckets // 2))

        def forward(self, x):
            b, n, _ = x.shape
            h, dh = self.h, self.dh
            qk = self.qk(x).view(b, n, h, dh).transpose(1, 2)
            v = self.v(x).view(b, n, h, dh).transpose(1, 2)
            rotated = torch.einsum("bhnd,hdr->bhnr", F.normalize(qk, dim=-1), self.rot)
            buckets = torch.cat([rotated, -rotated], -1).argmax(-1)             # (b, h, n)
            order = (buckets * n + torch.arange(n)).argsort(-1)
            undo = order.argsort(-1)
            sq = qk.gather(2, order[..., None].expand(-1, -1, -1, dh))
            sv = v.gather(2, order[..., None].expand(-1, -1, -1, dh))
            c = n // self.chunk
            sq = sq.view(b, h, c, self.chunk, dh)
            sk = F.normalize(sq, dim=-1)
            sv = sv.view(b, h, c, self.chunk, dh)
            pos = order.view(b, h, c, self.chunk)
            keys = torch.cat([sk, sk.roll(1, dims=2)], 3)
            vals = torch.cat([sv, sv.roll(1, dims=2)], 3)
            kpos = torch.cat([pos, pos.roll(1, dims=2)], 3)
            dots = torch.einsum("bhcid,bhcjd->bhcij", sq, keys) * dh ** -0.5
            dots = dots.masked_fill(pos[..., :, None] == kpos[..., None, :], -1e5)
            o = torch.einsum("bhcij,bhcjd->bhcid", dots.softmax(-1), vals).reshape(b, h, n, dh)
            o = o.gather(2, undo[..., None].expand(-1, -1, -1, dh))
            return self.out(o.transpose(1, 2).reshape(b, n, h * dh))

    class ReformerLM(nn.Module):
        """Reversible layers: y1 = x1 + Attn(LN(x2)), y2 = x2 + FF(LN(y1)), the feed-forward
        run chunk by chunk along the sequence; the two streams averaged at the end."""

        def __init__(self, vocab=256, d=64, heads=4, layers=2, buckets=8, chunk=16, n=128,
                     ff_chunks=4):
            super().__init__()
            self.ff_chunks = ff_chunks
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(0.02 * torch.randn(1, n, d))
            self.attn = nn.ModuleList(LSHAttention(d, heads, buckets, chunk)
                                      for _ in range(layers))
            self.ln_a = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.ln_f = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.ff = nn.ModuleList(nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                                  nn.Linear(4 * d, d)) for _ in range(layers))
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab)

        def forward(self, idx):
            x = self.emb(idx) + self.pos[:, :idx.shape[1]]
            x1, x2 = x, x
            for attn, ln_a, ln_f, ff in zip(self.attn, self.ln_a, self.ln_f, self.ff):
                x1 = x1 + attn(ln_a(x2))
                x2 = x2 + torch.cat([ff(ln_f(part)) for part in x1.chunk(self.ff_chunks, 1)],
                                    1)
            return self.head(self.norm((x1 + x2) / 2))

    # -- Performer (causal FAVOR+) -----------------------------------------------------------
    def orthogonal_features(m, d, gen):
        """``m`` random features of dimension ``d``: stacked QR-orthogonal blocks, each row
        rescaled to a chi-distributed norm (FAVOR+'s orthogonal random features)."""
        blocks = []
        for _ in range(-(-m // d)):
            q, _ = torch.linalg.qr(torch.randn(d, d, generator=gen))
            blocks.append(q.T)
        w = torch.cat(blocks)[:m]
        return w * torch.randn(m, d, generator=gen).norm(dim=1, keepdim=True)

    def favor(x, proj, query):
        """Positive random features exp(w.x - |x|^2/2) / sqrt(m), stabilized by a max (per row
        for queries, over the whole sequence for keys: a constant factor that cancels)."""
        x = x * x.shape[-1] ** -0.25
        xw = torch.einsum("bhnd,md->bhnm", x, proj)
        sq = (x ** 2).sum(-1, keepdim=True) / 2
        stab = xw.amax(-1, keepdim=True) if query else xw.amax((-2, -1), keepdim=True)
        return (torch.exp(xw - sq - stab) + 1e-4) * proj.shape[0] ** -0.5

    class PerformerLayer(nn.Module):
        def __init__(self, d, heads, features, seed):
            super().__init__()
            self.h = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            gen = torch.Generator().manual_seed(seed)
            self.register_buffer("proj", orthogonal_features(features, d // heads, gen))

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.h, -1).permute(2, 0, 3, 1, 4)
            q, k = favor(q, self.proj, True), favor(k, self.proj, False)     # (b, h, n, m)
            kv = torch.einsum("bhnm,bhnd->bhnmd", k, v).cumsum(2)              # prefix sums
            num = torch.einsum("bhnm,bhnmd->bhnd", q, kv)
            den = (q * k.cumsum(2)).sum(-1, keepdim=True)
            o = (num / den).transpose(1, 2).reshape(b, n, d)
            x = x + self.out(o)
            return x + self.ff(self.ln2(x))

    class PerformerLM(nn.Module):
        def __init__(self, vocab=256, d=64, heads=4, layers=2, features=32, n=64):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(n, d)
            self.layers = nn.ModuleList(PerformerLayer(d, heads, features, 70 + i)
                                        for i in range(layers))
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab)

        def forward(self, idx):
            x = self.emb(idx) + self.pos(torch.arange(idx.shape[1]))
            for layer in self.layers:
                x = layer(x)
            return self.head(self.norm(x))

    # -- Linformer -------------------------------------------------------------------------
    class LinformerLayer(nn.Module):
        """Keys and values projected from n positions to k by one ``E`` shared between them
        (Linformer's key-value sharing), post-LN."""

        def __init__(self, d, heads, n, k):
            super().__init__()
            self.h = heads
            self.qkv = nn.Linear(d, 3 * d)
            self.e = nn.Linear(n, k, bias=False)
            self.out = nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).chunk(3, -1)
            k = self.e(k.transpose(1, 2)).transpose(1, 2)                     # (b, k, d)
            v = self.e(v.transpose(1, 2)).transpose(1, 2)
            q = q.view(b, n, self.h, -1).transpose(1, 2)
            k = k.reshape(b, -1, self.h, d // self.h).transpose(1, 2)
            v = v.reshape(b, -1, self.h, d // self.h).transpose(1, 2)
            o = F.scaled_dot_product_attention(q, k, v)
            x = self.ln1(x + self.out(o.transpose(1, 2).reshape(b, n, d)))
            return self.ln2(x + self.ff(x))

    class LinformerClassifier(nn.Module):
        def __init__(self, vocab=1000, d=64, heads=4, layers=2, n=256, k=32, classes=4):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(0.02 * torch.randn(1, n, d))
            self.layers = nn.ModuleList(LinformerLayer(d, heads, n, k) for _ in range(layers))
            self.head = nn.Linear(d, classes)

        def forward(self, idx):
            x = self.emb(idx) + self.pos
            for layer in self.layers:
                x = layer(x)
            return self.head(x.mean(1))

    # -- Transformer-XL --------------------------------------------------------------------
    def rel_shift(x):
        """Row i of (b, h, q, k) shifted left by q - 1 - i (Transformer-XL's pad-and-view)."""
        b, h, q, k = x.shape
        padded = torch.cat([x.new_zeros(b, h, q, 1), x], -1).view(b, h, k + 1, q)
        return padded[:, :, 1:].reshape(b, h, q, k)

    class RelAttentionLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.r_net = nn.Linear(d, d, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.r_w_bias = nn.Parameter(0.02 * torch.randn(heads, d // heads))
            self.r_r_bias = nn.Parameter(0.02 * torch.randn(heads, d // heads))
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))

        def forward(self, w, r, mem, mask):
            b, q, _ = w.shape
            cat = torch.cat([mem, w], 1)
            kl = cat.shape[1]
            heads = self.qkv(cat).view(b, kl, 3, self.h, self.dh)
            wq, wk, wv = heads[:, -q:, 0], heads[:, :, 1], heads[:, :, 2]
            rk = self.r_net(r).view(kl, self.h, self.dh)
            ac = torch.einsum("bqhd,bkhd->bhqk", wq + self.r_w_bias, wk)
            bd = rel_shift(torch.einsum("bqhd,khd->bhqk", wq + self.r_r_bias, rk))
            score = ((ac + bd) * self.dh ** -0.5).masked_fill(mask, float("-inf"))
            o = torch.einsum("bhqk,bkhd->bqhd", score.softmax(-1), wv).reshape(b, q, -1)
            x = self.ln1(w + self.o(o))
            return self.ln2(x + self.ff(x))

    class TransformerXL(nn.Module):
        """One segment of a Transformer-XL LM given each layer's memory of the segment before
        (``mems``: batch, layer, memory length, d)."""

        def __init__(self, vocab=512, d=64, heads=4, layers=2):
            super().__init__()
            self.d = d
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(RelAttentionLayer(d, heads) for _ in range(layers))
            self.head = nn.Linear(d, vocab)
            self.register_buffer("inv_freq", 1 / 10000 ** (torch.arange(0, d, 2.0) / d))

        def forward(self, idx, mems):
            q, m = idx.shape[1], mems.shape[2]
            k = q + m
            pos = torch.arange(k - 1, -1, -1.0)
            angles = pos[:, None] * self.inv_freq[None]
            r = torch.cat([angles.sin(), angles.cos()], -1)                     # (k, d)
            mask = torch.triu(torch.ones(q, k), diagonal=1 + m).bool()
            x = self.emb(idx) * self.d ** 0.5
            for i, layer in enumerate(self.layers):
                x = layer(x, r, mems[:, i], mask)
            return self.head(x)

    # -- pi-GAN SIREN ----------------------------------------------------------------------
    class PiGANSiren(nn.Module):
        """A mapping network gives each sine layer a frequency and phase per unit (FiLM);
        the layers run over every pixel's (x, y) of a ``meshgrid``; SIREN's initialization."""

        def __init__(self, z_dim=64, hidden=64, layers=4, side=32):
            super().__init__()
            self.side, self.n = side, layers
            self.mapping = nn.Sequential(nn.Linear(z_dim, 128), nn.LeakyReLU(0.2),
                                         nn.Linear(128, 128), nn.LeakyReLU(0.2),
                                         nn.Linear(128, 2 * layers * hidden))
            self.film = nn.ModuleList(nn.Linear(2 if i == 0 else hidden, hidden)
                                      for i in range(layers))
            with torch.no_grad():
                for i, lin in enumerate(self.film):
                    bound = 1 / lin.in_features if i == 0 else \
                        math.sqrt(6 / lin.in_features) / 25
                    lin.weight.uniform_(-bound, bound)
            self.rgb = nn.Linear(hidden, 3)

        def forward(self, z):
            b = z.shape[0]
            freq, phase = self.mapping(z).view(b, 2, self.n, -1).unbind(1)
            freq = freq * 15 + 30
            axis = torch.linspace(-1, 1, self.side)
            ys, xs = torch.meshgrid(axis, axis, indexing="ij")
            x = torch.stack([xs, ys], -1).view(1, -1, 2).expand(b, -1, -1)
            for i, lin in enumerate(self.film):
                x = torch.sin(freq[:, i, None] * lin(x) + phase[:, i, None])
            rgb = torch.sigmoid(self.rgb(x))
            return rgb.view(b, self.side, self.side, 3).permute(0, 3, 1, 2)

    # -- CfC liquid network ----------------------------------------------------------------
    class SparseLinear(nn.Linear):
        """A linear layer whose weight is multiplied by a fixed 0/1 wiring mask (NCP)."""

        def __init__(self, cin, cout, density, seed):
            super().__init__(cin, cout)
            gen = torch.Generator().manual_seed(seed)
            self.register_buffer("mask", (torch.rand(cout, cin, generator=gen) < density)
                                 .float())

        def forward(self, x):
            return F.linear(x, self.weight * self.mask, self.bias)

    class CfCNet(nn.Module):
        """Closed-form continuous-time cells over an irregularly sampled series:
        h = f1 * (1 - s) + s * f2 with s = sigmoid(-a(z) t + b(z)), t each step's gap."""

        def __init__(self, features=8, hidden=64, units=128, out=4, density=0.5):
            super().__init__()
            self.hidden = hidden
            self.backbone = SparseLinear(features + hidden, units, density, 71)
            self.ff1, self.ff2 = nn.Linear(units, hidden), nn.Linear(units, hidden)
            self.time_a, self.time_b = nn.Linear(units, hidden), nn.Linear(units, hidden)
            self.head = nn.Linear(hidden, out)

        def forward(self, x, gaps):
            b, t, _ = x.shape
            h = x.new_zeros(b, self.hidden)
            outs = []
            for i in range(t):
                z = self.backbone(torch.cat([x[:, i], h], -1))
                z = 1.7159 * torch.tanh(0.666 * z)                              # LeCun tanh
                s = torch.sigmoid(-self.time_a(z) * gaps[:, i, None] + self.time_b(z))
                h = torch.tanh(self.ff1(z)) * (1 - s) + s * torch.tanh(self.ff2(z))
                outs.append(h)
            return self.head(torch.stack(outs, 1))

    # -- Slot Attention --------------------------------------------------------------------
    def position_grid(side):
        axis = torch.linspace(0, 1, side)
        ys, xs = torch.meshgrid(axis, axis, indexing="ij")
        return torch.stack([ys, xs, 1 - ys, 1 - xs], -1)                        # (s, s, 4)

    class SlotAttentionAE(nn.Module):
        """A CNN encoder with soft position embeddings, ``iters`` rounds of slot attention
        (softmax over the slots, weighted means, ``GRUCell`` + MLP updates) from slots drawn
        with the given noise, and a spatial broadcast decoder mixing slots by alpha masks."""

        def __init__(self, slots=4, d=64, side=32, iters=3, c=32):
            super().__init__()
            self.iters, self.d, self.side, self.dec_side = iters, d, side, side // 4
            self.enc = nn.Sequential(nn.Conv2d(3, c, 5, 1, 2), nn.ReLU(),
                                     nn.Conv2d(c, c, 5, 1, 2), nn.ReLU(),
                                     nn.Conv2d(c, d, 5, 1, 2), nn.ReLU())
            self.register_buffer("grid", position_grid(side))
            self.register_buffer("dec_grid", position_grid(side // 4))
            self.enc_pos, self.dec_pos = nn.Linear(4, d), nn.Linear(4, d)
            self.enc_mlp = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.ReLU(),
                                         nn.Linear(d, d))
            self.norm_in, self.norm_slots, self.norm_mlp = (nn.LayerNorm(d), nn.LayerNorm(d),
                                                            nn.LayerNorm(d))
            self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
            self.gru = nn.GRUCell(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))
            self.mu = nn.Parameter(torch.randn(1, 1, d))
            self.log_sigma = nn.Parameter(torch.zeros(1, 1, d))
            self.dec = nn.Sequential(nn.ConvTranspose2d(d, c, 5, 2, 2, output_padding=1),
                                     nn.ReLU(),
                                     nn.ConvTranspose2d(c, c, 5, 2, 2, output_padding=1),
                                     nn.ReLU(), nn.Conv2d(c, 4, 3, 1, 1))

        def forward(self, img, noise):
            b = img.shape[0]
            x = self.enc(img).permute(0, 2, 3, 1) + self.enc_pos(self.grid)
            x = self.enc_mlp(x.flatten(1, 2))
            x = self.norm_in(x)
            k, v = self.k(x), self.v(x)
            slots = self.mu + self.log_sigma.exp() * noise
            n = slots.shape[1]
            for _ in range(self.iters):
                prev = slots
                q = self.q(self.norm_slots(slots))
                attn = torch.einsum("bid,bjd->bij", q, k).mul(self.d ** -0.5).softmax(1) + 1e-8
                attn = attn / attn.sum(-1, keepdim=True)
                updates = torch.einsum("bij,bjd->bid", attn, v)
                slots = self.gru(updates.reshape(-1, self.d), prev.reshape(-1, self.d))
                slots = slots.view(b, n, self.d)
                slots = slots + self.mlp(self.norm_mlp(slots))
            s = self.dec_side
            y = slots.reshape(b * n, self.d, 1, 1).expand(-1, -1, s, s)
            y = y + self.dec_pos(self.dec_grid).permute(2, 0, 1)
            y = self.dec(y).view(b, n, 4, self.side, self.side)
            rgb, alpha = y[:, :, :3], y[:, :, 3:].softmax(1)
            return (rgb * alpha).sum(1)

    # -- S4D -------------------------------------------------------------------------------
    class S4DKernel(nn.Module):
        """The diagonal SSM's convolution kernel, computed as S4D's reference does: complex
        A = -exp(log_A_real) + i A_imag, ZOH-discretized, a Vandermonde product by ``einsum``."""

        def __init__(self, h, n=32, dt_min=1e-3, dt_max=1e-1):
            super().__init__()
            self.log_dt = nn.Parameter(torch.rand(h) * (math.log(dt_max) - math.log(dt_min))
                                       + math.log(dt_min))
            self.c = nn.Parameter(torch.randn(h, n // 2, 2) * 0.5 ** 0.5)
            self.log_a_real = nn.Parameter(torch.log(0.5 * torch.ones(h, n // 2)))
            self.a_imag = nn.Parameter(math.pi * torch.arange(n // 2).float().repeat(h, 1))

        def forward(self, length: int):
            dt = torch.exp(self.log_dt)
            c = torch.view_as_complex(self.c)
            a = -torch.exp(self.log_a_real) + 1j * self.a_imag
            dta = a * dt[:, None]
            k = dta[..., None] * torch.arange(length)
            c = c * (torch.exp(dta) - 1.0) / a
            return 2 * torch.einsum("hn,hnl->hl", c, torch.exp(k)).real

    class S4DLayer(nn.Module):
        def __init__(self, h, n):
            super().__init__()
            self.kernel = S4DKernel(h, n)
            self.d = nn.Parameter(torch.randn(h))
            self.out = nn.Conv1d(h, 2 * h, 1)
            self.norm = nn.LayerNorm(h)

        def forward(self, x):                                                   # (b, L, h)
            u = self.norm(x).transpose(1, 2)
            length = u.shape[-1]
            k_f = torch.fft.rfft(self.kernel(length), n=2 * length)
            u_f = torch.fft.rfft(u, n=2 * length)
            y = torch.fft.irfft(u_f * k_f, n=2 * length)[..., :length]
            y = F.gelu(y + u * self.d[:, None])
            return x + F.glu(self.out(y), dim=-2).transpose(1, 2)

    class S4DClassifier(nn.Module):
        def __init__(self, features=4, h=64, n=32, layers=3, classes=10):
            super().__init__()
            self.enc = nn.Linear(features, h)
            self.layers = nn.ModuleList(S4DLayer(h, n) for _ in range(layers))
            self.head = nn.Linear(h, classes)

        def forward(self, x):
            x = self.enc(x)
            for layer in self.layers:
                x = layer(x)
            return self.head(x.mean(1))

    # -- TabNet with entmax ----------------------------------------------------------------
    def entmax15(z, dim=-1):
        """The exact 1.5-entmax by sorting (Peters et al.): the threshold from cumulative
        means and squared means of the sorted values, the support size counted."""
        z = z / 2
        z = z - z.amax(dim, keepdim=True)
        zs = z.sort(dim, descending=True)[0]
        k = torch.arange(1, z.shape[dim] + 1, dtype=z.dtype)
        mean = zs.cumsum(dim) / k
        mean_sq = (zs ** 2).cumsum(dim) / k
        delta = (1 - k * (mean_sq - mean ** 2)) / k
        tau = mean - delta.clamp(min=0).sqrt()
        support = (tau <= zs).sum(dim, keepdim=True)
        return (z - tau.gather(dim, support - 1)).clamp(min=0) ** 2

    class GLUBlock(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.fc = nn.Linear(cin, 2 * cout, bias=False)
            self.bn = nn.BatchNorm1d(2 * cout)

        def forward(self, x):
            return F.glu(self.bn(self.fc(x)), -1)

    class FeatureTransformer(nn.Module):
        def __init__(self, shared, width):
            super().__init__()
            self.shared = shared
            self.own = nn.ModuleList(GLUBlock(width, width) for _ in range(2))

        def forward(self, x):
            x = self.shared[0](x)
            for block in [*self.shared[1:], *self.own]:
                x = (x + block(x)) * math.sqrt(0.5)
            return x

    class TabNetEntmax(nn.Module):
        """Sequential attention over features: each step's mask is ``entmax15`` of the
        attentive transformer's output scaled by the prior; the prior decays by
        ``gamma - mask``; decision outputs are the ReLU'd halves summed over steps."""

        def __init__(self, features=32, nd=16, na=16, steps=3, gamma=1.3, classes=3):
            super().__init__()
            self.nd, self.gamma = nd, gamma
            self.bn = nn.BatchNorm1d(features)
            shared = nn.ModuleList([GLUBlock(features, nd + na), GLUBlock(nd + na, nd + na)])
            self.initial = FeatureTransformer(shared, nd + na)
            self.steps = nn.ModuleList(FeatureTransformer(shared, nd + na)
                                       for _ in range(steps))
            self.att = nn.ModuleList(nn.Sequential(nn.Linear(na, features, bias=False),
                                                   nn.BatchNorm1d(features))
                                     for _ in range(steps))
            self.head = nn.Linear(nd, classes)

        def forward(self, x):
            x = self.bn(x)
            prior = torch.ones_like(x)
            a = self.initial(x)[:, self.nd:]
            out = 0
            for att, step in zip(self.att, self.steps):
                mask = entmax15(att(a) * prior)
                prior = prior * (self.gamma - mask)
                h = step(x * mask)
                out = out + F.relu(h[:, :self.nd])
                a = h[:, self.nd:]
            return self.head(out)

    # -- ConvLSTM nowcasting ---------------------------------------------------------------
    class ConvLSTMCell(nn.Module):
        def __init__(self, cin, hidden):
            super().__init__()
            self.conv = nn.Conv2d(cin + hidden, 4 * hidden, 3, 1, 1)

        def forward(self, x, h, c):
            i, f, o, g = self.conv(torch.cat([x, h], 1)).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            return torch.sigmoid(o) * torch.tanh(c), c

    class ConvLSTMNowcast(nn.Module):
        """Frames (b, t, 1, H, W) downsampled by a strided conv, two stacked ConvLSTMs over
        the past, the same cells rolled forward ``future`` steps on their own output, each
        forecast upsampled by a transposed conv."""

        def __init__(self, hidden=32, future=4):
            super().__init__()
            self.hidden, self.future = hidden, future
            self.down = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.LeakyReLU(0.2))
            self.cell1 = ConvLSTMCell(16, hidden)
            self.cell2 = ConvLSTMCell(hidden, hidden)
            self.up = nn.Sequential(nn.ConvTranspose2d(hidden, 16, 4, 2, 1), nn.LeakyReLU(0.2),
                                    nn.Conv2d(16, 1, 1))

        def forward(self, frames):
            b, t, _, hh, ww = frames.shape
            h1 = c1 = h2 = c2 = frames.new_zeros(b, self.hidden, hh // 2, ww // 2)
            for i in range(t):
                h1, c1 = self.cell1(self.down(frames[:, i]), h1, c1)
                h2, c2 = self.cell2(h1, h2, c2)
            out, last = [], frames[:, -1]
            for _ in range(self.future):
                h1, c1 = self.cell1(self.down(last), h1, c1)
                h2, c2 = self.cell2(h1, h2, c2)
                last = torch.sigmoid(self.up(h2))
                out.append(last)
            return torch.stack(out, 1)

    # -- inputs ----------------------------------------------------------------------------
    def tokens(vocab, b, n, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"idx": torch.randint(0, vocab, (b, n), generator=g)}
        return make

    def tacotron_inputs():
        g = torch.Generator().manual_seed(80)
        return {"memory": torch.randn(2, 48, 128, generator=g),
                "lengths": torch.tensor([48, 31])}

    def txl_inputs():
        g = torch.Generator().manual_seed(81)
        return {"idx": torch.randint(0, 512, (2, 32), generator=g),
                "mems": torch.randn(2, 2, 32, 64, generator=g)}

    def cfc_inputs():
        g = torch.Generator().manual_seed(82)
        return {"x": torch.randn(4, 32, 8, generator=g),
                "gaps": 0.1 + torch.rand(4, 32, generator=g) * 2}

    def slot_inputs():
        g = torch.Generator().manual_seed(83)
        return {"img": torch.randn(2, 3, 32, 32, generator=g),
                "noise": torch.randn(2, 4, 64, generator=g)}

    def radar_inputs():
        g = torch.Generator().manual_seed(84)
        return {"frames": torch.rand(2, 6, 1, 32, 32, generator=g)}

    return {
        "retinanet_fpn": (RetinaNetMini, (1, 3, 128, 128)),
        "tacotron2_decoder": (Tacotron2Decoder, tacotron_inputs),
        "reformer_lsh": (ReformerLM, tokens(256, 2, 128, 85)),
        "performer_favor": (PerformerLM, tokens(256, 2, 64, 86)),
        "linformer_cls": (LinformerClassifier, tokens(1000, 2, 256, 87)),
        "transformer_xl": (TransformerXL, txl_inputs),
        "pigan_siren": (PiGANSiren, (2, 64)),
        "cfc_liquid": (CfCNet, cfc_inputs),
        "slot_attention": (SlotAttentionAE, slot_inputs),
        "s4d_mini": (S4DClassifier, (4, 256, 4)),
        "tabnet_entmax": (TabNetEntmax, (64, 32)),
        "convlstm_nowcast": (ConvLSTMNowcast, radar_inputs),
    }
