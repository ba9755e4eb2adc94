"""The twenty-eighth round of ``bench_new_user_models``: VAN (large-kernel attention: a 5x5
depthwise conv, a 7x7 depthwise conv of dilation 3 and a 1x1, multiplied into the input),
FocalNet (focal modulation: hierarchical depthwise contexts gated and summed with a global one,
``torch.split`` into query / context / gates), HorNet (``gnConv``: recursive gated convolutions
over channel splits of growing width), CaiT (talking-heads attention mixing heads by linear maps
before and after the softmax, LayerScale, class-attention layers), R-GCN (relation weights from
a basis decomposition by ``einsum``, per-relation normalized adjacencies, a DistMult decoder),
an MPNN (an edge network ``NNConv`` whose messages are per-edge matrices by ``bmm``,
``index_add`` aggregation, a ``GRUCell`` update, a ``Set2Set`` readout with an ``LSTMCell``),
AFM + NFM (attentional pairwise interactions of field embeddings indexed by
``torch.triu_indices``, bi-interaction pooling), iTransformer with RevIN (variates as tokens,
reversible instance normalization), CREPE (tall ``(512, 1)`` convolutions over 1024-sample
frames, a 360-bin pitch salience decoded by a local weighted average around the ``argmax``),
a deep-ensemble acquisition head (members as batched ``baddbmm``, expected improvement by
``torch.special.ndtr``, log probability of improvement by ``log_ndtr``), a DARTS supernet
(softmax-weighted mixed ops over separable / dilated convs, pools, skip and zero, a
factorized reduction) and a VAE with amortized planar flows (the ``u_hat`` invertibility fix,
log-determinants, an ELBO by ``binary_cross_entropy_with_logits``). Kept apart so the main
script stays readable."""

from __future__ import annotations

import math


def twentyeighth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- VAN (large-kernel attention) -------------------------------------------------------
    class LKA(nn.Module):
        """Guo et al. 2022: a 21x21-ish receptive field from a 5x5 depthwise conv, a 7x7
        depthwise conv of dilation 3 and a 1x1 conv; the result gates the input."""

        def __init__(self, c):
            super().__init__()
            self.dw = nn.Conv2d(c, c, 5, padding=2, groups=c)
            self.dwd = nn.Conv2d(c, c, 7, padding=9, dilation=3, groups=c)
            self.pw = nn.Conv2d(c, c, 1)

        def forward(self, x):
            return x * self.pw(self.dwd(self.dw(x)))

    class VANBlock(nn.Module):
        def __init__(self, c, ratio=4):
            super().__init__()
            self.n1, self.n2 = nn.BatchNorm2d(c), nn.BatchNorm2d(c)
            self.attn = nn.Sequential(nn.Conv2d(c, c, 1), nn.GELU(), LKA(c), nn.Conv2d(c, c, 1))
            self.mlp = nn.Sequential(nn.Conv2d(c, c * ratio, 1),
                                     nn.Conv2d(c * ratio, c * ratio, 3, 1, 1, groups=c * ratio),
                                     nn.GELU(), nn.Conv2d(c * ratio, c, 1))
            self.g1 = nn.Parameter(torch.full((c, 1, 1), 0.1))
            self.g2 = nn.Parameter(torch.full((c, 1, 1), 0.1))

        def forward(self, x):
            x = x + self.g1 * self.attn(self.n1(x))
            return x + self.g2 * self.mlp(self.n2(x))

    class VAN(nn.Module):
        def __init__(self, dims=(32, 64, 128), depths=(2, 2, 2), classes=100):
            super().__init__()
            stages, cin = [], 3
            for i, (d, n) in enumerate(zip(dims, depths)):
                k, s = (7, 4) if i == 0 else (3, 2)
                stages += [nn.Conv2d(cin, d, k, s, k // 2), nn.BatchNorm2d(d)]
                stages += [VANBlock(d) for _ in range(n)]
                cin = d
            self.body = nn.Sequential(*stages)
            self.norm = nn.LayerNorm(cin)
            self.head = nn.Linear(cin, classes)

        def forward(self, x):
            return self.head(self.norm(self.body(x).mean((2, 3))))

    # -- FocalNet -------------------------------------------------------------------------
    class FocalModulation(nn.Module):
        """Yang et al. 2022: q, a context and L + 1 gates from one linear map; contexts of
        growing depthwise kernels, each gated; plus a gated global context; q times the 1x1
        projected sum."""

        def __init__(self, dim, levels=3, k0=3):
            super().__init__()
            self.levels = levels
            self.f = nn.Linear(dim, 2 * dim + levels + 1)
            self.h = nn.Conv2d(dim, dim, 1)
            self.proj = nn.Linear(dim, dim)
            self.ctx = nn.ModuleList([
                nn.Sequential(nn.Conv2d(dim, dim, k0 + 2 * i, 1, (k0 + 2 * i) // 2, groups=dim,
                                        bias=False), nn.GELU()) for i in range(levels)])

        def forward(self, x):                                       # (b, h, w, c)
            c = x.shape[-1]
            q, ctx, gates = torch.split(self.f(x).permute(0, 3, 1, 2), (c, c, self.levels + 1), 1)
            total = 0
            for i, layer in enumerate(self.ctx):
                ctx = layer(ctx)
                total = total + ctx * gates[:, i:i + 1]
            glob = F.gelu(ctx.mean((2, 3), keepdim=True))
            total = total + glob * gates[:, self.levels:]
            return self.proj((q * self.h(total)).permute(0, 2, 3, 1))

    class FocalBlock(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.mod = FocalModulation(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.g1 = nn.Parameter(torch.full((dim,), 0.1))
            self.g2 = nn.Parameter(torch.full((dim,), 0.1))

        def forward(self, x):                                       # channels last
            x = x + self.g1 * self.mod(self.n1(x))
            return x + self.g2 * self.mlp(self.n2(x))

    class FocalNet(nn.Module):
        def __init__(self, dims=(32, 64, 128), depths=(1, 2, 1), classes=100):
            super().__init__()
            self.downs = nn.ModuleList([nn.Conv2d(3 if i == 0 else dims[i - 1], d,
                                                  4 if i == 0 else 2, 4 if i == 0 else 2)
                                        for i, d in enumerate(dims)])
            self.dnorms = nn.ModuleList([nn.LayerNorm(d) for d in dims])
            self.stages = nn.ModuleList([nn.Sequential(*[FocalBlock(d) for _ in range(n)])
                                         for d, n in zip(dims, depths)])
            self.norm = nn.LayerNorm(dims[-1])
            self.head = nn.Linear(dims[-1], classes)

        def forward(self, x):
            for down, dn, stage in zip(self.downs, self.dnorms, self.stages):
                x = stage(dn(down(x).permute(0, 2, 3, 1))).permute(0, 3, 1, 2)
            return self.head(self.norm(x.mean((2, 3))))

    # -- HorNet ---------------------------------------------------------------------------
    class GnConv(nn.Module):
        """Rao et al. 2022: order-n recursive gating: a 1x1 conv gives p0 and the n depthwise-
        convolved gates q_k of widths C/2^(n-1) .. C; p_{k+1} = f_k(p_k) * q_k."""

        def __init__(self, dim, order):
            super().__init__()
            self.dims = [dim // 2 ** i for i in range(order)][::-1]
            self.proj_in = nn.Conv2d(dim, 2 * dim, 1)
            self.dw = nn.Conv2d(sum(self.dims), sum(self.dims), 7, 1, 3, groups=sum(self.dims))
            self.pws = nn.ModuleList([nn.Conv2d(self.dims[i], self.dims[i + 1], 1)
                                      for i in range(order - 1)])
            self.proj_out = nn.Conv2d(dim, dim, 1)

        def forward(self, x):
            pwa, abc = torch.split(self.proj_in(x), (self.dims[0], sum(self.dims)), 1)
            gates = torch.split(self.dw(abc) / 3.0, self.dims, 1)
            x = pwa * gates[0]
            for pw, g in zip(self.pws, gates[1:]):
                x = pw(x) * g
            return self.proj_out(x)

    class LayerNorm2d(nn.Module):
        """LayerNorm over the channels of an NCHW map, written out (as HorNet does)."""

        def __init__(self, c, eps=1e-6):
            super().__init__()
            self.w, self.b, self.eps = nn.Parameter(torch.ones(c)), nn.Parameter(torch.zeros(c)), eps

        def forward(self, x):
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.eps)
            return self.w[:, None, None] * x + self.b[:, None, None]

    class HorBlock(nn.Module):
        def __init__(self, dim, order):
            super().__init__()
            self.n1, self.n2 = LayerNorm2d(dim), nn.LayerNorm(dim, eps=1e-6)
            self.gn = GnConv(dim, order)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.g1 = nn.Parameter(torch.full((dim, 1, 1), 0.1))
            self.g2 = nn.Parameter(torch.full((dim,), 0.1))

        def forward(self, x):
            x = x + self.g1 * self.gn(self.n1(x))
            y = self.g2 * self.mlp(self.n2(x.permute(0, 2, 3, 1)))
            return x + y.permute(0, 3, 1, 2)

    class HorNet(nn.Module):
        def __init__(self, dims=(32, 64, 128), orders=(2, 3, 4), classes=100):
            super().__init__()
            layers, cin = [], 3
            for i, (d, o) in enumerate(zip(dims, orders)):
                layers += [nn.Conv2d(cin, d, 4 if i == 0 else 2, 4 if i == 0 else 2),
                           LayerNorm2d(d), HorBlock(d, o), HorBlock(d, o)]
                cin = d
            self.body = nn.Sequential(*layers)
            self.norm = nn.LayerNorm(cin)
            self.head = nn.Linear(cin, classes)

        def forward(self, x):
            return self.head(self.norm(self.body(x).mean((2, 3))))

    # -- CaiT -----------------------------------------------------------------------------
    class TalkingHeads(nn.Module):
        """Shazeer et al. 2020 as CaiT uses it: the logits mixed across heads by a linear map
        before the softmax, the weights mixed again after."""

        def __init__(self, dim, heads):
            super().__init__()
            self.h, self.scale = heads, (dim // heads) ** -0.5
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.pre, self.post = nn.Linear(heads, heads), nn.Linear(heads, heads)

        def forward(self, x):
            b, n, c = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
            att = (q * self.scale) @ k.transpose(-2, -1)
            att = self.pre(att.permute(0, 2, 3, 1)).permute(0, 3, 1, 2).softmax(-1)
            att = self.post(att.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            return self.proj((att @ v).transpose(1, 2).reshape(b, n, c))

    class ClassAttention(nn.Module):
        """Only the class token queries; keys and values from the class token and patches."""

        def __init__(self, dim, heads):
            super().__init__()
            self.h, self.scale = heads, (dim // heads) ** -0.5
            self.q, self.k, self.v = (nn.Linear(dim, dim) for _ in range(3))
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            b, n, c = x.shape
            d = c // self.h
            q = self.q(x[:, 0]).reshape(b, 1, self.h, d).transpose(1, 2) * self.scale
            k = self.k(x).reshape(b, n, self.h, d).transpose(1, 2)
            v = self.v(x).reshape(b, n, self.h, d).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)).softmax(-1)
            return self.proj((att @ v).transpose(1, 2).reshape(b, 1, c))

    def mlp(dim):
        return nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    class CaiTBlock(nn.Module):
        def __init__(self, dim, heads, cls_attn):
            super().__init__()
            self.cls_attn = cls_attn
            self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.attn = ClassAttention(dim, heads) if cls_attn else TalkingHeads(dim, heads)
            self.mlp = mlp(dim)
            self.g1 = nn.Parameter(torch.full((dim,), 1e-1))
            self.g2 = nn.Parameter(torch.full((dim,), 1e-1))

        def forward(self, x, cls=None):
            if not self.cls_attn:
                x = x + self.g1 * self.attn(self.n1(x))
                return x + self.g2 * self.mlp(self.n2(x))
            cls = cls + self.g1 * self.attn(self.n1(torch.cat([cls, x], 1)))
            return cls + self.g2 * self.mlp(self.n2(cls))

    class CaiT(nn.Module):
        """Touvron et al. 2021: self-attention layers over patches only, then class-attention
        layers that update the class token alone."""

        def __init__(self, dim=96, heads=4, depth=4, ca_depth=2, patch=8, img=64, classes=100):
            super().__init__()
            self.embed = nn.Conv2d(3, dim, patch, patch)
            self.pos = nn.Parameter(torch.randn(1, (img // patch) ** 2, dim) * 0.02)
            self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
            self.sa = nn.ModuleList([CaiTBlock(dim, heads, False) for _ in range(depth)])
            self.ca = nn.ModuleList([CaiTBlock(dim, heads, True) for _ in range(ca_depth)])
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
            for blk in self.sa:
                x = blk(x)
            cls = self.cls.expand(x.shape[0], -1, -1)
            for blk in self.ca:
                cls = blk(x, cls)
            return self.head(self.norm(cls[:, 0]))

    # -- R-GCN ----------------------------------------------------------------------------
    class RGCNLayer(nn.Module):
        """Schlichtkrull et al. 2018: W_r = sum_b a_rb V_b; messages from each relation's
        neighbours normalized by 1 / c_{i,r}; a self-loop weight."""

        def __init__(self, cin, cout, rels, bases):
            super().__init__()
            self.V = nn.Parameter(torch.randn(bases, cin, cout) / math.sqrt(cin))
            self.a = nn.Parameter(torch.randn(rels, bases) / math.sqrt(bases))
            self.loop = nn.Linear(cin, cout)

        def forward(self, x, adj):                                  # (n, cin), (R, n, n)
            w = torch.einsum("rb,bio->rio", self.a, self.V)
            norm = adj / adj.sum(-1, keepdim=True).clamp_min(1.0)
            return torch.bmm(norm @ x, w).sum(0) + self.loop(x)

    class RGCN(nn.Module):
        def __init__(self, fin=32, hidden=64, rels=6, bases=3):
            super().__init__()
            self.l1 = RGCNLayer(fin, hidden, rels, bases)
            self.l2 = RGCNLayer(hidden, hidden, rels, bases)
            self.rel = nn.Parameter(torch.randn(rels, hidden) * 0.1)   # DistMult diagonal

        def forward(self, x, adj, triples):                         # triples (b, 3) int
            h = self.l2(F.relu(self.l1(x, adj)), adj)
            s, r, o = triples.unbind(1)
            return torch.sigmoid((h[s] * self.rel[r] * h[o]).sum(-1))

    # -- MPNN (edge network + Set2Set) ----------------------------------------------------
    class NNConv(nn.Module):
        """Gilmer et al. 2017: each edge's features give a d x d matrix; the message is the
        source state times it, mean-aggregated at the destination."""

        def __init__(self, dim, edim):
            super().__init__()
            self.dim = dim
            self.net = nn.Sequential(nn.Linear(edim, 64), nn.ReLU(), nn.Linear(64, dim * dim))
            self.root = nn.Linear(dim, dim)

        def forward(self, h, src, dst, e):
            w = self.net(e).view(-1, self.dim, self.dim) / self.dim
            msg = torch.bmm(h[src].unsqueeze(1), w).squeeze(1)
            agg = torch.zeros_like(h).index_add(0, dst, msg)
            deg = torch.zeros_like(h[:, :1]).index_add(0, dst, torch.ones_like(msg[:, :1]))
            return self.root(h) + agg / deg.clamp_min(1.0)

    class MPNN(nn.Module):
        """Three message-passing steps sharing one NNConv and one GRUCell, then a Set2Set
        readout per graph (attention by an LSTMCell's query, masked to the graph's nodes)."""

        def __init__(self, fin=11, edim=4, dim=32, steps=3, s2s_steps=3, graphs=4, targets=12):
            super().__init__()
            self.steps, self.s2s_steps, self.graphs, self.dim = steps, s2s_steps, graphs, dim
            self.lin0 = nn.Linear(fin, dim)
            self.conv = NNConv(dim, edim)
            self.gru = nn.GRUCell(dim, dim)
            self.lstm = nn.LSTMCell(2 * dim, dim)
            self.out = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, targets))

        def forward(self, x, src, dst, e, batch):
            h = F.relu(self.lin0(x))
            for _ in range(self.steps):
                h = self.gru(F.relu(self.conv(h, src, dst, e)), h)
            member = batch.unsqueeze(0) == torch.arange(self.graphs).unsqueeze(1)   # (B, n)
            q_star = h.new_zeros(self.graphs, 2 * self.dim)
            hx = cx = h.new_zeros(self.graphs, self.dim)
            for _ in range(self.s2s_steps):
                hx, cx = self.lstm(q_star, (hx, cx))
                a = (hx @ h.t()).masked_fill(~member, float("-inf")).softmax(-1)
                q_star = torch.cat([hx, a @ h], -1)
            return self.out(q_star)

    # -- AFM + NFM ------------------------------------------------------------------------
    class AFMNFM(nn.Module):
        """Xiao et al. 2017 (AFM: pairwise products of field embeddings weighted by an
        attention MLP's softmax) beside He & Chua 2017 (NFM: bi-interaction pooling
        0.5 ((sum v)^2 - sum v^2) into an MLP), a linear term, one logit."""

        def __init__(self, fields=10, card=200, dim=16, att=16):
            super().__init__()
            self.f = fields
            self.register_buffer("offsets", torch.arange(fields) * card)
            self.emb = nn.Embedding(fields * card, dim)
            self.lin = nn.Embedding(fields * card, 1)
            self.att = nn.Sequential(nn.Linear(dim, att), nn.ReLU(), nn.Linear(att, 1, bias=False))
            self.p = nn.Linear(dim, 1)
            self.nfm = nn.Sequential(nn.BatchNorm1d(dim), nn.Linear(dim, 64), nn.ReLU(),
                                     nn.Linear(64, 1))

        def forward(self, ids, values):                             # (b, f) int, (b, f)
            idx = ids + self.offsets
            v = self.emb(idx) * values.unsqueeze(-1)
            rows, cols = torch.triu_indices(self.f, self.f, 1)
            pairs = v[:, rows] * v[:, cols]                         # (b, f(f-1)/2, d)
            a = self.att(pairs).softmax(1)
            afm = self.p((a * pairs).sum(1))
            s = v.sum(1)
            nfm = self.nfm(0.5 * (s * s - (v * v).sum(1)))
            linear = (self.lin(idx).squeeze(-1) * values).sum(1, keepdim=True)
            return torch.sigmoid(linear + afm + nfm)

    # -- iTransformer + RevIN -------------------------------------------------------------
    class ITransformer(nn.Module):
        """Liu et al. 2024: each variate's whole look-back window is one token (a linear
        embedding), attention mixes variates; Kim et al. 2022's RevIN normalizes each series
        by its own mean / std (affine) and restores the forecast's scale."""

        def __init__(self, lookback=96, horizon=24, variates=21, dim=64, heads=4, depth=2):
            super().__init__()
            self.w = nn.Parameter(1 + 0.1 * torch.randn(variates))
            self.b = nn.Parameter(0.1 * torch.randn(variates))
            self.embed = nn.Linear(lookback, dim)
            self.enc = nn.ModuleList([
                nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, activation="gelu",
                                           batch_first=True) for _ in range(depth)])
            self.norm = nn.LayerNorm(dim)
            self.proj = nn.Linear(dim, horizon)

        def forward(self, x):                                       # (b, L, N)
            mean = x.mean(1, keepdim=True)
            std = torch.sqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5)
            x = (x - mean) / std * self.w + self.b
            h = self.embed(x.transpose(1, 2))                       # (b, N, d)
            for layer in self.enc:
                h = layer(h)
            y = self.proj(self.norm(h)).transpose(1, 2)             # (b, H, N)
            return (y - self.b) / (self.w + 1e-10) * std + mean

    # -- CREPE ----------------------------------------------------------------------------
    class CREPE(nn.Module):
        """Kim et al. 2018 (a reduced capacity): 1024-sample frames through tall (k, 1)
        convolutions, 360 pitch bins of 20 cents by a sigmoid; the pitch is the salience-
        weighted average of the cents within 4 bins of the argmax, in Hz, with the peak as
        the confidence."""

        def __init__(self, widths=(64, 8, 8, 8, 16, 32)):
            super().__init__()
            layers, cin = [], 1
            for i, c in enumerate(widths):
                k, s, p = ((512, 1), (4, 1), (254, 0)) if i == 0 else ((64, 1), 1, (32, 0))
                layers += [nn.Conv2d(cin, c, k, s, p), nn.ReLU(), nn.BatchNorm2d(c),
                           nn.MaxPool2d((2, 1), (2, 1))]
                cin = c
            self.body = nn.Sequential(*layers)
            self.fc = nn.Linear(cin * 4, 360)
            self.register_buffer("cents", torch.linspace(0, 7180, 360) + 1997.3794084376191)

        def forward(self, frames):                                  # (b, 1024)
            x = frames - frames.mean(1, keepdim=True)
            x = x / x.std(1, keepdim=True).clamp_min(1e-8)
            act = torch.sigmoid(self.fc(self.body(x.view(-1, 1, 1024, 1)).flatten(1)))
            center = act.argmax(1, keepdim=True)
            idx = (center + torch.arange(-4, 5)).clamp(0, 359)
            w = torch.gather(act, 1, idx)
            cents = (w * self.cents[idx]).sum(1) / w.sum(1)
            freq = 10.0 * torch.pow(2.0, cents / 1200.0)
            return torch.stack([freq, act.amax(1) * 1000.0, cents], 1)

    # -- deep-ensemble acquisition --------------------------------------------------------
    class EnsembleAcquisition(nn.Module):
        """Lakshminarayanan et al. 2017's deep ensemble (members stacked as batched
        ``baddbmm``, each a Gaussian head) as a Bayesian-optimization surrogate: the mixture's
        mean and std, expected improvement over ``best`` by ``special.ndtr``, the log
        probability of improvement by ``special.log_ndtr``, an upper confidence bound."""

        def __init__(self, members=5, fin=8, hidden=64):
            super().__init__()
            self.w1 = nn.Parameter(torch.randn(members, fin, hidden) / math.sqrt(fin))
            self.b1 = nn.Parameter(torch.randn(members, 1, hidden) * 0.1)
            self.w2 = nn.Parameter(torch.randn(members, hidden, hidden) / math.sqrt(hidden))
            self.b2 = nn.Parameter(torch.randn(members, 1, hidden) * 0.1)
            self.w3 = nn.Parameter(torch.randn(members, hidden, 2) / math.sqrt(hidden))
            self.b3 = nn.Parameter(torch.randn(members, 1, 2) * 0.1)
            self.members = members

        def forward(self, x, best):                                 # (b, fin), (1,)
            h = x.unsqueeze(0).expand(self.members, -1, -1)
            h = F.silu(torch.baddbmm(self.b1, h, self.w1))
            h = F.silu(torch.baddbmm(self.b2, h, self.w2))
            out = torch.baddbmm(self.b3, h, self.w3)
            mu_e, var_e = out[..., 0], F.softplus(out[..., 1]) + 1e-6
            mu = mu_e.mean(0)
            sigma = torch.sqrt(var_e.mean(0) + mu_e.var(0, unbiased=False))
            z = (mu - best) / sigma
            ei = sigma * (z * torch.special.ndtr(z) + torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi))
            log_pi = torch.special.log_ndtr(z)
            return torch.stack([mu, sigma, ei, log_pi, mu + 2.0 * sigma], -1)

    # -- DARTS supernet -------------------------------------------------------------------
    class SepConv(nn.Sequential):
        def __init__(self, c, stride):
            super().__init__(nn.ReLU(), nn.Conv2d(c, c, 3, stride, 1, groups=c, bias=False),
                             nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                             nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False),
                             nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c))

    class DilConv(nn.Sequential):
        def __init__(self, c, stride):
            super().__init__(nn.ReLU(), nn.Conv2d(c, c, 3, stride, 2, dilation=2, groups=c,
                                                  bias=False),
                             nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c))

    class FactorizedReduce(nn.Module):
        """Halve the resolution by two 1x1 stride-2 convs, one shifted by a pixel."""

        def __init__(self, c):
            super().__init__()
            self.a = nn.Conv2d(c, c // 2, 1, 2, bias=False)
            self.b = nn.Conv2d(c, c // 2, 1, 2, bias=False)
            self.bn = nn.BatchNorm2d(c)

        def forward(self, x):
            x = F.relu(x)
            return self.bn(torch.cat([self.a(x), self.b(x[:, :, 1:, 1:])], 1))

    class Zero(nn.Module):
        def __init__(self, stride):
            super().__init__()
            self.stride = stride

        def forward(self, x):
            return x[:, :, ::self.stride, ::self.stride].mul(0.0)

    class MixedOp(nn.Module):
        def __init__(self, c, stride):
            super().__init__()
            self.ops = nn.ModuleList([
                Zero(stride),
                nn.Sequential(nn.MaxPool2d(3, stride, 1), nn.BatchNorm2d(c, affine=False)),
                nn.Sequential(nn.AvgPool2d(3, stride, 1, count_include_pad=False),
                              nn.BatchNorm2d(c, affine=False)),
                nn.Identity() if stride == 1 else FactorizedReduce(c),
                SepConv(c, stride), DilConv(c, stride)])

        def forward(self, x, w):
            return sum(w[i] * op(x) for i, op in enumerate(self.ops))

    class Cell(nn.Module):
        def __init__(self, cpp, cp, c, reduction, reduction_prev, nodes=3):
            super().__init__()
            # (after a reduction cell s0 is at twice s1's resolution: reduce it too)
            self.pre0 = nn.Sequential(nn.Conv2d(cpp, c, 1, bias=False), FactorizedReduce(c)) \
                if reduction_prev else nn.Sequential(nn.ReLU(), nn.Conv2d(cpp, c, 1, bias=False),
                                                     nn.BatchNorm2d(c))
            self.pre1 = nn.Sequential(nn.ReLU(), nn.Conv2d(cp, c, 1, bias=False),
                                      nn.BatchNorm2d(c))
            self.nodes = nodes
            self.ops = nn.ModuleList([MixedOp(c, 2 if reduction and j < 2 else 1)
                                      for i in range(nodes) for j in range(2 + i)])

        def forward(self, s0, s1, weights):
            states, k = [self.pre0(s0), self.pre1(s1)], 0
            for _ in range(self.nodes):
                s = sum(self.ops[k + j](h, weights[k + j]) for j, h in enumerate(states))
                k += len(states)
                states.append(s)
            return torch.cat(states[2:], 1)

    class DARTS(nn.Module):
        """Liu et al. 2019: a continuous relaxation of a cell search space; every edge sums
        its candidate ops weighted by the softmax of its architecture logits."""

        def __init__(self, c=16, nodes=3, classes=10):
            super().__init__()
            edges = sum(2 + i for i in range(nodes))
            self.alpha_normal = nn.Parameter(torch.randn(edges, 6) * 0.5)
            self.alpha_reduce = nn.Parameter(torch.randn(edges, 6) * 0.5)
            self.stem = nn.Sequential(nn.Conv2d(3, 3 * c, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(3 * c))
            cells, cpp, cp, red_prev = [], 3 * c, 3 * c, False
            for cc, red in ((c, False), (2 * c, True), (2 * c, False)):
                cells.append(Cell(cpp, cp, cc, red, red_prev, nodes))
                cpp, cp, red_prev = cp, nodes * cc, red
            self.cells = nn.ModuleList(cells)
            self.reds = [False, True, False]
            self.head = nn.Linear(cp, classes)

        def forward(self, x):
            s0 = s1 = self.stem(x)
            wn, wr = self.alpha_normal.softmax(-1), self.alpha_reduce.softmax(-1)
            for cell, red in zip(self.cells, self.reds):
                s0, s1 = s1, cell(s0, s1, wr if red else wn)
            return self.head(s1.mean((2, 3)))

    # -- VAE with planar flows ------------------------------------------------------------
    class PlanarVAE(nn.Module):
        """Rezende & Mohamed 2015 (planar flows z' = z + u_hat tanh(w.z + b), amortized: the
        encoder emits every flow's u, w, b) with u_hat = u + (m(w.u) - w.u) w / |w|^2 keeping
        each flow invertible; returns the decoder's logits, the reconstruction term, the
        flows' summed log-determinant and the KL estimate of the ELBO."""

        def __init__(self, fin=784, hidden=256, z=16, flows=8):
            super().__init__()
            self.z, self.k = z, flows
            self.enc = nn.Sequential(nn.Linear(fin, hidden), nn.Softplus(),
                                     nn.Linear(hidden, hidden), nn.Softplus())
            self.mu, self.logvar = nn.Linear(hidden, z), nn.Linear(hidden, z)
            self.u, self.w = nn.Linear(hidden, flows * z), nn.Linear(hidden, flows * z)
            self.b = nn.Linear(hidden, flows)
            self.dec = nn.Sequential(nn.Linear(z, hidden), nn.Softplus(), nn.Linear(hidden, fin))

        def forward(self, x, eps):                                  # (b, 784), (b, z)
            h = self.enc(x)
            mu, logvar = self.mu(h), self.logvar(h).clamp(-6, 4)
            us = self.u(h).view(-1, self.k, self.z)
            ws = self.w(h).view(-1, self.k, self.z)
            bs = self.b(h)
            z0 = mu + eps * torch.exp(0.5 * logvar)
            z, logdet = z0, torch.zeros_like(mu[:, :1])
            for k in range(self.k):
                u, w, b = us[:, k], ws[:, k], bs[:, k:k + 1]
                wu = (w * u).sum(-1, keepdim=True)
                u_hat = u + (F.softplus(wu) - 1 - wu) * w / (w * w).sum(-1, keepdim=True)
                t = torch.tanh((w * z).sum(-1, keepdim=True) + b)
                z = z + u_hat * t
                psi_u = ((1 - t * t) * w * u_hat).sum(-1, keepdim=True)
                logdet = logdet + torch.log((1 + psi_u).abs() + 1e-8)
            logits = self.dec(z)
            rec = -F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(
                -1, keepdim=True)
            log_q0 = (-0.5 * (eps * eps + logvar + math.log(2 * math.pi))).sum(-1, keepdim=True)
            log_pz = (-0.5 * (z * z + math.log(2 * math.pi))).sum(-1, keepdim=True)
            kl = log_q0 - logdet - log_pz
            return torch.cat([logits, rec, logdet, kl], -1)

    # -- inputs ---------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def kg(n=120, fin=32, rels=6, b=64, seed=281):
        def make():
            g = gen(seed)
            adj = (torch.rand(rels, n, n, generator=g) < 0.04).float()
            return {"x": torch.randn(n, fin, generator=g), "adj": adj,
                    "triples": torch.stack([torch.randint(0, n, (b,), generator=g),
                                            torch.randint(0, rels, (b,), generator=g),
                                            torch.randint(0, n, (b,), generator=g)], 1)}
        return make

    def molecules(graphs=4, nodes=15, edges=45, fin=11, edim=4, seed=282):
        def make():
            g = gen(seed)
            base = torch.arange(graphs).repeat_interleave(edges) * nodes
            src = torch.randint(0, nodes, (graphs * edges,), generator=g) + base
            dst = torch.randint(0, nodes, (graphs * edges,), generator=g) + base
            return {"x": torch.randn(graphs * nodes, fin, generator=g), "src": src, "dst": dst,
                    "e": torch.rand(graphs * edges, edim, generator=g),
                    "batch": torch.arange(graphs).repeat_interleave(nodes)}
        return make

    def ctr(b=256, fields=10, card=200, seed=283):
        def make():
            g = gen(seed)
            return {"ids": torch.randint(0, card, (b, fields), generator=g),
                    "values": torch.rand(b, fields, generator=g) + 0.5}
        return make

    def series(b=8, lookback=96, variates=21, seed=284):
        def make():
            g = gen(seed)
            t = torch.arange(lookback).float().view(1, -1, 1)
            x = 5 * torch.rand(b, 1, variates, generator=g) + torch.sin(
                t / (4 + 8 * torch.rand(b, 1, variates, generator=g))) * \
                (1 + 3 * torch.rand(b, 1, variates, generator=g))
            return {"x": x + 0.1 * torch.randn(b, lookback, variates, generator=g)}
        return make

    def audio_frames(b=16, seed=285):
        def make():
            g = gen(seed)
            f0 = 80 + 700 * torch.rand(b, 1, generator=g)
            t = torch.arange(1024).float() / 16000
            return {"frames": torch.sin(2 * math.pi * f0 * t) +
                    0.05 * torch.randn(b, 1024, generator=g)}
        return make

    def candidates(b=256, fin=8, seed=286):
        def make():
            g = gen(seed)
            return {"x": torch.rand(b, fin, generator=g), "best": torch.tensor([0.3])}
        return make

    def binarized(b=32, z=16, seed=287):
        def make():
            g = gen(seed)
            return {"x": (torch.rand(b, 784, generator=g) < 0.3).float(),
                    "eps": torch.randn(b, z, generator=g)}
        return make

    return {
        "van_lka": (VAN, (1, 3, 112, 112)),
        "focalnet_mod": (FocalNet, (1, 3, 96, 96)),
        "hornet_gnconv": (HorNet, (1, 3, 96, 96)),
        "cait_talking": (CaiT, (2, 3, 64, 64)),
        "rgcn_distmult": (RGCN, kg()),
        "mpnn_set2set": (MPNN, molecules()),
        "afm_nfm_ctr": (AFMNFM, ctr()),
        "itransformer_revin": (ITransformer, series()),
        "crepe_pitch": (CREPE, audio_frames()),
        "ensemble_ei": (EnsembleAcquisition, candidates()),
        "darts_supernet": (DARTS, (2, 3, 32, 32)),
        "planar_flow_vae": (PlanarVAE, binarized()),
    }
