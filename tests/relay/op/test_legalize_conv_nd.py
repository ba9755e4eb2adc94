"""The Legalize rules of ``relay.op.nn._legalize_conv_nd``: conv1d as a conv2d over one row, and
a strided transposed conv as one ``nn.conv2d`` per output phase, interleaved by stack + reshape.
The built kernels are native and match the ops' definitions; the cases left alone keep the op.
Grouped and dilated transposed convs: test_conv_transpose_grouped_dilated.py."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.expr import Call
from minitvm.relay.expr_functor import dataflow_post_order


def _mod(shape, wshape, **kw):
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=wshape)
    y = relay.nn.relu(relay.nn.conv2d_transpose(x, w, **kw))
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))


def _built_output(mod, x, w):
    """``mod`` built at opt_level 3 with the constant weight ``w`` (no numpy kernel left), run
    on ``x``."""
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params={"w": w})
    assert not lib.get_lib().fallback_functions
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    return g.get_output(0).numpy()


def _ops(expr) -> list[str]:
    return [e.op.name for e in dataflow_post_order(expr) if isinstance(e, Call)]


def _transposed_conv(x, w, stride, pad, out_pad=(0, 0)):
    """The definition: every input pixel scatters ``w[c, o]`` onto the output (float64);
    ``pad`` is (top, left) or (top, left, bottom, right)."""
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    sh, sw = stride
    pad = tuple(pad) * (2 if len(pad) == 2 else 1)
    oh = (h - 1) * sh - pad[0] - pad[2] + kh + out_pad[0]
    ow = (wd - 1) * sw - pad[1] - pad[3] + kw + out_pad[1]
    full = np.zeros((n, o, (h - 1) * sh + kh + out_pad[0], (wd - 1) * sw + kw + out_pad[1]))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw] += np.einsum(
                "nc,cokl->nokl", x[:, :, i, j].astype(np.float64), w.astype(np.float64))
    return full[:, :, pad[0]:pad[0] + oh, pad[1]:pad[1] + ow]


def test_dcgan_layer_becomes_four_convs_interleaved():
    # DCGAN's 4x4 stride-2 padding-1 layer: each output phase reads a 2x2 slice of the filter
    mod = _mod((1, 16, 8, 8), (16, 8, 4, 4), strides=(2, 2), padding=(1, 1))
    out = relay.transform.Legalize()(mod)["main"]
    ops = _ops(out.body)
    assert "nn.conv2d_transpose" not in ops
    assert ops.count("nn.conv2d") == 4 and ops.count("stack") == 3
    convs = [e for e in dataflow_post_order(out.body)
             if isinstance(e, Call) and e.op.name == "nn.conv2d"]
    assert {tuple(int(k) for k in c.attrs.kernel_size) for c in convs} == {(2, 2)}
    assert sorted(tuple(int(p) for p in c.attrs.padding) for c in convs) == [
        (0, 0, 1, 1), (0, 1, 1, 0), (1, 0, 0, 1), (1, 1, 0, 0)]
    assert out.checked_type == mod["main"].checked_type


@pytest.mark.parametrize("shape,wshape,kw", [
    ((1, 16, 8, 8), (16, 8, 4, 4), dict(strides=(2, 2), padding=(1, 1))),  # DCGAN
    ((2, 6, 7, 5), (6, 4, 3, 3), dict(strides=(2, 2), padding=(1, 1), output_padding=(1, 1))),
    ((1, 5, 6, 4), (5, 3, 5, 3), dict(strides=(3, 1), padding=(1, 0))),  # taps differ per phase
    ((1, 4, 5, 5), (4, 6, 3, 3), dict(strides=(1, 1), padding=(1, 1))),  # one phase: a conv
    ((1, 3, 4, 6), (3, 2, 2, 2), dict(strides=(2, 2), padding=(0, 0))),  # no overlap
    ((1, 3, 5, 6), (3, 4, 4, 3), dict(strides=(2, 2), padding=(2, 0, 1, 0),
                                      output_padding=(1, 1))),  # asymmetric padding
])
def test_built_matches_the_definition(shape, wshape, kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype("float32")
    w = rng.standard_normal(wshape).astype("float32")
    mod = _mod(shape, wshape, **kw)
    assert "nn.conv2d_transpose" not in _ops(relay.transform.Legalize()(mod)["main"].body)
    want = np.maximum(_transposed_conv(x, w, kw["strides"], kw["padding"],
                                       kw.get("output_padding", (0, 0))), 0)
    np.testing.assert_allclose(_built_output(mod, x, w), want, rtol=1e-4, atol=1e-4)


def test_weights_given_at_run_time_are_sliced_per_call():
    # not a constant: the filter slices stay take/transpose calls in the graph
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 4, 5, 5)).astype("float32")
    w = rng.standard_normal((4, 3, 4, 4)).astype("float32")
    mod = _mod((1, 4, 5, 5), (4, 3, 4, 4), strides=(2, 2), padding=(1, 1))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.set_input("w", w)
    g.run()
    want = np.maximum(_transposed_conv(x, w, (2, 2), (1, 1)), 0)
    np.testing.assert_allclose(g.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


def test_other_layouts_keep_the_op():
    # grouped, dilated, zero or unequal phases and padding past the filter are legalized too:
    # test_conv_transpose_grouped_dilated.py
    x = relay.var("x", shape=(1, 5, 5, 4))
    w = relay.var("w", shape=(3, 3, 6, 4))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], (
        relay.nn.conv2d_transpose(x, w, strides=(2, 2), channels=6, data_layout="NHWC",
                                  kernel_layout="HWOI")))))
    assert "nn.conv2d_transpose" in _ops(relay.transform.Legalize()(mod)["main"].body)


def test_symbolic_spatial_size_keeps_the_op():
    # (a symbolic batch alone legalizes: tests/relay/op/test_conv_transpose_symbolic_batch.py)
    x = relay.var("x", shape=(relay.Any(), 4, relay.Any(), 5))
    w = relay.var("w", shape=(4, 3, 4, 4))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d_transpose(x, w, strides=(2, 2), padding=(1, 1)))))
    assert "nn.conv2d_transpose" in _ops(relay.transform.Legalize()(mod)["main"].body)


# ------------------------------------------------------------------------------ conv1d
@pytest.mark.parametrize("kw", [dict(), dict(strides=2, padding=1),
                                dict(padding=(2, 1), dilation=2), dict(groups=4, padding=1)])
def test_conv1d_is_a_conv2d_over_one_row(kw):
    rng = np.random.default_rng(2)
    groups = kw.get("groups", 1)
    x = rng.standard_normal((2, 8, 50)).astype("float32")
    w = rng.standard_normal((12, 8 // groups, 3)).astype("float32")
    xv, wv = relay.var("x", shape=x.shape), relay.var("w", shape=w.shape)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [xv, wv], relay.nn.relu(relay.nn.conv1d(xv, wv, **kw)))))
    legal = relay.transform.Legalize()(mod)["main"]
    assert _ops(legal.body) == ["expand_dims", "expand_dims", "nn.conv2d", "squeeze", "nn.relu"]
    assert legal.checked_type == mod["main"].checked_type
    got = _built_output(mod, x, w)
    # the definition, in float64: out[n, o, i] = sum w[o, c, k] * x_padded[n, g(o)*C/g + c,
    # i*stride + k*dilation]
    s, d = kw.get("strides", 1), kw.get("dilation", 1)
    pad = kw.get("padding", 0)
    left, right = (pad, pad) if isinstance(pad, int) else pad
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (left, right)))
    width = (xp.shape[2] - d * 2 - 1) // s + 1
    cg, og = 8 // groups, 12 // groups
    want = np.zeros((2, 12, width))
    for o in range(12):
        c0 = (o // og) * cg
        for k in range(3):
            taps = xp[:, c0:c0 + cg, k * d:k * d + s * (width - 1) + 1:s]
            want[:, o] += np.einsum("ncw,c->nw", taps, w[o, :, k].astype(np.float64))
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-4, atol=1e-4)


def test_conv1d_in_another_layout_keeps_the_op():
    x = relay.var("x", shape=(1, 50, 8))
    w = relay.var("w", shape=(3, 8, 12))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.conv1d(
        x, w, data_layout="NWC", kernel_layout="WIO"))))
    assert "nn.conv1d" in _ops(relay.transform.Legalize()(mod)["main"].body)


@pytest.mark.parametrize("shape,wshape,kw", [
    ((1, 8, 20), (8, 4, 16), dict(strides=(8,), padding=(4,))),  # vocoder upsampling layer
    ((2, 4, 7), (4, 3, 3), dict(strides=(2,), padding=(1,), output_padding=(1,))),
    ((1, 6, 9), (6, 2, 4), dict(strides=(3,), padding=(2,), groups=3)),
    ((1, 3, 6), (3, 5, 3), dict(strides=(2,), dilation=(2,))),
    ((1, 3, 6), (3, 5, 3), dict()),  # stride 1: one phase
])
def test_conv1d_transpose_becomes_phase_convs_and_matches_the_reference(shape, wshape, kw):
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=wshape)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x, w], relay.nn.conv1d_transpose(x, w, **kw))))
    legal = relay.transform.Legalize()(mod)["main"]
    assert "nn.conv1d_transpose" not in _ops(legal.body)
    assert "nn.conv2d_transpose" not in _ops(legal.body)
    assert legal.checked_type == mod["main"].checked_type
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(shape).astype("float32")
    wv = rng.standard_normal(wshape).astype("float32")
    with tvm.transform.PassContext(opt_level=0):
        ref = relay.create_executor("debug", mod, target="llvm").evaluate()(xv, wv).numpy()
    np.testing.assert_allclose(_built_output(mod, xv, wv), ref, rtol=1e-4, atol=1e-4)


def test_conv1d_transpose_in_another_layout_is_kept():
    x = relay.var("x", shape=(1, 6, 3))
    w = relay.var("w", shape=(3, 3, 2))
    y = relay.nn.conv1d_transpose(x, w, strides=(2,), data_layout="NWC", kernel_layout="WIO")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))
    assert tvm.ir.structural_equal(relay.transform.Legalize()(mod), mod)


def _conv3d_reference(x, w, stride, pad, dil, groups):
    """The definition of a grouped NCDHW conv3d, in float64."""
    n, c, d, h, wd = x.shape
    o, cg, kd, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0)) + tuple((p, p) for p in pad))
    out = [(s + 2 * p - q * (k - 1) - 1) // st + 1
           for s, p, q, k, st in zip((d, h, wd), pad, dil, (kd, kh, kw), stride)]
    y = np.zeros((n, o, *out))
    og = o // groups
    for a in range(kd):
        for b in range(kh):
            for e in range(kw):
                win = xp[:, :, a * dil[0]::stride[0], b * dil[1]::stride[1],
                         e * dil[2]::stride[2]][:, :, :out[0], :out[1], :out[2]]
                for g in range(groups):
                    y[:, g * og:(g + 1) * og] += np.einsum(
                        "ncdhw,oc->nodhw", win[:, g * cg:(g + 1) * cg],
                        w[g * og:(g + 1) * og, :, a, b, e].astype(np.float64))
    return y


@pytest.mark.parametrize("c,o,groups,stride,dil", [(6, 6, 6, (1, 2, 2), (1, 1, 1)),
                                                   (4, 6, 2, (2, 1, 1), (2, 1, 1)),
                                                   (6, 12, 6, (1, 1, 1), (1, 1, 1))])
def test_grouped_conv3d_is_a_grouped_conv2d_over_folded_depth(c, o, groups, stride, dil):
    """X3D's depthwise 3x3x3 (and any grouped conv3d): each group's channels fold with the depth
    taps into contiguous conv2d channels, so one conv2d of as many groups computes it."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, c, 6, 7, 6)).astype("float32")
    w = rng.standard_normal((o, c // groups, 3, 3, 3)).astype("float32")
    xv, wv = relay.var("x", shape=x.shape), relay.var("w", shape=w.shape)
    y = relay.nn.conv3d(xv, wv, strides=stride, padding=(1, 1, 1), dilation=dil, groups=groups,
                        channels=o, kernel_size=(3, 3, 3))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([xv, wv], y)))
    with tvm.transform.PassContext(opt_level=3):
        legal = relay.transform.Legalize()(mod)
    ops = _ops(legal["main"].body)
    assert "nn.conv3d" not in ops and "nn.conv2d" in ops
    np.testing.assert_allclose(_built_output(mod, x, w),
                               _conv3d_reference(x, w, stride, (1, 1, 1), dil, groups),
                               rtol=1e-4, atol=1e-4)
