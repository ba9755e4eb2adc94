"""Both importers hand ``batch_matmul`` a left matrix shared by every batch (2-D, or batch
axes all ones) as one matrix of batch 1, which ``batch_matmul`` broadcasts, instead of copying
it to the batch with ``broadcast_to`` first: spectral pooling's ``F @ x`` (a DFT matrix applied
to every feature map) folded 128 copies of F into a constant."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


@pytest.fixture
def rng():
    return np.random.default_rng(30)


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


def _one_matrix_bmm(mod):
    mod = relay.transform.InferType()(mod)
    assert not _calls(mod, "broadcast_to")
    (bmm,) = _calls(mod, "nn.batch_matmul")
    return [int(d) for d in bmm.args[0].checked_type.shape]


@pytest.mark.parametrize("left", [(24, 16), (1, 1, 24, 16), (1, 24, 16)])
def test_torch_left_matrix_for_every_batch(left, rng):
    torch = pytest.importorskip("torch", reason="the PyTorch importer tests need torch")

    class Left(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("f", torch.from_numpy(rng.standard_normal(left)
                                                        .astype("float32")))

        def forward(self, x):
            return self.f @ x

    m, x = Left().eval(), torch.from_numpy(rng.standard_normal((2, 3, 16, 20)).astype("float32"))
    mod, params = relay.frontend.from_pytorch(torch.jit.trace(m, (x,)),
                                              [("x", ((2, 3, 16, 20), "float32"))])
    assert _one_matrix_bmm(mod) == [1, 24, 16]
    np.testing.assert_allclose(_run(mod, params, {"x": x.numpy()}), m(x).numpy(),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sa,sb", [((5,), (3, 5, 4)), ((5,), (2, 3, 5, 4)), ((3, 6, 5), (5,)),
                                   ((6, 5), (3, 5, 4)), ((2, 1, 6, 5), (3, 5, 4))])
def test_torch_vectors_and_matrices_against_batches(sa, sb, rng):
    # a 1-D operand is a vector (torch.matmul: prepended / appended axis, then removed), never
    # a batch_matmul operand of its own
    torch = pytest.importorskip("torch", reason="the PyTorch importer tests need torch")
    a, b = (torch.from_numpy(rng.standard_normal(s).astype("float32")) for s in (sa, sb))
    tr = torch.jit.trace(lambda u, v: torch.matmul(u, v), (a, b))
    mod, params = relay.frontend.from_pytorch(tr, [("a", (sa, "float32")), ("b", (sb, "float32"))])
    got = _run(mod, params, {"a": a.numpy(), "b": b.numpy()})
    want = torch.matmul(a, b).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_torch_transposed_right_keeps_transpose_b(rng):
    torch = pytest.importorskip("torch", reason="the PyTorch importer tests need torch")
    f = torch.from_numpy(rng.standard_normal((12, 16)).astype("float32"))
    x = torch.from_numpy(rng.standard_normal((4, 20, 16)).astype("float32"))
    tr = torch.jit.trace(lambda v: f @ v.transpose(-2, -1), (x,))
    mod, params = relay.frontend.from_pytorch(tr, [("x", ((4, 20, 16), "float32"))])
    assert _one_matrix_bmm(mod) == [1, 12, 16]
    assert _calls(relay.transform.InferType()(mod), "nn.batch_matmul")[0].attrs.transpose_b
    np.testing.assert_allclose(_run(mod, params, {"x": x.numpy()}),
                               (f @ x.transpose(-2, -1)).numpy(), rtol=1e-5, atol=1e-5)


def test_onnx_left_initializer_for_every_batch(rng):
    onnx = pytest.importorskip("onnx", reason="the ONNX importer tests need onnx")
    from onnx import TensorProto, helper, numpy_helper

    f = rng.standard_normal((1, 12, 16)).astype("float32")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["f", "x"], ["y"])], "left",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 12, 20])],
        [numpy_helper.from_array(f, "f")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    mod, params = relay.frontend.from_onnx(model, {"x": (2, 3, 16, 20)})
    assert _one_matrix_bmm(mod) == [1, 12, 16]
    x = rng.standard_normal((2, 3, 16, 20)).astype("float32")
    np.testing.assert_allclose(_run(mod, params, {"x": x}), f @ x, rtol=1e-5, atol=1e-5)
