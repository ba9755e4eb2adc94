"""Found by the issue 15 long run: compiled float16 erf/tanh/tan/asin/... called the double
libm function with half arguments (silently wrong values); they now run in float32 and round
back, matching the interpreter, special values included."""

import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.runtime.graph_executor import GraphModule
from minitvm.testing.fuzz.differential import compare_values, run_interpreter

OPS = ["erf", "tanh", "tan", "sin", "cos", "asin", "acos", "atan", "sinh", "cosh", "asinh",
       "acosh", "atanh", "exp", "log", "sigmoid"]


@pytest.mark.parametrize("op", OPS)
def test_float16_math_matches_interpreter(op):
    x = relay.var("x", shape=(12,), dtype="float16")
    mod = tvm.IRModule.from_expr(relay.Function([x], getattr(relay, op)(x)))
    a = np.array([0.5, -0.75, 0.25, 0.9, 1.5, 2.5, -3.0, 0.0, np.inf, -np.inf, np.nan, 60000.0],
                 "float16")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = run_interpreter(mod, [a])
    lib = relay.build(mod, target="llvm")
    m = GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", a)
    m.run()
    diff = compare_values(ref, [m.get_output(0).numpy()])
    assert diff is None, f"{op}: {diff}"
