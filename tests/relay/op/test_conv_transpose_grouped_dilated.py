"""Legalize of grouped (and depthwise) and dilated ``nn.conv2d_transpose``: one grouped or
dilated ``nn.conv2d`` per output phase, with zero phases, cropped unequal phases and cropped
input where padding reaches past the filter. Built kernels are native and match the op's
definition."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.expr import Call
from minitvm.relay.expr_functor import dataflow_post_order
from minitvm.topi.conv_transpose_phases import phases, regroup_weight


def _reference(x, w, strides, padding, output_padding=(0, 0), dilation=(1, 1), groups=1):
    """The definition in float64: every input pixel of group ``g`` scatters ``w[c, :]`` onto
    that group's output channels at the dilated taps; ``padding`` is (top, left, bottom,
    right), cropped from the full result."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (dh, dw), cg = strides, dilation, c // groups
    full = np.zeros((n, og * groups, (h - 1) * sh + dh * (kh - 1) + 1 + output_padding[0],
                     (wd - 1) * sw + dw * (kw - 1) + 1 + output_padding[1]))
    x, w = x.astype(np.float64), w.astype(np.float64)
    for g in range(groups):
        ins, outs = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
        for ky in range(kh):
            for kx in range(kw):
                contrib = np.einsum("nchw,co->nohw", x[:, ins], w[ins, :, ky, kx])
                full[:, outs, ky * dh:ky * dh + (h - 1) * sh + 1:sh,
                     kx * dw:kx * dw + (wd - 1) * sw + 1:sw] += contrib
    top, left, bottom, right = padding
    return full[:, :, top:full.shape[2] - bottom, left:full.shape[3] - right]


def _mod(shape, wshape, **kw):
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=wshape)
    y = relay.nn.conv2d_transpose(x, w, **kw)
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))


def _ops(expr) -> list[str]:
    return [e.op.name for e in dataflow_post_order(expr) if isinstance(e, Call)]


def _built_output(mod, x, w, constant_weight=True):
    """``mod`` built at opt_level 3 (every kernel native), run on ``x`` (and ``w``)."""
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params={"w": w} if constant_weight else None)
    kinds = {name: k.kind for name, k in lib.get_lib().kernels.items()}
    assert set(kinds.values()) == {"native"}, kinds
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    if not constant_weight:
        g.set_input("w", w)
    g.run()
    return g.get_output(0).numpy()


# (data shape, weight shape, attrs); padding is (top, left, bottom, right)
CASES = [
    # the survey's 4-group 4x4 stride-2 layer, smaller
    ((1, 16, 6, 6), (16, 4, 4, 4), dict(strides=(2, 2), padding=(1, 1, 1, 1), groups=4)),
    # depthwise, one output channel per input (MobileNet-style upsampling)
    ((1, 8, 5, 7), (8, 1, 3, 3), dict(strides=(2, 2), padding=(1, 1, 1, 1),
                                      output_padding=(1, 1), groups=8)),
    # depthwise with a channel multiplier of 2
    ((2, 4, 5, 4), (4, 2, 4, 3), dict(strides=(2, 1), padding=(1, 1, 1, 1), groups=4)),
    ((1, 6, 7, 5), (6, 2, 3, 3), dict(strides=(2, 1), padding=(0, 1, 0, 1), groups=3)),
    # the survey's 3x3 dilation-2 layer at stride 1: one dilated conv
    ((1, 4, 6, 6), (4, 5, 3, 3), dict(strides=(1, 1), padding=(2, 2, 2, 2), dilation=(2, 2))),
    ((1, 4, 6, 6), (4, 5, 3, 3), dict(strides=(1, 1), padding=(1, 1, 1, 1), dilation=(2, 2))),
    # stride 2, dilation 2: the odd phases get no tap (zeros); 13 rows: unequal phases
    ((1, 3, 5, 6), (3, 4, 3, 3), dict(strides=(2, 2), padding=(1, 1, 1, 1), dilation=(2, 2))),
    # stride 2, dilation 3 (coprime): every phase a conv of dilation 3
    ((1, 3, 5, 4), (3, 2, 4, 3), dict(strides=(2, 2), padding=(2, 1, 2, 1), dilation=(3, 3),
                                      output_padding=(1, 2))),
    ((1, 4, 6, 5), (4, 6, 3, 2), dict(strides=(3, 2), padding=(2, 0, 1, 1), dilation=(2, 3),
                                      groups=2, output_padding=(2, 1))),
    ((1, 8, 4, 4), (8, 2, 3, 3), dict(strides=(2, 2), padding=(2, 2, 2, 2), dilation=(2, 2),
                                      groups=4, output_padding=(1, 1))),
    # no groups, no dilation, cases that kept the op before: a phase with no tap, 13 rows,
    # padding past the filter (the input is cropped)
    ((1, 4, 6, 6), (4, 5, 1, 1), dict(strides=(2, 2), padding=(0, 0, 0, 0))),
    ((1, 4, 6, 6), (4, 5, 3, 3), dict(strides=(2, 2), padding=(0, 0, 0, 0))),
    ((1, 4, 6, 6), (4, 5, 3, 3), dict(strides=(1, 1), padding=(3, 3, 3, 3))),
    ((1, 4, 7, 6), (4, 2, 2, 3), dict(strides=(3, 3), padding=(3, 0, 1, 4), groups=2)),
]


@pytest.mark.parametrize("shape,wshape,kw", CASES)
def test_built_matches_the_definition(shape, wshape, kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype("float32")
    w = rng.standard_normal(wshape).astype("float32")
    mod = _mod(shape, wshape, **kw)
    legal = relay.transform.Legalize()(mod)["main"]
    assert "nn.conv2d_transpose" not in _ops(legal.body)
    assert legal.checked_type == mod["main"].checked_type
    want = _reference(x, w, kw["strides"], kw["padding"], kw.get("output_padding", (0, 0)),
                      kw.get("dilation", (1, 1)), kw.get("groups", 1))
    np.testing.assert_allclose(_built_output(mod, x, w), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,wshape,kw", [CASES[0], CASES[2], CASES[8]])
def test_weights_given_at_run_time(shape, wshape, kw):
    # the filter slices and their regrouping run in the graph
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype("float32")
    w = rng.standard_normal(wshape).astype("float32")
    got = _built_output(_mod(shape, wshape, **kw), x, w, constant_weight=False)
    want = _reference(x, w, kw["strides"], kw["padding"], kw.get("output_padding", (0, 0)),
                      kw.get("dilation", (1, 1)), kw.get("groups", 1))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_reference_agrees_with_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 6, 5, 4)).astype("float32")
    w = rng.standard_normal((6, 2, 3, 2)).astype("float32")
    want = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), torch.from_numpy(w), stride=(2, 3), padding=(1, 1),
        output_padding=(1, 0), groups=3, dilation=(2, 1)).numpy()
    got = _reference(x, w, (2, 3), (1, 1, 1, 1), (1, 0), (2, 1), 3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_grouped_layer_is_the_expected_program():
    # 2 groups of 2 -> 3 channels, 2x2 stride 2: four 1x1 grouped convs, each reading one tap
    # of the filter regrouped from (in, out/groups) to (out, in/groups), interleaved
    mod = _mod((1, 4, 3, 3), (4, 3, 2, 2), strides=(2, 2), groups=2, channels=6,
               kernel_size=(2, 2))
    got = relay.transform.Legalize()(mod)

    x = relay.var("x", shape=(1, 4, 3, 3))
    w = relay.var("w", shape=(4, 3, 2, 2))

    def phase(ky, kx):
        k = relay.take(relay.take(w, relay.const(np.array([ky], "int32")), axis=2),
                       relay.const(np.array([kx], "int32")), axis=3)
        k = relay.reshape(relay.transpose(relay.reshape(k, (2, 2, 3, 1, 1)), (0, 2, 1, 3, 4)),
                          (6, 2, 1, 1))
        return relay.nn.conv2d(x, k, padding=(0, 0, 0, 0), groups=2, channels=6,
                               kernel_size=(1, 1))

    lines = [relay.reshape(relay.stack([phase(ky, kx) for kx in (0, 1)], axis=4), (1, 6, 3, 6))
             for ky in (0, 1)]
    body = relay.reshape(relay.stack(lines, axis=3), (1, 6, 6, 6))
    want = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], body)))
    assert tvm.ir.structural_equal(got["main"], want["main"])


def test_dilated_strided_layer_has_zero_phases_and_a_crop():
    # stride 2, dilation 2, padding 1: the rows and columns of odd (r + padding) get no tap
    mod = _mod((1, 3, 5, 6), (3, 4, 3, 3), strides=(2, 2), padding=(1, 1), dilation=(2, 2))
    body = relay.transform.Legalize()(mod)["main"].body
    ops = _ops(body)
    assert ops.count("nn.conv2d") == 1 and ops.count("zeros") == 3
    assert body.op.name == "strided_slice"  # 11 x 13 out of 12 x 14
    conv = next(e for e in dataflow_post_order(body)
                if isinstance(e, Call) and e.op.name == "nn.conv2d")
    assert [int(d) for d in conv.attrs.dilation] == [1, 1]
    assert [int(k) for k in conv.attrs.kernel_size] == [3, 3]


def test_coprime_stride_and_dilation_give_dilated_phases():
    # stride 2, dilation 3: each row phase reads 2 of the 4 filter rows, 3 input rows apart;
    # the column phases read 1 or 2 of the 3 filter columns
    mod = _mod((1, 3, 5, 4), (3, 2, 4, 3), strides=(2, 2), padding=(2, 1), dilation=(3, 3))
    convs = [e for e in dataflow_post_order(relay.transform.Legalize()(mod)["main"].body)
             if isinstance(e, Call) and e.op.name == "nn.conv2d"]
    assert sorted((tuple(int(k) for k in c.attrs.kernel_size),
                   tuple(int(d) for d in c.attrs.dilation)) for c in convs) == [
        ((2, 1), (3, 1)), ((2, 1), (3, 1)), ((2, 2), (3, 3)), ((2, 2), (3, 3))]


def test_phases_of_one_axis():
    # stride 2, dilation 2, kernel 3, padding 1, 5 -> 11 rows: phase 0 has no tap, phase 1
    # every tap, flipped, over 6 rows (the last cropped)
    assert phases(2, 1, 3, 5, 11, dilation=2) == [([], 0, 0), ([2, 1, 0], 1, 2)]
    # padding 3 past the 3-tap filter, 6 -> 2 rows: the phase's conv crops a row at each end
    assert phases(1, 3, 3, 6, 2) == [([2, 1, 0], -1, -1)]


def test_regroup_weight():
    w = np.arange(4 * 3 * 2 * 2, dtype="float32").reshape(4, 3, 2, 2)
    r = regroup_weight(w, 2)
    assert r.shape == (6, 2, 2, 2)
    for g in range(2):
        for j in range(3):
            for c in range(2):
                np.testing.assert_array_equal(r[g * 3 + j, c], w[g * 2 + c, j])


def test_other_layouts_and_symbolic_shapes_keep_the_op():
    x = relay.var("x", shape=(1, 5, 5, 4))
    w = relay.var("w", shape=(3, 3, 2, 4))
    nhwc = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], (
        relay.nn.conv2d_transpose(x, w, strides=(2, 2), groups=2, channels=4,
                                  data_layout="NHWC", kernel_layout="HWOI")))))
    assert "nn.conv2d_transpose" in _ops(relay.transform.Legalize()(nhwc)["main"].body)
    x = relay.var("x", shape=(relay.Any(), 4, relay.Any(), 5))  # a symbolic spatial size
    w = relay.var("w", shape=(4, 1, 3, 3))
    dyn = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], (
        relay.nn.conv2d_transpose(x, w, strides=(2, 2), groups=4, dilation=(2, 2))))))
    assert "nn.conv2d_transpose" in _ops(relay.transform.Legalize()(dyn)["main"].body)
