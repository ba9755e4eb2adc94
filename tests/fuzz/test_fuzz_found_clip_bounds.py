"""Integer ``clip`` with bounds outside the dtype's range or between its integers (cast
fuzzer, fuzz58's open finding: the Relax reference raised OverflowError on ``clip(uint8, -1,
300)``, seeds 600419 and 86 more). TVM casts the double bounds to the dtype (truncating toward
zero) and its IntImm refuses one outside the range; ours saturates them there (a bound below
every value clips nothing: the float max of ``clamp(min=1)``). One rule
(``topi.reference.tensor.clip_range``) for the compiled kernels, the Relay numpy reference and
the Relax fuzz reference, which now agree on every such bound."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay
from minitvm.runtime.graph_executor import GraphModule
from minitvm.testing.fuzz.relax_reference import evaluate
from minitvm.topi.reference.tensor import clip_range, clip_values

CASES = [("uint8", -1.0, 300.0), ("int8", -300.0, 100.0), ("int8", -1.5, 2.7),
         ("uint8", 10.0, 300.0), ("int32", -3e9, 3e9), ("int8", -float("inf"), float("inf")),
         ("int64", -2.0 ** 70, 2.0 ** 62)]


def _values(dtype):
    info = np.iinfo(dtype)
    return np.array([info.min, info.max, 0, 1, 5, info.max - 1, info.min + 1], dtype)


def _expected(x, lo, hi):
    # integer arithmetic in Python: the bounds truncated toward zero, then saturated
    info = np.iinfo(x.dtype)
    lo = info.min if lo <= info.min else min(int(lo), info.max)
    hi = info.max if hi >= info.max else max(int(hi), info.min)
    return np.array([min(max(int(v), lo), hi) for v in x], x.dtype)


def test_clip_range_truncates_and_saturates():
    assert clip_range(-1.0, 300.0, "uint8") == (0, 255)
    assert clip_range(-1.5, 2.7, "int8") == (-1, 2)
    assert clip_range(-float("inf"), 7.9, "int32") == (-2 ** 31, 7)
    assert clip_range(-0.5, 1.5, "float32") == (-0.5, 1.5)
    big = np.array([2 ** 62 + 1, -(2 ** 62) - 1], "int64")  # no detour through float64
    assert clip_values(big, -2.0 ** 70, 2.0 ** 63).tolist() == big.tolist()


@pytest.mark.parametrize("dtype,lo,hi", CASES)
def test_relay_interpreter_graph_and_reference_agree(dtype, lo, hi):
    x = relay.var("x", shape=(7,), dtype=dtype)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.clip(x, lo, hi))))
    data = _values(dtype)
    want = _expected(data, lo, hi)
    interp = relay.create_executor("debug", mod=mod).evaluate()(data).numpy()
    np.testing.assert_array_equal(interp, want)
    with tvm.transform.PassContext(opt_level=0):
        lib = relay.build(mod, target="llvm")
    m = GraphModule(lib["default"]())
    m.set_input("x", data)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), want)


@pytest.mark.parametrize("dtype,lo,hi", CASES[:4])
def test_relax_reference_and_build_agree(dtype, lo, hi):
    x = relax.Var("x", relax.TensorStructInfo([7], dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.clip(x, lo, hi))
        bb.emit_func_output(out)
    mod = bb.get()
    data = _values(dtype)
    want = _expected(data, lo, hi)
    np.testing.assert_array_equal(evaluate(mod, [data]), want)
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    np.testing.assert_array_equal(vm["main"](data).numpy(), want)
