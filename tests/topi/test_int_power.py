"""Integer ``power`` is native in both dialects through topi's shared ``int_power`` (the llvm
back end has no integer pow; Relay's build used to fall back to numpy for it): repeated
squaring, exact against numpy (wrapping on overflow as numpy does) and against ONNX Runtime's
Pow where it does not overflow. The session is strict, so a numpy fallback would fail these
builds."""

import numpy as np
import pytest

import minitvm
from minitvm import relax, relay
from minitvm.contrib import graph_executor


def _relay_power(a, b):
    x = relay.var("x", shape=a.shape, dtype=str(a.dtype))
    y = relay.var("y", shape=b.shape, dtype=str(b.dtype))
    mod = minitvm.IRModule.from_expr(relay.Function([x, y], relay.power(x, y)))
    with minitvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    assert {k.kind for k in lib.get_lib().kernels.values()} == {"native"}
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    m.set_input("x", a)
    m.set_input("y", b)
    m.run()
    return m.get_output(0).numpy()


def _operands(dtype: str, shape=(7, 33)):
    rng = np.random.default_rng(0)
    lo = -6 if dtype.startswith("int") else 0
    top = {"int8": 3, "uint8": 5}.get(dtype, 12)  # results inside the type (numpy wraps)
    return rng.integers(lo, 7, shape).astype(dtype), rng.integers(0, top, shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_relay_integer_power_is_native_and_exact(dtype):
    a, b = _operands(dtype)
    np.testing.assert_array_equal(_relay_power(a, b), np.power(a, b))


def test_relay_integer_power_broadcast_and_negative_exponent():
    a = np.array([[-3], [-1], [0], [1], [2], [5]], "int64")
    b = np.array([[-2, -1, 0, 1, 3, 21]], "int64")
    got = _relay_power(a, b)
    # a negative exponent truncates 1 / a ** -b (numpy refuses it for integers)
    want = np.where(b >= 0, np.power(a, np.maximum(b, 0)),
                    np.where(a == 1, 1, np.where(a == -1, np.where(b % 2, -1, 1), 0)))
    np.testing.assert_array_equal(got, want)
    assert got[5, 5] == 5 ** 21


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_relay_integer_power_wraps_like_numpy(dtype):
    """Overflowing results wrap exactly as numpy's (exponents below 64, any for 8-bit types;
    an even base to an exponent of 64 or more is 0)."""
    rng = np.random.default_rng(3)
    a = rng.integers(0 if dtype[0] == "u" else -100, 100, (5, 40)).astype(dtype)
    top = 127 if dtype in ("int8", "uint8") else 64
    b = rng.integers(0, top, (5, 40)).astype(dtype)
    b[0, :] = 64 + 2 * np.arange(40) if dtype not in ("int8", "uint8") else b[0, :]
    a[0, :] = 2 * (a[0, :] // 2)  # even bases to large exponents
    np.testing.assert_array_equal(_relay_power(a, b), np.power(a, b))


def test_relay_integer_power_matches_relax():
    a, b = _operands("int32", (4, 16))
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(a.shape, "int32"))
    y = relax.Var("y", relax.TensorStructInfo(b.shape, "int32"))
    with bb.function("main", [x, y]):
        bb.emit_func_output(bb.emit(relax.op.power(x, y)))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), minitvm.cpu())
    got = vm["main"](minitvm.nd.array(a), minitvm.nd.array(b)).numpy()
    np.testing.assert_array_equal(got, _relay_power(a, b))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_onnx_integer_pow_matches_onnxruntime(dtype):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    tp = TensorProto.INT32 if dtype == "int32" else TensorProto.INT64
    a, b = _operands(dtype, (8, 16))
    graph = helper.make_graph(
        [helper.make_node("Pow", ["a", "b"], ["y"])], "pow",
        [helper.make_tensor_value_info("a", tp, a.shape),
         helper.make_tensor_value_info("b", tp, b.shape)],
        [helper.make_tensor_value_info("y", tp, a.shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]
                                ).run(None, {"a": a, "b": b})[0]
    mod, params = relay.frontend.from_onnx(model, {"a": a.shape, "b": b.shape})
    with minitvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    m.set_input("a", a)
    m.set_input("b", b)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), want)
    vm = relax.VirtualMachine(relax.build(relax.frontend.onnx.from_onnx(model), "llvm"),
                              minitvm.cpu())
    np.testing.assert_array_equal(vm["main"](minitvm.nd.array(a), minitvm.nd.array(b)).numpy(),
                                  want)
