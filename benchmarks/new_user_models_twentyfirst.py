"""The twenty-first round of ``bench_new_user_models``: Barlow Twins (the cross-correlation of
two views' batch-normalized projections, ``torch.diagonal`` and the ``flatten()[:-1].view(n -
1, n + 1)[:, 1:]`` off-diagonal trick), a person re-ID net (GeM pooling with a learned power, a
BN-neck, batch-hard triplet mining by masked ``max`` / ``min`` and
``F.triplet_margin_loss``), DPRNN speech separation (overlapping chunks by ``F.unfold``,
intra- and inter-chunk BiLSTMs, overlap-add by ``F.fold``), SincNet (band-pass filters built
each call from learned cut-offs by ``sin``, a Hamming window and ``flip``, then ``conv1d``
with those computed weights), a masked autoregressive flow (MADE masks as buffers,
batch-norm flow layers, a log-determinant), DIEN (a GRU interest extractor, target
attention, an AUGRU loop that keeps padded steps by ``torch.where``), LISTA sparse coding
(``nn.Softshrink`` then learned thresholds by ``sign * relu(|x| - t)``), DiffPool (dense GCNs
on a symmetric-normalized adjacency, soft cluster assignments, ``S^T A S``, the link loss by
``torch.linalg.matrix_norm``), a NeuralSort learning-to-rank head (a relaxed permutation
matrix, NDCG with ``torch.exp2`` gains and ``log2`` discounts), a Gumbel-softmax dVAE (noise
from given uniforms, a straight-through hard one-hot by ``scatter``, ``F.kl_div`` with
``log_target``), a keyword spotter on a PCEN front end (a per-channel IIR smoother written as
a loop over frames) and DimeNet (a Bessel radial basis with its polynomial envelope, bond
angles by ``torch.acos`` over triplets, messages ``index_add``-ed per edge and per atom). Kept
apart so the main script stays readable."""

from __future__ import annotations

import math


def twentyfirst_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    def conv_bn(cin, cout, s=1):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, s, 1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True))

    # -- Barlow Twins ---------------------------------------------------------------------
    class BarlowTwins(nn.Module):
        """Two views through one backbone and projector; the loss pulls the cross-correlation
        of their batch-normalized projections toward the identity."""

        def __init__(self, c=32, proj=128, lambd=5e-3):
            super().__init__()
            self.lambd = lambd
            self.backbone = nn.Sequential(conv_bn(3, c, 2), conv_bn(c, 2 * c, 2),
                                          conv_bn(2 * c, 4 * c, 2), nn.AdaptiveAvgPool2d(1),
                                          nn.Flatten())
            self.projector = nn.Sequential(nn.Linear(4 * c, proj, bias=False),
                                           nn.BatchNorm1d(proj), nn.ReLU(inplace=True),
                                           nn.Linear(proj, proj, bias=False))
            self.bn = nn.BatchNorm1d(proj, affine=False)

        def forward(self, y1, y2):
            z1 = self.projector(self.backbone(y1))
            z2 = self.projector(self.backbone(y2))
            c = self.bn(z1).T @ self.bn(z2) / z1.shape[0]
            n = c.shape[0]
            on_diag = (torch.diagonal(c) - 1).pow(2).sum()
            off_diag = c.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten().pow(2).sum()
            return torch.stack([on_diag, off_diag, on_diag + self.lambd * off_diag])

    # -- re-ID with GeM and batch-hard triplets -------------------------------------------
    class ReIDTriplet(nn.Module):
        """Embeddings by GeM pooling and a BN-neck; each anchor's hardest positive and
        negative by masked max / min over the distance matrix; soft-margin and hinge
        triplet losses."""

        def __init__(self, c=24, d=64, p=3.0, margin=0.3):
            super().__init__()
            self.margin = margin
            self.backbone = nn.Sequential(conv_bn(3, c, 2), conv_bn(c, c), conv_bn(c, 2 * c, 2),
                                          conv_bn(2 * c, 4 * c, 2))
            self.p = nn.Parameter(torch.ones(1) * p)
            self.fc = nn.Linear(4 * c, d, bias=False)
            self.neck = nn.BatchNorm1d(d)

        def gem(self, x, eps=1e-6):
            return F.avg_pool2d(x.clamp(min=eps).pow(self.p), x.shape[-2:]).pow(1.0 / self.p)

        def forward(self, images, labels):
            f = F.normalize(self.neck(self.fc(self.gem(self.backbone(images)).flatten(1))), dim=1)
            sq = (f * f).sum(1)
            dist = (sq[:, None] + sq[None, :] - 2 * f @ f.t()).clamp(min=1e-12).sqrt()
            same = labels[:, None] == labels[None, :]
            pos_d, pos_i = (dist * same.float()).max(1)
            neg_d, neg_i = dist.masked_fill(same, float("inf")).min(1)
            soft = F.softplus(pos_d - neg_d)
            hinge = F.triplet_margin_loss(f, f[pos_i], f[neg_i], margin=self.margin,
                                          reduction="none")
            return torch.stack([soft, hinge], 1)

    # -- DPRNN ----------------------------------------------------------------------------
    class DualPathBlock(nn.Module):
        """A BiLSTM along each chunk, then a BiLSTM across chunks, each with a projection,
        a global layer norm and a residual."""

        def __init__(self, n, h):
            super().__init__()
            self.intra = nn.LSTM(n, h, batch_first=True, bidirectional=True)
            self.inter = nn.LSTM(n, h, batch_first=True, bidirectional=True)
            self.intra_fc, self.inter_fc = nn.Linear(2 * h, n), nn.Linear(2 * h, n)
            self.intra_norm, self.inter_norm = nn.GroupNorm(1, n), nn.GroupNorm(1, n)

        def forward(self, x):                                   # (b, n, k, s)
            b, n, k, s = x.shape
            y = x.permute(0, 3, 2, 1).reshape(b * s, k, n)
            y = self.intra_fc(self.intra(y)[0]).view(b, s, k, n).permute(0, 3, 2, 1)
            x = x + self.intra_norm(y)
            y = x.permute(0, 2, 3, 1).reshape(b * k, s, n)
            y = self.inter_fc(self.inter(y)[0]).view(b, k, s, n).permute(0, 3, 1, 2)
            return x + self.inter_norm(y)

    class DPRNN(nn.Module):
        def __init__(self, n=32, h=32, enc_k=16, chunk=40, blocks=2, speakers=2):
            super().__init__()
            self.n, self.chunk, self.speakers = n, chunk, speakers
            self.encoder = nn.Conv1d(1, n, enc_k, enc_k // 2, bias=False)
            self.norm = nn.GroupNorm(1, n)
            self.blocks = nn.Sequential(*[DualPathBlock(n, h) for _ in range(blocks)])
            self.mask = nn.Sequential(nn.PReLU(), nn.Conv2d(n, n * speakers, 1))
            self.decoder = nn.ConvTranspose1d(n, 1, enc_k, enc_k // 2, bias=False)

        def forward(self, mix):                                 # (b, 1, t)
            w = F.relu(self.encoder(mix))                       # (b, n, L)
            b, n, length = w.shape
            hop = self.chunk // 2
            rest = (hop - (length % hop)) % hop + hop
            x = F.pad(self.norm(w), (hop, rest))
            padded = x.shape[-1]
            chunks = F.unfold(x.unsqueeze(-1), (self.chunk, 1), stride=(hop, 1))
            chunks = chunks.view(b, n, self.chunk, -1)
            m = self.mask(self.blocks(chunks))                   # (b, n * spk, k, s)
            m = m.reshape(b * self.speakers, n * self.chunk, -1)
            m = F.fold(m, (padded, 1), (self.chunk, 1), stride=(hop, 1))
            m = torch.sigmoid(m.view(b, self.speakers, n, padded)[..., hop:hop + length])
            out = self.decoder((m * w.unsqueeze(1)).view(b * self.speakers, n, length))
            return out.view(b, self.speakers, -1)

    # -- SincNet --------------------------------------------------------------------------
    class SincConv(nn.Module):
        """Band-pass filters from learned low cut-offs and bandwidths, rebuilt on each call:
        the difference of two windowed sincs, mirrored about the centre tap."""

        def __init__(self, out=40, k=101, sr=16000, min_low=50.0, min_band=50.0):
            super().__init__()
            self.out, self.k, self.sr = out, k, sr
            self.min_low, self.min_band = min_low, min_band
            mel = torch.linspace(2595 * math.log10(1 + 30 / 700),
                                 2595 * math.log10(1 + (sr / 2 - min_low - min_band) / 700),
                                 out + 1)
            hz = 700 * (10 ** (mel / 2595) - 1)
            self.low_hz = nn.Parameter(hz[:-1].view(-1, 1))
            self.band_hz = nn.Parameter(torch.diff(hz).view(-1, 1))
            half = torch.linspace(0, (k / 2) - 1, k // 2)
            self.register_buffer("window", 0.54 - 0.46 * torch.cos(2 * math.pi * half / k))
            self.register_buffer("n", 2 * math.pi * torch.arange(-(k - 1) / 2, 0).view(1, -1)
                                 / sr)

        def forward(self, x):
            low = self.min_low + self.low_hz.abs()
            high = (low + self.min_band + self.band_hz.abs()).clamp(self.min_low, self.sr / 2)
            band = (high - low)[:, 0]
            left = (torch.sin(high @ self.n) - torch.sin(low @ self.n)) / (self.n / 2)
            left = left * self.window
            filters = torch.cat([left, 2 * band.view(-1, 1), torch.flip(left, dims=[1])], 1)
            filters = filters / (2 * band[:, None])
            return F.conv1d(x, filters.view(self.out, 1, self.k))

    class ChannelNorm(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.ln = nn.LayerNorm(c)

        def forward(self, x):
            return self.ln(x.transpose(1, 2)).transpose(1, 2)

    class SincNet(nn.Module):
        def __init__(self, filters=40, k=101, c=48, d=128, speakers=50):
            super().__init__()
            self.sinc = SincConv(filters, k)
            self.n0 = ChannelNorm(filters)
            self.convs = nn.Sequential(
                nn.Conv1d(filters, c, 5), nn.MaxPool1d(3), ChannelNorm(c), nn.LeakyReLU(0.2),
                nn.Conv1d(c, c, 5), nn.MaxPool1d(3), ChannelNorm(c), nn.LeakyReLU(0.2))
            self.dvec = nn.Sequential(nn.Linear(c, d), nn.BatchNorm1d(d), nn.LeakyReLU(0.2))
            self.cls = nn.Linear(d, speakers)

        def forward(self, x):                                   # (b, 1, samples)
            x = F.leaky_relu(self.n0(F.max_pool1d(self.sinc(x).abs(), 3)), 0.2)
            return F.log_softmax(self.cls(self.dvec(self.convs(x).mean(2))), -1)

    # -- MAF ------------------------------------------------------------------------------
    class MaskedLinear(nn.Linear):
        def __init__(self, fin, fout, mask):
            super().__init__(fin, fout)
            self.register_buffer("mask", mask)

        def forward(self, x):
            return F.linear(x, self.weight * self.mask, self.bias)

    class MADE(nn.Module):
        """An autoregressive MLP: hidden unit degrees in 1..d-1, each output sees only the
        inputs before it; emits a shift and a log-scale per dimension."""

        def __init__(self, d, hidden, layers=2):
            super().__init__()
            deg_in = torch.arange(1, d + 1)
            degs = [deg_in] + [torch.arange(hidden) % max(d - 1, 1) + 1 for _ in range(layers)]
            mods = []
            for a, b in zip(degs[:-1], degs[1:], strict=True):
                mods += [MaskedLinear(len(a), len(b), (b[:, None] >= a[None, :]).float()),
                         nn.Tanh()]
            out_mask = (deg_in[:, None] > degs[-1][None, :]).float().repeat(2, 1)
            self.net = nn.Sequential(*mods, MaskedLinear(hidden, 2 * d, out_mask))

        def forward(self, x):
            return self.net(x).chunk(2, -1)

    class BatchNormFlow(nn.Module):
        def __init__(self, d, eps=1e-5):
            super().__init__()
            self.eps = eps
            self.log_gamma, self.beta = nn.Parameter(0.1 * torch.randn(d)), nn.Parameter(
                0.1 * torch.randn(d))
            self.register_buffer("mean", 0.1 * torch.randn(d))
            self.register_buffer("var", 1 + 0.2 * torch.rand(d))

        def forward(self, x):
            var = self.var + self.eps
            y = (x - self.mean) / var.sqrt() * torch.exp(self.log_gamma) + self.beta
            return y, (self.log_gamma - 0.5 * torch.log(var)).sum()

    class MAF(nn.Module):
        def __init__(self, d=8, hidden=64, flows=5):
            super().__init__()
            self.d = d
            self.mades = nn.ModuleList([MADE(d, hidden) for _ in range(flows)])
            self.bns = nn.ModuleList([BatchNormFlow(d) for _ in range(flows)])

        def forward(self, x):
            log_det = x.new_zeros(x.shape[0])
            for made, bn in zip(self.mades, self.bns, strict=True):
                mu, alpha = made(x)
                alpha = torch.tanh(alpha)
                x = (x - mu) * torch.exp(-alpha)
                log_det = log_det - alpha.sum(-1)
                x, ld = bn(x)
                log_det = log_det + ld
                x = x.flip(-1)
            return -0.5 * (x ** 2).sum(-1) - 0.5 * self.d * math.log(2 * math.pi) + log_det

    # -- DIEN -----------------------------------------------------------------------------
    class DIEN(nn.Module):
        """Interest extraction by a GRU over the behaviour sequence; target attention over its
        states; interest evolution by an AUGRU whose update gate the attention scales;
        padded steps keep the previous state."""

        def __init__(self, items=5000, cats=100, d=16, hidden=32):
            super().__init__()
            self.hidden = hidden
            self.item, self.cat = nn.Embedding(items, d), nn.Embedding(cats, d)
            self.gru = nn.GRU(2 * d, hidden, batch_first=True)
            self.target = nn.Linear(2 * d, hidden)
            self.att = nn.Sequential(nn.Linear(4 * hidden, 36), nn.Sigmoid(), nn.Linear(36, 1))
            self.w_x, self.w_h = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, 3 * hidden)
            self.mlp = nn.Sequential(nn.Linear(hidden + 4 * d, 80), nn.PReLU(),
                                     nn.Linear(80, 40), nn.PReLU(), nn.Linear(40, 1))

        def forward(self, hist_items, hist_cats, item, cat, lengths):
            e = torch.cat([self.item(hist_items), self.cat(hist_cats)], -1)   # (b, t, 2d)
            tgt = torch.cat([self.item(item), self.cat(cat)], -1)             # (b, 2d)
            b, t, _ = e.shape
            mask = torch.arange(t)[None, :] < lengths[:, None]
            h = self.gru(e)[0]
            q = self.target(tgt).unsqueeze(1).expand_as(h)
            score = self.att(torch.cat([h, q, h * q, h - q], -1)).squeeze(-1)
            a = F.softmax(score.masked_fill(~mask, -1e9), 1)
            s = h.new_zeros(b, self.hidden)
            for i in range(t):
                xr, xu, xn = self.w_x(h[:, i]).chunk(3, -1)
                hr, hu, hn = self.w_h(s).chunk(3, -1)
                r = torch.sigmoid(xr + hr)
                u = a[:, i:i + 1] * torch.sigmoid(xu + hu)
                n = torch.tanh(xn + r * hn)
                s = torch.where(mask[:, i:i + 1], (1 - u) * s + u * n, s)
            pooled = (e * mask.unsqueeze(-1)).sum(1) / lengths.unsqueeze(1)
            return torch.sigmoid(self.mlp(torch.cat([s, tgt, pooled], -1)))

    # -- LISTA ----------------------------------------------------------------------------
    class LISTA(nn.Module):
        """Unrolled ISTA for y ~ D z with a sparse z: a fixed first shrinkage, then learned
        per-layer thresholds; returns the code and its reconstruction."""

        def __init__(self, m=64, n=256, layers=12, lam=0.1):
            super().__init__()
            g = torch.Generator().manual_seed(0)
            dic = torch.randn(m, n, generator=g)
            dic = dic / dic.norm(dim=0, keepdim=True)
            lip = float(torch.linalg.matrix_norm(dic, 2) ** 2)
            self.encode = nn.Linear(m, n, bias=False)
            self.mutual = nn.Linear(n, n, bias=False)
            self.decode = nn.Linear(n, m, bias=False)
            with torch.no_grad():
                self.encode.weight.copy_(dic.t() / lip)
                self.mutual.weight.copy_(torch.eye(n) - dic.t() @ dic / lip)
                self.decode.weight.copy_(dic)
            self.first = nn.Softshrink(lam / lip)
            self.theta = nn.Parameter(torch.full((layers, 1), lam / lip)
                                      * (1 + 0.1 * torch.randn(layers, 1, generator=g)))

        def forward(self, y):
            b = self.encode(y)
            z = self.first(b)
            for k in range(self.theta.shape[0]):
                v = b + self.mutual(z)
                z = torch.sign(v) * F.relu(v.abs() - self.theta[k])
            return torch.cat([z, self.decode(z)], -1)

    # -- DiffPool -------------------------------------------------------------------------
    class DenseGCN(nn.Module):
        def __init__(self, fin, fout):
            super().__init__()
            self.lin = nn.Linear(fin, fout)

        def forward(self, x, adj):
            return F.relu(adj @ self.lin(x))

    class DiffPoolLevel(nn.Module):
        def __init__(self, fin, d, clusters):
            super().__init__()
            self.embed = nn.ModuleList([DenseGCN(fin, d), DenseGCN(d, d)])
            self.pool = nn.ModuleList([DenseGCN(fin, d), nn.Linear(d, clusters)])

        def forward(self, x, adj):
            a = adj + torch.eye(adj.shape[-1])
            dinv = a.sum(-1).rsqrt()
            a = dinv.unsqueeze(-1) * a * dinv.unsqueeze(-2)
            z = self.embed[1](self.embed[0](x, a), a)
            s = F.softmax(a @ self.pool[1](self.pool[0](x, a)), -1)
            st = s.transpose(1, 2)
            link = torch.linalg.matrix_norm(adj - s @ st) / adj.shape[-1] ** 2
            ent = (-s * torch.log(s + 1e-15)).sum(-1).mean(-1)
            return st @ z, st @ adj @ s, link + ent

    class DiffPool(nn.Module):
        def __init__(self, fin=16, d=32, clusters=(16, 4), classes=6):
            super().__init__()
            dims = [fin] + [d] * len(clusters)
            self.levels = nn.ModuleList([DiffPoolLevel(a, d, c) for a, c in
                                         zip(dims[:-1], clusters, strict=True)])
            self.head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, classes))

        def forward(self, x, adj):                               # (b, n, fin), (b, n, n)
            aux = 0
            for level in self.levels:
                x, adj, loss = level(x, adj)
                aux = aux + loss
            return torch.cat([self.head(x.max(1)[0]), aux.unsqueeze(1)], 1)

    # -- NeuralSort LTR -------------------------------------------------------------------
    class NeuralSortRanker(nn.Module):
        """Per-document scores; the relaxed sorting permutation of each list (NeuralSort);
        the expected DCG of the graded relevances under it, normalized by the ideal DCG."""

        def __init__(self, fin=46, hidden=64, tau=1.0):
            super().__init__()
            self.tau = tau
            self.scorer = nn.Sequential(nn.Linear(fin, hidden), nn.ReLU(),
                                        nn.Linear(hidden, hidden), nn.ReLU(),
                                        nn.Linear(hidden, 1))

        def forward(self, features, relevance):                   # (b, n, fin), (b, n)
            s = self.scorer(features)                             # (b, n, 1)
            n = s.shape[1]
            a = (s - s.transpose(1, 2)).abs()
            scaling = (n + 1 - 2 * (torch.arange(n) + 1)).to(s.dtype)
            p_max = (s * scaling - a.sum(-1, keepdim=True)).transpose(1, 2)
            perm = F.softmax(p_max / self.tau, -1)                # row r: who ranks r-th
            gains = torch.exp2(relevance) - 1
            discounts = 1 / torch.log2(torch.arange(n, dtype=s.dtype) + 2)
            dcg = ((perm @ gains.unsqueeze(-1)).squeeze(-1) * discounts).sum(-1)
            idcg = (gains.sort(-1, descending=True)[0] * discounts).sum(-1)
            ndcg = dcg / idcg.clamp(min=1e-6)
            return torch.cat([s.squeeze(-1), ndcg.unsqueeze(-1)], -1)

    # -- Gumbel-softmax dVAE --------------------------------------------------------------
    class GumbelDVAE(nn.Module):
        """Codebook logits per position, Gumbel noise from the given uniforms, a hard
        one-hot with the soft sample's gradient (straight-through), codes mixed from the
        codebook; the reconstruction and the KL to a uniform prior."""

        def __init__(self, c=48, codes=128, d=32, tau=0.9):
            super().__init__()
            self.codes, self.tau = codes, tau
            self.enc = nn.Sequential(nn.Conv2d(3, c, 4, 2, 1), nn.ReLU(),
                                     nn.Conv2d(c, c, 4, 2, 1), nn.ReLU(),
                                     nn.Conv2d(c, codes, 1))
            self.codebook = nn.Embedding(codes, d)
            self.dec = nn.Sequential(nn.Conv2d(d, c, 3, 1, 1), nn.ReLU(),
                                     nn.ConvTranspose2d(c, c, 4, 2, 1), nn.ReLU(),
                                     nn.ConvTranspose2d(c, 3, 4, 2, 1))

        def forward(self, x, u):
            logits = self.enc(x)                                  # (b, codes, h, w)
            g = -torch.log(-torch.log(u.clamp(1e-6, 1 - 1e-6)))
            soft = F.softmax((logits + g) / self.tau, 1)
            hard = torch.zeros_like(soft).scatter_(1, soft.argmax(1, keepdim=True), 1.0)
            z = hard - soft.detach() + soft
            q = torch.einsum("bnhw,nd->bdhw", z, self.codebook.weight)
            recon = torch.sigmoid(self.dec(q))
            log_q = F.log_softmax(logits, 1)
            prior = torch.full_like(log_q, -math.log(self.codes))
            kl = F.kl_div(prior, log_q, reduction="none", log_target=True).sum(1).mean((1, 2))
            return torch.cat([recon.flatten(1), kl.unsqueeze(1)], 1)

    # -- PCEN keyword spotting ------------------------------------------------------------
    class PCEN(nn.Module):
        """Per-channel energy normalization with learned per-channel parameters; the
        smoother is the first-order IIR filter, one step per frame."""

        def __init__(self, mels=40, s=0.04, alpha=0.96, delta=2.0, r=0.5, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.log_s = nn.Parameter(torch.full((mels, 1), math.log(s)))
            self.log_alpha = nn.Parameter(torch.full((mels, 1), math.log(alpha)))
            self.log_delta = nn.Parameter(torch.full((mels, 1), math.log(delta)))
            self.log_r = nn.Parameter(torch.full((mels, 1), math.log(r)))

        def forward(self, e):                                     # (b, mels, t)
            s = torch.exp(self.log_s)[:, 0]
            m = e[..., 0]
            frames = [m]
            for i in range(1, e.shape[-1]):
                m = (1 - s) * m + s * e[..., i]
                frames.append(m)
            smooth = torch.stack(frames, -1)
            alpha, delta, r = (torch.exp(p) for p in (self.log_alpha, self.log_delta,
                                                      self.log_r))
            gain = torch.exp(-alpha * (math.log(self.eps) + torch.log1p(smooth / self.eps)))
            return (e * gain + delta).pow(r) - delta.pow(r)

    class ResBlock(nn.Module):
        def __init__(self, c, dilation):
            super().__init__()
            self.c1 = nn.Conv2d(c, c, 3, padding=dilation, dilation=dilation, bias=False)
            self.c2 = nn.Conv2d(c, c, 3, padding=dilation, dilation=dilation, bias=False)
            self.b1, self.b2 = nn.BatchNorm2d(c, affine=False), nn.BatchNorm2d(c, affine=False)

        def forward(self, x):
            y = self.b1(F.relu(self.c1(x)))
            return F.relu(self.b2(F.relu(self.c2(y))) + x)

    class PCENKWS(nn.Module):
        """PCEN, then a res8-style network: a conv, average pooling, three residual blocks,
        a mean over time and frequency, twelve keyword classes."""

        def __init__(self, mels=40, c=45, classes=12):
            super().__init__()
            self.pcen = PCEN(mels)
            self.conv = nn.Conv2d(1, c, 3, padding=1, bias=False)
            self.pool = nn.AvgPool2d((4, 3))
            self.blocks = nn.Sequential(*[ResBlock(c, 1) for _ in range(3)])
            self.fc = nn.Linear(c, classes)

        def forward(self, x):
            x = self.pool(F.relu(self.conv(self.pcen(x).unsqueeze(1))))
            return self.fc(self.blocks(x).mean((2, 3)))

    # -- DimeNet --------------------------------------------------------------------------
    class BesselBasis(nn.Module):
        def __init__(self, radial=6, cutoff=5.0, p=6):
            super().__init__()
            self.cutoff, self.p = cutoff, p
            self.freq = nn.Parameter(torch.arange(1, radial + 1) * math.pi)

        def forward(self, dist):
            d = (dist / self.cutoff).unsqueeze(-1)
            p = self.p
            a, b, c = -(p + 1) * (p + 2) / 2, p * (p + 2), -p * (p + 1) / 2
            env = 1 / d + a * d ** (p - 1) + b * d ** p + c * d ** (p + 1)
            return env * (d < 1).to(d.dtype) * torch.sin(self.freq * d)

    class Interaction(nn.Module):
        def __init__(self, d, radial, spherical):
            super().__init__()
            self.rbf = nn.Linear(radial, d, bias=False)
            self.sbf = nn.Linear(radial * spherical, d, bias=False)
            self.kj, self.ji = nn.Linear(d, d), nn.Linear(d, d)
            self.out = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, d))

        def forward(self, m, rbf, sbf, kj, ji):
            x_kj = F.silu(self.kj(m)) * self.rbf(rbf)
            x_kj = x_kj[kj] * self.sbf(sbf)
            agg = torch.zeros_like(m).index_add(0, ji, x_kj)
            return m + self.out(F.silu(self.ji(m)) + agg)

    class DimeNetMini(nn.Module):
        """Directional message passing: edge messages updated from the triplets (k -> j ->
        i) through a Bessel radial basis times cos(l * angle), atoms summed from their
        incoming edges."""

        def __init__(self, elements=10, d=64, radial=6, spherical=5, blocks=3, cutoff=5.0):
            super().__init__()
            self.spherical = spherical
            self.atom = nn.Embedding(elements, d)
            self.rbf = BesselBasis(radial, cutoff)
            self.edge = nn.Linear(3 * d, d)
            self.rbf_edge = nn.Linear(radial, d)
            self.blocks = nn.ModuleList([Interaction(d, radial, spherical)
                                         for _ in range(blocks)])
            self.rbf_out = nn.Linear(radial, d, bias=False)
            self.out = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, 1))

        def forward(self, z, pos, edge_index, triplets):
            j, i = edge_index
            vec = pos[i] - pos[j]
            dist = vec.norm(dim=-1)
            rbf = self.rbf(dist)                                  # (E, R)
            kj, ji = triplets
            cos = (vec[ji] * vec[kj]).sum(-1) / (dist[ji] * dist[kj])
            angle = torch.acos(cos.clamp(-1 + 1e-6, 1 - 1e-6))
            ls = torch.arange(self.spherical, dtype=pos.dtype)
            sbf = (torch.cos(angle[:, None] * ls)[:, :, None] * rbf[kj][:, None, :]).flatten(1)
            h = self.atom(z)
            m = F.silu(self.edge(torch.cat([h[i], h[j], F.silu(self.rbf_edge(rbf))], -1)))
            for blk in self.blocks:
                m = blk(m, rbf, sbf, kj, ji)
            atoms = torch.zeros_like(h).index_add(0, i, self.rbf_out(rbf) * m)
            return self.out(atoms)

    # -- inputs ---------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def two_views(b=16, size=32, seed=201):
        def make():
            g = gen(seed)
            x = torch.rand(b, 3, size, size, generator=g)
            return {"y1": x, "y2": (x.flip(-1) + 0.1 * torch.randn(x.shape, generator=g))}
        return make

    def reid_batch(ids=4, per=4, h=64, w=32, seed=202):
        def make():
            g = gen(seed)
            return {"images": torch.rand(ids * per, 3, h, w, generator=g),
                    "labels": torch.arange(ids).repeat_interleave(per)}
        return make

    def behaviours(b=32, t=20, items=5000, cats=100, seed=203):
        def make():
            g = gen(seed)
            return {"hist_items": torch.randint(0, items, (b, t), generator=g),
                    "hist_cats": torch.randint(0, cats, (b, t), generator=g),
                    "item": torch.randint(0, items, (b,), generator=g),
                    "cat": torch.randint(0, cats, (b,), generator=g),
                    "lengths": torch.randint(4, t + 1, (b,), generator=g)}
        return make

    def graphs(b=8, n=48, fin=16, p=0.12, seed=204):
        def make():
            g = gen(seed)
            a = (torch.rand(b, n, n, generator=g) < p).float().triu(1)
            return {"x": torch.randn(b, n, fin, generator=g), "adj": a + a.transpose(1, 2)}
        return make

    def query_lists(b=16, n=30, fin=46, seed=205):
        def make():
            g = gen(seed)
            return {"features": torch.randn(b, n, fin, generator=g),
                    "relevance": torch.randint(0, 5, (b, n), generator=g).float()}
        return make

    def images_noise(b=4, size=32, codes=128, seed=206):
        def make():
            g = gen(seed)
            return {"x": torch.rand(b, 3, size, size, generator=g),
                    "u": torch.rand(b, codes, size // 4, size // 4, generator=g)}
        return make

    def energies(b=8, mels=40, t=98, seed=207):
        def make():
            return {"x": torch.randn(b, mels, t, generator=gen(seed)) ** 2 * 5}
        return make

    def molecule(n=24, elements=10, cutoff=5.0, seed=208):
        def make():
            g = gen(seed)
            pos = torch.randn(n, 3, generator=g) * 1.8
            d = torch.cdist(pos, pos)
            near = (d < cutoff) & ~torch.eye(n, dtype=torch.bool)
            j, i = near.nonzero(as_tuple=True)                    # edge e: j -> i
            edge_of = torch.full((n, n), -1, dtype=torch.long)
            edge_of[j, i] = torch.arange(len(j))
            kj, ji = [], []
            for e in range(len(j)):                               # k -> j feeding j -> i
                for k in near[:, j[e]].nonzero()[:, 0].tolist():
                    if k != int(i[e]):
                        kj.append(int(edge_of[k, j[e]]))
                        ji.append(e)
            return {"z": torch.randint(0, elements, (n,), generator=g), "pos": pos,
                    "edge_index": torch.stack([j, i]), "triplets": torch.tensor([kj, ji])}
        return make

    return {
        "barlow_twins": (BarlowTwins, two_views()),
        "reid_triplet": (ReIDTriplet, reid_batch()),
        "dprnn_sep": (DPRNN, (1, 1, 4000)),
        "sincnet_spk": (SincNet, (2, 1, 3200)),
        "maf_flow": (MAF, (256, 8)),
        "dien_augru": (DIEN, behaviours()),
        "lista_sparse": (LISTA, (128, 64)),
        "diffpool_graph": (DiffPool, graphs()),
        "neuralsort_ltr": (NeuralSortRanker, query_lists()),
        "gumbel_dvae": (GumbelDVAE, images_noise()),
        "pcen_kws": (PCENKWS, energies()),
        "dimenet_mini": (DimeNetMini, molecule()),
    }
