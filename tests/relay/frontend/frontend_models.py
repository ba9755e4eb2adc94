"""Small PyTorch models shaped like ResNet-18, MobileNetV2 and a BERT encoder layer, and a helper
that compiles a Relay module at opt_level 3 and runs it (shared by the importer tests)."""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def build_and_run(mod, params, inputs: dict, opt_level: int = 3) -> list[np.ndarray]:
    """relay.build at ``opt_level`` on llvm, run once on the graph executor."""
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(mod, target="llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in inputs.items():
        g.set_input(name, value)
    g.run()
    return [g.get_output(i).numpy() for i in range(g.get_num_outputs())]


def compare_traced(traced, inputs, ref: np.ndarray, rtol: float = 1e-5, atol: float = 1e-5):
    """Import a TorchScript trace of ``inputs`` (torch tensors, named i0, i1, ...), build it at
    opt_level 3, run it and compare its output with ``ref``; returns the built lib."""
    infos = [(f"i{k}", (tuple(t.shape), str(t.dtype).replace("torch.", "")))
             for k, t in enumerate(inputs)]
    mod, params = relay.frontend.from_pytorch(traced, infos)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, t in enumerate(inputs):
        g.set_input(f"i{k}", t.numpy())
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), ref, rtol=rtol, atol=atol)
    return lib


def check_traced_native(model, *inputs, rtol: float = 1e-4, atol: float = 1e-5):
    """Trace ``model`` (its BatchNorm statistics randomized, eval mode) on ``inputs``, build it
    and compare with eager torch (``compare_traced``); every kernel must be native."""
    import torch

    torch.manual_seed(0)
    model = randomize_batchnorm(model)
    with torch.no_grad():
        ref = model(*inputs).numpy()
        traced = torch.jit.trace(model, inputs)
    lib = compare_traced(traced, inputs, ref, rtol, atol)
    assert [k for k, v in lib.get_lib().kernels.items() if v.kind != "native"] == []


def build_run_native(mod, params, names, inputs) -> np.ndarray:
    """relay.build at opt_level 3 with every kernel native; the first output of one run on
    torch tensors ``inputs`` bound to ``names``."""
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    assert [k for k, v in lib.get_lib().kernels.items() if v.kind != "native"] == []
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for n, t in zip(names, inputs, strict=True):
        g.set_input(n, t.numpy())
    g.run()
    return g.get_output(0).numpy()


def check_both_importers(model, *inputs, exported: bool = True, rtol: float = 1e-5,
                         atol: float = 1e-6):
    """``model`` (eval mode) through torch.jit.trace -> from_pytorch and (``exported``)
    torch.export -> from_exported_program, each built native and its output equal to eager's in
    dtype, shape and value; returns the TorchScript import's module."""
    import torch

    from minitvm.relay.frontend.pytorch import from_exported_program

    model = model.eval()
    with torch.no_grad():
        ref = model(*inputs).numpy()
        traced = torch.jit.trace(model, inputs)
    infos = [(f"i{k}", (tuple(t.shape), str(t.dtype).replace("torch.", "")))
             for k, t in enumerate(inputs)]
    mod, params = relay.frontend.from_pytorch(traced, infos)
    outs = [build_run_native(mod, params, [n for n, _ in infos], inputs)]
    if exported:
        with torch.no_grad():
            ep = torch.export.export(model, inputs)
        emod, eparams = from_exported_program(ep)
        names = [p.name_hint for p in emod["main"].params][:len(inputs)]
        outs.append(build_run_native(emod, eparams, names, inputs))
    for out in outs:
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
    return mod


def eager_and_imports(fn, x, relax: bool = False):
    """Eager's output of ``Fn(fn)`` on torch tensor ``x`` and the first outputs of its
    TorchScript and Relay torch.export imports built native (and, with ``relax``, of the Relax
    torch.export import, run with no kernel left in numpy): ``(ref, [outputs...])``."""
    import torch

    from minitvm import relax as _relax
    from minitvm.relax.frontend.torch import from_exported_program as relax_import
    from minitvm.relay.frontend.pytorch import from_exported_program

    model = Fn(fn).eval()
    with torch.no_grad():
        ref = model(x).numpy()
        traced = torch.jit.trace(model, (x,))
        ep = torch.export.export(model, (x,))
    info = [("i0", (tuple(x.shape), str(x.dtype).replace("torch.", "")))]
    mod, params = relay.frontend.from_pytorch(traced, info)
    emod, eparams = from_exported_program(ep)
    names = [p.name_hint for p in emod["main"].params][:1]
    outs = [build_run_native(mod, params, ["i0"], (x,)),
            build_run_native(emod, eparams, names, (x,))]
    if relax:
        ex = _relax.build(relax_import(ep), "llvm")
        assert ex.numpy_calls() == {}
        out = _relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x.numpy()))
        outs.append((out if hasattr(out, "numpy") else out[0]).numpy())
    return ref, outs


def seeded_randn(*shape, seed: int = 0):
    """A float32 torch tensor of standard normal draws from numpy's generator ``seed``."""
    import torch

    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def seeded_ints(high: int, *shape, seed: int = 0):
    """An int64 torch tensor of integers in ``[0, high)`` from numpy's generator ``seed``."""
    import torch

    return torch.from_numpy(np.random.default_rng(seed).integers(0, high, shape))


class NewUserRound:
    """Small instances of one round of ``benchmarks/new_user_models_<ordinal>.py`` for the
    importer tests: ``model(name, **small)`` builds the benchmark's own constructor after
    ``torch.manual_seed(1)`` (eval mode); ``rand`` gives image-like values in [0, 1], ``ints``
    token ids."""

    BENCHMARKS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks")

    def __init__(self, ordinal: str):
        if self.BENCHMARKS not in sys.path:
            sys.path.insert(0, self.BENCHMARKS)
        module = importlib.import_module(f"new_user_models_{ordinal}")
        self.models = getattr(module, f"{ordinal}_models")

    def model(self, name: str, **small):
        import torch

        torch.manual_seed(1)
        return self.models()[name][0](**small).eval()

    @staticmethod
    def rand(*shape, seed: int = 0):
        return (seeded_randn(*shape, seed=seed) * 0.3 + 0.5).clamp(0, 1)

    @staticmethod
    def ints(high: int, *shape, seed: int = 0, low: int = 0):
        """Integers in ``[low, high)`` from torch's generator ``seed``."""
        import torch

        return torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed))


def seeded_module(cls, *args):
    """``cls(*args)`` with its parameters drawn after ``torch.manual_seed(1)``."""
    import torch

    torch.manual_seed(1)
    return cls(*args)


def Fn(fn):
    """An ``nn.Module`` whose forward is ``fn`` (a lambda traced as a model in the importer tests)."""
    from torch import nn

    class Lambda(nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    return Lambda()


def randomize_batchnorm(model, seed: int = 0):
    """Give BatchNorm layers non-trivial running statistics (eval mode uses them)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            if m.track_running_stats:  # without them eval mode normalizes by the batch's
                m.running_mean.copy_(torch.rand(n, generator=gen) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
            if m.affine:  # affine=False layers have no weight or bias to randomize
                m.weight.data.copy_(torch.rand(n, generator=gen) + 0.5)
                m.bias.data.copy_(torch.rand(n, generator=gen) * 0.2 - 0.1)
    return model.eval()


def resnet18(width: int = 16, classes: int = 10):
    """ResNet-18's layout (stem, 4 stages of 2 basic blocks, pool, fc), width configurable."""
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            w = width
            self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], w
            for i, c in enumerate([w, 2 * w, 4 * w, 8 * w]):
                blocks += [BasicBlock(cin, c, 1 if i == 0 else 2), BasicBlock(c, c, 1)]
                cin = c
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            x = self.blocks(self.stem(x))
            x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
            return self.fc(x)

    torch.manual_seed(0)
    return randomize_batchnorm(ResNet18())


def mobilenet_v2(width_mult: float = 0.5, classes: int = 10):
    """MobileNetV2's inverted residual blocks (1x1 expand, 3x3 depthwise, 1x1 project, ReLU6)."""
    import torch
    from torch import nn

    def cbr(cin, cout, k, s, groups=1, act=True):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        if act:
            layers.append(nn.ReLU6())
        return layers

    class Inverted(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            layers = [] if expand == 1 else cbr(cin, hidden, 1, 1)
            layers += cbr(hidden, hidden, 3, stride, groups=hidden)
            layers += cbr(hidden, cout, 1, 1, act=False)
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            c = lambda v: max(8, int(v * width_mult))  # noqa: E731
            cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 2, 2), (6, 96, 1, 1),
                   (6, 160, 1, 2), (6, 320, 1, 1)]
            layers, cin = cbr(3, c(32), 3, 2), c(32)
            for t, ch, n, s in cfg:
                for i in range(n):
                    layers.append(Inverted(cin, c(ch), s if i == 0 else 1, t))
                    cin = c(ch)
            layers += cbr(cin, c(1280), 1, 1)
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(c(1280), classes))

        def forward(self, x):
            x = self.features(x).mean([2, 3])
            return self.classifier(x)

    torch.manual_seed(0)
    return randomize_batchnorm(MobileNetV2())


def bert_layer(hidden: int = 64, heads: int = 4, ffn: int = 256):
    """One BERT encoder layer: multi-head self-attention with a mask, LayerNorm, GELU FFN."""
    import math

    import torch
    from torch import nn

    class BertLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(hidden, hidden) for _ in range(3))
            self.o = nn.Linear(hidden, hidden)
            self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
            self.ff1 = nn.Linear(hidden, ffn)
            self.ff2 = nn.Linear(ffn, hidden)
            self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

        def split(self, t):
            b, s, _ = t.shape
            return t.view(b, s, heads, hidden // heads).transpose(1, 2)

        def forward(self, x, mask):
            b, s, _ = x.shape
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hidden // heads)
            scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
            ctx = ctx.transpose(1, 2).reshape(b, s, hidden)
            x = self.ln1(x + self.o(ctx))
            y = self.ff2(nn.functional.gelu(self.ff1(x)))
            return self.ln2(x + y)

    torch.manual_seed(0)
    return BertLayer().eval()


def gpt(vocab: int = 100, dim: int = 32, heads: int = 4, layers: int = 2, ctx: int = 16):
    """A GPT-2-shaped decoder: token + position embeddings (arange), causal mask from a tril
    buffer with masked_fill(-inf), tanh-GELU MLP, tied-free LM head."""
    import math

    import torch
    from torch import nn

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(ctx, dim)
            self.blocks = nn.ModuleList(nn.ModuleDict(dict(
                ln1=nn.LayerNorm(dim), attn=nn.Linear(dim, 3 * dim), proj=nn.Linear(dim, dim),
                ln2=nn.LayerNorm(dim), fc=nn.Linear(dim, 4 * dim), out=nn.Linear(4 * dim, dim)))
                for _ in range(layers))
            self.lnf = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab, bias=False)
            self.register_buffer("mask", torch.tril(torch.ones(ctx, ctx)).view(1, 1, ctx, ctx))

        def forward(self, idx):
            b, t = idx.shape
            pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
            x = self.tok(idx) + self.pos(pos)
            hs = dim // heads
            for blk in self.blocks:
                q, k, v = blk["attn"](blk["ln1"](x)).split(dim, dim=2)
                q, k, v = (z.view(b, t, heads, hs).transpose(1, 2) for z in (q, k, v))
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
                att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
                y = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, dim)
                x = x + blk["proj"](y)
                x = x + blk["out"](nn.functional.gelu(blk["fc"](blk["ln2"](x)),
                                                      approximate="tanh"))
            return self.head(self.lnf(x))

    torch.manual_seed(0)
    return GPT().eval()
