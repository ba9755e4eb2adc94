"""Average pooling of integer tensors: compiles (a float divisor constant of an int dtype made
invalid LLVM IR) and divides with C semantics (truncation toward zero), as TVM's topi does;
compiled code and the interpreter's reference agree."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def _run_both(f, a):
    mod = tvm.IRModule.from_expr(f)
    lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", a)
    m.run()
    ref = relay.create_executor("debug", mod=mod).evaluate()(a).numpy()
    return m.get_output(0).numpy(), ref


@pytest.mark.parametrize("dtype", ["int32", "int8", "int64"])
@pytest.mark.parametrize("padding,cip", [((0, 0), False), ((1, 1), False), ((1, 1), True)])
def test_avg_pool2d_int_truncates(dtype, padding, cip):
    a = np.random.default_rng(0).integers(-50, 50, (1, 2, 5, 5)).astype(dtype)
    x = relay.var("x", shape=a.shape, dtype=dtype)
    f = relay.Function([x], relay.nn.avg_pool2d(x, pool_size=(3, 3), strides=(2, 2),
                                                padding=padding, count_include_pad=cip))
    got, ref = _run_both(f, a)
    np.testing.assert_array_equal(got, ref)
    if padding == (0, 0):
        window = a[0, 0, 0:3, 0:3].astype(np.int64).sum()
        assert ref[0, 0, 0, 0] == int(window / 9)  # toward zero, not floor


def test_avg_pool1d_and_3d_int():
    a = np.random.default_rng(1).integers(-9, 9, (1, 1, 4, 5, 6)).astype("int32")
    x = relay.var("x", shape=a.shape, dtype="int32")
    got, ref = _run_both(relay.Function([x], relay.nn.avg_pool3d(x, pool_size=(2, 2, 2))), a)
    np.testing.assert_array_equal(got, ref)
    b = a.reshape(1, 4, 30)
    y = relay.var("x", shape=b.shape, dtype="int32")
    got, ref = _run_both(relay.Function([y], relay.nn.avg_pool1d(y, pool_size=(4,), padding=(1,))),
                         b)
    np.testing.assert_array_equal(got, ref)
