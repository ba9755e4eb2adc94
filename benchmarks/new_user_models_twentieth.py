"""The twentieth round of ``bench_new_user_models``: a V-Net-style 3D segmenter (``Conv3d``
with ``InstanceNorm3d`` and ``PReLU``, ``ConvTranspose3d`` up-sampling, a softmax over the
classes), a SOLOv2 head with its Matrix NMS (dynamic mask kernels, candidates by ``topk`` over
locations x classes, binary masks' IoU by a matrix product, ``triu``, Gaussian decay by a
column ``max`` and ``min``), BiDAF question answering (a char-CNN max over characters, a
highway network, the trilinear similarity, context-to-query and query-to-context attention),
a pointer-generator summarizer step loop (coverage attention, the copy distribution
``scatter_add``-ed into an extended vocabulary), ConvE knowledge-graph scoring (entity and
relation embeddings reshaped to 2D and stacked, a conv, scores against every entity), SCINet
(even / odd halves by ``x[:, ::2]`` and ``x[:, 1::2]``, exp-scaled interactive learning,
re-interleaved by ``stack`` + ``reshape``), a Decision Transformer (return / state / action
tokens interleaved by ``stack``, a causal GPT, actions from the state tokens), a Universal
Transformer with adaptive computation time (one shared layer, halting probabilities,
remainders and update weights over a fixed number of steps), XCiT (cross-covariance
attention over channels with L2-normalized queries and keys, local patch interaction by
depthwise convs, class-attention layers), PNA over an edge list (mean / max / min / std
aggregators by ``scatter_reduce``, degree scalers), Graves' handwriting synthesis (an
attention window of Gaussians over the characters, a mixture density head's negative log
likelihood by ``logsumexp``) and DeepAR (an LSTM over scaled lagged counts, covariates and
a series embedding; a negative-binomial negative log likelihood written with
``torch.lgamma``). Kept apart so the main script stays readable."""

from __future__ import annotations

import math


def twentieth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- V-Net / 3D U-Net -----------------------------------------------------------------
    class VNetStage(nn.Module):
        """``n`` 5x5x5 convs with instance norm and PReLU, the stage's input added back."""

        def __init__(self, c, n):
            super().__init__()
            self.convs = nn.Sequential(*[nn.Sequential(
                nn.Conv3d(c, c, 3, padding=1), nn.InstanceNorm3d(c, affine=True),
                nn.PReLU(c)) for _ in range(n)])

        def forward(self, x):
            return self.convs(x) + x

    class VNet3D(nn.Module):
        def __init__(self, cin=1, c=8, classes=3):
            super().__init__()
            self.inp = nn.Sequential(nn.Conv3d(cin, c, 3, padding=1), nn.PReLU(c))
            self.enc = nn.ModuleList([VNetStage(c, 1), VNetStage(2 * c, 2), VNetStage(4 * c, 2)])
            self.down = nn.ModuleList([nn.Conv3d(c, 2 * c, 2, 2), nn.Conv3d(2 * c, 4 * c, 2, 2)])
            self.up = nn.ModuleList([nn.ConvTranspose3d(4 * c, 2 * c, 2, 2),
                                     nn.ConvTranspose3d(2 * c, c, 2, 2)])
            self.fuse = nn.ModuleList([nn.Conv3d(4 * c, 2 * c, 1), nn.Conv3d(2 * c, c, 1)])
            self.dec = nn.ModuleList([VNetStage(2 * c, 2), VNetStage(c, 1)])
            self.head = nn.Conv3d(c, classes, 1)

        def forward(self, x):
            x = self.enc[0](self.inp(x))
            skips = [x]
            for down, stage in zip(self.down, self.enc[1:], strict=True):
                x = stage(down(x))
                skips.append(x)
            skips.pop()
            for up, fuse, stage in zip(self.up, self.fuse, self.dec, strict=True):
                x = stage(fuse(torch.cat([up(x), skips.pop()], 1)))
            return F.softmax(self.head(x), 1)

    # -- SOLOv2 with Matrix NMS -----------------------------------------------------------
    def conv_gn(cin, cout, k=3, s=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False),
                             nn.GroupNorm(4, cout), nn.ReLU(inplace=True))

    class SOLOv2Mini(nn.Module):
        """Category scores and mask kernels on an S x S grid; the top candidates' masks by
        their kernels over the mask features; scores decayed by Matrix NMS."""

        def __init__(self, c=32, grid=12, classes=8, top=24, sigma=2.0):
            super().__init__()
            self.grid, self.classes, self.top, self.sigma = grid, classes, top, sigma
            self.backbone = nn.Sequential(conv_gn(3, c, 3, 2), conv_gn(c, c, 3, 2),
                                          conv_gn(c, c))
            self.cate = nn.Sequential(conv_gn(c, c), nn.Conv2d(c, classes, 3, padding=1))
            self.kernel = nn.Sequential(conv_gn(c + 2, c), nn.Conv2d(c, c, 3, padding=1))
            self.mask_feat = nn.Sequential(conv_gn(c, c), nn.Conv2d(c, c, 1))

        def forward(self, x):
            f = self.backbone(x)                                        # (1, c, h, w)
            g = F.interpolate(f, size=(self.grid, self.grid), mode="bilinear",
                              align_corners=False)
            ys = torch.linspace(-1, 1, self.grid).view(1, 1, -1, 1).expand(1, 1, -1, self.grid)
            coords = torch.cat([ys, ys.transpose(2, 3)], 1)
            cate = torch.sigmoid(self.cate(g))                          # (1, k, S, S)
            cate = cate * (F.max_pool2d(cate, 2, 1, 1)[:, :, :-1, :-1] == cate).float()
            kernels = self.kernel(torch.cat([g, coords], 1)).flatten(2)[0].t()  # (S*S, c)
            feats = self.mask_feat(f).flatten(2)[0]                     # (c, h*w)
            scores, idx = cate[0].permute(1, 2, 0).reshape(-1).topk(self.top)
            loc, label = idx // self.classes, idx % self.classes
            masks = torch.sigmoid(kernels[loc] @ feats)                 # (top, h*w)
            binary = (masks > 0.5).float()
            area = binary.sum(1)
            soft = (masks * binary).sum(1) / area.clamp(min=1)
            scores = scores * soft
            inter = binary @ binary.t()
            union = area[:, None] + area[None, :] - inter
            iou = (inter / union.clamp(min=1)).triu(1)
            same = (label[:, None] == label[None, :]).float().triu(1)
            decay_iou = iou * same
            compensate = decay_iou.max(0)[0]
            decay = torch.exp(-self.sigma * (decay_iou ** 2 - compensate[:, None] ** 2))
            scores = scores * decay.min(0)[0]
            h, w = f.shape[2:]
            return (scores[:, None] * masks).view(1, self.top, h, w)

    # -- BiDAF ----------------------------------------------------------------------------
    class Highway(nn.Module):
        def __init__(self, d, layers=2):
            super().__init__()
            self.t = nn.ModuleList([nn.Linear(d, d) for _ in range(layers)])
            self.h = nn.ModuleList([nn.Linear(d, d) for _ in range(layers)])

        def forward(self, x):
            for t, h in zip(self.t, self.h, strict=True):
                gate = torch.sigmoid(t(x))
                x = gate * F.relu(h(x)) + (1 - gate) * x
            return x

    class BiDAF(nn.Module):
        def __init__(self, vocab=2000, chars=80, wdim=48, cdim=16, cout=32, d=32):
            super().__init__()
            self.wemb = nn.Embedding(vocab, wdim)
            self.cemb = nn.Embedding(chars, cdim)
            self.cconv = nn.Conv1d(cdim, cout, 5, padding=2)
            self.highway = Highway(wdim + cout)
            self.ctx = nn.LSTM(wdim + cout, d, batch_first=True, bidirectional=True)
            self.w_sim = nn.Linear(6 * d, 1, bias=False)
            self.model = nn.LSTM(8 * d, d, num_layers=2, batch_first=True, bidirectional=True)
            self.end_lstm = nn.LSTM(2 * d, d, batch_first=True, bidirectional=True)
            self.p1, self.p2 = nn.Linear(10 * d, 1), nn.Linear(10 * d, 1)

        def embed(self, words, chars):
            b, t, length = chars.shape
            c = self.cemb(chars).view(b * t, length, -1).transpose(1, 2)
            c = F.relu(self.cconv(c)).max(2)[0].view(b, t, -1)
            return self.ctx(self.highway(torch.cat([self.wemb(words), c], -1)))[0]

        def forward(self, cw, cc, qw, qc):
            c, q = self.embed(cw, cc), self.embed(qw, qc)             # (b, T, 2d), (b, J, 2d)
            d2 = c.shape[-1]
            w_c, w_q, w_cq = self.w_sim.weight[0].split(d2)
            sim = (c @ w_c).unsqueeze(2) + (q @ w_q).unsqueeze(1) + (c * w_cq) @ q.transpose(1, 2)
            c2q = F.softmax(sim, -1) @ q
            b_att = F.softmax(sim.max(2)[0], -1)
            q2c = (b_att.unsqueeze(1) @ c).expand_as(c)
            g = torch.cat([c, c2q, c * c2q, c * q2c], -1)
            m = self.model(g)[0]
            m2 = self.end_lstm(m)[0]
            start = F.log_softmax(self.p1(torch.cat([g, m], -1)).squeeze(-1), -1)
            end = F.log_softmax(self.p2(torch.cat([g, m2], -1)).squeeze(-1), -1)
            return torch.stack([start, end], 1)

    # -- pointer-generator with coverage --------------------------------------------------
    class PointerGenerator(nn.Module):
        """Decoder steps (teacher-forced) over a BiLSTM-encoded article: coverage attention,
        p_gen, the vocabulary distribution widened by the article's OOV slots and the copy
        distribution ``scatter_add``-ed into it."""

        def __init__(self, vocab=1000, oov=20, emb=32, hidden=48, unk=1):
            super().__init__()
            self.vocab, self.oov, self.unk = vocab, oov, unk
            self.emb = nn.Embedding(vocab, emb)
            self.enc = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
            self.reduce_h = nn.Linear(2 * hidden, hidden)
            self.reduce_c = nn.Linear(2 * hidden, hidden)
            self.w_h = nn.Linear(2 * hidden, 2 * hidden, bias=False)
            self.w_s = nn.Linear(2 * hidden, 2 * hidden)
            self.w_c = nn.Linear(1, 2 * hidden, bias=False)
            self.v = nn.Linear(2 * hidden, 1, bias=False)
            self.x_ctx = nn.Linear(2 * hidden + emb, emb)
            self.cell = nn.LSTMCell(emb, hidden)
            self.p_gen = nn.Linear(4 * hidden + emb, 1)
            self.out1 = nn.Linear(3 * hidden, hidden)
            self.out2 = nn.Linear(hidden, vocab)

        def in_vocab(self, ids):
            return ids.masked_fill(ids >= self.vocab, self.unk)

        def forward(self, src_ext, tgt):
            enc, (h, c) = self.enc(self.emb(self.in_vocab(src_ext)))
            feat = self.w_h(enc)
            h = F.relu(self.reduce_h(torch.cat([h[0], h[1]], -1)))
            c = F.relu(self.reduce_c(torch.cat([c[0], c[1]], -1)))
            coverage = torch.zeros_like(src_ext, dtype=enc.dtype)
            ctx = enc.new_zeros(enc.shape[0], enc.shape[2])
            steps = []
            for i in range(tgt.shape[1]):
                y = self.emb(self.in_vocab(tgt[:, i]))
                x = self.x_ctx(torch.cat([ctx, y], -1))
                h, c = self.cell(x, (h, c))
                s = torch.cat([h, c], -1)
                e = self.v(torch.tanh(feat + self.w_s(s).unsqueeze(1)
                                      + self.w_c(coverage.unsqueeze(-1)))).squeeze(-1)
                attn = F.softmax(e, -1)
                coverage = coverage + attn
                ctx = torch.bmm(attn.unsqueeze(1), enc).squeeze(1)
                p_gen = torch.sigmoid(self.p_gen(torch.cat([ctx, s, x], -1)))
                vocab = F.softmax(self.out2(self.out1(torch.cat([h, ctx], -1))), -1)
                final = torch.cat([p_gen * vocab, vocab.new_zeros(vocab.shape[0], self.oov)], 1)
                final = final.scatter_add(1, src_ext, (1 - p_gen) * attn)
                steps.append(torch.log(final + 1e-12))
            return torch.stack(steps, 1)

    # -- ConvE ----------------------------------------------------------------------------
    class ConvE(nn.Module):
        def __init__(self, entities=4000, relations=50, d=200, rows=10):
            super().__init__()
            self.rows, self.cols = rows, d // rows
            self.ent = nn.Embedding(entities, d)
            self.rel = nn.Embedding(relations, d)
            self.bn0, self.bn1 = nn.BatchNorm2d(1), nn.BatchNorm2d(32)
            self.conv = nn.Conv2d(1, 32, 3)
            self.fc = nn.Linear(32 * (2 * rows - 2) * (self.cols - 2), d)
            self.bn2 = nn.BatchNorm1d(d)
            self.bias = nn.Parameter(torch.zeros(entities))

        def forward(self, head, relation):
            e = self.ent(head).view(-1, 1, self.rows, self.cols)
            r = self.rel(relation).view(-1, 1, self.rows, self.cols)
            x = F.relu(self.bn1(self.conv(self.bn0(torch.cat([e, r], 2)))))
            x = F.relu(self.bn2(self.fc(x.flatten(1))))
            return torch.sigmoid(x @ self.ent.weight.t() + self.bias)

    # -- SCINet ---------------------------------------------------------------------------
    class Interactor(nn.Module):
        """One SCI-Block: the even and odd halves scale each other by exp(conv) and then
        exchange additive updates."""

        def __init__(self, c, hidden=2, k=5):
            super().__init__()
            pad = (k - 1) // 2 + 1

            def branch():
                return nn.Sequential(nn.ReplicationPad1d(pad), nn.Conv1d(c, c * hidden, k),
                                     nn.LeakyReLU(0.01), nn.Dropout(0.5),
                                     nn.Conv1d(c * hidden, c, 3), nn.Tanh())
            self.phi, self.psi, self.rho, self.eta = branch(), branch(), branch(), branch()

        def forward(self, x):                                       # (b, t, c)
            even, odd = x[:, ::2].transpose(1, 2), x[:, 1::2].transpose(1, 2)
            d = odd * torch.exp(self.phi(even))
            c = even * torch.exp(self.psi(odd))
            return (c + self.eta(d)).transpose(1, 2), (d - self.rho(c)).transpose(1, 2)

    class SCITree(nn.Module):
        def __init__(self, c, level):
            super().__init__()
            self.block = Interactor(c)
            self.kids = nn.ModuleList([SCITree(c, level - 1), SCITree(c, level - 1)]) \
                if level > 1 else None

        def forward(self, x):
            even, odd = self.block(x)
            if self.kids is not None:
                even, odd = self.kids[0](even), self.kids[1](odd)
            b, t, c = even.shape
            return torch.stack([even, odd], 2).reshape(b, 2 * t, c)

    class SCINet(nn.Module):
        def __init__(self, channels=7, window=96, horizon=24, levels=3):
            super().__init__()
            self.tree = SCITree(channels, levels)
            self.proj = nn.Conv1d(window, horizon, 1, bias=False)

        def forward(self, x):                                       # (b, window, c)
            return self.proj(self.tree(x) + x)

    # -- Decision Transformer -------------------------------------------------------------
    class GPTBlock(nn.Module):
        def __init__(self, d, heads, n_pos):
            super().__init__()
            self.h = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.register_buffer("causal", torch.tril(torch.ones(n_pos, n_pos, dtype=torch.bool)))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, -1).permute(2, 0, 3, 1, 4)
            a = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.h)
            a = a.masked_fill(~self.causal[:t, :t], torch.finfo(a.dtype).min)
            y = (F.softmax(a, -1) @ v).transpose(1, 2).reshape(b, t, d)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class DecisionTransformer(nn.Module):
        def __init__(self, state=17, act=6, d=64, heads=2, layers=2, context=20, max_ep=1000):
            super().__init__()
            self.t_emb = nn.Embedding(max_ep, d)
            self.r_emb, self.s_emb, self.a_emb = nn.Linear(1, d), nn.Linear(state, d), \
                nn.Linear(act, d)
            self.ln = nn.LayerNorm(d)
            self.pos = nn.Parameter(torch.randn(1, 3 * context, d) * 0.02)
            self.blocks = nn.Sequential(*[GPTBlock(d, heads, 3 * context) for _ in range(layers)])
            self.ln_f = nn.LayerNorm(d)
            self.act_head = nn.Linear(d, act)

        def forward(self, rtg, states, actions, timesteps):
            b, k = states.shape[:2]
            t = self.t_emb(timesteps)
            toks = torch.stack([self.r_emb(rtg) + t, self.s_emb(states) + t,
                                self.a_emb(actions) + t], 1)        # (b, 3, k, d)
            x = self.ln(toks.permute(0, 2, 1, 3).reshape(b, 3 * k, -1)) + self.pos[:, :3 * k]
            x = self.ln_f(self.blocks(x)).reshape(b, k, 3, -1).permute(0, 2, 1, 3)
            return torch.tanh(self.act_head(x[:, 1]))

    # -- Universal Transformer with ACT ---------------------------------------------------
    def timing_signal(length, d):
        pos = torch.arange(length, dtype=torch.float32)[:, None]
        inv = torch.exp(-math.log(1e4) * torch.arange(0, d, 2, dtype=torch.float32) / d)
        return torch.cat([torch.sin(pos * inv), torch.cos(pos * inv)], 1)

    class UniversalTransformerACT(nn.Module):
        def __init__(self, vocab=1000, d=64, heads=4, max_steps=6, threshold=0.99, max_len=64,
                     classes=4):
            super().__init__()
            self.steps, self.threshold = max_steps, threshold
            self.emb = nn.Embedding(vocab, d)
            self.register_buffer("pos_sig", timing_signal(max_len, d))
            self.register_buffer("step_sig", timing_signal(max_steps, d))
            self.layer = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0,
                                                    batch_first=True, norm_first=True)
            self.halt = nn.Linear(d, 1)
            nn.init.constant_(self.halt.bias, 1.0)
            self.head = nn.Linear(d, classes)

        def forward(self, tokens):
            state = self.emb(tokens)
            t = tokens.shape[1]
            halting = torch.zeros_like(state[..., 0])
            remainders = torch.zeros_like(halting)
            n_updates = torch.zeros_like(halting)
            previous = torch.zeros_like(state)
            for step in range(self.steps):
                state = state + self.pos_sig[:t] + self.step_sig[step]
                p = torch.sigmoid(self.halt(state)).squeeze(-1)
                running = (halting < 1.0).float()
                reached = (halting + p * running > self.threshold).float() * running
                running = (halting + p * running <= self.threshold).float() * running
                halting = halting + p * running
                remainders = remainders + reached * (1 - halting)
                halting = halting + reached * remainders
                n_updates = n_updates + running + reached
                w = (p * running + reached * remainders).unsqueeze(-1)
                state = self.layer(state)
                previous = state * w + previous * (1 - w)
            return self.head(previous.mean(1)) + n_updates.mean(1, keepdim=True) * 0.01

    # -- XCiT -----------------------------------------------------------------------------
    class XCA(nn.Module):
        """Attention over channels: (d_h x d_h) maps from L2-normalized queries and keys along
        the tokens, a learned temperature per head."""

        def __init__(self, d, heads):
            super().__init__()
            self.h = heads
            self.temperature = nn.Parameter(torch.ones(heads, 1, 1) + 0.1 * torch.randn(heads, 1, 1))
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.h, -1).permute(2, 0, 3, 4, 1)  # (b,h,dh,n)
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
            attn = F.softmax((q @ k.transpose(-2, -1)) * self.temperature, -1)
            return self.proj((attn @ v).permute(0, 3, 1, 2).reshape(b, n, d))

    class LPI(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.conv1 = nn.Conv2d(d, d, 3, padding=1, groups=d)
            self.bn = nn.BatchNorm2d(d)
            self.conv2 = nn.Conv2d(d, d, 3, padding=1, groups=d)

        def forward(self, x, hw):
            b, n, d = x.shape
            y = x.transpose(1, 2).reshape(b, d, *hw)
            y = self.conv2(self.bn(F.gelu(self.conv1(y))))
            return y.reshape(b, d, n).transpose(1, 2)

    class XCABlock(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.n1, self.n2, self.n3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn, self.lpi = XCA(d, heads), LPI(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.g1, self.g2, self.g3 = (nn.Parameter(0.5 * torch.ones(d)) for _ in range(3))

        def forward(self, x, hw):
            x = x + self.g1 * self.attn(self.n1(x))
            x = x + self.g3 * self.lpi(self.n3(x), hw)
            return x + self.g2 * self.mlp(self.n2(x))

    class ClassAttentionBlock(nn.Module):
        """Only the class token queries; the patch tokens pass through unchanged."""

        def __init__(self, d, heads):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.g1, self.g2 = nn.Parameter(0.5 * torch.ones(d)), nn.Parameter(0.5 * torch.ones(d))

        def forward(self, x):
            u = self.n1(x)
            cls = x[:, :1] + self.g1 * self.attn(u[:, :1], u, u, need_weights=False)[0]
            cls = cls + self.g2 * self.mlp(self.n2(cls))
            return torch.cat([cls, x[:, 1:]], 1)

    class XCiTMini(nn.Module):
        def __init__(self, d=64, heads=4, depth=3, cls_depth=2, classes=10):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, d // 4, 3, 2, 1), nn.BatchNorm2d(d // 4), nn.GELU(),
                nn.Conv2d(d // 4, d // 2, 3, 2, 1), nn.BatchNorm2d(d // 2), nn.GELU(),
                nn.Conv2d(d // 2, d, 3, 2, 1), nn.BatchNorm2d(d))
            self.blocks = nn.ModuleList([XCABlock(d, heads) for _ in range(depth)])
            self.cls_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
            self.cls_blocks = nn.Sequential(*[ClassAttentionBlock(d, heads)
                                              for _ in range(cls_depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, x):
            f = self.stem(x)
            hw = f.shape[2:]
            x = f.flatten(2).transpose(1, 2)
            for blk in self.blocks:
                x = blk(x, hw)
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1)
            return self.head(self.norm(self.cls_blocks(x))[:, 0])

    # -- PNA ------------------------------------------------------------------------------
    class PNALayer(nn.Module):
        """Messages from (x_i, x_j), aggregated by mean / max / min / std, each scaled by
        identity, amplification and attenuation in the log-degree."""

        def __init__(self, d, avg_log_deg):
            super().__init__()
            self.delta = avg_log_deg
            self.pre = nn.Linear(2 * d, d)
            self.post = nn.Linear(13 * d, d)
            self.bn = nn.BatchNorm1d(d)

        def forward(self, x, src, dst):
            n, d = x.shape
            msg = self.pre(torch.cat([x[dst], x[src]], 1))
            index = dst.unsqueeze(1).expand(-1, d)
            deg = torch.zeros(n, dtype=x.dtype).index_add(0, dst, torch.ones_like(dst,
                                                                                dtype=x.dtype))
            deg = deg.clamp(min=1).unsqueeze(1)
            zeros = x.new_zeros(n, d)
            mean = zeros.scatter_add(0, index, msg) / deg
            sq = zeros.scatter_add(0, index, msg * msg) / deg
            std = torch.sqrt(F.relu(sq - mean * mean) + 1e-5)
            mx = zeros.scatter_reduce(0, index, msg, "amax", include_self=False)
            mn = zeros.scatter_reduce(0, index, msg, "amin", include_self=False)
            agg = torch.cat([mean, mx, mn, std], 1)
            log_deg = torch.log(deg + 1)
            scaled = torch.cat([agg, agg * (log_deg / self.delta), agg * (self.delta / log_deg)],
                               1)
            return x + F.relu(self.bn(self.post(torch.cat([x, scaled], 1))))

    class PNANet(nn.Module):
        def __init__(self, fin=16, d=48, layers=3, classes=5, avg_log_deg=1.6):
            super().__init__()
            self.inp = nn.Linear(fin, d)
            self.layers = nn.ModuleList([PNALayer(d, avg_log_deg) for _ in range(layers)])
            self.head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, classes))

        def forward(self, x, edge_index):
            src, dst = edge_index[0], edge_index[1]
            x = self.inp(x)
            for layer in self.layers:
                x = layer(x, src, dst)
            return self.head(x.mean(0, keepdim=True))

    # -- Graves handwriting synthesis -----------------------------------------------------
    class HandwritingSynthesis(nn.Module):
        """LSTM 1 steps with a soft window over the one-hot text (K Gaussians whose centres
        only move forward); LSTM 2 reads strokes, LSTM 1 and the window; an M-component
        bivariate mixture plus an end-of-stroke Bernoulli gives each next point's NLL."""

        def __init__(self, alphabet=60, hidden=96, k=5, mixtures=10):
            super().__init__()
            self.alphabet, self.k, self.m = alphabet, k, mixtures
            self.cell1 = nn.LSTMCell(3 + alphabet, hidden)
            self.window = nn.Linear(hidden, 3 * k)
            self.lstm2 = nn.LSTM(3 + alphabet + hidden, hidden, batch_first=True)
            self.mdn = nn.Linear(hidden, 1 + 6 * mixtures)

        def forward(self, strokes, text):
            b, t, _ = strokes.shape
            onehot = F.one_hot(text, self.alphabet).to(strokes.dtype)     # (b, u, A)
            u = torch.arange(text.shape[1], dtype=strokes.dtype).view(1, 1, -1)
            h = c = strokes.new_zeros(b, self.cell1.hidden_size)
            w = strokes.new_zeros(b, self.alphabet)
            kappa = strokes.new_zeros(b, self.k, 1)
            hs, ws = [], []
            for i in range(t - 1):
                h, c = self.cell1(torch.cat([strokes[:, i], w], 1), (h, c))
                alpha, beta, dk = torch.exp(self.window(h)).unsqueeze(2).chunk(3, 1)
                kappa = kappa + dk
                phi = (alpha * torch.exp(-beta * (kappa - u) ** 2)).sum(1)  # (b, u)
                w = torch.bmm(phi.unsqueeze(1), onehot).squeeze(1)
                hs.append(h)
                ws.append(w)
            x = strokes[:, :-1]
            h1, wseq = torch.stack(hs, 1), torch.stack(ws, 1)
            out = self.mdn(self.lstm2(torch.cat([x, h1, wseq], -1))[0])
            eos, pi, mu1, mu2, s1, s2, rho = out.split([1] + [self.m] * 6, -1)
            s1, s2, rho = torch.exp(s1), torch.exp(s2), torch.tanh(rho)
            target = strokes[:, 1:]
            x1, x2 = target[..., 1:2], target[..., 2:3]
            z1, z2 = (x1 - mu1) / s1, (x2 - mu2) / s2
            one_r = 1 - rho ** 2
            log_n = (-(z1 ** 2 + z2 ** 2 - 2 * rho * z1 * z2) / (2 * one_r)
                     - torch.log(2 * math.pi * s1 * s2 * torch.sqrt(one_r)))
            nll = -torch.logsumexp(F.log_softmax(pi, -1) + log_n, -1)
            bce = F.binary_cross_entropy_with_logits(eos.squeeze(-1), target[..., 0],
                                                     reduction="none")
            return nll + bce

    # -- DeepAR with a negative-binomial likelihood -------------------------------------
    class DeepARNegBin(nn.Module):
        """An LSTM over the scaled lagged counts, covariates and a series embedding; each
        step's mean and shape through softplus; the counts' negative-binomial NLL written out
        with ``torch.lgamma`` as in the DeepAR paper."""

        def __init__(self, series=100, cov=4, emb=8, hidden=40, layers=2):
            super().__init__()
            self.emb = nn.Embedding(series, emb)
            self.lstm = nn.LSTM(1 + cov + emb, hidden, layers, batch_first=True)
            self.mu, self.alpha = nn.Linear(hidden, 1), nn.Linear(hidden, 1)

        def forward(self, counts, covariates, series_id):      # (b, t), (b, t, cov), (b,)
            scale = 1 + counts.mean(1, keepdim=True)
            lagged = F.pad(counts[:, :-1], (1, 0)) / scale
            e = self.emb(series_id).unsqueeze(1).expand(-1, counts.shape[1], -1)
            h = self.lstm(torch.cat([lagged.unsqueeze(-1), covariates, e], -1))[0]
            mu = F.softplus(self.mu(h)).squeeze(-1) * scale
            alpha = F.softplus(self.alpha(h)).squeeze(-1) / scale.sqrt()
            r = 1 / alpha
            log_p = (torch.lgamma(counts + r) - torch.lgamma(counts + 1) - torch.lgamma(r)
                     - r * torch.log1p(alpha * mu)
                     + counts * (torch.log(alpha * mu) - torch.log1p(alpha * mu)))
            return -log_p

    # -- inputs ---------------------------------------------------------------------------
    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def qa_inputs(b=2, t=48, j=10, length=12, vocab=2000, chars=80, seed=101):
        def make():
            g = gen(seed)
            return {"cw": torch.randint(0, vocab, (b, t), generator=g),
                    "cc": torch.randint(0, chars, (b, t, length), generator=g),
                    "qw": torch.randint(0, vocab, (b, j), generator=g),
                    "qc": torch.randint(0, chars, (b, j, length), generator=g)}
        return make

    def article(b=2, s=40, steps=6, vocab=1000, oov=20, seed=102):
        def make():
            g = gen(seed)
            return {"src_ext": torch.randint(2, vocab + oov, (b, s), generator=g),
                    "tgt": torch.randint(2, vocab + oov, (b, steps), generator=g)}
        return make

    def triples(b=64, entities=4000, relations=50, seed=103):
        def make():
            g = gen(seed)
            return {"head": torch.randint(0, entities, (b,), generator=g),
                    "relation": torch.randint(0, relations, (b,), generator=g)}
        return make

    def trajectories(b=4, k=20, state=17, act=6, seed=104):
        def make():
            g = gen(seed)
            start = torch.randint(0, 900, (b, 1), generator=g)
            return {"rtg": torch.rand(b, k, 1, generator=g) * 3,
                    "states": torch.randn(b, k, state, generator=g),
                    "actions": torch.rand(b, k, act, generator=g) * 2 - 1,
                    "timesteps": start + torch.arange(k)}
        return make

    def sentences(b=4, t=32, vocab=1000, seed=105):
        def make():
            return {"tokens": torch.randint(0, vocab, (b, t), generator=gen(seed))}
        return make

    def graph(n=200, e=800, fin=16, seed=106):
        def make():
            g = gen(seed)
            return {"x": torch.randn(n, fin, generator=g),
                    "edge_index": torch.randint(0, n, (2, e), generator=g)}
        return make

    def demand(b=8, t=48, cov=4, series=100, seed=108):
        def make():
            g = gen(seed)
            rate = torch.rand(b, 1, generator=g) * 20 + 1
            return {"counts": torch.poisson(rate.expand(b, t), generator=g),
                    "covariates": torch.randn(b, t, cov, generator=g),
                    "series_id": torch.randint(0, series, (b,), generator=g)}
        return make

    def pen(b=2, t=40, u=12, alphabet=60, seed=107):
        def make():
            g = gen(seed)
            offsets = torch.randn(b, t, 2, generator=g) * 0.5
            lift = (torch.rand(b, t, 1, generator=g) > 0.85).float()
            return {"strokes": torch.cat([lift, offsets], -1),
                    "text": torch.randint(0, alphabet, (b, u), generator=g)}
        return make

    return {
        "vnet3d_mini": (VNet3D, (1, 1, 16, 32, 32)),
        "solov2_matrix_nms": (SOLOv2Mini, (1, 3, 96, 96)),
        "bidaf_qa": (BiDAF, qa_inputs()),
        "pointer_generator": (PointerGenerator, article()),
        "conve_kg": (ConvE, triples()),
        "scinet_mini": (SCINet, (4, 96, 7)),
        "decision_transformer": (DecisionTransformer, trajectories()),
        "ut_act": (UniversalTransformerACT, sentences()),
        "xcit_mini": (XCiTMini, (1, 3, 64, 64)),
        "pna_graph": (PNANet, graph()),
        "graves_handwriting": (HandwritingSynthesis, pen()),
        "deepar_negbin": (DeepARNegBin, demand()),
    }
