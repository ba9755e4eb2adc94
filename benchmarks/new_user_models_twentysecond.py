"""The twenty-second round of ``bench_new_user_models``: DeepSurv (a Cox partial likelihood over
the risk set by ``argsort`` and ``torch.logcumsumexp``), an orthogonal expRNN (the recurrent
matrix ``torch.matrix_exp`` of a skew-symmetric parameter, modReLU), deep-kernel GP regression
(an MLP feature map, an RBF kernel by ``cdist``, ``torch.linalg.cholesky``,
``cholesky_solve`` and ``solve_triangular`` for the posterior mean and variance), an LSTM
language model with ``nn.AdaptiveLogSoftmaxWithLoss.log_prob`` (clustered vocabulary, the
full log-probabilities written into slices of an empty tensor), ESIM natural-language
inference (BiLSTM encodings, masked soft alignment both ways, masked mean / max pooling),
MMoE with ESMM towers (experts by ``torch.tensordot`` as in the Keras original, per-task
softmax gates, pCTCVR = pCTR * pCVR), FiBiNET (SENET field re-weighting and a field-each
bilinear interaction over ``itertools.combinations`` of the split fields), an Octave-conv
ResNet (high / low frequency paths exchanged by average pooling and nearest upsampling), a
BoTNet block (2-D relative position logits by the pad-and-reshape ``rel_to_abs`` trick), a
YOLACT head (prototype masks times per-detection tanh coefficients for the top-k anchors,
cropped to their decoded boxes), LSTNet (a conv over time, a GRU, a skip-GRU over periods by
reshapes, a linear autoregressive highway) and an end-to-end memory network (position and
temporal encodings, three hops with adjacent weight tying). Kept apart so the main script
stays readable."""

from __future__ import annotations

import itertools
import math


def twentysecond_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- DeepSurv -------------------------------------------------------------------------
    class DeepSurv(nn.Module):
        """An MLP risk score; the negative Cox partial log-likelihood: subjects sorted by
        descending time, so each one's risk set is a prefix and its log-sum-exp a running
        ``logcumsumexp``."""

        def __init__(self, fin=24, hidden=64, layers=2):
            super().__init__()
            mods, d = [], fin
            for _ in range(layers):
                mods += [nn.Linear(d, hidden), nn.BatchNorm1d(hidden), nn.SELU()]
                d = hidden
            self.net = nn.Sequential(*mods, nn.Linear(d, 1, bias=False))

        def forward(self, x, time, event):
            risk = self.net(x).squeeze(-1)
            order = torch.argsort(time, descending=True)
            r, e = risk[order], event[order]
            partial = (r - torch.logcumsumexp(r, 0)) * e
            loss = -partial.sum() / e.sum().clamp(min=1.0)
            return torch.cat([risk, loss.view(1)])

    # -- expRNN ---------------------------------------------------------------------------
    class ExpRNN(nn.Module):
        """An orthogonal RNN: the recurrent matrix is the exponential of a skew-symmetric
        matrix built from a free parameter's upper triangle; modReLU nonlinearity."""

        def __init__(self, fin=10, hidden=64, out=9):
            super().__init__()
            self.hidden = hidden
            self.inp = nn.Linear(fin, hidden, bias=False)
            self.log_rec = nn.Parameter(0.3 * torch.randn(hidden, hidden) / math.sqrt(hidden))
            self.bias = nn.Parameter(-0.01 * torch.rand(hidden))
            self.out = nn.Linear(hidden, out)

        def modrelu(self, z):
            return torch.sign(z) * F.relu(z.abs() + self.bias)

        def forward(self, x):                                     # (b, t, fin)
            a = self.log_rec.triu(1)
            rec = torch.matrix_exp(a - a.t())
            xs = self.inp(x)
            h = x.new_zeros(x.shape[0], self.hidden)
            outs = []
            for t in range(x.shape[1]):
                h = self.modrelu(h @ rec + xs[:, t])
                outs.append(self.out(h))
            return torch.stack(outs, 1)

    # -- deep-kernel GP -------------------------------------------------------------------
    class DeepKernelGP(nn.Module):
        """Exact GP regression on learned features: the training kernel's Cholesky factor,
        the weights by ``cholesky_solve``, the predictive variance by a triangular solve."""

        def __init__(self, fin=8, hidden=32, d=4):
            super().__init__()
            self.feat = nn.Sequential(nn.Linear(fin, hidden), nn.Tanh(),
                                      nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, d))
            self.log_ls = nn.Parameter(torch.zeros(d))
            self.log_os = nn.Parameter(torch.zeros(()))
            self.log_noise = nn.Parameter(torch.tensor(math.log(0.1)))

        def kernel(self, a, b):
            ls = self.log_ls.exp()
            return self.log_os.exp() * torch.exp(-0.5 * torch.cdist(a / ls, b / ls).pow(2))

        def forward(self, x_train, y_train, x_test):
            ft, fs = self.feat(x_train), self.feat(x_test)
            noise = self.log_noise.exp()
            kxx = self.kernel(ft, ft) + noise * torch.eye(ft.shape[0])
            chol = torch.linalg.cholesky(kxx)
            alpha = torch.cholesky_solve(y_train.unsqueeze(-1), chol)
            ks = self.kernel(ft, fs)                              # (n, m)
            mean = (ks.t() @ alpha).squeeze(-1)
            v = torch.linalg.solve_triangular(chol, ks, upper=False)
            var = self.log_os.exp() - (v * v).sum(0) + noise
            return torch.stack([mean, var], -1)

    # -- adaptive-softmax LM --------------------------------------------------------------
    class AdaptiveSoftmaxLM(nn.Module):
        """A two-layer LSTM language model whose output layer is an adaptive softmax: a head
        over the frequent words and two tail clusters, smaller projections for rarer words."""

        def __init__(self, vocab=8000, d=96, hidden=128, cutoffs=(1000, 3000)):
            super().__init__()
            self.hidden = hidden
            self.emb = nn.Embedding(vocab, d)
            self.lstm = nn.LSTM(d, hidden, 2, batch_first=True)
            self.asm = nn.AdaptiveLogSoftmaxWithLoss(hidden, vocab, list(cutoffs), div_value=4.0)

        def forward(self, idx):
            h = self.lstm(self.emb(idx))[0]
            return self.asm.log_prob(h.reshape(-1, self.hidden))

    # -- ESIM -----------------------------------------------------------------------------
    class ESIM(nn.Module):
        """Enhanced sequential inference: BiLSTM encodings, soft alignment of each sentence
        to the other with padding masked out, [a; a~; a - a~; a * a~] enhancement, a
        composition BiLSTM, masked average and max pooling, a tanh MLP."""

        def __init__(self, vocab=5000, d=64, h=64, classes=3):
            super().__init__()
            self.emb = nn.Embedding(vocab, d, padding_idx=0)
            self.enc = nn.LSTM(d, h, batch_first=True, bidirectional=True)
            self.proj = nn.Linear(8 * h, h)
            self.comp = nn.LSTM(h, h, batch_first=True, bidirectional=True)
            self.cls = nn.Sequential(nn.Linear(8 * h, h), nn.Tanh(), nn.Linear(h, classes))

        @staticmethod
        def pool(v, mask):
            m = mask.unsqueeze(-1)
            avg = (v * m).sum(1) / m.sum(1)
            mx = v.masked_fill(m == 0, -1e7).max(1)[0]
            return torch.cat([avg, mx], -1)

        def forward(self, premise, hypothesis, p_len, h_len):
            pm = (torch.arange(premise.shape[1])[None, :] < p_len[:, None]).float()
            hm = (torch.arange(hypothesis.shape[1])[None, :] < h_len[:, None]).float()
            a = self.enc(self.emb(premise))[0]
            b = self.enc(self.emb(hypothesis))[0]
            e = a @ b.transpose(1, 2)
            att_a = F.softmax(e.masked_fill(hm[:, None, :] == 0, -1e9), -1) @ b
            att_b = F.softmax(e.transpose(1, 2).masked_fill(pm[:, None, :] == 0, -1e9), -1) @ a
            ma = torch.cat([a, att_a, a - att_a, a * att_a], -1)
            mb = torch.cat([b, att_b, b - att_b, b * att_b], -1)
            va = self.comp(F.relu(self.proj(ma)))[0]
            vb = self.comp(F.relu(self.proj(mb)))[0]
            return self.cls(torch.cat([self.pool(va, pm), self.pool(vb, hm)], -1))

    # -- MMoE + ESMM ----------------------------------------------------------------------
    class MMoEESMM(nn.Module):
        """Multi-gate mixture of experts over sparse and dense features: experts as one
        weight tensor applied by ``tensordot``, a softmax gate per task; the CTR and CVR
        towers, and pCTCVR = pCTR * pCVR over the whole impression space."""

        def __init__(self, fields=8, vocab=1000, d=8, dense=13, experts=6, dexp=32, tower=16):
            super().__init__()
            self.emb = nn.Embedding(fields * vocab, d)
            self.register_buffer("offsets", torch.arange(fields) * vocab)
            din = fields * d + dense
            self.w_exp = nn.Parameter(torch.randn(din, dexp, experts) / math.sqrt(din))
            self.b_exp = nn.Parameter(torch.zeros(dexp, experts))
            self.gates = nn.ModuleList([nn.Linear(din, experts) for _ in range(2)])
            self.towers = nn.ModuleList([nn.Sequential(nn.Linear(dexp, tower), nn.ReLU(),
                                                       nn.Linear(tower, 1)) for _ in range(2)])

        def forward(self, sparse, dense):
            x = torch.cat([self.emb(sparse + self.offsets).flatten(1), dense], -1)
            ex = F.relu(torch.tensordot(x, self.w_exp, dims=([1], [0])) + self.b_exp)
            outs = []
            for gate, tower in zip(self.gates, self.towers, strict=True):
                g = F.softmax(gate(x), -1)                        # (b, experts)
                outs.append(torch.sigmoid(tower((ex * g.unsqueeze(1)).sum(-1))))
            ctr, cvr = outs
            return torch.cat([ctr, cvr, ctr * cvr], -1)

    # -- FiBiNET --------------------------------------------------------------------------
    class FiBiNET(nn.Module):
        """Field embeddings re-weighted by a squeeze-excitation network; a field-each bilinear
        interaction (v_i W_i * v_j for each pair) on both the original and re-weighted
        embeddings; a DNN on their concatenation."""

        def __init__(self, fields=10, vocab=1000, d=16, reduction=3, hidden=128):
            super().__init__()
            self.fields = fields
            self.emb = nn.Embedding(fields * vocab, d)
            self.register_buffer("offsets", torch.arange(fields) * vocab)
            r = max(1, fields // reduction)
            self.se = nn.Sequential(nn.Linear(fields, r, bias=False), nn.ReLU(),
                                    nn.Linear(r, fields, bias=False), nn.ReLU())
            self.bilinear = nn.ModuleList([nn.Linear(d, d, bias=False) for _ in range(fields)])
            pairs = fields * (fields - 1) // 2
            self.dnn = nn.Sequential(nn.Linear(2 * pairs * d, hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden // 2), nn.ReLU(),
                                     nn.Linear(hidden // 2, 1))

        def interact(self, e):
            v = torch.split(e, 1, dim=1)
            return torch.cat([self.bilinear[i](v[i]) * v[j]
                              for i, j in itertools.combinations(range(self.fields), 2)], 1)

        def forward(self, sparse):
            e = self.emb(sparse + self.offsets)                   # (b, f, d)
            a = self.se(e.mean(-1))
            p, q = self.interact(e), self.interact(e * a.unsqueeze(-1))
            return torch.sigmoid(self.dnn(torch.cat([p, q], 1).flatten(1)))

    # -- Octave ResNet --------------------------------------------------------------------
    class OctConv(nn.Module):
        """A conv split into high- and low-frequency parts (alpha of the channels at half
        resolution), exchanging information by 2x2 average pooling and nearest upsampling."""

        def __init__(self, cin, cout, a_in=0.5, a_out=0.5, stride=1):
            super().__init__()
            self.stride = stride
            li, lo = int(a_in * cin), int(a_out * cout)
            hi, ho = cin - li, cout - lo

            def conv(i, o):
                return nn.Conv2d(i, o, 3, 1, 1, bias=False) if i and o else None

            self.h2h, self.h2l, self.l2h, self.l2l = conv(hi, ho), conv(hi, lo), conv(li, ho), \
                conv(li, lo)
            self.bn_h = nn.BatchNorm2d(ho)
            self.bn_l = nn.BatchNorm2d(lo) if lo else None

        def forward(self, xh, xl=None):
            if self.stride == 2:
                xh = F.avg_pool2d(xh, 2)
                xl = F.avg_pool2d(xl, 2) if xl is not None else None
            yh = self.h2h(xh)
            if xl is not None and self.l2h is not None:
                yh = yh + F.interpolate(self.l2h(xl), scale_factor=2, mode="nearest")
            yh = F.relu(self.bn_h(yh))
            if self.bn_l is None:
                return yh, None
            yl = self.h2l(F.avg_pool2d(xh, 2))
            if xl is not None:
                yl = yl + self.l2l(xl)
            return yh, F.relu(self.bn_l(yl))

    class OctResNet(nn.Module):
        def __init__(self, c=32, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c),
                                      nn.ReLU())
            self.first = OctConv(c, c, a_in=0.0)
            self.blocks = nn.ModuleList([OctConv(c, c), OctConv(c, c),
                                         OctConv(c, 2 * c, stride=2), OctConv(2 * c, 2 * c)])
            self.last = OctConv(2 * c, 2 * c, a_out=0.0)
            self.fc = nn.Linear(2 * c, classes)

        def forward(self, x):
            h, low = self.first(self.stem(x))
            for i, blk in enumerate(self.blocks):
                nh, nl = blk(h, low)
                if i % 2 == 1 and nh.shape == h.shape:            # residual pairs
                    nh, nl = nh + h, nl + low
                h, low = nh, nl
            h, _ = self.last(h, low)
            return self.fc(h.mean((2, 3)))

    # -- BoTNet ---------------------------------------------------------------------------
    def rel_to_abs(x):
        """(B, N, L, 2L - 1) relative logits -> (B, N, L, L) absolute, by padding a column,
        flattening, padding L - 1 and reshaping so each row shifts by one."""
        b, n, length, _ = x.shape
        x = F.pad(x, (0, 1))
        flat = F.pad(x.reshape(b, n, length * 2 * length), (0, length - 1))
        return flat.reshape(b, n, length + 1, 2 * length - 1)[:, :, :length, length - 1:]

    class RelPosEmb(nn.Module):
        def __init__(self, size, d):
            super().__init__()
            self.size = size
            scale = d ** -0.5
            self.rel_h = nn.Parameter(torch.randn(2 * size - 1, d) * scale)
            self.rel_w = nn.Parameter(torch.randn(2 * size - 1, d) * scale)

        def logits_1d(self, q, rel):                              # q (B, h, x, y, d)
            b, h, x, y, _ = q.shape
            logits = torch.einsum("bhxyd,rd->bhxyr", q, rel).reshape(b, h * x, y, 2 * y - 1)
            logits = rel_to_abs(logits).reshape(b, h, x, y, y)
            return logits.unsqueeze(3).expand(b, h, x, x, y, y)

        def forward(self, q):                                     # (B, h, H*W, d)
            b, h, _, d = q.shape
            q = q.reshape(b, h, self.size, self.size, d)
            lw = self.logits_1d(q, self.rel_w)                    # (b,h,x,x',y,y')
            lw = lw.permute(0, 1, 2, 4, 3, 5).reshape(b, h, self.size ** 2, self.size ** 2)
            lh = self.logits_1d(q.transpose(2, 3), self.rel_h)
            lh = lh.permute(0, 1, 4, 2, 5, 3).reshape(b, h, self.size ** 2, self.size ** 2)
            return lw + lh

    class BoTBlock(nn.Module):
        """A ResNet bottleneck whose 3x3 conv is multi-head self-attention over the feature
        map with 2-D relative position logits."""

        def __init__(self, c, size, heads=4, mid=None):
            super().__init__()
            mid = mid or c // 2
            self.heads, self.dh = heads, mid // heads
            self.reduce = nn.Sequential(nn.Conv2d(c, mid, 1, bias=False), nn.BatchNorm2d(mid),
                                        nn.ReLU())
            self.qkv = nn.Conv2d(mid, 3 * mid, 1, bias=False)
            self.rel = RelPosEmb(size, self.dh)
            self.post = nn.Sequential(nn.BatchNorm2d(mid), nn.ReLU(),
                                      nn.Conv2d(mid, c, 1, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            b, _, hh, ww = x.shape
            y = self.reduce(x)
            q, k, v = self.qkv(y).reshape(b, 3, self.heads, self.dh, hh * ww).unbind(1)
            q, k, v = (t.transpose(-1, -2) for t in (q, k, v))    # (b, heads, n, dh)
            q = q * self.dh ** -0.5
            att = (q @ k.transpose(-1, -2) + self.rel(q)).softmax(-1)
            out = (att @ v).transpose(-1, -2).reshape(b, -1, hh, ww)
            return F.relu(x + self.post(out))

    class BoTNet(nn.Module):
        def __init__(self, c=64, size=8, classes=10, blocks=2):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, c // 2, 3, 2, 1, bias=False),
                                      nn.BatchNorm2d(c // 2), nn.ReLU(),
                                      nn.Conv2d(c // 2, c, 3, 2, 1, bias=False),
                                      nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(2))
            self.blocks = nn.Sequential(*[BoTBlock(c, size) for _ in range(blocks)])
            self.fc = nn.Linear(c, classes)

        def forward(self, x):
            return self.fc(self.blocks(self.stem(x)).mean((2, 3)))

    # -- YOLACT ---------------------------------------------------------------------------
    class YOLACTHead(nn.Module):
        """Prototype masks from a protonet at stride 4; per-anchor class scores, box deltas and
        tanh mask coefficients at stride 8; the top-k anchors by their best class score, their
        boxes decoded, their masks sigmoid(protos @ coeffs) cropped to the boxes."""

        def __init__(self, c=32, protos=16, classes=8, anchors=3, topk=20):
            super().__init__()
            self.k, self.classes, self.anchors, self.topk = protos, classes, anchors, topk
            self.c1 = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.ReLU(),
                                    nn.Conv2d(c, c, 3, 2, 1), nn.ReLU())           # stride 4
            self.c2 = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1), nn.ReLU())          # stride 8
            self.proto = nn.Sequential(nn.Conv2d(2 * c, c, 3, 1, 1), nn.ReLU(),
                                       nn.Upsample(scale_factor=2, mode="bilinear",
                                                   align_corners=False),
                                       nn.Conv2d(c, c, 3, 1, 1), nn.ReLU(),
                                       nn.Conv2d(c, protos, 1), nn.ReLU())
            self.pred = nn.Conv2d(2 * c, anchors * (classes + 1 + 4 + protos), 3, 1, 1)
            self.scales = (0.15, 0.3, 0.5)

        def forward(self, x):
            s4 = self.c1(x)
            s8 = self.c2(s4)
            protos = self.proto(s8)                                # (1, k, H4, W4)
            b, _, h8, w8 = s8.shape
            p = self.pred(s8).view(b, self.anchors, -1, h8, w8).permute(0, 3, 4, 1, 2)
            p = p.reshape(b, h8 * w8 * self.anchors, -1)[0]
            conf = F.softmax(p[:, :self.classes + 1], -1)[:, 1:]
            loc = p[:, self.classes + 1:self.classes + 5]
            coef = torch.tanh(p[:, self.classes + 5:])
            ys, xs = torch.meshgrid(torch.arange(h8), torch.arange(w8), indexing="ij")
            cx = ((xs.flatten().float() + 0.5) / w8).repeat_interleave(self.anchors)
            cy = ((ys.flatten().float() + 0.5) / h8).repeat_interleave(self.anchors)
            sz = torch.tensor(self.scales).repeat(h8 * w8)
            score, cls = conf.max(-1)
            top, idx = score.topk(self.topk)
            bx = cx[idx] + loc[idx, 0] * 0.1 * sz[idx]
            by = cy[idx] + loc[idx, 1] * 0.1 * sz[idx]
            bw = sz[idx] * torch.exp(loc[idx, 2] * 0.2)
            bh = sz[idx] * torch.exp(loc[idx, 3] * 0.2)
            x1, x2, y1, y2 = bx - bw / 2, bx + bw / 2, by - bh / 2, by + bh / 2
            hp, wp = protos.shape[-2:]
            masks = torch.sigmoid(protos[0].permute(1, 2, 0) @ coef[idx].t())   # (hp, wp, k)
            cols = ((torch.arange(wp).float() + 0.5) / wp)[None, :, None]
            rows = ((torch.arange(hp).float() + 0.5) / hp)[:, None, None]
            inside = (cols >= x1) & (cols < x2) & (rows >= y1) & (rows < y2)
            masks = masks * inside.float()
            return torch.cat([masks.permute(2, 0, 1).flatten(1), top[:, None],
                              cls[idx, None].float(), torch.stack([x1, y1, x2, y2], 1)], 1)

    # -- LSTNet ---------------------------------------------------------------------------
    class LSTNet(nn.Module):
        """A conv over the window, a GRU over its output, a skip-GRU over the same phase of
        each period (by reshapes), and a linear autoregressive highway on the last steps."""

        def __init__(self, series=8, window=96, hid_cnn=32, hid_rnn=32, hid_skip=8, ck=6,
                     skip=24, hw=24):
            super().__init__()
            self.p, self.m, self.hid_c, self.hid_s = window, series, hid_cnn, hid_skip
            self.skip, self.hw = skip, hw
            self.pt = (window - ck) // skip
            self.conv = nn.Conv2d(1, hid_cnn, (ck, series))
            self.gru = nn.GRU(hid_cnn, hid_rnn)
            self.gru_skip = nn.GRU(hid_cnn, hid_skip)
            self.linear = nn.Linear(hid_rnn + skip * hid_skip, series)
            self.highway = nn.Linear(hw, 1)

        def forward(self, x):                                     # (b, window, series)
            b = x.shape[0]
            c = F.relu(self.conv(x.view(b, 1, self.p, self.m))).squeeze(3)   # (b, hc, L)
            r = self.gru(c.permute(2, 0, 1))[1].squeeze(0)
            s = c[:, :, -self.pt * self.skip:].contiguous()
            s = s.view(b, self.hid_c, self.pt, self.skip).permute(2, 0, 3, 1)
            s = self.gru_skip(s.reshape(self.pt, b * self.skip, self.hid_c))[1]
            s = s.view(b, self.skip * self.hid_s)
            res = self.linear(torch.cat([r, s], 1))
            z = x[:, -self.hw:, :].permute(0, 2, 1).reshape(-1, self.hw)
            return torch.sigmoid(res + self.highway(z).view(b, self.m))

    # -- MemN2N ---------------------------------------------------------------------------
    class MemN2N(nn.Module):
        """End-to-end memory network: sentences embedded with position encoding plus a
        temporal encoding per memory slot, three hops of soft attention, adjacent tying
        (hop k's output embedding is hop k+1's input embedding)."""

        def __init__(self, vocab=200, d=32, memories=20, words=8, hops=3):
            super().__init__()
            self.hops = hops
            self.embs = nn.ModuleList([nn.Embedding(vocab, d, padding_idx=0)
                                       for _ in range(hops + 1)])
            self.temporal = nn.Parameter(0.1 * torch.randn(hops + 1, memories, d))
            j = torch.arange(1, words + 1, dtype=torch.float32)[:, None]
            k = torch.arange(1, d + 1, dtype=torch.float32)[None, :]
            self.register_buffer("pe", (1 - j / words) - (k / d) * (1 - 2 * j / words))

        def forward(self, story, query):                          # (b, M, J), (b, J)
            u = (self.embs[0](query) * self.pe).sum(1)
            for hop in range(self.hops):
                m = (self.embs[hop](story) * self.pe).sum(2) + self.temporal[hop]
                c = (self.embs[hop + 1](story) * self.pe).sum(2) + self.temporal[hop + 1]
                p = F.softmax((m @ u.unsqueeze(-1)).squeeze(-1), -1)
                u = u + (p.unsqueeze(-1) * c).sum(1)
            return F.log_softmax(u @ self.embs[-1].weight.t(), -1)

    # -- inputs ---------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def survival(b=256, fin=24, seed=221):
        def make():
            g = gen(seed)
            return {"x": torch.randn(b, fin, generator=g),
                    "time": torch.rand(b, generator=g) * 100,
                    "event": (torch.rand(b, generator=g) < 0.7).float()}
        return make

    def gp_data(n=128, m=64, fin=8, seed=222):
        def make():
            g = gen(seed)
            xt = torch.randn(n, fin, generator=g)
            return {"x_train": xt,
                    "y_train": torch.sin(xt.sum(1)) + 0.1 * torch.randn(n, generator=g),
                    "x_test": torch.randn(m, fin, generator=g)}
        return make

    def tokens(shape, vocab, seed):
        def make():
            return {"idx": torch.randint(0, vocab, shape, generator=gen(seed))}
        return make

    def nli(b=16, tp=24, th=16, vocab=5000, seed=223):
        def make():
            g = gen(seed)
            pl, hl = torch.randint(6, tp + 1, (b,), generator=g), torch.randint(4, th + 1, (b,),
                                                                                generator=g)
            prem = torch.randint(1, vocab, (b, tp), generator=g)
            hyp = torch.randint(1, vocab, (b, th), generator=g)
            prem = prem * (torch.arange(tp)[None, :] < pl[:, None])
            hyp = hyp * (torch.arange(th)[None, :] < hl[:, None])
            return {"premise": prem, "hypothesis": hyp, "p_len": pl, "h_len": hl}
        return make

    def ctr(b=256, fields=8, vocab=1000, dense=13, seed=224):
        def make():
            g = gen(seed)
            out = {"sparse": torch.randint(0, vocab, (b, fields), generator=g)}
            if dense:
                out["dense"] = torch.randn(b, dense, generator=g)
            return out
        return make

    def stories(b=32, memories=20, words=8, vocab=200, seed=225):
        def make():
            g = gen(seed)
            lens = torch.randint(3, words + 1, (b, memories, 1), generator=g)
            s = torch.randint(1, vocab, (b, memories, words), generator=g)
            q = torch.randint(1, vocab, (b, words), generator=g)
            return {"story": s * (torch.arange(words) < lens),
                    "query": q * (torch.arange(words) < 5)}
        return make

    def copy_task(b=8, t=30, fin=10, seed=226):
        def make():
            ids = torch.randint(0, fin, (b, t), generator=gen(seed))
            return {"x": F.one_hot(ids, fin).float()}
        return make

    return {
        "deepsurv_cox": (DeepSurv, survival()),
        "exprnn_copy": (ExpRNN, copy_task()),
        "dkl_gp": (DeepKernelGP, gp_data()),
        "adasoft_lm": (AdaptiveSoftmaxLM, tokens((2, 32), 8000, 227)),
        "esim_nli": (ESIM, nli()),
        "mmoe_esmm": (MMoEESMM, ctr()),
        "fibinet_ctr": (FiBiNET, ctr(fields=10, dense=0, seed=228)),
        "octave_resnet": (OctResNet, (2, 3, 64, 64)),
        "botnet_relpos": (BoTNet, (2, 3, 64, 64)),
        "yolact_masks": (YOLACTHead, (1, 3, 128, 128)),
        "lstnet": (LSTNet, (32, 96, 8)),
        "memn2n_qa": (MemN2N, stories()),
    }
