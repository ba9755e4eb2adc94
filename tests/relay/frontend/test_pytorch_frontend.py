"""relay.frontend.from_pytorch on traced / scripted modules: the three model shapes at opt_level
3 against PyTorch, single-op checks, and error messages."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import bert_layer, build_and_run, mobilenet_v2, resnet18  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_, OpNotImplemented  # noqa: E402


def import_and_compare(model, args, names, script=False, compiled=True):
    ts = torch.jit.script(model) if script else torch.jit.trace(model, args)
    mod, params = relay.frontend.from_pytorch(ts, [(n, tuple(a.shape)) for n, a in
                                                   zip(names, args)])
    with torch.no_grad():
        ref = model(*args)
    feeds = {n: a.numpy() for n, a in zip(names, args)}
    if compiled:
        out = build_and_run(mod, params, feeds)[0]
    else:
        out = relay.create_executor("debug", mod=mod).evaluate()(*feeds.values()).numpy()
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-4, atol=1e-4)
    return mod


def test_resnet18_shaped_traced():
    mod = import_and_compare(resnet18(), (torch.randn(1, 3, 64, 64),), ["x"])
    assert mod.astext().count("nn.conv2d(") == 20


def test_mobilenet_v2_shaped_traced():
    import_and_compare(mobilenet_v2(), (torch.randn(1, 3, 64, 64),), ["x"])


def test_bert_layer_shaped_traced():
    mask = torch.ones(2, 16)
    mask[0, 12:] = 0
    mod = import_and_compare(bert_layer(), (torch.randn(2, 16, 64), mask), ["x", "mask"])
    assert "nn.layer_norm" in mod.astext()


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        y = torch.nn.functional.silu(self.conv(x))
        y = torch.nn.functional.avg_pool2d(y, 2)
        y = y.mean(dim=[2, 3])
        return torch.log_softmax(self.fc(y), dim=-1)


def test_scripted_module():
    import_and_compare(Small().eval(), (torch.randn(2, 3, 8, 8),), ["x"], script=True)


OPS = {
    "chunk_cat": lambda x: torch.cat(list(torch.chunk(x, 2, dim=1))[::-1], dim=1),
    "permute_reshape": lambda x: x.permute(0, 2, 1).reshape(2, -1),
    "slice_select": lambda x: x[:, 1:3, ::2].select(2, 0) * 2.0,
    "clamp_where": lambda x: torch.where(x > 0, x.clamp(max=0.5), -x),
    "hardswish_sigmoid": lambda x: torch.nn.functional.hardswish(x) + torch.sigmoid(x),
    "matmul_transposed": lambda x: torch.matmul(x, x.transpose(1, 2)),
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "softmax_dim1": lambda x: torch.softmax(x, dim=1) - 1.0,
    "masked_fill": lambda x: x.masked_fill(x < 0, -1.0),
    "size_arithmetic": lambda x: x.view(x.size(0) * x.size(1), -1),
    "einsum": lambda x: torch.einsum("bij,bkj->bik", x, x),
}


class Wrap(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("name", sorted(OPS))
def test_single_ops(name):
    import_and_compare(Wrap(OPS[name]).eval(), (torch.randn(2, 4, 6),), ["x"], compiled=False)


def test_unsupported_ops_are_listed_at_once():
    def f(x):
        return torch.special.i1(x) + torch.special.i1e(x) + torch.special.i1e(x * 2)

    ts = torch.jit.trace(Wrap(f).eval(), (torch.randn(3, 4),))
    with pytest.raises(OpNotImplemented, match=r"aten::special_i1 .*aten::special_i1e \(x2\)"):
        relay.frontend.from_pytorch(ts, [("x", (3, 4))])


def test_needs_torchscript():
    with pytest.raises(TypeError, match=r"torch.jit.trace\(model.eval\(\)"):
        relay.frontend.from_pytorch(Small(), [("x", (1, 3, 8, 8))])


def test_input_infos_must_match():
    ts = torch.jit.trace(Small().eval(), (torch.randn(1, 3, 8, 8),))
    with pytest.raises(ImportError_, match="takes 1 inputs, input_infos describes 2"):
        relay.frontend.from_pytorch(ts, [("x", (1, 3, 8, 8)), ("y", (1,))])


def test_input_dtype_from_infos():
    ts = torch.jit.trace(Wrap(lambda x: x * 2).eval(), (torch.ones(3, dtype=torch.int32),))
    mod, _ = relay.frontend.from_pytorch(ts, [("x", ((3,), "int32"))])
    assert mod["main"].params[0].type_annotation.dtype == "int32"
    out = relay.create_executor("debug", mod=mod).evaluate()(np.arange(3, dtype="int32"))
    np.testing.assert_array_equal(out.numpy(), [0, 2, 4])


def test_structure_of_linear_relu():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    lin = model[0]
    ts = torch.jit.trace(model, (torch.randn(2, 4),))
    mod, _ = relay.frontend.from_pytorch(ts, [("x", (2, 4))])
    x = relay.var("x", shape=(2, 4))
    w = relay.const(lin.weight.detach().numpy())
    b = relay.const(lin.bias.detach().numpy())
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w), b,
                                                            axis=-1)))))
    assert tvm.ir.structural_equal(mod["main"], expected["main"], map_free_vars=True)


def test_gpt_shaped_traced():
    from frontend_models import gpt

    model = gpt()
    idx = torch.randint(0, 100, (2, 16))
    ts = torch.jit.trace(model, (idx,))
    mod, params = relay.frontend.from_pytorch(ts, [("idx", ((2, 16), "int64"))])
    out = build_and_run(mod, params, {"idx": idx.numpy()})[0]
    with torch.no_grad():
        np.testing.assert_allclose(out, model(idx).numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name,fn", [
    ("arange_cumsum", lambda x: torch.cumsum(x, 1) + torch.arange(6.0)),
    ("tril_argmax", lambda x: torch.tril(x[0]).argmax(-1).float()),
    ("repeat_flip", lambda x: x.repeat(1, 2, 1).flip([1])),
    ("zeros_like_full", lambda x: torch.zeros_like(x) + torch.full((6,), 2.0)),
])
def test_creation_and_scan_ops(name, fn):
    import_and_compare(Wrap(fn).eval(), (torch.randn(2, 4, 6),), ["x"], compiled=False)
