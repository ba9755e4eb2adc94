"""Float -> integer casts of NaN, infinities and out-of-range values (fuzz seed 500453).

LLVM's fptosi/fptoui give poison there, so compiled code disagreed with the interpreter (which
used numpy, whose own answer varies by platform). Both now follow one rule,
``topi.reference.tensor.float_to_int``; these tests pin the rule and check compiled == reference
in scalar and vector loops, from every float width to every integer width."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.topi.reference.tensor import float_to_int

SPECIAL = [np.inf, -np.inf, np.nan, 0.0, -0.0, 89.0, -104.0, 3.4e38, -3.4e38, 1e-30, -1.5, -0.5,
           1.7, 255.9, 256.0, 300.0, -1.0, -255.0, 65535.5, 2.0 ** 31, -(2.0 ** 31), 4e9,
           2.0 ** 32 + 4096, 2.0 ** 63, 2.0 ** 63 + 2.0 ** 40, 2.0 ** 64, -(2.0 ** 63), 1e19]
INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def test_rule_on_known_values():
    x = np.array([np.nan, np.inf, -np.inf, -104.0, 300.0, -1.5, 2.0 ** 31, 2.0 ** 63 + 2.0 ** 40])
    assert float_to_int(x, "uint8").tolist() == [0, 0, 0, 152, 44, 255, 0, 0]
    assert float_to_int(x, "int32").tolist() == [-2 ** 31] * 3 + [-104, 300, -1] + [-2 ** 31] * 2
    assert float_to_int(x, "int64").tolist() == [-2 ** 63] * 3 + [-104, 300, -1, 2 ** 31, -2 ** 63]
    assert float_to_int(x, "uint64").tolist()[-1] == 2 ** 63 + 2 ** 40
    assert float_to_int(np.float32(7.9), "int8") == 7  # 0-d input
    # in-range values convert exactly as numpy converts them
    y = np.random.default_rng(0).uniform(-100, 100, 1000).astype("float32")
    for dt in INTS:
        if dt.startswith("u"):
            assert np.array_equal(float_to_int(np.abs(y), dt), np.abs(y).astype(dt))
        else:
            assert np.array_equal(float_to_int(y, dt), y.astype(dt))


@pytest.mark.parametrize("src", ["float16", "float32", "float64"])
@pytest.mark.parametrize("n", [1, 67])  # a scalar loop and a vectorized loop with a tail
def test_compiled_cast_follows_the_rule(src, n):
    with np.errstate(over="ignore"):
        base = np.array(SPECIAL, dtype="float64").astype(src)
    vals = np.resize(base, (n, base.size))
    x = relay.var("x", shape=vals.shape, dtype=src)
    outs = [relay.cast(x, dt) for dt in INTS]
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple(outs)))
    lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", vals)
    m.run()
    interp = relay.create_executor("debug", mod=mod).evaluate()(vals)
    for k, dt in enumerate(INTS):
        want = float_to_int(vals, dt)
        np.testing.assert_array_equal(m.get_output(k).numpy(), want, err_msg=f"{src}->{dt}")
        np.testing.assert_array_equal(interp[k].numpy(), want, err_msg=f"interp {src}->{dt}")


def test_fuzz_seed_500453_build_matches_interpreter():
    from minitvm.testing.fuzz.differential import check_build
    from minitvm.testing.fuzz.generator import GeneratedProgram

    mod = relay.parse("""
#[version = "0.0.5"]
def @main(%x0: Tensor[(1, 4, 1, 3), float32], %x2: Tensor[(3, 1, 3, 3), float32]) {
  let %v1 = cast(%x2, dtype="uint8");
  %0 = nn.pad(%x2, 0, pad_width=[[0, 0], [1, 0], [1, 1], [0, 0]]);
  let %v2 = nn.leaky_relu(%0, alpha=0.125f);
  (%v2, %v1)
}
""")
    mod = relay.transform.InferType()(mod)
    types = [(p.name_hint, p.type_annotation) for p in mod["main"].params]
    prog = GeneratedProgram(mod, 500453, types)
    assert check_build(prog, prog.inputs(special=True)) == []


@pytest.mark.parametrize("op", ["tanh", "erf"])
def test_odd_functions_keep_the_sign_of_zero(op):
    """Fuzz seed 502055: compiled tanh(-0.0) gave +0.0 (the fast-math flags of the loop drop
    the polynomial's sign of zero), so 1/tanh(-0.0) was +inf against the interpreter's -inf."""
    v = np.array([-0.0, 0.0, -1e-30, 1e-30, -1e-40, -2.0, 2.0, np.nan, -np.inf] * 8, "float32")
    x = relay.var("x", shape=v.shape)
    body = relay.divide(relay.const(1.0), getattr(relay, op)(x))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    m = graph_executor.GraphModule(relay.build(mod, target="llvm")["default"](tvm.cpu()))
    m.set_input("x", v)
    m.run()
    got = m.get_output(0).numpy()
    want = relay.create_executor("debug", mod=mod).evaluate()(v).numpy()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_allclose(got, want, rtol=1e-6)
