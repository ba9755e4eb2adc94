"""The twenty-fifth round of ``bench_new_user_models``: a DCCRN speech enhancer (complex convs and
transposed convs as pairs of real ones, an LSTM over time, a complex ratio mask applied in polar
form by ``atan2`` / ``cos`` / ``sin``), ConvCRF (a small FCN's unaries refined by mean-field
steps whose messages are Gaussian kernels over ``F.unfold`` windows of the image), DeepONet
(branch and Fourier-featured trunk networks joined by an ``einsum`` over any number of query
points), a Hopfield-pooling multiple-instance classifier (learned state patterns retrieving from
a bag by iterated ``beta``-scaled softmax updates, padded instances masked), DeepFill v2 (gated
dilated convs and contextual attention: cosine scores of every 3x3 foreground patch against the
known background patches, a masked softmax, the patches pasted back by ``F.fold``), a CNN with
dynamic activations (DY-ReLU-B: a max of two input-conditioned lines, FReLU: a max with a
depthwise spatial condition, Meta-ACON: a learned switch between linear and non-linear), an
antialiased ResNet (BlurPool: reflection pad then a fixed binomial depthwise stride-2 filter,
MaxBlurPool), MS-TCN action segmentation (stages of dilated residual ``Conv1d`` layers refining
the previous stage's softmax, masked past each sequence's length), a Transformer Hawkes process
(temporal encodings of event times, causal masked attention, softplus intensities with
``beta``, the log-likelihood's integral by Monte Carlo samples given as input), CPC (a strided
``Conv1d`` waveform encoder, a GRU context, per-offset linear predictions scored against every
timestep: InfoNCE by ``log_softmax`` and ``torch.diagonal``, accuracies by ``argmax``), CrossViT
(two patch scales, each branch's CLS token cross-attending over the other's tokens) and a
mixture-of-softmaxes LSTM LM (a tied decoder, log-probabilities by ``logsumexp`` over the
mixture). Kept apart so the main script stays readable."""

from __future__ import annotations

import math


def twentyfifth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- DCCRN ----------------------------------------------------------------------------
    class ComplexConv(nn.Module):
        """A complex conv (or transposed conv) as two real ones: (a + ib) * (w + iv)."""

        def __init__(self, cin, cout, transpose=False):
            super().__init__()
            conv = nn.ConvTranspose2d if transpose else nn.Conv2d
            kw = dict(kernel_size=(5, 2), stride=(2, 1), padding=(2, 0))
            if transpose:
                kw["output_padding"] = (1, 0)
            self.re, self.im = conv(cin, cout, **kw), conv(cin, cout, **kw)
            self.transpose = transpose

        def forward(self, xr, xi):
            if not self.transpose:                      # causal in time: pad one frame before
                xr, xi = F.pad(xr, (1, 0)), F.pad(xi, (1, 0))
            yr, yi = self.re(xr) - self.im(xi), self.re(xi) + self.im(xr)
            if self.transpose:
                yr, yi = yr[..., :-1], yi[..., :-1]
            return yr, yi

    class DCCRN(nn.Module):
        def __init__(self, freq=64, chans=(8, 16, 32), hidden=64):
            super().__init__()
            cs = (1,) + tuple(chans)
            self.enc = nn.ModuleList([ComplexConv(cs[i], cs[i + 1]) for i in range(len(chans))])
            self.enc_act = nn.ModuleList([nn.PReLU() for _ in chans])
            self.dec = nn.ModuleList([ComplexConv(2 * cs[i + 1], cs[i] if i else 1, True)
                                      for i in reversed(range(len(chans)))])
            self.dec_act = nn.ModuleList([nn.PReLU() for _ in chans[1:]])
            f = freq // 2 ** len(chans)
            self.f, self.c = f, chans[-1]
            self.lstm = nn.LSTM(2 * chans[-1] * f, hidden, batch_first=True)
            self.proj = nn.Linear(hidden, 2 * chans[-1] * f)

        def forward(self, spec_re, spec_im):                      # (b, F, T) each
            xr, xi = spec_re.unsqueeze(1), spec_im.unsqueeze(1)
            skips = []
            for conv, act in zip(self.enc, self.enc_act):
                xr, xi = conv(xr, xi)
                xr, xi = act(xr), act(xi)
                skips.append((xr, xi))
            b, c, f, t = xr.shape
            h = torch.cat([xr, xi], 1).permute(0, 3, 1, 2).reshape(b, t, 2 * c * f)
            h = self.proj(self.lstm(h)[0]).view(b, t, 2 * c, f).permute(0, 2, 3, 1)
            xr, xi = h[:, :c], h[:, c:]
            for i, conv in enumerate(self.dec):
                sr, si = skips[-1 - i]
                xr, xi = conv(torch.cat([xr, sr], 1), torch.cat([xi, si], 1))
                if i < len(self.dec_act):
                    xr, xi = self.dec_act[i](xr), self.dec_act[i](xi)
            mr, mi = xr.squeeze(1), xi.squeeze(1)
            mask_mag = torch.tanh(torch.sqrt(mr ** 2 + mi ** 2 + 1e-8))
            mask_phase = torch.atan2(mi, mr)
            mag = torch.sqrt(spec_re ** 2 + spec_im ** 2 + 1e-8) * mask_mag
            phase = torch.atan2(spec_im, spec_re) + mask_phase
            return torch.stack([mag * torch.cos(phase), mag * torch.sin(phase)], 1)

    # -- ConvCRF --------------------------------------------------------------------------
    class ConvCRF(nn.Module):
        """A small FCN's logits refined by mean-field steps (Teichmann & Cipolla 2018): each
        pixel's message sums its k x k window's label marginals weighted by a Gaussian of the
        position offset (fixed) and of the colour difference (from the image), then a learned
        label-compatibility 1x1 conv."""

        def __init__(self, classes=6, width=24, k=5, steps=4, theta_pos=3.0, theta_col=0.2):
            super().__init__()
            self.k, self.steps, self.theta_col = k, steps, theta_col
            self.fcn = nn.Sequential(
                nn.Conv2d(3, width, 3, 1, 1), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, width, 3, 2, 1), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, width, 3, 1, 2, dilation=2), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, classes, 1),
                nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False))
            r = torch.arange(k, dtype=torch.float32) - k // 2
            d2 = (r[:, None] ** 2 + r[None, :] ** 2).flatten()
            self.register_buffer("pos", torch.exp(-d2 / (2 * theta_pos ** 2)).view(1, k * k, 1))
            self.compat = nn.Conv2d(classes, classes, 1, bias=False)
            self.w_app, self.w_smooth = nn.Parameter(torch.tensor(1.5)), \
                nn.Parameter(torch.tensor(0.8))

        def forward(self, x):
            b, _, h, w = x.shape
            k, p = self.k, self.k // 2
            unary = self.fcn(x)
            c = unary.shape[1]
            col = F.unfold(x, k, padding=p).view(b, 3, k * k, h * w)
            diff = ((col - x.view(b, 3, 1, h * w)) ** 2).sum(1)      # (b, k*k, hw)
            app = torch.exp(-diff / (2 * self.theta_col ** 2)) * self.pos
            kern = self.w_app * app + self.w_smooth * self.pos
            kern = kern * (1 - F.one_hot(torch.tensor(k * k // 2), k * k).float()
                           .view(1, k * k, 1))                       # no message to oneself
            q = unary.softmax(1)
            for _ in range(self.steps):
                win = F.unfold(q, k, padding=p).view(b, c, k * k, h * w)
                msg = (win * kern.unsqueeze(1)).sum(2).view(b, c, h, w)
                q = (unary - self.compat(msg)).softmax(1)
            return q

    # -- DeepONet -------------------------------------------------------------------------
    class DeepONet(nn.Module):
        """G(u)(y) = sum_k branch_k(u) trunk_k(y) + b for each output channel."""

        def __init__(self, sensors=128, dim=2, width=128, basis=64, outs=2, freqs=16):
            super().__init__()
            self.basis, self.outs = basis, outs
            self.branch = nn.Sequential(nn.Linear(sensors, width), nn.GELU(),
                                        nn.Linear(width, width), nn.GELU(),
                                        nn.Linear(width, basis * outs))
            self.register_buffer("fourier", torch.randn(dim, freqs) * 2.0)
            self.trunk = nn.Sequential(nn.Linear(2 * freqs + dim, width), nn.Tanh(),
                                       nn.Linear(width, width), nn.Tanh(),
                                       nn.Linear(width, basis * outs), nn.Tanh())
            self.bias = nn.Parameter(torch.zeros(outs))

        def forward(self, u, y):                                  # (b, m), (b, n, dim)
            proj = 2 * math.pi * y @ self.fourier
            feat = torch.cat([y, torch.sin(proj), torch.cos(proj)], -1)
            br = self.branch(u).view(u.shape[0], self.outs, self.basis)
            tr = self.trunk(feat).view(y.shape[0], y.shape[1], self.outs, self.basis)
            return torch.einsum("bok,bnok->bno", br, tr) + self.bias

    # -- Hopfield pooling MIL -------------------------------------------------------------
    class HopfieldPooling(nn.Module):
        """Modern Hopfield pooling (Ramsauer et al. 2020): learned state patterns retrieve
        from the bag's stored patterns by xi <- softmax(beta xi K^T) V, iterated."""

        def __init__(self, d, heads=4, queries=2, iters=3, beta=None):
            super().__init__()
            self.heads, self.dh, self.iters = heads, d // heads, iters
            self.beta = beta or 1 / math.sqrt(d // heads)
            self.state = nn.Parameter(torch.randn(queries, d) * 0.5)
            self.k, self.v = nn.Linear(d, d), nn.Linear(d, d)
            self.norm_s, self.norm_x = nn.LayerNorm(d), nn.LayerNorm(d)
            self.o = nn.Linear(d, d)

        def forward(self, x, keep):                               # (b, n, d), (b, n) bool
            b, n, _ = x.shape
            x = self.norm_x(x)
            keys = self.k(x).view(b, n, self.heads, self.dh).transpose(1, 2)
            vals = self.v(x).view(b, n, self.heads, self.dh).transpose(1, 2)
            xi = self.norm_s(self.state).view(1, -1, self.heads, self.dh).transpose(1, 2)
            xi = xi.expand(b, -1, -1, -1)
            bias = torch.where(keep, 0.0, -1e9)[:, None, None, :]
            for _ in range(self.iters):
                a = torch.softmax(self.beta * xi @ keys.transpose(-1, -2) + bias, -1)
                xi = a @ keys                                     # retrieve in key space
            out = torch.softmax(self.beta * xi @ keys.transpose(-1, -2) + bias, -1) @ vals
            return self.o(out.transpose(1, 2).reshape(b, -1, self.heads * self.dh))

    class HopfieldMIL(nn.Module):
        def __init__(self, fin=64, d=128, heads=4, queries=2, classes=2):
            super().__init__()
            self.embed = nn.Sequential(nn.Linear(fin, d), nn.ReLU(), nn.Linear(d, d))
            self.pool = HopfieldPooling(d, heads, queries)
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(queries * d, d), nn.ReLU(),
                                      nn.Linear(d, classes))

        def forward(self, bag, lens):                             # (b, n, f), (b,) int
            keep = torch.arange(bag.shape[1]).unsqueeze(0) < lens.unsqueeze(1)
            return self.head(self.pool(self.embed(bag), keep))

    # -- DeepFill v2 ----------------------------------------------------------------------
    class GatedConv(nn.Module):
        def __init__(self, cin, cout, k=3, s=1, d=1, act=True):
            super().__init__()
            self.conv = nn.Conv2d(cin, 2 * cout, k, s, d * (k - 1) // 2, dilation=d)
            self.act = act

        def forward(self, x):
            f, g = self.conv(x).chunk(2, 1)
            f = F.elu(f) if self.act else f
            return f * torch.sigmoid(g)

    class ContextualAttention(nn.Module):
        """Every 3x3 foreground patch scored against every background patch (cosine, scaled),
        hole patches masked out of the softmax; the output pastes the attended raw patches
        back with ``F.fold``, averaged over the overlaps."""

        def __init__(self, scale=10.0):
            super().__init__()
            self.scale = scale

        def forward(self, x, mask):                               # (b, c, h, w), (b, 1, h, w)
            b, c, h, w = x.shape
            patches = F.unfold(x, 3, padding=1)                   # (b, c*9, hw)
            normed = patches / patches.norm(dim=1, keepdim=True).clamp_min(1e-4)
            known = (F.unfold(mask, 3, padding=1).mean(1) == 0).float()       # (b, hw)
            scores = self.scale * normed.transpose(1, 2) @ normed             # (b, hw, hw)
            scores = scores * known.unsqueeze(1) - 1e4 * (1 - known.unsqueeze(1))
            attn = scores.softmax(-1) * known.unsqueeze(1)
            pasted = F.fold(patches @ attn.transpose(1, 2), (h, w), 3, padding=1)
            overlap = F.fold(torch.ones_like(patches[:1]), (h, w), 3, padding=1)
            return pasted / overlap

    class DeepFill(nn.Module):
        def __init__(self, c=24):
            super().__init__()
            self.enc = nn.Sequential(GatedConv(5, c, 5), GatedConv(c, 2 * c, 3, 2),
                                     GatedConv(2 * c, 2 * c), GatedConv(2 * c, 4 * c, 3, 2),
                                     GatedConv(4 * c, 4 * c))
            self.dil = nn.Sequential(*[GatedConv(4 * c, 4 * c, d=d) for d in (2, 4, 8)])
            self.ctx_in = GatedConv(4 * c, 4 * c)
            self.ctx = ContextualAttention()
            self.ctx_out = GatedConv(4 * c, 4 * c)
            self.dec = nn.Sequential(GatedConv(8 * c, 4 * c),
                                     nn.Upsample(scale_factor=2, mode="nearest"),
                                     GatedConv(4 * c, 2 * c),
                                     nn.Upsample(scale_factor=2, mode="nearest"),
                                     GatedConv(2 * c, c), GatedConv(c, 3, act=False))

        def forward(self, img, mask):                             # (b, 3, h, w), (b, 1, h, w)
            x = img * (1 - mask)
            x = torch.cat([x, torch.ones_like(mask), mask], 1)
            x = self.enc(x)
            small = F.interpolate(mask, size=x.shape[-2:], mode="nearest")
            a = self.dil(x)
            b = self.ctx_out(self.ctx(self.ctx_in(x), small))
            out = torch.tanh(self.dec(torch.cat([a, b], 1)))
            return out * mask + img * (1 - mask)

    # -- dynamic activations --------------------------------------------------------------
    class DyReLUB(nn.Module):
        """DY-ReLU-B: per-channel (a1, b1, a2, b2) from the pooled input; y = max_k a_k x + b_k."""

        def __init__(self, c, r=4):
            super().__init__()
            self.fc = nn.Sequential(nn.Linear(c, c // r), nn.ReLU(), nn.Linear(c // r, 4 * c))
            self.register_buffer("init", torch.tensor([1.0, 0.0, 0.0, 0.0]))
            self.register_buffer("lam", torch.tensor([1.0, 1.0, 0.5, 0.5]))

        def forward(self, x):
            b, c = x.shape[:2]
            th = 2 * torch.sigmoid(self.fc(x.mean((2, 3)))) - 1
            coef = (th.view(b, c, 4) * self.lam + self.init).view(b, c, 4, 1, 1)
            y1 = x * coef[:, :, 0] + coef[:, :, 2]
            y2 = x * coef[:, :, 1] + coef[:, :, 3]
            return torch.max(y1, y2)

    class FReLU(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.cond = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False),
                                      nn.BatchNorm2d(c))

        def forward(self, x):
            return torch.max(x, self.cond(x))

    class MetaACON(nn.Module):
        """(p1 - p2) x sigmoid(beta (p1 - p2) x) + p2 x, beta per channel from the input."""

        def __init__(self, c, r=4):
            super().__init__()
            self.p1 = nn.Parameter(torch.randn(1, c, 1, 1))
            self.p2 = nn.Parameter(torch.randn(1, c, 1, 1))
            self.fc = nn.Sequential(nn.Conv2d(c, max(c // r, 4), 1), nn.BatchNorm2d(max(c // r, 4)),
                                    nn.Conv2d(max(c // r, 4), c, 1), nn.BatchNorm2d(c))

        def forward(self, x):
            beta = torch.sigmoid(self.fc(x.mean((2, 3), keepdim=True)))
            dp = (self.p1 - self.p2) * x
            return dp * torch.sigmoid(beta * dp) + self.p2 * x

    class DynActNet(nn.Module):
        def __init__(self, width=24, classes=10):
            super().__init__()
            acts = (DyReLUB, FReLU, MetaACON)
            chans = (width, 2 * width, 4 * width, 4 * width, 8 * width, 8 * width)
            layers, cin = [], 3
            for i, cout in enumerate(chans):
                layers += [nn.Conv2d(cin, cout, 3, 2 if i % 2 == 0 else 1, 1, bias=False),
                           nn.BatchNorm2d(cout), acts[i % 3](cout)]
                cin = cout
            self.body = nn.Sequential(*layers)
            self.head = nn.Linear(cin, classes)

        def forward(self, x):
            return self.head(self.body(x).mean((2, 3)))

    # -- antialiased ResNet ---------------------------------------------------------------
    class BlurPool(nn.Module):
        """Zhang 2019: reflection pad, then a fixed binomial filter, depthwise, stride 2."""

        def __init__(self, c, k=4):
            super().__init__()
            a = torch.tensor({3: [1.0, 2, 1], 4: [1.0, 3, 3, 1], 5: [1.0, 4, 6, 4, 1]}[k])
            f = a[:, None] * a[None, :]
            self.register_buffer("filt", (f / f.sum()).expand(c, 1, k, k).contiguous())
            self.pad = nn.ReflectionPad2d(((k - 1) // 2, k // 2, (k - 1) // 2, k // 2))
            self.c = c

        def forward(self, x):
            return F.conv2d(self.pad(x), self.filt, stride=2, groups=self.c)

    class AABasic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            down = [BlurPool(cout)] if stride == 2 else []
            self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(cout), nn.ReLU(), *down,
                                      nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(cout))
            self.short = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                *([BlurPool(cin)] if stride == 2 else []), nn.Conv2d(cin, cout, 1, bias=False),
                nn.BatchNorm2d(cout))

        def forward(self, x):
            return F.relu(self.body(x) + self.short(x))

    class AAResNet(nn.Module):
        def __init__(self, width=16, classes=10):
            super().__init__()
            w = width
            self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 1, 3, bias=False), nn.BatchNorm2d(w),
                                      nn.ReLU(), BlurPool(w),
                                      nn.MaxPool2d(2, 1), BlurPool(w, 3))   # MaxBlurPool
            self.layers = nn.Sequential(AABasic(w, w, 1), AABasic(w, 2 * w, 2),
                                        AABasic(2 * w, 2 * w, 1), AABasic(2 * w, 4 * w, 2),
                                        AABasic(4 * w, 8 * w, 2))
            self.fc = nn.Linear(8 * w, classes)

        def forward(self, x):
            return self.fc(self.layers(self.stem(x)).mean((2, 3)))

    # -- MS-TCN ---------------------------------------------------------------------------
    class DilatedResidual(nn.Module):
        def __init__(self, d, dilation):
            super().__init__()
            self.conv = nn.Conv1d(d, d, 3, padding=dilation, dilation=dilation)
            self.out = nn.Conv1d(d, d, 1)

        def forward(self, x, mask):
            return (x + self.out(F.relu(self.conv(x)))) * mask

    class Stage(nn.Module):
        def __init__(self, fin, d, classes, layers):
            super().__init__()
            self.inp = nn.Conv1d(fin, d, 1)
            self.layers = nn.ModuleList([DilatedResidual(d, 2 ** i) for i in range(layers)])
            self.out = nn.Conv1d(d, classes, 1)

        def forward(self, x, mask):
            h = self.inp(x)
            for layer in self.layers:
                h = layer(h, mask)
            return self.out(h) * mask

    class MSTCN(nn.Module):
        def __init__(self, fin=128, d=32, classes=12, stages=3, layers=8):
            super().__init__()
            self.stages = nn.ModuleList([Stage(fin if s == 0 else classes, d, classes, layers)
                                         for s in range(stages)])

        def forward(self, feats, lens):                           # (b, f, t), (b,) int
            mask = (torch.arange(feats.shape[2]).unsqueeze(0) < lens.unsqueeze(1)) \
                .unsqueeze(1).float()
            out = self.stages[0](feats, mask)
            outs = [out]
            for stage in self.stages[1:]:
                out = stage(F.softmax(out, 1) * mask, mask)
                outs.append(out)
            return torch.stack(outs, 0)

    # -- Transformer Hawkes process -------------------------------------------------------
    class THPLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads, self.dh = heads, d // heads
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

        def forward(self, x, bias, keep):                        # bias (b, 1, n, n)
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.dh).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.dh) + bias, -1)
            x = self.ln1(x + self.o((a @ v).transpose(1, 2).reshape(b, n, d))) * keep
            return self.ln2(x + self.ff(x)) * keep

    class THP(nn.Module):
        """Zuo et al. 2020: type embeddings plus sinusoidal encodings of the event times,
        causal attention; intensities softplus(alpha (t - t_j) / t_j + w h_j + b, beta); the
        log-likelihood's non-event integral by Monte Carlo at the given uniform samples."""

        def __init__(self, types=8, d=64, heads=4, layers=2):
            super().__init__()
            self.types = types
            self.emb = nn.Embedding(types + 1, d, padding_idx=0)
            self.register_buffer("div", torch.tensor(
                [10000.0 ** (2 * (i // 2) / d) for i in range(d)]))
            self.layers = nn.ModuleList([THPLayer(d, heads) for _ in range(layers)])
            self.intensity = nn.Linear(d, types)
            self.alpha = nn.Parameter(torch.full((types,), -0.1))
            self.beta = 2.0
            self.time_head = nn.Linear(d, 1)

        def encode_time(self, t):
            r = t.unsqueeze(-1) / self.div
            even = torch.arange(r.shape[-1]) % 2 == 0
            return torch.where(even, torch.sin(r), torch.cos(r))

        def forward(self, event_type, event_time, samples):     # (b, n), (b, n), (b, n-1, s)
            n = event_type.shape[1]
            keep = (event_type > 0).float().unsqueeze(-1)
            causal = torch.triu(torch.full((n, n), -1e9), 1)
            pad = torch.where(event_type > 0, 0.0, -1e9)[:, None, None, :]
            bias = causal + pad
            h = (self.emb(event_type) + self.encode_time(event_time)) * keep
            for layer in self.layers:
                h = layer(h, bias, keep)
            base = self.intensity(h)                              # (b, n, K)
            lam = F.softplus(base, beta=self.beta)
            ll_events = (torch.log(lam.gather(-1, (event_type - 1).clamp_min(0).unsqueeze(-1))
                                   .squeeze(-1) + 1e-9) * keep.squeeze(-1)).sum(1)
            dt = (event_time[:, 1:] - event_time[:, :-1]) * keep[:, 1:, 0]
            tj = event_time[:, :-1].clamp_min(1e-3)
            tdiff = dt.unsqueeze(-1) * samples                    # (b, n-1, s)
            lam_s = F.softplus(self.alpha * (tdiff / tj.unsqueeze(-1)).unsqueeze(-1)
                               + base[:, :-1].unsqueeze(2), beta=self.beta)   # (b, n-1, s, K)
            integral = (lam_s.sum(-1).mean(-1) * dt).sum(1)
            next_dt = self.time_head(h).squeeze(-1)
            return torch.cat([(ll_events - integral).unsqueeze(1), next_dt], 1)

    # -- CPC ------------------------------------------------------------------------------
    class CPC(nn.Module):
        def __init__(self, d=128, ctx=128, steps=4):
            super().__init__()
            ks, ss = (10, 8, 4, 4, 4), (5, 4, 2, 2, 2)
            layers, cin = [], 1
            for k, s in zip(ks, ss):
                layers += [nn.Conv1d(cin, d, k, s, (k - s) // 2, bias=False), nn.BatchNorm1d(d),
                           nn.ReLU()]
                cin = d
            self.enc = nn.Sequential(*layers)
            self.gru = nn.GRU(d, ctx, batch_first=True)
            self.pred = nn.ModuleList([nn.Linear(ctx, d) for _ in range(steps)])

        def forward(self, wav):                                   # (b, 1, samples)
            z = self.enc(wav).transpose(1, 2)                     # (b, t, d)
            c = self.gru(z)[0]
            t = z.shape[1]
            losses, accs = [], []
            for k, w in enumerate(self.pred, 1):
                p = w(c[:, :t - k])                               # (b, t-k, d)
                scores = p @ z[:, k:].transpose(1, 2)             # (b, t-k, t-k)
                logp = F.log_softmax(scores, -1)
                losses.append(-torch.diagonal(logp, dim1=1, dim2=2).mean(1))
                hit = scores.argmax(-1) == torch.arange(t - k).unsqueeze(0)
                accs.append(hit.float().mean(1))
            return torch.stack(losses + accs, 1)

    # -- CrossViT -------------------------------------------------------------------------
    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

        def forward(self, x):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class CrossAttend(nn.Module):
        """One branch's CLS token (projected to the other's width) attends over the other
        branch's patch tokens and itself; projected back and added to its own CLS."""

        def __init__(self, d_self, d_other, heads):
            super().__init__()
            self.heads, self.dh = heads, d_other // heads
            self.to_other, self.back = nn.Linear(d_self, d_other), nn.Linear(d_other, d_self)
            self.ln = nn.LayerNorm(d_other)
            self.q, self.kv = nn.Linear(d_other, d_other), nn.Linear(d_other, 2 * d_other)

        def forward(self, cls, other):                            # (b, 1, ds), (b, n, do)
            b, n, d = other.shape
            c = self.ln(self.to_other(cls))
            x = torch.cat([c, self.ln(other[:, 1:])], 1)
            q = self.q(c).view(b, 1, self.heads, self.dh).transpose(1, 2)
            k, v = self.kv(x).view(b, n, 2, self.heads, self.dh).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.dh), -1)
            return cls + self.back((a @ v).transpose(1, 2).reshape(b, 1, d))

    class Branch(nn.Module):
        def __init__(self, img, patch, d):
            super().__init__()
            self.embed = nn.Conv2d(3, d, patch, patch)
            self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, (img // patch) ** 2 + 1, d) * 0.02)

        def forward(self, x):
            t = self.embed(x).flatten(2).transpose(1, 2)
            return torch.cat([self.cls.expand(x.shape[0], -1, -1), t], 1) + self.pos

    class CrossViT(nn.Module):
        def __init__(self, img=64, patches=(8, 16), dims=(64, 96), heads=4, depth=2, classes=10):
            super().__init__()
            self.small, self.large = Branch(img, patches[0], dims[0]), \
                Branch(img, patches[1], dims[1])
            self.stages = nn.ModuleList([nn.ModuleList([
                nn.Sequential(Block(dims[0], heads), Block(dims[0], heads)),
                Block(dims[1], heads),
                CrossAttend(dims[0], dims[1], heads), CrossAttend(dims[1], dims[0], heads)])
                for _ in range(depth)])
            self.norms = nn.ModuleList([nn.LayerNorm(d) for d in dims])
            self.heads = nn.ModuleList([nn.Linear(d, classes) for d in dims])

        def forward(self, x):
            xs, xl = self.small(x), self.large(x)
            for blk_s, blk_l, cross_s, cross_l in self.stages:
                xs, xl = blk_s(xs), blk_l(xl)
                cs = cross_s(xs[:, :1], xl)
                cl = cross_l(xl[:, :1], xs)
                xs, xl = torch.cat([cs, xs[:, 1:]], 1), torch.cat([cl, xl[:, 1:]], 1)
            return (self.heads[0](self.norms[0](xs[:, 0]))
                    + self.heads[1](self.norms[1](xl[:, 0]))) / 2

    # -- mixture of softmaxes -------------------------------------------------------------
    class MoSLM(nn.Module):
        """Yang et al. 2018: K softmaxes over a tied vocabulary mixed by a context prior;
        log p = logsumexp_k(log prior_k + log_softmax(latent_k E^T))."""

        def __init__(self, vocab=2000, d=128, hidden=256, mixtures=4):
            super().__init__()
            self.k, self.d = mixtures, d
            self.emb = nn.Embedding(vocab, d)
            self.lstm = nn.LSTM(d, hidden, 2, batch_first=True)
            self.prior = nn.Linear(hidden, mixtures, bias=False)
            self.latent = nn.Linear(hidden, mixtures * d)
            self.bias = nn.Parameter(torch.zeros(vocab))

        def forward(self, idx):                                   # (b, t)
            h = self.lstm(self.emb(idx))[0]
            b, t, _ = h.shape
            lat = torch.tanh(self.latent(h)).view(b, t, self.k, self.d)
            logits = lat @ self.emb.weight.t() + self.bias        # (b, t, k, vocab)
            logprior = F.log_softmax(self.prior(h), -1).unsqueeze(-1)
            return torch.logsumexp(F.log_softmax(logits, -1) + logprior, 2)

    # -- inputs ---------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def spectrum(b=4, freq=64, frames=64, seed=251):
        def make():
            g = gen(seed)
            mag = torch.rand(b, freq, frames, generator=g) ** 2
            phase = torch.rand(b, freq, frames, generator=g) * 6.2832 - 3.1416
            return {"spec_re": mag * torch.cos(phase), "spec_im": mag * torch.sin(phase)}
        return make

    def operator(b=16, m=128, n=400, seed=252):
        def make():
            g = gen(seed)
            return {"u": torch.randn(b, m, generator=g), "y": torch.rand(b, n, 2, generator=g)}
        return make

    def bags(b=8, n=64, f=64, seed=253):
        def make():
            g = gen(seed)
            return {"bag": torch.randn(b, n, f, generator=g),
                    "lens": torch.randint(n // 4, n + 1, (b,), generator=g)}
        return make

    def holes(b=2, size=64, seed=254):
        def make():
            g = gen(seed)
            mask = torch.zeros(b, 1, size, size)
            for i in range(b):
                y, x = torch.randint(8, size // 2, (2,), generator=g).tolist()
                mask[i, :, y:y + size // 3, x:x + size // 3] = 1.0
            return {"img": torch.rand(b, 3, size, size, generator=g) * 2 - 1, "mask": mask}
        return make

    def video_feats(b=4, f=128, t=256, seed=255):
        def make():
            g = gen(seed)
            return {"feats": torch.randn(b, f, t, generator=g),
                    "lens": torch.randint(t // 2, t + 1, (b,), generator=g)}
        return make

    def events(b=16, n=48, types=8, s=8, seed=256):
        def make():
            g = gen(seed)
            lens = torch.randint(n // 2, n + 1, (b, 1), generator=g)
            keep = torch.arange(n) < lens
            et = torch.randint(1, types + 1, (b, n), generator=g) * keep
            gaps = torch.rand(b, n, generator=g) * 2 + 0.05
            return {"event_type": et, "event_time": torch.cumsum(gaps, 1) * keep,
                    "samples": torch.rand(b, n - 1, s, generator=g)}
        return make

    def waves(b=4, samples=8000, seed=257):
        def make():
            g = gen(seed)
            t = torch.arange(samples, dtype=torch.float32) / 16000
            f0 = torch.rand(b, 1, 1, generator=g) * 300 + 100
            return {"wav": torch.sin(2 * math.pi * f0 * t)
                    + 0.1 * torch.randn(b, 1, samples, generator=g)}
        return make

    def tokens(shape, vocab, seed):
        def make():
            return {"idx": torch.randint(0, vocab, shape, generator=gen(seed))}
        return make

    return {
        "dccrn_enhance": (DCCRN, spectrum()),
        "convcrf_seg": (ConvCRF, (2, 3, 64, 64)),
        "deeponet_op": (DeepONet, operator()),
        "hopfield_mil": (HopfieldMIL, bags()),
        "deepfill_ctxattn": (DeepFill, holes()),
        "dynact_cnn": (DynActNet, (4, 3, 64, 64)),
        "blurpool_resnet": (AAResNet, (4, 3, 64, 64)),
        "mstcn_seg": (MSTCN, video_feats()),
        "thp_hawkes": (THP, events()),
        "cpc_audio": (CPC, waves()),
        "crossvit_mini": (CrossViT, (4, 3, 64, 64)),
        "mos_lm": (MoSLM, tokens((4, 32), 2000, 258)),
    }
