"""The twenty-third round of ``bench_new_user_models``: SKNet (selective kernel: 3x3 and dilated
3x3 grouped branches fused by a softmax over branches), an SRU language model (one matmul per
layer, then an element-wise recurrence with a highway), AutoInt (multi-head self-attention over
field embeddings with residual projections), a hierarchical attention network for documents
(bidirectional GRUs and masked attention softmax at the word and sentence levels), QuartzNet
(1-D time-channel separable convs whose padding frames are masked out, a CTC log-softmax),
DeepSpeech2 (a 2-D conv front end with clipped ReLU, bidirectional GRUs whose directions are
summed), a PWC-Net step (a cost volume over 2-D displacements by pad-shift-multiply, warping by
``grid_sample`` with the upsampled flow, a densely connected estimator), APPNP (an MLP then
personalized-PageRank propagation over an edge list by ``index_add``), a prototypical few-shot
head (a conv-4 backbone, class prototypes by a one-hot matmul, squared distances), a backprop
Kalman filter (a CNN observation encoder, the filter loop with ``torch.linalg.inv`` and the
innovations' Gaussian log-likelihood by ``torch.linalg.slogdet``), SiamFC tracking (template
features cross-correlated with the search region as the weights of a grouped conv) and a
neural additive model (per-feature ExU networks batched by ``einsum``). Kept apart so the main
script stays readable."""

from __future__ import annotations

import math


def twentythird_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- SKNet ----------------------------------------------------------------------------
    class SKConv(nn.Module):
        """Selective kernel: M grouped 3x3 branches with dilation 1..M, their sum squeezed to a
        vector, one FC per branch giving attention logits, a softmax across branches."""

        def __init__(self, c, branches=2, groups=8, r=4, min_d=16):
            super().__init__()
            self.branches = branches
            self.convs = nn.ModuleList([
                nn.Sequential(nn.Conv2d(c, c, 3, 1, 1 + i, dilation=1 + i, groups=groups,
                                        bias=False), nn.BatchNorm2d(c), nn.ReLU())
                for i in range(branches)])
            d = max(c // r, min_d)
            self.fc = nn.Sequential(nn.Linear(c, d, bias=False), nn.BatchNorm1d(d), nn.ReLU())
            self.fcs = nn.ModuleList([nn.Linear(d, c) for _ in range(branches)])

        def forward(self, x):
            feats = torch.stack([conv(x) for conv in self.convs], 1)     # (b, M, c, h, w)
            z = self.fc(feats.sum(1).mean((2, 3)))
            att = torch.stack([fc(z) for fc in self.fcs], 1).softmax(1)   # (b, M, c)
            return (feats * att[..., None, None]).sum(1)

    class SKUnit(nn.Module):
        def __init__(self, cin, mid, cout, stride=1):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid),
                                      nn.ReLU(), SKConv(mid),
                                      nn.AvgPool2d(2) if stride == 2 else nn.Identity(),
                                      nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.short = nn.Identity() if cin == cout and stride == 1 else nn.Sequential(
                nn.AvgPool2d(stride) if stride > 1 else nn.Identity(),
                nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            return F.relu(self.body(x) + self.short(x))

    class SKNet(nn.Module):
        def __init__(self, c=32, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c),
                                      nn.ReLU())
            self.units = nn.Sequential(SKUnit(c, c, 2 * c), SKUnit(2 * c, c, 2 * c),
                                       SKUnit(2 * c, 2 * c, 4 * c, stride=2),
                                       SKUnit(4 * c, 2 * c, 4 * c))
            self.fc = nn.Linear(4 * c, classes)

        def forward(self, x):
            return self.fc(self.units(self.stem(x)).mean((2, 3)))

    # -- SRU ------------------------------------------------------------------------------
    class SRULayer(nn.Module):
        """Simple recurrent unit: one matmul gives x~, the forget and reset pre-activations;
        c_t = f_t * c_{t-1} + (1 - f_t) * x~_t with vector recurrences v_f, v_r; a highway."""

        def __init__(self, d):
            super().__init__()
            self.w = nn.Linear(d, 3 * d, bias=False)
            self.v = nn.Parameter(0.1 * torch.randn(2, d))
            self.b = nn.Parameter(torch.zeros(2, d))

        def forward(self, x):                                     # (t, b, d)
            u = self.w(x)
            xt, uf, ur = u.chunk(3, -1)
            c = torch.zeros_like(x[0])
            hs = []
            for t in range(x.shape[0]):
                f = torch.sigmoid(uf[t] + self.v[0] * c + self.b[0])
                r = torch.sigmoid(ur[t] + self.v[1] * c + self.b[1])
                c = f * c + (1 - f) * xt[t]
                hs.append(r * torch.tanh(c) + (1 - r) * x[t])
            return torch.stack(hs)

    class SRULM(nn.Module):
        def __init__(self, vocab=2000, d=128, layers=2):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList([SRULayer(d) for _ in range(layers)])
            self.norm = nn.LayerNorm(d)
            self.out = nn.Linear(d, vocab)

        def forward(self, idx):                                   # (b, t)
            h = self.emb(idx).transpose(0, 1)
            for layer in self.layers:
                h = layer(h)
            return F.log_softmax(self.out(self.norm(h.transpose(0, 1))), -1)

    # -- AutoInt --------------------------------------------------------------------------
    class AutoInt(nn.Module):
        """Sparse fields and dense values (scaled embeddings) as one set of field vectors;
        interacting layers of multi-head self-attention with a residual projection and ReLU;
        a logistic output on the flattened result."""

        def __init__(self, fields=12, vocab=1000, dense=6, d=16, heads=2, da=16, layers=3):
            super().__init__()
            self.heads, self.da = heads, da
            self.emb = nn.Embedding(fields * vocab, d)
            self.register_buffer("offsets", torch.arange(fields) * vocab)
            self.dense_emb = nn.Parameter(0.1 * torch.randn(dense, d))
            self.att = nn.ModuleList()
            din = d
            for _ in range(layers):
                self.att.append(nn.ModuleDict({
                    "q": nn.Linear(din, heads * da, bias=False),
                    "k": nn.Linear(din, heads * da, bias=False),
                    "v": nn.Linear(din, heads * da, bias=False),
                    "res": nn.Linear(din, heads * da, bias=False)}))
                din = heads * da
            self.out = nn.Linear((fields + dense) * din, 1)

        def forward(self, sparse, dense):
            e = torch.cat([self.emb(sparse + self.offsets),
                           dense.unsqueeze(-1) * self.dense_emb], 1)   # (b, F, d)
            b, f, _ = e.shape
            for layer in self.att:
                q, k, v = (layer[n](e).view(b, f, self.heads, self.da).transpose(1, 2)
                           for n in ("q", "k", "v"))
                a = torch.softmax(q @ k.transpose(-1, -2), -1) @ v
                e = F.relu(a.transpose(1, 2).reshape(b, f, -1) + layer["res"](e))
            return torch.sigmoid(self.out(e.flatten(1)))

    # -- HAN ------------------------------------------------------------------------------
    class AttPool(nn.Module):
        """u = tanh(W h + b); weights softmax(u . context) over unmasked positions."""

        def __init__(self, d):
            super().__init__()
            self.proj = nn.Linear(d, d)
            self.ctx = nn.Parameter(0.1 * torch.randn(d))

        def forward(self, h, mask):
            score = torch.tanh(self.proj(h)) @ self.ctx
            w = torch.softmax(score.masked_fill(~mask, float("-inf")), -1)
            w = torch.nan_to_num(w)                               # all-padding rows
            return (w.unsqueeze(-1) * h).sum(-2)

    class HAN(nn.Module):
        """Words of each sentence through a BiGRU and attention into sentence vectors; the
        sentences through another BiGRU and attention into the document vector."""

        def __init__(self, vocab=3000, d=64, h=32, classes=5):
            super().__init__()
            self.emb = nn.Embedding(vocab, d, padding_idx=0)
            self.word_rnn = nn.GRU(d, h, batch_first=True, bidirectional=True)
            self.word_att = AttPool(2 * h)
            self.sent_rnn = nn.GRU(2 * h, h, batch_first=True, bidirectional=True)
            self.sent_att = AttPool(2 * h)
            self.cls = nn.Linear(2 * h, classes)

        def forward(self, doc):                                   # (b, sents, words)
            b, s, w = doc.shape
            words = doc.reshape(b * s, w)
            hw = self.word_rnn(self.emb(words))[0]
            sv = self.word_att(hw, words != 0).view(b, s, -1)
            hs = self.sent_rnn(sv)[0]
            dv = self.sent_att(hs, (doc != 0).any(-1))
            return F.log_softmax(self.cls(dv), -1)

    # -- QuartzNet ------------------------------------------------------------------------
    class TCSConv(nn.Module):
        """Time-channel separable conv: depthwise over time, pointwise over channels, BN;
        the input's padding frames are zeroed first so they never leak into valid ones."""

        def __init__(self, cin, cout, k, dilation=1):
            super().__init__()
            self.dw = nn.Conv1d(cin, cin, k, padding=dilation * (k // 2), dilation=dilation,
                                groups=cin, bias=False)
            self.pw = nn.Conv1d(cin, cout, 1, bias=False)
            self.bn = nn.BatchNorm1d(cout)

        def forward(self, x, mask):
            return self.bn(self.pw(self.dw(x * mask)))

    class QuartzBlock(nn.Module):
        def __init__(self, cin, cout, k, repeats=3):
            super().__init__()
            self.convs = nn.ModuleList([TCSConv(cin if i == 0 else cout, cout, k)
                                        for i in range(repeats)])
            self.res = nn.Sequential(nn.Conv1d(cin, cout, 1, bias=False), nn.BatchNorm1d(cout))

        def forward(self, x, mask):
            y = x
            for i, conv in enumerate(self.convs):
                y = conv(y, mask)
                if i == len(self.convs) - 1:
                    y = y + self.res(x * mask)
                y = F.relu(y)
            return y

    class QuartzNet(nn.Module):
        def __init__(self, feats=64, c=64, vocab=29, blocks=(13, 15, 17)):
            super().__init__()
            self.c1 = TCSConv(feats, c, 11)
            chans = [c, c, 2 * c, 2 * c]
            self.blocks = nn.ModuleList([QuartzBlock(chans[i], chans[i + 1], k)
                                         for i, k in enumerate(blocks)])
            self.c2 = TCSConv(chans[len(blocks)], 2 * c, 19, dilation=2)
            self.c3 = nn.Sequential(nn.Conv1d(2 * c, 2 * c, 1), nn.BatchNorm1d(2 * c), nn.ReLU())
            self.head = nn.Conv1d(2 * c, vocab, 1)

        def forward(self, spec, lengths):                         # (b, feats, t), (b,)
            mask = (torch.arange(spec.shape[-1])[None, :] < lengths[:, None]).float()
            mask = mask.unsqueeze(1)
            x = F.relu(self.c1(spec, mask))
            for blk in self.blocks:
                x = blk(x, mask)
            x = self.c3(F.relu(self.c2(x, mask)))
            return F.log_softmax(self.head(x).transpose(1, 2), -1)

    # -- DeepSpeech2 ----------------------------------------------------------------------
    class DeepSpeech2(nn.Module):
        """Two 2-D convs over (frequency, time) with hardtanh(0, 20), the frequency axis
        folded into channels, BiGRU layers whose directions are summed and a sequence-wise
        BN between, a lookahead-free linear CTC head."""

        def __init__(self, freq=80, c=16, hidden=128, layers=2, vocab=29):
            super().__init__()
            self.conv = nn.Sequential(
                nn.Conv2d(1, c, (11, 11), (2, 2), (5, 5), bias=False), nn.BatchNorm2d(c),
                nn.Hardtanh(0, 20),
                nn.Conv2d(c, c, (11, 11), (2, 1), (5, 5), bias=False), nn.BatchNorm2d(c),
                nn.Hardtanh(0, 20))
            fdim = c * (((freq + 1) // 2 + 1) // 2)
            self.hidden = hidden
            self.rnns = nn.ModuleList()
            self.bns = nn.ModuleList()
            for i in range(layers):
                self.bns.append(nn.BatchNorm1d(fdim if i == 0 else hidden))
                self.rnns.append(nn.GRU(fdim if i == 0 else hidden, hidden, batch_first=True,
                                        bidirectional=True))
            self.fc = nn.Linear(hidden, vocab, bias=False)

        def forward(self, spec):                                  # (b, 1, freq, t)
            x = self.conv(spec)
            b, c, f, t = x.shape
            x = x.reshape(b, c * f, t).transpose(1, 2)            # (b, t', feat)
            for bn, rnn in zip(self.bns, self.rnns, strict=True):
                x = bn(x.transpose(1, 2)).transpose(1, 2)
                x = rnn(x)[0].view(b, t, 2, self.hidden).sum(2)
            return F.log_softmax(self.fc(x), -1)

    # -- PWC-Net --------------------------------------------------------------------------
    def cost_volume(f1, f2, d):
        """Correlation of f1 with f2 shifted by every displacement in [-d, d]^2, mean over
        channels: (b, (2d+1)^2, h, w)."""
        _, _, h, w = f1.shape
        f2p = F.pad(f2, (d, d, d, d))
        vols = [(f1 * f2p[:, :, i:i + h, j:j + w]).mean(1)
                for i in range(2 * d + 1) for j in range(2 * d + 1)]
        return F.leaky_relu(torch.stack(vols, 1), 0.1)

    def warp(x, flow):
        """Backward warping: sample x at pixel + flow with bilinear ``grid_sample``."""
        _, _, h, w = x.shape
        ys, xs = torch.meshgrid(torch.arange(h, dtype=x.dtype), torch.arange(w, dtype=x.dtype),
                                indexing="ij")
        gx = 2.0 * (xs + flow[:, 0]) / max(w - 1, 1) - 1.0
        gy = 2.0 * (ys + flow[:, 1]) / max(h - 1, 1) - 1.0
        return F.grid_sample(x, torch.stack([gx, gy], -1), mode="bilinear",
                             padding_mode="zeros", align_corners=True)

    class PWCNet(nn.Module):
        """A shared three-level feature pyramid; coarse to fine: warp the second image's
        features by the upsampled flow, a cost volume, a densely connected estimator (each
        conv sees all earlier outputs) predicting the flow at that level."""

        def __init__(self, c=16, d=3, levels=3):
            super().__init__()
            self.d = d

            def down(i, o):
                return nn.Sequential(nn.Conv2d(i, o, 3, 2, 1), nn.LeakyReLU(0.1),
                                     nn.Conv2d(o, o, 3, 1, 1), nn.LeakyReLU(0.1))

            chans = [3] + [c * 2 ** i for i in range(levels)]
            self.pyr = nn.ModuleList([down(chans[i], chans[i + 1]) for i in range(levels)])
            nd = (2 * d + 1) ** 2
            self.est = nn.ModuleList()
            for lv in range(levels):
                cin = nd + chans[lv + 1] + (2 if lv < levels - 1 else 0)
                convs, k = nn.ModuleList(), cin
                for o in (32, 24, 16):
                    convs.append(nn.Sequential(nn.Conv2d(k, o, 3, 1, 1), nn.LeakyReLU(0.1)))
                    k += o
                self.est.append(nn.ModuleDict({"dense": convs,
                                               "flow": nn.Conv2d(k, 2, 3, 1, 1)}))

        def forward(self, im1, im2):
            p1, p2 = [im1], [im2]
            for down in self.pyr:
                p1.append(down(p1[-1]))
                p2.append(down(p2[-1]))
            flow = None
            for lv in range(len(self.pyr) - 1, -1, -1):
                f1, f2 = p1[lv + 1], p2[lv + 1]
                parts = [f1]
                if flow is not None:
                    flow = 2.0 * F.interpolate(flow, scale_factor=2, mode="bilinear",
                                               align_corners=False)
                    f2 = warp(f2, flow)
                    parts.append(flow)
                x = torch.cat([cost_volume(f1, f2, self.d)] + parts, 1)
                for conv in self.est[lv]["dense"]:
                    x = torch.cat([x, conv(x)], 1)
                delta = self.est[lv]["flow"](x)
                flow = delta if flow is None else flow + delta
            return flow

    # -- APPNP ----------------------------------------------------------------------------
    class APPNP(nn.Module):
        """Predict then propagate: an MLP gives per-node logits H; K steps of
        Z <- (1 - alpha) A_hat Z + alpha H with A_hat the symmetric-normalized adjacency with
        self loops, applied over the edge list by gather and ``index_add``."""

        def __init__(self, fin=64, hidden=64, classes=7, k=10, alpha=0.1):
            super().__init__()
            self.k, self.alpha = k, alpha
            self.mlp = nn.Sequential(nn.Linear(fin, hidden), nn.ReLU(), nn.Dropout(0.5),
                                     nn.Linear(hidden, classes))

        def forward(self, x, edge_index):                         # (n, fin), (2, e)
            n = x.shape[0]
            loops = torch.arange(n)
            src = torch.cat([edge_index[0], loops])
            dst = torch.cat([edge_index[1], loops])
            deg = torch.zeros(n).index_add(0, dst, torch.ones(dst.shape[0]))
            norm = (deg[src] * deg[dst]).rsqrt().unsqueeze(-1)
            h = self.mlp(x)
            z = h
            for _ in range(self.k):
                msg = z[src] * norm
                z = (1 - self.alpha) * torch.zeros_like(z).index_add(0, dst, msg) + \
                    self.alpha * h
            return F.log_softmax(z, -1)

    # -- prototypical network -------------------------------------------------------------
    class ProtoNet(nn.Module):
        """Conv-4 embeddings of an N-way K-shot support set and the queries; prototypes are
        class means (one-hot labels by matmul); logits are negative squared distances."""

        def __init__(self, c=32, ways=5):
            super().__init__()
            self.ways = ways

            def block(i, o):
                return nn.Sequential(nn.Conv2d(i, o, 3, 1, 1), nn.BatchNorm2d(o), nn.ReLU(),
                                     nn.MaxPool2d(2))

            self.enc = nn.Sequential(block(3, c), block(c, c), block(c, c), block(c, c),
                                     nn.Flatten())

        def forward(self, support, labels, query):
            zs, zq = self.enc(support), self.enc(query)
            onehot = F.one_hot(labels, self.ways).float()         # (n_s, ways)
            protos = (onehot.t() @ zs) / onehot.sum(0).unsqueeze(-1)
            d2 = (zq.unsqueeze(1) - protos.unsqueeze(0)).pow(2).sum(-1)
            return F.log_softmax(-d2, -1)

    # -- backprop Kalman filter -----------------------------------------------------------
    class BackpropKF(nn.Module):
        """A CNN maps each frame to a position observation and a diagonal noise; a
        constant-velocity Kalman filter fuses them over time (gain by ``linalg.inv``);
        returns the filtered states and each step's innovation log-likelihood (``slogdet``)."""

        def __init__(self, c=16, dt=0.1):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(3, c, 5, 2, 2), nn.ReLU(),
                                     nn.Conv2d(c, 2 * c, 3, 2, 1), nn.ReLU(),
                                     nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                     nn.Linear(2 * c, 4))
            a = torch.eye(4)
            a[0, 2] = a[1, 3] = dt
            self.register_buffer("a", a)
            self.register_buffer("h", torch.eye(2, 4))
            self.log_q = nn.Parameter(torch.full((4,), -3.0))

        def forward(self, frames):                                # (b, t, 3, H, W)
            b, t = frames.shape[:2]
            enc = self.enc(frames.flatten(0, 1)).view(b, t, 4)
            z, r_diag = enc[..., :2], F.softplus(enc[..., 2:]) + 1e-3
            q = torch.diag(self.log_q.exp())
            x = torch.zeros(b, 4, 1)
            p = torch.eye(4).expand(b, 4, 4)
            states, lls = [], []
            for k in range(t):
                x = self.a @ x
                p = self.a @ p @ self.a.t() + q
                innov = z[:, k].unsqueeze(-1) - self.h @ x
                s = self.h @ p @ self.h.t() + torch.diag_embed(r_diag[:, k])
                s_inv = torch.linalg.inv(s)
                gain = p @ self.h.t() @ s_inv
                x = x + gain @ innov
                p = (torch.eye(4) - gain @ self.h) @ p
                logdet = torch.linalg.slogdet(s)[1]
                maha = (innov.transpose(1, 2) @ s_inv @ innov).view(b)
                lls.append(-0.5 * (maha + logdet + 2 * math.log(2 * math.pi)))
                states.append(x.squeeze(-1))
            return torch.cat([torch.stack(states, 1).flatten(1), torch.stack(lls, 1)], 1)

    # -- SiamFC ---------------------------------------------------------------------------
    class SiamFC(nn.Module):
        """A shared fully convolutional AlexNet-like backbone; the exemplar's features are
        the weights of a grouped conv over the search region's (batch folded into groups),
        giving a response map, then a BN-like affine adjustment."""

        def __init__(self, c=32):
            super().__init__()
            self.backbone = nn.Sequential(
                nn.Conv2d(3, c, 7, 2), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(3, 2),
                nn.Conv2d(c, 2 * c, 5, 1, groups=2), nn.BatchNorm2d(2 * c), nn.ReLU(),
                nn.MaxPool2d(3, 2),
                nn.Conv2d(2 * c, 2 * c, 3, 1), nn.BatchNorm2d(2 * c), nn.ReLU(),
                nn.Conv2d(2 * c, 2 * c, 3, 1, groups=2))
            self.adjust = nn.BatchNorm2d(1)

        def forward(self, exemplar, search):
            z, x = self.backbone(exemplar), self.backbone(search)
            b, c, hx, wx = x.shape
            out = F.conv2d(x.reshape(1, b * c, hx, wx), z, groups=b)
            return self.adjust(out.view(b, 1, out.shape[-2], out.shape[-1]) * 1e-3)

    # -- neural additive model ------------------------------------------------------------
    class NAM(nn.Module):
        """A small network per input feature (an ExU first layer: exp(w) * (x - b), clipped
        ReLU-n, then two ReLU layers), all features' networks batched as ``einsum`` over a
        feature axis; the output is the sum of the shape functions plus a bias."""

        def __init__(self, features=32, hidden=64, units=(64, 32), outs=1):
            super().__init__()
            self.w0 = nn.Parameter(torch.randn(features, hidden) * 0.5 + 3.0)
            self.b0 = nn.Parameter(torch.randn(features, hidden) * 0.5)
            ws, dims = [], [hidden, *units]
            for i, o in zip(dims[:-1], dims[1:], strict=True):
                ws.append(nn.Parameter(torch.randn(features, i, o) / math.sqrt(i)))
            self.ws = nn.ParameterList(ws)
            self.bs = nn.ParameterList([nn.Parameter(torch.zeros(features, o)) for o in units])
            self.head = nn.Parameter(torch.randn(features, dims[-1], outs) / math.sqrt(dims[-1]))
            self.bias = nn.Parameter(torch.zeros(outs))

        def forward(self, x):                                     # (b, features)
            h = torch.clamp((x.unsqueeze(-1) - self.b0) * torch.exp(self.w0), 0, 1)
            for w, bias in zip(self.ws, self.bs, strict=True):
                h = F.relu(torch.einsum("bfi,fio->bfo", h, w) + bias)
            shapes = torch.einsum("bfi,fio->bfo", h, self.head)   # (b, features, outs)
            return torch.cat([shapes.sum(1) + self.bias, shapes.flatten(1)], 1)

    # -- inputs ---------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def tokens(shape, vocab, seed):
        def make():
            return {"idx": torch.randint(0, vocab, shape, generator=gen(seed))}
        return make

    def ctr(b=256, fields=12, vocab=1000, dense=6, seed=231):
        def make():
            g = gen(seed)
            return {"sparse": torch.randint(0, vocab, (b, fields), generator=g),
                    "dense": torch.randn(b, dense, generator=g)}
        return make

    def documents(b=8, sents=12, words=20, vocab=3000, seed=232):
        def make():
            g = gen(seed)
            doc = torch.randint(1, vocab, (b, sents, words), generator=g)
            wl = torch.randint(3, words + 1, (b, sents, 1), generator=g)
            sl = torch.randint(4, sents + 1, (b, 1, 1), generator=g)
            keep = (torch.arange(words) < wl) & (torch.arange(sents)[:, None] < sl)
            return {"doc": doc * keep}
        return make

    def speech(b=4, feats=64, t=160, seed=233):
        def make():
            g = gen(seed)
            return {"spec": torch.randn(b, feats, t, generator=g),
                    "lengths": torch.tensor([t, t - 30, t - 70, t // 2])[:b]}
        return make

    def image_pair(b=1, size=64, seed=234):
        def make():
            g = gen(seed)
            im1 = torch.rand(b, 3, size, size, generator=g)
            return {"im1": im1, "im2": torch.roll(im1, (2, 1), (2, 3))
                    + 0.05 * torch.randn(b, 3, size, size, generator=g)}
        return make

    def graph(n=600, e=3000, fin=64, seed=235):
        def make():
            g = gen(seed)
            src = torch.randint(0, n, (e,), generator=g)
            dst = torch.randint(0, n, (e,), generator=g)
            return {"x": torch.randn(n, fin, generator=g),
                    "edge_index": torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])}
        return make

    def episode(ways=5, shots=5, queries=15, size=28, seed=236):
        def make():
            g = gen(seed)
            return {"support": torch.rand(ways * shots, 3, size, size, generator=g),
                    "labels": torch.arange(ways).repeat_interleave(shots),
                    "query": torch.rand(ways * queries, 3, size, size, generator=g)}
        return make

    def frames(b=4, t=12, size=32, seed=237):
        def make():
            return {"frames": torch.rand(b, t, 3, size, size, generator=gen(seed))}
        return make

    def tracking(b=2, seed=238):
        def make():
            g = gen(seed)
            return {"exemplar": torch.rand(b, 3, 127, 127, generator=g),
                    "search": torch.rand(b, 3, 255, 255, generator=g)}
        return make

    return {
        "sknet_mini": (SKNet, (2, 3, 64, 64)),
        "sru_lm": (SRULM, tokens((4, 48), 2000, 239)),
        "autoint_ctr": (AutoInt, ctr()),
        "han_doc": (HAN, documents()),
        "quartznet_mini": (QuartzNet, speech()),
        "deepspeech2_mini": (DeepSpeech2, (2, 1, 80, 200)),
        "pwcnet_mini": (PWCNet, image_pair()),
        "appnp_graph": (APPNP, graph()),
        "protonet_fewshot": (ProtoNet, episode()),
        "backprop_kf": (BackpropKF, frames()),
        "siamfc_track": (SiamFC, tracking()),
        "nam_additive": (NAM, (512, 32)),
    }
