"""Struct-info inference of relax.op.nn: convolution, pooling, activations, norms, ..."""

import pytest
from sinfo_util import T, assert_sinfo, tvar

from minitvm import relax, tir
from minitvm.ir import Op, OpPattern
from minitvm.relax import op as R

n = tir.Var("n", "int64")
h = tir.Var("h", "int64")
w = tir.Var("w", "int64")
inf = R.infer_struct_info


# --------------------------------------------------------------------------- conv2d
def test_conv2d_attrs_defaults():
    call = R.nn.conv2d(tvar("x", [1, 3, 8, 8]), tvar("k", [4, 3, 3, 3]))
    a = call.attrs
    assert a.type_key == "relax.attrs.Conv2DAttrs"
    assert a.strides == (1, 1) and a.padding == (0, 0, 0, 0) and a.dilation == (1, 1)
    assert a.groups == 1 and a.data_layout == "NCHW" and a.kernel_layout == "OIHW"
    assert a.out_layout == "NCHW" and a.out_dtype == "void"
    assert [f for f, _ in a.list_field_info()] == [
        "strides", "padding", "dilation", "groups", "data_layout", "kernel_layout", "out_layout",
        "out_dtype"]
    assert R.nn.conv2d(tvar("x", [1, 3, 8, 8]), tvar("k", [4, 3, 3, 3]),
                       padding=(1, 2)).attrs.padding == (1, 2, 1, 2)
    assert Op.get("relax.nn.conv2d").get_attr("TOpPattern") == OpPattern.OUT_ELEMWISE_FUSABLE
    assert_sinfo(inf(call), T([1, 4, 6, 6]))


def test_conv2d_static():
    x, k = tvar("x", [2, 3, 28, 28]), tvar("k", [16, 3, 5, 5])
    assert_sinfo(inf(R.nn.conv2d(x, k, padding=2)), T([2, 16, 28, 28]))
    assert_sinfo(inf(R.nn.conv2d(x, k, strides=2, padding=(0, 1, 2, 3))), T([2, 16, 13, 14]))
    assert_sinfo(inf(R.nn.conv2d(x, k, dilation=2)), T([2, 16, 20, 20]))
    g = tvar("g", [8, 1, 3, 3])
    assert_sinfo(inf(R.nn.conv2d(tvar("x", [1, 8, 10, 10]), g, groups=8)), T([1, 8, 8, 8]))
    assert_sinfo(inf(R.nn.conv2d(x, k, out_dtype="float16")), T([2, 16, 24, 24], "float16"))


def test_conv2d_layouts():
    x, k = tvar("x", [2, 28, 28, 3]), tvar("k", [5, 5, 3, 16])
    out = inf(R.nn.conv2d(x, k, data_layout="NHWC", kernel_layout="HWIO"))
    assert_sinfo(out, T([2, 24, 24, 16]))
    out = inf(R.nn.conv2d(x, k, data_layout="NHWC", kernel_layout="HWIO", out_layout="NCHW"))
    assert_sinfo(out, T([2, 16, 24, 24]))
    with pytest.raises(R.StructInfoError, match="permutation of NCHW"):
        inf(R.nn.conv2d(tvar("x", [1, 3, 8, 8, 4]), k, data_layout="NCHW4c"))


def test_conv2d_symbolic_and_unknown():
    x, k = tvar("x", [n, 3, h, w]), tvar("k", [16, 3, 3, 3])
    assert_sinfo(inf(R.nn.conv2d(x, k, padding=1)), T([n, 16, h, w]))
    assert_sinfo(inf(R.nn.conv2d(x, k)), T([n, 16, h - 2, w - 2]))
    out = inf(R.nn.conv2d(x, k, strides=2))
    assert out.ndim == 4 and int(out.shape[1]) == 16
    assert_sinfo(inf(R.nn.conv2d(tvar("x", ndim=4), k)), T(ndim=4))
    c = tir.Var("c", "int64")
    assert_sinfo(inf(R.nn.conv2d(tvar("x", [1, c, 8, 8]), tvar("k", [4, c, 3, 3]))),
                 T([1, 4, 6, 6]))


def test_conv2d_errors():
    with pytest.raises(R.StructInfoError, match=r"relax.nn.conv2d.*4 channels.*3 input"):
        inf(R.nn.conv2d(tvar("x", [1, 4, 8, 8]), tvar("k", [4, 3, 3, 3])))
    with pytest.raises(R.StructInfoError, match="divisible"):
        inf(R.nn.conv2d(tvar("x", [1, 4, 8, 8]), tvar("k", [3, 2, 3, 3]), groups=2))
    with pytest.raises(R.StructInfoError, match="4 dimensions under layout NCHW"):
        inf(R.nn.conv2d(tvar("x", [4, 8, 8]), tvar("k", [4, 4, 3, 3])))
    with pytest.raises(R.StructInfoError, match="float32 and int8"):
        inf(R.nn.conv2d(tvar("x", [1, 4, 8, 8]), tvar("k", [4, 4, 3, 3], "int8")))
    with pytest.raises(ValueError, match="padding"):
        R.nn.conv2d(tvar("x", [1, 4, 8, 8]), tvar("k", [4, 4, 3, 3]), padding=(1, 2, 3))


def test_conv2d_transpose():
    x, k = tvar("x", [1, 8, 7, 7]), tvar("k", [8, 4, 3, 3])
    call = R.nn.conv2d_transpose(x, k, strides=2, padding=1, output_padding=1)
    assert call.attrs.kernel_layout == "IOHW"
    assert_sinfo(inf(call), T([1, 4, 14, 14]))
    assert_sinfo(inf(R.nn.conv2d_transpose(x, k)), T([1, 4, 9, 9]))
    assert_sinfo(inf(R.nn.conv2d_transpose(tvar("x", [1, 8, h, 7]), k)), T([1, 4, h + 2, 9]))
    with pytest.raises(R.StructInfoError, match="channels"):
        inf(R.nn.conv2d_transpose(tvar("x", [1, 3, 7, 7]), k))
    with pytest.raises(ValueError, match="output_padding"):
        R.nn.conv2d_transpose(x, k, output_padding=1)


# --------------------------------------------------------------------------- pooling
@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d"])
def test_pool2d(name):
    f = getattr(R.nn, name)
    call = f(tvar("x", [1, 3, 32, 32]), pool_size=2, strides=2)
    assert call.attrs.type_key == "relax.attrs.Pool2DAttrs"
    assert call.attrs.pool_size == (2, 2) and call.attrs.out_layout == "NCHW"
    assert_sinfo(inf(call), T([1, 3, 16, 16]))
    assert_sinfo(inf(f(tvar("x", [1, 3, 7, 7]), 3, 2, ceil_mode=True)), T([1, 3, 3, 3]))
    assert_sinfo(inf(f(tvar("x", [1, 3, 7, 7]), 2, 2)), T([1, 3, 3, 3]))
    assert_sinfo(inf(f(tvar("x", [1, 3, 8, 8]), 2, 2, ceil_mode=True)), T([1, 3, 4, 4]))
    assert_sinfo(inf(f(tvar("x", [1, 3, 7, 7]), 3, 2, ceil_mode=True, padding=1)),
                 T([1, 3, 4, 4]))
    assert_sinfo(inf(f(tvar("x", [1, 8, 8, 3]), 3, 1, padding=1, layout="NHWC")),
                 T([1, 8, 8, 3]))
    assert_sinfo(inf(f(tvar("x", [n, 3, h, w]), 3, 1, padding=1)), T([n, 3, h, w]))
    assert_sinfo(inf(f(tvar("x", ndim=4), 3)), T(ndim=4))
    with pytest.raises(R.StructInfoError, match="4 dimensions"):
        inf(f(tvar("x", [3, 8, 8]), 2))


def test_adaptive_avg_pool2d():
    assert_sinfo(inf(R.nn.adaptive_avg_pool2d(tvar("x", [1, 3, 7, n]), 1)), T([1, 3, 1, 1]))
    assert_sinfo(inf(R.nn.adaptive_avg_pool2d(tvar("x", [1, 3, 7, n]))), T([1, 3, 7, n]))
    assert_sinfo(inf(R.nn.adaptive_avg_pool2d(tvar("x", [1, 7, 7, 3]), (2, 3), layout="NHWC")),
                 T([1, 2, 3, 3]))


# --------------------------------------------------------------------------- activations
@pytest.mark.parametrize("name", ["relu", "gelu", "gelu_tanh", "silu", "leakyrelu"])
def test_activations(name):
    f = getattr(R.nn, name)
    assert Op.get("relax.nn." + name).get_attr("TOpPattern") == OpPattern.ELEMWISE
    assert_sinfo(inf(f(tvar("x", [n, 4]))), T([n, 4]))
    assert_sinfo(inf(f(tvar("x", ndim=2, dtype="float16"))), T(ndim=2, dtype="float16"))


def test_activation_dtypes():
    assert_sinfo(inf(R.nn.relu(tvar("x", [2], "int32"))), T([2], "int32"))
    with pytest.raises(R.StructInfoError, match="relax.nn.gelu.*float"):
        inf(R.nn.gelu(tvar("x", [2], "int32")))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax(name):
    f = getattr(R.nn, name)
    call = f(tvar("x", [n, 10]))
    assert call.attrs.type_key == "relax.attrs.SoftmaxAttrs" and call.attrs.axis == -1
    assert_sinfo(inf(call), T([n, 10]))
    assert_sinfo(inf(f(tvar("x", ndim=-1), axis=5)), T(ndim=-1))
    with pytest.raises(R.StructInfoError, match="out of range"):
        inf(f(tvar("x", [2, 3]), axis=2))
    with pytest.raises(R.StructInfoError, match="float"):
        inf(f(tvar("x", [2, 3], "int32")))


# --------------------------------------------------------------------------- norms
def test_layer_norm():
    x, g, b = tvar("x", [n, 16, 32]), tvar("g", [16, 32]), tvar("b", [16, 32])
    call = R.nn.layer_norm(x, g, b, axes=[-2, -1])
    assert call.attrs.axes == (-2, -1) and call.attrs.epsilon == 1e-5
    assert inf(call) is x.struct_info
    assert_sinfo(inf(R.nn.layer_norm(tvar("x", [2, n]), tvar("g", [n]), tvar("b", [n]), -1)),
                 T([2, n]))
    m = tir.Var("m", "int64")
    out = inf(R.nn.layer_norm(tvar("x", [2, n]), tvar("g", [m]), tvar("b", [m]), -1))
    assert_sinfo(out, T(ndim=2))
    with pytest.raises(R.StructInfoError, match="size on the normalized axes"):
        inf(R.nn.layer_norm(x, tvar("g", [16, 31]), b, axes=[-2, -1]))
    with pytest.raises(R.StructInfoError, match="same dtype"):
        inf(R.nn.layer_norm(x, tvar("g", [16, 32], "float16"), b, axes=[-2, -1]))
    with pytest.raises(R.StructInfoError, match="as many dimensions"):
        inf(R.nn.layer_norm(x, g, b, axes=[-1]))
    with pytest.raises(R.StructInfoError, match="float"):
        inf(R.nn.layer_norm(tvar("x", [2, 3], "int32"), tvar("g", [3], "int32"),
                            tvar("b", [3], "int32"), -1))


def test_rms_norm():
    x = tvar("x", [n, 4, 8])
    assert inf(R.nn.rms_norm(x, tvar("w", [8]))) is x.struct_info
    assert_sinfo(inf(R.nn.rms_norm(x, tvar("w", [4, 8]), axes=[1, 2])), T([n, 4, 8]))
    with pytest.raises(R.StructInfoError, match="size on the normalized axes"):
        inf(R.nn.rms_norm(x, tvar("w", [7])))


def test_group_norm():
    x = tvar("x", [2, 8, h, w])
    call = R.nn.group_norm(x, tvar("g", [8]), tvar("b", [8]), num_groups=4, channel_axis=1,
                           axes=[2, 3])
    assert call.attrs.type_key == "relax.attrs.GroupNormAttrs"
    assert inf(call) is x.struct_info
    with pytest.raises(R.StructInfoError, match="divisible"):
        inf(R.nn.group_norm(x, tvar("g", [8]), tvar("b", [8]), 3, 1, [2, 3]))
    with pytest.raises(R.StructInfoError, match="not be one of"):
        inf(R.nn.group_norm(x, tvar("g", [8]), tvar("b", [8]), 4, 1, [1, 2]))
    with pytest.raises(R.StructInfoError, match="one value per channel"):
        inf(R.nn.group_norm(x, tvar("g", [4]), tvar("b", [8]), 4, 1, [2, 3]))


def test_batch_norm():
    x = tvar("x", [n, 3, 8, 8])
    p = [tvar(k, [3]) for k in ("g", "b", "mean", "var")]
    out = inf(R.nn.batch_norm(x, *p, axis=1))
    assert isinstance(out, relax.TupleStructInfo) and len(out.fields) == 3
    assert out.fields[0] is x.struct_info
    assert out.fields[1] is p[2].struct_info and out.fields[2] is p[3].struct_info
    c = tir.Var("c", "int64")
    q = [tvar(k, [c]) for k in ("g", "b", "mean", "var")]
    out = inf(R.nn.batch_norm(x, *q, axis=1))
    assert_sinfo(out.fields[0], T(ndim=4))
    assert_sinfo(out.fields[1], T(ndim=1))
    with pytest.raises(R.StructInfoError, match="size on the normalized axes"):
        inf(R.nn.batch_norm(x, tvar("g", [4]), *p[1:], axis=1))


# --------------------------------------------------------------------------- misc
def test_dropout():
    x = tvar("x", [n, 4])
    call = R.nn.dropout(x, 0.1)
    assert call.attrs.rate == 0.1
    out = inf(call)
    assert isinstance(out, relax.TupleStructInfo)
    assert out.fields[0] is x.struct_info and out.fields[1] is x.struct_info


def test_pad():
    call = R.nn.pad(tvar("x", [1, 3, n, 4]), [0, 0, 0, 0, 1, 1, 2, 3])
    assert call.attrs.pad_value == 0.0 and call.attrs.pad_mode == "constant"
    assert_sinfo(inf(call), T([1, 3, n + 2, 9]))
    assert_sinfo(inf(R.nn.pad(tvar("x", [2, 2]), [(1, 0), (0, 2)])), T([3, 4]))
    assert_sinfo(inf(R.nn.pad(tvar("x", ndim=2), [1, 1, 1, 1])), T(ndim=2))
    with pytest.raises(R.StructInfoError, match="two pad widths"):
        inf(R.nn.pad(tvar("x", [2, 2]), [1, 1]))


def test_attention():
    q, k, v = tvar("q", [2, n, 8, 64]), tvar("k", [2, 16, 8, 64]), tvar("v", [2, 16, 8, 32])
    call = R.nn.attention(q, k, v, scale=0.125, causal_mask="TopLeft")
    assert call.attrs.type_key == "relax.attrs.AttentionAttrs"
    assert_sinfo(inf(call), T([2, n, 8, 32]))
    with pytest.raises(R.StructInfoError, match="head dim"):
        inf(R.nn.attention(q, tvar("k", [2, 16, 8, 32]), v))
    with pytest.raises(R.StructInfoError, match="sequence length"):
        inf(R.nn.attention(q, k, tvar("v", [2, 15, 8, 32])))


# --------------------------------------------------------------------------- 1-D convolution
def test_conv1d():
    call = R.nn.conv1d(tvar("x", [2, 4, 10]), tvar("k", [8, 4, 3]), padding=1)
    a = call.attrs
    assert a.type_key == "relax.attrs.Conv1DAttrs" and a.padding == (1, 1)
    assert a.data_layout == "NCW" and a.kernel_layout == "OIW"
    assert_sinfo(inf(call), T([2, 8, 10]))
    assert_sinfo(inf(R.nn.conv1d(tvar("x", [2, 4, n]), tvar("k", [8, 4, 3]))), T([2, 8, n - 2]))
    assert_sinfo(inf(R.nn.conv1d(tvar("x", [2, 10, 4]), tvar("k", [3, 4, 8]), strides=2,
                                 data_layout="NWC", kernel_layout="WIO")), T([2, 4, 8]))
    with pytest.raises(R.StructInfoError, match="channels"):
        inf(R.nn.conv1d(tvar("x", [2, 5, 10]), tvar("k", [8, 4, 3])))


def test_conv1d_transpose():
    call = R.nn.conv1d_transpose(tvar("x", [1, 8, 5]), tvar("k", [8, 4, 3]), strides=2)
    assert call.attrs.kernel_layout == "IOW"
    assert_sinfo(inf(call), T([1, 4, 11]))
    g = R.nn.conv1d_transpose(tvar("x", [1, 8, 5]), tvar("k", [8, 2, 3]), groups=2)
    assert_sinfo(inf(g), T([1, 4, 7]))


def test_relu6():
    assert_sinfo(inf(R.nn.relu6(tvar("x", [n, 3]))), T([n, 3]))
