"""LegalizeOps of ``relax.op.nn``: convolutions, pooling, activations, softmax, the norms,
dropout, pad and attention, against numpy references."""

import math

import numpy as np
import pytest
from legalize_util import check, rand, sym, tensor

from minitvm.relax import op as R
from minitvm.relax.op import nn


def conv2d_ref(x, w, stride=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1), groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (xp.shape[2] - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (xp.shape[3] - (kw - 1) * dil[1] - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), "float64")
    og = o // groups
    for oc in range(o):
        g = oc // og
        for ky in range(kh):
            for kx in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg,
                           ky * dil[0]:ky * dil[0] + stride[0] * (oh - 1) + 1:stride[0],
                           kx * dil[1]:kx * dil[1] + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, ky, kx])
    return out.astype("float32")


@pytest.mark.parametrize("stride,pad,dil,groups", [
    ((1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 1), (1, 2, 0, 1), (1, 1), 1),
    ((1, 2), (1, 1, 1, 1), (2, 1), 2),
])
def test_conv2d_nchw(stride, pad, dil, groups):
    x, w = rand((2, 4, 7, 6)), rand((6, 4 // groups, 3, 2))
    check(lambda a, b: nn.conv2d(a, b, stride, pad, dil, groups),
          [tensor(x.shape), tensor(w.shape)], [x, w],
          conv2d_ref(x, w, stride, pad, dil, groups), rtol=1e-4, atol=1e-4)


def test_conv2d_nhwc_hwio_and_symbolic_batch():
    x, w = rand((2, 4, 7, 6)), rand((6, 4, 3, 3))
    ref = conv2d_ref(x, w, pad=(1, 1, 1, 1))
    check(lambda a, b: nn.conv2d(a, b, padding=1, data_layout="NHWC", kernel_layout="HWIO"),
          [tensor((2, 7, 6, 4)), tensor((3, 3, 4, 6))],
          [x.transpose(0, 2, 3, 1).copy(), w.transpose(2, 3, 1, 0).copy()],
          ref.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    (n,) = sym("n")
    check(nn.conv2d, [tensor([n, 4, 7, 6]), tensor(w.shape)], [x, w], conv2d_ref(x, w),
          rtol=1e-4, atol=1e-4)


def test_packed_layout_left_as_call():
    import warnings

    from legalize_util import bindings, one_op_module

    from minitvm.relax.transform import LegalizeOps

    mod = one_op_module(lambda a, b: nn.conv2d_transpose(a, b, data_layout="NHWC"),
                        [tensor((1, 5, 5, 3)), tensor((3, 2, 3, 3))])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        after = LegalizeOps()(mod)
    assert any("left as it is" in str(x.message) for x in w)
    assert bindings(after["main"])[0].value.op.name == "relax.nn.conv2d_transpose"


def test_conv1d():
    x, w = rand((2, 3, 9)), rand((5, 3, 3))
    ref = conv2d_ref(x[:, :, None, :], w[:, :, None, :], (1, 2), (0, 1, 0, 1))[:, :, 0]
    check(lambda a, b: nn.conv1d(a, b, strides=2, padding=1), [tensor(x.shape), tensor(w.shape)],
          [x, w], ref, rtol=1e-4, atol=1e-4)


def conv2d_transpose_ref(x, w, stride, pad, out_pad):
    n, ci, h, wd = x.shape
    _, co, kh, kw = w.shape
    oh = (h - 1) * stride[0] + kh
    ow = (wd - 1) * stride[1] + kw
    full = np.zeros((n, co, oh + out_pad[0], ow + out_pad[1]))
    for y in range(h):
        for xx in range(wd):
            full[:, :, y * stride[0]:y * stride[0] + kh, xx * stride[1]:xx * stride[1] + kw] += \
                np.einsum("nc,cokl->nokl", x[:, :, y, xx], w)
    return full[:, :, pad[0]:full.shape[2] - pad[2], pad[1]:full.shape[3] - pad[3]] \
        .astype("float32")


def test_conv2d_transpose():
    x, w = rand((1, 3, 4, 5)), rand((3, 2, 3, 3))
    check(lambda a, b: nn.conv2d_transpose(a, b, strides=2, padding=1, output_padding=1),
          [tensor(x.shape), tensor(w.shape)], [x, w],
          conv2d_transpose_ref(x, w, (2, 2), (1, 1, 1, 1), (1, 1)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,wshape,stride,pad,out_pad", [
    ((1, 6, 4, 4), (6, 5, 4, 4), (2, 2), (1, 1, 1, 1), (0, 0)),  # DCGAN's layer
    ((1, 3, 5, 6), (3, 4, 4, 3), (2, 2), (2, 0, 1, 0), (1, 1)),  # asymmetric padding
    ((1, 2, 4, 4), (2, 3, 5, 3), (3, 1), (1, 0, 1, 0), (0, 0)),  # taps differ per phase
])
def test_strided_conv2d_transpose_is_a_conv2d_per_phase(shape, wshape, stride, pad, out_pad):
    # one conv2d PrimFunc per output phase (no gather), stacked and reshaped into place
    from legalize_util import bindings, one_op_module, run_legalized

    from minitvm.relax.transform import LegalizeOps

    x, w = rand(shape), rand(wshape)
    mod = one_op_module(lambda a, b: nn.conv2d_transpose(a, b, strides=stride, padding=pad,
                                                         output_padding=out_pad),
                        [tensor(x.shape), tensor(w.shape)])
    after = LegalizeOps()(mod)
    called = [str(b.value.args[0].name_hint) for b in bindings(after["main"])
              if getattr(b.value, "op", None) is not None and
              getattr(b.value.op, "name", "") == "relax.call_tir"]
    assert sum(f.startswith("conv2d") for f in called) == stride[0] * stride[1]
    assert not any(f.startswith("conv2d_transpose") for f in called)
    assert any(f.startswith("stack") for f in called)
    got = run_legalized(after, [x, w])
    np.testing.assert_allclose(got, conv2d_transpose_ref(x, w, stride, pad, out_pad),
                               rtol=1e-4, atol=1e-4)


def test_constant_weight_is_sliced_at_legalization():
    # the phases' filters are constants: no take / permute_dims left to run per call
    from legalize_util import bindings, one_op_module, run_legalized

    from minitvm import relax
    from minitvm.relax.transform import LegalizeOps

    x, w = rand((1, 6, 4, 4)), rand((6, 5, 4, 4))
    mod = one_op_module(lambda a: nn.conv2d_transpose(a, relax.const(w), strides=2, padding=1),
                        [tensor(x.shape)])
    after = LegalizeOps()(mod)
    called = [str(b.value.args[0].name_hint) for b in bindings(after["main"])
              if getattr(getattr(b.value, "op", None), "name", "") == "relax.call_tir"]
    assert sorted(f.rstrip("0123456789") for f in called) == ["conv2d"] * 4 + ["reshape"] * 3 + \
        ["stack"] * 3
    got = run_legalized(after, [x])
    np.testing.assert_allclose(got, conv2d_transpose_ref(x, w, (2, 2), (1, 1, 1, 1), (0, 0)),
                               rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_of_unequal_phases_is_cropped():
    # 4 -> 9 rows at stride 2: phases of 5 and 4 rows, both computed over 5 and cropped
    from legalize_util import one_op_module

    from minitvm.relax.transform import LegalizeOps

    x, w = rand((1, 3, 4, 4)), rand((3, 2, 3, 3))
    mod = one_op_module(lambda a, b: nn.conv2d_transpose(a, b, strides=2),
                        [tensor(x.shape), tensor(w.shape)])
    funcs = [str(gv.name_hint) for gv in LegalizeOps()(mod).get_global_vars()]
    assert "conv2d_transpose" not in funcs and "strided_slice" in funcs
    check(lambda a, b: nn.conv2d_transpose(a, b, strides=2),
          [tensor(x.shape), tensor(w.shape)], [x, w],
          conv2d_transpose_ref(x, w, (2, 2), (0, 0, 0, 0), (0, 0)), rtol=1e-4, atol=1e-4)


def test_conv1d_transpose_groups():
    x, w = rand((2, 4, 5)), rand((4, 3, 3))
    # two groups: input channels 0-1 -> outputs 0-2, 2-3 -> outputs 3-5
    parts = [conv2d_transpose_ref(x[:, 2 * g:2 * g + 2, None, :], w[2 * g:2 * g + 2, :, None, :],
                                  (1, 2), (0, 1, 0, 1), (0, 0))[:, :, 0] for g in range(2)]
    check(lambda a, b: nn.conv1d_transpose(a, b, strides=2, padding=1, groups=2),
          [tensor(x.shape), tensor(w.shape)], [x, w], np.concatenate(parts, 1), rtol=1e-4,
          atol=1e-4)


def pool_ref(x, kind, k, s, p, include_pad=False):
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])), constant_values=fill)
    ones = np.pad(np.ones((h, w)), ((p[0], p[2]), (p[1], p[3])))
    oh = (xp.shape[2] - k[0]) // s[0] + 1
    ow = (xp.shape[3] - k[1]) // s[1] + 1
    out = np.zeros((n, c, oh, ow), "float32")
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]]
            if kind == "max":
                out[:, :, i, j] = win.max((2, 3))
            else:
                cnt = k[0] * k[1] if include_pad else \
                    ones[i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].sum()
                out[:, :, i, j] = win.sum((2, 3)) / cnt
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("include_pad", [False, True])
def test_pool2d(kind, include_pad):
    x = rand((2, 3, 7, 8))
    op = nn.max_pool2d if kind == "max" else nn.avg_pool2d
    check(lambda a: op(a, (3, 2), (2, 2), (1, 1, 1, 0), count_include_pad=include_pad),
          [tensor(x.shape)], [x], pool_ref(x, kind, (3, 2), (2, 2), (1, 1, 1, 0), include_pad),
          rtol=1e-5, atol=1e-5)


def test_adaptive_avg_pool2d():
    x = rand((2, 3, 7, 5))
    out = np.zeros((2, 3, 3, 2), "float32")
    for i in range(3):
        for j in range(2):
            h0, h1 = (i * 7) // 3, -(-((i + 1) * 7) // 3)
            w0, w1 = (j * 5) // 2, -(-((j + 1) * 5) // 2)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean((2, 3))
    check(lambda a: nn.adaptive_avg_pool2d(a, (3, 2)), [tensor(x.shape)], [x], out, rtol=1e-5)
    check(lambda a: nn.adaptive_avg_pool2d(a, 1), [tensor(x.shape)], [x],
          x.mean((2, 3), keepdims=True), rtol=1e-5)


def _erf(a):
    return np.vectorize(math.erf)(a)


ACTS = {
    "relu": lambda a: np.maximum(a, 0),
    "relu6": lambda a: np.clip(a, 0, 6),
    "silu": lambda a: a / (1 + np.exp(-a)),
    "gelu": lambda a: 0.5 * a * (1 + _erf(a / math.sqrt(2))),
    "gelu_tanh": lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                                  (a + 0.044715 * a ** 3))),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activations(name):
    (n,) = sym("n")
    a = rand((5, 3), lo=-8, hi=8)
    check(getattr(nn, name), [tensor([n, 3])], [a], ACTS[name](a).astype("float32"),
          rtol=1e-4, atol=1e-5)
    check(lambda x: nn.leakyrelu(x, 0.1), [tensor(a.shape)], [a], np.where(a > 0, a, 0.1 * a))


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_log_softmax(axis):
    a = rand((3, 4, 5), lo=-5, hi=5)
    e = np.exp(a - a.max(axis, keepdims=True))
    sm = e / e.sum(axis, keepdims=True)
    check(lambda x: nn.softmax(x, axis), [tensor(a.shape)], [a], sm, rtol=1e-5, atol=1e-6)
    check(lambda x: nn.log_softmax(x, axis), [tensor(a.shape)], [a], np.log(sm), rtol=1e-4,
          atol=1e-5)


def test_softmax_symbolic():
    (n,) = sym("n")
    for rows in (1, 6):
        a = rand((rows, 10))
        e = np.exp(a - a.max(1, keepdims=True))
        check(nn.softmax, [tensor([n, 10])], [a], e / e.sum(1, keepdims=True), rtol=1e-5,
              atol=1e-6)


def test_layer_norm_rms_norm():
    (n,) = sym("n")
    a, g, b = rand((4, 3, 6)), rand((3, 6)), rand((3, 6))
    mu = a.mean((1, 2), keepdims=True)
    var = a.var((1, 2), keepdims=True)
    ref = (a - mu) / np.sqrt(var + 1e-5) * g + b
    check(lambda x, y, z: nn.layer_norm(x, y, z, [1, 2]),
          [tensor([n, 3, 6]), tensor(g.shape), tensor(b.shape)], [a, g, b], ref, rtol=1e-4,
          atol=1e-4)
    w = rand((6,))
    ref = a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-5) * w
    check(lambda x, y: nn.rms_norm(x, y, [-1]), [tensor(a.shape), tensor(w.shape)], [a, w], ref,
          rtol=1e-4, atol=1e-4)


def test_group_norm_batch_norm():
    a, g, b = rand((2, 6, 3, 4)), rand((6,)), rand((6,))
    ag = a.reshape(2, 3, 2, 3, 4)
    mu = ag.mean((2, 3, 4), keepdims=True)
    var = ag.var((2, 3, 4), keepdims=True)
    ref = ((ag - mu) / np.sqrt(var + 1e-5)).reshape(a.shape) * g[:, None, None] + \
        b[:, None, None]
    check(lambda x, y, z: nn.group_norm(x, y, z, 3, 1, [2, 3]),
          [tensor(a.shape), tensor(g.shape), tensor(b.shape)], [a, g, b], ref, rtol=1e-4,
          atol=1e-4)
    m, v = rand((6,)), rand((6,), lo=0.5, hi=2)
    ref = (a - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-5) * g[:, None, None] + \
        b[:, None, None]
    check(lambda x, y, z, mm, vv: nn.batch_norm(x, y, z, mm, vv, axis=1),
          [tensor(a.shape)] + [tensor((6,))] * 4, [a, g, b, m, v], (ref, m, v), rtol=1e-4,
          atol=1e-4)


def test_dropout_and_pad():
    a = rand((3, 4))
    check(lambda x: nn.dropout(x, 0.3), [tensor(a.shape)], [a], (a, np.ones_like(a)))
    check(lambda x: nn.pad(x, [1, 0, 2, 3], 1.5), [tensor(a.shape)], [a],
          np.pad(a, ((1, 0), (2, 3)), constant_values=1.5))
    for mode in ("edge", "reflect"):
        check(lambda x, m=mode: nn.pad(x, [1, 2, 2, 1], pad_mode=m), [tensor(a.shape)], [a],
              np.pad(a, ((1, 2), (2, 1)), mode=mode))


def attention_ref(q, k, v, bias=None, scale=None, causal=None):
    s = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
    logits = np.einsum("bsnh,btnh->bnst", q, k) * s
    if bias is not None:
        logits = logits + bias
    if causal is not None:
        sq, sk = logits.shape[-2:]
        i, j = np.arange(sq)[:, None], np.arange(sk)[None, :]
        keep = j <= i if causal == "TopLeft" else j <= i + (sk - sq)
        logits = np.where(keep, logits, np.finfo("float32").min)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    return np.einsum("bnst,btnh->bsnh", p, v).astype("float32")


@pytest.mark.parametrize("causal", [None, "TopLeft", "BottomRight"])
def test_attention(causal):
    q, k, v = rand((2, 3, 2, 4)), rand((2, 5, 2, 4)), rand((2, 5, 2, 3))
    check(lambda a, b, c: nn.attention(a, b, c, causal_mask=causal),
          [tensor(q.shape), tensor(k.shape), tensor(v.shape)], [q, k, v],
          attention_ref(q, k, v, causal=causal), rtol=1e-4, atol=1e-5)


def test_attention_bias_scale_symbolic():
    (s,) = sym("s")
    q, k, v = rand((1, 4, 2, 4)), rand((1, 4, 2, 4)), rand((1, 4, 2, 4))
    bias = rand((1, 2, 4, 4))
    check(lambda a, b, c, d: nn.attention(a, b, c, d, scale=0.3),
          [tensor([1, s, 2, 4]), tensor([1, s, 2, 4]), tensor([1, s, 2, 4]),
           tensor([1, 2, s, s])], [q, k, v, bias],
          attention_ref(q, k, v, bias, 0.3), rtol=1e-4, atol=1e-5)
    _ = R


@pytest.mark.parametrize("constant", [True, False])
def test_strided_conv1d_transpose_is_a_conv2d_per_phase(constant):
    # Conv-TasNet's decoder (16 taps, stride 8) over a symbolic batch: a conv2d per phase
    # after a row of extent 1 is added (no conv_transpose gather)
    from legalize_util import bindings, one_op_module, run_legalized

    from minitvm import relax
    from minitvm.relax.transform import LegalizeOps

    x, w = rand((2, 6, 9)), rand((6, 2, 16))
    (n,) = sym("n")
    make = (lambda a: nn.conv1d_transpose(a, relax.const(w), strides=8, padding=(3, 5),
                                          output_padding=1)) if constant else \
        (lambda a, b: nn.conv1d_transpose(a, b, strides=8, padding=(3, 5), output_padding=1))
    sinfos = [tensor((n, 6, 9))] + ([] if constant else [tensor(w.shape)])
    after = LegalizeOps()(one_op_module(make, sinfos))
    called = [str(b.value.args[0].name_hint) for b in bindings(after["main"])
              if getattr(getattr(b.value, "op", None), "name", "") == "relax.call_tir"]
    assert sum(f.startswith("conv2d") for f in called) == 8
    assert not any(f.startswith(("conv1d_transpose", "conv2d_transpose")) for f in called)
    got = run_legalized(after, [x] if constant else [x, w])
    ref = conv2d_transpose_ref(x[:, :, None], w[:, :, None], (1, 8), (0, 3, 0, 5), (0, 1))
    assert got.shape == (2, 2, (9 - 1) * 8 - 8 + 16 + 1)
    np.testing.assert_allclose(got, ref[:, :, 0], rtol=1e-4, atol=1e-4)
