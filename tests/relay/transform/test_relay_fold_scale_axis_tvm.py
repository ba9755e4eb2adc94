"""FoldScaleAxis builds TVM's programs: the Before/Expected pairs of TVM's own pass tests.

Each case states the input program and the program TVM's ForwardFoldScaleAxis /
BackwardFoldScaleAxis produce for it (squeezed scale, ``expand_dims`` / ``reshape`` onto the
weight and bias axes), compares them with structural equality after InferType, and runs both
through the interpreter on random inputs.
"""

import re

import numpy as np
import pytest
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform

RNG = np.random.default_rng(7)


def _scale(shape, sign=1.0):
    return relay.const((sign * RNG.uniform(0.5, 1.0, size=shape)).astype("float32"))


def _apply(f, p):
    return p(tvm.IRModule.from_expr(f))["main"]


def _typed(f):
    return _apply(f, transform.InferType())


def _layouts(block, data="NCHW", kernel="OIHW", i_factor=None):
    if not block:
        return {"data_layout": data, "kernel_layout": kernel}
    return {"data_layout": f"{data}{block[0]}c",
            "kernel_layout": f"{kernel}{i_factor or 1}i{block[1]}o"}


def _assert_same_sharing(lhs, rhs):
    """TVM's structural equality maps Relay calls one-to-one (calls are graph nodes there): a
    call shared in one program must be shared in the other. Walk both programs in step."""
    fwd, back, stack = {}, {}, [(lhs, rhs)]
    while stack:
        a, b = stack.pop()
        if isinstance(a, relay.Function):
            stack.append((a.body, b.body))
        elif isinstance(a, relay.Tuple):
            stack.extend(zip(a.fields, b.fields))
        elif isinstance(a, relay.Call):
            if a in fwd or b in back:
                assert fwd.get(a) is b and back.get(b) is a, f"sharing differs at {a.op}"
                continue
            fwd[a], back[b] = b, a
            stack.extend(zip(a.args, b.args))


def test_sharing_check_tells_shared_from_duplicated():
    x = relay.var("x", shape=(2,))
    e = relay.exp(x)
    with pytest.raises(AssertionError, match="sharing differs"):
        _assert_same_sharing(relay.Function([x], relay.add(e, e)),
                             relay.Function([x], relay.add(relay.exp(x), relay.exp(x))))


def _check(before, expected, p):
    before = _typed(before)
    out = _typed(_apply(before, p))
    expected = _typed(expected)
    tvm.ir.assert_structural_equal(out, expected)
    _assert_same_sharing(out, expected)
    check_numerics(before, out, rtol=1e-4, atol=1e-4)


def _unchanged(before, p):
    before = _typed(before)
    tvm.ir.assert_structural_equal(_apply(before, p), before)


def _wvar(lay, out_ch, in_ch, kernel=(3, 3)):
    """TVM's untyped ``weight``; typed here for blocked kernels (NOTE: the FInferArgTypes hints
    of this tree do not derive a blocked kernel's shape yet)."""
    kl = lay["kernel_layout"]
    if kl.isupper():
        return relay.var("weight")
    big = {"O": out_ch, "I": in_ch}
    factors = dict((m.group(2).upper(), int(m.group(1)))
                   for m in re.finditer(r"(\d+)([a-z])", kl))
    shape, spatial = [], iter(kernel)
    for m in re.finditer(r"(\d+)?([A-Za-z])", kl):
        if m.group(1):
            shape.append(int(m.group(1)))
        elif m.group(2) in big:
            shape.append(big[m.group(2)] // factors.get(m.group(2), 1))
        else:
            shape.append(next(spatial))
    return relay.var("weight", shape=tuple(shape))


def _weight_var(before):
    """A fresh ``weight`` variable carrying the type inference gave the untyped one."""
    typed = _typed(before)
    return relay.var("weight", [p for p in typed.params if p.name_hint == "weight"][0]
                     .checked_type)


# ----------------------------------------------------------------------------------- forward


@pytest.mark.parametrize("shape,channels,block", [((2, 4, 10, 10), 2, None),
                                                  ((2, 2, 10, 10, 2), 8, (2, 4))])
def test_fwd_simple(shape, channels, block):
    lay = _layouts(block, i_factor=2)
    if block:
        in_ch = shape[1] * shape[4]
        bshape = (1, in_ch // block[0], 1, 1, block[0])
    else:
        in_ch = shape[1]
        bshape = (in_ch, 1, 1)
    x, bias, s = relay.var("x", shape=shape), relay.var("in_bias", shape=bshape), _scale(bshape)

    def conv(d, w):
        return relay.nn.conv2d(d, w, channels=channels, kernel_size=(3, 3), padding=(1, 1), **lay)

    w0 = _wvar(lay, channels, in_ch)
    before = relay.Function([x, w0, bias], conv(relay.add(relay.nn.relu(relay.multiply(x, s)),
                                                          bias), w0))
    w = _weight_var(before)
    if block:
        sq = relay.squeeze(s, axis=[0, 2, 3])
        b = relay.divide(bias, relay.reshape(sq, (1, in_ch // block[0], 1, 1, block[0])))
        wt = relay.multiply(w, relay.reshape(sq, (1, in_ch // 2, 1, 1, 2, 1)))
    else:
        sq = relay.squeeze(s, axis=[1, 2])
        b = relay.divide(bias, relay.expand_dims(sq, axis=1, num_newaxis=2))
        wt = relay.multiply(w, relay.expand_dims(sq, axis=1, num_newaxis=2))
    expected = relay.Function([x, w, bias], conv(relay.add(relay.nn.relu(x), b), wt))
    _check(before, expected, transform.ForwardFoldScaleAxis())


@pytest.mark.parametrize("dshape,channels,block", [((2, 4, 10, 3), 3, None),
                                                   ((2, 4, 10, 2, 2), 4, (2, 2))])
def test_fwd_dual_path_depthwise_nhwc(dshape, channels, block):
    lay = _layouts(block, "NHWC", "HWIO")
    if block:
        in_ch = dshape[3] * dshape[4]
        wshape = (3, 3, 1, channels // block[1], 1, block[1])
        vshape = (in_ch // block[0], block[0])
    else:
        in_ch = dshape[-1]
        wshape = (3, 3, 1, channels)
        vshape = (in_ch,)
    assert in_ch == channels
    x, w = relay.var("x", shape=dshape), relay.var("weight", shape=wshape)
    bias, s = relay.var("in_bias", shape=vshape), _scale(vshape)

    def conv(d, wt):
        return relay.nn.conv2d(d, wt, channels=channels, kernel_size=(3, 3), groups=channels,
                               padding=(1, 1), **lay)

    y = relay.subtract(relay.nn.relu(relay.multiply(s, x)), bias)
    before = relay.Function([x, w, bias], relay.add(conv(y, w), conv(y, w)))

    def wscale():
        return relay.reshape(s, (1, 1, 1, channels // block[0], 1, block[0])) if block else s

    bscale = relay.reshape(s, (1, 1, 1, channels // block[0], block[0])) if block else s
    y2 = relay.subtract(relay.nn.relu(x), relay.divide(bias, bscale))
    expected = relay.Function([x, w, bias], relay.add(conv(y2, relay.multiply(w, wscale())),
                                                      conv(y2, relay.multiply(w, wscale()))))
    _check(before, expected, transform.ForwardFoldScaleAxis())


@pytest.mark.parametrize("shape,channels,block", [((2, 11, 10, 4), 4, None),
                                                  ((2, 11, 10, 2, 2), 4, (2, 2))])
def test_fwd_fail_scaled_value_has_a_non_conv_user(shape, channels, block):
    lay = _layouts(block, "NHWC", "HWIO")
    vshape = (channels // block[0], block[0]) if block else (channels,)
    x = relay.var("x", shape=shape)
    y = relay.multiply(x, _scale(vshape))
    conv = relay.nn.conv2d(relay.nn.leaky_relu(y, alpha=0.1), _wvar(lay, channels, channels),
                           channels=channels, kernel_size=(3, 3), padding=(1, 1), **lay)
    z = relay.add(conv, y)
    _unchanged(relay.Function(relay.analysis.free_vars(z), z), transform.ForwardFoldScaleAxis())


@pytest.mark.parametrize("shape,block,scale", [
    ((2, 11, 10, 4), None, "var"), ((2, 11, 10, 4), None, "negative"),
    ((2, 11, 10, 2, 2), (2, 2), "var"), ((2, 11, 10, 2, 2), (2, 2), "negative")])
def test_fwd_relu_fail(shape, block, scale):
    lay = _layouts(block, "NHWC", "HWIO")
    sshape = (1, 1, 1, 2, 2) if block else (4,)
    s = relay.var("in_scale", shape=sshape) if scale == "var" else _scale(sshape, -1.0)
    x = relay.var("x", shape=shape)
    y = relay.multiply(x, s)
    conv = relay.nn.conv2d(relay.nn.relu(y), _wvar(lay, 4, 4), channels=4,
                           kernel_size=(3, 3), padding=(1, 1), **lay)
    z = relay.add(conv, y)
    _unchanged(relay.Function(relay.analysis.free_vars(z), z), transform.ForwardFoldScaleAxis())


def test_fwd_let_fail():
    x, bias = relay.var("x", shape=(2, 11, 10, 4)), relay.var("in_bias", shape=(4,))
    w = relay.var("weight")
    y = relay.add(relay.nn.relu(relay.multiply(x, _scale((4,)))), bias)
    xv = relay.Var("x_var")
    conv = relay.nn.conv2d(xv, w, channels=4, kernel_size=(3, 3), data_layout="NHWC",
                           kernel_layout="HWIO", padding=(1, 1))
    f = relay.Function([x, w, bias], relay.Let(xv, y, relay.add(conv, y)))
    _unchanged(f, transform.ForwardFoldScaleAxis())


@pytest.mark.parametrize("shape,channels,block", [((2, 4, 10, 10), 4, None),
                                                  ((2, 2, 10, 10, 2), 8, (2, 2))])
def test_fwd_negative_scale(shape, channels, block):
    lay = _layouts(block, i_factor=4)
    in_ch = shape[1] * shape[4] if block else shape[1]
    s = _scale((1, shape[1], 1, 1, shape[4]) if block else (in_ch, 1, 1), -1.0)
    x = relay.var("x", shape=shape)

    def conv(d, w):
        return relay.nn.conv2d(d, w, channels=channels, kernel_size=(3, 3), padding=(1, 1), **lay)

    w0 = _wvar(lay, channels, in_ch)
    before = relay.Function([x, w0], conv(relay.multiply(x, s), w0))
    w = _weight_var(before)
    if block:
        sq = relay.squeeze(s, axis=[0, 2, 3])
        wt = relay.multiply(w, relay.reshape(sq, (1, in_ch // 4, 1, 1, 4, 1)))
    else:
        sq = relay.squeeze(s, axis=[1, 2])
        wt = relay.multiply(w, relay.expand_dims(sq, axis=1, num_newaxis=2))
    _check(before, relay.Function([x, w], conv(x, wt)), transform.ForwardFoldScaleAxis())


@pytest.mark.parametrize("dshape,wshape", [((2, 4), (3, 4)), ((3, 5), (4, 5))])
def test_fwd_dense(dshape, wshape):
    x, w = relay.var("x", shape=dshape), relay.var("weight", shape=wshape)
    bias, s = relay.var("in_bias", shape=(dshape[1],)), _scale((dshape[1],))
    before = relay.Function([x, w, bias], relay.nn.dense(
        relay.add(relay.nn.relu(relay.multiply(x, s)), bias), w))
    expected = relay.Function([x, w, bias], relay.nn.dense(
        relay.add(relay.nn.relu(x), relay.divide(bias, s)), relay.multiply(w, s)))
    _check(before, expected, transform.ForwardFoldScaleAxis())


# ---------------------------------------------------------------------------------- backward


def _bconv(d, w, channels, block):
    return relay.nn.conv2d(d, w, channels=channels, kernel_size=(3, 3), padding=(1, 1),
                           **_layouts(block))


@pytest.mark.parametrize("shape,channels,block", [((2, 4, 10, 10), 8, None),
                                                  ((2, 2, 10, 10, 16), 64, (16, 16))])
def test_bwd_simple(shape, channels, block):
    x, bias = relay.var("x", shape=shape), relay.var("out_bias", shape=(channels,))
    s = _scale((channels,) if block else (channels, 1, 1))
    blocked = (1, channels // block[1], 1, 1, block[1]) if block else None

    def lay_bias():
        return relay.reshape(bias, blocked) if block else relay.expand_dims(bias, 1, 2)

    w0 = _wvar(_layouts(block), channels, shape[1] * (shape[4] if block else 1))
    y = relay.nn.relu(relay.add(_bconv(x, w0, channels, block), lay_bias()))
    before = relay.Function([x, w0, bias],
                            relay.multiply(y, relay.reshape(s, blocked) if block else s))
    w = _weight_var(before)
    if block:
        sq = relay.squeeze(relay.reshape(s, blocked), axis=[0, 2, 3])
        wt = relay.multiply(w, relay.reshape(sq, (channels // block[1], 1, 1, 1, 1, block[1])))
        b = relay.multiply(lay_bias(), relay.reshape(sq, blocked))
    else:
        sq = relay.squeeze(s, axis=[1, 2])
        wt = relay.multiply(w, relay.expand_dims(sq, axis=1, num_newaxis=3))
        b = relay.multiply(lay_bias(), relay.expand_dims(sq, axis=1, num_newaxis=2))
    expected = relay.Function([x, w, bias], relay.nn.relu(relay.add(
        _bconv(x, wt, channels, block), b)))
    _check(before, expected, transform.BackwardFoldScaleAxis())


@pytest.mark.parametrize("shape,channels,block", [((2, 4, 10, 10), 8, None),
                                                  ((2, 2, 10, 10, 2), 8, (2, 2))])
def test_bwd_dual_path(shape, channels, block):
    x = relay.var("x", shape=shape)
    sshape = (channels // block[1], 1, 1, block[1]) if block else (channels, 1, 1)
    bias, s = relay.var("out_bias", shape=(channels,)), _scale(sshape)
    w0 = _wvar(_layouts(block), channels, shape[1] * (shape[4] if block else 1))
    y = relay.add(relay.nn.relu(_bconv(x, w0, channels, block)),
                  relay.nn.relu(_bconv(x, w0, channels, block)))
    before = relay.Function([x, w0, bias], relay.multiply(y, s))
    w = _weight_var(before)
    sq = relay.squeeze(s, axis=[1, 2])  # one squeeze, shared by both weights

    def wt():
        if block:
            return relay.multiply(w, relay.reshape(sq, (channels // block[1], 1, 1, 1, 1,
                                                        block[1])))
        return relay.multiply(w, relay.expand_dims(sq, axis=1, num_newaxis=3))

    expected = relay.Function([x, w, bias], relay.add(
        relay.nn.relu(_bconv(x, wt(), channels, block)),
        relay.nn.relu(_bconv(x, wt(), channels, block))))
    _check(before, expected, transform.BackwardFoldScaleAxis())


@pytest.mark.parametrize("shape,channels,block", [((2, 4, 10, 10), 4, None),
                                                  ((2, 2, 10, 10, 2), 4, (2, 2))])
def test_bwd_dual_consumer(shape, channels, block):
    x = relay.var("x", shape=shape)
    sshape = (channels // block[1], 1, 1, block[1]) if block else (channels, 1, 1)
    bias, s = relay.var("out_bias", shape=(channels,)), _scale(sshape)
    w0 = _wvar(_layouts(block), channels, shape[1] * (shape[4] if block else 1))

    def unit(d, w, scaled):
        c = _bconv(d, w, channels, block)
        return relay.nn.relu(relay.multiply(c, s) if scaled else c)

    y0 = unit(x, w0, True)
    before = relay.Function([x, w0, bias], relay.add(unit(y0, w0, True), unit(y0, w0, True)))
    w = _weight_var(before)

    def wt():
        sq = relay.squeeze(s, axis=[1, 2])  # each multiply squeezes its own scale
        if block:
            return relay.multiply(w, relay.reshape(sq, (channels // block[1], 1, 1, 1, 1,
                                                        block[1])))
        return relay.multiply(w, relay.expand_dims(sq, axis=1, num_newaxis=3))

    e0 = unit(x, wt(), False)
    expected = relay.Function([x, w, bias], relay.add(unit(e0, wt(), False),
                                                      unit(e0, wt(), False)))
    _check(before, expected, transform.BackwardFoldScaleAxis())


@pytest.mark.parametrize("shape,block", [((4, 4, 10, 10), None), ((2, 2, 10, 10, 2), (2, 2))])
def test_bwd_fail_paths_disagree_on_the_axis(shape, block):
    x, w = relay.var("x", shape=shape), _wvar(_layouts(block), 4, 4)
    bias = relay.var("out_bias", shape=(2, 1, 1, 2) if block else (4, 1, 1))
    s = _scale((2, 1, 1, 2) if block else (4, 1, 1))
    y1 = relay.nn.relu(_bconv(x, w, 4, block))
    y2 = relay.nn.relu(relay.nn.conv2d(
        x, w, channels=4, kernel_size=(3, 3), padding=(1, 1),
        out_layout=f"CNHW{block[1]}c" if block else "CNHW", **_layouts(block)))
    _unchanged(relay.Function([x, w, bias], relay.multiply(relay.add(y1, y2), s)),
               transform.BackwardFoldScaleAxis())


@pytest.mark.parametrize("shape,block", [((4, 4, 10, 10), None), ((4, 2, 10, 10, 2), (2, 2))])
def test_bwd_fail_conv_used_twice(shape, block):
    x, w = relay.var("x", shape=shape), _wvar(_layouts(block), 4, 4)
    bias = relay.var("out_bias", shape=(2, 1, 1, 2) if block else (4, 1, 1))
    s = _scale((2, 1, 1, 2) if block else (4, 1, 1))
    y1 = _bconv(x, w, 4, block)
    _unchanged(relay.Function([x, w, bias], relay.add(relay.multiply(y1, s), relay.nn.relu(y1))),
               transform.BackwardFoldScaleAxis())


@pytest.mark.parametrize("shape,block,scale", [
    ((4, 4, 10, 10), None, "var"), ((4, 4, 10, 10), None, "negative"),
    ((4, 2, 10, 10, 2), (2, 2), "var"), ((4, 2, 10, 10, 2), (2, 2), "negative")])
def test_bwd_relu_fail(shape, block, scale):
    sshape = (1, 2, 1, 1, 2) if block else (4, 1, 1)
    s = relay.var("in_scale", shape=sshape) if scale == "var" else _scale(sshape, -1.0)
    x = relay.var("x", shape=shape)
    relay.nn.relu(_bconv(x, relay.var("weight"), 4, block))  # built, then unused (as in TVM)
    y = relay.multiply(x, s)
    _unchanged(relay.Function(relay.analysis.free_vars(y), y), transform.BackwardFoldScaleAxis())


def test_bwd_relu_blocks_a_negative_scale():
    x = relay.var("x", shape=(1, 4, 6, 6))
    c = relay.nn.conv2d(x, relay.var("weight"), channels=4, kernel_size=(3, 3), padding=(1, 1))
    y = relay.multiply(relay.nn.relu(c), _scale((4, 1, 1), -1.0))
    _unchanged(relay.Function(relay.analysis.free_vars(y), y), transform.BackwardFoldScaleAxis())


@pytest.mark.parametrize("shape,channels,block", [((2, 4, 10, 10), 8, None),
                                                  ((2, 2, 10, 10, 2), 8, (2, 2))])
def test_bwd_negative_scale(shape, channels, block):
    x = relay.var("x", shape=shape)
    s = _scale((1, channels // block[1], 1, 1, block[1]) if block else (channels, 1, 1), -1.0)
    w0 = _wvar(_layouts(block), channels, shape[1] * (shape[4] if block else 1))
    before = relay.Function([x, w0], relay.multiply(_bconv(x, w0, channels, block), s))
    w = _weight_var(before)
    if block:
        sq = relay.squeeze(s, axis=[0, 2, 3])
        wt = relay.multiply(w, relay.reshape(sq, (channels // block[1], 1, 1, 1, 1, block[1])))
    else:
        sq = relay.squeeze(s, axis=[1, 2])
        wt = relay.multiply(w, relay.expand_dims(sq, axis=1, num_newaxis=3))
    _check(before, relay.Function([x, w], _bconv(x, wt, channels, block)),
           transform.BackwardFoldScaleAxis())


@pytest.mark.parametrize("dshape,wshape", [((2, 4), (3, 4)), ((3, 5), (4, 5))])
def test_bwd_dense(dshape, wshape):
    x, w = relay.var("x", shape=dshape), relay.var("weight", shape=wshape)
    bias, s = relay.var("in_bias", shape=(wshape[0],)), _scale((wshape[0],))
    before = relay.Function([x, w, bias], relay.multiply(
        relay.nn.relu(relay.add(relay.nn.dense(x, w), bias)), s))
    expected = relay.Function([x, w, bias], relay.nn.relu(relay.add(
        relay.nn.dense(x, relay.multiply(w, relay.expand_dims(s, axis=1))),
        relay.multiply(bias, s))))
    _check(before, expected, transform.BackwardFoldScaleAxis())


def test_bwd_bias_add():
    x, bias = relay.var("x", shape=(2, 4, 10, 10)), relay.var("out_bias", shape=(4,))
    s = _scale((4, 1, 1))
    w0 = relay.var("weight")
    before = relay.Function([x, w0, bias], relay.multiply(
        relay.nn.relu(relay.nn.bias_add(_bconv(x, w0, 4, None), bias)), s))
    w = _weight_var(before)
    sq = relay.squeeze(s, axis=[1, 2])
    wt = relay.multiply(w, relay.expand_dims(sq, axis=1, num_newaxis=3))
    expected = relay.Function([x, w, bias], relay.nn.relu(relay.nn.bias_add(
        _bconv(x, wt, 4, None), relay.multiply(bias, sq))))
    _check(before, expected, transform.BackwardFoldScaleAxis())


def test_bwd_scalar_constant_folds_away_with_fold_scale_axis():
    """multiply by a scalar 2.0 after conv+bias+relu: FoldScaleAxis folds it into constants."""
    rng = np.random.default_rng(3)
    w = relay.const(rng.standard_normal((16, 3, 3, 3)).astype("float32"))
    b = relay.const(rng.standard_normal((16, 1, 1)).astype("float32"))
    data = relay.var("data", shape=(1, 3, 8, 8))

    def body(scaled):
        y = relay.nn.relu(relay.add(relay.nn.conv2d(data, w, kernel_size=(3, 3), channels=16,
                                                    padding=(1, 1)), b))
        return relay.multiply(y, relay.const(2.0)) if scaled else y

    mod = transform.InferType()(tvm.IRModule.from_expr(relay.Function([data], body(True))))
    with tvm.transform.PassContext(opt_level=3):
        out = tvm.transform.Sequential([transform.InferType(), transform.FoldScaleAxis()])(mod)
    body_out = out["main"].body
    assert body_out.op.name == "nn.relu" and isinstance(body_out.args[0].args[1], relay.Constant)
    conv = body_out.args[0].args[0]
    assert isinstance(conv.args[1], relay.Constant)
    np.testing.assert_allclose(conv.args[1].data.numpy(), 2 * w.data.numpy(), rtol=1e-6)
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_bwd_scalar_scale_is_expanded_and_repeated_as_tvm_does():
    x, w0 = relay.var("x", shape=(1, 4, 6, 6)), relay.var("weight")
    two = relay.const(2.0)
    before = relay.Function([x, w0], relay.multiply(_bconv(x, w0, 4, None), two))
    w = _weight_var(before)
    s = relay.repeat(relay.expand_dims(two, 0, 1), 4, 0)
    wt = relay.multiply(w, relay.expand_dims(s, axis=1, num_newaxis=3))
    _check(before, relay.Function([x, w], _bconv(x, wt, 4, None)),
           transform.BackwardFoldScaleAxis())


# ------------------------------------------------------------------------------------ conv3d


def _need_conv3d():
    if not hasattr(relay.nn, "conv3d"):
        pytest.skip("nn.conv3d is not registered in this tree yet")


def test_fwd_conv3d():
    _need_conv3d()
    x, bias = relay.var("x", shape=(2, 4, 6, 6, 6)), relay.var("in_bias", shape=(4, 1, 1, 1))
    s = _scale((4, 1, 1, 1))

    def conv(d, w):
        return relay.nn.conv3d(d, w, channels=2, kernel_size=(3, 3, 3), padding=(1, 1, 1))

    w0 = relay.var("weight")
    before = relay.Function([x, w0, bias], conv(relay.add(relay.nn.relu(relay.multiply(x, s)),
                                                          bias), w0))
    w = _weight_var(before)
    sq = relay.squeeze(s, axis=[1, 2, 3])
    expected = relay.Function([x, w, bias], conv(
        relay.add(relay.nn.relu(x), relay.divide(bias, relay.expand_dims(sq, 1, 3))),
        relay.multiply(w, relay.expand_dims(sq, 1, 3))))
    _check(before, expected, transform.ForwardFoldScaleAxis())


def test_bwd_conv3d():
    _need_conv3d()
    x, bias = relay.var("x", shape=(2, 4, 6, 6, 6)), relay.var("out_bias", shape=(8,))
    s = _scale((8, 1, 1, 1))

    def conv(d, w):
        return relay.nn.conv3d(d, w, channels=8, kernel_size=(3, 3, 3), padding=(1, 1, 1))

    w0 = relay.var("weight")
    before = relay.Function([x, w0, bias], relay.multiply(relay.nn.relu(relay.add(
        conv(x, w0), relay.expand_dims(bias, 1, 3))), s))
    w = _weight_var(before)
    sq = relay.squeeze(s, axis=[1, 2, 3])
    expected = relay.Function([x, w, bias], relay.nn.relu(relay.add(
        conv(x, relay.multiply(w, relay.expand_dims(sq, 1, 4))),
        relay.multiply(relay.expand_dims(bias, 1, 3), relay.expand_dims(sq, 1, 3)))))
    _check(before, expected, transform.BackwardFoldScaleAxis())


# --------------------------------------------------------------------------- scale and safety


def test_forward_long_relu_chain_is_iterative():
    x = relay.var("x", shape=(1, 2, 2, 2))
    e = relay.multiply(x, _scale((2, 1, 1)))
    for _ in range(100_000):
        e = relay.nn.relu(e)
    w = relay.const(np.full((2, 2, 1, 1), 0.7, "float32"))
    f = relay.Function([x], relay.nn.conv2d(e, w))
    out = forward_only(f)
    assert out.body.op.name == "nn.conv2d" and out.body.args[1].op.name == "multiply"


def test_backward_long_relu_chain_is_iterative():
    x = relay.var("x", shape=(1, 2, 2, 2))
    e = relay.nn.conv2d(x, relay.const(np.full((2, 2, 1, 1), 0.7, "float32")))
    for _ in range(100_000):
        e = relay.nn.relu(e)
    f = relay.Function([x], relay.multiply(e, _scale((2, 1, 1))))
    out = tvm.IRModule.from_expr(f)
    out = transform.BackwardFoldScaleAxis()(transform.InferType()(out))["main"]
    assert out.body.op.name == "nn.relu"


def forward_only(f):
    mod = transform.InferType()(tvm.IRModule.from_expr(f))
    return transform.ForwardFoldScaleAxis()(mod)["main"]


def test_untyped_input_is_typed_first():
    x = relay.var("x", shape=(1, 2, 2, 2))
    f = relay.Function([x], relay.multiply(x, _scale((2, 1, 1))))
    # the pass requires InferType and runs it first: the result is typed and unchanged
    out = transform.ForwardFoldScaleAxis()(tvm.IRModule.from_expr(f))["main"]
    tvm.ir.assert_structural_equal(out, _typed(f))


def test_ill_typed_input_names_the_operator():
    x = relay.var("x", shape=(1, 3, 4, 4))
    w = relay.var("weight", shape=(2, 4, 3, 3))  # 4 input channels for 3-channel data
    f = relay.Function([x, w], relay.multiply(relay.nn.conv2d(x, w), _scale((2, 1, 1))))
    with pytest.raises(Exception, match="conv2d"):
        transform.BackwardFoldScaleAxis()(tvm.IRModule.from_expr(f))


def test_dense_with_3d_data_is_left_alone():
    """TVM assumes dense's channel axis is 1 and would scale the weight by the wrong axis."""
    x, w = relay.var("x", shape=(2, 4, 4)), relay.var("weight", shape=(3, 4))
    f = relay.Function([x, w], relay.nn.dense(relay.multiply(x, _scale((4, 1))), w))
    _unchanged(f, transform.ForwardFoldScaleAxis())
