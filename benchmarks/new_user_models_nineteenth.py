"""The nineteenth round of ``bench_new_user_models``: a BiLSTM-CRF tagger with its Viterbi
decode (a Python loop of ``max`` over the transition scores, back-pointers followed by
``gather`` in reverse), CornerNet (top-left / bottom-right corner pooling by ``torch.cummax``
over flipped maps, heatmaps kept by a 3x3 max-pool peak test), a DeepSeek-V2 block with
multi-head latent attention (low-rank query and key-value projections with RMSNorm, a decoupled
rotary key shared by the heads, rotated through ``view_as_complex`` times ``torch.polar``
frequencies), a Soft MoE layer (slots filled by a softmax over tokens, outputs combined by a
softmax over slots, experts as stacked ``einsum`` weights), a quantization-aware-trained CNN
before conversion (``fake_quantize_per_channel_affine`` weights and
``fake_quantize_per_tensor_affine`` activations), a SimCLR pair with its NT-Xent loss (cosine
similarities, the diagonal masked by ``torch.eye``, ``cross_entropy`` against shifted labels),
a segmentation net with its focal and soft-Dice loss heads
(``binary_cross_entropy_with_logits``), ResNeSt split attention (radix splits summed, an
r-softmax over the radix), a GRU attention decoder's beam search (``topk`` over beams x vocab,
the beam by floor division and the token by ``%``, hidden states reordered by
``index_select``), a PointRend head (the most uncertain points by ``topk``, their features by
``grid_sample``, the refined logits ``scatter``-ed back), an NF-ResNet (timm's scaled weight
standardization through ``F.batch_norm(training=True)`` on the weights, SE gates, no
BatchNorm) and a Neural Turing Machine (content addressing by ``cosine_similarity``, a
circular shift by ``torch.roll``, sharpening by a tensor power, erase / add memory writes).
Kept apart so the main script stays readable."""

from __future__ import annotations


def nineteenth_models():
    """name -> (constructor, inputs), as in ``bench_new_user_models.new_models``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    # -- BiLSTM-CRF with Viterbi decoding -------------------------------------------------
    class BiLSTMCRF(nn.Module):
        """Emissions from a BiLSTM over embeddings, then the CRF's best tag path: the running
        best scores max-ed over the previous tag each step, back-pointers followed in reverse."""

        def __init__(self, vocab=3000, emb=64, hidden=96, tags=9):
            super().__init__()
            self.emb = nn.Embedding(vocab, emb)
            self.lstm = nn.LSTM(emb, hidden // 2, batch_first=True, bidirectional=True)
            self.proj = nn.Linear(hidden, tags)
            self.trans = nn.Parameter(torch.randn(tags, tags) * 0.5)  # [from, to]
            self.start = nn.Parameter(torch.randn(tags) * 0.5)
            self.end = nn.Parameter(torch.randn(tags) * 0.5)

        def forward(self, tokens):
            em = self.proj(self.lstm(self.emb(tokens))[0])          # (b, t, tags)
            score = self.start + em[:, 0]
            back = []
            for i in range(1, em.shape[1]):
                score, idx = (score.unsqueeze(2) + self.trans).max(1)
                score = score + em[:, i]
                back.append(idx)
            best = (score + self.end).argmax(1, keepdim=True)        # (b, 1)
            path = [best]
            for idx in reversed(back):
                best = idx.gather(1, best)
                path.append(best)
            return torch.cat(path[::-1], 1)

    # -- CornerNet ------------------------------------------------------------------------
    def conv_bn(cin, cout, k=3, s=1, relu=True):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, nn.ReLU(inplace=True)) if relu else nn.Sequential(*layers)

    def pool_towards(x, dim, flip):
        """The running max from the far edge (``flip``) or the near one along ``dim``."""
        if flip:
            return torch.flip(torch.cummax(torch.flip(x, [dim]), dim)[0], [dim])
        return torch.cummax(x, dim)[0]

    class CornerPool(nn.Module):
        """Two branches max-pooled towards a corner (top-left: from the bottom and from the
        right), summed, plus a 1x1 skip."""

        def __init__(self, c, top_left):
            super().__init__()
            self.a, self.b = conv_bn(c, 64), conv_bn(c, 64)
            self.merge = conv_bn(64, c, relu=False)
            self.skip = conv_bn(c, c, 1, relu=False)
            self.out = conv_bn(c, c)
            self.top_left = top_left

        def forward(self, x):
            pa = pool_towards(self.a(x), 2, self.top_left)
            pb = pool_towards(self.b(x), 3, self.top_left)
            return self.out(F.relu(self.merge(pa + pb) + self.skip(x)))

    class CornerNetMini(nn.Module):
        def __init__(self, c=64, classes=10):
            super().__init__()
            self.backbone = nn.Sequential(conv_bn(3, 32, 7, 2), conv_bn(32, c, 3, 2),
                                          conv_bn(c, c), conv_bn(c, c))
            self.pools = nn.ModuleList([CornerPool(c, True), CornerPool(c, False)])

            def head(out):
                return nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(c, out, 1))
            self.heat = nn.ModuleList([head(classes) for _ in range(2)])
            self.emb = nn.ModuleList([head(1) for _ in range(2)])
            self.off = nn.ModuleList([head(2) for _ in range(2)])

        def forward(self, x):
            f = self.backbone(x)
            outs = []
            for pool, heat, emb, off in zip(self.pools, self.heat, self.emb, self.off,
                                            strict=True):
                p = pool(f)
                h = torch.sigmoid(heat(p))
                peaks = (F.max_pool2d(h, 3, 1, 1) == h).float()
                outs += [h * peaks, emb(p), off(p)]
            return torch.cat(outs, 1)

    # -- DeepSeek-V2 multi-head latent attention ------------------------------------------
    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.w, self.eps = nn.Parameter(1 + 0.1 * torch.randn(d)), eps

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w

    def rotate(x, freqs):
        """Rotary embedding the DeepSeek way: adjacent pairs as complex numbers times
        ``freqs`` (t, rope / 2) complex."""
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        z = z * freqs.view(1, x.shape[1], 1, -1)
        return torch.view_as_real(z).flatten(3)

    class MLABlock(nn.Module):
        def __init__(self, d, heads, q_rank, kv_rank, nope, rope, vdim, ffn):
            super().__init__()
            self.h, self.nope, self.rope, self.vdim, self.kv_rank = heads, nope, rope, vdim, kv_rank
            self.attn_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
            self.wq_a = nn.Linear(d, q_rank, bias=False)
            self.q_norm = RMSNorm(q_rank)
            self.wq_b = nn.Linear(q_rank, heads * (nope + rope), bias=False)
            self.wkv_a = nn.Linear(d, kv_rank + rope, bias=False)
            self.kv_norm = RMSNorm(kv_rank)
            self.wkv_b = nn.Linear(kv_rank, heads * (nope + vdim), bias=False)
            self.wo = nn.Linear(heads * vdim, d, bias=False)
            self.w1 = nn.Linear(d, ffn, bias=False)
            self.w3 = nn.Linear(d, ffn, bias=False)
            self.w2 = nn.Linear(ffn, d, bias=False)
            self.scale = (nope + rope) ** -0.5

        def attention(self, x, freqs, mask):
            b, t, _ = x.shape
            q = self.wq_b(self.q_norm(self.wq_a(x))).view(b, t, self.h, self.nope + self.rope)
            q_nope, q_pe = torch.split(q, [self.nope, self.rope], -1)
            kv, k_pe = torch.split(self.wkv_a(x), [self.kv_rank, self.rope], -1)
            k_pe = rotate(k_pe.unsqueeze(2), freqs)                     # (b, t, 1, rope)
            kv = self.wkv_b(self.kv_norm(kv)).view(b, t, self.h, self.nope + self.vdim)
            k_nope, v = torch.split(kv, [self.nope, self.vdim], -1)
            q = torch.cat([q_nope, rotate(q_pe, freqs)], -1)
            k = torch.cat([k_nope, k_pe.expand(-1, -1, self.h, -1)], -1)
            scores = torch.einsum("bshd,bthd->bhst", q, k) * self.scale + mask
            out = torch.einsum("bhst,bthd->bshd", scores.softmax(-1), v)
            return self.wo(out.flatten(2))

        def forward(self, x, freqs, mask):
            x = x + self.attention(self.attn_norm(x), freqs, mask)
            h = self.ffn_norm(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    class DeepSeekMLA(nn.Module):
        def __init__(self, vocab=1000, d=192, heads=4, layers=2, max_len=64, rope=16):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([MLABlock(d, heads, 96, 64, 32, rope, 32, 384)
                                         for _ in range(layers)])
            self.norm = RMSNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)
            inv = 1.0 / 10000 ** (torch.arange(0, rope, 2).float() / rope)
            ang = torch.outer(torch.arange(max_len).float(), inv)
            self.register_buffer("freqs", torch.polar(torch.ones_like(ang), ang))

        def forward(self, tokens):
            t = tokens.shape[1]
            x = self.embed(tokens)
            mask = torch.full((t, t), float("-inf")).triu(1)
            freqs = self.freqs[:t]
            for blk in self.blocks:
                x = blk(x, freqs, mask)
            return self.head(self.norm(x))

    # -- Soft MoE -------------------------------------------------------------------------
    class SoftMoE(nn.Module):
        def __init__(self, d, experts=4, slots=2, hidden=256):
            super().__init__()
            self.e, self.s = experts, slots
            self.phi = nn.Parameter(torch.randn(d, experts * slots) * d ** -0.5)
            self.scale = nn.Parameter(torch.tensor(4.0))
            self.w1 = nn.Parameter(torch.randn(experts, d, hidden) * d ** -0.5)
            self.b1 = nn.Parameter(0.02 * torch.randn(1, experts, 1, hidden))
            self.w2 = nn.Parameter(torch.randn(experts, hidden, d) * hidden ** -0.5)

        def forward(self, x):                                       # (b, n, d)
            b, n, d = x.shape
            logits = F.normalize(x, dim=-1) @ (self.scale * F.normalize(self.phi, dim=0))
            dispatch, combine = logits.softmax(1), logits.softmax(2)
            slots = torch.einsum("bnd,bnm->bmd", x, dispatch).view(b, self.e, self.s, d)
            h = F.gelu(torch.einsum("besd,edh->besh", slots, self.w1) + self.b1)
            y = torch.einsum("besh,ehd->besd", h, self.w2).reshape(b, self.e * self.s, d)
            return torch.einsum("bmd,bnm->bnd", y, combine)

    class SoftMoEViT(nn.Module):
        def __init__(self, d=128, heads=4, depth=2, patch=4, classes=100, tokens=256):
            super().__init__()
            self.patch = nn.Conv2d(3, d, patch, patch)
            self.pos = nn.Parameter(torch.randn(1, tokens, d) * 0.02)
            self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
            self.attn = nn.ModuleList([nn.MultiheadAttention(d, heads, batch_first=True)
                                       for _ in range(depth)])
            self.moe = nn.ModuleList([SoftMoE(d) for _ in range(depth)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, x):
            x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
            for n1, attn, n2, moe in zip(self.n1, self.attn, self.n2, self.moe, strict=True):
                h = n1(x)
                x = x + attn(h, h, h, need_weights=False)[0]
                x = x + moe(n2(x))
            return self.head(self.norm(x).mean(1))

    # -- QAT fake-quantized CNN -----------------------------------------------------------
    class FakeQuantConv(nn.Module):
        """A conv whose int8 weights (per output channel, symmetric) and uint8 output (per
        tensor) are simulated in float, as a QAT model runs before conversion."""

        def __init__(self, cin, cout, k=3, s=1, act_scale=0.05, relu=True):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, k, s, k // 2)
            self.relu = relu
            self.act_scale = act_scale
            self.register_buffer("w_scale",
                                 self.conv.weight.detach().abs().amax((1, 2, 3)) / 127)
            self.register_buffer("w_zp", torch.zeros(cout, dtype=torch.int32))

        def forward(self, x):
            w = torch.fake_quantize_per_channel_affine(self.conv.weight, self.w_scale,
                                                       self.w_zp, 0, -128, 127)
            y = F.conv2d(x, w, self.conv.bias, self.conv.stride, self.conv.padding)
            if self.relu:
                return torch.fake_quantize_per_tensor_affine(F.relu(y), self.act_scale, 0, 0,
                                                             255)
            return torch.fake_quantize_per_tensor_affine(y, self.act_scale, 128, 0, 255)

    class QATResNet(nn.Module):
        def __init__(self, widths=(32, 64, 128), classes=10):
            super().__init__()
            self.stem = FakeQuantConv(3, widths[0], 3, 2)
            blocks = []
            cin = widths[0]
            for i, w in enumerate(widths):
                blocks.append(nn.ModuleList([FakeQuantConv(cin, w, 3, 1 if i == 0 else 2),
                                             FakeQuantConv(w, w, relu=False),
                                             FakeQuantConv(cin, w, 1, 1 if i == 0 else 2,
                                                           relu=False)]))
                cin = w
            self.blocks = nn.ModuleList(blocks)
            self.fc = nn.Linear(cin, classes)
            self.register_buffer("fc_scale", self.fc.weight.detach().abs().amax(1) / 127)
            self.register_buffer("fc_zp", torch.zeros(classes, dtype=torch.int32))

        def forward(self, x):
            x = torch.fake_quantize_per_tensor_affine(x, 1 / 64, 128, 0, 255)
            x = self.stem(x)
            for a, b, skip in self.blocks:
                x = torch.fake_quantize_per_tensor_affine(F.relu(b(a(x)) + skip(x)), 0.05, 0,
                                                          0, 255)
            x = F.adaptive_avg_pool2d(x, 1).flatten(1)
            w = torch.fake_quantize_per_channel_affine(self.fc.weight, self.fc_scale,
                                                       self.fc_zp, 0, -128, 127)
            return F.linear(x, w, self.fc.bias)

    class QATPoolNet(nn.Module):
        """A QAT CNN (``FakeQuantConv`` blocks) whose pools' windows differ in size and whose
        head reads a large global pool: a 3-channel stem (a one-group conv VNNI declines), a
        3x3 average pool with uncounted padding (an Inception branch's), a 3x3 / 2 pool in
        ceil mode (its last window past the edge), each fake-quantized after as the
        activations are, then a 25x25 map pooled globally (625 pixels: sums past int16) into
        a linear head with a bias."""

        def __init__(self, widths=(32, 64, 128), classes=10):
            super().__init__()
            self.stem = FakeQuantConv(3, widths[0], 3, 2)
            self.a = FakeQuantConv(widths[0], widths[1])
            self.b = FakeQuantConv(widths[1], widths[2])
            self.fc = nn.Linear(widths[2], classes)
            self.register_buffer("fc_scale", self.fc.weight.detach().abs().amax(1) / 127)
            self.register_buffer("fc_zp", torch.zeros(classes, dtype=torch.int32))

        def forward(self, x):
            x = torch.fake_quantize_per_tensor_affine(x, 1 / 64, 128, 0, 255)
            x = self.a(self.stem(x))
            x = torch.fake_quantize_per_tensor_affine(
                F.avg_pool2d(x, 3, 1, 1, count_include_pad=False), 0.05, 0, 0, 255)
            x = torch.fake_quantize_per_tensor_affine(
                F.avg_pool2d(x, 3, 2, 0, ceil_mode=True), 0.05, 0, 0, 255)
            x = F.adaptive_avg_pool2d(self.b(x), 1).flatten(1)
            w = torch.fake_quantize_per_channel_affine(self.fc.weight, self.fc_scale,
                                                       self.fc_zp, 0, -128, 127)
            return F.linear(x, w, self.fc.bias)

    # -- QAT MobileNet through torch.ao.quantization --------------------------------------
    def qat_mobilenet(classes=10):
        """A MobileNet-like net (3x3 stem, depthwise 3x3 + pointwise 1x1 blocks, global pool,
        linear) made quantization-aware the way torch.ao's eager-mode workflow does it: conv +
        BN + ReLU fused (eval-mode fusion folds the BN), ``prepare_qat`` with the qnnpack QAT
        qconfig (uint8 activations, int8 weights: FakeQuantize modules), the observers run
        on a few batches, then disabled -- the fake-quantized model as it is before
        ``convert``, whose forward calls ``fake_quantize_per_tensor_affine`` with the
        FakeQuantize modules' scale and zero point buffers."""
        import torch.ao.quantization as tq

        def cbr(cin, cout, k=1, s=1, groups=1):
            return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU())

        class QATMobileNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
                layers = [cbr(3, 32, 3, 2)]
                for cin, cout, s in [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2),
                                     (256, 256, 1)]:
                    layers += [cbr(cin, cin, 3, s, cin), cbr(cin, cout)]
                self.features = nn.Sequential(*layers)
                self.pool = nn.AdaptiveAvgPool2d(1)
                self.fc = nn.Linear(256, classes)

            def forward(self, x):
                x = self.features(self.quant(x))
                return self.dequant(self.fc(self.pool(x).flatten(1)))

        g = torch.Generator().manual_seed(97)
        m = QATMobileNet().eval()
        for block in m.features:
            for bn in block[1:2]:
                bn.running_mean.uniform_(-0.1, 0.1, generator=g)
                bn.running_var.uniform_(0.5, 1.5, generator=g)
            tq.fuse_modules(block, [["0", "1", "2"]], inplace=True)
        m.train()
        m.qconfig = tq.get_default_qat_qconfig("qnnpack", version=0)
        tq.prepare_qat(m, inplace=True)
        with torch.no_grad():
            for _ in range(4):
                m(torch.randn(8, 3, 64, 64, generator=g))
        m.apply(tq.disable_observer)
        return m.eval()

    # -- SimCLR with NT-Xent --------------------------------------------------------------
    class SimCLR(nn.Module):
        def __init__(self, width=32, proj=64, tau=0.2):
            super().__init__()
            self.enc = nn.Sequential(conv_bn(3, width, 3, 1), conv_bn(width, 2 * width, 3, 2),
                                     conv_bn(2 * width, 4 * width, 3, 2),
                                     nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.proj = nn.Sequential(nn.Linear(4 * width, 4 * width), nn.ReLU(),
                                      nn.Linear(4 * width, proj))
            self.tau = tau

        def forward(self, view1, view2):
            n = view1.shape[0]
            z = F.normalize(self.proj(self.enc(torch.cat([view1, view2]))), dim=1)
            sim = (z @ z.t()) / self.tau
            sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
            labels = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
            return F.cross_entropy(sim, labels)

    # -- Segmentation with focal and Dice loss heads --------------------------------------
    class SegWithLosses(nn.Module):
        def __init__(self, c=32, alpha=0.25, gamma=2.0):
            super().__init__()
            self.down1, self.down2 = conv_bn(3, c, 3, 2), conv_bn(c, 2 * c, 3, 2)
            self.mid = conv_bn(2 * c, 2 * c)
            self.up1 = conv_bn(3 * c, c)
            self.out = nn.Conv2d(c, 1, 1)
            self.alpha, self.gamma = alpha, gamma

        def forward(self, image, mask):
            d1 = self.down1(image)
            d2 = self.mid(self.down2(d1))
            u = F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False)
            u = self.up1(torch.cat([u, d1], 1))
            logits = self.out(F.interpolate(u, scale_factor=2, mode="bilinear",
                                            align_corners=False))
            p = torch.sigmoid(logits)
            ce = F.binary_cross_entropy_with_logits(logits, mask, reduction="none")
            p_t = p * mask + (1 - p) * (1 - mask)
            alpha_t = self.alpha * mask + (1 - self.alpha) * (1 - mask)
            focal = (alpha_t * (1 - p_t) ** self.gamma * ce).mean()
            inter = (p * mask).sum((2, 3))
            total = p.sum((2, 3)) + mask.sum((2, 3))
            dice = 1 - ((2 * inter + 1) / (total + 1)).mean()
            return torch.stack([focal, dice, focal + dice])

    # -- ResNeSt --------------------------------------------------------------------------
    class SplitAttention(nn.Module):
        def __init__(self, cin, c, radix=2, groups=1, reduction=4):
            super().__init__()
            self.radix, self.groups = radix, groups
            self.conv = nn.Conv2d(cin, c * radix, 3, 1, 1, groups=groups * radix, bias=False)
            self.bn = nn.BatchNorm2d(c * radix)
            inter = max(c * radix // reduction, 32)
            self.fc1 = nn.Conv2d(c, inter, 1, groups=groups)
            self.bn1 = nn.BatchNorm2d(inter)
            self.fc2 = nn.Conv2d(inter, c * radix, 1, groups=groups)

        def forward(self, x):
            x = F.relu(self.bn(self.conv(x)))
            b, rc = x.shape[:2]
            splits = torch.split(x, rc // self.radix, 1)
            gap = F.adaptive_avg_pool2d(sum(splits), 1)
            att = self.fc2(F.relu(self.bn1(self.fc1(gap))))
            att = att.view(b, self.groups, self.radix, -1).transpose(1, 2)
            att = F.softmax(att, dim=1).reshape(b, -1, 1, 1)
            return sum(a * s for a, s in zip(torch.split(att, rc // self.radix, 1), splits,
                                              strict=True))

    class ResNeStBottleneck(nn.Module):
        def __init__(self, cin, c, stride):
            super().__init__()
            self.reduce = conv_bn(cin, c, 1)
            self.split = SplitAttention(c, c)
            self.avd = nn.AvgPool2d(3, stride, 1) if stride > 1 else nn.Identity()
            self.expand = conv_bn(c, 4 * c, 1, relu=False)
            self.down = nn.Sequential(nn.AvgPool2d(stride, stride, ceil_mode=True,
                                                   count_include_pad=False),
                                      conv_bn(cin, 4 * c, 1, relu=False))

        def forward(self, x):
            y = self.expand(self.avd(self.split(self.reduce(x))))
            return F.relu(y + self.down(x))

    class ResNeStMini(nn.Module):
        def __init__(self, widths=(16, 32, 64), classes=100):
            super().__init__()
            self.stem = nn.Sequential(conv_bn(3, 16, 3, 2), conv_bn(16, 16), conv_bn(16, 32),
                                      nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 32
            for i, c in enumerate(widths):
                layers.append(ResNeStBottleneck(cin, c, 1 if i == 0 else 2))
                cin = 4 * c
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            return self.fc(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1).flatten(1))

    # -- Beam search over a GRU attention decoder -----------------------------------------
    class BeamSearchDecoder(nn.Module):
        def __init__(self, vocab=500, d=96, beams=4, steps=8, bos=1):
            super().__init__()
            self.vocab, self.k, self.steps, self.bos = vocab, beams, steps, bos
            self.emb = nn.Embedding(vocab, d)
            self.encoder = nn.GRU(d, d, batch_first=True)
            self.cell = nn.GRUCell(2 * d, d)
            self.out = nn.Linear(2 * d, vocab)

        def forward(self, src):
            b, k, v = src.shape[0], self.k, self.vocab
            enc, h = self.encoder(self.emb(src))
            enc = enc.repeat_interleave(k, 0)                        # (b k, s, d)
            h = h[0].repeat_interleave(k, 0)
            tok = torch.full((b * k,), self.bos, dtype=torch.long)
            scores = torch.tensor([0.0] + [-1e9] * (k - 1)).repeat(b, 1)
            hist = tok.unsqueeze(1)
            base = (torch.arange(b) * k).unsqueeze(1)
            for _ in range(self.steps):
                att = torch.bmm(enc, h.unsqueeze(2)).squeeze(2).softmax(1)
                ctx = torch.bmm(att.unsqueeze(1), enc).squeeze(1)
                h = self.cell(torch.cat([self.emb(tok), ctx], 1), h)
                logp = F.log_softmax(self.out(torch.cat([h, ctx], 1)), -1)
                cand = (scores.reshape(b * k, 1) + logp).view(b, k * v)
                scores, flat = cand.topk(k, 1)
                rows = (torch.div(flat, v, rounding_mode="floor") + base).view(-1)
                tok = (flat % v).view(-1)
                h = h.index_select(0, rows)
                hist = torch.cat([hist.index_select(0, rows), tok.unsqueeze(1)], 1)
            return hist.view(b, k, self.steps + 1)

    # -- PointRend ------------------------------------------------------------------------
    class PointRendMini(nn.Module):
        def __init__(self, c=32, classes=4, points=256, steps=2):
            super().__init__()
            self.fine = nn.Sequential(conv_bn(3, c, 3, 2), conv_bn(c, c, 3, 2))     # 1/4
            self.coarse = nn.Sequential(conv_bn(c, 2 * c, 3, 2), conv_bn(2 * c, 2 * c),
                                        nn.Conv2d(2 * c, classes, 1))               # 1/8
            self.mlp = nn.Sequential(nn.Conv1d(c + classes, 64, 1), nn.ReLU(),
                                     nn.Conv1d(64, 64, 1), nn.ReLU(),
                                     nn.Conv1d(64, classes, 1))
            self.points, self.steps = points, steps

        def forward(self, image):
            fine = self.fine(image)
            coarse = self.coarse(fine)
            mask = coarse
            for _ in range(self.steps):
                mask = F.interpolate(mask, scale_factor=2, mode="bilinear", align_corners=False)
                b, k, h, w = mask.shape
                top2 = mask.topk(2, dim=1)[0]
                uncertainty = (top2[:, 1] - top2[:, 0]).reshape(b, h * w)
                idx = uncertainty.topk(min(self.points, h * w), 1)[1]          # (b, n)
                xs = (idx % w).float()
                ys = torch.div(idx, w, rounding_mode="floor").float()
                grid = torch.stack([(xs + 0.5) / w * 2 - 1, (ys + 0.5) / h * 2 - 1], -1)
                grid = grid.unsqueeze(1)                                        # (b, 1, n, 2)
                feats = torch.cat([F.grid_sample(fine, grid, align_corners=False),
                                   F.grid_sample(coarse, grid, align_corners=False)], 1)
                refined = self.mlp(feats.squeeze(2))                            # (b, k, n)
                mask = mask.reshape(b, k, h * w).scatter(
                    2, idx.unsqueeze(1).expand(-1, k, -1), refined).view(b, k, h, w)
            return mask

    # -- NF-ResNet ------------------------------------------------------------------------
    class ScaledStdConv2d(nn.Conv2d):
        """timm's scaled weight standardization: the weights normalized per output channel by
        ``F.batch_norm`` in training mode, scaled by a gain over sqrt(fan-in)."""

        def __init__(self, cin, cout, k, stride=1, groups=1):
            super().__init__(cin, cout, k, stride, k // 2, groups=groups)
            self.gain = nn.Parameter(torch.ones(cout) + 0.1 * torch.randn(cout))
            self.scale = self.weight[0].numel() ** -0.5

        def forward(self, x):
            w = F.batch_norm(self.weight.reshape(1, self.out_channels, -1), None, None,
                             weight=self.gain * self.scale, training=True, momentum=0.0,
                             eps=1e-6).reshape_as(self.weight)
            return F.conv2d(x, w, self.bias, self.stride, self.padding, self.dilation,
                            self.groups)

    GAMMA_RELU = 1.7139589

    class NFBlock(nn.Module):
        def __init__(self, cin, c, stride, beta, alpha=0.2):
            super().__init__()
            self.beta, self.alpha = beta, alpha
            self.conv1 = ScaledStdConv2d(cin, c, 1)
            self.conv2 = ScaledStdConv2d(c, c, 3, stride, groups=c // 16)
            self.conv3 = ScaledStdConv2d(c, cin if stride == 1 else 2 * cin, 1)
            out = cin if stride == 1 else 2 * cin
            self.se1, self.se2 = nn.Conv2d(out, out // 4, 1), nn.Conv2d(out // 4, out, 1)
            self.skip_gain = nn.Parameter(torch.tensor(0.5))
            self.down = (ScaledStdConv2d(cin, out, 1, stride) if stride > 1 else None)

        def forward(self, x):
            pre = F.relu(x) * GAMMA_RELU / self.beta
            shortcut = x if self.down is None else self.down(pre)
            y = F.relu(self.conv1(pre)) * GAMMA_RELU
            y = F.relu(self.conv2(y)) * GAMMA_RELU
            y = self.conv3(y)
            y = y * 2 * torch.sigmoid(self.se2(F.relu(self.se1(y.mean((2, 3), keepdim=True)))))
            return shortcut + y * self.alpha * self.skip_gain

    class NFResNetMini(nn.Module):
        def __init__(self, classes=100, alpha=0.2, width=32):
            super().__init__()
            w = width
            self.stem = nn.Sequential(ScaledStdConv2d(3, w // 2, 3, 2), nn.ReLU(),
                                      ScaledStdConv2d(w // 2, w, 3, 1), nn.ReLU(),
                                      ScaledStdConv2d(w, w, 3, 2))
            blocks, expected_var = [], 1.0
            for cin, stride in ((w, 1), (w, 2), (2 * w, 1), (2 * w, 2)):
                blocks.append(NFBlock(cin, cin, stride, expected_var ** 0.5, alpha))
                expected_var = 1.0 if stride > 1 else expected_var + alpha ** 2
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(4 * w, classes)

        def forward(self, x):
            y = F.relu(self.blocks(self.stem(x))) * GAMMA_RELU
            return self.fc(y.mean((2, 3)))

    # -- Neural Turing Machine ------------------------------------------------------------
    class NTMMini(nn.Module):
        def __init__(self, inp=8, out=8, ctrl=100, n=64, m=20):
            super().__init__()
            self.n, self.m = n, m
            self.controller = nn.LSTMCell(inp + m, ctrl)
            self.read_head = nn.Linear(ctrl, m + 6)              # key, beta, g, shift 3, gamma
            self.write_head = nn.Linear(ctrl, 3 * m + 6)         # ... + erase, add
            self.fc = nn.Linear(ctrl + m, out)
            self.register_buffer("mem0", torch.full((n, m), 1e-6) + 0.01 * torch.randn(n, m))
            self.register_buffer("w0", F.softmax(torch.randn(n), 0))
            self.r0 = nn.Parameter(torch.randn(m) * 0.01)

        def address(self, p, mem, w_prev):
            key, beta, g, shift, gamma = torch.split(p, [self.m, 1, 1, 3, 1], 1)
            sim = F.cosine_similarity(mem, key.unsqueeze(1), dim=-1, eps=1e-8)
            wc = F.softmax(F.softplus(beta) * sim, -1)
            g = torch.sigmoid(g)
            wg = g * wc + (1 - g) * w_prev
            s = F.softmax(shift, -1)
            ws = (s[:, :1] * torch.roll(wg, -1, 1) + s[:, 1:2] * wg
                  + s[:, 2:] * torch.roll(wg, 1, 1))
            w = ws ** (1 + F.softplus(gamma))
            return w / (w.sum(-1, keepdim=True) + 1e-16)

        def forward(self, x):                                       # (b, t, inp)
            b, t, _ = x.shape
            mem = self.mem0.expand(b, -1, -1)
            wr = ww = self.w0.expand(b, -1)
            r = self.r0.expand(b, -1)
            h = c = x.new_zeros(b, self.controller.hidden_size)
            outs = []
            for i in range(t):
                h, c = self.controller(torch.cat([x[:, i], r], 1), (h, c))
                wp = self.write_head(h)
                ww = self.address(wp[:, :self.m + 6], mem, ww)
                erase = torch.sigmoid(wp[:, self.m + 6:2 * self.m + 6])
                add = torch.tanh(wp[:, 2 * self.m + 6:])
                mem = mem * (1 - ww.unsqueeze(2) * erase.unsqueeze(1)) + \
                    ww.unsqueeze(2) * add.unsqueeze(1)
                wr = self.address(self.read_head(h), mem, wr)
                r = torch.bmm(wr.unsqueeze(1), mem).squeeze(1)
                outs.append(torch.sigmoid(self.fc(torch.cat([h, r], 1))))
            return torch.stack(outs, 1)

    # -- inputs ---------------------------------------------------------------------------
    def tokens(b, t, vocab, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"tokens": torch.randint(0, vocab, (b, t), generator=g)}
        return make

    def two_views(b=16, side=32, seed=92):
        def make():
            g = torch.Generator().manual_seed(seed)
            base = torch.rand(b, 3, side, side, generator=g)
            v2 = torch.flip(base, [3]) * 0.9 + 0.05 * torch.randn(b, 3, side, side, generator=g)
            return {"view1": base, "view2": v2}
        return make

    def image_mask(b=2, side=96, seed=93):
        def make():
            g = torch.Generator().manual_seed(seed)
            image = torch.rand(b, 3, side, side, generator=g)
            blob = F.avg_pool2d(torch.rand(b, 1, side, side, generator=g), 9, 1, 4)
            return {"image": image, "mask": (blob > 0.5).float()}
        return make

    def source(b=2, s=20, vocab=500, seed=94):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"src": torch.randint(2, vocab, (b, s), generator=g)}
        return make

    def copy_task(b=4, t=10, inp=8, seed=95):
        def make():
            g = torch.Generator().manual_seed(seed)
            return {"x": (torch.rand(b, t, inp, generator=g) > 0.5).float()}
        return make

    return {
        "bilstm_crf": (BiLSTMCRF, tokens(8, 24, 3000, 91)),
        "cornernet_mini": (CornerNetMini, (1, 3, 128, 128)),
        "deepseek_mla": (DeepSeekMLA, tokens(2, 32, 1000, 96)),
        "soft_moe_vit": (SoftMoEViT, (2, 3, 64, 64)),
        "qat_fakequant": (QATResNet, (1, 3, 64, 64)),
        "qat_mobilenet": (qat_mobilenet, (1, 3, 64, 64)),
        "qat_poolnet": (QATPoolNet, (1, 3, 100, 100)),
        "simclr_ntxent": (SimCLR, two_views()),
        "seg_focal_dice": (SegWithLosses, image_mask()),
        "resnest_mini": (ResNeStMini, (1, 3, 96, 96)),
        "beam_search_gru": (BeamSearchDecoder, source()),
        "pointrend_mini": (PointRendMini, (1, 3, 128, 128)),
        "nfnet_mini": (NFResNetMini, (1, 3, 96, 96)),
        "ntm_copy": (NTMMini, copy_task()),
    }
