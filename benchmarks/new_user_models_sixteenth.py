"""The sixteenth round of ``bench_new_user_models``: a Swin-V2 block (scaled cosine attention
with a clamped learnable logit scale, a continuous position bias MLP over log-spaced relative
coordinates squashed by ``16 * sigmoid``, shifted windows by ``roll`` with an attention mask,
residual post-norm), CoAtNet (MBConv stages with squeeze-excitation, then transformer stages
with a relative-position bias table gathered by index), U-Net++ (nested dense skip nodes, deep
supervision averaged over four heads, ``align_corners`` bilinear upsampling, test-time
augmentation over ``rot90`` turns), GIN (sum
aggregation over an edge list by ``index_add``, a learnable ``1 + eps``, per-graph sum readout
by ``scatter_add`` with a jumping-knowledge concat), a YOLOX decoupled head (separate class and
box-objectness branches, grid decoding with ``exp`` strides), FNet (token mixing by the real
part of a 2-D ``fft``), a Mixture-of-Depths block (a router picking the top-k tokens by
``take_along_dim``, the block run on those only, written back by ``scatter_add``), ECAPA-TDNN (a log-mel front end from the
waveform by ``torch.stft`` with a ``hann_window``, SE-Res2Net 1-D blocks with dilations,
multi-layer aggregation, attentive statistics pooling by ``torch.var_mean``),
SASRec (a causal self-attentive recommender with right padding, the last real position found
by ``count_nonzero`` and picked by ``gather`` and scored against the item table, the ``topk`` kept by ``scatter``), neighborhood attention (each pixel
attends to its k x k neighbours, keys and values by ``F.unfold``, a relative bias), a Point
Transformer layer (k nearest neighbours by ``cdist`` + ``topk``, vector attention over
``q - k + pos``, a softmax over neighbours) and DeepFM (a weighted ``EmbeddingBag`` with
``per_sample_weights``, the FM second-order term, a deep MLP). Kept apart so the main script
stays readable."""

from __future__ import annotations


def sixteenth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- Swin-V2 -------------------------------------------------------------------------
    class SwinV2Attention(nn.Module):
        """Window attention with cosine similarity, a per-head logit scale clamped at log(100)
        and a continuous position bias from an MLP over log-spaced relative coordinates."""

        def __init__(self, d, heads, win):
            super().__init__()
            self.h, self.win = heads, win
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.logit_scale = nn.Parameter(torch.log(10 * torch.rand(heads, 1, 1) + 1))
            self.cpb = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, heads,
                                                                             bias=False))
            r = torch.arange(-(win - 1), win, dtype=torch.float32)
            table = torch.stack(torch.meshgrid(r, r, indexing="ij"), -1) / (win - 1) * 8
            table = torch.sign(table) * torch.log2(table.abs() + 1) / math.log2(8)
            self.register_buffer("coords_table", table)                 # (2w-1, 2w-1, 2)
            ys, xs = torch.meshgrid(torch.arange(win), torch.arange(win), indexing="ij")
            c = torch.stack([ys.flatten(), xs.flatten()])              # (2, w*w)
            rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + (win - 1)
            self.register_buffer("rel_index", rel[..., 0] * (2 * win - 1) + rel[..., 1])

        def forward(self, x, mask):
            bw, n, d = x.shape
            q, k, v = self.qkv(x).reshape(bw, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            att = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
            att = att * torch.clamp(self.logit_scale, max=math.log(100.0)).exp()
            bias = self.cpb(self.coords_table).reshape(-1, self.h)[self.rel_index.reshape(-1)]
            bias = 16 * torch.sigmoid(bias.reshape(n, n, self.h).permute(2, 0, 1))
            att = att + bias[None]
            nw = mask.shape[0]
            att = att.reshape(bw // nw, nw, self.h, n, n) + mask[None, :, None]
            att = att.reshape(bw, self.h, n, n).softmax(-1)
            return self.proj((att @ v).transpose(1, 2).reshape(bw, n, d))

    class SwinV2Block(nn.Module):
        def __init__(self, d, heads, win, shift, side):
            super().__init__()
            self.win, self.shift = win, shift
            self.attn = SwinV2Attention(d, heads, win)
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            img = torch.zeros(side, side)
            if shift:
                cuts = (slice(0, -win), slice(-win, -shift), slice(-shift, None))
                label = 0
                for hs in cuts:
                    for ws in cuts:
                        img[hs, ws] = label
                        label += 1
            wins = img.reshape(side // win, win, side // win, win).transpose(1, 2)
            wins = wins.reshape(-1, win * win)
            mask = (wins[:, None, :] != wins[:, :, None]).float() * -100.0
            self.register_buffer("mask", mask)

        def forward(self, x):
            b, hh, ww, d = x.shape
            w = self.win
            y = torch.roll(x, (-self.shift, -self.shift), (1, 2)) if self.shift else x
            y = y.reshape(b, hh // w, w, ww // w, w, d).transpose(2, 3).reshape(-1, w * w, d)
            y = self.attn(y, self.mask)
            y = y.reshape(b, hh // w, ww // w, w, w, d).transpose(2, 3).reshape(b, hh, ww, d)
            if self.shift:
                y = torch.roll(y, (self.shift, self.shift), (1, 2))
            x = x + self.norm1(y)                                        # res-post-norm
            return x + self.norm2(self.mlp(x))

    class SwinV2Mini(nn.Module):
        def __init__(self, img=64, patch=4, d=48, heads=3, win=4, depth=2, classes=10):
            super().__init__()
            side = img // patch
            self.embed = nn.Conv2d(3, d, patch, patch)
            self.norm = nn.LayerNorm(d)
            self.blocks = nn.Sequential(*[SwinV2Block(d, heads, win, (i % 2) * (win // 2), side)
                                          for i in range(depth)])
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            x = self.norm(self.embed(x).permute(0, 2, 3, 1))
            return self.head(self.blocks(x).mean((1, 2)))

    # -- CoAtNet -------------------------------------------------------------------------
    class MBConv(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            mid = cin * 4
            self.pre = nn.BatchNorm2d(cin)
            self.body = nn.Sequential(
                nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.GELU(),
                nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid),
                nn.GELU())
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(mid, cin // 4, 1),
                                    nn.SiLU(), nn.Conv2d(cin // 4, mid, 1), nn.Sigmoid())
            self.out = nn.Conv2d(mid, cout, 1)
            self.short = (nn.Sequential(nn.MaxPool2d(3, 2, 1), nn.Conv2d(cin, cout, 1))
                          if stride > 1 or cin != cout else nn.Identity())

        def forward(self, x):
            h = self.body(self.pre(x))
            return self.short(x) + self.out(h * self.se(h))

    class RelAttention2d(nn.Module):
        """Full attention over an s x s map plus a learned bias per relative offset."""

        def __init__(self, d, heads, side):
            super().__init__()
            self.h = heads
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.table = nn.Parameter(torch.randn((2 * side - 1) ** 2, heads) * 0.5)
            ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
            c = torch.stack([ys.flatten(), xs.flatten()])
            rel = (c[:, :, None] - c[:, None, :]) + (side - 1)
            self.register_buffer("index", rel[0] * (2 * side - 1) + rel[1])

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            bias = self.table[self.index].permute(2, 0, 1)
            att = (q @ k.transpose(-2, -1)) * (d // self.h) ** -0.5 + bias
            return self.proj((att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d))

    class CoAtTransformer(nn.Module):
        def __init__(self, cin, cout, heads, side, downsample):
            super().__init__()
            self.down = downsample
            self.pool = nn.MaxPool2d(3, 2, 1) if downsample else nn.Identity()
            self.proj = nn.Conv2d(cin, cout, 1)
            self.norm1, self.norm2 = nn.LayerNorm(cin), nn.LayerNorm(cout)
            self.attn = RelAttention2d(cout, heads, side)
            self.ffn = nn.Sequential(nn.Linear(cout, 4 * cout), nn.GELU(),
                                     nn.Linear(4 * cout, cout))

        def forward(self, x):
            x = self.pool(x)
            b, c, hh, ww = x.shape
            t = self.norm1(x.flatten(2).transpose(1, 2))
            t = self.proj(t.transpose(1, 2).reshape(b, c, hh, ww)).flatten(2).transpose(1, 2)
            y = self.proj(x).flatten(2).transpose(1, 2) + self.attn(t)
            y = y + self.ffn(self.norm2(y))
            return y.transpose(1, 2).reshape(b, -1, hh, ww)

    class CoAtNetMini(nn.Module):
        """S0 conv stem, S1-S2 MBConv, S3-S4 relative-attention transformers, pooled head."""

        def __init__(self, img=64, widths=(32, 48, 64, 96, 128), heads=4, classes=10, s1_blocks=2):
            super().__init__()
            w0, w1, w2, w3, w4 = widths
            self.stem = nn.Sequential(nn.Conv2d(3, w0, 3, 2, 1), nn.BatchNorm2d(w0), nn.GELU())
            self.s1 = nn.Sequential(MBConv(w0, w1, 2),
                                    *[MBConv(w1, w1, 1) for _ in range(s1_blocks - 1)])
            self.s2 = MBConv(w1, w2, 2)
            self.s3 = CoAtTransformer(w2, w3, heads, img // 16, True)
            self.s4 = CoAtTransformer(w3, w4, heads, img // 32, True)
            self.head = nn.Sequential(nn.LayerNorm(w4), nn.Linear(w4, classes))

        def forward(self, x):
            x = self.s4(self.s3(self.s2(self.s1(self.stem(x)))))
            return self.head(x.mean((2, 3)))

    # -- U-Net++ -------------------------------------------------------------------------
    def vgg_block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout), nn.ReLU())

    class UNetPlusPlus(nn.Module):
        """Nodes X[i][j]: X[i][0] down the encoder, X[i][j] from every X[i][<j] plus the
        upsampled X[i+1][j-1]; four 1x1 heads on X[0][1..4] averaged (deep supervision)."""

        def __init__(self, widths=(8, 16, 32, 64, 128), classes=2, tta_turns=(0, 1)):
            super().__init__()
            self.depth, self.turns = len(widths), tta_turns
            self.nodes = nn.ModuleDict()
            for i in range(self.depth):
                for j in range(self.depth - i):
                    cin = (3 if i == 0 else widths[i - 1]) if j == 0 else \
                        widths[i] * j + widths[i + 1]
                    self.nodes[f"{i}_{j}"] = vgg_block(cin, widths[i])
            self.heads = nn.ModuleList(nn.Conv2d(widths[0], classes, 1)
                                       for _ in range(self.depth - 1))

        def forward(self, x):
            """The mask averaged over quarter turns of the input, each turned back
            (test-time augmentation)."""
            outs = [torch.rot90(self.segment(torch.rot90(x, k, (2, 3))), -k, (2, 3))
                    for k in self.turns]
            return torch.stack(outs).mean(0)

        def segment(self, x):
            grid = {}
            for i in range(self.depth):
                src = x if i == 0 else F.max_pool2d(grid[i - 1, 0], 2)
                grid[i, 0] = self.nodes[f"{i}_0"](src)
            for j in range(1, self.depth):
                for i in range(self.depth - j):
                    up = F.interpolate(grid[i + 1, j - 1], scale_factor=2, mode="bilinear",
                                       align_corners=True)
                    grid[i, j] = self.nodes[f"{i}_{j}"](
                        torch.cat([grid[i, k] for k in range(j)] + [up], 1))
            outs = [head(grid[0, j + 1]) for j, head in enumerate(self.heads)]
            return torch.stack(outs).mean(0).sigmoid()

    # -- GIN -----------------------------------------------------------------------------
    class GIN(nn.Module):
        """A batch of graphs as one edge list; h' = MLP((1 + eps) h + sum of neighbours),
        each layer's per-graph sum readout concatenated (jumping knowledge)."""

        def __init__(self, features=16, hidden=64, layers=4, classes=5, graphs=8):
            super().__init__()
            self.graphs = graphs
            self.eps = nn.Parameter(torch.full((layers,), 0.1))
            self.mlps = nn.ModuleList(
                nn.Sequential(nn.Linear(features if i == 0 else hidden, hidden),
                              nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                              nn.ReLU()) for i in range(layers))
            self.head = nn.Sequential(nn.Linear(features + layers * hidden, hidden), nn.ReLU(),
                                      nn.Linear(hidden, classes))

        def readout(self, h, batch):
            idx = batch[:, None].expand(-1, h.shape[1])
            return h.new_zeros(self.graphs, h.shape[1]).scatter_add(0, idx, h)

        def forward(self, x, edges, batch):
            src, dst = edges[0], edges[1]
            pooled, h = [self.readout(x, batch)], x
            for i, mlp in enumerate(self.mlps):
                agg = torch.zeros_like(h).index_add(0, dst, h[src])
                h = mlp((1 + self.eps[i]) * h + agg)
                pooled.append(self.readout(h, batch))
            return self.head(torch.cat(pooled, 1))

    # -- YOLOX ---------------------------------------------------------------------------
    class YOLOXMini(nn.Module):
        """A CSP-ish backbone to strides 8/16/32, a decoupled head per level (a stem, then a
        class branch and a box + objectness branch), decoded to (cx, cy, w, h, obj, cls...)."""

        def __init__(self, img=128, classes=6, width=32):
            super().__init__()
            c = width

            def cbs(cin, cout, stride=1, k=3):
                return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                                     nn.BatchNorm2d(cout), nn.SiLU())
            self.stem = nn.Sequential(cbs(3, c // 2, 2), cbs(c // 2, c, 2), cbs(c, c))
            self.d3 = nn.Sequential(cbs(c, 2 * c, 2), cbs(2 * c, 2 * c))
            self.d4 = nn.Sequential(cbs(2 * c, 4 * c, 2), cbs(4 * c, 4 * c))
            self.d5 = nn.Sequential(cbs(4 * c, 8 * c, 2), cbs(8 * c, 8 * c))
            self.stems = nn.ModuleList(cbs(w, c, 1, 1) for w in (2 * c, 4 * c, 8 * c))
            self.cls = nn.ModuleList(nn.Sequential(cbs(c, c), cbs(c, c), nn.Conv2d(c, classes, 1))
                                     for _ in range(3))
            self.reg = nn.ModuleList(nn.Sequential(cbs(c, c), cbs(c, c)) for _ in range(3))
            self.box = nn.ModuleList(nn.Conv2d(c, 4, 1) for _ in range(3))
            self.obj = nn.ModuleList(nn.Conv2d(c, 1, 1) for _ in range(3))
            grids, strides = [], []
            for s in (8, 16, 32):
                side = img // s
                ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
                grids.append(torch.stack([xs, ys], -1).reshape(-1, 2).float())
                strides.append(torch.full((side * side, 1), float(s)))
            self.register_buffer("grid", torch.cat(grids))
            self.register_buffer("stride", torch.cat(strides))

        def forward(self, x):
            p3 = self.d3(self.stem(x))
            p4 = self.d4(p3)
            p5 = self.d5(p4)
            outs = []
            for i, p in enumerate((p3, p4, p5)):
                s = self.stems[i](p)
                r = self.reg[i](s)
                o = torch.cat([self.box[i](r), self.obj[i](r).sigmoid(),
                               self.cls[i](s).sigmoid()], 1)
                outs.append(o.flatten(2))
            o = torch.cat(outs, 2).transpose(1, 2)
            xy = (o[..., :2] + self.grid) * self.stride
            wh = o[..., 2:4].exp() * self.stride
            return torch.cat([xy, wh, o[..., 4:5], o[..., 5:] * o[..., 4:5]], -1)

    # -- FNet ----------------------------------------------------------------------------
    class FNetEncoder(nn.Module):
        """Token and hidden mixing by Re(FFT2) in place of attention, post-norm blocks."""

        def __init__(self, vocab=1000, d=128, layers=4, n=128, classes=4):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(n, d)
            self.norm0 = nn.LayerNorm(d)
            self.mix_norm = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.ff_norm = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.ff = nn.ModuleList(nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                                  nn.Linear(4 * d, d)) for _ in range(layers))
            self.head = nn.Linear(d, classes)

        def forward(self, idx):
            pos = torch.arange(idx.shape[1])
            x = self.norm0(self.tok(idx) + self.pos(pos))
            for mn, fn, ff in zip(self.mix_norm, self.ff_norm, self.ff):
                x = mn(x + torch.fft.fft2(x).real)
                x = fn(x + ff(x))
            return self.head(x[:, 0])

    # -- Mixture-of-Depths ---------------------------------------------------------------
    class MoDBlock(nn.Module):
        """A transformer block run on the ``capacity`` tokens a linear router ranks highest;
        their outputs, weighted by the router's score, are scattered back over the input."""

        def __init__(self, d, heads, capacity):
            super().__init__()
            self.cap = capacity
            self.router = nn.Linear(d, 1)
            self.block = nn.TransformerEncoderLayer(d, heads, 4 * d, 0.0, batch_first=True,
                                                    norm_first=True)

        def forward(self, x):
            b, n, d = x.shape
            w = self.router(x).squeeze(-1)                                   # (b, n)
            top_w, top_i = w.topk(self.cap, -1)
            top_i, order = top_i.sort(-1)                                    # keep causal order
            top_w = torch.take_along_dim(top_w, order, 1)
            chosen = torch.take_along_dim(x, top_i[..., None], 1)           # (b, cap, d)
            delta = (self.block(chosen) - chosen) * torch.sigmoid(top_w)[..., None]
            return x.scatter_add(1, top_i[..., None].expand(-1, -1, d), delta)

    class MoDLM(nn.Module):
        def __init__(self, vocab=512, d=96, heads=4, layers=4, n=96, capacity=0.25):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(n, d) * 0.02)
            cap = int(n * capacity)
            self.blocks = nn.ModuleList(
                MoDBlock(d, heads, cap) if i % 2 else
                nn.TransformerEncoderLayer(d, heads, 4 * d, 0.0, batch_first=True,
                                           norm_first=True) for i in range(layers))
            self.norm, self.out = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(self, idx):
            x = self.tok(idx) + self.pos[:idx.shape[1]]
            for blk in self.blocks:
                x = blk(x)
            return self.out(self.norm(x))

    # -- ECAPA-TDNN ----------------------------------------------------------------------
    class SERes2Block(nn.Module):
        def __init__(self, c, scale, dilation):
            super().__init__()
            w = c // scale
            self.scale = scale
            self.pre = nn.Sequential(nn.Conv1d(c, c, 1), nn.ReLU(), nn.BatchNorm1d(c))
            self.convs = nn.ModuleList(
                nn.Sequential(nn.Conv1d(w, w, 3, padding=dilation, dilation=dilation),
                              nn.ReLU(), nn.BatchNorm1d(w)) for _ in range(scale - 1))
            self.post = nn.Sequential(nn.Conv1d(c, c, 1), nn.ReLU(), nn.BatchNorm1d(c))
            self.se = nn.Sequential(nn.Conv1d(c, c // 4, 1), nn.ReLU(), nn.Conv1d(c // 4, c, 1),
                                    nn.Sigmoid())

        def forward(self, x):
            parts = self.pre(x).chunk(self.scale, 1)
            outs, y = [parts[0]], None
            for i, conv in enumerate(self.convs):
                y = conv(parts[i + 1] if y is None else parts[i + 1] + y)
                outs.append(y)
            h = self.post(torch.cat(outs, 1))
            return x + h * self.se(h.mean(-1, keepdim=True))

    def mel_filterbank(n_fft, mels, rate, lo=20.0, hi=None):
        """[n_fft // 2 + 1, mels] HTK-mel triangles (as torchaudio's ``melscale_fbanks``)."""
        hi = rate / 2 if hi is None else hi
        freqs = torch.linspace(0, rate / 2, n_fft // 2 + 1)

        def mel(f):
            return 2595.0 * math.log10(1.0 + f / 700.0)
        pts = torch.linspace(mel(lo), mel(hi), mels + 2)
        hz = 700.0 * (10 ** (pts / 2595.0) - 1.0)
        up = (freqs[:, None] - hz[None, :-2]) / (hz[1:-1] - hz[:-2])
        down = (hz[None, 2:] - freqs[:, None]) / (hz[2:] - hz[1:-1])
        return torch.clamp(torch.minimum(up, down), min=0.0)

    class ECAPATDNN(nn.Module):
        """A waveform -> ``torch.stft`` power spectrum (a Hann window built in ``forward``) ->
        log-mel with the mean over time removed -> a TDNN, SE-Res2 blocks (dilations 2, 3, 4),
        their outputs concatenated, attentive statistics pooling (weighted mean and std, the
        global context from ``torch.var_mean``), a normalized embedding."""

        def __init__(self, mels=40, c=128, scale=4, attn=64, emb=96, dilations=(2, 3, 4),
                     n_fft=400, hop=160, rate=16000):
            super().__init__()
            n = len(dilations)
            self.n_fft, self.hop = n_fft, hop
            self.register_buffer("fbank", mel_filterbank(n_fft, mels, rate))
            self.tdnn = nn.Sequential(nn.Conv1d(mels, c, 5, padding=2), nn.ReLU(),
                                      nn.BatchNorm1d(c))
            self.blocks = nn.ModuleList(SERes2Block(c, scale, d) for d in dilations)
            self.mfa = nn.Sequential(nn.Conv1d(n * c, n * c, 1), nn.ReLU())
            self.attn = nn.Sequential(nn.Conv1d(3 * n * c, attn, 1), nn.ReLU(),
                                      nn.BatchNorm1d(attn), nn.Tanh(), nn.Conv1d(attn, n * c, 1))
            self.bn = nn.BatchNorm1d(2 * n * c)
            self.emb = nn.Linear(2 * n * c, emb)

        def forward(self, wave):
            # (real, imaginary) pairs rather than a complex tensor: torch's ONNX exporter
            # takes only this form (older torchaudio-style front ends write it so too)
            spec = torch.stft(wave, self.n_fft, self.hop, window=torch.hann_window(self.n_fft),
                              return_complex=False)
            power = spec.pow(2).sum(-1)                                       # (b, bins, t)
            logmel = torch.log(torch.matmul(power.transpose(1, 2), self.fbank) + 1e-6)
            feats = logmel - logmel.mean(1, keepdim=True)                     # (b, t, mels)
            x = self.tdnn(feats.transpose(1, 2))
            outs = []
            for blk in self.blocks:
                x = blk(x)
                outs.append(x)
            h = self.mfa(torch.cat(outs, 1))
            t = h.shape[-1]
            var, mean = torch.var_mean(h, -1, keepdim=True, correction=0)
            std = var.clamp(min=1e-4).sqrt()
            w = self.attn(torch.cat([h, mean.expand(-1, -1, t), std.expand(-1, -1, t)],
                                    1)).softmax(-1)
            mu = (w * h).sum(-1)
            sg = ((w * h * h).sum(-1) - mu * mu).clamp(min=1e-4).sqrt()
            e = self.emb(self.bn(torch.cat([mu, sg], 1)))
            return F.normalize(e, dim=-1)

    # -- SASRec --------------------------------------------------------------------------
    class SASRec(nn.Module):
        """Item ids (0 pads, on the right) -> causal self-attention blocks with the padding
        zeroed; the state at each sequence's last real item (``count_nonzero - 1``) scored
        against every item embedding, the top-k scores kept."""

        def __init__(self, items=2000, d=64, heads=2, layers=2, n=50, k=10):
            super().__init__()
            self.k = k
            self.item = nn.Embedding(items + 1, d, padding_idx=0)
            self.pos = nn.Embedding(n, d)
            self.layers = nn.ModuleList(
                nn.TransformerEncoderLayer(d, heads, d, 0.0, batch_first=True, norm_first=True)
                for _ in range(layers))
            self.norm = nn.LayerNorm(d)
            self.register_buffer("causal", torch.triu(torch.full((n, n), float("-inf")), 1))

        def forward(self, seq):
            keep = (seq > 0).float()[..., None]
            x = (self.item(seq) * self.item.embedding_dim ** 0.5
                 + self.pos(torch.arange(seq.shape[1]))) * keep
            for layer in self.layers:
                x = layer(x, src_mask=self.causal) * keep
            last = (torch.count_nonzero(seq, 1) - 1).clamp(min=0)
            h = self.norm(x.gather(1, last[:, None, None].expand(-1, 1, x.shape[-1]))[:, 0])
            scores = h @ self.item.weight[1:].t()
            top, ids = scores.topk(self.k, -1)
            return torch.zeros_like(scores).scatter(1, ids, top)           # the top-k kept

    # -- Neighborhood attention ----------------------------------------------------------
    class NeighborhoodAttention(nn.Module):
        """Each pixel attends to the k x k window around it (zero-padded at the edges, the
        padded keys masked out); keys and values gathered by ``F.unfold``."""

        def __init__(self, d, heads, k):
            super().__init__()
            self.h, self.k = heads, k
            self.qkv, self.proj = nn.Conv2d(d, 3 * d, 1), nn.Conv2d(d, d, 1)
            self.rpb = nn.Parameter(torch.randn(heads, k * k) * 0.5)

        def forward(self, x):
            b, d, hh, ww = x.shape
            h, k, dh = self.h, self.k, d // self.h
            q, kk, v = self.qkv(x).chunk(3, 1)
            keys = F.unfold(kk, k, padding=k // 2).reshape(b, h, dh, k * k, hh * ww)
            vals = F.unfold(v, k, padding=k // 2).reshape(b, h, dh, k * k, hh * ww)
            valid = F.unfold(x.new_ones(1, 1, hh, ww), k, padding=k // 2)   # (1, k*k, hw)
            q = q.reshape(b, h, dh, 1, hh * ww) * dh ** -0.5
            att = (q * keys).sum(2) + self.rpb[None, :, :, None]             # (b, h, kk, hw)
            att = att.masked_fill(valid[None] == 0, float("-inf")).softmax(2)
            out = (att[:, :, None] * vals).sum(3).reshape(b, d, hh, ww)
            return self.proj(out)

    class NATMini(nn.Module):
        def __init__(self, img=64, d=48, heads=3, k=5, depth=3, classes=10):
            super().__init__()
            self.embed = nn.Sequential(nn.Conv2d(3, d // 2, 3, 2, 1), nn.GELU(),
                                       nn.Conv2d(d // 2, d, 3, 2, 1))
            self.norms = nn.ModuleList(nn.GroupNorm(1, d) for _ in range(2 * depth))
            self.attn = nn.ModuleList(NeighborhoodAttention(d, heads, k) for _ in range(depth))
            self.mlp = nn.ModuleList(nn.Sequential(nn.Conv2d(d, 3 * d, 1), nn.GELU(),
                                                   nn.Conv2d(3 * d, d, 1))
                                     for _ in range(depth))
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            x = self.embed(x)
            for i, (att, mlp) in enumerate(zip(self.attn, self.mlp)):
                x = x + att(self.norms[2 * i](x))
                x = x + mlp(self.norms[2 * i + 1](x))
            return self.head(x.mean((2, 3)))

    # -- Point Transformer ---------------------------------------------------------------
    class PointTransformerLayer(nn.Module):
        def __init__(self, d, k):
            super().__init__()
            self.k = k
            self.q, self.kk, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.pos = nn.Sequential(nn.Linear(3, d), nn.ReLU(), nn.Linear(d, d))
            self.gamma = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))

        def forward(self, xyz, f):
            b, n, d = f.shape
            idx = torch.cdist(xyz, xyz).topk(self.k, -1, largest=False)[1]   # (b, n, k)
            flat = (idx + torch.arange(b)[:, None, None] * n).reshape(-1)

            def nbr(t):
                return t.reshape(b * n, -1)[flat].reshape(b, n, self.k, -1)
            rel = self.pos(xyz[:, :, None] - nbr(xyz))
            w = self.gamma(self.q(f)[:, :, None] - nbr(self.kk(f)) + rel).softmax(2)
            return f + (w * (nbr(self.v(f)) + rel)).sum(2)

    class PointTransformerCls(nn.Module):
        def __init__(self, d=64, k=16, layers=3, classes=8):
            super().__init__()
            self.inp = nn.Sequential(nn.Linear(3, d), nn.ReLU(), nn.Linear(d, d))
            self.layers = nn.ModuleList(PointTransformerLayer(d, k) for _ in range(layers))
            self.head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, classes))

        def forward(self, xyz):
            f = self.inp(xyz)
            for layer in self.layers:
                f = layer(xyz, f)
            return self.head(f.max(1)[0])

    # -- DeepFM --------------------------------------------------------------------------
    class DeepFM(nn.Module):
        """Single-valued fields by ``Embedding`` (one table, field offsets), a multi-hot field
        with per-id weights by ``EmbeddingBag(mode='sum', per_sample_weights=...)``; the FM
        first- and second-order terms plus a deep MLP over the same embeddings."""

        def __init__(self, field_sizes=(100, 50, 20, 300, 80, 10), bag_size=500, k=16,
                     hidden=(128, 64)):
            super().__init__()
            offsets = torch.tensor([0, *field_sizes[:-1]]).cumsum(0)
            self.register_buffer("offsets", offsets)
            total = sum(field_sizes)
            self.emb = nn.Embedding(total, k)
            self.lin = nn.Embedding(total, 1)
            self.bag = nn.EmbeddingBag(bag_size, k, mode="sum")
            self.bag_lin = nn.EmbeddingBag(bag_size, 1, mode="sum")
            n = (len(field_sizes) + 1) * k
            layers, w = [], n
            for h in hidden:
                layers += [nn.Linear(w, h), nn.BatchNorm1d(h), nn.ReLU()]
                w = h
            self.deep = nn.Sequential(*layers, nn.Linear(w, 1))
            self.bias = nn.Parameter(torch.zeros(1))

        def forward(self, fields, bag_ids, bag_offsets, bag_weights):
            ids = fields + self.offsets
            e = torch.cat([self.emb(ids),
                           self.bag(bag_ids, bag_offsets, per_sample_weights=bag_weights)[:, None]],
                          1)                                                  # (b, f+1, k)
            first = self.lin(ids).sum((1, 2)) + self.bag_lin(
                bag_ids, bag_offsets, per_sample_weights=bag_weights).squeeze(-1)
            second = 0.5 * (e.sum(1) ** 2 - (e * e).sum(1)).sum(-1)
            deep = self.deep(e.flatten(1)).squeeze(-1)
            return torch.sigmoid(first + second + deep + self.bias)

    # -- inputs --------------------------------------------------------------------------
    def tokens(vocab, b, n, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"idx": torch.randint(0, vocab, (b, n), generator=g)}
        return make

    def gin_inputs(nodes=96, graphs=8, features=16, edges_per=48, seed=90):
        def make():
            g = torch.Generator().manual_seed(seed)
            per = nodes // graphs
            batch = torch.arange(nodes) // per
            src = torch.randint(0, per, (graphs, edges_per), generator=g)
            dst = torch.randint(0, per, (graphs, edges_per), generator=g)
            base = (torch.arange(graphs) * per)[:, None]
            e = torch.stack([(src + base).flatten(), (dst + base).flatten()])
            e = torch.cat([e, e.flip(0)], 1)                                   # undirected
            return {"x": torch.randn(nodes, features, generator=g), "edges": e, "batch": batch}
        return make

    def sasrec_inputs(items=2000, b=4, n=50, seed=91):
        def make():
            g = torch.Generator().manual_seed(seed)
            seq = torch.randint(1, items + 1, (b, n), generator=g)
            lengths = torch.randint(n // 4, n + 1, (b,), generator=g)
            pad = torch.arange(n)[None] >= lengths[:, None]                  # right padding
            return {"seq": seq.masked_fill(pad, 0)}
        return make

    def points(b=2, n=256, seed=92):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"xyz": torch.randn(b, n, 3, generator=g)}
        return make

    def deepfm_inputs(field_sizes=(100, 50, 20, 300, 80, 10), bag_size=500, b=64, seed=93):
        def make():
            g = torch.Generator().manual_seed(seed)
            fields = torch.stack([torch.randint(0, s, (b,), generator=g) for s in field_sizes], 1)
            lengths = torch.randint(1, 6, (b,), generator=g)
            offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
            total = int(lengths.sum())
            return {"fields": fields,
                    "bag_ids": torch.randint(0, bag_size, (total,), generator=g),
                    "bag_offsets": offsets,
                    "bag_weights": torch.rand(total, generator=g)}
        return make

    def ecapa_inputs():
        g = torch.Generator().manual_seed(94)
        return {"wave": 0.1 * torch.randn(2, 32000, generator=g)}                   # 2 s

    return {
        "swinv2_cpb": (SwinV2Mini, (1, 3, 64, 64)),
        "coatnet_mini": (CoAtNetMini, (1, 3, 64, 64)),
        "unetpp_mini": (UNetPlusPlus, (1, 3, 64, 64)),
        "gin_scatter": (GIN, gin_inputs()),
        "yolox_head": (YOLOXMini, (1, 3, 128, 128)),
        "fnet_mini": (FNetEncoder, tokens(1000, 2, 128, 95)),
        "mod_router": (MoDLM, tokens(512, 2, 96, 96)),
        "ecapa_tdnn": (ECAPATDNN, ecapa_inputs),
        "sasrec_topk": (SASRec, sasrec_inputs()),
        "nat_mini": (NATMini, (1, 3, 64, 64)),
        "point_transformer": (PointTransformerCls, points()),
        "deepfm_bag": (DeepFM, deepfm_inputs()),
    }
