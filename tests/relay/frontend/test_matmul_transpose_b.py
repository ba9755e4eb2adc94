"""Both importers give ``batch_matmul`` the operand of a last-two-axes transpose with
``transpose_b=True`` (attention's ``q @ k.transpose(-2, -1)``), so no transpose kernel runs;
other transposes stay as they are."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.frontend.common import last_two_swapped

torch = pytest.importorskip("torch", reason="the PyTorch importer tests need torch")


def _calls(mod, name):
    out = []
    relay.analysis.post_order_visit(mod["main"], lambda e: out.append(e) if isinstance(
        e, relay.Call) and getattr(e.op, "name", "") == name else None)
    return out


def _run(mod, params, inputs):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in inputs.items():
        g.set_input(k, v)
    g.run()
    return g.get_output(0).numpy()


class _Scores(torch.nn.Module):
    def __init__(self, perm=None):
        super().__init__()
        self.perm = perm

    def forward(self, q, k):
        kt = k.transpose(-2, -1) if self.perm is None else k.permute(*self.perm)
        return torch.softmax(q @ kt, -1)


@pytest.mark.parametrize("shape", [(2, 16, 8), (1, 3, 16, 8)])
def test_pytorch_attention_scores_fold_the_transpose(shape):
    rng = np.random.default_rng(0)
    q, k = (rng.standard_normal(shape).astype("float32") for _ in range(2))
    m = _Scores().eval()
    tr = torch.jit.trace(m, (torch.from_numpy(q), torch.from_numpy(k)))
    mod, params = relay.frontend.from_pytorch(tr, [("q", shape), ("k", shape)])
    (bmm,) = _calls(mod, "nn.batch_matmul")
    assert bmm.attrs.transpose_b and not _calls(mod, "transpose")
    ref = m(torch.from_numpy(q), torch.from_numpy(k)).numpy()
    np.testing.assert_allclose(_run(mod, params, {"q": q, "k": k}), ref, rtol=1e-5, atol=1e-6)


def test_pytorch_other_permutations_keep_their_transpose():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 2, 8, 8)).astype("float32")
    k = rng.standard_normal((2, 2, 8, 8)).astype("float32")
    m = _Scores(perm=(0, 1, 3, 2)).eval()  # the same swap, spelled as a permute: folds too
    tr = torch.jit.trace(m, (torch.from_numpy(q), torch.from_numpy(k)))
    mod, _ = relay.frontend.from_pytorch(tr, [("q", q.shape), ("k", k.shape)])
    assert _calls(mod, "nn.batch_matmul")[0].attrs.transpose_b
    m2 = _Scores(perm=(1, 0, 3, 2)).eval()  # also swaps the batch axes: not batch_matmul's
    tr2 = torch.jit.trace(m2, (torch.from_numpy(q), torch.from_numpy(k)))
    mod2, p2 = relay.frontend.from_pytorch(tr2, [("q", q.shape), ("k", k.shape)])
    assert not _calls(mod2, "nn.batch_matmul")[0].attrs.transpose_b
    ref = m2(torch.from_numpy(q), torch.from_numpy(k)).numpy()
    np.testing.assert_allclose(_run(mod2, p2, {"q": q, "k": k}), ref, rtol=1e-5, atol=1e-6)


def test_onnx_matmul_of_a_transpose_folds():
    onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
    from onnx import TensorProto, helper

    shape = (3, 16, 8)
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qk"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (3, 16, 16))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod, params = relay.frontend.from_onnx(model, {"q": shape, "k": shape})
    (bmm,) = _calls(mod, "nn.batch_matmul")
    assert bmm.attrs.transpose_b and not _calls(mod, "transpose")
    rng = np.random.default_rng(2)
    q, k = (rng.standard_normal(shape).astype("float32") for _ in range(2))
    np.testing.assert_allclose(_run(mod, params, {"q": q, "k": k}), q @ k.transpose(0, 2, 1),
                               rtol=1e-5, atol=1e-5)
    assert onnx is not None


def test_last_two_swapped_recognizes_only_that_transpose():
    x = relay.var("x", shape=(2, 3, 4, 5))
    assert last_two_swapped(relay.transpose(x, (0, 1, 3, 2))) is x
    assert last_two_swapped(relay.transpose(x, (0, 1, -1, -2))) is x
    assert last_two_swapped(relay.transpose(x, (1, 0, 3, 2))) is None
    assert last_two_swapped(relay.transpose(x)) is None  # (reverses every axis)
    assert last_two_swapped(relay.nn.relu(x)) is None
