"""The thirtieth round of ``bench_new_user_models``: a differentiable sorting network (an
odd-even transposition network whose swaps are logistic relaxations, the soft permutation matrix
carried along), a Lipschitz classifier (Bjorck-orthonormalized weights computed at run time,
GroupSort activations by ``sort`` over pairs), SDF sphere tracing (an MLP signed distance field
marched 16 fixed clamped steps along rays, normals by central differences, shading under a ``where``
hit mask), a mass-spring simulator (spring forces by ``index_select`` of int64 edge ends and
``index_add`` back, a learned drag, symplectic Euler unrolled), a deep equilibrium model
(weight-tied fixed-point iterations of a GroupNorm conv cell), a Gabor multiplicative filter
network (products of Gaussian-windowed sines over coordinates), a neural HMM (log-space
forward-backward by ``logsumexp`` recursions, state posteriors), MAE random masking (noise
``argsort``, visible patches by ``gather``, mask tokens unshuffled by the inverse permutation),
spectral pooling (a 2-D DFT as matmuls with cos / sin matrices, low frequencies cropped,
inverse DFT), explicit sparse top-k attention (scores below the k-th largest
``masked_fill``-ed with -inf), an AlphaZero-style policy-value net over a legal-move bool
mask (``where``, ``any``, ``all``) and a soft decision tree (path probabilities multiplied level
by level, interleaved by ``stack`` + ``flatten``). Kept apart so the main script stays
readable."""

from __future__ import annotations

import math


def thirtieth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- differentiable sorting network ------------------------------------------------------
    class DiffSortNet(nn.Module):
        """Petersen et al. 2021: an MLP scores ``n`` items; an odd-even transposition network
        of ``n`` layers sorts the scores with each compare-and-swap relaxed by a logistic
        sigmoid of steepness ``beta``; the relaxed permutation matrix is updated alongside and
        applied to the items' values (a soft top-ranked readout)."""

        def __init__(self, fin=16, n=16, hidden=64, beta=8.0):
            super().__init__()
            self.n, self.beta = n, beta
            self.score = nn.Sequential(nn.Linear(fin, hidden), nn.GELU(), nn.Linear(hidden, 1))
            self.value = nn.Linear(fin, 8)
            for layer in range(n):
                lo = torch.arange(layer % 2, n - 1, 2)
                rest = torch.tensor(sorted(set(range(n)) - set(lo.tolist())
                                           - set((lo + 1).tolist())), dtype=torch.long)
                order = torch.cat([lo, lo + 1, rest])
                self.register_buffer(f"lo{layer}", lo)
                self.register_buffer(f"rest{layer}", rest)
                self.register_buffer(f"inv{layer}", torch.argsort(order))

        def forward(self, items):                                  # (b, n, fin)
            x = self.score(items).squeeze(-1)                      # (b, n)
            b = x.shape[0]
            perm = torch.eye(self.n).expand(b, self.n, self.n)
            for layer in range(self.n):
                lo, rest = getattr(self, f"lo{layer}"), getattr(self, f"rest{layer}")
                inv = getattr(self, f"inv{layer}")
                a, c = x[:, lo], x[:, lo + 1]
                s = torch.sigmoid(self.beta * (c - a))              # 1 when already in order
                x = torch.cat([s * a + (1 - s) * c, (1 - s) * a + s * c, x[:, rest]], 1)[:, inv]
                pa, pc = perm[:, lo], perm[:, lo + 1]
                s3 = s[..., None]
                perm = torch.cat([s3 * pa + (1 - s3) * pc, (1 - s3) * pa + s3 * pc,
                                  perm[:, rest]], 1)[:, inv]
            ranked = perm @ self.value(items)                      # (b, n, 8)
            return torch.cat([x, ranked.flatten(1)], 1)

    # -- Lipschitz GroupSort network ---------------------------------------------------------
    class BjorckLinear(nn.Module):
        """Anil et al. 2019: the weight orthonormalized at every call by ``iters`` Bjorck
        steps W <- 1.5 W - 0.5 W W^T W after scaling by its Frobenius norm."""

        def __init__(self, fin, fout, iters=4):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(fout, fin) / math.sqrt(fin))
            self.bias = nn.Parameter(torch.zeros(fout))
            self.iters = iters

        def forward(self, x):
            w = self.weight / self.weight.norm()
            for _ in range(self.iters):
                w = 1.5 * w - 0.5 * w @ w.t() @ w
            return F.linear(x, w, self.bias)

    class GroupSort(nn.Module):
        """Sorts each group of ``size`` neighbouring features (size 2: MaxMin)."""

        def __init__(self, size=2):
            super().__init__()
            self.size = size

        def forward(self, x):
            b, d = x.shape
            return x.view(b, d // self.size, self.size).sort(-1)[0].view(b, d)

    class LipschitzNet(nn.Module):
        def __init__(self, fin=64, width=128, depth=4, classes=10):
            super().__init__()
            layers, cin = [], fin
            for _ in range(depth):
                layers += [BjorckLinear(cin, width), GroupSort()]
                cin = width
            self.body = nn.Sequential(*layers)
            self.head = BjorckLinear(width, classes)

        def forward(self, x):
            return self.head(self.body(x))

    # -- SDF sphere tracing ------------------------------------------------------------------
    class SDFTracer(nn.Module):
        """A DeepSDF-style MLP (softplus) plus a sphere prior as the signed distance; rays
        from a pinhole camera march ``steps`` fixed sphere-tracing steps t <- clamp(t + 0.9 sdf(o + t d), 0, 5);
        normals by central differences; Lambertian shading where the ray hit, background
        elsewhere."""

        def __init__(self, hidden=64, steps=16, eps=1e-3):
            super().__init__()
            self.steps, self.eps = steps, eps
            self.mlp = nn.Sequential(nn.Linear(3, hidden), nn.Softplus(beta=10),
                                     nn.Linear(hidden, hidden), nn.Softplus(beta=10),
                                     nn.Linear(hidden, 1))
            nn.init.normal_(self.mlp[-1].weight, 0.0, 0.01)
            self.register_buffer("light", F.normalize(torch.tensor([0.6, 0.8, -0.5]), dim=0))
            self.register_buffer("offsets", torch.eye(3) * eps)

        def sdf(self, p):
            return p.norm(dim=-1, keepdim=True) - 0.8 + self.mlp(p)

        def forward(self, origin, dirs):                           # (b, R, 3) (b, R, 3)
            d = F.normalize(dirs, dim=-1)
            t = torch.zeros_like(d[..., :1])
            for _ in range(self.steps):
                t = (t + 0.9 * self.sdf(origin + t * d)).clamp(0.0, 5.0)
            p = origin + t * d
            dist = self.sdf(p)
            q = p[..., None, :]                                    # (b, R, 1, 3)
            grad = (self.sdf(q + self.offsets) - self.sdf(q - self.offsets)).squeeze(-1)
            normal = F.normalize(grad, dim=-1)
            shade = (normal * self.light).sum(-1, keepdim=True).clamp(min=0.0)
            hit = (dist.abs() < 0.05) & (t < 4.0)
            color = torch.where(hit, 0.1 + 0.9 * shade, torch.full_like(shade, 0.05))
            return torch.cat([color, t, hit.float()], -1)

    # -- mass-spring simulation --------------------------------------------------------------
    class MassSpring(nn.Module):
        """A cloth-like grid of particles joined by springs (int64 edge ends); each step
        gathers both ends by ``index_select``, applies Hooke's law along the spring, scatters
        the forces back by ``index_add``, adds gravity and a learned velocity-dependent drag,
        pins the top row by a mask and integrates by symplectic Euler."""

        def __init__(self, side=12, steps=10, dt=0.02):
            super().__init__()
            self.steps, self.dt, n = steps, dt, side * side
            idx = torch.arange(n).view(side, side)
            edges = [torch.stack([idx[:, :-1].flatten(), idx[:, 1:].flatten()], 1),
                     torch.stack([idx[:-1].flatten(), idx[1:].flatten()], 1),
                     torch.stack([idx[:-1, :-1].flatten(), idx[1:, 1:].flatten()], 1),
                     torch.stack([idx[:-1, 1:].flatten(), idx[1:, :-1].flatten()], 1)]
            e = torch.cat(edges)
            self.register_buffer("src", e[:, 0].contiguous())
            self.register_buffer("dst", e[:, 1].contiguous())
            self.register_buffer("free", (idx >= side).float().flatten()[:, None])
            self.log_k = nn.Parameter(torch.tensor(math.log(200.0)))
            self.drag = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 3))
            self.register_buffer("gravity", torch.tensor([0.0, -9.8, 0.0]))

        def forward(self, pos, vel, rest):                         # (N, 3) (N, 3) (E,)
            k = torch.exp(self.log_k)
            for _ in range(self.steps):
                a, b = pos.index_select(0, self.src), pos.index_select(0, self.dst)
                delta = b - a
                length = delta.norm(dim=-1, keepdim=True).clamp(min=1e-6)
                f = k * (length - rest[:, None]) * delta / length   # on the src end
                force = torch.zeros_like(pos).index_add(0, self.src, f).index_add(0, self.dst, -f)
                acc = force + self.gravity - 0.1 * self.drag(vel)
                vel = (vel + self.dt * acc) * self.free
                pos = pos + self.dt * vel
            return torch.cat([pos, vel], 1)

    # -- deep equilibrium model --------------------------------------------------------------
    class DEQCell(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
            self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
            self.gn1, self.gn2, self.gn3 = nn.GroupNorm(4, c), nn.GroupNorm(4, c), nn.GroupNorm(4, c)
            nn.init.normal_(self.conv1.weight, 0.0, 0.01)
            nn.init.normal_(self.conv2.weight, 0.0, 0.01)

        def forward(self, z, x):
            y = F.relu(self.gn1(self.conv1(z)))
            return self.gn3(F.relu(z + self.gn2(x + self.conv2(y))))

    class DEQNet(nn.Module):
        """Bai et al. 2019 (the MDEQ-style residual cell): one weight-tied cell iterated
        ``iters`` times as a fixed-point solve z = f(z, x), damped by ``0.5``; the injected x
        comes from a conv stem."""

        def __init__(self, c=32, iters=10, classes=10):
            super().__init__()
            self.iters = iters
            self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c))
            self.cell = DEQCell(c)
            self.head = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                      nn.Linear(2 * c, classes))

        def forward(self, x):
            x = self.stem(x)
            z = torch.zeros_like(x)
            for _ in range(self.iters):
                z = 0.5 * z + 0.5 * self.cell(z, x)
            return self.head(z)

    # -- multiplicative filter network -------------------------------------------------------
    class GaborMFN(nn.Module):
        """Fathony et al. 2021: z1 = g1(x); z_{i+1} = (W_i z_i + b_i) * g_{i+1}(x), each
        filter g(x) = exp(-gamma / 2 ||x - mu||^2) * sin(omega x + phi) over the coordinates;
        an RGB linear readout."""

        def __init__(self, fin=2, hidden=128, layers=4, out=3, scale=64.0):
            super().__init__()
            self.mu = nn.ParameterList([nn.Parameter(torch.rand(hidden, fin) * 2 - 1)
                                        for _ in range(layers)])
            self.gamma = nn.ParameterList([nn.Parameter(torch.distributions.Gamma(
                6.0 / layers, 1.0).sample((hidden,)) * 4) for _ in range(layers)])
            self.filters = nn.ModuleList([nn.Linear(fin, hidden) for _ in range(layers)])
            for i, lin in enumerate(self.filters):
                lin.weight.data *= scale / math.sqrt(layers) * torch.sqrt(self.gamma[i][:, None])
                lin.bias.data.uniform_(-math.pi, math.pi)
            self.linears = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(layers - 1)])
            for lin in self.linears:
                nn.init.uniform_(lin.weight, -math.sqrt(6 / hidden), math.sqrt(6 / hidden))
            self.out = nn.Linear(hidden, out)

        def gabor(self, i, x):
            d2 = ((x[:, None, :] - self.mu[i][None]) ** 2).sum(-1)  # (N, hidden)
            return torch.exp(-0.5 * self.gamma[i] * d2) * torch.sin(self.filters[i](x))

        def forward(self, coords):                                 # (N, 2)
            z = self.gabor(0, coords)
            for i, lin in enumerate(self.linears):
                z = lin(z) * self.gabor(i + 1, coords)
            return self.out(z)

    # -- neural HMM --------------------------------------------------------------------------
    class NeuralHMM(nn.Module):
        """A hidden Markov model whose emission log-likelihoods come from a 1-D conv encoder
        (log_softmax over a learned codebook of observations); the log-space forward and
        backward recursions (``logsumexp`` over the previous state, unrolled over time) give
        the sequence log-likelihood and each step's state posterior."""

        def __init__(self, fin=12, states=16, hidden=64):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv1d(fin, hidden, 5, padding=2), nn.GELU(),
                                     nn.Conv1d(hidden, hidden, 3, padding=1), nn.GELU())
            self.emit = nn.Linear(hidden, states)
            self.trans = nn.Parameter(torch.randn(states, states) * 0.5 + 2.0 * torch.eye(states))
            self.init = nn.Parameter(torch.zeros(states))

        def forward(self, x):                                      # (b, T, fin)
            h = self.enc(x.transpose(1, 2)).transpose(1, 2)
            emit = self.emit(h).log_softmax(-1)                    # (b, T, S)
            logA = self.trans.log_softmax(-1)                      # from -> to
            T = x.shape[1]
            alpha = [self.init.log_softmax(-1) + emit[:, 0]]
            for t in range(1, T):
                alpha.append(torch.logsumexp(alpha[-1][..., None] + logA, 1) + emit[:, t])
            beta = [torch.zeros_like(alpha[0])]
            for t in range(T - 2, -1, -1):
                beta.append(torch.logsumexp(logA + (emit[:, t + 1] + beta[-1])[:, None, :], 2))
            a, b = torch.stack(alpha, 1), torch.stack(beta[::-1], 1)
            loglik = torch.logsumexp(a[:, -1], -1, keepdim=True)
            post = torch.exp(a + b - loglik[..., None])
            return torch.cat([loglik, post.flatten(1)], 1)

    # -- MAE random masking ------------------------------------------------------------------
    class MAE(nn.Module):
        """He et al. 2022: patch embeddings keep a random 25% (``argsort`` of per-patch noise,
        ``gather`` of the first ``keep``); a transformer encodes only those; the decoder
        appends mask tokens, unshuffles by ``argsort`` of the shuffle (the inverse permutation)
        and predicts every patch's pixels; returns the reconstruction and the loss on the
        masked patches only."""

        def __init__(self, size=64, patch=8, d=128, dd=64, heads=4, ratio=0.75):
            super().__init__()
            self.p, n = patch, (size // patch) ** 2
            self.keep = int(n * (1 - ratio))
            self.embed = nn.Conv2d(3, d, patch, patch)
            self.pos = nn.Parameter(torch.randn(1, n, d) * 0.02)
            self.enc = nn.ModuleList([nn.TransformerEncoderLayer(
                d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                norm_first=True) for _ in range(2)])
            self.norm, self.to_dec = nn.LayerNorm(d), nn.Linear(d, dd)
            self.mask_token = nn.Parameter(torch.randn(1, 1, dd) * 0.02)
            self.dpos = nn.Parameter(torch.randn(1, n, dd) * 0.02)
            self.dec = nn.TransformerEncoderLayer(dd, heads, 4 * dd, dropout=0.0,
                                                  activation="gelu", batch_first=True,
                                                  norm_first=True)
            self.pred = nn.Linear(dd, patch * patch * 3)

        def forward(self, img, noise):                             # (b, 3, H, W), (b, n)
            b = img.shape[0]
            x = self.embed(img).flatten(2).transpose(1, 2) + self.pos  # (b, n, d)
            n, d = x.shape[1], x.shape[2]
            shuffle = torch.argsort(noise, 1)
            restore = torch.argsort(shuffle, 1)
            keep = shuffle[:, :self.keep]
            x = torch.gather(x, 1, keep[..., None].expand(b, self.keep, d))
            for layer in self.enc:
                x = layer(x)
            y = self.to_dec(self.norm(x))
            y = torch.cat([y, self.mask_token.expand(b, n - self.keep, -1)], 1)
            y = torch.gather(y, 1, restore[..., None].expand(b, n, y.shape[2])) + self.dpos
            pred = self.pred(self.dec(y))                          # (b, n, p*p*3)
            p, hw = self.p, img.shape[2] // self.p
            target = img.reshape(b, 3, hw, p, hw, p).permute(0, 2, 4, 3, 5, 1).reshape(b, n, -1)
            mask = torch.ones(b, n)
            mask[:, :self.keep] = 0.0
            mask = torch.gather(mask, 1, restore)
            loss = (((pred - target) ** 2).mean(-1) * mask).sum() / mask.sum()
            return torch.cat([pred.flatten(1), loss.expand(b, 1)], 1)

    # -- spectral pooling --------------------------------------------------------------------
    def dft(n):
        k = torch.arange(n, dtype=torch.float64)
        ang = 2 * math.pi * k[:, None] * k[None] / n
        return torch.cos(ang).float(), -torch.sin(ang).float()

    def centered(m):
        """The indices of the ``m`` lowest frequencies of an n-point DFT: 0.. and -..-1."""
        return list(range((m + 1) // 2)) + list(range(-(m // 2), 0))

    class SpectralPool(nn.Module):
        """Rippel et al. 2015 without ``torch.fft``: X = F x F^T as real matmuls with the
        cos / sin DFT matrices, the m x m lowest frequencies kept, the inverse DFT of that
        m-point spectrum taken by its own matrices; the real part is the pooled map."""

        def __init__(self, n, m):
            super().__init__()
            c, s = dft(n)
            idx = torch.tensor(centered(m)) % n
            self.register_buffer("fc", c[idx])                     # (m, n) rows kept
            self.register_buffer("fs", s[idx])
            ci, si = dft(m)
            self.register_buffer("ic", ci / m)                     # inverse: conj, 1/m
            self.register_buffer("is_", -si / m)
            self.scale = (m * m) / (n * n)

        def forward(self, x):                                      # (b, c, n, n)
            # X = F x F^T (complex F = fc + i fs)
            ar, ai = self.fc @ x, self.fs @ x                      # (b, c, m, n)
            xr = ar @ self.fc.t() - ai @ self.fs.t()
            xi = ar @ self.fs.t() + ai @ self.fc.t()
            # y = Re(G X G^T), G = ic + i is_
            br, bi = self.ic @ xr - self.is_ @ xi, self.ic @ xi + self.is_ @ xr
            return (br @ self.ic.t() - bi @ self.is_.t()) * self.scale

    class SpectralPoolCNN(nn.Module):
        def __init__(self, classes=10):
            super().__init__()

            def block(i, o):
                return nn.Sequential(nn.Conv2d(i, o, 3, 1, 1), nn.BatchNorm2d(o), nn.ReLU())
            self.b1, self.p1 = block(3, 32), SpectralPool(64, 40)
            self.b2, self.p2 = block(32, 64), SpectralPool(40, 24)
            self.b3, self.p3 = block(64, 96), SpectralPool(24, 12)
            self.head = nn.Linear(96, classes)

        def forward(self, x):
            x = self.p1(self.b1(x))
            x = self.p2(self.b2(x))
            x = self.p3(self.b3(x))
            return self.head(x.mean((2, 3)))

    # -- explicit sparse top-k attention -----------------------------------------------------
    class TopKAttention(nn.Module):
        """Zhao et al. 2019: causal scores keep only each query's ``k`` largest (those below
        the k-th value ``masked_fill``-ed with -inf) before the softmax."""

        def __init__(self, d, heads, k):
            super().__init__()
            self.h, self.k = heads, k
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(self, x, causal):
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            s = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.h)
            s = s.masked_fill(causal, float("-inf"))
            kth = s.topk(self.k, -1)[0][..., -1:]
            s = s.masked_fill(s < kth, float("-inf"))
            y = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
            return self.out(y)

    class TopKLM(nn.Module):
        def __init__(self, vocab=400, d=96, heads=4, seq=48, depth=2, k=8):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(seq, d) * 0.02)
            self.attn = nn.ModuleList([TopKAttention(d, heads, k) for _ in range(depth)])
            self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.ffn = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                                    nn.Linear(4 * d, d)) for _ in range(depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)
            self.register_buffer("causal", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))

        def forward(self, ids):
            x = self.emb(ids) + self.pos
            for attn, n1, n2, ffn in zip(self.attn, self.n1, self.n2, self.ffn):
                x = x + attn(n1(x), self.causal)
                x = x + ffn(n2(x))
            return self.head(self.norm(x))

    # -- AlphaZero policy-value net over a legal-move mask -----------------------------------
    class ResBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)
            self.c2, self.b2 = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))

    class AlphaZeroNet(nn.Module):
        """Silver et al. 2018 at board 9x9: a residual tower, a policy head whose illegal moves
        (a bool mask input) are ``where``-d to -inf before the softmax (a board with no legal
        move - ``any`` false - passes instead), a tanh value head; the value of a finished
        board (every point filled, ``all``) is the material count instead of the net's."""

        def __init__(self, planes=6, c=48, blocks=4, side=9):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(planes, c, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(c), nn.ReLU())
            self.tower = nn.Sequential(*[ResBlock(c) for _ in range(blocks)])
            self.pol = nn.Sequential(nn.Conv2d(c, 2, 1, bias=False), nn.BatchNorm2d(2), nn.ReLU(),
                                     nn.Flatten(), nn.Linear(2 * side * side, side * side + 1))
            self.val = nn.Sequential(nn.Conv2d(c, 1, 1, bias=False), nn.BatchNorm2d(1), nn.ReLU(),
                                     nn.Flatten(), nn.Linear(side * side, 64), nn.ReLU(),
                                     nn.Linear(64, 1), nn.Tanh())

        def forward(self, board, legal):                           # (b, P, 9, 9), (b, 81) bool
            h = self.tower(self.stem(board))
            logits = self.pol(h)                                   # (b, 82): the last is pass
            can_move = legal.any(-1, keepdim=True)
            allowed = torch.cat([legal, ~can_move], -1)
            logits = torch.where(allowed, logits, torch.tensor(float("-inf")))
            policy = logits.softmax(-1)
            stones = board[:, 0] + board[:, 1]                     # (b, 9, 9) own / theirs
            full = (stones > 0.5).flatten(1).all(-1, keepdim=True)
            score = torch.tanh((board[:, 0] - board[:, 1]).sum((1, 2))[:, None] / 10.0)
            value = torch.where(full, score, self.val(h))
            return torch.cat([policy, value], -1)

    # -- soft decision tree ------------------------------------------------------------------
    class SoftDecisionTree(nn.Module):
        """Frosst & Hinton 2017 behind a small CNN feature extractor: every inner node routes
        right with probability sigmoid(beta (w x + b)); a level's path probabilities are the
        parent's times (p, 1 - p), interleaved by ``stack`` + ``flatten``; the prediction mixes
        the leaves' softmax distributions."""

        def __init__(self, depth=6, classes=10, beta=2.0):
            super().__init__()
            self.depth, self.beta = depth, beta
            self.features = nn.Sequential(
                nn.Conv2d(1, 16, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                nn.Linear(32 * 7 * 7, 64))
            self.inner = nn.Linear(64, 2 ** depth - 1)
            self.leaves = nn.Parameter(torch.randn(2 ** depth, classes))

        def forward(self, x):
            f = self.features(x)
            p = torch.sigmoid(self.beta * self.inner(f))           # (b, 2^depth - 1)
            mu = torch.ones(x.shape[0], 1)
            start = 0
            for level in range(self.depth):
                width = 2 ** level
                pl = p[:, start:start + width]
                mu = torch.stack([mu * pl, mu * (1 - pl)], 2).flatten(1)
                start += width
            return mu @ self.leaves.softmax(-1)

    # -- inputs ------------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def item_sets(b=32, n=16, fin=16, seed=301):
        def make():
            return {"items": torch.randn(b, n, fin, generator=gen(seed))}
        return make

    def rays(b=2, side=24, seed=302):
        def make():
            g = gen(seed)
            ax = torch.linspace(-0.6, 0.6, side)
            yy, xx = torch.meshgrid(ax, ax, indexing="ij")
            d = torch.stack([xx, yy, torch.ones_like(xx)], -1).view(1, -1, 3).repeat(b, 1, 1)
            d = d + 0.01 * torch.randn(d.shape, generator=g)
            o = torch.tensor([0.0, 0.0, -2.5]).expand_as(d).contiguous()
            return {"origin": o, "dirs": d}
        return make

    def cloth(side=12, seed=303):
        def make():
            g = gen(seed)
            ax = torch.linspace(0, 1, side)
            yy, xx = torch.meshgrid(ax, ax, indexing="ij")
            pos = torch.stack([xx, -yy, torch.zeros_like(xx)], -1).view(-1, 3)
            pos = pos + 0.01 * torch.randn(pos.shape, generator=g)
            m = MassSpring(side)
            rest = (pos[m.dst] - pos[m.src]).norm(dim=-1) * 0.98
            return {"pos": pos, "vel": torch.zeros_like(pos), "rest": rest}
        return make

    def coords(side=48):
        def make():
            ax = torch.linspace(-1, 1, side)
            yy, xx = torch.meshgrid(ax, ax, indexing="ij")
            return {"coords": torch.stack([xx, yy], -1).view(-1, 2)}
        return make

    def sequences(b=8, t=32, fin=12, seed=304):
        def make():
            return {"x": torch.randn(b, t, fin, generator=gen(seed))}
        return make

    def mae_inputs(b=4, size=64, patch=8, seed=305):
        def make():
            g = gen(seed)
            return {"img": torch.randn(b, 3, size, size, generator=g),
                    "noise": torch.rand(b, (size // patch) ** 2, generator=g)}
        return make

    def token_ids(b, t, vocab, seed):
        def make():
            return {"ids": torch.randint(0, vocab, (b, t), generator=gen(seed))}
        return make

    def boards(b=16, side=9, seed=306):
        def make():
            g = gen(seed)
            r = torch.rand(b, side * side, generator=g)
            own, their = (r < 0.3).float(), ((r >= 0.3) & (r < 0.6)).float()
            own[-1], their[-1] = (r[-1] < 0.5).float(), (r[-1] >= 0.5).float()  # a full board
            empty = 1 - own - their
            planes = torch.stack([own, their, empty, torch.rand(b, side * side, generator=g),
                                  torch.zeros(b, side * side), torch.ones(b, side * side)], 1)
            legal = (empty > 0.5) & (torch.rand(b, side * side, generator=g) < 0.8)
            legal[-2] = False                                      # no legal move: pass
            return {"board": planes.view(b, 6, side, side), "legal": legal}
        return make

    return {
        "diffsort_network": (DiffSortNet, item_sets()),
        "lipschitz_groupsort": (LipschitzNet, (64, 64)),
        "sdf_sphere_trace": (SDFTracer, rays()),
        "mass_spring_sim": (MassSpring, cloth()),
        "deq_fixed_point": (DEQNet, (2, 3, 32, 32)),
        "gabor_mfn": (GaborMFN, coords()),
        "neural_hmm": (NeuralHMM, sequences()),
        "mae_random_mask": (MAE, mae_inputs()),
        "spectral_pool_cnn": (SpectralPoolCNN, (2, 3, 64, 64)),
        "topk_sparse_attn": (TopKLM, token_ids(4, 48, 400, 307)),
        "alphazero_masked": (AlphaZeroNet, boards()),
        "soft_decision_tree": (SoftDecisionTree, (32, 1, 28, 28)),
    }
