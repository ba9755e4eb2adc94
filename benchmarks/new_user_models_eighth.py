"""The eighth round of ``bench_new_user_models``: RWKV (token shift, causal linear attention by
cumsum, squared-ReLU channel mix), a bidirectional Mamba (softplus step sizes, a selective scan
written as a Python loop, ``torch.flip``), a LLaMA-style decoder (grouped-query attention by
``repeat_interleave``, ALiBi biases, SwiGLU, tied embeddings), a modulated deformable conv
(per-pixel offsets, ``grid_sample`` with border padding and ``align_corners=True``), a graph
attention network (softmax over each node's incoming edges by scatter), a BiT-style ResNet with
weight-standardized convs, GroupNorm and FiLM class conditioning, a TabTransformer (column
embeddings, Mish), a log-mel CNN (reflect-padded STFT as a conv1d, mel matmul, ``log1p``),
ConvNeXt-V2's global response normalization (``torch.linalg.vector_norm``), NAFNet
(``PixelUnshuffle``, SimpleGate, LayerNorm over channels, ICNR-initialized ``PixelShuffle``),
gMLP's spatial gating with ``logsumexp`` pooling and NeRF volume rendering (``cumprod``
transmittance). Kept apart so the main script stays readable."""

from __future__ import annotations


def eighth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- RWKV ------------------------------------------------------------------------------
    class RWKVBlock(nn.Module):
        """Time mix: each token interpolated with the previous one (token shift by zero
        padding), receptance-gated causal linear attention with an elu+1 feature map whose
        prefix sums are cumsums over time; channel mix: token shift, squared ReLU, sigmoid
        receptance gate."""

        def __init__(self, d):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.mix_k, self.mix_v, self.mix_r = (nn.Parameter(torch.rand(d)) for _ in range(3))
            self.key, self.value = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.rec, self.out = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.cmix = nn.Parameter(torch.rand(d))
            self.ck, self.cv = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)
            self.cr = nn.Linear(d, d, bias=False)

        @staticmethod
        def shift(x):
            return F.pad(x, (0, 0, 1, -1))

        def forward(self, x):
            h = self.ln1(x)
            p = self.shift(h)
            k = F.elu(self.key(h * self.mix_k + p * (1 - self.mix_k))) + 1
            v = self.value(h * self.mix_v + p * (1 - self.mix_v))
            r = torch.sigmoid(self.rec(h * self.mix_r + p * (1 - self.mix_r)))
            num = torch.cumsum(k * v, 1)
            den = torch.cumsum(k, 1)
            x = x + self.out(r * num / den)
            h = self.ln2(x)
            m = h * self.cmix + self.shift(h) * (1 - self.cmix)
            return x + torch.sigmoid(self.cr(m)) * self.cv(torch.relu(self.ck(m)) ** 2)

    class RWKVMini(nn.Module):
        def __init__(self, vocab=512, d=96, depth=3):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.ln0, self.lnf = nn.LayerNorm(d), nn.LayerNorm(d)
            self.blocks = nn.ModuleList([RWKVBlock(d) for _ in range(depth)])
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.ln0(self.emb(idx))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.lnf(x))

    def tokens(vocab, n, seed, batch=1):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"idx": torch.randint(0, vocab, (batch, n), generator=g)}
        return make

    # -- Mamba -----------------------------------------------------------------------------
    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-5):
            super().__init__()
            self.eps, self.w = eps, nn.Parameter(1 + 0.1 * torch.randn(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w

    class MambaMixer(nn.Module):
        """Input projection to (x, z), a causal depthwise conv1d (left padding, cut to length),
        SiLU, x projected to the step size (softplus), B and C; the selective scan
        h = exp(dt A) h + dt B x, y = C h + D x as a Python loop over time; gated by SiLU(z)."""

        def __init__(self, d, state=8, expand=2, conv=4):
            super().__init__()
            e = expand * d
            self.e, self.state, self.rank = e, state, max(d // 16, 1)
            self.inp = nn.Linear(d, 2 * e, bias=False)
            self.conv = nn.Conv1d(e, e, conv, groups=e, padding=conv - 1)
            self.xp = nn.Linear(e, self.rank + 2 * state, bias=False)
            self.dt = nn.Linear(self.rank, e)
            self.a_log = nn.Parameter(torch.log(torch.arange(1, state + 1).float()).repeat(e, 1))
            self.dd = nn.Parameter(torch.ones(e))
            self.out = nn.Linear(e, d, bias=False)

        def forward(self, x):
            n = x.shape[1]
            u, z = self.inp(x).chunk(2, -1)
            u = F.silu(self.conv(u.transpose(1, 2))[..., :n].transpose(1, 2))
            dt, bm, cm = self.xp(u).split([self.rank, self.state, self.state], -1)
            dt = F.softplus(self.dt(dt))                                   # B L E
            a = -torch.exp(self.a_log)                                     # E S
            h = torch.zeros(x.shape[0], self.e, self.state)
            ys = []
            for t in range(n):
                h = torch.exp(dt[:, t, :, None] * a) * h \
                    + (dt[:, t, :, None] * bm[:, t, None, :]) * u[:, t, :, None]
                ys.append((h * cm[:, t, None, :]).sum(-1))
            y = torch.stack(ys, 1) + u * self.dd
            return self.out(y * F.silu(z))

    class BiMambaMini(nn.Module):
        """Vision-Mamba style: patch embedding, pre-norm mixers run forward and on the
        flipped sequence, averaged; mean pooled classifier."""

        def __init__(self, d=48, depth=2, classes=10):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 8, 8)
            self.norms = nn.ModuleList([RMSNorm(d) for _ in range(depth)])
            self.fwd = nn.ModuleList([MambaMixer(d) for _ in range(depth)])
            self.bwd = nn.ModuleList([MambaMixer(d) for _ in range(depth)])
            self.head = nn.Sequential(RMSNorm(d), nn.Linear(d, classes))

        def forward(self, x):
            x = self.patch(x).flatten(2).transpose(1, 2)
            for norm, f, b in zip(self.norms, self.fwd, self.bwd, strict=True):
                h = norm(x)
                x = x + 0.5 * (f(h) + torch.flip(b(torch.flip(h, [1])), [1]))
            return self.head(x.mean(1))

    # -- LLaMA-style decoder ---------------------------------------------------------------
    class GQAAlibi(nn.Module):
        """Grouped-query attention (4 query heads share each of 2 key/value heads, expanded
        by repeat_interleave), ALiBi's per-head linear distance biases and a causal mask."""

        def __init__(self, d, heads=8, kv_heads=2, n=64):
            super().__init__()
            self.h, self.kv, self.hd = heads, kv_heads, d // heads
            self.q = nn.Linear(d, d, bias=False)
            self.kvp = nn.Linear(d, 2 * kv_heads * self.hd, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
            pos = torch.arange(n)
            dist = (pos[None, :] - pos[:, None]).float()
            bias = slopes[:, None, None] * dist
            bias = bias.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
            self.register_buffer("bias", bias)

        def forward(self, x):
            b, n, d = x.shape
            q = self.q(x).view(b, n, self.h, self.hd).transpose(1, 2)
            k, v = self.kvp(x).view(b, n, 2, self.kv, self.hd).permute(2, 0, 3, 1, 4)
            rep = self.h // self.kv
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            a = (q @ k.transpose(-1, -2) / math.sqrt(self.hd) + self.bias[:, :n, :n]).softmax(-1)
            return self.o((a @ v).transpose(1, 2).reshape(b, n, d))

    class LlamaBlock(nn.Module):
        def __init__(self, d, n):
            super().__init__()
            self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
            self.attn = GQAAlibi(d, n=n)
            hid = 8 * d // 3
            self.gate, self.up = nn.Linear(d, hid, bias=False), nn.Linear(d, hid, bias=False)
            self.down = nn.Linear(hid, d, bias=False)

        def forward(self, x):
            x = x + self.attn(self.n1(x))
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class LlamaAlibi(nn.Module):
        """Token embeddings (no positions: ALiBi), RMSNorm-SwiGLU blocks, the output head
        tied to the embedding matrix."""

        def __init__(self, vocab=1000, d=96, depth=3, n=64):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([LlamaBlock(d, n) for _ in range(depth)])
            self.norm = RMSNorm(d)

        def forward(self, idx):
            x = self.emb(idx)
            for blk in self.blocks:
                x = blk(x)
            return F.linear(self.norm(x), self.emb.weight)

    # -- Modulated deformable conv ---------------------------------------------------------
    class DeformConv(nn.Module):
        """DCNv2: a conv predicts per-pixel offsets (2 per tap) and sigmoid modulation for a
        3x3 kernel; each tap's sampling grid (pixel + tap + offset, normalized for
        align_corners=True) is read by bilinear grid_sample with border padding, the taps
        weighted and mixed by a 1x1 conv over (channels x taps)."""

        def __init__(self, i, o, k=3):
            super().__init__()
            self.k = k
            self.off = nn.Conv2d(i, 3 * k * k, 3, 1, 1)
            nn.init.normal_(self.off.weight, std=0.05)
            self.mix = nn.Conv2d(i * k * k, o, 1)
            r = torch.arange(k).float() - (k - 1) / 2
            ty, tx = torch.meshgrid(r, r, indexing="ij")
            self.register_buffer("taps", torch.stack([tx.flatten(), ty.flatten()], -1))

        def forward(self, x):
            b, c, hh, ww = x.shape
            kk = self.k * self.k
            o = self.off(x)
            off = o[:, :2 * kk].view(b, kk, 2, hh, ww).permute(0, 1, 3, 4, 2)   # B K H W 2
            mod = torch.sigmoid(o[:, 2 * kk:])                                  # B K H W
            ys = torch.arange(hh, dtype=x.dtype).view(1, 1, hh, 1)
            xs = torch.arange(ww, dtype=x.dtype).view(1, 1, 1, ww)
            px = xs + self.taps[:, 0].view(1, kk, 1, 1) + off[..., 0]
            py = ys + self.taps[:, 1].view(1, kk, 1, 1) + off[..., 1]
            grid = torch.stack([2 * px / (ww - 1) - 1, 2 * py / (hh - 1) - 1], -1)
            s = F.grid_sample(x, grid.view(b, kk * hh, ww, 2), mode="bilinear",
                              padding_mode="border", align_corners=True)        # B C KH W
            s = s.view(b, c, kk, hh, ww) * mod[:, None]
            return self.mix(s.reshape(b, c * kk, hh, ww))

    def cbr(i, o, k, s=1, act=nn.ReLU):
        return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, bias=False), nn.BatchNorm2d(o), act())

    def deform_net():
        return nn.Sequential(cbr(3, 32, 3, 2), cbr(32, 48, 3, 2), DeformConv(48, 64),
                             nn.BatchNorm2d(64), nn.ReLU(), cbr(64, 64, 3, 2),
                             DeformConv(64, 96), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Linear(96, 100))

    # -- GAT -------------------------------------------------------------------------------
    class GATLayer(nn.Module):
        """Multi-head graph attention over an edge list: per-edge scores
        LeakyReLU(a_s . h_src + a_d . h_dst), a softmax over each destination's incoming edges
        (the max by scatter_reduce amax, the sums by index_add), messages summed by index_add."""

        def __init__(self, i, o, heads, src, dst, n, concat=True):
            super().__init__()
            self.h, self.o, self.n, self.concat = heads, o, n, concat
            self.lin = nn.Linear(i, heads * o, bias=False)
            self.a_s = nn.Parameter(torch.randn(1, heads, o) * 0.3)
            self.a_d = nn.Parameter(torch.randn(1, heads, o) * 0.3)
            self.bias = nn.Parameter(torch.zeros(heads * o if concat else o))
            self.register_buffer("src", src)
            self.register_buffer("dst", dst)

        def forward(self, x):
            h = self.lin(x).view(-1, self.h, self.o)
            e = F.leaky_relu((h * self.a_s).sum(-1)[self.src]
                             + (h * self.a_d).sum(-1)[self.dst], 0.2)          # E H
            idx = self.dst[:, None].expand(-1, self.h)
            mx = torch.full((self.n, self.h), -1e9).scatter_reduce(0, idx, e, "amax")
            w = torch.exp(e - mx[self.dst])
            den = torch.zeros(self.n, self.h).index_add(0, self.dst, w)
            alpha = w / den[self.dst]
            out = torch.zeros(self.n, self.h, self.o).index_add(
                0, self.dst, alpha[..., None] * h[self.src])
            out = out.flatten(1) if self.concat else out.mean(1)
            return out + self.bias

    class GATMini(nn.Module):
        """A random graph of 200 nodes with self loops (~8 edges a node), 8-head GAT with ELU,
        a 1-head output layer averaged, log-softmax over 7 classes (Cora-like)."""

        def __init__(self, n=200, feats=128, hid=16, classes=7):
            super().__init__()
            g = torch.Generator().manual_seed(41)
            src = torch.randint(0, n, (n * 7,), generator=g)
            dst = torch.randint(0, n, (n * 7,), generator=g)
            loops = torch.arange(n)
            src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
            self.l1 = GATLayer(feats, hid, 8, src, dst, n)
            self.l2 = GATLayer(8 * hid, classes, 1, src, dst, n, concat=False)

        def forward(self, x):
            return F.log_softmax(self.l2(F.elu(self.l1(x))), -1)

    # -- BiT ResNet with weight standardization and FiLM -----------------------------------
    class StdConv(nn.Conv2d):
        """A conv whose weight is standardized per output channel at every call."""

        def forward(self, x):
            w = self.weight
            m = w.mean((1, 2, 3), keepdim=True)
            v = w.var((1, 2, 3), keepdim=True, unbiased=False)
            return F.conv2d(x, (w - m) / torch.sqrt(v + 1e-10), self.bias, self.stride,
                            self.padding, self.dilation, self.groups)

    class FiLMBlock(nn.Module):
        """Pre-activation bottleneck (GroupNorm-ReLU-StdConv); the middle activation scaled
        and shifted per channel by (1 + gamma, beta) from the class embedding."""

        def __init__(self, i, o, s, cond):
            super().__init__()
            m = o // 4
            self.g1, self.g2, self.g3 = nn.GroupNorm(8, i), nn.GroupNorm(8, m), nn.GroupNorm(8, m)
            self.c1, self.c2 = StdConv(i, m, 1, bias=False), StdConv(m, m, 3, s, 1, bias=False)
            self.c3 = StdConv(m, o, 1, bias=False)
            self.film = nn.Linear(cond, 2 * m)
            self.short = StdConv(i, o, 1, s, bias=False) if s > 1 or i != o else None

        def forward(self, x, c):
            h = F.relu(self.g1(x))
            short = self.short(h) if self.short is not None else x
            y = self.c1(h)
            gamma, beta = self.film(c)[:, :, None, None].chunk(2, 1)
            y = self.c2(F.relu(self.g2(y) * (1 + gamma) + beta))
            return self.c3(F.relu(self.g3(y))) + short

    class FiLMBiT(nn.Module):
        def __init__(self, classes=100, cond=32):
            super().__init__()
            self.emb = nn.Embedding(10, cond)
            self.stem = StdConv(3, 32, 7, 2, 3, bias=False)
            self.blocks = nn.ModuleList([FiLMBlock(32, 64, 1, cond), FiLMBlock(64, 128, 2, cond),
                                         FiLMBlock(128, 128, 1, cond),
                                         FiLMBlock(128, 256, 2, cond)])
            self.norm, self.fc = nn.GroupNorm(32, 256), nn.Linear(256, classes)

        def forward(self, x, label):
            c = self.emb(label)
            x = F.max_pool2d(F.pad(self.stem(x), (1, 1, 1, 1)), 3, 2)
            for blk in self.blocks:
                x = blk(x, c)
            return self.fc(F.relu(self.norm(x)).mean((2, 3)))

    def film_inputs():
        g = torch.Generator().manual_seed(42)
        return {"x": torch.randn(1, 3, 128, 128, generator=g),
                "label": torch.tensor([3])}

    # -- TabTransformer --------------------------------------------------------------------
    class TabTransformer(nn.Module):
        """Eight categorical columns (one shared table with per-column offsets, plus a
        learned column embedding), a transformer over the 8 column tokens, the continuous
        features layer-normed, concatenated, an MLP with Mish."""

        def __init__(self, cards=(3, 7, 12, 5, 30, 4, 9, 16), conts=6, d=32, depth=2):
            super().__init__()
            offs = torch.tensor([0] + list(cards[:-1])).cumsum(0)
            self.register_buffer("offsets", offs)
            self.emb = nn.Embedding(sum(cards), d)
            self.col = nn.Parameter(torch.randn(len(cards), d) * 0.1)
            self.tx = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True),
                depth, enable_nested_tensor=False)
            self.cnorm = nn.LayerNorm(conts)
            k = len(cards) * d + conts
            self.mlp = nn.Sequential(nn.Linear(k, 128), nn.Mish(), nn.Linear(128, 64),
                                     nn.Mish(), nn.Linear(64, 1))

        def forward(self, cat, cont):
            tok = self.tx(self.emb(cat + self.offsets) + self.col)
            return self.mlp(torch.cat([tok.flatten(1), self.cnorm(cont)], 1))

    def tab_inputs():
        g = torch.Generator().manual_seed(43)
        cards = torch.tensor([3, 7, 12, 5, 30, 4, 9, 16])
        cat = (torch.rand(16, 8, generator=g) * cards).long()
        return {"cat": cat, "cont": torch.randn(16, 6, generator=g)}

    # -- Log-mel CNN -----------------------------------------------------------------------
    class LogMelCNN(nn.Module):
        """A 1 s, 16 kHz waveform: reflect padding, the STFT as one strided conv1d with
        Hann-windowed cosine and sine kernels (n_fft 400, hop 160), power, a triangular mel
        filterbank (64 bands) as a matmul, log1p, per-band normalization, then a small 2-D
        CNN."""

        def __init__(self, n_fft=400, hop=160, mels=64, sr=16000, classes=35):
            super().__init__()
            self.n_fft, self.hop = n_fft, hop
            bins = n_fft // 2 + 1
            t = torch.arange(n_fft).float()
            f = torch.arange(bins).float()
            win = torch.hann_window(n_fft, periodic=True)
            ang = 2 * math.pi * f[:, None] * t[None] / n_fft
            kern = torch.cat([torch.cos(ang) * win, -torch.sin(ang) * win])[:, None]
            self.register_buffer("kern", kern)

            def hz_to_mel(h):
                return 2595 * math.log10(1 + h / 700)
            mpts = torch.linspace(hz_to_mel(0), hz_to_mel(sr / 2), mels + 2)
            hz = 700 * (10 ** (mpts / 2595) - 1)
            fb = f * sr / n_fft
            lo, ce, hi = hz[:-2, None], hz[1:-1, None], hz[2:, None]
            fbank = torch.clamp(torch.minimum((fb - lo) / (ce - lo), (hi - fb) / (hi - ce)), 0)
            self.register_buffer("fbank", fbank.t().contiguous())           # bins x mels
            self.cnn = nn.Sequential(cbr(1, 32, 3, 2), cbr(32, 64, 3, 2), cbr(64, 64, 3),
                                     cbr(64, 128, 3, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                     nn.Linear(128, classes))

        def forward(self, wav):
            x = F.pad(wav[:, None], (self.n_fft // 2, self.n_fft // 2), mode="reflect")
            spec = F.conv1d(x, self.kern, stride=self.hop)                   # B 2F T
            re, im = spec.chunk(2, 1)
            mel = torch.log1p((re * re + im * im).transpose(1, 2) @ self.fbank)   # B T M
            mel = (mel - mel.mean(1, keepdim=True)) / (mel.std(1, keepdim=True) + 1e-5)
            return self.cnn(mel.transpose(1, 2)[:, None])

    # -- ConvNeXt-V2 (GRN) -----------------------------------------------------------------
    class GRN(nn.Module):
        """Global response normalization on channels-last activations: the L2 norm over the
        spatial axes, divided by its channel mean, scales the input."""

        def __init__(self, c):
            super().__init__()
            self.gamma = nn.Parameter(torch.randn(1, 1, 1, c) * 0.1)
            self.beta = nn.Parameter(torch.randn(1, 1, 1, c) * 0.1)

        def forward(self, x):
            gx = torch.linalg.vector_norm(x, 2, dim=(1, 2), keepdim=True)
            nx = gx / (gx.mean(-1, keepdim=True) + 1e-6)
            return self.gamma * (x * nx) + self.beta + x

    class CNV2Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.dw = nn.Conv2d(c, c, 7, 1, 3, groups=c)
            self.norm = nn.LayerNorm(c, eps=1e-6)
            self.pw1, self.pw2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
            self.grn = GRN(4 * c)

        def forward(self, x):
            y = self.norm(self.dw(x).permute(0, 2, 3, 1))
            y = self.pw2(self.grn(F.gelu(self.pw1(y))))
            return x + y.permute(0, 3, 1, 2)

    class LayerNorm2d(nn.LayerNorm):
        """LayerNorm over the channels of an NCHW tensor (by permuting)."""

        def forward(self, x):
            return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    def convnextv2_mini(dims=(32, 64, 128), depths=(2, 2, 2)):
        layers = [nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0], eps=1e-6)]
        for i, (c, n) in enumerate(zip(dims, depths, strict=True)):
            if i:
                layers += [LayerNorm2d(dims[i - 1], eps=1e-6), nn.Conv2d(dims[i - 1], c, 2, 2)]
            layers += [CNV2Block(c) for _ in range(n)]
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.LayerNorm(dims[-1]), nn.Linear(dims[-1], 100))

    # -- NAFNet ----------------------------------------------------------------------------
    class ChanNorm(nn.Module):
        """NAFNet's LayerNorm2d: mean and variance over the channel axis, written out."""

        def __init__(self, c):
            super().__init__()
            self.w, self.b = nn.Parameter(torch.ones(1, c, 1, 1)), nn.Parameter(
                torch.zeros(1, c, 1, 1))

        def forward(self, x):
            mu = x.mean(1, keepdim=True)
            var = (x - mu).pow(2).mean(1, keepdim=True)
            return (x - mu) / torch.sqrt(var + 1e-6) * self.w + self.b

    class NAFBlock(nn.Module):
        """Norm, 1x1 expand, depthwise 3x3, SimpleGate (the halves multiplied), simplified
        channel attention (pooled 1x1 conv), 1x1; a second norm-1x1-gate-1x1 branch; both
        residuals scaled by learned per-channel betas."""

        def __init__(self, c):
            super().__init__()
            self.n1, self.n2 = ChanNorm(c), ChanNorm(c)
            self.c1, self.dw = nn.Conv2d(c, 2 * c, 1), nn.Conv2d(2 * c, 2 * c, 3, 1, 1,
                                                                  groups=2 * c)
            self.sca = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, c, 1))
            self.c3 = nn.Conv2d(c, c, 1)
            self.f1, self.f2 = nn.Conv2d(c, 2 * c, 1), nn.Conv2d(c, c, 1)
            self.b1 = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
            self.b2 = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)

        def forward(self, x):
            a, b = self.dw(self.c1(self.n1(x))).chunk(2, 1)
            y = a * b
            y = self.c3(y * self.sca(y))
            x = x + y * self.b1
            a, b = self.f1(self.n2(x)).chunk(2, 1)
            return x + self.f2(a * b) * self.b2

    def icnr_(w, r=2):
        """ICNR: each sub-pixel output group starts as a copy, so PixelShuffle starts as
        nearest upsampling (no checkerboard)."""
        o, i, kh, kw = w.shape
        base = torch.empty(o // (r * r), i, kh, kw)
        nn.init.kaiming_normal_(base)
        with torch.no_grad():
            w.copy_(base.repeat_interleave(r * r, 0))

    class NAFNetMini(nn.Module):
        """A U-shaped denoiser: 3x3 intro, encoders downsampled by PixelUnshuffle(2) + 1x1,
        a middle block, decoders upsampled by 1x1 + PixelShuffle(2) (ICNR) with skip
        additions, 3x3 out plus the input."""

        def __init__(self, c=16, levels=2):
            super().__init__()
            self.intro, self.outro = nn.Conv2d(3, c, 3, 1, 1), nn.Conv2d(c, 3, 3, 1, 1)
            self.enc, self.down, self.up, self.dec = (nn.ModuleList() for _ in range(4))
            for _ in range(levels):
                self.enc.append(NAFBlock(c))
                self.down.append(nn.Sequential(nn.PixelUnshuffle(2), nn.Conv2d(4 * c, 2 * c, 1)))
                c *= 2
            self.mid = nn.Sequential(NAFBlock(c), NAFBlock(c))
            for _ in range(levels):
                conv = nn.Conv2d(c, 2 * c, 1, bias=False)
                icnr_(conv.weight)
                self.up.append(nn.Sequential(conv, nn.PixelShuffle(2)))
                c //= 2
                self.dec.append(NAFBlock(c))

        def forward(self, inp):
            x, skips = self.intro(inp), []
            for enc, down in zip(self.enc, self.down, strict=True):
                x = enc(x)
                skips.append(x)
                x = down(x)
            x = self.mid(x)
            for up, dec, s in zip(self.up, self.dec, reversed(skips), strict=True):
                x = dec(up(x) + s)
            return self.outro(x) + inp

    # -- gMLP ------------------------------------------------------------------------------
    class SpatialGating(nn.Module):
        """gMLP's spatial gating unit: half the channels normalized and mixed across tokens by
        a linear layer over the sequence axis (near-identity start), gating the other half."""

        def __init__(self, d, n):
            super().__init__()
            self.norm = nn.LayerNorm(d // 2)
            self.proj = nn.Linear(n, n)
            nn.init.normal_(self.proj.weight, std=0.01)
            nn.init.ones_(self.proj.bias)

        def forward(self, x):
            u, v = x.chunk(2, -1)
            return u * self.proj(self.norm(v).transpose(1, 2)).transpose(1, 2)

    class GMLPBlock(nn.Module):
        def __init__(self, d, n, mult=4):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.inp, self.out = nn.Linear(d, mult * d), nn.Linear(mult * d // 2, d)
            self.sgu = SpatialGating(mult * d, n)

        def forward(self, x):
            return x + self.out(self.sgu(F.gelu(self.inp(self.norm(x)))))

    class GMLPMini(nn.Module):
        """gMLP for text: token embeddings, 4 blocks, a temperature-scaled logsumexp pooling
        over tokens (a smooth max), a classifier."""

        def __init__(self, vocab=2000, n=128, d=64, depth=4, classes=5):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.Sequential(*[GMLPBlock(d, n) for _ in range(depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, idx):
            x = self.norm(self.blocks(self.emb(idx)))
            pooled = 0.25 * torch.logsumexp(4 * x, 1) - 0.25 * math.log(x.shape[1])
            return self.head(pooled)

    # -- NeRF volume rendering -------------------------------------------------------------
    class NeRFRender(nn.Module):
        """Rays (origin, direction) sampled at 32 depths, positions and directions encoded by
        sin/cos frequencies, an MLP (skip at the middle) to density and view-dependent colour,
        alpha compositing: alpha = 1 - exp(-sigma delta), transmittance by an exclusive
        cumprod, colour, depth and opacity per ray."""

        def __init__(self, samples=32, pf=6, df=3, w=128, near=2.0, far=6.0):
            super().__init__()
            self.register_buffer("t", torch.linspace(near, far, samples))
            self.register_buffer("fp", 2.0 ** torch.arange(pf) * math.pi)
            self.register_buffer("fd", 2.0 ** torch.arange(df) * math.pi)
            pin, din = 3 + 6 * pf, 3 + 6 * df
            self.l1 = nn.Sequential(nn.Linear(pin, w), nn.ReLU(), nn.Linear(w, w), nn.ReLU())
            self.l2 = nn.Sequential(nn.Linear(w + pin, w), nn.ReLU(), nn.Linear(w, w + 1))
            self.rgb = nn.Sequential(nn.Linear(w + din, w // 2), nn.ReLU(), nn.Linear(w // 2, 3),
                                     nn.Sigmoid())

        @staticmethod
        def encode(p, freqs):
            a = p[..., None] * freqs                                       # ... 3 F
            return torch.cat([p, torch.sin(a).flatten(-2), torch.cos(a).flatten(-2)], -1)

        def forward(self, rays_o, rays_d):
            pts = rays_o[:, None] + rays_d[:, None] * self.t[:, None]      # R S 3
            pe = self.encode(pts, self.fp)
            h = self.l2(torch.cat([self.l1(pe), pe], -1))
            sigma, feat = F.relu(h[..., 0]), h[..., 1:]
            dirs = rays_d / rays_d.norm(dim=-1, keepdim=True)
            de = self.encode(dirs, self.fd)[:, None].expand(-1, pts.shape[1], -1)
            rgb = self.rgb(torch.cat([feat, de], -1))
            delta = torch.cat([self.t[1:] - self.t[:-1], torch.full((1,), 1e10)])
            delta = delta * rays_d.norm(dim=-1, keepdim=True)
            alpha = 1 - torch.exp(-sigma * delta)
            trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]),
                                             1 - alpha + 1e-10], -1), -1)[:, :-1]
            wts = alpha * trans
            color = (wts[..., None] * rgb).sum(1)
            depth = (wts * self.t).sum(1, keepdim=True)
            return torch.cat([color, depth, wts.sum(1, keepdim=True)], -1)

    def ray_inputs():
        g = torch.Generator().manual_seed(44)
        return {"rays_o": torch.randn(256, 3, generator=g) * 0.1,
                "rays_d": torch.randn(256, 3, generator=g) * 0.3 + torch.tensor([0, 0, 1.0])}

    image = (1, 3, 128, 128)
    return {
        "rwkv_mini": (RWKVMini, tokens(512, 64, 45)),
        "bimamba_mini": (BiMambaMini, (1, 3, 64, 64)),
        "llama_alibi": (LlamaAlibi, tokens(1000, 64, 46)),
        "deform_conv_net": (deform_net, (1, 3, 96, 96)),
        # a dict: the graph's node count is fixed by its edge list (not a batch axis)
        "gat_mini": (GATMini, lambda: {"x": torch.randn(200, 128)}),
        "film_bit": (FiLMBiT, film_inputs),
        "tab_transformer": (TabTransformer, tab_inputs),
        "logmel_cnn": (LogMelCNN, lambda: {"wav": torch.randn(1, 16000) * 0.1}),
        "convnextv2_mini": (convnextv2_mini, image),
        "nafnet_mini": (NAFNetMini, (1, 3, 64, 64)),
        "gmlp_mini": (GMLPMini, tokens(2000, 128, 47)),
        "nerf_render": (NeRFRender, ray_inputs),
    }
