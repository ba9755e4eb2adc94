"""The eighteenth round of ``bench_new_user_models``: AlexNet with local response normalization
(``nn.LocalResponseNorm``, overlapping max pooling, an adaptive 6x6 pool), a PSMNet-style
stereo network (a cost volume filled by in-place slice assignment in a loop over disparities,
``conv3d`` / ``ConvTranspose3d``, trilinear upsampling, soft-argmin disparity regression),
SuperGlue matching (a keypoint encoder, self / cross attentional message passing, log-domain
Sinkhorn with a learned dustbin as a Python loop of ``logsumexp``), Autoformer (series
decomposition by a replicate-padded moving average, auto-correlation through ``rfft`` of queries
times the conjugate of keys, top-k time delays aggregated by ``gather`` on the doubled series),
CCNet criss-cross attention (row and column energies by ``einsum``, the doubled centre masked,
one softmax over both, applied twice), a SAC policy (``torch.distributions.Normal`` log
probabilities with the tanh squashing correction, noise an input, twin Q critics, a
``Categorical`` option head's entropy), a Deep Interest Network (a local activation unit over
``[q, k, q - k, q * k]`` with Dice activations, behaviour sequences masked by their lengths), a
growing neural cellular automaton (identity / Sobel perception by a depthwise conv, stochastic
fire masks, alive masking by ``max_pool2d``, unrolled steps), ST-GCN (spatial graph convolution
over partitioned skeleton adjacency by a 5-index ``einsum``, (9, 1) temporal convs, a data
BatchNorm1d over joints x channels), TensoRF (vector-matrix factors read by ``grid_sample`` on
planes and lines, appearance from a 5-D ``grid_sample`` of a voxel grid), a SPADE generator
(``F.one_hot`` label maps resized by nearest interpolation, InstanceNorm2d without affine,
spectral-normalized convs) and an RNN-T transducer (conv subsampling, LSTM encoder, embedding +
LSTM predictor, the 4-D joint network with ``log_softmax``). Kept apart so the main script stays
readable."""

from __future__ import annotations


def eighteenth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- AlexNet with LRN -----------------------------------------------------------------
    class AlexNetLRN(nn.Module):
        def __init__(self, widths=(32, 64, 96, 64, 64), hidden=256, classes=100):
            super().__init__()
            a, b, c, d, e = widths
            self.features = nn.Sequential(
                nn.Conv2d(3, a, 11, 4, 2), nn.ReLU(inplace=True),
                nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0),
                nn.MaxPool2d(3, 2),
                nn.Conv2d(a, b, 5, padding=2), nn.ReLU(inplace=True),
                nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0),
                nn.MaxPool2d(3, 2),
                nn.Conv2d(b, c, 3, padding=1), nn.ReLU(inplace=True),
                nn.Conv2d(c, d, 3, padding=1), nn.ReLU(inplace=True),
                nn.Conv2d(d, e, 3, padding=1), nn.ReLU(inplace=True),
                nn.MaxPool2d(3, 2))
            self.pool = nn.AdaptiveAvgPool2d((6, 6))
            self.classifier = nn.Sequential(
                nn.Dropout(), nn.Linear(e * 36, hidden), nn.ReLU(inplace=True),
                nn.Dropout(), nn.Linear(hidden, hidden), nn.ReLU(inplace=True),
                nn.Linear(hidden, classes))

        def forward(self, x):
            return self.classifier(torch.flatten(self.pool(self.features(x)), 1))

    # -- PSMNet-style stereo --------------------------------------------------------------
    def conv3d_bn(cin, cout, s=1):
        return nn.Sequential(nn.Conv3d(cin, cout, 3, s, 1, bias=False), nn.BatchNorm3d(cout),
                             nn.ReLU(inplace=True))

    class StereoCostVolume(nn.Module):
        """Shared 2-D features at 1/4, a concatenation cost volume over ``disp // 4``
        disparities filled slice by slice, a 3-D encoder-decoder, trilinear upsampling to full
        resolution and soft-argmin regression."""

        def __init__(self, c=16, disp=48):
            super().__init__()
            self.d = disp // 4
            self.disp = disp
            self.feat = nn.Sequential(
                nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                nn.Conv2d(c, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                nn.Conv2d(c, c, 3, 1, 1))
            self.enc0 = conv3d_bn(2 * c, c)
            self.down = conv3d_bn(c, 2 * c, s=2)
            self.up = nn.Sequential(
                nn.ConvTranspose3d(2 * c, c, 3, 2, 1, output_padding=1, bias=False),
                nn.BatchNorm3d(c))
            self.cls = nn.Conv3d(c, 1, 3, 1, 1, bias=False)

        def forward(self, left, right):
            fl, fr = self.feat(left), self.feat(right)
            b, c, h, w = fl.shape
            cost = fl.new_zeros(b, 2 * c, self.d, h, w)
            for i in range(self.d):
                if i > 0:
                    cost[:, :c, i, :, i:] = fl[:, :, :, i:]
                    cost[:, c:, i, :, i:] = fr[:, :, :, :-i]
                else:
                    cost[:, :c, i] = fl
                    cost[:, c:, i] = fr
            x = self.enc0(cost)
            x = F.relu(self.up(self.down(x)) + x)
            x = self.cls(x)
            x = F.interpolate(x, (self.disp, left.shape[2], left.shape[3]), mode="trilinear",
                              align_corners=False).squeeze(1)
            prob = F.softmax(-x, 1)
            disps = torch.arange(self.disp, dtype=prob.dtype).view(1, self.disp, 1, 1)
            return (prob * disps).sum(1)

    # -- SuperGlue ------------------------------------------------------------------------
    def mlp1d(channels):
        layers = []
        for i in range(1, len(channels)):
            layers.append(nn.Conv1d(channels[i - 1], channels[i], 1))
            if i < len(channels) - 1:
                layers += [nn.BatchNorm1d(channels[i]), nn.ReLU()]
        return nn.Sequential(*layers)

    class Propagation(nn.Module):
        """Multi-head attention from ``x`` to ``src`` and an MLP on ``[x, message]``."""

        def __init__(self, d, heads):
            super().__init__()
            self.h = heads
            self.q, self.k, self.v = nn.Conv1d(d, d, 1), nn.Conv1d(d, d, 1), nn.Conv1d(d, d, 1)
            self.merge = nn.Conv1d(d, d, 1)
            self.mlp = mlp1d([2 * d, 2 * d, d])

        def forward(self, x, src):
            b, d, n = x.shape
            q = self.q(x).view(b, d // self.h, self.h, n)
            k = self.k(src).view(b, d // self.h, self.h, -1)
            v = self.v(src).view(b, d // self.h, self.h, -1)
            att = torch.einsum("bdhn,bdhm->bhnm", q, k) / (d // self.h) ** 0.5
            msg = torch.einsum("bhnm,bdhm->bdhn", att.softmax(-1), v).reshape(b, d, n)
            return x + self.mlp(torch.cat([x, self.merge(msg)], 1))

    class SuperGlueMini(nn.Module):
        def __init__(self, d=64, heads=4, layers=("self", "cross", "self", "cross"),
                     iters=10):
            super().__init__()
            self.kenc = mlp1d([3, 32, 64, d])
            self.gnn = nn.ModuleList([Propagation(d, heads) for _ in layers])
            self.kinds = layers
            self.final = nn.Conv1d(d, d, 1)
            self.dustbin = nn.Parameter(torch.tensor(1.0))
            self.iters = iters

        def log_optimal_transport(self, scores):
            b, m, n = scores.shape
            one = scores.new_tensor(1.0)
            ms, ns = m * one, n * one
            bins0 = self.dustbin.expand(b, m, 1)
            bins1 = self.dustbin.expand(b, 1, n)
            alpha = self.dustbin.expand(b, 1, 1)
            couplings = torch.cat([torch.cat([scores, bins0], -1),
                                   torch.cat([bins1, alpha], -1)], 1)
            norm = -(ms + ns).log()
            log_mu = torch.cat([norm.expand(m), ns.log()[None] + norm])
            log_nu = torch.cat([norm.expand(n), ms.log()[None] + norm])
            log_mu, log_nu = log_mu[None].expand(b, -1), log_nu[None].expand(b, -1)
            u, v = torch.zeros_like(log_mu), torch.zeros_like(log_nu)
            for _ in range(self.iters):
                u = log_mu - torch.logsumexp(couplings + v.unsqueeze(1), 2)
                v = log_nu - torch.logsumexp(couplings + u.unsqueeze(2), 1)
            return couplings + u.unsqueeze(2) + v.unsqueeze(1) - norm

        def forward(self, kpts0, scores0, desc0, kpts1, scores1, desc1):
            d0 = desc0.transpose(1, 2) + self.kenc(
                torch.cat([kpts0.transpose(1, 2), scores0.unsqueeze(1)], 1))
            d1 = desc1.transpose(1, 2) + self.kenc(
                torch.cat([kpts1.transpose(1, 2), scores1.unsqueeze(1)], 1))
            for layer, kind in zip(self.gnn, self.kinds, strict=True):
                src0, src1 = (d0, d1) if kind == "self" else (d1, d0)
                d0, d1 = layer(d0, src0), layer(d1, src1)
            m0, m1 = self.final(d0), self.final(d1)
            scores = torch.einsum("bdn,bdm->bnm", m0, m1) / m0.shape[1] ** 0.5
            return self.log_optimal_transport(scores)

    # -- Autoformer -----------------------------------------------------------------------
    class SeriesDecomp(nn.Module):
        def __init__(self, k=13):
            super().__init__()
            self.k = k
            self.avg = nn.AvgPool1d(k, 1)

        def forward(self, x):                                   # (b, L, d)
            front = x[:, :1].repeat(1, (self.k - 1) // 2, 1)
            end = x[:, -1:].repeat(1, (self.k - 1) // 2, 1)
            trend = self.avg(torch.cat([front, x, end], 1).transpose(1, 2)).transpose(1, 2)
            return x - trend, trend

    class AutoCorrelation(nn.Module):
        def __init__(self, d, heads, factor=1):
            super().__init__()
            self.h, self.factor = heads, factor
            self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.o = nn.Linear(d, d)

        def forward(self, x):
            b, n, d = x.shape
            q = self.q(x).view(b, n, self.h, -1).permute(0, 2, 3, 1)    # (b, h, e, n)
            k = self.k(x).view(b, n, self.h, -1).permute(0, 2, 3, 1)
            v = self.v(x).view(b, n, self.h, -1).permute(0, 2, 3, 1)
            corr = torch.fft.irfft(torch.fft.rfft(q, dim=-1) * torch.conj(
                torch.fft.rfft(k, dim=-1)), n=n, dim=-1)
            top = int(self.factor * math.log(n))
            mean = corr.mean(1).mean(1)                                 # (b, n)
            weights, delay = torch.topk(mean, top, -1)
            weights = weights.softmax(-1)
            init = torch.arange(n).view(1, 1, 1, n).expand(b, self.h, d // self.h, n)
            doubled = torch.cat([v, v], -1)
            agg = torch.zeros_like(v)
            for i in range(top):
                shift = init + delay[:, i].view(b, 1, 1, 1)
                agg = agg + torch.gather(doubled, -1, shift) * weights[:, i].view(b, 1, 1, 1)
            return self.o(agg.permute(0, 3, 1, 2).reshape(b, n, d))

    class AutoformerLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.attn = AutoCorrelation(d, heads)
            self.ff = nn.Sequential(nn.Conv1d(d, 2 * d, 1, bias=False), nn.GELU(),
                                    nn.Conv1d(2 * d, d, 1, bias=False))
            self.d1, self.d2 = SeriesDecomp(), SeriesDecomp()

        def forward(self, x):
            x, _ = self.d1(x + self.attn(x))
            y = self.ff(x.transpose(1, 2)).transpose(1, 2)
            x, _ = self.d2(x + y)
            return x

    class AutoformerMini(nn.Module):
        def __init__(self, features=7, d=32, heads=4, layers=2, length=96, horizon=24):
            super().__init__()
            self.decomp = SeriesDecomp()
            self.embed = nn.Conv1d(features, d, 3, padding=1, padding_mode="circular",
                                   bias=False)
            self.layers = nn.ModuleList([AutoformerLayer(d, heads) for _ in range(layers)])
            self.norm = nn.LayerNorm(d)
            self.season_out = nn.Linear(d, features)
            self.time = nn.Linear(length, horizon)

        def forward(self, x):                                   # (b, L, features)
            season, trend = self.decomp(x)
            h = self.embed(season.transpose(1, 2)).transpose(1, 2)
            for layer in self.layers:
                h = layer(h)
            h = self.norm(h)
            h = h - h.mean(1, keepdim=True)
            y = self.season_out(h) + trend
            return self.time(y.transpose(1, 2)).transpose(1, 2)

    # -- CCNet ----------------------------------------------------------------------------
    class CrissCross(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.q, self.k = nn.Conv2d(c, c // 8, 1), nn.Conv2d(c, c // 8, 1)
            self.v = nn.Conv2d(c, c, 1)
            self.gamma = nn.Parameter(torch.tensor(0.5))

        def forward(self, x):
            b, c, h, w = x.shape
            q, k, v = self.q(x), self.k(x), self.v(x)
            eh = torch.einsum("bchw,bcgw->bhwg", q, k)
            eh = eh.masked_fill(torch.eye(h, dtype=torch.bool)[:, None, :], float("-inf"))
            ew = torch.einsum("bchw,bchg->bhwg", q, k)
            att = torch.cat([eh, ew], -1).softmax(-1)
            oh = torch.einsum("bhwg,bcgw->bchw", att[..., :h], v)
            ow = torch.einsum("bhwg,bchg->bchw", att[..., h:], v)
            return self.gamma * (oh + ow) + x

    class CCNetMini(nn.Module):
        def __init__(self, c=64, classes=19, recurrence=2):
            super().__init__()
            self.backbone = nn.Sequential(conv_bn(3, 16, s=2), conv_bn(16, 32, s=2),
                                          conv_bn(32, c, s=2), conv_bn(c, c, d=2))
            self.reduce = conv_bn(c, c)
            self.cca = CrissCross(c)
            self.recurrence = recurrence
            self.out = nn.Sequential(conv_bn(2 * c, c), nn.Conv2d(c, classes, 1))

        def forward(self, x):
            f = self.backbone(x)
            y = self.reduce(f)
            for _ in range(self.recurrence):
                y = self.cca(y)
            y = self.out(torch.cat([f, y], 1))
            return F.interpolate(y, x.shape[2:], mode="bilinear", align_corners=True)

    def conv_bn(cin, cout, k=3, s=1, d=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, s, (k // 2) * d, dilation=d, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    # -- SAC policy -----------------------------------------------------------------------
    class SACPolicy(nn.Module):
        """A squashed Gaussian actor (noise an input), twin Q critics on the sampled action, a
        discrete option head's Categorical entropy and the log probability of its argmax."""

        def __init__(self, obs=24, act=6, hidden=128, options=4):
            super().__init__()
            self.trunk = nn.Sequential(nn.Linear(obs, hidden), nn.ReLU(),
                                       nn.Linear(hidden, hidden), nn.ReLU())
            self.mu, self.log_std = nn.Linear(hidden, act), nn.Linear(hidden, act)
            self.option = nn.Linear(hidden, options)
            self.q1 = nn.Sequential(nn.Linear(obs + act, hidden), nn.ReLU(),
                                    nn.Linear(hidden, 1))
            self.q2 = nn.Sequential(nn.Linear(obs + act, hidden), nn.ReLU(),
                                    nn.Linear(hidden, 1))

        def forward(self, obs, eps):
            from torch.distributions import Categorical, Normal

            h = self.trunk(obs)
            mu, log_std = self.mu(h), self.log_std(h).clamp(-5.0, 2.0)
            dist = Normal(mu, log_std.exp())
            u = mu + log_std.exp() * eps
            a = torch.tanh(u)
            logp = dist.log_prob(u).sum(-1)
            logp = logp - (2 * (math.log(2.0) - u - F.softplus(-2 * u))).sum(-1)
            opt = Categorical(logits=self.option(h))
            best = opt.logits.argmax(-1)
            sa = torch.cat([obs, a], -1)
            q = torch.min(self.q1(sa), self.q2(sa)).squeeze(-1)
            return torch.cat([a, torch.stack([logp, q, opt.entropy(), opt.log_prob(best)],
                                             -1)], -1)

    # -- Deep Interest Network ------------------------------------------------------------
    class Dice(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.bn = nn.BatchNorm1d(n, affine=False)
            self.alpha = nn.Parameter(torch.full((n,), 0.25))

        def forward(self, x):
            shape = x.shape
            p = torch.sigmoid(self.bn(x.reshape(-1, shape[-1]))).reshape(shape)
            return p * x + (1 - p) * self.alpha * x

    class DIN(nn.Module):
        def __init__(self, items=2000, cats=50, d=16, att=(64, 32), mlp=(128, 64), dense=8):
            super().__init__()
            self.item, self.cat = nn.Embedding(items, d), nn.Embedding(cats, d)
            e = 2 * d
            self.au = nn.Sequential(nn.Linear(4 * e, att[0]), Dice(att[0]),
                                    nn.Linear(att[0], att[1]), Dice(att[1]),
                                    nn.Linear(att[1], 1))
            self.mlp = nn.Sequential(nn.Linear(2 * e + dense, mlp[0]), Dice(mlp[0]),
                                     nn.Linear(mlp[0], mlp[1]), Dice(mlp[1]),
                                     nn.Linear(mlp[1], 1))

        def forward(self, hist_items, hist_cats, lengths, item, cat, dense):
            keys = torch.cat([self.item(hist_items), self.cat(hist_cats)], -1)   # (b, T, e)
            q = torch.cat([self.item(item), self.cat(cat)], -1)                 # (b, e)
            qe = q.unsqueeze(1).expand_as(keys)
            w = self.au(torch.cat([qe, keys, qe - keys, qe * keys], -1)).squeeze(-1)
            mask = torch.arange(keys.shape[1])[None] < lengths[:, None]
            w = w.masked_fill(~mask, 0.0)
            interest = torch.bmm(w.unsqueeze(1), keys).squeeze(1)
            return torch.sigmoid(self.mlp(torch.cat([interest, q, dense], -1))).squeeze(-1)

    # -- Growing neural cellular automaton -----------------------------------------------
    class NeuralCA(nn.Module):
        def __init__(self, channels=16, hidden=96, steps=4):
            super().__init__()
            self.c, self.steps = channels, steps
            ident = torch.tensor([[0.0, 0, 0], [0, 1, 0], [0, 0, 0]])
            sobel = torch.tensor([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]]) / 8
            kernels = torch.stack([ident, sobel, sobel.T])                 # (3, 3, 3)
            self.register_buffer("perceive", kernels.repeat(channels, 1, 1)[:, None])
            self.fc1 = nn.Conv2d(3 * channels, hidden, 1)
            self.fc2 = nn.Conv2d(hidden, channels, 1)
            with torch.no_grad():
                self.fc2.weight.mul_(0.1)

        def alive(self, x):
            return F.max_pool2d(x[:, 3:4], 3, 1, 1) > 0.1

        def forward(self, state, fire):                         # fire: (steps, b, 1, h, w)
            x = state
            for i in range(self.steps):
                pre = self.alive(x)
                y = F.conv2d(x, self.perceive, padding=1, groups=self.c)
                dx = self.fc2(F.relu(self.fc1(y)))
                x = x + dx * (fire[i] < 0.5).float()
                x = x * (pre & self.alive(x)).float()
            return x

    # -- ST-GCN ---------------------------------------------------------------------------
    def skeleton_partitions(v=18):
        """Spatial-configuration partitions (self, centripetal, centrifugal) of a chain-and-
        limbs skeleton, each column-normalized."""
        edges = [(4, 3), (3, 2), (7, 6), (6, 5), (13, 12), (12, 11), (10, 9), (9, 8),
                 (11, 5), (8, 2), (5, 1), (2, 1), (0, 1), (15, 0), (14, 0), (17, 15),
                 (16, 14)]
        adj = torch.eye(v)
        for i, j in edges:
            adj[i, j] = adj[j, i] = 1
        hops = torch.full((v, v), float("inf"))
        hops[adj > 0] = 1
        hops.fill_diagonal_(0)
        for k in range(v):
            hops = torch.minimum(hops, hops[:, k:k + 1] + hops[k:k + 1])
        centre = hops[1]                                       # distance to the neck
        parts = torch.zeros(3, v, v)
        for i in range(v):
            for j in range(v):
                if adj[i, j] == 0:
                    continue
                kind = 0 if centre[j] == centre[i] else 1 if centre[j] > centre[i] else 2
                parts[kind, j, i] = 1
        deg = parts.sum((0, 1)).clamp(min=1)
        return parts / deg

    class STGCNBlock(nn.Module):
        def __init__(self, cin, cout, k, stride=1, residual=True):
            super().__init__()
            self.k = k
            self.gcn = nn.Conv2d(cin, cout * k, 1)
            self.tcn = nn.Sequential(nn.BatchNorm2d(cout), nn.ReLU(),
                                     nn.Conv2d(cout, cout, (9, 1), (stride, 1), (4, 0)),
                                     nn.BatchNorm2d(cout), nn.Dropout(0.5))
            if not residual:
                self.res = None
            elif cin == cout and stride == 1:
                self.res = nn.Identity()
            else:
                self.res = nn.Sequential(nn.Conv2d(cin, cout, 1, (stride, 1)),
                                         nn.BatchNorm2d(cout))

        def forward(self, x, a):
            n, _, t, v = x.shape
            y = self.gcn(x).view(n, self.k, -1, t, v)
            y = torch.einsum("nkctv,kvw->nctw", y, a)
            y = self.tcn(y)
            return F.relu(y if self.res is None else y + self.res(x))

    class STGCN(nn.Module):
        def __init__(self, cin=3, joints=18, widths=(32, 32, 64, 64), classes=60):
            super().__init__()
            self.register_buffer("a", skeleton_partitions(joints))
            self.data_bn = nn.BatchNorm1d(cin * joints)
            blocks, c = [], cin
            for i, w in enumerate(widths):
                blocks.append(STGCNBlock(c, w, 3, stride=2 if i and w != c else 1,
                                         residual=i > 0))
                c = w
            self.blocks = nn.ModuleList(blocks)
            self.importance = nn.ParameterList(
                [nn.Parameter(torch.ones(3, joints, joints)) for _ in widths])
            self.fc = nn.Conv2d(c, classes, 1)

        def forward(self, x):                                   # (n, c, t, v)
            n, c, t, v = x.shape
            x = self.data_bn(x.permute(0, 3, 1, 2).reshape(n, v * c, t))
            x = x.view(n, v, c, t).permute(0, 2, 3, 1)
            for blk, imp in zip(self.blocks, self.importance, strict=True):
                x = blk(x, self.a * imp)
            x = F.avg_pool2d(x, x.shape[2:])
            return self.fc(x).flatten(1)

    # -- TensoRF --------------------------------------------------------------------------
    class TensoRFField(nn.Module):
        """Density from vector-matrix factors (three planes x three lines, ``grid_sample``),
        appearance features from a coarse voxel grid (5-D ``grid_sample``) and a small MLP on
        the features and the view direction."""

        def __init__(self, rank=8, grid=64, vox=16, feat=16, hidden=64):
            super().__init__()
            self.planes = nn.Parameter(0.1 * torch.randn(3, rank, grid, grid))
            self.lines = nn.Parameter(0.1 * torch.randn(3, rank, grid, 1))
            self.voxels = nn.Parameter(0.1 * torch.randn(1, feat, vox, vox, vox))
            self.mlp = nn.Sequential(nn.Linear(feat + 3, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 3))
            self.mat = ((0, 1), (0, 2), (1, 2))
            self.vec = (2, 1, 0)

        def forward(self, pts, dirs):                           # (n, 3) in [-1, 1], (n, 3)
            n = pts.shape[0]
            sigma = pts.new_zeros(n)
            for i, ((a, b), c) in enumerate(zip(self.mat, self.vec, strict=True)):
                pc = pts[:, [a, b]].view(1, n, 1, 2)
                lc = torch.stack([torch.zeros_like(pts[:, c]), pts[:, c]], -1).view(1, n, 1, 2)
                pf = F.grid_sample(self.planes[i:i + 1], pc, align_corners=True)
                lf = F.grid_sample(self.lines[i:i + 1], lc, align_corners=True)
                sigma = sigma + (pf * lf).sum(1).view(n)
            app = F.grid_sample(self.voxels, pts.view(1, n, 1, 1, 3), align_corners=True)
            app = app.view(-1, n).t()
            rgb = torch.sigmoid(self.mlp(torch.cat([app, dirs], -1)))
            return torch.cat([F.softplus(sigma - 1.0)[:, None], rgb], -1)

    # -- SPADE generator ------------------------------------------------------------------
    class SPADE(nn.Module):
        def __init__(self, c, labels, hidden=32):
            super().__init__()
            self.norm = nn.InstanceNorm2d(c, affine=False)
            self.shared = nn.Sequential(nn.Conv2d(labels, hidden, 3, padding=1), nn.ReLU())
            self.gamma = nn.Conv2d(hidden, c, 3, padding=1)
            self.beta = nn.Conv2d(hidden, c, 3, padding=1)

        def forward(self, x, seg):
            seg = F.interpolate(seg, size=x.shape[2:], mode="nearest")
            a = self.shared(seg)
            return self.norm(x) * (1 + self.gamma(a)) + self.beta(a)

    class SPADEResBlock(nn.Module):
        def __init__(self, cin, cout, labels):
            super().__init__()
            mid = min(cin, cout)
            sn = nn.utils.spectral_norm
            self.n0, self.n1 = SPADE(cin, labels), SPADE(mid, labels)
            self.c0 = sn(nn.Conv2d(cin, mid, 3, padding=1))
            self.c1 = sn(nn.Conv2d(mid, cout, 3, padding=1))
            self.ns = SPADE(cin, labels) if cin != cout else None
            self.cs = sn(nn.Conv2d(cin, cout, 1, bias=False)) if cin != cout else None

        def forward(self, x, seg):
            skip = x if self.cs is None else self.cs(self.ns(x, seg))
            y = self.c0(F.leaky_relu(self.n0(x, seg), 0.2))
            y = self.c1(F.leaky_relu(self.n1(y, seg), 0.2))
            return skip + y

    class SPADEGenerator(nn.Module):
        def __init__(self, z=64, labels=12, widths=(64, 64, 32, 16), base=4):
            super().__init__()
            self.labels, self.base, self.c0 = labels, base, widths[0]
            self.fc = nn.Linear(z, widths[0] * base * base)
            self.blocks = nn.ModuleList([SPADEResBlock(a, b, labels)
                                         for a, b in zip(widths, widths[1:], strict=False)])
            self.out = nn.Conv2d(widths[-1], 3, 3, padding=1)

        def forward(self, z, labels):                           # labels: (b, H, W) int64
            seg = F.one_hot(labels, self.labels).permute(0, 3, 1, 2).float()
            x = self.fc(z).view(-1, self.c0, self.base, self.base)
            for blk in self.blocks:
                x = F.interpolate(blk(x, seg), scale_factor=2, mode="nearest")
            return torch.tanh(self.out(F.leaky_relu(x, 0.2)))

    # -- RNN-T ----------------------------------------------------------------------------
    class RNNTransducer(nn.Module):
        """Joint log-probabilities of every (frame, label-prefix) pair: the 4-D lattice a
        transducer loss or beam search reads."""

        def __init__(self, mels=40, vocab=64, enc=96, pred=64, joint=96):
            super().__init__()
            self.sub = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.ReLU(),
                                     nn.Conv2d(16, 16, 3, 2, 1), nn.ReLU())
            self.enc = nn.LSTM(16 * ((mels + 3) // 4), enc, num_layers=2, batch_first=True)
            self.embed = nn.Embedding(vocab, pred)
            self.pred = nn.LSTM(pred, pred, batch_first=True)
            self.je, self.jp = nn.Linear(enc, joint), nn.Linear(pred, joint)
            self.out = nn.Linear(joint, vocab + 1)

        def forward(self, mel, labels):                         # (b, T, mels), (b, U)
            x = self.sub(mel.unsqueeze(1))                      # (b, 16, T/4, mels/4)
            b, c, t, f = x.shape
            h, _ = self.enc(x.permute(0, 2, 1, 3).reshape(b, t, c * f))
            blank = labels.new_zeros(b, 1)
            g, _ = self.pred(self.embed(torch.cat([blank, labels], 1)))
            j = torch.tanh(self.je(h).unsqueeze(2) + self.jp(g).unsqueeze(1))
            return F.log_softmax(self.out(j), -1)

    # -- inputs ---------------------------------------------------------------------------
    def stereo_pair(b=1, h=64, w=128, seed=81):
        def make():
            g = torch.Generator().manual_seed(seed)
            left = torch.rand(b, 3, h, w, generator=g)
            right = torch.roll(left, -5, 3) * 0.95 + 0.02 * torch.rand(b, 3, h, w, generator=g)
            return {"left": left, "right": right}
        return make

    def keypoint_sets(b=1, n=128, m=112, d=64, seed=82):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"kpts0": torch.rand(b, n, 2, generator=g) * 2 - 1,
                    "scores0": torch.rand(b, n, generator=g),
                    "desc0": F.normalize(torch.randn(b, n, d, generator=g), dim=-1),
                    "kpts1": torch.rand(b, m, 2, generator=g) * 2 - 1,
                    "scores1": torch.rand(b, m, generator=g),
                    "desc1": F.normalize(torch.randn(b, m, d, generator=g), dim=-1)}
        return make

    def series(b=8, length=96, features=7, seed=83):
        def make():
            g = torch.Generator().manual_seed(seed)
            t = torch.arange(length, dtype=torch.float32)[None, :, None]
            phase = torch.rand(b, 1, features, generator=g) * 6.28
            x = torch.sin(t / 6 + phase) + 0.01 * t + 0.2 * torch.randn(
                b, length, features, generator=g)
            return {"x": x}
        return make

    def policy_inputs(b=64, obs=24, act=6, seed=84):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"obs": torch.randn(b, obs, generator=g),
                    "eps": torch.randn(b, act, generator=g)}
        return make

    def din_inputs(b=32, t=50, items=2000, cats=50, dense=8, seed=85):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"hist_items": torch.randint(0, items, (b, t), generator=g),
                    "hist_cats": torch.randint(0, cats, (b, t), generator=g),
                    "lengths": torch.randint(1, t + 1, (b,), generator=g),
                    "item": torch.randint(0, items, (b,), generator=g),
                    "cat": torch.randint(0, cats, (b,), generator=g),
                    "dense": torch.randn(b, dense, generator=g)}
        return make

    def ca_inputs(b=2, c=16, side=48, steps=4, seed=86):
        def make():
            g = torch.Generator().manual_seed(seed)
            state = torch.rand(b, c, side, side, generator=g)
            state[:, 3] = (state[:, 3] > 0.6).float() * state[:, 3]
            return {"state": state, "fire": torch.rand(steps, b, 1, side, side, generator=g)}
        return make

    def skeleton_clip(n=2, t=64, v=18, seed=87):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"x": torch.randn(n, 3, t, v, generator=g)}
        return make

    def rays(n=4096, seed=88):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"pts": torch.rand(n, 3, generator=g) * 1.9 - 0.95,
                    "dirs": F.normalize(torch.randn(n, 3, generator=g), dim=-1)}
        return make

    def label_map(b=1, z=64, side=32, labels=12, seed=89):
        def make():
            g = torch.Generator().manual_seed(seed)
            coarse = torch.randint(0, labels, (b, side // 8, side // 8), generator=g)
            fine = coarse.repeat_interleave(8, 1).repeat_interleave(8, 2)
            return {"z": torch.randn(b, z, generator=g), "labels": fine}
        return make

    def speech(b=2, t=128, mels=40, u=20, vocab=64, seed=90):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"mel": torch.randn(b, t, mels, generator=g),
                    "labels": torch.randint(1, vocab, (b, u), generator=g)}
        return make

    return {
        "alexnet_lrn": (AlexNetLRN, (1, 3, 128, 128)),
        "stereo_costvol": (StereoCostVolume, stereo_pair()),
        "superglue_match": (SuperGlueMini, keypoint_sets()),
        "autoformer_mini": (AutoformerMini, series()),
        "ccnet_cca": (CCNetMini, (1, 3, 128, 128)),
        "sac_policy": (SACPolicy, policy_inputs()),
        "din_ctr": (DIN, din_inputs()),
        "neural_ca": (NeuralCA, ca_inputs()),
        "stgcn_skeleton": (STGCN, skeleton_clip()),
        "tensorf_field": (TensoRFField, rays()),
        "spade_generator": (SPADEGenerator, label_map()),
        "rnnt_joint": (RNNTransducer, speech()),
    }
