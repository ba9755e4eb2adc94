"""A new user's models (VGG, SqueezeNet, DenseNet, MBConv, ViT, GPT-2, UNet, LSTM text
classifier, transformer encoder layers, indexing / reduction / padding ops) through
relay.frontend.from_pytorch at opt_level 3 and torch.compile(backend="minitvm"), against eager
PyTorch."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import build_and_run  # noqa: E402
from more_models import CASES, mkbn  # noqa: E402
from sweep_models import check_outputs, check_torch_compile  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


def _case(name):
    cls, make_args, tol, _ = CASES[name]
    torch.manual_seed(0)
    return mkbn(cls()), make_args(), tol


def _import(model, args):
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = torch.jit.trace(model, args, check_trace=False)
    names = [f"in{i}" for i in range(len(args))]
    infos = [(n, (tuple(a.shape), str(a.dtype).replace("torch.", "")))
             for n, a in zip(names, args, strict=True)]
    mod, params = relay.frontend.from_pytorch(ts, infos)
    return mod, params, names


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_model_matches_eager(name):
    model, args, tol = _case(name)
    mod, params, names = _import(model, args)
    outs = build_and_run(mod, params, {n: a.numpy() for n, a in zip(names, args, strict=True)})
    with torch.no_grad():
        check_outputs(outs, model(*args), tol)


@pytest.mark.parametrize("name", ["squeezenet", "mbconv", "vit", "gpt2", "unet", "misc", "more",
                                  "transformer_layers", "audio", "segmenter"])
def test_torch_compile_matches_eager(name):
    check_torch_compile(*_case(name))


def test_new_ops_are_single_relay_ops():
    """unbind is one split; a two-tensor index is one take (of the flattened rows: adv_index has
    no compute); reflect padding a mirror_pad."""
    class Ops(torch.nn.Module):
        def forward(self, x, i):
            a, b, c = x.unbind(1)
            p = torch.nn.functional.pad(x, (1, 1), mode="reflect")
            return a + b * c, x[i, i], p

    mod, _, _ = _import(Ops(), (torch.randn(3, 3, 4), torch.tensor([0, 2])))
    text = mod.astext()
    assert text.count("split(") == 1 and text.count("take(") == 1 and "adv_index(" not in text
    assert text.count("nn.mirror_pad(") == 1


def test_boolean_mask_index_is_a_clear_error():
    class Masked(torch.nn.Module):
        def forward(self, x):
            return x[x > 0]

    with pytest.raises(ImportError_, match="boolean mask"):
        _import(Masked(), (torch.randn(4, 3),))


def test_var_correction_and_norm_orders():
    class Stats(torch.nn.Module):
        def forward(self, x):
            return (torch.var(x, dim=1, correction=0), x.std(), torch.linalg.vector_norm(x, 3.0, -1),
                    torch.linalg.vector_norm(x, float("inf")), x.norm(p=1, dim=0))

    x = torch.randn(4, 5)
    mod, params, names = _import(Stats(), (x,))
    check_outputs(build_and_run(mod, params, {names[0]: x.numpy()}), Stats()(x), 1e-5)
