"""The twenty-fourth round of ``bench_new_user_models``: a BigGAN generator (hierarchical latents
split by ``chunk``, a shared class embedding, class-conditional BatchNorm on batch statistics whose
gains and biases come from linear layers, nearest upsampling, SAGAN self-attention with max-pooled keys and
values, spectral-normalized convs), a LambdaResNet block (content lambdas from a softmax over
positions, positional lambdas by a ``Conv3d`` with a ``(1, r, r)`` kernel), a MobileNetV2 with
coordinate attention (``AdaptiveAvgPool2d((None, 1))`` and ``((1, None))`` pools, concatenated,
split back by ``torch.split``, hard-swish) and ECA gates (a ``Conv1d`` across the pooled
channels), ResMLP (per-channel affine "norms", cross-patch linear layers over transposed tokens,
LayerScale), Fastformer (additive attention: global query and key vectors by softmax-weighted
sums), lightweight convolution (per-position kernels predicted by a linear layer, softmax over
the kernel width, applied through ``Tensor.unfold`` of a left-padded sequence), N-HiTS (multi-rate
``MaxPool1d`` input pooling, forecast coefficients upsampled by 1-D linear ``interpolate``,
doubly residual stacks), a Graph U-Net (gPool keeping the ``topk`` scored nodes and the
sub-adjacency by ``index_select`` on both axes, gUnpool by ``index_copy`` into zeros), NODE
(neural oblivious decision ensembles: feature choice by sparsemax over features, sparsemoid
thresholds, leaf responses by ``torch.prod`` of bin codes over the depth), a Rainbow DQN head
(noisy linear layers with factorized noise given as inputs, dueling streams, a C51 softmax over
atoms, expected values and the greedy ``argmax`` action), an attentive neural process
(deterministic cross-attention by ``nn.MultiheadAttention``, a latent path reparameterized with
given noise, the targets' Gaussian log-likelihood through ``torch.distributions.Normal``) and a
Glow flow (actnorm, an invertible 1x1 conv whose weight is built each call from an LU
factorization, affine couplings with a ``sigmoid(s + 2)`` scale, squeezes, the log-determinant).
Kept apart so the main script stays readable."""

from __future__ import annotations

import math


def twentyfourth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.nn.utils.parametrizations import spectral_norm

    # -- BigGAN ---------------------------------------------------------------------------
    class CondBN(nn.Module):
        """BatchNorm without affine; the gain (1 + g) and bias come from the conditioning
        vector (shared class embedding concatenated with a latent chunk). Without running
        statistics, as BigGAN samples with batch statistics when no standing statistics were
        accumulated: eval mode normalizes by the batch's mean and variance."""

        def __init__(self, c, cond):
            super().__init__()
            self.bn = nn.BatchNorm2d(c, affine=False, track_running_stats=False)
            self.gain = spectral_norm(nn.Linear(cond, c, bias=False))
            self.bias = spectral_norm(nn.Linear(cond, c, bias=False))

        def forward(self, x, y):
            g = 1 + self.gain(y)
            return self.bn(x) * g[:, :, None, None] + self.bias(y)[:, :, None, None]

    class GBlock(nn.Module):
        def __init__(self, cin, cout, cond):
            super().__init__()
            self.bn1, self.bn2 = CondBN(cin, cond), CondBN(cout, cond)
            self.c1 = spectral_norm(nn.Conv2d(cin, cout, 3, 1, 1))
            self.c2 = spectral_norm(nn.Conv2d(cout, cout, 3, 1, 1))
            self.sc = spectral_norm(nn.Conv2d(cin, cout, 1))

        def forward(self, x, y):
            h = F.interpolate(F.relu(self.bn1(x, y)), scale_factor=2, mode="nearest")
            h = self.c2(F.relu(self.bn2(self.c1(h), y)))
            return h + self.sc(F.interpolate(x, scale_factor=2, mode="nearest"))

    class SelfAttn(nn.Module):
        """SAGAN attention: theta over every pixel, phi and g max-pooled 2x2, a learned gate."""

        def __init__(self, c):
            super().__init__()
            self.theta = spectral_norm(nn.Conv2d(c, c // 8, 1, bias=False))
            self.phi = spectral_norm(nn.Conv2d(c, c // 8, 1, bias=False))
            self.g = spectral_norm(nn.Conv2d(c, c // 2, 1, bias=False))
            self.o = spectral_norm(nn.Conv2d(c // 2, c, 1, bias=False))
            self.gamma = nn.Parameter(torch.tensor(0.5))

        def forward(self, x):
            b, c, h, w = x.shape
            theta = self.theta(x).view(b, c // 8, h * w)
            phi = F.max_pool2d(self.phi(x), 2).view(b, c // 8, h * w // 4)
            g = F.max_pool2d(self.g(x), 2).view(b, c // 2, h * w // 4)
            beta = torch.softmax(theta.transpose(1, 2) @ phi, -1)      # (b, hw, hw/4)
            o = self.o((g @ beta.transpose(1, 2)).view(b, c // 2, h, w))
            return x + self.gamma * o

    class BigGAN(nn.Module):
        def __init__(self, z=80, classes=10, shared=32, c=32, blocks=4):
            super().__init__()
            self.blocks_n = blocks
            self.chunk = z // (blocks + 1)
            cond = shared + self.chunk
            self.c = c
            self.shared = nn.Embedding(classes, shared)
            self.linear = spectral_norm(nn.Linear(self.chunk, 4 * 4 * 4 * c))
            chans = [4 * c, 4 * c, 2 * c, 2 * c, c][:blocks + 1]
            self.blocks = nn.ModuleList([GBlock(chans[i], chans[i + 1], cond)
                                         for i in range(blocks)])
            self.attn = SelfAttn(chans[2])
            self.out = nn.Sequential(nn.BatchNorm2d(chans[-1], track_running_stats=False),
                                     nn.ReLU(),
                                     spectral_norm(nn.Conv2d(chans[-1], 3, 3, 1, 1)), nn.Tanh())

        def forward(self, z, label):
            zs = z.split(self.chunk, 1)
            emb = self.shared(label)
            h = self.linear(zs[0]).view(z.shape[0], 4 * self.c, 4, 4)
            for i, blk in enumerate(self.blocks):
                h = blk(h, torch.cat([emb, zs[i + 1]], 1))
                if i == 1:
                    h = self.attn(h)
            return self.out(h)

    # -- LambdaResNet ---------------------------------------------------------------------
    class LambdaLayer(nn.Module):
        """Lambda layer (Bello 2021): keys softmax-normalized over positions give a content
        lambda (k x v) shared by all queries; a Conv3d over the (k, h, w) volume of values
        gives each position's local positional lambda."""

        def __init__(self, dim, dout, k=16, u=1, heads=4, r=7):
            super().__init__()
            self.heads, self.k, self.u, self.v = heads, k, u, dout // heads
            self.q = nn.Conv2d(dim, k * heads, 1, bias=False)
            self.kk = nn.Conv2d(dim, k * u, 1, bias=False)
            self.vv = nn.Conv2d(dim, self.v * u, 1, bias=False)
            self.nq, self.nv = nn.BatchNorm2d(k * heads), nn.BatchNorm2d(self.v * u)
            self.pos = nn.Conv3d(u, k, (1, r, r), padding=(0, r // 2, r // 2))

        def forward(self, x):
            b, _, hh, ww = x.shape
            n = hh * ww
            q = self.nq(self.q(x)).view(b, self.heads, self.k, n)
            keys = self.kk(x).view(b, self.u, self.k, n).softmax(-1)
            v = self.nv(self.vv(x)).view(b, self.u, self.v, n)
            lam_c = torch.einsum("bukm,buvm->bkv", keys, v)
            y_c = torch.einsum("bhkn,bkv->bhvn", q, lam_c)
            lam_p = self.pos(v.view(b, self.u, self.v, hh, ww)).view(b, self.k, self.v, n)
            y_p = torch.einsum("bhkn,bkvn->bhvn", q, lam_p)
            return (y_c + y_p).reshape(b, self.heads * self.v, hh, ww)

    class LambdaBottleneck(nn.Module):
        def __init__(self, cin, mid, stride=1):
            super().__init__()
            cout = 4 * mid
            self.body = nn.Sequential(
                nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                LambdaLayer(mid, mid),
                nn.AvgPool2d(3, 2, 1) if stride == 2 else nn.Identity(),
                nn.BatchNorm2d(mid), nn.ReLU(),
                nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.short = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            return F.relu(self.body(x) + self.short(x))

    class LambdaResNet(nn.Module):
        def __init__(self, c=16, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 2 * c, 3, 2, 1, bias=False),
                                      nn.BatchNorm2d(2 * c), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            self.layers = nn.Sequential(LambdaBottleneck(2 * c, c),
                                        LambdaBottleneck(4 * c, c),
                                        LambdaBottleneck(4 * c, 2 * c, stride=2))
            self.fc = nn.Linear(8 * c, classes)

        def forward(self, x):
            return self.fc(self.layers(self.stem(x)).mean((2, 3)))

    # -- MobileNetV2 with coordinate attention and ECA -----------------------------------
    class HSwish(nn.Module):
        def forward(self, x):
            return x * F.relu6(x + 3) / 6

    class CoordAtt(nn.Module):
        """Pool along width and along height separately, a shared 1x1 conv over both strips,
        split back into per-row and per-column sigmoid gates."""

        def __init__(self, c, r=8):
            super().__init__()
            mid = max(8, c // r)
            self.pool_h, self.pool_w = nn.AdaptiveAvgPool2d((None, 1)), nn.AdaptiveAvgPool2d((1, None))
            self.conv = nn.Sequential(nn.Conv2d(c, mid, 1), nn.BatchNorm2d(mid), HSwish())
            self.ch, self.cw = nn.Conv2d(mid, c, 1), nn.Conv2d(mid, c, 1)

        def forward(self, x):
            _, _, h, w = x.shape
            xh = self.pool_h(x)                                    # (b, c, h, 1)
            xw = self.pool_w(x).permute(0, 1, 3, 2)                # (b, c, w, 1)
            y = self.conv(torch.cat([xh, xw], 2))
            yh, yw = torch.split(y, [h, w], 2)
            return x * self.ch(yh).sigmoid() * self.cw(yw.permute(0, 1, 3, 2)).sigmoid()

    class ECA(nn.Module):
        """Efficient channel attention: a 1-D conv over the pooled channel descriptor."""

        def __init__(self, c, gamma=2, b=1):
            super().__init__()
            t = int(abs((math.log2(c) + b) / gamma))
            k = t if t % 2 else t + 1
            self.conv = nn.Conv1d(1, 1, k, padding=k // 2, bias=False)

        def forward(self, x):
            y = x.mean((2, 3), keepdim=True)                       # (b, c, 1, 1)
            y = self.conv(y.squeeze(-1).transpose(-1, -2)).transpose(-1, -2).unsqueeze(-1)
            return x * y.sigmoid()

    class InvRes(nn.Module):
        def __init__(self, cin, cout, stride, expand, att):
            super().__init__()
            mid = cin * expand
            self.use_res = stride == 1 and cin == cout
            self.body = nn.Sequential(
                nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
                nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid),
                nn.ReLU6(), CoordAtt(mid) if att == "ca" else ECA(mid),
                nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            return x + self.body(x) if self.use_res else self.body(x)

    class CoordAttMobileNet(nn.Module):
        def __init__(self, width=16, classes=10):
            super().__init__()
            w = width
            cfg = [(w, w, 1, 1, "eca"), (w, 2 * w, 2, 4, "ca"), (2 * w, 2 * w, 1, 4, "eca"),
                   (2 * w, 3 * w, 2, 4, "ca"), (3 * w, 3 * w, 1, 4, "ca"),
                   (3 * w, 4 * w, 2, 4, "eca")]
            self.stem = nn.Sequential(nn.Conv2d(3, w, 3, 2, 1, bias=False), nn.BatchNorm2d(w),
                                      nn.ReLU6())
            self.blocks = nn.Sequential(*[InvRes(*c) for c in cfg])
            self.head = nn.Sequential(nn.Conv2d(4 * w, 16 * w, 1, bias=False),
                                      nn.BatchNorm2d(16 * w), HSwish(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                      nn.Linear(16 * w, classes))

        def forward(self, x):
            return self.head(self.blocks(self.stem(x)))

    # -- ResMLP ---------------------------------------------------------------------------
    class Affine(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.alpha = nn.Parameter(torch.ones(d))
            self.beta = nn.Parameter(torch.zeros(d))

        def forward(self, x):
            return self.alpha * x + self.beta

    class ResMLPBlock(nn.Module):
        """Cross-patch linear over the token axis (transposed), then a per-token MLP, each
        between Affine "norms" and scaled by LayerScale."""

        def __init__(self, d, patches, init=0.1):
            super().__init__()
            self.aff1, self.aff2 = Affine(d), Affine(d)
            self.tok = nn.Linear(patches, patches)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.ls1 = nn.Parameter(init * torch.ones(d))
            self.ls2 = nn.Parameter(init * torch.ones(d))

        def forward(self, x):                                     # (b, n, d)
            x = x + self.ls1 * self.tok(self.aff1(x).transpose(1, 2)).transpose(1, 2)
            return x + self.ls2 * self.mlp(self.aff2(x))

    class ResMLP(nn.Module):
        def __init__(self, img=64, patch=8, d=96, depth=6, classes=10):
            super().__init__()
            self.embed = nn.Conv2d(3, d, patch, patch)
            n = (img // patch) ** 2
            self.blocks = nn.Sequential(*[ResMLPBlock(d, n) for _ in range(depth)])
            self.aff = Affine(d)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2)
            return self.head(self.aff(self.blocks(x)).mean(1))

    # -- Fastformer -----------------------------------------------------------------------
    class AdditiveAttention(nn.Module):
        """Fastformer: a global query is the softmax-weighted sum of the queries, multiplied
        into the keys; a global key the same way; multiplied into the values, projected and
        added to the queries. Padding tokens are masked out of both softmaxes."""

        def __init__(self, d, heads):
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.qkv = nn.Linear(d, 3 * d)
            self.wq = nn.Linear(self.dh, 1, bias=False)
            self.wk = nn.Linear(self.dh, 1, bias=False)
            self.out = nn.Linear(d, d)

        def forward(self, x, mask):                               # (b, n, d), (b, n) bool
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.h, self.dh).unbind(2)
            neg = (~mask)[:, :, None, None] * -1e4
            aq = torch.softmax(self.wq(q) / math.sqrt(self.dh) + neg, 1)   # (b, n, h, 1)
            gq = (aq * q).sum(1, keepdim=True)
            p = gq * k
            ak = torch.softmax(self.wk(p) / math.sqrt(self.dh) + neg, 1)
            gk = (ak * p).sum(1, keepdim=True)
            u = (gk * v).reshape(b, n, d)
            return self.out(u) + q.reshape(b, n, d)

    class Fastformer(nn.Module):
        def __init__(self, vocab=5000, d=128, heads=8, layers=2, maxlen=256, classes=5):
            super().__init__()
            self.emb = nn.Embedding(vocab, d, padding_idx=0)
            self.pos = nn.Embedding(maxlen, d)
            self.layers = nn.ModuleList()
            for _ in range(layers):
                self.layers.append(nn.ModuleDict({
                    "att": AdditiveAttention(d, heads), "ln1": nn.LayerNorm(d),
                    "ffn": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)),
                    "ln2": nn.LayerNorm(d)}))
            self.pool = nn.Linear(d, 1)
            self.cls = nn.Linear(d, classes)

        def forward(self, idx):                                   # (b, n) with 0 padding
            mask = idx != 0
            x = self.emb(idx) + self.pos(torch.arange(idx.shape[1]))[None]
            for layer in self.layers:
                x = layer["ln1"](x + layer["att"](x, mask))
                x = layer["ln2"](x + layer["ffn"](x))
            w = torch.softmax(self.pool(x).squeeze(-1).masked_fill(~mask, -1e4), -1)
            return self.cls((w.unsqueeze(-1) * x).sum(1))

    # -- lightweight convolution ----------------------------------------------------------
    class DynamicConv1d(nn.Module):
        """Wu et al. 2019: each position predicts H kernels of width K from its own input,
        softmax-normalized over the width; each head's channels are convolved causally with
        them (windows by ``unfold`` of the left-padded sequence)."""

        def __init__(self, d, heads=4, k=7):
            super().__init__()
            self.h, self.k = heads, k
            self.glu = nn.Linear(d, 2 * d)
            self.kernel = nn.Linear(d, heads * k)
            self.out = nn.Linear(d, d)

        def forward(self, x):                                     # (b, t, d)
            b, t, d = x.shape
            u = F.glu(self.glu(x), -1)
            w = self.kernel(x).view(b, t, self.h, self.k).softmax(-1)
            win = F.pad(u, (0, 0, self.k - 1, 0)).unfold(1, self.k, 1)   # (b, t, d, k)
            win = win.reshape(b, t, self.h, d // self.h, self.k)
            return self.out(torch.einsum("bthck,bthk->bthc", win, w).reshape(b, t, d))

    class DynConvLM(nn.Module):
        def __init__(self, vocab=4000, d=128, layers=3, k=(3, 7, 15)):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            nn.init.normal_(self.emb.weight, 0, d ** -0.5)       # fairseq's tied-embedding init
            self.blocks = nn.ModuleList([nn.ModuleDict({
                "ln1": nn.LayerNorm(d), "conv": DynamicConv1d(d, k=k[i]),
                "ln2": nn.LayerNorm(d),
                "ffn": nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))})
                for i in range(layers)])
            self.ln = nn.LayerNorm(d)

        def forward(self, idx):
            x = self.emb(idx) * math.sqrt(self.emb.embedding_dim)
            for blk in self.blocks:
                x = x + blk["conv"](blk["ln1"](x))
                x = x + blk["ffn"](blk["ln2"](x))
            return F.log_softmax(self.ln(x) @ self.emb.weight.t(), -1)

    # -- N-HiTS ---------------------------------------------------------------------------
    class NHiTSBlock(nn.Module):
        """Max-pool the input at the block's rate, an MLP, backcast / forecast coefficients
        at a lower rate linearly interpolated up to full length."""

        def __init__(self, back, fore, pool, down, hidden=256):
            super().__init__()
            self.back, self.fore = back, fore
            self.pool = nn.MaxPool1d(pool, pool, ceil_mode=True)
            n_in = math.ceil(back / pool)
            self.nb, self.nf = max(back // down, 1), max(fore // down, 1)
            self.mlp = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden), nn.ReLU(),
                                     nn.Linear(hidden, self.nb + self.nf))

        def forward(self, x):                                     # (b, back)
            theta = self.mlp(self.pool(x.unsqueeze(1)).squeeze(1))
            tb, tf = theta[:, :self.nb], theta[:, self.nb:]
            bc = F.interpolate(tb.unsqueeze(1), size=self.back, mode="linear",
                               align_corners=False).squeeze(1)
            fc = F.interpolate(tf.unsqueeze(1), size=self.fore, mode="linear",
                               align_corners=False).squeeze(1)
            return bc, fc

    class NHiTS(nn.Module):
        def __init__(self, back=192, fore=48, pools=(16, 8, 1), downs=(24, 12, 1),
                     per_stack=1, hidden=256):
            super().__init__()
            self.blocks = nn.ModuleList([NHiTSBlock(back, fore, p, d, hidden)
                                         for p, d in zip(pools, downs, strict=True)
                                         for _ in range(per_stack)])

        def forward(self, x):                                     # (b, back)
            level = x[:, -1:]
            res, fore = x - level, 0
            for blk in self.blocks:
                b, f = blk(res)
                res = res - b
                fore = fore + f
            return fore + level

    # -- Graph U-Net ----------------------------------------------------------------------
    def gcn(adj, x, lin):
        a = adj + torch.eye(adj.shape[0])
        dinv = a.sum(1).rsqrt()
        return lin(dinv[:, None] * (a @ (dinv[:, None] * x)))

    class GraphUNet(nn.Module):
        """Gao & Ji 2019: gPool scores nodes by a projection, keeps the top-k (features gated
        by tanh of the score, adjacency restricted on both axes, augmented by A^2); gUnpool
        puts the nodes back at their indices; skip additions."""

        def __init__(self, fin=32, hidden=64, classes=6, ratios=(0.8, 0.6, 0.5)):
            super().__init__()
            self.ratios = ratios
            self.inp = nn.Linear(fin, hidden)
            self.down = nn.ModuleList([nn.Linear(hidden, hidden) for _ in ratios])
            self.proj = nn.ParameterList([nn.Parameter(torch.randn(hidden) / math.sqrt(hidden))
                                          for _ in ratios])
            self.bottom = nn.Linear(hidden, hidden)
            self.up = nn.ModuleList([nn.Linear(hidden, hidden) for _ in ratios])
            self.out = nn.Linear(2 * hidden, classes)

        def forward(self, x, adj):                                # (n, fin), (n, n)
            h0 = F.relu(gcn(adj, x, self.inp))
            h, a, stack = h0, adj, []
            for lin, p, r in zip(self.down, self.proj, self.ratios, strict=True):
                h = F.relu(gcn(a, h, lin))
                stack.append((h, a))
                score = h @ p / p.norm()
                k = max(2, int(r * h.shape[0]))
                val, idx = torch.topk(score, k)
                h = h.index_select(0, idx) * torch.tanh(val)[:, None]
                a2 = ((a @ a) > 0).float()
                a = a2.index_select(0, idx).index_select(1, idx)
                stack[-1] = stack[-1] + (idx,)
            h = F.relu(gcn(a, h, self.bottom))
            for lin in self.up:
                skip, a, idx = stack.pop()
                h = torch.zeros_like(skip).index_copy(0, idx, h)
                h = F.relu(gcn(a, h, lin)) + skip
            return F.log_softmax(self.out(torch.cat([h, h0], 1)), -1)

    # -- NODE -----------------------------------------------------------------------------
    def sparsemax(z, dim=-1):
        zs = torch.sort(z, dim, descending=True)[0]
        rng = torch.arange(1, z.shape[dim] + 1, dtype=z.dtype)
        shape = [1] * z.dim()
        shape[dim] = -1
        rng = rng.view(shape)
        cs = zs.cumsum(dim)
        support = (1 + rng * zs) > cs
        kz = support.sum(dim, keepdim=True)
        tau = (cs.gather(dim, kz - 1) - 1) / kz.to(z.dtype)
        return torch.clamp(z - tau, min=0)

    class ODST(nn.Module):
        """Oblivious decision trees (Popov 2019): each depth level picks a feature mix by a
        sparsemax over features and a threshold; a sparsemoid soft bin per level; every leaf's
        weight is the product over levels of the matching bin; responses mixed by leaf."""

        def __init__(self, fin, trees=64, depth=5, dim=2):
            super().__init__()
            self.depth = depth
            self.logits = nn.Parameter(torch.randn(fin, trees, depth))
            self.thresh = nn.Parameter(0.1 * torch.randn(trees, depth))
            self.log_temp = nn.Parameter(torch.zeros(trees, depth))
            self.resp = nn.Parameter(torch.randn(trees, dim, 2 ** depth))
            codes = torch.arange(2 ** depth)[:, None].bitwise_right_shift(
                torch.arange(depth)[None]).bitwise_and(1)          # (leaves, depth)
            onehot = torch.stack([codes, 1 - codes], -1).float()  # (leaves, depth, 2)
            self.register_buffer("codes", onehot.permute(1, 0, 2))  # (depth, leaves, 2)

        def forward(self, x):                                     # (b, fin)
            sel = sparsemax(self.logits, 0)
            fv = torch.einsum("bi,ind->bnd", x, sel)
            t = (fv - self.thresh) * torch.exp(-self.log_temp)
            bins = torch.stack([-t, t], -1)
            bins = torch.clamp(0.5 * bins + 0.5, 0, 1)            # sparsemoid, (b, n, d, 2)
            match = torch.einsum("bnds,dcs->bndc", bins, self.codes)
            leaf = torch.prod(match, dim=-2)                      # (b, n, leaves)
            return torch.einsum("bnc,nkc->bnk", leaf, self.resp).flatten(1)

    class NODE(nn.Module):
        def __init__(self, fin=32, trees=64, depth=5, layers=2, dim=2):
            super().__init__()
            self.layers = nn.ModuleList()
            f = fin
            for _ in range(layers):
                self.layers.append(ODST(f, trees, depth, dim))
                f += trees * dim
            self.bn = nn.BatchNorm1d(fin)

        def forward(self, x):
            x = self.bn(x)
            outs = []
            for layer in self.layers:
                h = layer(x)
                outs.append(h)
                x = torch.cat([x, h], 1)
            return torch.cat(outs, 1).view(x.shape[0], -1, 2).mean(1)

    # -- Rainbow DQN ----------------------------------------------------------------------
    class NoisyLinear(nn.Module):
        """Factorized Gaussian noise: W = mu + sigma * f(e_out) f(e_in)^T with
        f(e) = sign(e) sqrt(|e|); the raw noise vectors are inputs so runs are seeded."""

        def __init__(self, i, o, sigma0=0.5):
            super().__init__()
            self.mu_w = nn.Parameter(torch.empty(o, i).uniform_(-1 / math.sqrt(i),
                                                                 1 / math.sqrt(i)))
            self.sig_w = nn.Parameter(torch.full((o, i), sigma0 / math.sqrt(i)))
            self.mu_b = nn.Parameter(torch.empty(o).uniform_(-1 / math.sqrt(i),
                                                             1 / math.sqrt(i)))
            self.sig_b = nn.Parameter(torch.full((o,), sigma0 / math.sqrt(i)))

        def forward(self, x, e_in, e_out):
            fi, fo = e_in.sign() * e_in.abs().sqrt(), e_out.sign() * e_out.abs().sqrt()
            w = self.mu_w + self.sig_w * torch.outer(fo, fi)
            return F.linear(x, w, self.mu_b + self.sig_b * fo)

    class RainbowDQN(nn.Module):
        """Nature-DQN trunk, noisy dueling value / advantage heads over C51 atoms; returns
        the per-action expected values, the greedy action and the atom probabilities in one
        row."""

        def __init__(self, actions=6, atoms=51, vmin=-10.0, vmax=10.0, hidden=256):
            super().__init__()
            self.actions, self.atoms = actions, atoms
            self.trunk = nn.Sequential(nn.Conv2d(4, 32, 8, 4), nn.ReLU(),
                                       nn.Conv2d(32, 64, 4, 2), nn.ReLU(),
                                       nn.Conv2d(64, 64, 3, 1), nn.ReLU(), nn.Flatten())
            feat = 64 * 7 * 7
            self.dims = [(feat, hidden), (hidden, atoms), (feat, hidden),
                         (hidden, actions * atoms)]
            self.v1, self.v2 = NoisyLinear(feat, hidden), NoisyLinear(hidden, atoms)
            self.a1, self.a2 = NoisyLinear(feat, hidden), NoisyLinear(hidden, actions * atoms)
            self.register_buffer("support", torch.linspace(vmin, vmax, atoms))

        def forward(self, obs, noise):                            # (b, 4, 84, 84), (n,)
            es, off = [], 0
            for i, o in self.dims:
                es.append((noise[off:off + i], noise[off + i:off + i + o]))
                off += i + o
            h = self.trunk(obs)
            v = self.v2(F.relu(self.v1(h, *es[0])), *es[1]).view(-1, 1, self.atoms)
            a = self.a2(F.relu(self.a1(h, *es[2])), *es[3]).view(-1, self.actions, self.atoms)
            q = v + a - a.mean(1, keepdim=True)
            p = q.softmax(-1)
            qv = (p * self.support).sum(-1)
            return torch.cat([qv, qv.argmax(-1, keepdim=True).to(qv.dtype), p.flatten(1)], 1)

    # -- attentive neural process ---------------------------------------------------------
    class ANP(nn.Module):
        """Kim et al. 2019: a deterministic path (self-attention over context pairs, then
        target-to-context cross attention on x), a latent path (mean of encoded pairs to a
        Normal, sampled by reparameterization with given noise), a decoder's Normal whose
        mean is returned beside its log-likelihood of the target ys, one row per task."""

        def __init__(self, dx=2, dy=1, d=64, heads=4):
            super().__init__()
            def mlp(i, o):
                return nn.Sequential(nn.Linear(i, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(),
                                     nn.Linear(d, o))
            self.det_enc = mlp(dx + dy, d)
            self.self_att = nn.MultiheadAttention(d, heads, batch_first=True)
            self.xproj = nn.Linear(dx, d)
            self.cross = nn.MultiheadAttention(d, heads, batch_first=True)
            self.lat_enc = mlp(dx + dy, d)
            self.lat_head = nn.Linear(d, 2 * d)
            self.dec = mlp(dx + 2 * d, 2 * dy)

        def forward(self, xc, yc, xt, yt, eps):
            r = self.det_enc(torch.cat([xc, yc], -1))
            r = r + self.self_att(r, r, r, need_weights=False)[0]
            kq = self.xproj(xc), self.xproj(xt)
            r_t = self.cross(kq[1], kq[0], r, need_weights=False)[0]
            s = self.lat_enc(torch.cat([xc, yc], -1)).mean(1)
            mu, raw = self.lat_head(F.relu(s)).chunk(2, -1)
            sigma = 0.1 + 0.9 * torch.sigmoid(raw)
            z = mu + sigma * eps                                  # (b, d)
            z = z.unsqueeze(1).expand(-1, xt.shape[1], -1)
            out_mu, out_raw = self.dec(torch.cat([r_t, z, xt], -1)).chunk(2, -1)
            out_sigma = 0.1 + 0.9 * F.softplus(out_raw)
            ll = torch.distributions.Normal(out_mu, out_sigma).log_prob(yt).sum((1, 2))
            return torch.cat([out_mu.flatten(1), ll.unsqueeze(1)], 1)

    # -- Glow -----------------------------------------------------------------------------
    class ActNorm(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.loc = nn.Parameter(0.1 * torch.randn(1, c, 1, 1))
            self.logs = nn.Parameter(0.1 * torch.randn(1, c, 1, 1))

        def forward(self, x):
            return (x + self.loc) * torch.exp(self.logs), self.logs.sum() * x.shape[2] * x.shape[3]

    class InvConvLU(nn.Module):
        """W = P L (U + diag(sign(s) exp(log|s|))), rebuilt each call; log|det W| = sum log|s|."""

        def __init__(self, c):
            super().__init__()
            w = torch.linalg.qr(torch.randn(c, c))[0]
            p, lower, upper = torch.linalg.lu(w)
            s = torch.diagonal(upper)
            self.register_buffer("p", p)
            self.register_buffer("sign_s", torch.sign(s))
            self.register_buffer("lmask", torch.tril(torch.ones(c, c), -1))
            self.register_buffer("eye", torch.eye(c))
            self.lower = nn.Parameter(lower)
            self.upper = nn.Parameter(torch.triu(upper, 1))
            self.log_s = nn.Parameter(torch.log(s.abs()))

        def forward(self, x):
            lower = self.lower * self.lmask + self.eye
            upper = self.upper * self.lmask.t() + torch.diag(self.sign_s * torch.exp(self.log_s))
            w = self.p @ lower @ upper
            return F.conv2d(x, w[:, :, None, None]), self.log_s.sum() * x.shape[2] * x.shape[3]

    class Coupling(nn.Module):
        def __init__(self, c, hidden):
            super().__init__()
            self.net = nn.Sequential(nn.Conv2d(c // 2, hidden, 3, 1, 1), nn.ReLU(),
                                     nn.Conv2d(hidden, hidden, 1), nn.ReLU(),
                                     nn.Conv2d(hidden, c, 3, 1, 1))

        def forward(self, x):
            xa, xb = x.chunk(2, 1)
            shift, raw = self.net(xa).chunk(2, 1)
            scale = torch.sigmoid(raw + 2.0)
            return torch.cat([xa, (xb + shift) * scale], 1), torch.log(scale).flatten(1).sum(1)

    def squeeze2(x):
        b, c, h, w = x.shape
        x = x.view(b, c, h // 2, 2, w // 2, 2).permute(0, 1, 3, 5, 2, 4)
        return x.reshape(b, 4 * c, h // 2, w // 2)

    class Glow(nn.Module):
        def __init__(self, c=3, levels=2, steps=4, hidden=64):
            super().__init__()
            self.levels = nn.ModuleList()
            for lv in range(levels):
                c = 4 * c
                self.levels.append(nn.ModuleList([nn.ModuleList([ActNorm(c), InvConvLU(c),
                                                                 Coupling(c, hidden)])
                                                  for _ in range(steps)]))
                if lv < levels - 1:
                    c = c // 2

        def forward(self, x):                                     # (b, c, h, w) in [-0.5, 0.5]
            logdet = torch.zeros(x.shape[0])
            zs = []
            for i, steps in enumerate(self.levels):
                x = squeeze2(x)
                for act, inv, cpl in steps:
                    x, ld = act(x)
                    logdet = logdet + ld
                    x, ld = inv(x)
                    logdet = logdet + ld
                    x, ld = cpl(x)
                    logdet = logdet + ld
                if i < len(self.levels) - 1:
                    z, x = x.chunk(2, 1)
                    zs.append(z.flatten(1))
            zs.append(x.flatten(1))
            z = torch.cat(zs, 1)
            prior = -0.5 * (z ** 2 + math.log(2 * math.pi)).sum(1)
            return torch.cat([z, (prior + logdet).unsqueeze(1)], 1)

    # -- inputs ---------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def latents(b=4, z=80, classes=10, seed=241):
        def make():
            g = gen(seed)
            return {"z": torch.randn(b, z, generator=g),
                    "label": torch.randint(0, classes, (b,), generator=g)}
        return make

    def padded_tokens(b=8, n=128, vocab=5000, seed=242):
        def make():
            g = gen(seed)
            idx = torch.randint(1, vocab, (b, n), generator=g)
            lens = torch.randint(n // 3, n + 1, (b, 1), generator=g)
            return {"idx": idx * (torch.arange(n) < lens)}
        return make

    def tokens(shape, vocab, seed):
        def make():
            return {"idx": torch.randint(0, vocab, shape, generator=gen(seed))}
        return make

    def series(b=32, back=192, seed=243):
        def make():
            g = gen(seed)
            t = torch.arange(back, dtype=torch.float32)
            phase = torch.rand(b, 1, generator=g) * 6.28
            return {"x": torch.sin(t / 12 + phase) + 0.02 * t
                    + 0.1 * torch.randn(b, back, generator=g)}
        return make

    def graph(n=400, e=1600, fin=32, seed=244):
        def make():
            g = gen(seed)
            src = torch.randint(0, n, (e,), generator=g)
            dst = torch.randint(0, n, (e,), generator=g)
            adj = torch.zeros(n, n)
            adj[src, dst] = 1.0
            adj = ((adj + adj.t()) > 0).float() * (1 - torch.eye(n))
            return {"x": torch.randn(n, fin, generator=g), "adj": adj}
        return make

    def atari(b=8, actions=6, atoms=51, hidden=256, seed=245):
        def make():
            g = gen(seed)
            feat = 64 * 7 * 7
            n = (feat + hidden) * 2 + hidden + atoms + hidden + actions * atoms
            return {"obs": torch.rand(b, 4, 84, 84, generator=g),
                    "noise": torch.randn(n, generator=g)}
        return make

    def regression(b=16, nc=50, nt=100, dx=2, d=64, seed=246):
        def make():
            g = gen(seed)
            xc, xt = torch.rand(b, nc, dx, generator=g) * 4 - 2, torch.rand(b, nt, dx,
                                                                            generator=g) * 4 - 2
            return {"xc": xc, "yc": torch.sin(xc.sum(-1, keepdim=True)),
                    "xt": xt, "yt": torch.sin(xt.sum(-1, keepdim=True)),
                    "eps": torch.randn(b, d, generator=g)}
        return make

    def images(b=4, size=32, seed=247):
        def make():
            return {"x": torch.rand(b, 3, size, size, generator=gen(seed)) - 0.5}
        return make

    return {
        "biggan_gen": (BigGAN, latents()),
        "lambda_resnet": (LambdaResNet, (2, 3, 64, 64)),
        "coordatt_mobilenet": (CoordAttMobileNet, (4, 3, 96, 96)),
        "resmlp_mini": (ResMLP, (4, 3, 64, 64)),
        "fastformer_cls": (Fastformer, padded_tokens()),
        "dynconv_lm": (DynConvLM, tokens((4, 64), 4000, 248)),
        "nhits_forecast": (NHiTS, series()),
        "graph_unet": (GraphUNet, graph()),
        "node_tabular": (NODE, (256, 32)),
        "rainbow_dqn": (RainbowDQN, atari()),
        "anp_regression": (ANP, regression()),
        "glow_flow": (Glow, images()),
    }
