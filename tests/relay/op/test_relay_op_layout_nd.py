"""ConvertLayout on the N-d ops: nn.conv3d and the 3-D pools move to NDHWC with TVM's kernel
layouts and layout_transforms only at the boundaries; results unchanged."""

import numpy as np

import minitvm as tvm
from minitvm import relay

RNG = np.random.default_rng(13)


def _run(mod, *args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


def test_convert_conv3d_and_pool3d_to_ndhwc():
    x = relay.var("x", shape=(1, 4, 4, 6, 6))
    w = relay.var("w", shape=(8, 4, 3, 3, 3))
    y = relay.nn.relu(relay.nn.conv3d(x, w, padding=1, channels=8, kernel_size=(3, 3, 3)))
    y = relay.nn.max_pool3d(y, (2, 2, 2), (2, 2, 2))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    seq = tvm.transform.Sequential([
        relay.transform.InferType(),
        relay.transform.ConvertLayout({"nn.conv3d": ["NDHWC", "default"],
                                       "nn.max_pool3d": ["NDHWC"]}),
    ])
    with tvm.transform.PassContext(opt_level=3):
        new = seq(mod)
    text = new.astext()
    assert 'data_layout="NDHWC"' in text and 'kernel_layout="DHWIO"' in text
    assert 'layout="NDHWC"' in text and text.count("layout_transform") == 3

    xv = relay.var("x", shape=(1, 4, 4, 6, 6))
    wv = relay.var("w", shape=(8, 4, 3, 3, 3))
    t = relay.layout_transform(xv, "NCDHW", "NDHWC")
    k = relay.layout_transform(wv, "OIDHW", "DHWIO")
    c = relay.nn.relu(relay.nn.conv3d(t, k, padding=1, channels=8, kernel_size=(3, 3, 3),
                                      data_layout="NDHWC", kernel_layout="DHWIO"))
    p = relay.nn.max_pool3d(c, (2, 2, 2), (2, 2, 2), layout="NDHWC", out_layout="NDHWC")
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([xv, wv], relay.layout_transform(p, "NDHWC", "NCDHW"))))
    tvm.ir.assert_structural_equal(new, expected)

    xs = RNG.standard_normal((1, 4, 4, 6, 6)).astype("float32")
    ws = RNG.standard_normal((8, 4, 3, 3, 3)).astype("float32")
    np.testing.assert_allclose(_run(new, xs, ws), _run(relay.transform.InferType()(mod), xs, ws),
                               rtol=1e-5, atol=1e-5)


def test_pool3d_follows_its_input_layout():
    x = relay.var("x", shape=(1, 4, 4, 6, 6))
    w = relay.var("w", shape=(8, 4, 3, 3, 3))
    y = relay.nn.avg_pool3d(relay.nn.conv3d(x, w, padding=1), (2, 2, 2), (2, 2, 2))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))
    with tvm.transform.PassContext(opt_level=3):
        new = relay.transform.ConvertLayout({"nn.conv3d": ["NDHWC", "default"]})(mod)
    text = new.astext()
    assert 'nn.avg_pool3d(' in text and 'layout="NDHWC"' in text
    assert text.count("layout_transform") == 3
    xs = RNG.standard_normal((1, 4, 4, 6, 6)).astype("float32")
    ws = RNG.standard_normal((8, 4, 3, 3, 3)).astype("float32")
    np.testing.assert_allclose(_run(new, xs, ws), _run(mod, xs, ws), rtol=1e-5, atol=1e-5)
