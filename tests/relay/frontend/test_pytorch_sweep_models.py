"""Models beyond the acceptance trio (ViT / GPT-2 blocks, UNet upsampling, LSTM / GRU,
SE blocks, group / instance norm, indexing ops, einsum, pooling variants, dict and tuple
outputs) through relay.frontend.from_pytorch and torch.compile(backend="minitvm"), against
eager PyTorch."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import build_and_run  # noqa: E402
from sweep_models import CASES, check_outputs, check_torch_compile, mkbn  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.contrib import torch_backend  # noqa: E402
from minitvm.relay.frontend import ImportError_, OpNotImplemented  # noqa: E402


def _case(name):
    cls, make_args, tol = CASES[name]
    torch.manual_seed(0)
    model = mkbn(cls())
    return model, make_args(), tol


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_model_matches_eager(name):
    model, args, tol = _case(name)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the check re-traces and compares graphs; MultiheadAttention's fast path differs
        ts = torch.jit.trace(model, args, strict=False, check_trace=False)
        ref = model(*args)
    names = [f"in{i}" for i in range(len(args))]
    infos = [(n, (tuple(a.shape), str(a.dtype).replace("torch.", "")))
             for n, a in zip(names, args, strict=True)]
    mod, params = relay.frontend.from_pytorch(ts, infos)
    outs = build_and_run(mod, params, {n: a.numpy() for n, a in zip(names, args, strict=True)})
    check_outputs(outs, ref, tol)


@pytest.mark.parametrize("name", ["vit_mha", "masked_sdpa", "gpt2_block", "unet", "lstm", "norm_conv",
                                  "tensor_ops", "pool", "dict_out", "tuple_out"])
def test_torch_compile_matches_eager(name):
    check_torch_compile(*_case(name))


def test_rnn_structure_is_unrolled():
    """aten::gru becomes a static unroll: per layer and direction one dense for the input
    projection of every step, then one recurrent dense per step."""
    model, args, _ = _case("bigru")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = torch.jit.trace(model, args)
    mod, _ = relay.frontend.from_pytorch(ts, [("x", (4, 2, 8))])
    text = mod.astext()
    # layers x directions x (the projection + a recurrent dense per step, less the first
    # step's: h0 is zeros)
    assert text.count("nn.dense(") == 2 * 2 * (1 + 4 - 1)
    assert text.count("sigmoid(") == 4 * 2 * 2 * 2  # the r and z gates of every step


def test_unsupported_ops_listed_once_for_new_models():
    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.special.i1e(x) + torch.special.i1(x) + torch.special.i1e(x)

    ts = torch.jit.trace(Odd(), (torch.randn(4),))
    with pytest.raises(OpNotImplemented) as e:
        relay.frontend.from_pytorch(ts, [("x", (4,))])
    for op in ("aten::special_i1e", "aten::special_i1"):
        assert op in str(e.value)
    torch._dynamo.reset()
    torch_backend.fallback_reasons.clear()
    try:
        compiled = torch.compile(Odd(), backend="minitvm")
        x = torch.randn(4)
        with pytest.warns(RuntimeWarning, match="running this graph eagerly") as rec:
            torch.testing.assert_close(compiled(x), Odd()(x))
            torch.testing.assert_close(compiled(x + 1), Odd()(x + 1))
        said = [str(w.message) for w in rec if "minitvm" in str(w.message)]
        assert len(said) == 1 and "i1e" in said[0]
    finally:
        torch._dynamo.reset()


def test_instance_norm_with_running_stats_is_a_clear_error():
    model = torch.nn.InstanceNorm2d(4, track_running_stats=True).eval()
    ts = torch.jit.trace(model, (torch.randn(1, 4, 5, 5),))
    with pytest.raises(ImportError_, match="instance_norm with running statistics"):
        relay.frontend.from_pytorch(ts, [("x", (1, 4, 5, 5))])
