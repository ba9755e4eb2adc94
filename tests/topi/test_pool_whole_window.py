"""A window pool whose one window covers its whole unpadded axes (TFLite's AVERAGE_POOL_2D
head: a 7x7 pool of 7x7) is computed as the global pool's plain reduction, not the window
schedule's stage: values against numpy (float and integer, avg and max, NCHW and NHWC) and
the compute it takes."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, te
from minitvm.contrib import graph_executor
from minitvm.topi import pooling


def _run(expr, x, value):
    mod = tvm.IRModule.from_expr(relay.Function([x], expr))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input(x.name_hint, value)
    g.run()
    return g.get_output(0).numpy()


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kind,dtype", [("avg", "float32"), ("max", "float32"),
                                        ("avg", "int32"), ("max", "uint8")])
def test_whole_window_pool_values(layout, kind, dtype):
    rng = np.random.default_rng(0)
    shape = (2, 24, 5, 6) if layout == "NCHW" else (2, 5, 6, 24)
    axes = (2, 3) if layout == "NCHW" else (1, 2)
    v = (rng.standard_normal(shape) * 50).astype(dtype) if dtype == "float32" else \
        rng.integers(0, 200, shape).astype(dtype)
    x = relay.var("x", shape=shape, dtype=dtype)
    pool = relay.nn.avg_pool2d if kind == "avg" else relay.nn.max_pool2d
    got = _run(pool(x, (5, 6), layout=layout), x, v)
    if kind == "max":
        ref = v.max(axis=axes, keepdims=True)
    elif dtype == "float32":
        ref = v.astype("float64").mean(axis=axes, keepdims=True)
    else:  # (an integer mean truncates, as the window pool's does)
        ref = v.sum(axis=axes, keepdims=True) // 30
    np.testing.assert_allclose(got, ref.astype(dtype), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("ks,pads,whole", [((7, 7), (0, 0, 0, 0), True),
                                           ((7, 7), (1, 1, 1, 1), False),
                                           ((3, 3), (0, 0, 0, 0), False)])
def test_whole_window_takes_the_plain_reduction(ks, pads, whole):
    x = te.placeholder((1, 16, 7, 7), name="x")
    out_hw = 7 + pads[0] + pads[2] - ks[0] + 1
    shape = (1, 16, out_hw, out_hw)
    (*_, last) = pooling.window_pool(x, "avg", shape, (2, 3), ks, (1, 1), (1, 1), pads, False,
                                     "avg_pool2d")
    stages = [last, *[t for t in last.op.input_tensors if t is not x]]
    tagged = any(s.op.tag == pooling.POOL_TAG for s in stages)
    assert tagged != whole
    assert pooling._whole_window((7, 7), (shape[2], shape[3]), ks, (1, 1), pads) == whole
