"""Integer ``power`` is native in both dialects through topi's shared ``int_power`` (the llvm
back end has no integer pow; Relay's build used to fall back to numpy for it): repeated
squaring, exact against numpy for every exponent (wrapping on overflow as numpy does) and
against ONNX Runtime's Pow where it does not overflow. The session is strict, so a numpy fallback would fail these
builds."""

import numpy as np
import pytest

import minitvm
from minitvm import relax, relay, te
from minitvm.contrib import graph_executor
from minitvm.tir import expr as E
from minitvm.topi.int_power import int_power


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
    """Overflowing results wrap exactly as numpy's, for every exponent: odd bases to large
    exponents (their powers repeat with a period of 2 ** (n - 2)), even bases to exponents past
    the width (0)."""
    rng = np.random.default_rng(3)
    a = rng.integers(0 if dtype[0] == "u" else -100, 100, (5, 40)).astype(dtype)
    b = rng.integers(0, min(np.iinfo(dtype).max, 10 ** 6), (5, 40)).astype(dtype)
    b[1, :] = rng.integers(0, 70, 40)  # small exponents too
    a[0, :] = 2 * (a[0, :] // 2)  # even bases
    a[2, :] = 2 * (a[2, :] // 2) + 1  # odd bases
    np.testing.assert_array_equal(_relay_power(a, b), np.power(a, b))


_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def _topi_power(a, b=None, exponents=()):
    """``topi.int_power`` over a 1-d tensor, compiled: by a second tensor ``b``, or by each of
    the constant ``exponents`` (one output each, one compile)."""
    A = te.placeholder(a.shape, str(a.dtype), name="A")  # noqa: N806
    if b is not None:
        B = te.placeholder(b.shape, str(b.dtype), name="B")  # noqa: N806
        outs = [te.compute(a.shape, lambda i: int_power(A[i], B[i]), name="C")]
        args, ins = [A, B, *outs], [a, b]
    else:
        outs = [te.compute(a.shape, _by(A, e), name=f"C{k}") for k, e in enumerate(exponents)]
        args, ins = [A, *outs], [a]
    f = te.create_prim_func(args).with_attr("global_symbol", "power")
    run = minitvm.compile(minitvm.IRModule.from_expr(f), target="llvm")
    got = [minitvm.runtime.tensor(np.zeros(a.shape, a.dtype), minitvm.cpu()) for _ in outs]
    run(*[minitvm.runtime.tensor(x, minitvm.cpu()) for x in ins], *got)
    return [g.numpy() for g in got] if b is None else got[0].numpy()


def _by(A, exponent):  # noqa: N803
    return lambda i: int_power(A[i], exponent)


def _bases(dtype, rng, size=256):
    info = np.iinfo(dtype)
    a = rng.integers(max(info.min, -1000), min(info.max, 1000), size).astype(dtype)
    a[:4] = [0, 1, 2, 3]
    if info.min < 0:
        a[4:8] = [-1, -2, -3, info.min]
    a[8:12] = [info.max, info.max - 2, 5, 7]  # odd bases
    return a


@pytest.mark.parametrize("dtype", _DTYPES)
def test_int_power_by_a_tensor_matches_numpy_for_every_exponent(dtype):
    rng = np.random.default_rng(1)
    a = _bases(dtype, rng)
    info = np.iinfo(dtype)
    b = rng.integers(0, info.max, a.shape, dtype=dtype, endpoint=True)
    b[:70] = np.arange(70)  # each small exponent, the width and past it
    b[70:80] = info.max
    b[80:90] = info.max - 1
    with np.errstate(over="ignore"):
        want = np.power(a, b)
    np.testing.assert_array_equal(_topi_power(a, b), want)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_int_power_by_a_constant_matches_numpy(dtype):
    rng = np.random.default_rng(2)
    a = _bases(dtype, rng)
    info = np.iinfo(dtype)
    exponents = {0, 1, 3, 63, 64, 65, info.max - 1, info.max}
    exponents |= {e for e in (1000003, 2 ** 40 + 1) if e <= info.max}
    exponents = sorted(exponents)
    for e, got in zip(exponents, _topi_power(a, exponents=exponents), strict=True):
        with np.errstate(over="ignore"):
            want = np.power(a, np.array(e, dtype))
        np.testing.assert_array_equal(got, want, err_msg=f"** {e}")


@pytest.mark.parametrize("base_dtype,exp_dtype", [
    ("int32", "int64"), ("int64", "int32"), ("int32", "uint8"), ("int16", "int64"),
    ("uint32", "uint64"), ("int64", "int8")])
def test_int_power_with_an_exponent_of_another_type_matches_pythons_pow(base_dtype, exp_dtype):
    """The exponent's type narrower or wider than the base's: ``pow(a, b, 2**n)`` (negative
    exponents truncate)."""
    rng = np.random.default_rng(5)
    info, einfo = np.iinfo(base_dtype), np.iinfo(exp_dtype)
    a = rng.integers(max(info.min, -10 ** 6), min(info.max, 10 ** 6), 300).astype(base_dtype)
    a[:150] |= 1  # odd bases
    b = rng.integers(max(einfo.min, -5), einfo.max, 300, dtype=exp_dtype, endpoint=True)
    b[:30] = einfo.max
    b[30:80] = np.arange(50) + 40
    mod = 1 << info.bits
    want = [1 if x == 1 else (-1 if e % 2 else 1) if x == -1 else 0 if e < 0
            else pow(x, e, mod) for x, e in zip(a.tolist(), b.tolist())]
    want = np.array([w % mod for w in want], "uint64").astype(f"uint{info.bits}").view(
        base_dtype)
    np.testing.assert_array_equal(_topi_power(a, b), want)


def test_int_power_by_a_negative_constant_truncates():
    a = np.array([-3, -1, 0, 1, 2, 5], "int32")
    exponents = (-1, -2, -7)
    for e, got in zip(exponents, _topi_power(a, exponents=exponents), strict=True):
        np.testing.assert_array_equal(got, np.where(a == 1, 1, np.where(
            a == -1, -1 if e % 2 else 1, 0)))


def test_int_power_by_a_constant_multiplies_only_its_set_bits():
    a = E.Var("a", "int32")
    cube = int_power(a, 3)  # let base = a in let sq1 = base * base in base * sq1
    assert isinstance(cube, E.Let) and isinstance(cube.body, E.Let)
    assert isinstance(cube.body.body, E.Mul)
    assert int_power(a, E.IntImm("int32", 1)).body is not None


def test_legalized_integer_power_round_trips_through_tvmscript():
    """The legalized power's let-bound squares print as ``T.Let`` and parse back equal."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "int32"))
    y = relax.Var("y", relax.TensorStructInfo((4, 8), "int32"))
    with bb.function("main", [x, y]):
        p = bb.emit(relax.op.power(x, y))
        c = bb.emit(relax.op.power(p, relax.const(np.array(7, "int32"))))
        bb.emit_func_output(c)
    mod = relax.transform.LegalizeOps()(bb.get())
    text = mod.script()
    assert "T.Let(" in text and "pow_sq6 = T.int32()" in text and "pow_t3 = T.int32()" in text
    minitvm.ir.assert_structural_equal(minitvm.script.from_source(text), mod)
    a, b = _operands("int32", (4, 8))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), minitvm.cpu())
    got = vm["main"](minitvm.nd.array(a), minitvm.nd.array(b)).numpy()
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, np.power(np.power(a, b), 7))


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
