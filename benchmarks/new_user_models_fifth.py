"""The fifth round of ``bench_new_user_models``: models whose ops and patterns the first four
rounds leave out (pyramid pooling, RepVGG's parallel branches, fused-MBConv, a bidirectional
LSTM with masking, token-type embeddings and tanh-GELU, pix2pix's InstanceNorm and skip
concatenations, top-k post-processing, max and mean message passing, einsum attention, cumsum
position ids, a batch-32 MLP). Kept apart so the main script stays readable."""

from __future__ import annotations


def fifth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    def cbr(i, o, k, s=1, p=None, act=nn.ReLU):
        p = k // 2 if p is None else p
        return nn.Sequential(nn.Conv2d(i, o, k, s, p, bias=False), nn.BatchNorm2d(o), act())

    class PSPNetMini(nn.Module):
        """PSPNet: a stride-8 backbone, then the pyramid pooling module (adaptive average pools
        to 1, 2, 3 and 6, a 1x1 conv each, bilinear upsampling back, concatenation)."""

        def __init__(self, c=64, classes=21):
            super().__init__()
            self.backbone = nn.Sequential(cbr(3, 32, 3, 2), cbr(32, 32, 3), cbr(32, 64, 3, 2),
                                          cbr(64, c, 3, 2), cbr(c, c, 3))
            self.stages = nn.ModuleList([nn.Sequential(nn.AdaptiveAvgPool2d(s),
                                                       nn.Conv2d(c, c // 4, 1, bias=False),
                                                       nn.ReLU()) for s in (1, 2, 3, 6)])
            self.fuse = cbr(2 * c, c, 3)
            self.cls = nn.Conv2d(c, classes, 1)

        def forward(self, x):
            size = x.shape[-2:]
            f = self.backbone(x)
            pyr = [f] + [F.interpolate(s(f), size=f.shape[-2:], mode="bilinear",
                                       align_corners=False) for s in self.stages]
            y = self.cls(self.fuse(torch.cat(pyr, 1)))
            return F.interpolate(y, size=size, mode="bilinear", align_corners=False)

    class RepVGGBlock(nn.Module):
        """RepVGG in its training form: 3x3 conv-BN + 1x1 conv-BN + identity BN, summed."""

        def __init__(self, i, o, s):
            super().__init__()
            self.k3 = nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o))
            self.k1 = nn.Sequential(nn.Conv2d(i, o, 1, s, 0, bias=False), nn.BatchNorm2d(o))
            self.id = nn.BatchNorm2d(o) if i == o and s == 1 else None

        def forward(self, x):
            y = self.k3(x) + self.k1(x)
            return F.relu(y + self.id(x) if self.id is not None else y)

    def repvgg_mini():
        cfg = ((3, 32, 2), (32, 48, 2), (48, 48, 1), (48, 96, 2), (96, 96, 1), (96, 96, 1),
               (96, 192, 2), (192, 192, 1), (192, 384, 2))
        return nn.Sequential(*[RepVGGBlock(*c) for c in cfg], nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Linear(384, 100))

    class FusedMBConv(nn.Module):
        """EfficientNetV2's fused block: one 3x3 expansion conv (SiLU), a 1x1 projection."""

        def __init__(self, i, o, s, e):
            super().__init__()
            self.body = nn.Sequential(cbr(i, i * e, 3, s, act=nn.SiLU),
                                      nn.Conv2d(i * e, o, 1, bias=False), nn.BatchNorm2d(o))
            self.res = s == 1 and i == o

        def forward(self, x):
            return x + self.body(x) if self.res else self.body(x)

    class MBConvSE(nn.Module):
        def __init__(self, i, o, s, e):
            super().__init__()
            m = i * e
            self.expand = cbr(i, m, 1, act=nn.SiLU)
            self.dw = nn.Sequential(nn.Conv2d(m, m, 3, s, 1, groups=m, bias=False),
                                    nn.BatchNorm2d(m), nn.SiLU())
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(m, i // 4, 1), nn.SiLU(),
                                    nn.Conv2d(i // 4, m, 1), nn.Sigmoid())
            self.proj = nn.Sequential(nn.Conv2d(m, o, 1, bias=False), nn.BatchNorm2d(o))
            self.res = s == 1 and i == o

        def forward(self, x):
            h = self.dw(self.expand(x))
            y = self.proj(h * self.se(h))
            return x + y if self.res else y

    def effnetv2_mini():
        return nn.Sequential(cbr(3, 24, 3, 2, act=nn.SiLU), FusedMBConv(24, 24, 1, 1),
                             FusedMBConv(24, 48, 2, 4), FusedMBConv(48, 48, 1, 4),
                             FusedMBConv(48, 64, 2, 4), MBConvSE(64, 128, 2, 4),
                             MBConvSE(128, 128, 1, 4), cbr(128, 512, 1, act=nn.SiLU),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2),
                             nn.Linear(512, 100))

    class BiLSTMTagger(nn.Module):
        """A sequence tagger: embeddings, a two-layer bidirectional LSTM, padded steps zeroed
        by a float mask (what packing would skip), per-token log-softmax over the tags."""

        def __init__(self, vocab=2000, d=64, hidden=96, tags=17):
            super().__init__()
            self.emb = nn.Embedding(vocab, d, padding_idx=0)
            self.rnn = nn.LSTM(d, hidden, 2, batch_first=True, bidirectional=True)
            self.out = nn.Linear(2 * hidden, tags)

        def forward(self, ids, mask):
            h, _ = self.rnn(self.emb(ids) * mask[..., None])
            return F.log_softmax(self.out(h * mask[..., None]), -1)

    def tagger_inputs(batch=2, seq=40):
        g = torch.Generator().manual_seed(21)
        ids = torch.randint(1, 2000, (batch, seq), generator=g)
        mask = torch.ones(batch, seq)
        mask[1, 29:] = 0
        ids[1, 29:] = 0
        return {"ids": ids, "mask": mask}

    class DistilBertLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h = heads
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
            self.ff1, self.ff2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, keep):
            b, n, d = x.shape

            def split(t):
                return t.view(b, n, self.h, d // self.h).transpose(1, 2)

            q = split(self.q(x)) / math.sqrt(d // self.h)
            s = (q @ split(self.k(x)).transpose(-1, -2)).masked_fill(~keep, float("-inf"))
            a = torch.softmax(s, -1) @ split(self.v(x))
            x = self.ln1(x + self.o(a.transpose(1, 2).reshape(b, n, d)))
            return self.ln2(x + self.ff2(F.gelu(self.ff1(x), approximate="tanh")))

    class DistilBertMini(nn.Module):
        """A BERT-style encoder: word + learned position + token-type embeddings, an int64
        attention mask turned into a bool key mask (masked_fill -inf), tanh-GELU FFNs, a tanh
        pooler on the first token."""

        def __init__(self, vocab=3000, d=128, heads=4, depth=2, seq=64):
            super().__init__()
            self.word, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.segment = nn.Embedding(2, d)
            self.ln = nn.LayerNorm(d, eps=1e-12)
            self.layers = nn.ModuleList([DistilBertLayer(d, heads) for _ in range(depth)])
            self.pool = nn.Linear(d, d)

        def forward(self, ids, types, attn):
            n = ids.shape[1]
            pos = torch.arange(n, dtype=torch.long)[None]
            x = self.ln(self.word(ids) + self.pos(pos) + self.segment(types))
            keep = (attn[:, None, None, :] > 0)
            for layer in self.layers:
                x = layer(x, keep)
            return torch.tanh(self.pool(x[:, 0]))

    def bert_inputs(batch=2, seq=64):
        g = torch.Generator().manual_seed(22)
        types = torch.zeros(batch, seq, dtype=torch.long)
        types[:, seq // 2:] = 1
        attn = torch.ones(batch, seq, dtype=torch.long)
        attn[0, seq - 9:] = 0
        return {"ids": torch.randint(0, 3000, (batch, seq), generator=g), "types": types,
                "attn": attn}

    class Pix2Pix(nn.Module):
        """A pix2pix U-Net generator: strided convs with LeakyReLU and InstanceNorm down,
        ConvTranspose2d + InstanceNorm + ReLU up, skip concatenations, a tanh output."""

        def __init__(self, c=32, depth=4):
            super().__init__()
            chans = [c * min(2 ** i, 8) for i in range(depth)]
            self.down = nn.ModuleList()
            prev = 3
            for i, ch in enumerate(chans):
                layers = [nn.Conv2d(prev, ch, 4, 2, 1, bias=i == 0)]
                if i > 0:
                    layers.append(nn.InstanceNorm2d(ch))
                self.down.append(nn.Sequential(*layers, nn.LeakyReLU(0.2)))
                prev = ch
            self.up = nn.ModuleList()
            for i in reversed(range(depth - 1)):
                cin = prev if i == depth - 2 else 2 * chans[i + 1]
                self.up.append(nn.Sequential(nn.ConvTranspose2d(cin, chans[i], 4, 2, 1,
                                                                bias=False),
                                             nn.InstanceNorm2d(chans[i], affine=True),
                                             nn.ReLU()))
            self.last = nn.Sequential(nn.ConvTranspose2d(2 * chans[0], 3, 4, 2, 1), nn.Tanh())

        def forward(self, x):
            skips = []
            for d in self.down:
                x = d(x)
                skips.append(x)
            for u, s in zip(self.up, reversed(skips[:-1]), strict=True):
                x = torch.cat([u(x), s], 1)
            return self.last(x)

    class DetPostprocess(nn.Module):
        """A one-stage detector's head and post-processing: sigmoid class scores, the best
        class by max and argmax, top-k anchors, their boxes decoded and gathered by index."""

        def __init__(self, classes=20, anchors=3, k=50):
            super().__init__()
            self.c, self.a, self.k = classes, anchors, k
            self.body = nn.Sequential(cbr(3, 32, 3, 2), cbr(32, 64, 3, 2), cbr(64, 64, 3, 2),
                                      cbr(64, 96, 3, 2))
            self.cls = nn.Conv2d(96, anchors * classes, 1)
            self.box = nn.Conv2d(96, anchors * 4, 1)

        def forward(self, x):
            f = self.body(x)
            b = f.shape[0]
            scores = self.cls(f).sigmoid().view(b, self.a, self.c, -1).permute(0, 1, 3, 2) \
                .reshape(b, -1, self.c)
            deltas = self.box(f).view(b, self.a, 4, -1).permute(0, 1, 3, 2).reshape(b, -1, 4)
            best, label = scores.max(-1), scores.argmax(-1)
            top, idx = best.values.topk(self.k, dim=1)
            boxes = torch.gather(deltas, 1, idx[..., None].expand(-1, -1, 4))
            wh = boxes[..., 2:].exp()
            boxes = torch.cat([boxes[..., :2] - wh / 2, boxes[..., :2] + wh / 2], -1)
            cls = torch.gather(label, 1, idx).float()
            return torch.cat([boxes, top[..., None], cls[..., None]], -1)

    class SAGEMaxMean(nn.Module):
        """GraphSAGE with two aggregators: max over a padded neighbour table (index_select,
        view, amax; padded with the node itself) and the mean by scatter_add over the edge list
        divided by the degree; self, max and mean each through a linear layer, summed.
        (scatter_reduce "amax" would be shorter, but torch's ONNX export wraps it in an If that
        ORT's shape inference rejects.)"""

        def __init__(self, nodes=150, feats=24, hidden=48, classes=6, fanout=6):
            super().__init__()
            g = torch.Generator().manual_seed(23)
            nbr = torch.randint(0, nodes, (nodes, fanout), generator=g)
            keep = torch.rand(nodes, fanout, generator=g) < 0.6  # degrees vary: pad with self
            nbr = torch.where(keep, nbr, torch.arange(nodes)[:, None])
            self.register_buffer("nbr", nbr.flatten())
            src = torch.randint(0, nodes, (500,), generator=g)
            dst = torch.randint(0, nodes, (500,), generator=g)
            deg = torch.zeros(nodes).index_add_(0, dst, torch.ones(500)).clamp(min=1)
            self.register_buffer("src", src)
            self.register_buffer("dst", dst)
            self.register_buffer("inv_deg", (1 / deg)[None, :, None])
            self.nodes, self.fanout = nodes, fanout
            self.layers = nn.ModuleList([nn.ModuleList([nn.Linear(i, o), nn.Linear(i, o, False),
                                                        nn.Linear(i, o, False)])
                                         for i, o in ((feats, hidden), (hidden, classes))])

        def layer(self, x, lin):
            b, n, f = x.shape
            mx = x.index_select(1, self.nbr).view(b, n, self.fanout, f).amax(2)
            msg = x.index_select(1, self.src)
            mean = torch.zeros_like(x).scatter_add(1, self.dst.view(1, -1, 1).expand_as(msg),
                                                   msg) * self.inv_deg
            return lin[0](x) + lin[1](mx) + lin[2](mean)

        def forward(self, x):
            h = F.relu(self.layer(x, self.layers[0]))
            return F.log_softmax(self.layer(h, self.layers[1]), -1)

    class EinsumAttention(nn.Module):
        """Multi-head attention written with einsum throughout (projections, scores, values)
        and a relative-position bias table indexed by a precomputed index matrix."""

        def __init__(self, d=128, heads=4, seq=49, depth=2):
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.wqkv = nn.ParameterList([nn.Parameter(torch.randn(3, heads, d, d // heads)
                                                       * d ** -0.5) for _ in range(depth)])
            self.wo = nn.ParameterList([nn.Parameter(torch.randn(heads, d // heads, d)
                                                     * d ** -0.5) for _ in range(depth)])
            self.bias = nn.Parameter(torch.randn(heads, 2 * seq - 1) * 0.1)
            pos = torch.arange(seq)
            self.register_buffer("rel", pos[None, :] - pos[:, None] + seq - 1)
            self.lns = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])

        def forward(self, x):
            bias = self.bias[:, self.rel]
            for wqkv, wo, ln in zip(self.wqkv, self.wo, self.lns, strict=True):
                q, k, v = torch.einsum("bnd,shde->sbhne", ln(x), wqkv)
                s = torch.einsum("bhie,bhje->bhij", q, k) / math.sqrt(self.dh) + bias
                y = torch.einsum("bhij,bhje->bhie", s.softmax(-1), v)
                x = x + torch.einsum("bhne,hed->bnd", y, wo)
            return x

    class CumsumPositions(nn.Module):
        """RoBERTa-style position ids from cumsum over the non-pad mask, where() for the pad
        positions, masked_fill of the pads' features, a mean over the real tokens."""

        def __init__(self, vocab=1000, d=96, pad=1, seq=48):
            super().__init__()
            self.pad = pad
            self.tok = nn.Embedding(vocab, d, padding_idx=pad)
            self.pos = nn.Embedding(seq + pad + 1, d, padding_idx=pad)
            self.mlp = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(),
                                     nn.Linear(2 * d, d))
            self.head = nn.Linear(d, 5)

        def forward(self, ids):
            real = ids.ne(self.pad)
            pos = torch.cumsum(real.int(), 1) * real.int()
            pos = torch.where(real, pos + self.pad, torch.full_like(pos, self.pad)).long()
            x = self.mlp(self.tok(ids) + self.pos(pos))
            x = x.masked_fill(~real[..., None], 0.0)
            n = real.sum(1, keepdim=True).clamp(min=1).float()
            return self.head(x.sum(1) / n)

    def cumsum_inputs(batch=3, seq=48):
        g = torch.Generator().manual_seed(24)
        ids = torch.randint(2, 1000, (batch, seq), generator=g)
        ids[1, 40:] = 1
        ids[2, 10:] = 1
        return {"ids": ids}

    def ln_gelu_mlp():
        """A tabular MLP at batch 32: LayerNorm, exact GELU, residual-free widening blocks."""
        layers, prev = [], 256
        for w in (512, 512, 256, 128):
            layers += [nn.Linear(prev, w), nn.LayerNorm(w), nn.GELU()]
            prev = w
        return nn.Sequential(*layers, nn.Linear(prev, 10))

    return {
        "pspnet_mini": (PSPNetMini, (1, 3, 96, 96)),
        "repvgg_mini": (repvgg_mini, (1, 3, 128, 128)),
        "effnetv2_mini": (effnetv2_mini, (1, 3, 128, 128)),
        "bilstm_tagger": (BiLSTMTagger, tagger_inputs),
        "distilbert_mini": (DistilBertMini, bert_inputs),
        "pix2pix": (Pix2Pix, (1, 3, 128, 128)),
        "det_postprocess": (DetPostprocess, (1, 3, 128, 128)),
        # a dict, not a shape: the node axis is not a batch (bench_dynamic_batch skips it)
        "sage_max_mean": (SAGEMaxMean, lambda: {"x": torch.randn(1, 150, 24)}),
        "einsum_attention": (EinsumAttention, (2, 49, 128)),
        "cumsum_positions": (CumsumPositions, cumsum_inputs),
        "ln_gelu_mlp_b32": (ln_gelu_mlp, (32, 256)),
    }
