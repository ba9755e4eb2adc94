"""Pooling through the row-wise pool schedule, against the numpy reference path."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def _run(func, xv, native):
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.use_native": native}):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(x=xv)
    return m.get_output(0).numpy().copy(), lib


CASES = [
    dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1)),  # ResNet stem
    dict(pool_size=(2, 2), strides=(2, 2), padding=(0, 0)),
    dict(pool_size=(3, 3), strides=(1, 1), padding=(1, 1)),
    dict(pool_size=(3, 2), strides=(2, 3), padding=(1, 0, 1, 1), ceil_mode=True),
    dict(pool_size=(2, 3), strides=(1, 2), padding=(0, 2), dilation=(2, 2)),
]


@pytest.mark.parametrize("kind", ["max", "avg", "avg_nopad"])
@pytest.mark.parametrize("case", CASES)
def test_pool_matches_reference(kind, case):
    shape = (2, 5, 23, 37)
    x = relay.var("x", shape=shape)
    if kind == "max":
        y = relay.nn.max_pool2d(relay.nn.relu(x), **case)
    else:
        y = relay.nn.avg_pool2d(x, count_include_pad=kind == "avg", **case)
    func = relay.Function([x], y)
    xv = np.random.default_rng(0).standard_normal(shape).astype("float32")
    want, _ = _run(func, xv, False)
    got, lib = _run(func, xv, True)
    assert all(k.kind == "native" for k in lib.get_lib().kernels.values())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_stem_pool_takes_the_direct_or_row_form():
    x = relay.var("x", shape=(1, 8, 16, 16))
    func = relay.Function([x], relay.nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1)))
    _, lib = _run(func, np.zeros((1, 8, 16, 16), "float32"), True)
    ir = "".join(k.ir for k in lib.get_lib().kernels.values())
    # the pool schedule's direct form (schedule/pool.py) where pool.DIRECT is on for the host's
    # ISA (AVX2 and AVX-512 alike), else its row form
    from minitvm.schedule import common, pool
    assert ("pool_vrow" in ir) != pool.DIRECT[common.vector_isa()]
