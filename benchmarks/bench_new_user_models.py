"""Architectures a new user brings, beyond the models the issue names: each written in PyTorch,
imported with ``relay.frontend.from_pytorch`` and built at opt_level 3, then timed side by side
with ONNX Runtime (the same module through PyTorch's TorchScript ONNX exporter) and PyTorch
eager, one thread, interleaved rounds (thread CPU time).

    python benchmarks/bench_new_user_models.py [--models efficientnet_b0,lstm] [--rounds 7]
    python benchmarks/bench_new_user_models.py --group second   # the second round of models
    python benchmarks/bench_new_user_models.py --group third    # the third round
    python benchmarks/bench_new_user_models.py --group fourth   # the fourth round
    python benchmarks/bench_new_user_models.py --group fifth    # the fifth (new_user_models_fifth)
    python benchmarks/bench_new_user_models.py --group sixth    # the sixth (new_user_models_sixth)
    python benchmarks/bench_new_user_models.py --group seventh  # the seventh (new_user_models_seventh)
    python benchmarks/bench_new_user_models.py --group eighth   # the eighth (new_user_models_eighth)
    python benchmarks/bench_new_user_models.py --group ninth    # the ninth (new_user_models_ninth)
    python benchmarks/bench_new_user_models.py --group tenth    # the tenth (new_user_models_tenth)
    python benchmarks/bench_new_user_models.py --group eleventh # the eleventh (..._eleventh)
    python benchmarks/bench_new_user_models.py --group twelfth  # the twelfth (..._twelfth)
    python benchmarks/bench_new_user_models.py --group thirteenth  # (..._thirteenth)
    python benchmarks/bench_new_user_models.py --group fourteenth  # (..._fourteenth)
    python benchmarks/bench_new_user_models.py --group fifteenth  # (..._fifteenth)
    python benchmarks/bench_new_user_models.py --group sixteenth  # (..._sixteenth)
    python benchmarks/bench_new_user_models.py --group seventeenth  # (..._seventeenth)
    python benchmarks/bench_new_user_models.py --group eighteenth  # (..._eighteenth)
    python benchmarks/bench_new_user_models.py --group nineteenth  # (..._nineteenth)
    python benchmarks/bench_new_user_models.py --group twentieth  # (..._twentieth)
    python benchmarks/bench_new_user_models.py --group twentyfirst  # (..._twentyfirst)
    python benchmarks/bench_new_user_models.py --group twentysecond  # (..._twentysecond)
    python benchmarks/bench_new_user_models.py --group twentythird  # (..._twentythird)
    python benchmarks/bench_new_user_models.py --group twentyfourth  # (..._twentyfourth)
    python benchmarks/bench_new_user_models.py --group twentyfifth  # (..._twentyfifth)
    python benchmarks/bench_new_user_models.py --group twentysixth  # (..._twentysixth)
    python benchmarks/bench_new_user_models.py --group twentyseventh  # (..._twentyseventh)
    python benchmarks/bench_new_user_models.py --group twentyeighth  # (..._twentyeighth)
    python benchmarks/bench_new_user_models.py --group twentyninth  # (..._twentyninth)
    python benchmarks/bench_new_user_models.py --group thirtieth  # (..._thirtieth)
    python benchmarks/bench_new_user_models.py --group thirtyfirst  # (..._thirtyfirst)
    python benchmarks/bench_new_user_models.py --group thirtysecond  # (..._thirtysecond)

``--target "llvm -mcpu=haswell"`` builds minitvm's side for that CPU (AVX2 code on an AVX-512
host; the error column then checks the AVX2 kernels). Needs the ``torch`` and ``onnx`` extras. Prints the time of each, the ratios, the import and build
seconds and the largest error relative to PyTorch's output.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402
from new_user_models_eighteenth import eighteenth_models  # noqa: E402
from new_user_models_eighth import eighth_models  # noqa: E402
from new_user_models_eleventh import eleventh_models  # noqa: E402
from new_user_models_fifteenth import fifteenth_models  # noqa: E402
from new_user_models_fifth import fifth_models  # noqa: E402
from new_user_models_fourteenth import fourteenth_models  # noqa: E402
from new_user_models_nineteenth import nineteenth_models  # noqa: E402
from new_user_models_ninth import ninth_models  # noqa: E402
from new_user_models_seventeenth import seventeenth_models  # noqa: E402
from new_user_models_seventh import seventh_models  # noqa: E402
from new_user_models_sixteenth import sixteenth_models  # noqa: E402
from new_user_models_sixth import sixth_models  # noqa: E402
from new_user_models_tenth import tenth_models  # noqa: E402
from new_user_models_thirteenth import thirteenth_models  # noqa: E402
from new_user_models_thirtieth import thirtieth_models  # noqa: E402
from new_user_models_thirtyfirst import thirtyfirst_models  # noqa: E402
from new_user_models_thirtysecond import thirtysecond_models  # noqa: E402
from new_user_models_twelfth import twelfth_models  # noqa: E402
from new_user_models_twentieth import twentieth_models  # noqa: E402
from new_user_models_twentyeighth import twentyeighth_models  # noqa: E402
from new_user_models_twentyfifth import twentyfifth_models  # noqa: E402
from new_user_models_twentyfirst import twentyfirst_models  # noqa: E402
from new_user_models_twentyfourth import twentyfourth_models  # noqa: E402
from new_user_models_twentyninth import twentyninth_models  # noqa: E402
from new_user_models_twentysecond import twentysecond_models  # noqa: E402
from new_user_models_twentyseventh import twentyseventh_models  # noqa: E402
from new_user_models_twentysixth import twentysixth_models  # noqa: E402
from new_user_models_twentythird import twentythird_models  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402


def models():
    """name -> (constructor, input shape); the classes are built here so that importing this
    file does not need torch."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class SE(nn.Module):
        def __init__(self, c, squeeze, act=nn.ReLU, gate=nn.Hardsigmoid):
            super().__init__()
            self.f1, self.f2 = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1)
            self.act, self.gate = act(), gate()

        def forward(self, x):
            return x * self.gate(self.f2(self.act(self.f1(F.adaptive_avg_pool2d(x, 1)))))

    def bn_act(c, act):
        return [nn.BatchNorm2d(c), act()] if act else [nn.BatchNorm2d(c)]

    class Inverted(nn.Module):
        """MobileNetV3 / EfficientNet block: expand 1x1, depthwise kxk, SE, project 1x1."""

        def __init__(self, cin, mid, cout, k, stride, se, act, gate=nn.Hardsigmoid):
            super().__init__()
            self.res = stride == 1 and cin == cout
            layers = [nn.Conv2d(cin, mid, 1, bias=False), *bn_act(mid, act)] if mid != cin else []
            layers += [nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False),
                       *bn_act(mid, act)]
            if se:
                layers.append(SE(mid, max(8, cin // 4), act, gate))
            layers += [nn.Conv2d(mid, cout, 1, bias=False), *bn_act(cout, None)]
            self.body = nn.Sequential(*layers)

        def forward(self, x):
            return x + self.body(x) if self.res else self.body(x)

    def mobilenetv3_small():
        hs, re = nn.Hardswish, nn.ReLU
        cfg = [(16, 16, 16, 3, 2, True, re), (16, 72, 24, 3, 2, False, re),
               (24, 88, 24, 3, 1, False, re), (24, 96, 40, 5, 2, True, hs),
               (40, 240, 40, 5, 1, True, hs), (40, 240, 40, 5, 1, True, hs),
               (40, 120, 48, 5, 1, True, hs), (48, 144, 48, 5, 1, True, hs),
               (48, 288, 96, 5, 2, True, hs), (96, 576, 96, 5, 1, True, hs),
               (96, 576, 96, 5, 1, True, hs)]
        return nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), *bn_act(16, hs),
                             *[Inverted(*c) for c in cfg], nn.Conv2d(96, 576, 1, bias=False),
                             *bn_act(576, hs), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(576, 1024), hs(), nn.Linear(1024, 1000))

    def efficientnet_b0():
        cfg = [(1, 16, 1, 3, 1), (6, 24, 2, 3, 2), (6, 40, 2, 5, 2), (6, 80, 3, 3, 2),
               (6, 112, 3, 5, 1), (6, 192, 4, 5, 2), (6, 320, 1, 3, 1)]
        layers, cin = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), *bn_act(32, nn.SiLU)], 32
        for expand, cout, repeat, k, stride in cfg:
            for i in range(repeat):
                layers.append(Inverted(cin, cin * expand, cout, k, stride if i == 0 else 1,
                                       True, nn.SiLU, nn.Sigmoid))
                cin = cout
        return nn.Sequential(*layers, nn.Conv2d(cin, 1280, 1, bias=False),
                             *bn_act(1280, nn.SiLU), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(1280, 1000))

    class Shuffle(nn.Module):
        """ShuffleNetV2 unit: split (or two strided branches), concatenate, channel shuffle."""

        def __init__(self, cin, cout, stride):
            super().__init__()
            self.stride, half = stride, cout // 2
            if stride > 1:
                self.left = nn.Sequential(
                    nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
                    *bn_act(cin, None), nn.Conv2d(cin, half, 1, bias=False), *bn_act(half, nn.ReLU))
            c = cin if stride > 1 else half
            self.right = nn.Sequential(
                nn.Conv2d(c, half, 1, bias=False), *bn_act(half, nn.ReLU),
                nn.Conv2d(half, half, 3, stride, 1, groups=half, bias=False),
                *bn_act(half, None), nn.Conv2d(half, half, 1, bias=False),
                *bn_act(half, nn.ReLU))

        def forward(self, x):
            if self.stride == 1:
                a, b = x.chunk(2, dim=1)
                out = torch.cat((a, self.right(b)), 1)
            else:
                out = torch.cat((self.left(x), self.right(x)), 1)
            n, c, h, w = out.shape
            return out.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)

    def shufflenetv2():
        layers, cin = [nn.Conv2d(3, 24, 3, 2, 1, bias=False), *bn_act(24, nn.ReLU),
                       nn.MaxPool2d(3, 2, 1)], 24
        for cout, repeat in [(116, 4), (232, 8), (464, 4)]:
            layers += [Shuffle(cin, cout, 2)] + [Shuffle(cout, cout, 1) for _ in range(repeat - 1)]
            cin = cout
        return nn.Sequential(*layers, nn.Conv2d(cin, 1024, 1, bias=False),
                             *bn_act(1024, nn.ReLU), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(1024, 1000))

    class Bottleneck(nn.Module):
        """ResNeXt / RegNet block: 1x1, grouped 3x3 (``width`` channels a group), 1x1."""

        def __init__(self, cin, cout, stride, width, mid):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(cin, mid, 1, bias=False), *bn_act(mid, nn.ReLU),
                nn.Conv2d(mid, mid, 3, stride, 1, groups=mid // width, bias=False),
                *bn_act(mid, nn.ReLU), nn.Conv2d(mid, cout, 1, bias=False), *bn_act(cout, None))
            self.short = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), *bn_act(cout, None))

        def forward(self, x):
            return F.relu(self.body(x) + self.short(x))

    def grouped_net(widths, depths, width, mid_ratio):
        layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), *bn_act(64, nn.ReLU),
                       nn.MaxPool2d(3, 2, 1)], 64
        for i, (cout, depth) in enumerate(zip(widths, depths)):
            for j in range(depth):
                layers.append(Bottleneck(cin, cout, 2 if j == 0 and i > 0 else 1, width,
                                         int(cout * mid_ratio)))
                cin = cout
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(cin, 1000))

    class ConvNeXtBlock(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.dw, self.ln = nn.Conv2d(d, d, 7, padding=3, groups=d), nn.LayerNorm(d)
            self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.gamma = nn.Parameter(torch.full((d,), 0.1))

        def forward(self, x):
            y = self.dw(x).permute(0, 2, 3, 1)
            y = self.down(F.gelu(self.up(self.ln(y)))) * self.gamma
            return x + y.permute(0, 3, 1, 2)

    class ChannelNorm(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.ln = nn.LayerNorm(c)

        def forward(self, x):
            return self.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    def convnext_mini():
        layers, dims = [nn.Conv2d(3, 64, 4, 4), ChannelNorm(64)], [64, 128, 256, 512]
        for i, (d, depth) in enumerate(zip(dims, [2, 2, 4, 2])):
            if i:
                layers += [ChannelNorm(dims[i - 1]), nn.Conv2d(dims[i - 1], d, 2, 2)]
            layers += [ConvNeXtBlock(d) for _ in range(depth)]
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(512),
                             nn.Linear(512, 1000))

    class ViT(nn.Module):
        def __init__(self, d=192, depth=6, heads=3):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 16, 16)
            self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, 197, d) * 0.02)
            self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(
                d, heads, 4 * d, 0.0, activation="gelu", batch_first=True, norm_first=True)
                for _ in range(depth)])
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, 1000)

        def forward(self, x):
            x = self.patch(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x[:, 0]))

    class UNet(nn.Module):
        def __init__(self, c=32):
            super().__init__()

            def double(i, o):
                return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), *bn_act(o, nn.ReLU),
                                     nn.Conv2d(o, o, 3, padding=1), *bn_act(o, nn.ReLU))

            self.down = nn.ModuleList([double(3, c), double(c, 2 * c), double(2 * c, 4 * c)])
            self.mid = double(4 * c, 8 * c)
            self.ups = nn.ModuleList([nn.ConvTranspose2d(8 * c, 4 * c, 2, 2),
                                      nn.ConvTranspose2d(4 * c, 2 * c, 2, 2),
                                      nn.ConvTranspose2d(2 * c, c, 2, 2)])
            self.merge = nn.ModuleList([double(8 * c, 4 * c), double(4 * c, 2 * c),
                                        double(2 * c, c)])
            self.out = nn.Conv2d(c, 2, 1)

        def forward(self, x):
            skips = []
            for block in self.down:
                x = block(x)
                skips.append(x)
                x = F.max_pool2d(x, 2)
            x = self.mid(x)
            for up, merge, skip in zip(self.ups, self.merge, reversed(skips)):
                x = merge(torch.cat([up(x), skip], 1))
            return self.out(x)

    class FPN(nn.Module):
        """A segmentation head: nearest and bilinear upsampling added to lateral 1x1 convs."""

        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(3, 32, 3, 2, 1), nn.Conv2d(32, 64, 3, 2, 1)
            self.c3 = nn.Conv2d(64, 128, 3, 2, 1)
            self.l3, self.l2, self.l1 = nn.Conv2d(128, 64, 1), nn.Conv2d(64, 64, 1), \
                nn.Conv2d(32, 64, 1)
            self.head = nn.Conv2d(64, 21, 3, padding=1)

        def forward(self, x):
            a = F.relu(self.c1(x))
            b = F.relu(self.c2(a))
            p = self.l3(F.relu(self.c3(b)))
            p = self.l2(b) + F.interpolate(p, scale_factor=2, mode="nearest")
            p = self.l1(a) + F.interpolate(p, scale_factor=2, mode="bilinear",
                                           align_corners=False)
            return F.interpolate(self.head(p), scale_factor=2, mode="bilinear",
                                 align_corners=False)

    class DeepLabHead(nn.Module):
        """Dilated 3x3 branches, image pooling, bilinear upsampling to the input size."""

        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 2, 1), nn.ReLU(),
                                      nn.Conv2d(64, 128, 3, 2, 1), nn.ReLU(),
                                      nn.Conv2d(128, 256, 3, 2, 1), nn.ReLU())
            self.branches = nn.ModuleList([nn.Conv2d(256, 64, 1)] + [
                nn.Conv2d(256, 64, 3, padding=d, dilation=d) for d in (2, 4, 6)])
            self.pool = nn.Conv2d(256, 64, 1)
            self.proj, self.cls = nn.Conv2d(320, 64, 1), nn.Conv2d(64, 21, 1)

        def forward(self, x):
            f = self.stem(x)
            size = f.shape[2:]
            ys = [F.relu(b(f)) for b in self.branches]
            ys.append(F.interpolate(F.relu(self.pool(F.adaptive_avg_pool2d(f, 1))), size=size,
                                    mode="bilinear", align_corners=False))
            y = self.cls(F.relu(self.proj(torch.cat(ys, 1))))
            return F.interpolate(y, size=x.shape[2:], mode="bilinear", align_corners=False)

    def conv1d_audio():
        layers = [nn.Conv1d(40, 256, 11, 2, 5), nn.BatchNorm1d(256), nn.ReLU()]
        for _ in range(4):
            layers += [nn.Conv1d(256, 256, 7, padding=3), nn.BatchNorm1d(256), nn.ReLU()]
        return nn.Sequential(*layers, nn.Conv1d(256, 512, 1), nn.ReLU(), nn.Conv1d(512, 29, 1),
                             nn.LogSoftmax(1))

    class Recurrent(nn.Module):
        def __init__(self, cell):
            super().__init__()
            self.rnn, self.head = cell(64, 128, 2, batch_first=True), nn.Linear(128, 10)

        def forward(self, x):
            return self.head(self.rnn(x)[0][:, -1])

    image = (1, 3, 224, 224)
    return {
        "mobilenetv3_small": (mobilenetv3_small, image),
        "efficientnet_b0": (efficientnet_b0, image),
        "shufflenetv2": (shufflenetv2, image),
        "resnext50_32x4d": (lambda: grouped_net((256, 512, 1024, 2048), (3, 4, 6, 3), 4, 0.5),
                            image),
        "regnet_like": (lambda: grouped_net((48, 96, 208, 432), (1, 3, 6, 6), 16, 1.0), image),
        "convnext_mini": (convnext_mini, image),
        "vit_tiny": (ViT, image),
        "unet": (UNet, (1, 3, 128, 128)),
        "fpn_upsample": (FPN, (1, 3, 256, 256)),
        "deeplab_head": (DeepLabHead, (1, 3, 256, 256)),
        "conv1d_audio": (conv1d_audio, (1, 40, 400)),
        "lstm": (lambda: Recurrent(nn.LSTM), (1, 32, 64)),
        "gru": (lambda: Recurrent(nn.GRU), (1, 32, 64)),
    }


def new_models():
    """The second round: name -> (constructor, inputs), where inputs is an input shape (one
    float32 input ``x``) or a function returning ``{name: tensor}``."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    def bn_relu_conv(cin, cout, k, pad=0):
        return [nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, cout, k, padding=pad, bias=False)]

    class DenseBlock(nn.Module):
        """DenseNet: each layer (BN-ReLU-1x1, BN-ReLU-3x3) adds ``growth`` channels."""

        def __init__(self, cin, layers, growth):
            super().__init__()
            self.layers = nn.ModuleList([nn.Sequential(
                *bn_relu_conv(cin + i * growth, 4 * growth, 1),
                *bn_relu_conv(4 * growth, growth, 3, 1)) for i in range(layers)])

        def forward(self, x):
            feats = [x]
            for layer in self.layers:
                feats.append(layer(torch.cat(feats, 1)))
            return torch.cat(feats, 1)

    def densenet_mini():
        layers, c = [nn.Conv2d(3, 32, 7, 2, 3, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                     nn.MaxPool2d(3, 2, 1)], 32
        for i, n in enumerate((4, 6, 4)):
            layers.append(DenseBlock(c, n, 16))
            c += 16 * n
            if i < 2:
                layers += [*bn_relu_conv(c, c // 2, 1), nn.AvgPool2d(2, 2)]
                c //= 2
        return nn.Sequential(*layers, nn.BatchNorm2d(c), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Linear(c, 100))

    class Fire(nn.Module):
        def __init__(self, cin, squeeze, expand):
            super().__init__()
            self.s = nn.Conv2d(cin, squeeze, 1)
            self.e1, self.e3 = nn.Conv2d(squeeze, expand, 1), nn.Conv2d(squeeze, expand, 3,
                                                                         padding=1)

        def forward(self, x):
            s = F.relu(self.s(x))
            return torch.cat([F.relu(self.e1(s)), F.relu(self.e3(s))], 1)

    def squeezenet():
        pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        return nn.Sequential(
            nn.Conv2d(3, 64, 3, 2), nn.ReLU(), pool, Fire(64, 16, 64), Fire(128, 16, 64), pool,
            Fire(128, 32, 128), Fire(256, 32, 128), pool, Fire(256, 48, 192),
            Fire(384, 48, 192), Fire(384, 64, 256), Fire(512, 64, 256), nn.Dropout(0.5),
            nn.Conv2d(512, 100, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())

    class Inception(nn.Module):
        def __init__(self, cin, c1, c3r, c3, c5r, c5, cp):
            super().__init__()

            def cbr(i, o, k):
                return nn.Sequential(nn.Conv2d(i, o, k, padding=k // 2, bias=False),
                                     nn.BatchNorm2d(o), nn.ReLU(inplace=True))

            self.b1 = cbr(cin, c1, 1)
            self.b3 = nn.Sequential(cbr(cin, c3r, 1), cbr(c3r, c3, 3))
            self.b5 = nn.Sequential(cbr(cin, c5r, 1), cbr(c5r, c5, 5))
            self.bp = nn.Sequential(nn.MaxPool2d(3, 1, 1), cbr(cin, cp, 1))

        def forward(self, x):
            return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.bp(x)], 1)

    def inception_mini():
        return nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
            nn.Conv2d(64, 192, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
            Inception(192, 64, 96, 128, 16, 32, 32), Inception(256, 128, 128, 192, 32, 96, 64),
            nn.MaxPool2d(3, 2, 1), Inception(480, 192, 96, 208, 16, 48, 64),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 100))

    class Encoder(nn.Module):
        def __init__(self, norm_first, d=128, heads=4, depth=3):
            super().__init__()
            layer = nn.TransformerEncoderLayer(d, heads, 2 * d, 0.0, batch_first=True,
                                               norm_first=norm_first)
            self.enc = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
            self.head = nn.Linear(d, 10)

        def forward(self, x):
            return self.head(self.enc(x).mean(1))

    class MaskedMHA(nn.Module):
        """Self-attention with a padding mask (the last tokens of each sequence) and an additive
        attention mask (a band around the diagonal)."""

        def __init__(self, d=128, heads=8, seq=48):
            super().__init__()
            self.mha = nn.MultiheadAttention(d, heads, batch_first=True)
            self.register_buffer("band", torch.zeros(seq, seq).masked_fill(
                (torch.arange(seq)[:, None] - torch.arange(seq)[None]).abs() > 8, float("-inf")))
            self.ff = nn.Linear(d, d)

        def forward(self, x, pad):
            y, w = self.mha(x, x, x, key_padding_mask=pad, attn_mask=self.band)
            return self.ff(y) + w.sum(-1, keepdim=True)

    def mha_inputs(batch=2, seq=48, d=128):
        pad = torch.zeros(batch, seq, dtype=torch.bool)
        pad[:, seq - 5:] = True
        return {"x": torch.randn(batch, seq, d), "pad": pad}

    class GPT2Block(nn.Module):
        def __init__(self, d, heads, seq):
            super().__init__()
            self.heads, self.ln1, self.ln2 = heads, nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.register_buffer("causal", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
            att = att.masked_fill(self.causal[:, :, :t, :t] == 0, float("-inf"))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, d)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT2(nn.Module):
        def __init__(self, vocab=1000, d=128, heads=4, seq=64, depth=2):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.blocks = nn.ModuleList([GPT2Block(d, heads, seq) for _ in range(depth)])
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            pos = torch.arange(0, idx.shape[1], dtype=torch.long, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    class WindowAttention(nn.Module):
        """Swin: (shifted) windows of ``w`` x ``w`` tokens with a relative position bias."""

        def __init__(self, d, heads, w, shift):
            super().__init__()
            self.d, self.heads, self.w, self.shift = d, heads, w, shift
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.table = nn.Parameter(torch.randn((2 * w - 1) ** 2, heads) * 0.02)
            coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w),
                                                indexing="ij")).flatten(1)
            rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (w - 1)
            self.register_buffer("index", rel[..., 0] * (2 * w - 1) + rel[..., 1])

        def forward(self, x):
            b, h, wd, c = x.shape
            w, s = self.w, self.shift
            y = self.ln1(x)
            if s:
                y = torch.roll(y, shifts=(-s, -s), dims=(1, 2))
            y = y.view(b, h // w, w, wd // w, w, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, c)
            qkv = self.qkv(y).reshape(-1, w * w, 3, self.heads, c // self.heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
            att = (q * (c // self.heads) ** -0.5) @ k.transpose(-2, -1)
            bias = self.table[self.index.view(-1)].view(w * w, w * w, -1).permute(2, 0, 1)
            att = (att + bias.unsqueeze(0)).softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(-1, w * w, c)
            y = self.proj(y).view(b, h // w, wd // w, w, w, c).permute(0, 1, 3, 2, 4, 5)
            y = y.reshape(b, h, wd, c)
            if s:
                y = torch.roll(y, shifts=(s, s), dims=(1, 2))
            x = x + y
            return x + self.mlp(self.ln2(x))

    class SwinMini(nn.Module):
        def __init__(self, d=96):
            super().__init__()
            self.embed, self.ln = nn.Conv2d(3, d, 4, 4), nn.LayerNorm(d)
            self.blocks = nn.Sequential(*[WindowAttention(d, 3, 7, s) for s in (0, 3, 0, 3)])
            self.head = nn.Linear(d, 100)

        def forward(self, x):
            x = self.embed(x).permute(0, 2, 3, 1)
            return self.head(self.ln(self.blocks(x)).mean((1, 2)))

    class MobileViTBlock(nn.Module):
        def __init__(self, c, d, p=2):
            super().__init__()
            self.p = p
            self.local = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c),
                                       nn.SiLU(), nn.Conv2d(c, d, 1))
            self.tx = nn.TransformerEncoderLayer(d, 4, 2 * d, 0.0, activation="gelu",
                                                 batch_first=True, norm_first=True)
            self.back = nn.Conv2d(d, c, 1)
            self.fuse = nn.Sequential(nn.Conv2d(2 * c, c, 3, padding=1), nn.BatchNorm2d(c),
                                      nn.SiLU())

        def forward(self, x):
            y = self.local(x)
            b, d, h, w = y.shape
            p = self.p
            # unfold: (b, d, h, w) -> (b * p * p, h/p * w/p, d)
            y = y.reshape(b, d, h // p, p, w // p, p).permute(0, 3, 5, 2, 4, 1)
            y = self.tx(y.reshape(b * p * p, (h // p) * (w // p), d))
            y = y.reshape(b, p, p, h // p, w // p, d).permute(0, 5, 3, 1, 4, 2)
            y = self.back(y.reshape(b, d, h, w))
            return self.fuse(torch.cat([x, y], 1))

    def mobilevit_mini():
        def cbs(i, o, s):
            return [nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.SiLU()]

        return nn.Sequential(*cbs(3, 16, 2), *cbs(16, 32, 2), *cbs(32, 48, 2),
                             MobileViTBlock(48, 64), *cbs(48, 64, 2), MobileViTBlock(64, 80),
                             *cbs(64, 96, 2), MobileViTBlock(96, 96), nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Linear(96, 100))

    class YOLOHead(nn.Module):
        """Three scales (stride 8, 16, 32): nearest upsampling and concatenation, then per-scale
        anchors decoded with sigmoid, a grid and the anchor sizes."""

        def __init__(self, classes=20, anchors=3):
            super().__init__()
            self.na, self.no = anchors, classes + 5

            def cbl(i, o, k=3, s=1):
                return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, bias=False),
                                     nn.BatchNorm2d(o), nn.LeakyReLU(0.1))

            self.s8 = nn.Sequential(cbl(3, 16, 3, 2), cbl(16, 32, 3, 2), cbl(32, 64, 3, 2))
            self.s16, self.s32 = cbl(64, 128, 3, 2), cbl(128, 256, 3, 2)
            self.lat32, self.lat16 = cbl(256, 128, 1), cbl(256, 64, 1)
            self.heads = nn.ModuleList([nn.Conv2d(c, anchors * self.no, 1)
                                        for c in (128, 256, 256)])
            self.register_buffer("anchors", torch.tensor(
                [[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119],
                 [116, 90, 156, 198, 373, 326]], dtype=torch.float32).view(3, 1, 3, 1, 1, 2))

        def forward(self, x):
            p8 = self.s8(x)
            p16 = self.s16(p8)
            p32 = self.s32(p16)
            t32 = self.lat32(p32)
            f16 = torch.cat([F.interpolate(t32, scale_factor=2.0, mode="nearest"), p16], 1)
            t16 = self.lat16(f16)
            f8 = torch.cat([F.interpolate(t16, scale_factor=2.0, mode="nearest"), p8], 1)
            outs = []
            for i, (f, stride) in enumerate(((f8, 8), (f16, 16), (p32, 32))):
                y = self.heads[i](f)
                b, _, h, w = y.shape
                y = y.view(b, self.na, self.no, h, w).permute(0, 1, 3, 4, 2).sigmoid()
                gy, gx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
                grid = torch.stack((gx, gy), 2).view(1, 1, h, w, 2).float()
                xy = (y[..., :2] * 2 - 0.5 + grid) * stride
                wh = (y[..., 2:4] * 2) ** 2 * self.anchors[i]
                outs.append(torch.cat((xy, wh, y[..., 4:]), -1).view(b, -1, self.no))
            return torch.cat(outs, 1)

    class ESPCN(nn.Module):
        def __init__(self, scale=3):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(1, 64, 5, padding=2), nn.Tanh(),
                                      nn.Conv2d(64, 32, 3, padding=1), nn.Tanh(),
                                      nn.Conv2d(32, scale * scale, 3, padding=1),
                                      nn.PixelShuffle(scale))

        def forward(self, x):
            return torch.sigmoid(self.body(x))

    def autoencoder():
        return nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(64, 128, 3, 2, 1), nn.ReLU(),
            nn.ConvTranspose2d(128, 64, 3, 2, 1, output_padding=1), nn.ReLU(),
            nn.ConvTranspose2d(64, 32, 3, 2, 1, output_padding=1), nn.ReLU(),
            nn.ConvTranspose2d(32, 3, 4, 2, 1), nn.Sigmoid())

    def video3d():
        def cbr(i, o, k, s, p):
            return [nn.Conv3d(i, o, k, s, p, bias=False), nn.BatchNorm3d(o), nn.ReLU()]

        return nn.Sequential(*cbr(3, 32, (3, 5, 5), (1, 2, 2), (1, 2, 2)),
                             nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1)),
                             *cbr(32, 64, 3, 1, 1), nn.MaxPool3d(2, 2),
                             *cbr(64, 128, 3, 1, 1), nn.MaxPool3d(2, 2),
                             *cbr(128, 128, 3, 1, 1), nn.AdaptiveAvgPool3d(1), nn.Flatten(),
                             nn.Linear(128, 50))

    class TemporalBlock(nn.Module):
        """TCN: two weight-normalized dilated causal convolutions (pad both sides, chomp the
        right), a 1x1 residual when the width changes."""

        def __init__(self, cin, cout, k, dilation):
            super().__init__()
            pad = (k - 1) * dilation
            self.chomp = pad
            wn = nn.utils.weight_norm
            self.c1 = wn(nn.Conv1d(cin, cout, k, padding=pad, dilation=dilation))
            self.c2 = wn(nn.Conv1d(cout, cout, k, padding=pad, dilation=dilation))
            self.down = nn.Conv1d(cin, cout, 1) if cin != cout else None

        def forward(self, x):
            y = F.relu(self.c1(x)[:, :, :-self.chomp].contiguous())
            y = F.relu(self.c2(y)[:, :, :-self.chomp].contiguous())
            return F.relu(y + (x if self.down is None else self.down(x)))

    class TCN(nn.Module):
        def __init__(self):
            super().__init__()
            chans = [16, 64, 64, 64, 64]
            self.blocks = nn.Sequential(*[TemporalBlock(chans[i], chans[i + 1], 3, 2 ** i)
                                          for i in range(4)])
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            return self.head(self.blocks(x)[:, :, -1])

    class Recommender(nn.Module):
        """DLRM-like: one embedding table per sparse field, a bag of ids per sample for the
        multi-hot field (``nn.EmbeddingBag``), a bottom MLP on dense features, a top MLP."""

        def __init__(self, fields=(1000, 500, 200, 50), d=32):
            super().__init__()
            self.tables = nn.ModuleList([nn.Embedding(n, d) for n in fields])
            self.bag = nn.EmbeddingBag(300, d, mode="mean")
            self.bottom = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, d), nn.ReLU())
            self.top = nn.Sequential(nn.Linear(d * (len(fields) + 2), 128), nn.ReLU(),
                                     nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))

        def forward(self, dense, ids, bag):
            embs = [t(ids[:, i]) for i, t in enumerate(self.tables)]
            z = torch.cat([self.bottom(dense), *embs, self.bag(bag)], 1)
            return torch.sigmoid(self.top(z))

    def rec_inputs(batch=16):
        g = torch.Generator().manual_seed(1)
        highs = torch.tensor([1000, 500, 200, 50])
        ids = (torch.rand(batch, 4, generator=g) * highs).long()
        return {"dense": torch.randn(batch, 13, generator=g), "ids": ids,
                "bag": torch.randint(0, 300, (batch, 6), generator=g)}

    image = (1, 3, 224, 224)
    return {
        "densenet_mini": (densenet_mini, (1, 3, 128, 128)),
        "squeezenet": (squeezenet, image),
        "inception_mini": (inception_mini, (1, 3, 128, 128)),
        "tx_encoder_post": (lambda: Encoder(False), (2, 64, 128)),
        "tx_encoder_pre": (lambda: Encoder(True), (2, 64, 128)),
        "mha_masks": (MaskedMHA, mha_inputs),
        "gpt2_mini": (GPT2, lambda: {"idx": torch.randint(0, 1000, (1, 64))}),
        "swin_mini": (SwinMini, image),
        "mobilevit_mini": (mobilevit_mini, (1, 3, 128, 128)),
        "yolo_head": (YOLOHead, (1, 3, 256, 256)),
        "espcn": (ESPCN, (1, 1, 96, 96)),
        "conv_autoencoder": (autoencoder, (1, 3, 128, 128)),
        "video3d": (video3d, (1, 3, 8, 64, 64)),
        "tcn": (TCN, (1, 16, 256)),
        "recommender": (Recommender, rec_inputs),
    }


def third_models():
    """The third round: name -> (constructor, inputs), as in ``new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    class MixerBlock(nn.Module):
        def __init__(self, tokens, d):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.tok = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(),
                                     nn.Linear(2 * tokens, tokens))
            self.ch = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            x = x + self.tok(self.ln1(x).transpose(1, 2)).transpose(1, 2)
            return x + self.ch(self.ln2(x))

    class MLPMixer(nn.Module):
        def __init__(self, d=128, patch=8, size=128, depth=4):
            super().__init__()
            self.embed = nn.Conv2d(3, d, patch, patch)
            self.blocks = nn.Sequential(*[MixerBlock((size // patch) ** 2, d)
                                          for _ in range(depth)])
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, 100)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2)
            return self.head(self.ln(self.blocks(x)).mean(1))

    class Residual(nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, x):
            return self.fn(x) + x

    def convmixer(d=128, depth=4, k=7, patch=8):
        return nn.Sequential(
            nn.Conv2d(3, d, patch, patch), nn.GELU(), nn.BatchNorm2d(d),
            *[nn.Sequential(Residual(nn.Sequential(nn.Conv2d(d, d, k, groups=d, padding="same"),
                                                   nn.GELU(), nn.BatchNorm2d(d))),
                            nn.Conv2d(d, d, 1), nn.GELU(), nn.BatchNorm2d(d))
              for _ in range(depth)],
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(d, 100))

    def conv_in(i, o, k, s=1, relu=True):
        layers = [nn.ReflectionPad2d(k // 2), nn.Conv2d(i, o, k, s), nn.InstanceNorm2d(o,
                                                                                      affine=True)]
        return layers + [nn.ReLU()] if relu else layers

    class StyleTransfer(nn.Module):
        """Johnson et al.: reflection padding, instance norm, residual blocks, nearest
        upsampling, tanh."""

        def __init__(self, c=32):
            super().__init__()
            self.down = nn.Sequential(*conv_in(3, c, 9), *conv_in(c, 2 * c, 3, 2),
                                      *conv_in(2 * c, 4 * c, 3, 2))
            self.res = nn.ModuleList([nn.Sequential(*conv_in(4 * c, 4 * c, 3),
                                                    *conv_in(4 * c, 4 * c, 3, relu=False))
                                      for _ in range(3)])
            self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"),
                                    *conv_in(4 * c, 2 * c, 3),
                                    nn.Upsample(scale_factor=2, mode="nearest"),
                                    *conv_in(2 * c, c, 3), nn.ReflectionPad2d(4),
                                    nn.Conv2d(c, 3, 9))

        def forward(self, x):
            x = self.down(x)
            for block in self.res:
                x = x + block(x)
            return torch.tanh(self.up(x))

    class SRResNet(nn.Module):
        def __init__(self, c=32, blocks=4):
            super().__init__()
            self.head = nn.Sequential(nn.Conv2d(3, c, 9, padding=4), nn.PReLU())
            self.body = nn.ModuleList([nn.Sequential(
                nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.PReLU(c),
                nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)) for _ in range(blocks)])
            self.mid = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c))
            self.up = nn.Sequential(nn.Conv2d(c, 4 * c, 3, padding=1), nn.PixelShuffle(2),
                                    nn.PReLU(), nn.Conv2d(c, 3, 9, padding=4))

        def forward(self, x):
            h = self.head(x)
            y = h
            for block in self.body:
                y = y + block(y)
            return self.up(self.mid(y) + h)

    class PointNet(nn.Module):
        """Input transform (T-net: a 3x3 matrix per cloud), shared per-point MLPs as Conv1d,
        max over the points, a classifier."""

        def __init__(self, classes=10):
            super().__init__()

            def mlp(*cs):
                layers = []
                for i, o in zip(cs[:-1], cs[1:]):
                    layers += [nn.Conv1d(i, o, 1), nn.BatchNorm1d(o), nn.ReLU()]
                return nn.Sequential(*layers)

            self.tnet, self.tfc = mlp(3, 64, 128, 256), nn.Linear(256, 9)
            self.feat = mlp(3, 64, 128, 512)
            self.head = nn.Sequential(nn.Linear(512, 256), nn.BatchNorm1d(256), nn.ReLU(),
                                      nn.Linear(256, classes))

        def forward(self, pts):
            t = self.tfc(torch.max(self.tnet(pts), 2)[0]).view(-1, 3, 3)
            t = t + torch.eye(3, dtype=pts.dtype)
            pts = torch.bmm(t, pts)
            return F.log_softmax(self.head(self.feat(pts).max(dim=2).values), dim=1)

    class GNBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.n1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.GroupNorm(8,
                                                                                            cout)
            self.c2, self.n2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.GroupNorm(8, cout)
            self.short = None if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.GroupNorm(8, cout))

        def forward(self, x):
            y = self.n2(self.c2(F.relu(self.n1(self.c1(x)))))
            return F.relu(y + (x if self.short is None else self.short(x)))

    def gn_resnet():
        return nn.Sequential(nn.Conv2d(3, 32, 7, 2, 3, bias=False), nn.GroupNorm(8, 32),
                             nn.ReLU(), nn.MaxPool2d(3, 2, 1), GNBlock(32, 32, 1),
                             GNBlock(32, 64, 2), GNBlock(64, 128, 2), GNBlock(128, 128, 1),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 100))

    class CRNN(nn.Module):
        """Text recognition: conv stack to a width-wise sequence, bidirectional LSTM, per-step
        class log-probabilities (CTC)."""

        def __init__(self, classes=37, hidden=64):
            super().__init__()

            def cbr(i, o):
                return [nn.Conv2d(i, o, 3, 1, 1), nn.BatchNorm2d(o), nn.ReLU()]

            self.cnn = nn.Sequential(*cbr(1, 32), nn.MaxPool2d(2, 2), *cbr(32, 64),
                                     nn.MaxPool2d(2, 2), *cbr(64, 128), nn.MaxPool2d((2, 1)),
                                     *cbr(128, 128), nn.MaxPool2d((4, 1)))
            self.rnn = nn.LSTM(128, hidden, 2, bidirectional=True)
            self.fc = nn.Linear(2 * hidden, classes)

        def forward(self, x):
            f = self.cnn(x).squeeze(2).permute(2, 0, 1)  # (width, batch, channels)
            y, _ = self.rnn(f)
            return F.log_softmax(self.fc(y), dim=2)

    class Wav2VecMini(nn.Module):
        """wav2vec 2.0 front end: strided Conv1d stack (GroupNorm on the first, GELU), feature
        projection, convolutional positional embedding, one transformer layer."""

        def __init__(self, c=128, d=128):
            super().__init__()
            specs = [(10, 5), (3, 2), (3, 2), (3, 2), (2, 2)]
            layers, cin = [], 1
            for i, (k, s) in enumerate(specs):
                layers.append(nn.Conv1d(cin, c, k, s, bias=False))
                if i == 0:
                    layers.append(nn.GroupNorm(c, c))
                layers.append(nn.GELU())
                cin = c
            self.fe = nn.Sequential(*layers)
            self.ln, self.proj = nn.LayerNorm(c), nn.Linear(c, d)
            self.pos = nn.Conv1d(d, d, 16, padding=8, groups=8)
            self.tx = nn.TransformerEncoderLayer(d, 4, 2 * d, 0.0, activation="gelu",
                                                 batch_first=True)

        def forward(self, wav):
            f = self.fe(wav.unsqueeze(1)).transpose(1, 2)
            h = self.proj(self.ln(f))
            p = F.gelu(self.pos(h.transpose(1, 2))[:, :, :-1]).transpose(1, 2)
            return self.tx(h + p)

    class Conformer(nn.Module):
        """One Conformer block: half-step FFNs around self-attention and a convolution module
        (pointwise, GLU, depthwise Conv1d, BatchNorm, Swish, pointwise)."""

        def __init__(self, d=144, heads=4, k=15):
            super().__init__()

            def ffn():
                return nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(),
                                     nn.Linear(4 * d, d))

            self.ff1, self.ff2 = ffn(), ffn()
            self.ln_att, self.att = nn.LayerNorm(d), nn.MultiheadAttention(d, heads,
                                                                          batch_first=True)
            self.ln_conv, self.pw1 = nn.LayerNorm(d), nn.Conv1d(d, 2 * d, 1)
            self.dw, self.bn = nn.Conv1d(d, d, k, padding=k // 2, groups=d), nn.BatchNorm1d(d)
            self.pw2, self.ln_out = nn.Conv1d(d, d, 1), nn.LayerNorm(d)

        def forward(self, x):
            x = x + 0.5 * self.ff1(x)
            h = self.ln_att(x)
            x = x + self.att(h, h, h, need_weights=False)[0]
            c = F.glu(self.pw1(self.ln_conv(x).transpose(1, 2)), dim=1)
            c = self.pw2(F.silu(self.bn(self.dw(c))))
            x = x + c.transpose(1, 2)
            return self.ln_out(x + 0.5 * self.ff2(x))

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w

    def rotate(x, cos, sin):
        a, b = x.chunk(2, dim=-1)
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)

    class RopeLayer(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
            self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
            self.gate, self.up = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False)
            self.down = nn.Linear(2 * d, d, bias=False)

        def forward(self, x, cos, sin, mask):
            b, t, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, t, 3, self.h, self.dh).permute(
                2, 0, 3, 1, 4).unbind(0)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh)
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            x = x + self.o((att @ v).transpose(1, 2).reshape(b, t, d))
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class RopeDecoder(nn.Module):
        """Llama-like decoder: rotary embeddings built in forward, a triu causal mask through
        masked_fill, RMSNorm, SwiGLU."""

        def __init__(self, vocab=1000, d=128, heads=4, depth=3):
            super().__init__()
            self.dh = d // heads
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList([RopeLayer(d, heads) for _ in range(depth)])
            self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            t = idx.shape[1]
            inv = 1.0 / (10000 ** (torch.arange(0, self.dh, 2, dtype=torch.float32) / self.dh))
            ang = torch.arange(t, dtype=torch.float32)[:, None] * inv[None, :]
            cos, sin = ang.cos(), ang.sin()
            mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
            x = self.emb(idx)
            for layer in self.layers:
                x = layer(x, cos, sin, mask)
            return self.head(self.norm(x))

    class DETRMini(nn.Module):
        """DETR: a conv backbone's features plus sine positions as memory, learned object
        queries through nn.TransformerDecoder, class and box heads."""

        def __init__(self, d=128, queries=20, classes=21):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(),
                                          nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
                                          nn.Conv2d(64, 128, 3, 2, 1), nn.ReLU(),
                                          nn.Conv2d(128, d, 3, 2, 1), nn.ReLU())
            self.query = nn.Parameter(torch.randn(queries, d))
            self.row, self.col = nn.Parameter(torch.rand(16, d // 2)), nn.Parameter(
                torch.rand(16, d // 2))
            layer = nn.TransformerDecoderLayer(d, 4, 2 * d, 0.0, batch_first=True)
            self.dec = nn.TransformerDecoder(layer, 2)
            self.cls, self.box = nn.Linear(d, classes + 1), nn.Sequential(
                nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

        def forward(self, x):
            f = self.backbone(x)
            b, d, h, w = f.shape
            pos = torch.cat([self.col[:w].unsqueeze(0).repeat(h, 1, 1),
                             self.row[:h].unsqueeze(1).repeat(1, w, 1)], -1).flatten(0, 1)
            mem = f.flatten(2).permute(0, 2, 1) + pos.unsqueeze(0)
            y = self.dec(self.query.unsqueeze(0).repeat(b, 1, 1), mem)
            return torch.cat([self.cls(y).softmax(-1), self.box(y).sigmoid()], -1)

    class MoE(nn.Module):
        """Mixture of experts: top-2 gating, softmax over the chosen logits, every expert run
        on every token and the two chosen combined through a scatter and an einsum."""

        def __init__(self, d=128, experts=4, k=2):
            super().__init__()
            self.k, self.ln = k, nn.LayerNorm(d)
            self.gate = nn.Linear(d, experts, bias=False)
            self.w1 = nn.Parameter(torch.randn(experts, d, 2 * d) * d ** -0.5)
            self.w2 = nn.Parameter(torch.randn(experts, 2 * d, d) * (2 * d) ** -0.5)

        def forward(self, x):
            h = self.ln(x)
            top, idx = self.gate(h).topk(self.k, dim=-1)
            weights = torch.zeros_like(self.gate(h)).scatter(-1, idx, top.softmax(-1))
            y = torch.einsum("btd,edf->btef", h, self.w1)
            y = torch.einsum("btef,efd->bted", F.gelu(y), self.w2)
            return x + torch.einsum("bte,bted->btd", weights, y)

    class GCN(nn.Module):
        """Graph convolution over a fixed edge list: gather the source features
        (index_select), scale by the symmetric degree norm, sum into the targets (scatter_add:
        torch's ONNX export refuses index_add with repeated indices)."""

        def __init__(self, nodes=200, feats=32, hidden=64, classes=7):
            super().__init__()
            g = torch.Generator().manual_seed(3)
            src = torch.randint(0, nodes, (800,), generator=g)
            dst = torch.randint(0, nodes, (800,), generator=g)
            loops = torch.arange(nodes)
            src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
            deg = torch.zeros(nodes).index_add_(0, dst, torch.ones(dst.shape[0]))
            self.register_buffer("src", src)
            self.register_buffer("dst", dst)
            self.register_buffer("norm", (deg[src] * deg[dst]).rsqrt().unsqueeze(-1))
            self.nodes = nodes
            self.l1, self.l2 = nn.Linear(feats, hidden), nn.Linear(hidden, classes)

        def prop(self, x):
            msg = x.index_select(1, self.src) * self.norm
            out = torch.zeros(x.shape[0], self.nodes, x.shape[2], dtype=x.dtype)
            return out.scatter_add(1, self.dst.view(1, -1, 1).expand_as(msg), msg)

        def forward(self, x):
            h = F.relu(self.prop(self.l1(x)))
            return F.log_softmax(self.prop(self.l2(h)), -1)

    class Seq2Seq(nn.Module):
        """GRU encoder-decoder with embeddings, teacher-forced decoding."""

        def __init__(self, vocab=500, d=64, hidden=128):
            super().__init__()
            self.src_emb, self.tgt_emb = nn.Embedding(vocab, d), nn.Embedding(vocab, d)
            self.enc = nn.GRU(d, hidden, batch_first=True)
            self.dec = nn.GRU(d, hidden, batch_first=True)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, src, tgt):
            _, h = self.enc(self.src_emb(src))
            y, _ = self.dec(self.tgt_emb(tgt), h)
            return self.out(y)

    class STN(nn.Module):
        """Spatial transformer: a localization net predicts an affine map, affine_grid and
        grid_sample warp the input, bilinear upsampling (align_corners=True) of the features."""

        def __init__(self):
            super().__init__()
            self.loc = nn.Sequential(nn.Conv2d(3, 16, 5, 2, 2), nn.ReLU(), nn.MaxPool2d(2),
                                     nn.Conv2d(16, 32, 5, 2, 2), nn.ReLU(),
                                     nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 6))
            with torch.no_grad():
                self.loc[-1].weight.mul_(0.1)
                self.loc[-1].bias.copy_(torch.tensor([1.0, 0.1, 0.05, -0.1, 0.9, 0.0]))
            self.body = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(),
                                      nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU())
            self.head = nn.Conv2d(64, 5, 1)

        def forward(self, x):
            theta = self.loc(x).view(-1, 2, 3)
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            x = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros",
                              align_corners=False)
            y = self.head(self.body(x))
            return F.interpolate(y, scale_factor=4, mode="bilinear", align_corners=True)

    def ids(shape, high, seed):
        def make():
            g = torch.Generator().manual_seed(seed)
            return torch.randint(0, high, shape, generator=g)
        return make

    image = (1, 3, 128, 128)
    return {
        "mlp_mixer": (MLPMixer, image),
        "convmixer": (convmixer, image),
        "style_transfer": (StyleTransfer, image),
        "srresnet": (SRResNet, (1, 3, 48, 48)),
        "pointnet": (PointNet, (2, 3, 1024)),
        "gn_resnet": (gn_resnet, image),
        "crnn": (CRNN, (1, 1, 32, 128)),
        "wav2vec_mini": (Wav2VecMini, (1, 8000)),
        "conformer": (Conformer, (1, 100, 144)),
        "rope_decoder": (RopeDecoder, lambda: {"idx": ids((1, 64), 1000, 5)()}),
        "detr_mini": (DETRMini, image),
        "moe": (MoE, (1, 64, 128)),
        "gcn": (GCN, (1, 200, 32)),
        "seq2seq_gru": (Seq2Seq, lambda: {"src": ids((1, 20), 500, 6)(),
                                          "tgt": ids((1, 16), 500, 7)()}),
        "stn": (STN, image),
    }


def fourth_models():
    """The fourth round: name -> (constructor, inputs), as in ``new_models``."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    def cbr(i, o, k, s=1, p=None, groups=1):
        if p is None:
            p = tuple(kk // 2 for kk in k) if isinstance(k, tuple) else k // 2
        return nn.Sequential(nn.Conv2d(i, o, k, s, p, groups=groups, bias=False),
                             nn.BatchNorm2d(o), nn.ReLU(inplace=True))

    class CBAM(nn.Module):
        """Channel attention from both avg and max pooling, then a 7x7 spatial gate."""

        def __init__(self, c, r=8):
            super().__init__()
            self.mlp = nn.Sequential(nn.Conv2d(c, c // r, 1), nn.ReLU(), nn.Conv2d(c // r, c, 1))
            self.spatial = nn.Conv2d(2, 1, 7, padding=3)

        def forward(self, x):
            a = self.mlp(F.adaptive_avg_pool2d(x, 1)) + self.mlp(F.adaptive_max_pool2d(x, 1))
            x = x * torch.sigmoid(a)
            s = torch.cat([x.mean(1, keepdim=True), x.amax(1, keepdim=True)], 1)
            return x * torch.sigmoid(self.spatial(s))

    class CBAMBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(cbr(cin, cout, 3, stride),
                                      nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(cout), CBAM(cout))
            self.skip = (nn.Identity() if stride == 1 and cin == cout else
                         nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout)))

        def forward(self, x):
            return F.relu(self.body(x) + self.skip(x))

    def cbam_resnet():
        layers, c = [cbr(3, 32, 3, 2), nn.MaxPool2d(3, 2, 1, ceil_mode=True)], 32
        for w, s in ((32, 1), (64, 2), (128, 2), (128, 1)):
            layers.append(CBAMBlock(c, w, s))
            c = w
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10))

    class InceptionC(nn.Module):
        """Inception-v3's factorised 7x7: 1x7 / 7x1 pairs, and an avg pool without the padding."""

        def __init__(self, c, m):
            super().__init__()
            self.b1 = cbr(c, 48, 1)
            self.b7 = nn.Sequential(cbr(c, m, 1), cbr(m, m, (1, 7)), cbr(m, 48, (7, 1)))
            self.b77 = nn.Sequential(cbr(c, m, 1), cbr(m, m, (7, 1)), cbr(m, m, (1, 7)),
                                     cbr(m, m, (7, 1)), cbr(m, 48, (1, 7)))
            self.pool = nn.Sequential(nn.AvgPool2d(3, 1, 1, count_include_pad=False),
                                      cbr(c, 48, 1))

        def forward(self, x):
            return torch.cat([self.b1(x), self.b7(x), self.b77(x), self.pool(x)], 1)

    class InceptionE(nn.Module):
        """The 1x3 / 3x1 split branches of Inception-v3's last blocks."""

        def __init__(self, c):
            super().__init__()
            self.stem = cbr(c, 64, 1)
            self.a, self.b = cbr(64, 32, (1, 3)), cbr(64, 32, (3, 1))

        def forward(self, x):
            y = self.stem(x)
            return torch.cat([self.a(y), self.b(y), F.max_pool2d(x, 3, 1, 1)], 1)

    def inception_v3_mini():
        return nn.Sequential(cbr(3, 32, 3, 2, 0), cbr(32, 64, 3),
                             nn.MaxPool2d(3, 2, ceil_mode=True), InceptionC(64, 32),
                             nn.MaxPool2d(3, 2), InceptionE(192), nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Dropout(0.2), nn.Linear(256, 10))

    class SepConv(nn.Sequential):
        def __init__(self, i, o):
            super().__init__(nn.Conv2d(i, i, 3, 1, 1, groups=i, bias=False),
                             nn.Conv2d(i, o, 1, bias=False), nn.BatchNorm2d(o))

    class XceptionBlock(nn.Module):
        def __init__(self, i, o, first_relu=True):
            super().__init__()
            self.body = nn.Sequential(nn.ReLU() if first_relu else nn.Identity(), SepConv(i, o),
                                      nn.ReLU(), SepConv(o, o), nn.MaxPool2d(3, 2, 1))
            self.skip = nn.Sequential(nn.Conv2d(i, o, 1, 2, bias=False), nn.BatchNorm2d(o))

        def forward(self, x):
            return self.body(x) + self.skip(x)

    def xception_mini():
        return nn.Sequential(cbr(3, 32, 3, 2), cbr(32, 64, 3), XceptionBlock(64, 128, False),
                             XceptionBlock(128, 256), nn.ReLU(), SepConv(256, 256), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10))

    class Ghost(nn.Module):
        """GhostNet's module: half the channels from a conv, the rest from a cheap depthwise."""

        def __init__(self, i, o, relu=True):
            super().__init__()
            self.o, m = o, math.ceil(o / 2)
            act = nn.ReLU() if relu else nn.Identity()
            self.primary = nn.Sequential(nn.Conv2d(i, m, 1, bias=False), nn.BatchNorm2d(m), act)
            self.cheap = nn.Sequential(nn.Conv2d(m, m, 3, 1, 1, groups=m, bias=False),
                                       nn.BatchNorm2d(m), act)

        def forward(self, x):
            y = self.primary(x)
            return torch.cat([y, self.cheap(y)], 1)[:, : self.o]

    class GhostBottleneck(nn.Module):
        def __init__(self, i, mid, o, stride):
            super().__init__()
            self.g1, self.g2 = Ghost(i, mid), Ghost(mid, o, relu=False)
            self.dw = (nn.Sequential(nn.Conv2d(mid, mid, 3, 2, 1, groups=mid, bias=False),
                                     nn.BatchNorm2d(mid)) if stride == 2 else nn.Identity())
            self.skip = (nn.Identity() if stride == 1 and i == o else nn.Sequential(
                nn.Conv2d(i, i, 3, stride, 1, groups=i, bias=False), nn.BatchNorm2d(i),
                nn.Conv2d(i, o, 1, bias=False), nn.BatchNorm2d(o)))

        def forward(self, x):
            return self.g2(self.dw(self.g1(x))) + self.skip(x)

    def ghostnet_mini():
        cfg = ((16, 16, 16, 1), (16, 48, 24, 2), (24, 72, 24, 1), (24, 72, 40, 2),
               (40, 120, 40, 1), (40, 240, 80, 2), (80, 200, 80, 1), (80, 184, 81, 1))
        return nn.Sequential(cbr(3, 16, 3, 2), *[GhostBottleneck(*c) for c in cfg],
                             cbr(81, 160, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(160, 10))

    class HRNetMini(nn.Module):
        """Three resolutions kept in parallel, exchanged by strided convs and upsampling."""

        def __init__(self, c=(16, 32, 64)):
            super().__init__()
            self.stem = nn.Sequential(cbr(3, 32, 3, 2), cbr(32, c[0], 3, 2))
            self.down1 = cbr(c[0], c[1], 3, 2)
            self.down2 = cbr(c[1], c[2], 3, 2)
            self.branch = nn.ModuleList([nn.Sequential(cbr(w, w, 3), cbr(w, w, 3)) for w in c])
            self.up = nn.ModuleList([nn.Conv2d(c[j], c[0], 1) for j in (1, 2)])
            self.mid_up = nn.Conv2d(c[2], c[1], 1)
            self.mid_down = cbr(c[0], c[1], 3, 2)
            self.head = nn.Conv2d(c[0] + c[1] + c[2], 17, 1)

        def forward(self, x):
            x0 = self.stem(x)
            x1 = self.down1(x0)
            x2 = self.down2(x1)
            b0, b1, b2 = (f(v) for f, v in zip(self.branch, (x0, x1, x2), strict=True))
            size0 = b0.shape[-2:]
            f0 = b0 + F.interpolate(self.up[0](b1), size=size0, mode="bilinear",
                                    align_corners=False) + F.interpolate(
                self.up[1](b2), scale_factor=4, mode="nearest")
            f1 = b1 + self.mid_down(b0) + F.interpolate(self.mid_up(b2), scale_factor=2,
                                                        mode="nearest")
            out = torch.cat([f0, F.interpolate(f1, size=size0, mode="bilinear",
                                               align_corners=True),
                             F.interpolate(b2, size=size0, mode="bilinear",
                                           align_corners=False)], 1)
            return self.head(out)

    class ResGN(nn.Module):
        def __init__(self, i, o, tdim):
            super().__init__()
            self.n1, self.n2 = nn.GroupNorm(8, i), nn.GroupNorm(8, o)
            self.c1, self.c2 = nn.Conv2d(i, o, 3, 1, 1), nn.Conv2d(o, o, 3, 1, 1)
            self.t = nn.Linear(tdim, o)
            self.skip = nn.Conv2d(i, o, 1) if i != o else nn.Identity()

        def forward(self, x, temb):
            h = self.c1(F.silu(self.n1(x))) + self.t(F.silu(temb))[:, :, None, None]
            return self.skip(x) + self.c2(F.silu(self.n2(h)))

    class AttnBlock(nn.Module):
        """The single-head spatial self-attention of the VAE / diffusion mid block."""

        def __init__(self, c):
            super().__init__()
            self.norm, self.qkv, self.proj = nn.GroupNorm(8, c), nn.Conv2d(c, 3 * c, 1), \
                nn.Conv2d(c, c, 1)

        def forward(self, x):
            b, c, h, w = x.shape
            q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).unbind(1)
            a = torch.softmax(q.transpose(1, 2) @ k / math.sqrt(c), -1)
            return x + self.proj((v @ a.transpose(1, 2)).reshape(b, c, h, w))

    class DiffusionUNet(nn.Module):
        """A tiny denoiser: sinusoidal timestep embedding (int64 steps), GroupNorm + SiLU,
        nearest upsampling, skip concatenation, an attention mid block."""

        def __init__(self, c=32, tdim=64):
            super().__init__()
            self.tdim = tdim
            self.temb = nn.Sequential(nn.Linear(tdim, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
            self.inp = nn.Conv2d(3, c, 3, 1, 1)
            self.d1, self.d2 = ResGN(c, c, tdim), ResGN(c, 2 * c, tdim)
            self.down = nn.Conv2d(c, c, 3, 2, 1)
            self.mid, self.attn = ResGN(2 * c, 2 * c, tdim), AttnBlock(2 * c)
            self.u1 = ResGN(3 * c, c, tdim)
            self.out = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, 3, 3, 1, 1))

        def embed(self, t):
            half = self.tdim // 2
            freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32)
                              / half)
            args = t.float()[:, None] * freqs[None]
            return self.temb(torch.cat([torch.sin(args), torch.cos(args)], -1))

        def forward(self, x, t):
            e = self.embed(t)
            h0 = self.d1(self.inp(x), e)
            h = self.attn(self.mid(self.d2(self.down(h0), e), e))
            h = F.interpolate(h, scale_factor=2.0, mode="nearest")
            return self.out(self.u1(torch.cat([h, h0], 1), e))

    def diffusion_inputs(batch=1):
        g = torch.Generator().manual_seed(11)
        return {"x": torch.randn(batch, 3, 32, 32, generator=g),
                "t": torch.randint(0, 1000, (batch,), generator=g)}

    def dcgan_generator(z=64, c=32):
        def up(i, o):
            return [nn.ConvTranspose2d(i, o, 4, 2, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]

        return nn.Sequential(nn.ConvTranspose2d(z, 8 * c, 4, 1, 0, bias=False),
                             nn.BatchNorm2d(8 * c), nn.ReLU(), *up(8 * c, 4 * c),
                             *up(4 * c, 2 * c), *up(2 * c, c),
                             nn.ConvTranspose2d(c, 3, 4, 2, 1), nn.Tanh())

    class CLIPText(nn.Module):
        """CLIP's text tower: causal mask, int64 tokens, the features at each row's EOT token
        (the argmax id) gathered by advanced indexing, then projected and L2-normalised."""

        def __init__(self, vocab=1000, d=128, heads=4, depth=2, seq=32):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(seq, d) * .02)
            layer = nn.TransformerEncoderLayer(d, heads, 4 * d, 0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
            self.ln, self.proj = nn.LayerNorm(d), nn.Linear(d, 64, bias=False)

        def forward(self, ids):
            n = ids.shape[1]
            mask = torch.full((n, n), float("-inf")).triu(1)
            x = self.blocks(self.tok(ids) + self.pos[:n], mask=mask)
            x = self.ln(x)
            x = x[torch.arange(x.shape[0]), ids.argmax(-1)]
            return F.normalize(self.proj(x), dim=-1)

    def clip_inputs(batch=2, seq=32):
        g = torch.Generator().manual_seed(12)
        ids = torch.randint(1, 998, (batch, seq), generator=g)
        ids[:, seq - 5] = 999  # the end-of-text token has the largest id
        return {"ids": ids}

    class WhisperBlock(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, d // self.heads) \
                .permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v)
            x = x + self.o(a.transpose(1, 2).reshape(b, n, d))
            return x + self.mlp(self.ln2(x))

    class WhisperEncoder(nn.Module):
        """Whisper's audio encoder: two conv1d (the second stride 2) with GELU, fixed
        sinusoidal positions, pre-norm blocks using scaled_dot_product_attention."""

        def __init__(self, mels=40, d=128, frames=200, heads=4, depth=2):
            super().__init__()
            self.c1, self.c2 = nn.Conv1d(mels, d, 3, 1, 1), nn.Conv1d(d, d, 3, 2, 1)
            n = frames // 2
            inv = torch.exp(-math.log(10000.0) * torch.arange(d // 2) / (d // 2 - 1))
            ang = torch.arange(n)[:, None] * inv[None]
            self.register_buffer("pos", torch.cat([ang.sin(), ang.cos()], 1))
            self.blocks = nn.Sequential(*[WhisperBlock(d, heads) for _ in range(depth)])
            self.ln = nn.LayerNorm(d)

        def forward(self, mel):
            x = F.gelu(self.c2(F.gelu(self.c1(mel)))).transpose(1, 2)
            return self.ln(self.blocks(x + self.pos))

    class DLRM(nn.Module):
        """DLRM: a bottom MLP, sum-mode EmbeddingBags with offsets, pairwise dot interactions
        by bmm, the strict upper triangle picked by index tensors, a top MLP."""

        def __init__(self, tables=(400, 300, 200, 100, 50), d=16):
            super().__init__()
            self.bot = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, d), nn.ReLU())
            self.emb = nn.ModuleList([nn.EmbeddingBag(n, d, mode="sum") for n in tables])
            f = len(tables) + 1
            li, lj = torch.triu_indices(f, f, 1)
            self.register_buffer("li", li)
            self.register_buffer("lj", lj)
            self.top = nn.Sequential(nn.Linear(d + f * (f - 1) // 2, 64), nn.ReLU(),
                                     nn.Linear(64, 1), nn.Sigmoid())

        def forward(self, dense, ids, offsets):
            x = self.bot(dense)
            feats = [x] + [e(ids[i], offsets[i]) for i, e in enumerate(self.emb)]
            t = torch.stack(feats, 1)
            z = torch.bmm(t, t.transpose(1, 2))[:, self.li, self.lj]
            return self.top(torch.cat([x, z], 1))

    def dlrm_inputs(batch=8, per_bag=3):
        g = torch.Generator().manual_seed(13)
        ids = torch.stack([torch.randint(0, 50, (batch * per_bag,), generator=g)
                           for _ in range(5)])
        offsets = torch.arange(0, batch * per_bag, per_bag).repeat(5, 1)
        return {"dense": torch.randn(batch, 13, generator=g), "ids": ids, "offsets": offsets}

    class Siamese(nn.Module):
        """A shared tower on two images; cosine similarity plus pairwise cdist of patches."""

        def __init__(self):
            super().__init__()
            self.tower = nn.Sequential(cbr(3, 32, 3, 2), cbr(32, 64, 3, 2), cbr(64, 64, 3, 2))

        def forward(self, a, b):
            fa, fb = self.tower(a), self.tower(b)
            cos = F.cosine_similarity(fa.flatten(1), fb.flatten(1), dim=1)
            d = torch.cdist(fa.flatten(2).transpose(1, 2), fb.flatten(2).transpose(1, 2))
            return d.amin(-1).mean(-1) - cos

    class TSMNonLocal(nn.Module):
        """Temporal Shift Module (torch.roll on an eighth of the channels each way) and a
        non-local block (embedded-Gaussian attention over all space-time positions)."""

        def __init__(self, frames=8, c=32):
            super().__init__()
            self.t, self.c = frames, c
            self.stem = cbr(3, c, 3, 2)
            self.c1, self.c2 = cbr(c, c, 3), cbr(c, c, 3, 2)
            self.theta, self.phi, self.g = (nn.Conv3d(c, c // 2, 1) for _ in range(3))
            self.w = nn.Sequential(nn.Conv3d(c // 2, c, 1), nn.BatchNorm3d(c))
            self.head = nn.Linear(c, 10)

        def shift(self, x):
            n, c, h, w = x.shape
            x = x.view(n // self.t, self.t, c, h, w)
            f = c // 8
            return torch.cat([torch.roll(x[:, :, :f], 1, 1), torch.roll(x[:, :, f:2 * f], -1, 1),
                              x[:, :, 2 * f:]], 2).view(n, c, h, w)

        def nonlocal_(self, x):
            b = x.shape[0]
            th = self.theta(x).flatten(2).transpose(1, 2)
            ph, g = self.phi(x).flatten(2), self.g(x).flatten(2).transpose(1, 2)
            y = torch.softmax(th @ ph, -1) @ g
            y = y.transpose(1, 2).reshape(b, self.c // 2, *x.shape[2:])
            return x + self.w(y)

        def forward(self, x):
            b = x.shape[0]
            x = self.stem(x.flatten(0, 1))
            x = self.c2(x + self.c1(self.shift(x)))
            x = x.view(b, self.t, self.c, *x.shape[-2:]).transpose(1, 2)
            return self.head(self.nonlocal_(x).mean((2, 3, 4)))

    class T5Attention(nn.Module):
        def __init__(self, d, heads, bias):
            super().__init__()
            self.h = heads
            self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
            self.bias = bias

        def forward(self, x, pos_bias):
            b, n, d = x.shape

            def split(t):
                return t.view(b, n, self.h, d // self.h).transpose(1, 2)

            s = split(self.q(x)) @ split(self.k(x)).transpose(-1, -2) + pos_bias
            y = torch.softmax(s.float(), -1).type_as(s) @ split(self.v(x))
            return self.o(y.transpose(1, 2).reshape(b, n, d))

    class T5RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(1 + 0.1 * torch.randn(d))

        def forward(self, x):
            return self.w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    class T5Encoder(nn.Module):
        """T5's encoder: the relative-position bias computed in the graph from bucketed
        distances (log, int casts, where, min), a bool padding mask input, RMSNorm, ReLU FFN."""

        def __init__(self, vocab=1000, d=128, heads=4, depth=2, buckets=32, max_dist=128):
            super().__init__()
            self.heads, self.buckets, self.max_dist = heads, buckets, max_dist
            self.emb = nn.Embedding(vocab, d)
            self.rel = nn.Embedding(buckets, heads)
            self.attn = nn.ModuleList([T5Attention(d, heads, None) for _ in range(depth)])
            self.ffn = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d, bias=False), nn.ReLU(),
                                                    nn.Linear(4 * d, d, bias=False))
                                      for _ in range(depth)])
            self.n1 = nn.ModuleList([T5RMSNorm(d) for _ in range(depth)])
            self.n2 = nn.ModuleList([T5RMSNorm(d) for _ in range(depth)])
            self.final = T5RMSNorm(d)

        def bucket(self, rel):
            half = self.buckets // 2
            out = (rel > 0).to(torch.long) * half
            rel = rel.abs()
            exact = half // 2
            large = exact + (torch.log(rel.float() / exact) / math.log(self.max_dist / exact)
                             * (half - exact)).to(torch.long)
            large = torch.min(large, torch.full_like(large, half - 1))
            return out + torch.where(rel < exact, rel, large)

        def forward(self, ids, mask):
            n = ids.shape[1]
            pos = torch.arange(n, dtype=torch.long)
            bias = self.rel(self.bucket(pos[None, :] - pos[:, None])).permute(2, 0, 1)[None]
            bias = bias + (~mask)[:, None, None, :].float() * -1e9
            x = self.emb(ids)
            for a, f, n1, n2 in zip(self.attn, self.ffn, self.n1, self.n2, strict=True):
                x = x + a(n1(x), bias)
                x = x + f(n2(x))
            return self.final(x)

    def t5_inputs(batch=2, seq=48):
        g = torch.Generator().manual_seed(14)
        mask = torch.ones(batch, seq, dtype=torch.bool)
        mask[-1, seq - 7:] = False
        return {"ids": torch.randint(0, 1000, (batch, seq), generator=g), "mask": mask}

    class CapsNet(nn.Module):
        """Capsules: primary capsules from a conv, squash, three unrolled routing-by-agreement
        iterations (softmax over the output capsules, einsum votes), lengths as logits."""

        def __init__(self, classes=10, prim=8, dim=8, out_dim=16):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(1, 64, 9), nn.ReLU())
            self.prim = nn.Conv2d(64, prim * dim, 9, 2)
            self.dim = dim
            self.n_in = prim * 6 * 6
            self.W = nn.Parameter(0.05 * torch.randn(1, self.n_in, classes, out_dim, dim))

        @staticmethod
        def squash(s, dim=-1):
            n2 = (s * s).sum(dim, keepdim=True)
            return n2 / (1 + n2) * s / torch.sqrt(n2 + 1e-8)

        def forward(self, x):
            b = x.shape[0]
            u = self.prim(self.conv(x)).view(b, -1, self.dim, 6, 6).permute(0, 1, 3, 4, 2)
            u = self.squash(u.reshape(b, self.n_in, self.dim))
            uhat = torch.matmul(self.W, u[:, :, None, :, None]).squeeze(-1)
            logits = torch.zeros(b, self.n_in, uhat.shape[2], 1)
            for i in range(3):
                c = torch.softmax(logits, 2)
                v = self.squash((c * uhat).sum(1, keepdim=True))
                if i < 2:
                    logits = logits + (uhat * v).sum(-1, keepdim=True)
            return v.squeeze(1).norm(dim=-1)

    class ECGBlock(nn.Module):
        def __init__(self, i, o, stride):
            super().__init__()
            self.body = nn.Sequential(nn.BatchNorm1d(i), nn.ReLU(), nn.Dropout(0.1),
                                      nn.Conv1d(i, o, 15, stride, 7, bias=False),
                                      nn.BatchNorm1d(o), nn.ReLU(),
                                      nn.Conv1d(o, o, 15, 1, 7, bias=False))
            self.skip = (nn.Identity() if stride == 1 and i == o else nn.Sequential(
                nn.MaxPool1d(stride, stride, ceil_mode=True), nn.Conv1d(i, o, 1, bias=False)))

        def forward(self, x):
            return self.body(x) + self.skip(x)

    def ecg_resnet1d():
        """A 1D ResNet for 12-lead ECG (pre-activation, kernel 15, odd lengths, ceil-mode
        pooling, an adaptive max pool of odd size)."""
        return nn.Sequential(nn.Conv1d(12, 32, 15, 2, 7, bias=False), ECGBlock(32, 32, 1),
                             ECGBlock(32, 64, 3), ECGBlock(64, 64, 1), ECGBlock(64, 128, 3),
                             nn.BatchNorm1d(128), nn.ReLU(), nn.AdaptiveMaxPool1d(7),
                             nn.Flatten(), nn.Linear(7 * 128, 5))

    class ODEFunc(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n1, self.n2 = nn.GroupNorm(4, c), nn.GroupNorm(4, c)
            self.c1, self.c2 = nn.Conv2d(c + 1, c, 3, 1, 1), nn.Conv2d(c + 1, c, 3, 1, 1)

        def forward(self, t, x):
            tt = torch.ones_like(x[:, :1]) * t
            h = self.c1(torch.cat([tt, F.softplus(self.n1(x))], 1))
            return self.c2(torch.cat([tt, torch.tanh(self.n2(h))], 1))

    class NeuralODE(nn.Module):
        """A classifier whose middle is an ODE solved by four fixed RK4 steps (unrolled)."""

        def __init__(self, c=32, steps=4):
            super().__init__()
            self.stem = nn.Sequential(cbr(1, c, 3, 2), cbr(c, c, 3, 2))
            self.f, self.steps = ODEFunc(c), steps
            self.head = nn.Sequential(nn.GroupNorm(4, c), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                      nn.Flatten(), nn.Linear(c, 10))

        def forward(self, x):
            x, h = self.stem(x), 1.0 / self.steps
            for i in range(self.steps):
                t = i * h
                k1 = self.f(t, x)
                k2 = self.f(t + h / 2, x + h / 2 * k1)
                k3 = self.f(t + h / 2, x + h / 2 * k2)
                k4 = self.f(t + h, x + h * k3)
                x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            return self.head(x)

    def pair(shape):
        def make():
            g = torch.Generator().manual_seed(15)
            return {"a": torch.randn(*shape, generator=g), "b": torch.randn(*shape, generator=g)}
        return make

    image = (1, 3, 128, 128)
    return {
        "cbam_resnet": (cbam_resnet, image),
        "inception_v3_mini": (inception_v3_mini, (1, 3, 96, 96)),
        "xception_mini": (xception_mini, image),
        "ghostnet_mini": (ghostnet_mini, image),
        "hrnet_mini": (HRNetMini, image),
        "diffusion_unet": (DiffusionUNet, diffusion_inputs),
        "dcgan_generator": (dcgan_generator, (1, 64, 1, 1)),
        "clip_text": (CLIPText, clip_inputs),
        "whisper_encoder": (WhisperEncoder, (1, 40, 200)),
        "dlrm": (DLRM, dlrm_inputs),
        "siamese": (Siamese, pair((1, 3, 64, 64))),
        "tsm_nonlocal": (TSMNonLocal, lambda: {"x": torch.randn(1, 8, 3, 64, 64)}),
        "t5_encoder": (T5Encoder, t5_inputs),
        "capsnet": (CapsNet, (1, 1, 28, 28)),
        "ecg_resnet1d": (ecg_resnet1d, (1, 12, 1001)),
        "neural_ode": (NeuralODE, (1, 1, 28, 28)),
    }


# models whose ops torch exports only at a newer ONNX opset (affine_grid: AffineGrid, opset 20;
# nn.Fold: Col2Im, opset 18)
ONNX_OPSET = {"stn": 20, "fuseformer_mini": 18, "egnn_mini": 18, "dprnn_sep": 18,
              "deepfill_ctxattn": 18, "voxelmorph_3d": 20}


def make_inputs(spec):
    """``{name: tensor}`` for a table entry's inputs (a shape means one float32 ``x``)."""
    import torch

    if callable(spec):
        return spec()
    return {"x": torch.randn(*spec)}


def prepare(ctor, spec):
    """The model in eval mode (batch-norm statistics away from the identity) and its inputs."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = ctor().eval()
    for m in model.modules():
        # (a layer without running statistics normalizes by the batch's in eval mode too)
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats:
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    return model, make_inputs(spec)


def input_infos(inputs):
    """``from_pytorch`` input descriptions: ``(name, (shape, dtype))``."""
    return [(k, (tuple(v.shape), str(v.dtype).replace("torch.", ""))) for k, v in inputs.items()]


def onnx_bytes(name, model, args, inputs) -> bytes:
    """The model exported to ONNX, as ORT runs it here."""
    import torch

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buf, dynamo=False,
                          opset_version=ONNX_OPSET.get(name, 17), input_names=list(inputs))
    return buf.getvalue()


def dynamo_onnx_bytes(model, args, inputs) -> bytes:
    """The model through torch's dynamo ONNX exporter (``dynamo=True``, needs onnxscript): the
    baseline's file when the TorchScript exporter has no symbolic for one of its ops
    (``take_along_dim``, ``rot90``, ``count_nonzero``, ``fft_fft2``, ...)."""
    import logging

    import torch

    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        prog = torch.onnx.export(model, args, dynamo=True, input_names=list(inputs),
                                 verbose=False)
    return prog.model_proto.SerializeToString()


def import_relay(model, args, inputs):
    """(mod, params, Relay input names in ``inputs``' order, why torch.export was used): the
    TorchScript trace -> ``from_pytorch``, as most users import; a model torch.jit.trace
    cannot trace (``F.max_unpool2d`` under this torch) through torch.export ->
    ``from_exported_program`` instead."""
    import torch

    try:
        # no trace check: it reruns the model, and nn.TransformerEncoderLayer takes its fused
        # fast path when no input needs a gradient, so the two traces differ and the check fails
        traced = torch.jit.trace(model, args, check_trace=False)
    except Exception as e:  # noqa: BLE001 - torch's tracer, not minitvm: try torch.export
        why = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:70]}"
        from minitvm.relay.frontend.pytorch import from_exported_program

        with torch.no_grad():
            mod, params = from_exported_program(torch.export.export(model, args))
        return mod, params, [p.name_hint for p in mod["main"].params][:len(args)], why
    mod, params = relay.frontend.from_pytorch(traced, input_infos(inputs))
    return mod, params, list(inputs), None


TARGET = ["llvm"]  # minitvm's build target (``--target``)


def _integer_build(mod, params, feed: dict, requantize: str):
    """FakeQuantizationToInteger in QAT mode (``use_qat=True``: a head that nothing quantizes
    after, a global pool and the dense reading it, becomes integer too where exact), then
    ``relay.build`` with ``requantize`` as the requantization's compute dtype; a
    ``GraphModule`` with the inputs set, run once."""
    mod = relay.transform.FakeQuantizationToInteger(use_qat=True)(
        relay.transform.InferType()(mod))
    with relay.qnn.op.requantize_config(compute_dtype=requantize), \
            tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=TARGET[0], params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, v in feed.items():
        gm.set_input_zero_copy(k, v)
    gm.run()
    return gm


def integer_qdq_path(blob: bytes, feed: dict, requantize: str = "int64"):
    """The integer path a TVM user takes for a QAT model's QDQ export (fake quantization as
    QuantizeLinear / DequantizeLinear pairs): ``from_onnx(convert_config={"qdq_as_qnn": True})``
    (qnn.quantize / qnn.dequantize), ``FakeQuantizationToInteger``, ``relay.build``. None
    when the export has no QuantizeLinear."""
    import onnx

    model = onnx.load_from_string(blob)
    if not any(n.op_type == "QuantizeLinear" for n in model.graph.node):
        return None
    shapes = {k: v.shape for k, v in feed.items()}
    mod, params = relay.frontend.from_onnx(model, shapes, convert_config={"qdq_as_qnn": True})
    return _integer_build(mod, params, feed, requantize)


def integer_torch_path(model, args, inputs, feed: dict, requantize: str = "int64"):
    """The same integer path from the traced model: ``from_pytorch(...,
    fake_quantize_as_qnn=True)``, ``FakeQuantizationToInteger``, ``relay.build``."""
    import torch

    traced = torch.jit.trace(model, args, check_trace=False)
    mod, params = relay.frontend.from_pytorch(traced, input_infos(inputs),
                                              fake_quantize_as_qnn=True)
    return _integer_build(mod, params, feed, requantize)


def measure(name, ctor, spec, rounds):
    import onnxruntime as ort
    import torch

    model, inputs = prepare(ctor, spec)
    args = tuple(inputs.values())
    with torch.no_grad():
        ref = model(*args).numpy()
    t0 = time.perf_counter()
    mod, params, names, via_export = import_relay(model, args, inputs)
    t1 = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=TARGET[0], params=params)
    t2 = time.perf_counter()
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    feed = {k: v.numpy() for k, v in inputs.items()}
    for n, v in zip(names, feed.values(), strict=True):
        gm.set_input_zero_copy(n, v)
    gm.run()
    err = float(np.abs(gm.get_output(0).numpy() - ref).max() / max(np.abs(ref).max(), 1e-6))

    def eager():
        with torch.no_grad():
            model(*args)

    impls = {"minitvm": gm.run, "torch": eager}
    no_ort = via_dynamo = None
    def ort_run(blob):
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        so.log_severity_level = 3  # errors only: not the exporter's Loop-renaming notes
        sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
        ort_feed = {i.name: feed[i.name] for i in sess.get_inputs()}
        sess.run(None, ort_feed)
        return lambda: sess.run(None, ort_feed)

    def first_line(e):
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:70]}"

    try:  # torch's exporter or ORT may fail on the model: then it is timed against torch only
        try:
            blob = onnx_bytes(name, model, args, inputs)
        except Exception as e:  # noqa: BLE001 - no TorchScript symbolic: the dynamo exporter
            via_dynamo = f"the TorchScript exporter fails: {first_line(e)}"
            blob = dynamo_onnx_bytes(model, args, inputs)
        try:
            impls["ort"] = ort_run(blob)
        except Exception as e:  # noqa: BLE001 - ORT lacks a kernel the TorchScript file uses
            if via_dynamo:
                raise
            via_dynamo = f"ORT fails on the TorchScript export: {first_line(e)}"
            impls["ort"] = ort_run(dynamo_onnx_bytes(model, args, inputs))
    except Exception as e:  # noqa: BLE001 - the baseline's failure, not minitvm's
        no_ort = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:90]}"
    qdq = None if no_ort or via_dynamo else integer_qdq_path(blob, feed)
    integer = {}
    if qdq is not None:  # (a QAT model: the integer paths beside the exact float one)
        integer = {"  ONNX QDQ + FQ2I": qdq,
                   "  ONNX, f32 rq": integer_qdq_path(blob, feed, "float32"),
                   "  torch qnn + FQ2I": integer_torch_path(model, args, inputs, feed),
                   "  torch, f32 rq": integer_torch_path(model, args, inputs, feed,
                                                         "float32")}
        impls.update({k: gm.run for k, gm in integer.items()})
    times = settled_rounds(impls, rounds, 5, clock=time.thread_time)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    ort_ms = f"{med['ort']:9.3f}" if "ort" in med else f"{'n/a':>9s}"
    vs_ort = f"{med['minitvm'] / med['ort']:8.2f}x" if "ort" in med else f"{'n/a':>9s}"
    print(f"{name:18s} {med['minitvm']:9.3f} {ort_ms} {med['torch']:9.3f} "
          f"{vs_ort} {med['minitvm'] / med['torch']:8.2f}x "
          f"{t1 - t0:7.1f} {t2 - t1:7.1f} {err:9.1e}", flush=True)
    for label, gm in integer.items():
        q_ms, out = med[label], gm.get_output(0).numpy()
        q_err = float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-6))
        print(f"{label:18s} {q_ms:9.3f} {ort_ms} {med['torch']:9.3f} "
              f"{q_ms / med['ort']:8.2f}x {q_ms / med['torch']:8.2f}x {'':7s} {'':7s} "
              f"{q_err:9.1e}", flush=True)
    if integer:
        scale = max(np.abs(ref).max(), 1e-6)
        ort_out = impls["ort"]()[0]
        apart = max(float(np.abs(gm.get_output(0).numpy() - ort_out).max()) / scale
                    for gm in integer.values())
        print(f"{'':18s} (integer: the export through from_onnx(convert_config={{'qdq_as_qnn': "
              f"True}}), or from_pytorch(fake_quantize_as_qnn=True), then "
              f"FakeQuantizationToInteger; f32 rq: built under "
              f"relay.qnn.op.requantize_config(compute_dtype='float32'), as ORT requantizes; "
              f"ORT's error vs torch "
              f"{float(np.abs(ort_out - ref).max()) / scale:.1e}, these paths' vs ORT "
              f"{apart:.1e})", flush=True)
    if via_export:
        print(f"{'':18s} (imported by torch.export: torch.jit.trace fails: {via_export})",
              flush=True)
    if no_ort:
        print(f"{'':18s} (no ORT baseline: {no_ort})", flush=True)
    elif via_dynamo:
        print(f"{'':18s} (ORT runs the dynamo export: {via_dynamo})", flush=True)


def one_thread_with_extras() -> bool:
    """Check the torch and onnx extras are installed (else say so and return False), then put
    torch and minitvm on one thread and quiet torch's notes on deprecated APIs the models use
    on purpose (weight_norm, mixed masks)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import torch
    except ImportError as e:
        print(f"needs the torch and onnx extras (pip install -e '.[torch,onnx]'): {e}")
        return False
    torch.set_num_threads(1)
    threadpool.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.")
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.")
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="",
                    help="comma-separated names (default: every model of --group)")
    ap.add_argument("--group", choices=("first", "second", "third", "fourth", "fifth", "sixth",
                                        "seventh", "eighth", "ninth", "tenth", "eleventh",
                                        "twelfth", "thirteenth", "fourteenth", "fifteenth",
                                        "sixteenth", "seventeenth", "eighteenth", "nineteenth",
                                        "twentieth", "twentyfirst", "twentysecond",
                                        "twentythird", "twentyfourth", "twentyfifth",
                                        "twentysixth", "twentyseventh", "twentyeighth",
                                        "twentyninth", "thirtieth", "thirtyfirst", "thirtysecond",
                                        "all"),
                    default="first",
                    help="first: the 13 of the first round (default); second: the 15 of the "
                    "second round (DenseNet, Inception, transformers, Swin, YOLO, ...); third: "
                    "the 15 of the third (MLP-Mixer, style transfer, PointNet, CRNN, Conformer, "
                    "RoPE decoder, DETR, MoE, GCN, spatial transformer, ...); fourth: the 16 of "
                    "the fourth (CBAM, Inception-v3, Xception, GhostNet, HRNet, a diffusion "
                    "U-Net, DCGAN, CLIP text, Whisper encoder, DLRM, T5, CapsNet, neural ODE, "
                    "...); fifth: the 11 of the fifth (PSPNet pyramid pooling, RepVGG, "
                    "EfficientNetV2, a BiLSTM tagger, DistilBERT, pix2pix, detection top-k, "
                    "GraphSAGE max/mean, einsum attention, cumsum positions, a batch-32 "
                    "MLP); sixth: the 12 of the sixth (SegFormer, PoolFormer, stacked "
                    "hourglass, ENet, BiFPN, Conv-TasNet, MaxViT, ESRGAN RRDB, NeRF MLP, "
                    "Perceiver, LeNet-5, ResNet-D); seventh: the 12 of the seventh (WaveNet, "
                    "Res2Net, a char-CNN, DS-CNN keyword spotting, DGCNN, VQ-VAE, NetVLAD, "
                    "RealNVP/Glow flow, involution, CondConv, sparsemax attention, KAN); "
                    "eighth: the 12 of the eighth (RWKV, bidirectional Mamba, a LLaMA-style "
                    "GQA/ALiBi decoder, modulated deformable conv, GAT, BiT with FiLM, "
                    "TabTransformer, a log-mel CNN, ConvNeXt-V2 GRN, NAFNet, gMLP, NeRF volume "
                    "rendering); ninth: the 17 of the ninth (LeViT, DeBERTa, HiFi-GAN, "
                    "PatchTST, DLinear, SchNet, YOLOv5, CenterNet decode, ALBERT, Set "
                    "Transformer, DCN-v2 with bucketize, an LSTM with projections, T2T-ViT, a "
                    "bicubic VDSR, FuseFormer's nn.Fold, ArcFace, a CLIP tower with an antialiased "
                    "resize); tenth: the 13 of the tenth (GFNet's FFT filter, EfficientViT "
                    "linear attention, ToMe token merging, an Instant-NGP hash grid, RetNet, "
                    "the Differential Transformer, DiT, a spiking CNN, RAFT, SAM's mask "
                    "decoder, EnCodec with RVQ, xLSTM's mLSTM, Restormer); eleventh: the 15 of the eleventh "
                    "(a gated PixelCNN's masked convs, CoordConv soft-argmax, Longformer's "
                    "sliding window, a Mistral-style GQA decoder, Informer's ProbSparse "
                    "attention, N-BEATS, TimesNet, SegNet's max-unpooling, Show-Attend-Tell's "
                    "LSTMCell, SuperPoint, a MiDaS DPT, a Stable-Diffusion VAE decoder, a SELU "
                    "tabular net with nn.Bilinear, a hypernetwork's dynamic conv, Demucs); twelfth: the "
                    "12 of the twelfth (a Gemma-2 step with a KV cache and soft-capping, a Phi "
                    "parallel block with partial rotary, Mamba-2's chunked SSD, Griffin's "
                    "RG-LRU, YOLOv8 with DFL, Mask2Former's masked attention, an EGNN over an "
                    "edge list, Nystromformer, BitNet b1.58, BigVGAN, xDeepFM's CIN, Hyena); thirteenth: "
                    "the 12 of the thirteenth (Mixtral capacity-dispatched MoE, Medusa heads, a "
                    "pixel-shuffle + Q-Former VLM connector, VITS durations, SigLIP, ColBERT "
                    "MaxSim, a neural-spline flow, AWQ int4, a static-KV-cache Llama, RT-DETR "
                    "deformable attention, Vocos, Gaussian splatting); fourteenth: the 12 of "
                    "the fourteenth (PointNet++ sampling and ball query, PointPillars' BEV "
                    "scatter, TimeSformer, X3D, Graphormer, an SVTR recognizer with CTC greedy "
                    "decoding, a LoRA Llama with a top-p sampler, a MaskGIT step, an Evoformer "
                    "pair stack, a Temporal Fusion Transformer, StyleGAN2, DBNet); fifteenth: the 12 of "
                    "the fifteenth (RetinaNet with FPN and anchor decoding, a Tacotron 2 "
                    "decoder, Reformer LSH attention, a causal Performer, Linformer, "
                    "Transformer-XL, a pi-GAN SIREN, a CfC liquid network, Slot Attention, S4D, "
                    "TabNet with entmax, a ConvLSTM nowcaster); sixteenth: the 12 of the "
                    "sixteenth (a Swin-V2 block with log-spaced continuous position bias, "
                    "CoAtNet, U-Net++ with deep supervision, GIN by index_add / scatter_add, a "
                    "YOLOX decoupled head, FNet's FFT mixing, a Mixture-of-Depths router, "
                    "ECAPA-TDNN, SASRec with top-k, neighborhood attention by unfold, a Point "
                    "Transformer layer, DeepFM with a weighted EmbeddingBag); seventeenth: the "
                    "12 of the seventeenth (EfficientFormer, CvT, a Funnel-Transformer "
                    "encoder, BigBird block-sparse attention, a Fourier Neural Operator, "
                    "DeepLabV3+, KPConv, a T5 decoder with causal relative buckets and "
                    "cross-attention, BYOL, a VAE with reparameterization, a quantile "
                    "forecaster by torch.quantile / sort, H3); eighteenth: the 12 of the "
                    "eighteenth (AlexNet with LocalResponseNorm, a PSMNet-style stereo cost "
                    "volume, SuperGlue with log-Sinkhorn, Autoformer auto-correlation, CCNet "
                    "criss-cross attention, a SAC policy through torch.distributions, DIN with "
                    "Dice, a growing neural cellular automaton, ST-GCN, TensoRF, a SPADE "
                    "generator, an RNN-T joint); nineteenth: the 13 of the nineteenth (a "
                    "BiLSTM-CRF Viterbi decode, CornerNet corner pooling by cummax, DeepSeek "
                    "multi-head latent attention, Soft MoE, a QAT fake-quantized CNN, a "
                    "torch.ao QAT MobileNet, SimCLR "
                    "NT-Xent, focal / Dice loss heads, ResNeSt split attention, GRU beam "
                    "search, PointRend, NF-ResNet scaled weight standardization, a Neural "
                    "Turing Machine); twentieth: the 12 of the twentieth (a V-Net 3D "
                    "segmenter with ConvTranspose3d, SOLOv2 with Matrix NMS, BiDAF, a "
                    "pointer-generator with coverage, ConvE, SCINet, a Decision Transformer, a "
                    "Universal Transformer with ACT halting, XCiT cross-covariance attention, "
                    "PNA, Graves handwriting synthesis, DeepAR with a negative-binomial NLL by "
                    "lgamma); twentyfirst: the 12 of the twenty-first (Barlow Twins' "
                    "off-diagonal trick, re-ID with GeM and batch-hard triplets, DPRNN by "
                    "unfold / fold, SincNet's computed filters, a masked autoregressive flow, "
                    "DIEN's AUGRU, LISTA, DiffPool, NeuralSort NDCG, a Gumbel-softmax dVAE, a "
                    "PCEN keyword spotter, DimeNet's triplet angles by acos); twentysecond: "
                    "the 12 of the twenty-second (DeepSurv's Cox likelihood by logcumsumexp, "
                    "an expRNN by matrix_exp, deep-kernel GP regression by Cholesky solves, "
                    "an adaptive-softmax LSTM LM, ESIM, MMoE / ESMM by tensordot, FiBiNET, an "
                    "Octave-conv ResNet, BoTNet relative logits, a YOLACT mask head, LSTNet, "
                    "an end-to-end memory network); twentythird: the 12 of the twenty-third "
                    "(SKNet selective kernels, an SRU LM, AutoInt, a hierarchical attention "
                    "network, QuartzNet with masks, DeepSpeech2, a PWC-Net cost volume and "
                    "grid_sample warp, APPNP by index_add, a prototypical few-shot head, a "
                    "backprop Kalman filter by linalg.inv / slogdet, SiamFC grouped-conv "
                    "correlation, a neural additive model); twentyfourth: the 12 of the twenty-fourth "
                    "(a BigGAN generator with conditional BN and SAGAN attention, a LambdaResNet "
                    "with a Conv3d positional lambda, a MobileNetV2 with coordinate attention / "
                    "ECA, ResMLP, Fastformer, a lightweight dynamic-conv LM, N-HiTS, a Graph "
                    "U-Net by topk pooling, NODE oblivious trees, a Rainbow DQN, an attentive "
                    "neural process, a Glow flow with LU 1x1 convs); twentyfifth: the 12 of the "
                    "twenty-fifth (a DCCRN complex-mask enhancer by atan2, ConvCRF mean-field "
                    "by unfold, DeepONet, Hopfield-pooling MIL, DeepFill v2 gated convs and "
                    "contextual attention, DY-ReLU / FReLU / Meta-ACON, an antialiased "
                    "BlurPool ResNet, MS-TCN, a Transformer Hawkes process, CPC InfoNCE, "
                    "CrossViT, a mixture-of-softmaxes LM); twentysixth: the 12 of the "
                    "twenty-sixth (SlowFast with time-strided lateral Conv3d, BiSeNet attention "
                    "refinement, ChebNet's Chebyshev recurrence, NeuMF, an FCOS head, a YOLOv4 "
                    "CSP darknet with Mish and SPP, an Attention U-Net, PVTv2 spatial-reduction "
                    "attention, RotatE, GRU-D, a PixelCNN++ discretized logistic mixture "
                    "likelihood, a mesh net with cross-product normals); twentyseventh: the 12 "
                    "of the twenty-seventh (Wide & Deep with hashed crosses, a Poincare-ball "
                    "HGCN, an evidential Dirichlet classifier, RCAN, U^2-Net, a biaffine parser, "
                    "an Elman nn.RNN LM, an LPPool keyword spotter, TransE, a log-space minGRU "
                    "LM, DreamerV3 symlog heads, a SAITS imputer over NaN inputs); "
                    "twentyeighth: the 12 of the twenty-eighth (VAN large-kernel attention, "
                    "FocalNet focal modulation, HorNet gnConv, CaiT talking heads and class "
                    "attention, R-GCN bases with DistMult, an MPNN edge network with Set2Set, "
                    "AFM + NFM by triu_indices, iTransformer with RevIN, CREPE pitch decoding, "
                    "a deep-ensemble expected improvement by special.ndtr, a DARTS supernet, a "
                    "VAE with amortized planar flows); twentyninth: the 12 of the twenty-ninth "
                    "(VoxelMorph with a volumetric grid_sample, a product-key memory LM, a tree "
                    "ensemble by traversal, a particle filter by searchsorted, InceptionNeXt, "
                    "MobileViTv2 separable attention, Graph WaveNet, Mega's EMA, expert-choice "
                    "MoE, Charformer GBST, a complex-free LRU, a product-quantization search); "
                    "thirtieth: the 12 of the thirtieth (a differentiable sorting network, a "
                    "Bjorck / GroupSort Lipschitz net, SDF sphere tracing, a mass-spring "
                    "simulator by index_add, a deep equilibrium model, a Gabor multiplicative "
                    "filter network, a neural HMM's forward-backward, MAE random masking by "
                    "argsort, spectral pooling by DFT matmuls, top-k sparse attention, an "
                    "AlphaZero net over a legal-move mask, a soft decision tree); "
                    "thirtyfirst: the 12 of the thirty-first (a Gated DeltaNet LM, native "
                    "sparse attention, a Qwen3 QK-norm / YaRN / GQA-SDPA decoder, a "
                    "speculative-decoding verify step, HSTU, TTT-Linear, DeepSeek-V3 "
                    "group-limited routing, a paged-KV decode step, an FSQ tokenizer, a soft "
                    "rasterizer, nGPT, a TabPFN-style in-context classifier); "
                    "thirtysecond: the 12 of the thirty-second (a filterbank front end with "
                    "deltas and LFR stacking, a ViT with registers and 2-D RoPE, DAB-DETR "
                    "anchor refinement, DDIM with classifier-free guidance, a kNN-LM, a ListMLE "
                    "ranker, quotient-remainder / Bloom embeddings, a band-split RoFormer, "
                    "PaiNN, LIIF, a PTv3 Morton serializer, an sLSTM LM); all")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--target", default="llvm",
                    help="minitvm's build target, e.g. 'llvm -mcpu=haswell' for AVX2 code on an "
                    "AVX-512 host (the peers keep the host's ISA)")
    ap.add_argument("--save-onnx", default=None, metavar="DIR",
                    help="write each model's ONNX export to DIR/NAME.onnx and exit (for "
                    "bench_layers_ort.py --model DIR/NAME.onnx, the per-layer table)")
    args = ap.parse_args()
    TARGET[0] = args.target
    if not one_thread_with_extras():
        return 0
    first, second, third, fourth = models(), new_models(), third_models(), fourth_models()
    fifth, sixth, seventh = fifth_models(), sixth_models(), seventh_models()
    eighth, ninth, tenth = eighth_models(), ninth_models(), tenth_models()
    eleventh, twelfth, thirteenth = eleventh_models(), twelfth_models(), thirteenth_models()
    fourteenth, fifteenth, sixteenth = fourteenth_models(), fifteenth_models(), sixteenth_models()
    seventeenth, eighteenth = seventeenth_models(), eighteenth_models()
    nineteenth, twentieth = nineteenth_models(), twentieth_models()
    twentyfirst, twentysecond = twentyfirst_models(), twentysecond_models()
    twentythird, twentyfourth = twentythird_models(), twentyfourth_models()
    twentyfifth, twentysixth = twentyfifth_models(), twentysixth_models()
    twentyseventh, twentyeighth = twentyseventh_models(), twentyeighth_models()
    twentyninth, thirtieth = twentyninth_models(), thirtieth_models()
    thirtyfirst, thirtysecond = thirtyfirst_models(), thirtysecond_models()
    table = {**first, **second, **third, **fourth, **fifth, **sixth, **seventh, **eighth,
             **ninth, **tenth, **eleventh, **twelfth, **thirteenth, **fourteenth, **fifteenth,
             **sixteenth, **seventeenth, **eighteenth, **nineteenth, **twentieth,
             **twentyfirst, **twentysecond, **twentythird, **twentyfourth, **twentyfifth,
             **twentysixth, **twentyseventh, **twentyeighth, **twentyninth, **thirtieth,
             **thirtyfirst, **thirtysecond}
    group = {"first": first, "second": second, "third": third, "fourth": fourth,
             "fifth": fifth, "sixth": sixth, "seventh": seventh, "eighth": eighth,
             "ninth": ninth, "tenth": tenth, "eleventh": eleventh, "twelfth": twelfth,
             "thirteenth": thirteenth, "fourteenth": fourteenth, "fifteenth": fifteenth,
             "sixteenth": sixteenth, "seventeenth": seventeenth,
             "eighteenth": eighteenth, "nineteenth": nineteenth, "twentieth": twentieth,
             "twentyfirst": twentyfirst, "twentysecond": twentysecond,
             "twentythird": twentythird, "twentyfourth": twentyfourth,
             "twentyfifth": twentyfifth, "twentysixth": twentysixth,
             "twentyseventh": twentyseventh, "twentyeighth": twentyeighth,
             "twentyninth": twentyninth, "thirtieth": thirtieth,
             "thirtyfirst": thirtyfirst, "thirtysecond": thirtysecond,
             "all": table}[args.group]
    names = args.models.split(",") if args.models else list(group)
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"unknown models {unknown}; choose from {list(table)}")
        return 2
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; one thread, ms (thread CPU "
          f"time), median of {args.rounds} interleaved rounds of median-of-5")
    print(f"{'model':18s} {'minitvm':>9s} {'ORT':>9s} {'torch':>9s} {'vs ORT':>9s} "
          f"{'vs torch':>9s} {'import':>7s} {'build':>7s} {'max rel err':>9s}")
    if args.save_onnx:
        os.makedirs(args.save_onnx, exist_ok=True)
        for name in names:
            model, inputs = prepare(*table[name])
            path = os.path.join(args.save_onnx, f"{name}.onnx")
            with open(path, "wb") as f:
                f.write(onnx_bytes(name, model, tuple(inputs.values()), inputs))
            print(f"wrote {path}")
        return 0
    failed = []
    for name in names:
        try:
            measure(name, *table[name], args.rounds)
        except Exception as e:  # noqa: BLE001 - report and go on with the next model
            failed.append(name)
            print(f"{name:18s} FAILED: {type(e).__name__}: {str(e).splitlines()[0][:200]}",
                  flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
