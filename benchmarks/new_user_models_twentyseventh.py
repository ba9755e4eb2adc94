"""The twenty-seventh round of ``bench_new_user_models``: Wide & Deep (a wide part over hashed
crossed features by ``torch.remainder`` and functional ``F.embedding_bag``, age buckets by a
floor division, a deep MLP over embeddings; any batch), a hyperbolic GCN (features mapped into
the Poincare ball by ``tanh`` / ``atanh`` exponential and logarithmic maps, Mobius addition of a
bias, ``acosh`` distances to learned prototypes), an evidential classifier (Dirichlet evidence by
``softplus``, the KL to the uniform Dirichlet by ``lgamma`` / ``digamma``), RCAN (residual groups
of channel-attention blocks, ``PixelShuffle`` upsampling), U^2-Net (residual U-blocks with
``ceil_mode`` max pools, dilated convs and ``bilinear`` upsampling to the skip's size, fused side
outputs), a biaffine dependency parser (a BiLSTM, arc scores by a three-operand ``einsum``,
label scores by ``nn.Bilinear``, padding masked by each sentence's run-time length), an Elman
``nn.RNN`` character LM (two tanh layers, weights tied to the embedding), a keyword spotter
pooling by ``nn.LPPool2d`` (L2 pooling) with ``Softsign`` gates, TransE (translations scored by
``F.pairwise_distance`` with p = 1, a margin against corrupted tails), a minGRU LM (the
log-space parallel scan: ``logcumsumexp`` of ``softplus`` / ``logaddexp`` terms over a run-time
length), DreamerV3-style heads (``symlog`` inputs by ``sign`` / ``log1p``, a straight-through
categorical latent by ``argmax`` + ``one_hot``, a two-hot reward read back by ``expm1``) and a
SAITS-style imputer (missing values given as NaN, found by ``torch.isnan``, zeroed by
``torch.nan_to_num``, diagonally masked self-attention). Kept apart so the main script stays
readable."""

from __future__ import annotations

import math


def twentyseventh_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- Wide & Deep ----------------------------------------------------------------------
    class WideDeep(nn.Module):
        """Cheng et al. 2016: a linear model over sparse and crossed categorical features (the
        crosses hashed into ``buckets`` rows, summed by ``embedding_bag``) plus an MLP over
        dense embeddings and numeric features, added before the sigmoid."""

        def __init__(self, cards=(1000, 500, 50, 20), dim=16, buckets=4096, hidden=(128, 64),
                     numeric=4, age_bins=10):
            super().__init__()
            self.cards, self.buckets, self.age_bins = cards, buckets, age_bins
            self.wide = nn.Parameter(torch.randn(buckets + sum(cards) + age_bins, 1) * 0.05)
            offs = [0]
            for c in cards[:-1]:
                offs.append(offs[-1] + c)
            self.register_buffer("offsets", torch.tensor(offs).view(1, -1))
            self.embeds = nn.ModuleList([nn.Embedding(c, dim) for c in cards])
            self.age_embed = nn.Embedding(age_bins, dim)
            dims = [dim * (len(cards) + 1) + numeric] + list(hidden)
            layers = []
            for a, b in zip(dims[:-1], dims[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            self.deep = nn.Sequential(*layers, nn.Linear(dims[-1], 1))

        def forward(self, cats, age, numeric):                     # (b, f) int, (b,), (b, n)
            age_bin = torch.div(age.clamp(0, 99), 10, rounding_mode="floor")
            # crossed features (i x j for neighbouring fields), hashed into the wide table
            crosses = [torch.remainder(cats[:, i] * 7919 + cats[:, i + 1] * 104729,
                                       self.buckets) for i in range(cats.shape[1] - 1)]
            crosses.append(torch.remainder(cats[:, 0] * 31 + age_bin, self.buckets))
            base = self.buckets
            ids = torch.cat([torch.stack(crosses, 1), cats + self.offsets + base,
                             (age_bin + base + sum(self.cards)).unsqueeze(1)], 1)
            wide = F.embedding_bag(ids, self.wide, mode="sum")
            emb = [e(cats[:, i]) for i, e in enumerate(self.embeds)] + [self.age_embed(age_bin)]
            deep = self.deep(torch.cat(emb + [numeric], 1))
            return torch.sigmoid(wide + deep).squeeze(-1)

    # -- hyperbolic GCN -------------------------------------------------------------------
    def artanh(x):
        return torch.atanh(x.clamp(-1 + 1e-5, 1 - 1e-5))

    def expmap0(v, c):
        sc = math.sqrt(c)
        n = v.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        return torch.tanh(sc * n) * v / (sc * n)

    def logmap0(y, c):
        sc = math.sqrt(c)
        n = y.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        return artanh(sc * n) * y / (sc * n)

    def mobius_add(x, y, c):
        xy = (x * y).sum(-1, keepdim=True)
        x2, y2 = (x * x).sum(-1, keepdim=True), (y * y).sum(-1, keepdim=True)
        num = (1 + 2 * c * xy + c * y2) * x + (1 - c * x2) * y
        return num / (1 + 2 * c * xy + c * c * x2 * y2).clamp_min(1e-6)

    def project(x, c):
        maxn = (1 - 1e-3) / math.sqrt(c)
        n = x.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        return torch.where(n > maxn, x / n * maxn, x)

    class HypLayer(nn.Module):
        """Chami et al. 2019: a hyperbolic linear map (via the tangent space at 0), a Mobius
        bias, aggregation by the normalized adjacency in the tangent space, a tangent ReLU."""

        def __init__(self, cin, cout, c):
            super().__init__()
            self.c = c
            self.lin = nn.Linear(cin, cout, bias=False)
            self.bias = nn.Parameter(torch.randn(cout) * 0.01)

        def forward(self, x, adj):                                  # x on the ball
            c = self.c
            h = project(expmap0(self.lin(logmap0(x, c)), c), c)
            h = project(mobius_add(h, expmap0(self.bias, c), c), c)
            t = adj @ logmap0(h, c)
            return project(expmap0(F.relu(t), c), c)

    class HGCN(nn.Module):
        def __init__(self, fin=16, hidden=32, layers=2, classes=5, c=1.0):
            super().__init__()
            self.c = c
            dims = [fin] + [hidden] * layers
            self.layers = nn.ModuleList([HypLayer(a, b, c) for a, b in zip(dims[:-1], dims[1:])])
            self.protos = nn.Parameter(torch.randn(classes, hidden) * 0.1)

        def forward(self, x, adj):                                  # (b, n, f), (b, n, n)
            deg = adj.sum(-1, keepdim=True).clamp_min(1.0)
            a = adj / deg
            h = project(expmap0(x, self.c), self.c)
            for layer in self.layers:
                h = layer(h, a)
            p = project(expmap0(self.protos, self.c), self.c)
            # Poincare distance to each class prototype: acosh(1 + 2|x-p|^2 / ((1-|x|^2)(1-|p|^2)))
            diff = (h.unsqueeze(-2) - p).pow(2).sum(-1)
            hn = (1 - h.pow(2).sum(-1, keepdim=True)).clamp_min(1e-5)
            pn = (1 - p.pow(2).sum(-1)).clamp_min(1e-5)
            dist = torch.acosh(1 + 2 * diff / (hn * pn))
            return -dist                                            # (b, n, classes) logits

    # -- evidential classifier ------------------------------------------------------------
    class Evidential(nn.Module):
        """Sensoy et al. 2018: a conv net whose outputs are Dirichlet evidence; returns the
        expected class probabilities, the uncertainty K / S, and the KL divergence of the
        evidence-stripped Dirichlet from the uniform one (the regularizer, by lgamma and
        digamma), per image."""

        def __init__(self, width=32, classes=10):
            super().__init__()
            self.k = classes
            self.body = nn.Sequential(
                nn.Conv2d(1, width, 5), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(width, 2 * width, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                nn.Linear(2 * width * 16, 128), nn.ReLU(), nn.Linear(128, classes))

        def forward(self, x, target):                               # (b, 1, 28, 28), (b, K)
            alpha = F.softplus(self.body(x)) + 1
            s = alpha.sum(-1, keepdim=True)
            prob = alpha / s
            uncert = self.k / s
            at = target + (1 - target) * alpha                      # evidence of the truth removed
            st = at.sum(-1, keepdim=True)
            kl = (torch.lgamma(st) - math.lgamma(self.k) - torch.lgamma(at).sum(-1, keepdim=True)
                  + ((at - 1) * (torch.digamma(at) - torch.digamma(st))).sum(-1, keepdim=True))
            return torch.cat([prob, uncert, kl], -1)

    # -- RCAN -----------------------------------------------------------------------------
    class CALayer(nn.Module):
        def __init__(self, c, r=8):
            super().__init__()
            self.att = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, c // r, 1), nn.ReLU(),
                                     nn.Conv2d(c // r, c, 1), nn.Sigmoid())

        def forward(self, x):
            return x * self.att(x)

    class RCAB(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1), nn.ReLU(),
                                      nn.Conv2d(c, c, 3, 1, 1), CALayer(c))

        def forward(self, x):
            return x + self.body(x)

    class RCAN(nn.Module):
        """Zhang et al. 2018: residual-in-residual groups of channel-attention blocks, a long
        skip, then x``scale`` by a conv and ``PixelShuffle``; mean shift in and out."""

        def __init__(self, width=32, groups=2, blocks=3, scale=2):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.4488, 0.4371, 0.4040]).view(1, 3, 1, 1))
            self.head = nn.Conv2d(3, width, 3, 1, 1)
            self.groups = nn.ModuleList([nn.Sequential(*[RCAB(width) for _ in range(blocks)],
                                                       nn.Conv2d(width, width, 3, 1, 1))
                                         for _ in range(groups)])
            self.body_end = nn.Conv2d(width, width, 3, 1, 1)
            self.up = nn.Sequential(nn.Conv2d(width, width * scale * scale, 3, 1, 1),
                                    nn.PixelShuffle(scale), nn.Conv2d(width, 3, 3, 1, 1))

        def forward(self, x):
            h = self.head(x - self.mean)
            r = h
            for g in self.groups:
                r = r + g(r)
            h = h + self.body_end(r)
            return self.up(h) + self.mean

    # -- U^2-Net --------------------------------------------------------------------------
    class CBR(nn.Module):
        def __init__(self, cin, cout, d=1):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, 3, 1, d, dilation=d)
            self.bn = nn.BatchNorm2d(cout)

        def forward(self, x):
            return F.relu(self.bn(self.conv(x)))

    def up_to(x, ref):
        return F.interpolate(x, size=ref.shape[2:], mode="bilinear", align_corners=False)

    class RSU(nn.Module):
        """Qin et al. 2020: a residual U-block: an input conv, an encoder of ``depth`` levels
        (ceil-mode max pools, so odd sizes round up), a dilated bottom, a decoder
        concatenating the skips, added to the input conv's output."""

        def __init__(self, cin, mid, cout, depth):
            super().__init__()
            self.inp = CBR(cin, cout)
            self.enc = nn.ModuleList([CBR(cout if i == 0 else mid, mid) for i in range(depth)])
            self.bottom = CBR(mid, mid, d=2)
            self.dec = nn.ModuleList([CBR(2 * mid, cout if i == depth - 1 else mid)
                                      for i in range(depth)])

        def forward(self, x):
            hin = self.inp(x)
            skips, h = [], hin
            for i, enc in enumerate(self.enc):
                h = enc(h)
                skips.append(h)
                if i < len(self.enc) - 1:
                    h = F.max_pool2d(h, 2, 2, ceil_mode=True)
            h = self.bottom(h)
            for i, dec in enumerate(self.dec):
                s = skips[-1 - i]
                h = dec(torch.cat([up_to(h, s), s], 1))
            return h + hin

    class U2Net(nn.Module):
        def __init__(self, width=8, mid=16, depths=(4, 3, 2)):
            super().__init__()
            c = [width * 2 ** i for i in range(len(depths))]
            cins = [3] + c[:-1]
            self.enc = nn.ModuleList([RSU(a, mid, b, d) for a, b, d in zip(cins, c, depths)])
            self.dec = nn.ModuleList([RSU(c[i + 1] + c[i], mid, c[i], depths[i])
                                      for i in range(len(depths) - 1)])
            self.side = nn.ModuleList([nn.Conv2d(ci, 1, 3, 1, 1) for ci in c])
            self.fuse = nn.Conv2d(len(depths), 1, 1)

        def forward(self, x):
            feats, h = [], x
            for i, enc in enumerate(self.enc):
                h = enc(h)
                feats.append(h)
                if i < len(self.enc) - 1:
                    h = F.max_pool2d(h, 2, 2, ceil_mode=True)
            sides = [self.side[-1](h)]
            for i in reversed(range(len(self.dec))):
                h = self.dec[i](torch.cat([up_to(h, feats[i]), feats[i]], 1))
                sides.append(self.side[i](h))
            sides = [up_to(s, x) for s in sides]
            fused = self.fuse(torch.cat(sides, 1))
            return torch.sigmoid(torch.cat([fused] + sides, 1))

    # -- biaffine dependency parser -------------------------------------------------------
    class Biaffine(nn.Module):
        """Dozat & Manning 2017: a BiLSTM over word + tag embeddings; arc scores
        s[i, j] = h_dep_i U h_head_j + h_head_j . u by a three-operand einsum, label scores
        for every token's gold-free best head by ``nn.Bilinear``; padded heads masked by each
        sentence's length."""

        def __init__(self, words=3000, tags=40, dim=64, hidden=64, arc=64, lab=32, labels=12):
            super().__init__()
            self.wemb, self.temb = nn.Embedding(words, dim), nn.Embedding(tags, dim // 2)
            self.lstm = nn.LSTM(dim + dim // 2, hidden, batch_first=True, bidirectional=True)
            self.arc_dep, self.arc_head = nn.Linear(2 * hidden, arc), nn.Linear(2 * hidden, arc)
            self.lab_dep, self.lab_head = nn.Linear(2 * hidden, lab), nn.Linear(2 * hidden, lab)
            self.u = nn.Parameter(torch.randn(arc, arc) * 0.05)
            self.u_bias = nn.Parameter(torch.randn(arc) * 0.05)
            self.label = nn.Bilinear(lab, lab, labels)

        def forward(self, words, tags, lengths):                    # (b, n), (b, n), (b,)
            n = words.shape[1]
            h, _ = self.lstm(torch.cat([self.wemb(words), self.temb(tags)], -1))
            dep, head = F.elu(self.arc_dep(h)), F.elu(self.arc_head(h))
            arc = torch.einsum("bia,ac,bjc->bij", dep, self.u, head) + \
                (head @ self.u_bias).unsqueeze(1)
            valid = torch.arange(n).unsqueeze(0) < lengths.unsqueeze(1)        # (b, n)
            arc = arc.masked_fill(~valid.unsqueeze(1), -1e9)
            arc_logp = arc.log_softmax(-1)
            best = arc_logp.argmax(-1)                                           # (b, n)
            ld, lh = F.elu(self.lab_dep(h)), F.elu(self.lab_head(h))
            lh_best = torch.gather(lh, 1, best.unsqueeze(-1).expand(-1, -1, lh.shape[-1]))
            lab = self.label(ld, lh_best).log_softmax(-1)
            return torch.cat([arc_logp.amax(-1, keepdim=True), lab], -1) * \
                valid.unsqueeze(-1).float()

    # -- Elman RNN LM ---------------------------------------------------------------------
    class ElmanLM(nn.Module):
        """A character LM on the plain (tanh) ``nn.RNN``, two layers, decoder tied to the
        embedding; returns the next-character log-probabilities."""

        def __init__(self, vocab=96, dim=128, layers=2):
            super().__init__()
            self.emb = nn.Embedding(vocab, dim)
            self.rnn = nn.RNN(dim, dim, layers, batch_first=True, nonlinearity="tanh")
            self.out = nn.Linear(dim, vocab)
            self.out.weight = self.emb.weight

        def forward(self, chars):                                   # (b, t) int
            h, _ = self.rnn(self.emb(chars))
            return self.out(h).log_softmax(-1)

    # -- LPPool keyword spotter -----------------------------------------------------------
    class LPKWS(nn.Module):
        """A small keyword spotter over log-mel patches whose down-sampling is L2 pooling
        (``nn.LPPool2d``, norm 2: the root of the summed squares of each window), a
        ``Softsign`` gate on each block's residual, a final L2 pool over time."""

        def __init__(self, width=32, blocks=3, keywords=12):
            super().__init__()
            self.stem = nn.Conv2d(1, width, 3, 1, 1)
            self.blocks = nn.ModuleList([nn.Sequential(nn.Conv2d(width, width, 3, 1, 1),
                                                       nn.BatchNorm2d(width), nn.ReLU(),
                                                       nn.Conv2d(width, width, 3, 1, 1),
                                                       nn.BatchNorm2d(width))
                                         for _ in range(blocks)])
            self.gates = nn.ModuleList([nn.Conv2d(width, width, 1) for _ in range(blocks)])
            self.pool = nn.LPPool2d(2, 2, 2)
            self.head = nn.Linear(width, keywords)

        def forward(self, mel):                                     # (b, 1, mels, frames)
            h = F.relu(self.stem(mel))
            for blk, gate in zip(self.blocks, self.gates):
                r = blk(h)
                h = self.pool(F.relu(h + r * F.softsign(gate(r))))
            t = F.lp_pool1d(h.mean(2), 2, h.shape[-1])              # (b, c, 1)
            return self.head(t.squeeze(-1))

    # -- TransE ---------------------------------------------------------------------------
    class TransE(nn.Module):
        """Bordes et al. 2013: score = -|| h + r - t ||_1 by ``F.pairwise_distance``; the
        first tail of each row is the true one, the rest corrupted; returns the scores and
        each row's margin ranking loss."""

        def __init__(self, entities=5000, relations=100, dim=100, margin=1.0):
            super().__init__()
            self.margin = margin
            self.ent, self.rel = nn.Embedding(entities, dim), nn.Embedding(relations, dim)
            nn.init.uniform_(self.ent.weight, -6 / math.sqrt(dim), 6 / math.sqrt(dim))
            nn.init.uniform_(self.rel.weight, -6 / math.sqrt(dim), 6 / math.sqrt(dim))

        def forward(self, head, rel, tails):                        # (b,), (b,), (b, k) int
            e = F.normalize(self.ent(head), dim=-1)
            q = (e + self.rel(rel)).unsqueeze(1).expand(-1, tails.shape[1], -1)
            t = F.normalize(self.ent(tails), dim=-1)
            score = -F.pairwise_distance(q, t, p=1.0)               # (b, k)
            loss = F.relu(self.margin - score[:, :1] + score[:, 1:]).mean(-1, keepdim=True)
            return torch.cat([score, loss], -1)

    # -- minGRU ---------------------------------------------------------------------------
    def log_g(x):
        return torch.where(x >= 0, torch.log(F.relu(x) + 0.5), -F.softplus(-x))

    class MinGRU(nn.Module):
        """Feng et al. 2024: h_t = (1 - z_t) h_{t-1} + z_t g(h~_t), gates from x_t only, so the
        recurrence is a parallel scan; done in log space (Heinsen):
        log h = a* + logcumsumexp(log b - a*), a* = cumsum(log(1 - z))."""

        def __init__(self, dim, expand=2):
            super().__init__()
            self.hid = nn.Linear(dim, dim * expand * 2)
            self.out = nn.Linear(dim * expand, dim)

        def forward(self, x):                                       # (b, t, d)
            hidden, gate = self.hid(x).chunk(2, -1)
            log_coeff = -F.softplus(gate)                           # log(1 - z)
            log_z = -F.softplus(-gate)                              # log z
            log_vals = log_z + log_g(hidden)
            a_star = torch.cumsum(log_coeff, 1)
            log_h = a_star + torch.logcumsumexp(log_vals - a_star, 1)
            return self.out(torch.exp(log_h))

    class MinGRULM(nn.Module):
        def __init__(self, vocab=512, dim=64, layers=3):
            super().__init__()
            self.emb = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleList([MinGRU(dim) for _ in range(layers)])
            self.norms = nn.ModuleList([nn.LayerNorm(dim) for _ in range(layers)])
            self.head = nn.Linear(dim, vocab)

        def forward(self, tokens):                                  # (b, t) int
            x = self.emb(tokens)
            for norm, layer in zip(self.norms, self.layers):
                x = x + layer(norm(x))
            # a log-space mix with a uniform prior over the vocabulary (label smoothing at
            # inference): log(0.9 p + 0.1 / V) by logaddexp
            logp = self.head(x).log_softmax(-1)
            return torch.logaddexp(logp + math.log(0.9),
                                   torch.full_like(logp, math.log(0.1 / logp.shape[-1])))

    # -- DreamerV3 heads ------------------------------------------------------------------
    def symlog(x):
        return torch.sign(x) * torch.log1p(x.abs())

    def symexp(x):
        return torch.sign(x) * torch.expm1(x.abs())

    class DreamerHeads(nn.Module):
        """Hafner et al. 2023: observations squashed by symlog, an MLP (LayerNorm + SiLU)
        encoder, a discrete latent of ``groups`` categoricals sampled greedily with a
        straight-through one-hot (a 1 % uniform mix in the probabilities), a recurrent-free
        posterior readout, the reward as a softmax over symexp-spaced bins and the
        observation decoded back by symexp."""

        def __init__(self, obs=24, hidden=128, groups=8, classes=8, bins=41):
            super().__init__()
            self.g, self.k = groups, classes
            self.enc = nn.Sequential(nn.Linear(obs, hidden), nn.LayerNorm(hidden), nn.SiLU(),
                                     nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.SiLU(),
                                     nn.Linear(hidden, groups * classes))
            self.dec = nn.Sequential(nn.Linear(groups * classes, hidden), nn.LayerNorm(hidden),
                                     nn.SiLU(), nn.Linear(hidden, obs))
            self.rew = nn.Sequential(nn.Linear(groups * classes, hidden), nn.SiLU(),
                                     nn.Linear(hidden, bins))
            self.register_buffer("bins", torch.linspace(-20.0, 20.0, bins))

        def forward(self, obs):                                     # (b, obs)
            logits = self.enc(symlog(obs)).view(-1, self.g, self.k)
            probs = 0.99 * logits.softmax(-1) + 0.01 / self.k
            onehot = F.one_hot(probs.argmax(-1), self.k).to(probs.dtype)
            z = (onehot + probs - probs.detach()).flatten(1)        # straight-through
            recon = symexp(self.dec(z))
            reward = symexp((self.rew(z).softmax(-1) * self.bins).sum(-1, keepdim=True))
            return torch.cat([recon, reward, probs.flatten(1)], -1)

    # -- SAITS-style imputer --------------------------------------------------------------
    class DMSA(nn.Module):
        """Diagonally masked self-attention: no step attends to itself."""

        def __init__(self, dim, heads):
            super().__init__()
            self.h = heads
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
            self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.h)
            eye = torch.eye(t, dtype=torch.bool)
            att = att.masked_fill(eye, float("-inf")).softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, d)
            x = self.n1(x + self.proj(y))
            return self.n2(x + self.ff(x))

    class SAITS(nn.Module):
        """Du et al. 2023 (one DMSA block per stage): missing values arrive as NaN; the mask is
        ~isnan, values are ``nan_to_num``-ed, two stages of diagonally masked attention give
        two estimates mixed by weights learned from the mask and the attention input; the
        output keeps the observed values and fills the rest."""

        def __init__(self, feats=12, dim=64, heads=4, steps=48):
            super().__init__()
            self.pos = nn.Parameter(torch.randn(1, steps, dim) * 0.02)
            self.in1, self.in2 = nn.Linear(2 * feats, dim), nn.Linear(2 * feats, dim)
            self.b1, self.b2 = DMSA(dim, heads), DMSA(dim, heads)
            self.out1, self.out2 = nn.Linear(dim, feats), nn.Linear(dim, feats)
            self.mix = nn.Linear(2 * feats, feats)

        def forward(self, x):                                       # (b, t, f) with NaNs
            t = x.shape[1]
            mask = (~torch.isnan(x)).to(x.dtype)
            x0 = torch.nan_to_num(x, nan=0.0)
            h1 = self.b1(self.in1(torch.cat([x0, mask], -1)) + self.pos[:, :t])
            est1 = self.out1(h1)
            x1 = mask * x0 + (1 - mask) * est1
            h2 = self.b2(self.in2(torch.cat([x1, mask], -1)) + self.pos[:, :t])
            est2 = self.out2(h2)
            w = torch.sigmoid(self.mix(torch.cat([mask, est1], -1)))
            est = w * est1 + (1 - w) * est2
            return mask * x0 + (1 - mask) * est

    # -- inputs ---------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def ctr(b=256, cards=(1000, 500, 50, 20), numeric=4, seed=271):
        def make():
            g = gen(seed)
            cats = torch.stack([torch.randint(0, c, (b,), generator=g) for c in cards], 1)
            return {"cats": cats, "age": torch.randint(0, 110, (b,), generator=g),
                    "numeric": torch.randn(b, numeric, generator=g)}
        return make

    def graphs(b=4, n=64, f=16, seed=272):
        def make():
            g = gen(seed)
            a = (torch.rand(b, n, n, generator=g) < 0.08).float()
            a = torch.triu(a, 1)
            a = a + a.transpose(1, 2) + torch.eye(n)
            return {"x": torch.randn(b, n, f, generator=g) * 0.3, "adj": a}
        return make

    def digits(b=16, classes=10, seed=273):
        def make():
            g = gen(seed)
            y = torch.randint(0, classes, (b,), generator=g)
            return {"x": torch.rand(b, 1, 28, 28, generator=g),
                    "target": F.one_hot(y, classes).float()}
        return make

    def sentences(b=8, n=24, words=3000, tags=40, seed=274):
        def make():
            g = gen(seed)
            lengths = torch.randint(n // 2, n + 1, (b,), generator=g)
            lengths[0] = n
            return {"words": torch.randint(0, words, (b, n), generator=g),
                    "tags": torch.randint(0, tags, (b, n), generator=g), "lengths": lengths}
        return make

    def tokens(b, t, vocab, seed):
        def make():
            return {"chars": torch.randint(0, vocab, (b, t), generator=gen(seed))}
        return make

    def triples(b=64, k=32, entities=5000, relations=100, seed=276):
        def make():
            g = gen(seed)
            return {"head": torch.randint(0, entities, (b,), generator=g),
                    "rel": torch.randint(0, relations, (b,), generator=g),
                    "tails": torch.randint(0, entities, (b, k + 1), generator=g)}
        return make

    def observations(b=64, obs=24, seed=277):
        def make():
            g = gen(seed)
            return {"obs": torch.randn(b, obs, generator=g) * torch.tensor([0.1, 1.0, 30.0]
                                                                            ).repeat(8)}
        return make

    def gappy(b=16, t=48, f=12, seed=278):
        def make():
            g = gen(seed)
            x = torch.sin(torch.arange(t).float().view(1, t, 1) / 4 +
                          torch.rand(b, 1, f, generator=g) * 6) + \
                0.1 * torch.randn(b, t, f, generator=g)
            missing = torch.rand(b, t, f, generator=g) < 0.2
            return {"x": x.masked_fill(missing, float("nan"))}
        return make

    return {
        "wide_deep_ctr": (WideDeep, ctr()),
        "hgcn_poincare": (HGCN, graphs()),
        "evidential_dirichlet": (Evidential, digits()),
        "rcan_sr": (RCAN, (1, 3, 48, 48)),
        "u2net_rsu": (U2Net, (1, 3, 75, 75)),
        "biaffine_parser": (Biaffine, sentences()),
        "elman_rnn_lm": (ElmanLM, tokens(8, 64, 96, 275)),
        "lppool_kws": (LPKWS, (8, 1, 40, 64)),
        "transe_kg": (TransE, triples()),
        "mingru_lm": (MinGRULM, lambda: {"tokens": torch.randint(0, 512, (8, 64),
                                                                 generator=gen(279))}),
        "dreamer_symlog": (DreamerHeads, observations()),
        "saits_nan_impute": (SAITS, gappy()),
    }
