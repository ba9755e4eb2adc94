"""FoldExplicitPadding builds TVM's programs: the cases of TVM v0.19's own test, restated with
small shapes (conv1d/2d/3d and 1-D to 3-D pools, channels first and last; qnn.conv2d).

A constant pad is folded into the consumer's padding when it pads spatial axes only and its value
is what the consumer pads with: 0 for convolutions and average pools (which then count padded
elements), the dtype's lowest value for max pools, the input zero point for qnn.conv2d.
"""

import numpy as np
import pytest
from pass_test_util import check_numerics, evaluate, random_inputs

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform

CONVS = [relay.nn.conv1d, relay.nn.conv2d, relay.nn.conv3d]
MAX_POOLS = [relay.nn.max_pool1d, relay.nn.max_pool2d, relay.nn.max_pool3d]
AVG_POOLS = [relay.nn.avg_pool1d, relay.nn.avg_pool2d, relay.nn.avg_pool3d]
SIDE = 5


def _opt(expr, p):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(expr))
    return p(mod)["main"]


def _layout(ndim: int, channels_last: bool) -> str:
    return ("N" + "DHW"[3 - ndim:] + "C") if channels_last else ("NC" + "DHW"[3 - ndim:])


def _shape(layout: str, channels: int = 2):
    return [1] + [SIDE] * (len(layout) - 2) + [channels] if layout[-1] == "C" else \
        [1, channels] + [SIDE] * (len(layout) - 2)


def _new_padding(layout, pad_width, orig_padding):
    spatial = [i for i, a in enumerate(layout) if a in "DHW"]
    new = [pad_width[i][0] for i in spatial] + [pad_width[i][1] for i in spatial]
    return [n + o for n, o in zip(new, orig_padding)]


def _check(before, after, folded):
    got = _opt(before, transform.FoldExplicitPadding())
    tvm.ir.assert_structural_equal(got, _opt(after, transform.InferType()))
    ops = relay.analysis.list_op_freqs(tvm.IRModule.from_expr(got))
    assert ("nn.pad" not in ops) == folded
    if "max_pool" not in str(before):
        check_numerics(before, got, rtol=1e-5, atol=1e-5)
        return
    # A max-pool window lying wholly in padding gives the pad value: the explicit pad's lowest
    # finite value before, the pool's own padding (-inf here; TVM's topi pads with the lowest
    # value) after. Elsewhere the results are equal.
    mods = [tvm.IRModule.from_expr(f) for f in (before, got)]
    args = random_inputs(mods[0])
    a, b = (np.asarray(evaluate(m, args)) for m in mods)
    lowest = np.float64(_lowest(str(a.dtype)))
    np.testing.assert_allclose(np.maximum(a, lowest), np.maximum(b, lowest), rtol=1e-5)


def _conv_case(ndim, channels_last, i_pad, orig_pad, pad_value=0, pad_mode="constant"):
    layout = _layout(ndim, channels_last)
    kernel_layout = "DHWIO"[3 - ndim:] if channels_last else "OIDHW"[:2] + "DHW"[3 - ndim:]
    wshape = ([3] * ndim + [2, 4]) if channels_last else [4, 2] + [3] * ndim
    pad_width = [[0, 0]] + [i_pad] * ndim + [[0, 0]] if channels_last else \
        [[0, 0]] * 2 + [i_pad] * ndim
    orig_padding = orig_pad * ndim

    def conv(data, w, padding):
        return CONVS[ndim - 1](data, w, padding=padding, data_layout=layout,
                               kernel_layout=kernel_layout)

    x = relay.var("x", shape=_shape(layout))
    w = relay.var("w", shape=wshape)
    before = relay.Function([x, w], conv(relay.nn.pad(x, pad_width, pad_value, pad_mode), w,
                                         orig_padding))
    folds = pad_mode == "constant" and pad_value == 0
    if not folds:
        return before, before, False
    x2, w2 = relay.var("x", shape=_shape(layout)), relay.var("w", shape=wshape)
    after = relay.Function([x2, w2], conv(x2, w2, _new_padding(layout, pad_width,
                                                                orig_padding)))
    return before, after, True


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("channels_last", [False, True])
def test_conv_pad_folds(ndim, channels_last):
    for orig_pad in ([0, 0], [2, 0], [0, 2]):
        for i_pad in ([0, 0], [1, 1], [1, 0]):
            _check(*_conv_case(ndim, channels_last, i_pad, orig_pad))


def test_conv_pad_not_folded():
    _check(*_conv_case(2, False, [1, 0], [0, 2], pad_value=1))  # only a zero pad folds
    _check(*_conv_case(2, False, [1, 0], [0, 2], pad_mode="edge"))  # only constant pads


def _lowest(dtype):
    return np.finfo(dtype).min if np.issubdtype(np.dtype(dtype), np.floating) else \
        np.iinfo(dtype).min


def _pool_case(pools, ndim, pad_width, pad_value, orig_padding, layout, pad_mode="constant",
               dtype="float32", **kwargs):
    def pool(data, padding, **kw):
        return pools[ndim - 1](data, padding=padding, layout=layout, pool_size=2, **kw)

    x = relay.var("x", shape=_shape(layout), dtype=dtype)
    pad = relay.nn.pad(x, pad_width, relay.const(pad_value, dtype=dtype), pad_mode)
    before = relay.Function([x], pool(pad, orig_padding, **kwargs))
    foldable = _lowest(dtype) if pools is MAX_POOLS else 0
    if not (pad_mode == "constant" and pad_value == foldable):
        return before, before, False
    if pools is AVG_POOLS and all(v == 0 for v in orig_padding):
        kwargs["count_include_pad"] = True  # the folded pool counts the former pad
    x2 = relay.var("x", shape=_shape(layout), dtype=dtype)
    after = relay.Function([x2], pool(x2, _new_padding(layout, pad_width, orig_padding),
                                      **kwargs))
    return before, after, True


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("channels_last", [False, True])
def test_max_pool_pad_folds(ndim, channels_last):
    layout = _layout(ndim, channels_last)
    for orig_pad in ([0, 0], [2, 0]):
        for i_pad in ([1, 1], [1, 0]):
            pad_width = [[0, 0]] + [i_pad] * ndim + [[0, 0]] if channels_last else \
                [[0, 0]] * 2 + [i_pad] * ndim
            _check(*_pool_case(MAX_POOLS, ndim, pad_width, _lowest("float32"), orig_pad * ndim,
                               layout))


def test_pool_pad_special_folds():
    # pad widths all zero still fold (the pad goes away)
    _check(*_pool_case(MAX_POOLS, 1, [[0, 0], [0, 0], [0, 0]], _lowest("float32"), [2, 0],
                       "NCW"))
    # max pool over uint8 pads with 0, uint8's lowest value
    _check(*_pool_case(MAX_POOLS, 2, [[0, 0], [0, 0], [0, 2], [2, 0]], 0, [2, 0, 0, 0], "NCHW",
                       dtype="uint8"))
    # an avg pool that already counts its own padding
    _check(*_pool_case(AVG_POOLS, 2, [[0, 0], [0, 0], [0, 2], [2, 0]], 0, [0, 0, 1, 0], "NCHW",
                       count_include_pad=True))
    # an avg pool without padding of its own
    _check(*_pool_case(AVG_POOLS, 2, [[0, 0], [0, 0], [0, 2], [2, 0]], 0, [0, 0, 0, 0], "NCHW"))


def test_pool_pad_not_folded():
    # max pools fold only their dtype's lowest value
    _check(*_pool_case(MAX_POOLS, 1, [[0, 0], [0, 0], [0, 2]], 0, [0, 0], "NCW"))
    # avg pools fold only zero
    _check(*_pool_case(AVG_POOLS, 1, [[0, 0], [0, 0], [0, 2]], 1, [0, 0], "NCW"))
    # only constant pads
    _check(*_pool_case(AVG_POOLS, 1, [[0, 0], [0, 0], [0, 2]], 0, [0, 0], "NCW",
                       pad_mode="edge"))
    # an avg pool that pads without counting, padded again explicitly
    x = relay.var("x", shape=[1, 2, SIDE, SIDE])
    pad = relay.nn.pad(x, [[0, 0], [0, 0], [0, 2], [2, 0]], relay.const(0.0))
    f = relay.Function([x], relay.nn.avg_pool2d(pad, pool_size=2, padding=[0, 0, 1, 0]))
    _check(f, f, False)


def _qconv(data, zero_point, padding, **kw):
    w = relay.var("weight", shape=(3, 3, 4, 4), dtype="int8")
    return relay.qnn.op.conv2d(data, w, relay.const(zero_point, "int32"), relay.const(1, "int32"),
                               relay.const(1, "float32"), relay.const(1, "float32"), channels=4,
                               kernel_size=(3, 3), padding=padding, data_layout="NHWC",
                               kernel_layout="HWIO", **kw)


def test_fold_pad_into_qnn_conv2d():
    x = relay.var("x", shape=(1, 6, 6, 4), dtype="int8")
    pad = relay.nn.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], pad_value=10)
    got = _opt(_qconv(pad, 10, (0, 0)), transform.FoldExplicitPadding())
    expected = _opt(_qconv(x, 10, (1, 1)), transform.InferType())
    tvm.ir.assert_structural_equal(got, expected, map_free_vars=True)


def test_pad_value_not_the_zero_point_stays_before_qnn_conv2d():
    x = relay.var("x", shape=(1, 6, 6, 4), dtype="int8")
    pad = relay.nn.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], pad_value=1)
    expr = _qconv(pad, 0, (0, 0))
    tvm.ir.assert_structural_equal(_opt(expr, transform.FoldExplicitPadding()),
                                   _opt(expr, transform.InferType()), map_free_vars=True)
