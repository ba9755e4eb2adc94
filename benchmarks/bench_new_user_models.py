"""Architectures a new user brings, beyond the models the issue names: each written in PyTorch,
imported with ``relay.frontend.from_pytorch`` and built at opt_level 3, then timed side by side
with ONNX Runtime (the same module through PyTorch's TorchScript ONNX exporter) and PyTorch
eager, one thread, interleaved rounds (thread CPU time).

    python benchmarks/bench_new_user_models.py [--models efficientnet_b0,lstm] [--rounds 7]

Needs the ``torch`` and ``onnx`` extras. Prints the time of each, the ratios, the import and build
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


def measure(name, ctor, shape, rounds):
    import onnxruntime as ort
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = ctor().eval()
    for m in model.modules():  # running statistics away from the identity
        if isinstance(m, nn.BatchNorm2d | nn.BatchNorm1d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(*shape)
    with torch.no_grad():
        ref = model(x).numpy()
    t0 = time.perf_counter()
    mod, params = relay.frontend.from_pytorch(torch.jit.trace(model, (x,)), [("x", shape)])
    t1 = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    t2 = time.perf_counter()
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    xn = x.numpy()
    gm.set_input_zero_copy("x", xn)
    gm.run()
    err = float(np.abs(gm.get_output(0).numpy() - ref).max() / max(np.abs(ref).max(), 1e-6))
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), buf, dynamo=False, opset_version=17)
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(buf.getvalue(), so, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: xn}

    def eager():
        with torch.no_grad():
            model(x)

    times = settled_rounds({"minitvm": gm.run, "ort": lambda: sess.run(None, feed),
                            "torch": eager}, rounds, 5, clock=time.thread_time)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"{name:18s} {med['minitvm']:9.3f} {med['ort']:9.3f} {med['torch']:9.3f} "
          f"{med['minitvm'] / med['ort']:8.2f}x {med['minitvm'] / med['torch']:8.2f}x "
          f"{t1 - t0:7.1f} {t2 - t1:7.1f} {err:9.1e}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="", help="comma-separated names (default: all)")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    try:
        import onnxruntime  # noqa: F401
        import torch
    except ImportError as e:
        print(f"needs the torch and onnx extras (pip install -e '.[torch,onnx]'): {e}")
        return 0
    torch.set_num_threads(1)
    threadpool.set_num_threads(1)
    table = models()
    names = args.models.split(",") if args.models else list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"unknown models {unknown}; choose from {list(table)}")
        return 2
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; one thread, ms (thread CPU "
          f"time), median of {args.rounds} interleaved rounds of median-of-5")
    print(f"{'model':18s} {'minitvm':>9s} {'ORT':>9s} {'torch':>9s} {'vs ORT':>9s} "
          f"{'vs torch':>9s} {'import':>7s} {'build':>7s} {'max rel err':>9s}")
    for name in names:
        measure(name, *table[name], args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
