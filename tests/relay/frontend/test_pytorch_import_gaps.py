"""Common torch.nn modules and functions a new user reaches for (PixelUnshuffle,
LocalResponseNorm, bicubic Upsample, SELU and the other activations, GLU, Unfold, Bilinear,
cosine similarity, ...) through relay.frontend.from_pytorch: built at opt_level 3 against eager
PyTorch, with every kernel lowered natively, plus the clear errors of unsupported variants."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


class Wrap(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _f(fn):
    return lambda: Wrap(fn)


# name -> (module factory, input shapes); every input is float32 randn
CASES = {
    # the five gaps of the task
    "pixel_unshuffle": (lambda: nn.PixelUnshuffle(2), [(1, 3, 8, 6)]),
    "pixel_unshuffle_3_batch_dims": (lambda: nn.PixelUnshuffle(3), [(2, 2, 2, 6, 9)]),
    "local_response_norm": (lambda: nn.LocalResponseNorm(5), [(2, 7, 6, 5)]),
    "local_response_norm_3d_input": (lambda: nn.LocalResponseNorm(4, 0.1, 0.6, 1.5),
                                     [(2, 7, 6)]),
    "local_response_norm_5d_input": (lambda: nn.LocalResponseNorm(3, 1e-3, 0.5, 2.0),
                                     [(2, 6, 4, 5, 3)]),
    "avg_pool3d": (_f(lambda x: F.avg_pool3d(x, 2, 1, 1, count_include_pad=False)),
                   [(1, 2, 5, 6, 4)]),
    "avg_pool3d_ceil": (lambda: nn.AvgPool3d((2, 3, 2), stride=2, ceil_mode=True),
                        [(1, 2, 5, 7, 5)]),
    "avg_pool3d_unbatched": (lambda: nn.AvgPool3d(2), [(2, 4, 4, 4)]),
    "max_pool3d": (lambda: nn.MaxPool3d(2, stride=1, padding=1), [(1, 2, 4, 5, 3)]),
    "adaptive_avg_pool3d": (lambda: nn.AdaptiveAvgPool3d(2), [(1, 2, 4, 4, 4)]),
    "adaptive_max_pool3d": (lambda: nn.AdaptiveMaxPool3d((2, 3, 1)), [(1, 2, 4, 5, 4)]),
    "bicubic_x2": (lambda: nn.Upsample(scale_factor=2, mode="bicubic", align_corners=False),
                   [(1, 2, 5, 6)]),
    "bicubic_x2_align_corners": (
        lambda: nn.Upsample(scale_factor=2, mode="bicubic", align_corners=True), [(2, 3, 7, 5)]),
    "bicubic_size_down": (_f(lambda x: F.interpolate(x, size=(3, 4), mode="bicubic")),
                          [(1, 2, 7, 9)]),
    "bicubic_recomputed_scale": (
        _f(lambda x: F.interpolate(x, scale_factor=1.5, mode="bicubic",
                                   recompute_scale_factor=True)), [(1, 2, 5, 5)]),
    "trilinear_x2": (lambda: nn.Upsample(scale_factor=2, mode="trilinear"), [(1, 2, 2, 3, 2)]),
    "nearest3d_size": (lambda: nn.Upsample(size=(3, 7, 5), mode="nearest"), [(1, 2, 2, 3, 2)]),
    "selu": (lambda: nn.SELU(), [(2, 3, 4)]),
    "celu": (lambda: nn.CELU(0.7), [(2, 3, 4)]),
    "softsign": (lambda: nn.Softsign(), [(2, 3, 4)]),
    "tanhshrink": (lambda: nn.Tanhshrink(), [(2, 3, 4)]),
    "hardshrink": (lambda: nn.Hardshrink(0.3), [(2, 3, 4)]),
    "softshrink": (lambda: nn.Softshrink(0.3), [(2, 3, 4)]),
    "logsigmoid": (lambda: nn.LogSigmoid(), [(2, 3, 4)]),
    "logsigmoid_large": (_f(lambda x: F.logsigmoid(x * 50.0)), [(4, 5)]),
    "threshold": (lambda: nn.Threshold(0.1, 20.0), [(2, 3, 4)]),
    "rrelu_eval": (lambda: nn.RReLU(), [(2, 3, 4)]),
    "glu_dim1": (_f(lambda x: F.glu(x, dim=1)), [(2, 6, 4)]),
    "glu_module": (lambda: nn.GLU(), [(2, 3, 8)]),
    # the common modules and functions tried beyond them
    "pad_circular": (_f(lambda x: F.pad(x, (1, 2, 2, 1), mode="circular")), [(1, 2, 4, 5)]),
    "zero_pad2d": (lambda: nn.ZeroPad2d((1, 0, 2, 1)), [(1, 2, 4, 5)]),
    "constant_pad1d": (lambda: nn.ConstantPad1d(2, 3.5), [(1, 2, 4)]),
    "chunk": (_f(lambda x: torch.chunk(x, 3, dim=-1)[1] * 2), [(2, 3, 7)]),
    "unbind": (_f(lambda x: torch.unbind(x, 1)[2] + 1), [(2, 3, 7)]),
    "var_unbiased": (_f(lambda x: torch.var(x, dim=1, unbiased=True)), [(2, 5, 7)]),
    "std_biased_keepdim": (_f(lambda x: torch.std(x, dim=(1, 2), unbiased=False, keepdim=True)),
                           [(2, 5, 7)]),
    "var_correction0": (_f(lambda x: torch.var(x, dim=-1, correction=0)), [(2, 5, 7)]),
    "logsumexp": (_f(lambda x: torch.logsumexp(x, dim=1)), [(2, 5, 7)]),
    "one_hot": (_f(lambda x: F.one_hot((x.abs() * 3).long().clamp(max=4), 5).float()),
                [(2, 5)]),
    "masked_fill": (_f(lambda x: torch.masked_fill(x, x > 0.5, 2.0)), [(2, 5)]),
    "addmm": (_f(lambda x: torch.addmm(torch.ones(2, 4), x, torch.ones(5, 4) * 0.5, beta=0.5,
                                       alpha=2.0)), [(2, 5)]),
    "baddbmm": (_f(lambda x: torch.baddbmm(torch.ones(3, 2, 2), x, x.transpose(1, 2), beta=0.5,
                                           alpha=2.0)), [(3, 2, 5)]),
    "cosine_similarity": (_f(lambda x, y: F.cosine_similarity(x, y, dim=1)), [(3, 5), (3, 5)]),
    "cosine_similarity_broadcast": (_f(lambda x: F.cosine_similarity(x, x[:1] * 2 + 1, dim=-1)),
                                    [(3, 4, 5)]),
    "pairwise_distance": (_f(lambda x, y: F.pairwise_distance(x, y)), [(3, 5), (3, 5)]),
    "pairwise_distance_p1_keepdim": (
        _f(lambda x, y: F.pairwise_distance(x, y, p=1.0, keepdim=True)), [(3, 5), (3, 5)]),
    "bilinear": (lambda: nn.Bilinear(5, 4, 3), [(2, 5), (2, 4)]),
    "bilinear_batched_no_bias": (lambda: nn.Bilinear(5, 4, 3, bias=False),
                                 [(2, 6, 5), (2, 6, 4)]),
    "unfold": (lambda: nn.Unfold((2, 3), padding=1, stride=(1, 2)), [(2, 3, 5, 6)]),
    "unfold_dilated": (lambda: nn.Unfold(2, dilation=2, stride=2, padding=(0, 1)),
                       [(2, 3, 7, 6)]),
    "diff": (_f(lambda x: torch.diff(x, dim=-1)), [(2, 5, 7)]),
    "diff_n2_prepend_append": (
        _f(lambda x: torch.diff(x, n=2, dim=1, prepend=x[:, :1] * 0, append=x[:, -2:])),
        [(2, 5, 3)]),
    "channel_shuffle": (lambda: nn.ChannelShuffle(2), [(1, 4, 3, 3)]),
    "expm1_log1p": (_f(lambda x: torch.expm1(x) + torch.log1p(x.abs() * 1e-3)), [(3, 5)]),
    "sign_trunc_square": (_f(lambda x: torch.sign(x) + torch.trunc(x * 3) + torch.square(x)),
                          [(3, 5)]),
    "outer_numpy_t": (_f(lambda x: torch.outer(x[0], x[1]) + x.T @ x), [(3, 5)]),
    "prod": (_f(lambda x: torch.prod(x, 1) + torch.prod(x)), [(3, 5)]),
    "all_any": (_f(lambda x: (x > 1).any(dim=1, keepdim=True).float() + x.all(0).float().sum()),
                [(3, 5)]),
    "mse_l1_loss": (_f(lambda x, y: F.l1_loss(x, y, reduction="sum")
                       + F.mse_loss(x, y, reduction="none").sum(1).mean() + F.mse_loss(x, y)),
                    [(3, 5), (3, 5)]),
    "cdist": (_f(lambda x, y: torch.cdist(x, y)), [(2, 3, 4), (2, 5, 4)]),
    "cdist_p1": (_f(lambda x, y: torch.cdist(x, y, p=1.0)), [(3, 4), (5, 4)]),
    "sort": (_f(lambda x: torch.sort(x, dim=0, descending=True)[0]), [(3, 5)]),
    # sizes from the input's shape, the n x m form, a float64 one cast back (Glow's LU conv)
    "eye": (_f(lambda x: x @ torch.eye(x.shape[1]) + torch.eye(x.shape[0], x.shape[1]) * x
               + torch.eye(5, dtype=torch.float64)[1:4].float()), [(3, 5)]),
    "linspace": (_f(lambda x: x * torch.linspace(-1, 1, x.shape[1])
                    + torch.linspace(0.5, 3.0, 3, dtype=torch.float64)[:, None].float()),
                 [(3, 5)]),
}

# ops without a TE compute in minitvm: their kernels run as numpy fallbacks
FALLBACK_OK = {"sort": ("sort", "argsort")}


def _build(name):
    factory, shapes = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    args = tuple(torch.randn(*s) for s in shapes)
    names = [f"x{i}" for i in range(len(args))]
    ts = torch.jit.trace(model, args)
    mod, params = relay.frontend.from_pytorch(ts, [(n, tuple(a.shape)) for n, a in
                                                   zip(names, args, strict=True)])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    return model, args, names, lib


@pytest.mark.parametrize("name", sorted(CASES))
def test_module_matches_torch(name):
    model, args, names, lib = _build(name)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for n, a in zip(names, args, strict=True):
        g.set_input(n, a.numpy())
    g.run()
    with torch.no_grad():
        ref = model(*args).numpy()
    np.testing.assert_allclose(g.get_output(0).numpy(), ref, rtol=1e-5, atol=1e-5)
    fallback = [k for k, v in lib.get_lib().kernels.items() if v.kind != "native"]
    allowed = FALLBACK_OK.get(name, ())
    assert [k for k in fallback if not any(a in k for a in allowed)] == []


def test_pixel_unshuffle_is_a_reshape_transpose():
    ts = torch.jit.trace(nn.PixelUnshuffle(2).eval(), (torch.randn(1, 3, 4, 4),))
    text = relay.frontend.from_pytorch(ts, [("x", (1, 3, 4, 4))])[0].astext()
    assert "transpose" in text and "space_to_depth" not in text


def test_bicubic_uses_torch_kernel_constant():
    model = nn.Upsample(scale_factor=2, mode="bicubic").eval()
    ts = torch.jit.trace(model, (torch.randn(1, 1, 4, 4),))
    text = relay.frontend.from_pytorch(ts, [("x", (1, 1, 4, 4))])[0].astext()
    assert 'method="cubic"' in text and "cubic_alpha=-0.75" in text


def _import(fn, *shapes):
    args = tuple(torch.randn(*s) for s in shapes)
    ts = torch.jit.trace(Wrap(fn).eval(), args)
    return relay.frontend.from_pytorch(ts, [(f"x{i}", s) for i, s in enumerate(shapes)])


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
def test_non_integral_scale_factor_is_refused(mode):
    # torch maps with 1/1.5 here, Relay's resize with 5/7: a clear error, not a wrong answer
    with pytest.raises(ImportError_, match=rf"aten::upsample_{mode}2d: scale_factor=1.5 maps "
                                           r"5 -> 7 .*recompute_scale_factor=True"):
        _import(lambda x: F.interpolate(x, scale_factor=1.5, mode=mode), (1, 1, 5, 5))


def test_rrelu_training_mode_is_refused():
    model = nn.RReLU().train()
    ts = torch.jit.trace(model, (torch.randn(2, 3),))
    with pytest.raises(ImportError_, match=r"aten::rrelu: .*training mode"):
        relay.frontend.from_pytorch(ts, [("x", (2, 3))])


def test_avg_pool3d_divisor_override_is_refused():
    with pytest.raises(ImportError_, match=r"aten::avg_pool3d: .*divisor_override"):
        _import(lambda x: F.avg_pool3d(x, 2, divisor_override=3), (1, 1, 4, 4, 4))


def test_one_hot_needs_num_classes_for_tensor_input():
    with pytest.raises(ImportError_, match=r"aten::one_hot: num_classes=-1 .*pass num_classes"):
        _import(lambda x: F.one_hot(x.abs().long()), (2, 5))
