"""Struct-info inference (shapes with symbolic dims, dtypes), errors naming the op and the bad
argument, and TVMScript round trips of the Relax ops added for TVM coverage."""

import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.ir import structural_equal
from minitvm.relax import op as R
from minitvm.relax.op.base import StructInfoError

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")
inf = R.infer_struct_info


def tvar(name, shape=None, dtype="float32", ndim=-1):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype, ndim=ndim))


def shape_of(s):
    return [d if isinstance(d, tir.Var) else (int(d) if isinstance(d, tir.IntImm) else str(d))
            for d in s.shape.values]


def check(call, shape, dtype):
    s = inf(call)
    assert s.dtype == dtype, s
    if shape is None:
        assert s.shape is None, s
    else:
        got = shape_of(s)
        assert len(got) == len(shape), (got, shape)
        for g, e in zip(got, shape):
            assert (g is e) if isinstance(e, tir.Var) else g == e, (got, shape)
    return s


def roundtrip(make, *params):
    bb = relax.BlockBuilder()
    with bb.function("main", list(params)):
        out = bb.emit(make(*params))
        bb.emit_func_output(out)
    mod = bb.get()
    text = mod.script()
    back = tvm.script.from_source(text)
    assert structural_equal(mod, back), text
    return text


x = tvar("x", [n, 4])
xi = tvar("xi", [n, 4], "int64")
v = tvar("v", [n], "int64")


def test_shapes_and_dtypes():
    check(R.flip(x, -1), [n, 4], "float32")
    check(R.tile(x, [3]), [n, 12], "float32")
    check(R.tile(x, [2, 1, 1]), [2, n, 4], "float32")
    check(R.stack([x, x, x], axis=1), [n, 3, 4], "float32")
    check(R.one_hot(v, relax.PrimValue(tir.IntImm("int32", 1)),
                    relax.PrimValue(tir.IntImm("int32", 0)), 6, axis=0), [6, n], "int32")
    check(R.gather_elements(x, tvar("i", [n, 7], "int32"), 1), [n, 7], "float32")
    check(R.gather_nd(tvar("d", [n, m, 5]), tvar("i", [3, 2], "int64")), [3, 5], "float32")
    check(R.gather_nd(tvar("d", [n, m, 5]), tvar("i", [n, 2, 1], "int64"), batch_dims=1),
          [n, 2, 5], "float32")
    check(R.scatter_elements(x, xi, x, 1), [n, 4], "float32")
    check(R.scatter_nd(x, tvar("i", [m, 1], "int64"), tvar("u", [m, 4])), [n, 4], "float32")
    check(R.collapse_sum_to(tvar("a", [2, n, 4]), [n, 1]), [n, 1], "float32")
    check(R.collapse_sum_like(tvar("a", [2, n, 4]), tvar("b", [4])), [4], "float32")
    s = inf(R.meshgrid([tvar("a", [n]), tvar("b", [m]), tvar("c", [5])], indexing="xy"))
    assert [shape_of(f) for f in s.fields] == [[m, n, 5]] * 3
    masked = relax.BlockBuilder().normalize(
        R.masked_fill(x, tvar("mk", [n, 4], "bool"), relax.const(0.0)))
    assert shape_of(masked.struct_info) == [n, 4] and masked.struct_info.dtype == "float32"
    check(R.sort(x, 0), [n, 4], "float32")
    check(R.argsort(x, dtype="int64"), [n, 4], "int64")
    s = inf(R.topk(x, 2, axis=1))
    assert shape_of(s.fields[0]) == [n, 2] and s.fields[1].dtype == "int32"
    check(R.topk(x, 3, axis=0, ret_type="indices"), [3, 4], "int32")
    check(R.quantize(x, relax.const(0.5), relax.const(0, "int8")), [n, 4], "int8")
    check(R.dequantize(tvar("q", [n, 4], "uint8"), relax.const(0.5), relax.const(1, "uint8"),
                       out_dtype="float16"), [n, 4], "float16")
    check(R.log_add_exp(tvar("a", [n, 1]), tvar("b", [4])), [n, 4], "float32")
    check(R.outer(tvar("a", [n]), tvar("b", [m])), [n, m], "float32")
    check(R.eye(3, 5), [3, 5], "float32")
    check(R.eye(relax.PrimValue(n), k=1, dtype="int8"), [n, n], "int8")
    check(R.eye_like(x, 1), [n, 4], "float32")
    check(R.bucketize(x, tvar("b", [m])), [n, 4], "int64")
    check(R.bucketize(x, tvar("b", [m]), out_int32=True), [n, 4], "int32")
    check(R.ewise_fma(x, x, x), [n, 4], "float32")
    check(R.nn.prelu(x, tvar("a", [4]), axis=1), [n, 4], "float32")
    check(R.nn.softplus(x), [n, 4], "float32")
    check(R.nn.selu(x), [n, 4], "float32")
    check(R.nn.pixel_shuffle(tvar("img", [n, 18, m, 2]), 3), [n, 2, str(m * 3), 6], "float32")
    check(R.nn.batch_flatten(tvar("img", [n, 3, 5])), [n, 15], "float32")
    check(R.nn.instance_norm(tvar("img", [n, 3, 5]), tvar("g", [3]), tvar("b", [3]), 1, [2]),
          [n, 3, 5], "float32")


def test_unknown_shapes_keep_known_rank():
    u = tvar("u", ndim=2)
    assert inf(R.flip(u, 1)).ndim == 2
    assert inf(R.tile(u, [2, 2, 2])).ndim == 3
    assert inf(R.stack([u, u])).ndim == 3
    assert inf(R.topk(u, 1)).fields[0].ndim == 2
    assert inf(R.nn.batch_flatten(tvar("w", ndim=4))).ndim == 2
    assert inf(R.one_hot(tvar("i", ndim=2, dtype="int64"), 1.0, 0.0, 3)).ndim == 3


@pytest.mark.parametrize("make,pattern", [
    (lambda: R.flip(x, 2), r"relax.flip: axis 2 is out of range"),
    (lambda: R.tile(x, [-1]), r"relax.tile: repeats must be non-negative"),
    (lambda: R.stack([x, tvar("y", [n, 5])]), r"relax.stack: .*same shape, but dim 1 is 4 and 5"),
    (lambda: R.stack([x, tvar("y", [n, 4], "int32")]), r"relax.stack: .*same dtype"),
    (lambda: R.stack([]), r"relax.stack: expects at least one tensor"),
    (lambda: R.one_hot(x, 1.0, 0.0, 3), r"relax.one_hot: requires the indices to have an "
                                        r"integer dtype"),
    (lambda: R.one_hot(v, 1.0, 0, 3), r"relax.one_hot: .*same dtype"),
    (lambda: R.one_hot(v, 1.0, 0.0, 0), r"relax.one_hot: depth must be positive"),
    (lambda: R.gather_elements(x, x), r"relax.gather_elements: requires the indices"),
    (lambda: R.gather_elements(x, tvar("i", [n], "int64")), r"same rank"),
    (lambda: R.gather_nd(x, tvar("i", [2, m], "int64")),
     r"relax.gather_nd: requires the last dim of indices to be a static integer, but it is m"),
    (lambda: R.gather_nd(x, tvar("i", [2, 3], "int64")), r"exceed the rank 2"),
    (lambda: R.scatter_elements(x, xi, x, reduction="sub"), r"reduction must be one of"),
    (lambda: R.scatter_elements(x, xi, tvar("u", [n, 4], "int32")), r"same dtype"),
    (lambda: R.scatter_elements(x, xi, tvar("u", [n, 3])), r"indices and updates of one shape"),
    (lambda: R.scatter_nd(x, tvar("i", [3, 1], "int64"), tvar("u", [3, 5])),
     r"relax.scatter_nd: expects updates of shape indices.shape\[:-1\] \+ data.shape\[1:\] = "
     r"\(3, 4\)"),
    (lambda: R.collapse_sum_to(x, [3]), r"relax.collapse_sum_to: cannot collapse"),
    (lambda: R.collapse_sum_to(tvar("a", [4]), [1, 4]), r"shape of higher rank"),
    (lambda: R.collapse_sum_like(tvar("a", [2, 4]), tvar("b", [3, 1])),
     r"relax.collapse_sum_like: cannot collapse .* dim 0 is 3, neither 1 nor the input's 2"),
    (lambda: R.meshgrid([x]), r"relax.meshgrid: expects 0-D or 1-D tensors, but tensor 0"),
    (lambda: R.meshgrid([v], indexing="yx"), r"indexing must be 'ij' or 'xy'"),
    (lambda: R.sort(tvar("s", [])), r"relax.sort: expects a tensor of rank at least 1"),
    (lambda: R.argsort(x, dtype="float32"), r"relax.argsort: dtype of the indices must be"),
    (lambda: R.topk(x, 5, axis=1), r"relax.topk: k 5 exceeds the length 4 of axis 1"),
    (lambda: R.topk(x, 0), r"relax.topk: k must be at least 1"),
    (lambda: R.topk(x, 1, ret_type="all"), r"relax.topk: ret_type must be"),
    (lambda: R.quantize(xi, relax.const(0.5), relax.const(0, "int8")),
     r"relax.quantize: requires a float input"),
    (lambda: R.quantize(x, relax.const(0.5), relax.const(0, "int8"), out_dtype="float16"),
     r"relax.quantize: out_dtype must be an integer type"),
    (lambda: R.quantize(x, relax.const([0.5, 1.0, 2.0]), relax.const(0, "int8"), axis=1),
     r"relax.quantize: requires scale to have one value per channel of axis 1 \(4\)"),
    (lambda: R.quantize(x, relax.const(1, "int32"), relax.const(0, "int8")),
     r"relax.quantize: requires a float scale"),
    (lambda: R.dequantize(x, relax.const(0.5), relax.const(0, "int8")),
     r"relax.dequantize: requires an integer input"),
    (lambda: R.log_add_exp(xi, xi), r"relax.log_add_exp: requires float operands"),
    (lambda: R.outer(x, v), r"relax.outer: expects 1-D tensors, but x1"),
    (lambda: R.eye(relax.PrimValue(tir.FloatImm("float32", 2.0))), r"relax.eye: expects n"),
    (lambda: R.eye_like(v), r"relax.eye_like: expects a 2-D tensor"),
    (lambda: R.bucketize(x, x), r"relax.bucketize: expects 1-D boundaries"),
    (lambda: R.ewise_fma(x, x, tvar("c", [n, 5])), r"relax.ewise_fma: expects three tensors "
                                                   r"of one shape"),
    (lambda: R.nn.prelu(x, tvar("a", [3]), axis=1), r"relax.nn.prelu: requires alpha to have "
                                                    r"one value per channel \(4\)"),
    (lambda: R.nn.prelu(x, tvar("a", [4]), axis=3), r"relax.nn.prelu: axis 3 is out of range"),
    (lambda: R.nn.softplus(xi), r"relax.nn.softplus: requires the input tensor to have a float"),
    (lambda: R.nn.pixel_shuffle(tvar("i", [1, 5, 2, 2]), 2),
     r"relax.nn.pixel_shuffle: the channel dim 5 must be divisible by upscale_factor\^2 = 4"),
    (lambda: R.nn.pixel_shuffle(x, 2), r"rank at least 3"),
    (lambda: R.nn.instance_norm(tvar("img", [n, 3, 5]), tvar("g", [4]), tvar("b", [3]), 1, [2]),
     r"relax.nn.instance_norm: requires gamma to have one value per channel \(3\)"),
    (lambda: R.nn.instance_norm(tvar("img", [n, 3, 5]), tvar("g", [3]), tvar("b", [3]), 1, [1]),
     r"channel_axis 1 must not be one of the normalized axes"),
])
def test_errors_name_the_op_and_argument(make, pattern):
    with pytest.raises(StructInfoError, match=pattern):
        inf(make())


def test_non_tensor_argument_is_a_type_error():
    s = relax.Var("s", relax.ShapeStructInfo([1]))
    with pytest.raises(StructInfoError, match=r"relax.flip: requires argument 0 \(data\) to be "
                                              r"a tensor"):
        inf(R.flip(s, 0))
    with pytest.raises(StructInfoError, match=r"relax.stack: expects a tuple of tensors"):
        inf(R.stack(relax.Var("t", relax.TupleStructInfo([relax.ShapeStructInfo([1])]))))
    with pytest.raises(StructInfoError, match=r"relax.one_hot: expects on_value to be an R.Prim"):
        inf(R.one_hot(v, relax.const(1.0), 0.0, 3))
    with pytest.raises(StructInfoError, match=r"relax.collapse_sum_to: requires the shape"):
        inf(R.collapse_sum_to(x, x))


@pytest.mark.parametrize("make,params,printed", [
    (lambda a: R.flip(a, 1), [x], "R.flip(x, axis=1)"),
    (lambda a: R.tile(a, [2, 3]), [x], "R.tile(x, repeats=[2, 3])"),
    (lambda a: R.stack([a, a], -1), [x], "R.stack((x, x), axis=-1)"),
    (lambda i: R.one_hot(i, relax.PrimValue(tir.FloatImm("float32", 1.0)),
                         relax.PrimValue(tir.FloatImm("float32", 0.0)), 3), [v],
     "R.one_hot(v, R.prim_value(T.float32(1.0)), R.prim_value(T.float32(0.0)), depth=3, "
     "axis=-1)"),
    (lambda a, i: R.gather_elements(a, i, 1), [x, xi], "R.gather_elements(x, xi, axis=1)"),
    (lambda a, i: R.gather_nd(a, i, 1), [x, tvar("j", [n, 1], "int64")],
     "R.gather_nd(x, j, batch_dims=1)"),
    (lambda a, i: R.scatter_elements(a, i, a, 1, "max"), [x, xi],
     'R.scatter_elements(x, xi, x, axis=1, reduction="max")'),
    (lambda a, i, u: R.scatter_nd(a, i, u, "add"), [x, tvar("j", [2, 1], "int64"),
                                                     tvar("u", [2, 4])],
     'R.scatter_nd(x, j, u, reduction="add")'),
    (lambda a: R.collapse_sum_to(a, [1, 4]), [x], "R.collapse_sum_to(x, R.shape([1, 4]))"),
    (lambda a, b: R.collapse_sum_like(a, b), [x, tvar("b", [4])], "R.collapse_sum_like(x, b)"),
    (lambda a: R.meshgrid([a, a], "xy"), [v], 'R.meshgrid((v, v), indexing="xy")'),
    (lambda a: R.sort(a, 0, True), [x], "R.sort(x, axis=0, descending=True)"),
    (lambda a: R.argsort(a, 0, True, "int64"), [x],
     'R.argsort(x, axis=0, descending=True, dtype="int64")'),
    (lambda a: R.topk(a, 2, 1, "values", False), [x],
     'R.topk(x, k=2, axis=1, ret_type="values", largest=False, dtype="int32")'),
    (lambda a: R.quantize(a, relax.const(0.5, "float32"), relax.const(1, "int8"), 1), [x],
     'R.quantize(x, R.const(0.5, "float32"), R.const(1, "int8"), out_dtype="int8", axis=1)'),
    (lambda a: R.dequantize(a, relax.const(0.5, "float32"), relax.const(1, "int8")),
     [tvar("q", [n, 4], "int8")], None),
    (lambda a: R.log_add_exp(a, a), [x], "R.log_add_exp(x, x)"),
    (lambda a: R.outer(a, a), [v], "R.outer(v, v)"),
    (lambda: R.eye(3, 4, 1), [], 'R.eye(R.prim_value(3), R.prim_value(4), R.prim_value(1), '
                                 'dtype="float32")'),
    (lambda a: R.eye_like(a, 1, "int32"), [x], None),
    (lambda a, b: R.bucketize(a, b, True, True), [x, tvar("b", [4])],
     "R.bucketize(x, b, out_int32=True, right=True)"),
    (lambda a: R.ewise_fma(a, a, a), [x], "R.ewise_fma(x, x, x)"),
    (lambda a, b: R.nn.prelu(a, b, 1), [x, tvar("b", [4])], "R.nn.prelu(x, b, axis=1)"),
    (lambda a: R.nn.softplus(a, 2.0, 10.0), [x], None),
    (lambda a: R.nn.selu(a), [x], "R.nn.selu(x)"),
    (lambda a: R.nn.pixel_shuffle(a, 2), [tvar("img", [n, 8, 3, 3])],
     "R.nn.pixel_shuffle(img, upscale_factor=2)"),
    (lambda a: R.nn.batch_flatten(a), [tvar("img", [n, 8, 3, 3])], "R.nn.batch_flatten(img)"),
    (lambda a, g: R.nn.instance_norm(a, g, g, 1, [2, 3]), [tvar("img", [n, 8, 3, 3]),
                                                           tvar("g", [8])], None),
])
def test_tvmscript_round_trip(make, params, printed):
    text = roundtrip(make, *params)
    if printed is not None:
        assert printed in text, text


def test_second_batch_shapes():
    a, b = tvar("a", [2, 1], "int64"), tvar("b", [m], "int32")
    check(R.index_tensor(tvar("d", [n, 4, 3]), (a, b)), [2, m, 3], "float32")
    check(R.index_tensor(x, [v]), [n, 4], "float32")
    check(R.index_put(x, (tvar("i", [3], "int64"),), tvar("u", [4])), [n, 4], "float32")
    check(R.slice_scatter(x, tvar("s", [n, 2]), 0, 4, 2, axis=1), [n, 4], "float32")
    check(R.hamming_window(9, True, 0.5, 0.5, "float16"), [9], "float16")
    check(R.nn.conv3d_transpose(tvar("d", [n, 2, 3, 3, 3]), tvar("w", [2, 4, 2, 2, 2]),
                                strides=2), [n, 4, 6, 6, 6], "float32")
    check(R.nn.attention_bias(tvar("q", [1, n, 2, 4]), tvar("k", [1, m, 2, 4]),
                              tvar("v", [1, m, 2, 8]), tvar("bias", [1, 2, n, m])),
          [1, n, 2, 8], "float32")
    check(R.nn.cross_entropy_with_logits(x, x), [], "float32")
    check(R.nn.nll_loss(x, v), [], "float32")
    check(R.nn.nll_loss(x, v, reduction="none"), [n], "float32")
    check(R.nn.nll_loss(tvar("p", [n, 4, m]), tvar("t", [n, m], "int64"), tvar("w", [4]),
                        reduction="none"), [n, m], "float32")


@pytest.mark.parametrize("make,pattern", [
    (lambda: R.index_tensor(x, (v, v, v)), r"relax.index_tensor: got 3 index tensors for data "
                                            r"of rank 2"),
    (lambda: R.index_tensor(x, (x,)), r"relax.index_tensor: requires index tensor 0 to have "
                                      r"an integer dtype"),
    (lambda: R.index_tensor(x, (tvar("a", [2], "int64"), tvar("b", [3], "int64"))),
     r"relax.index_tensor: .*not broadcastable"),
    (lambda: R.index_tensor(x, ()), r"relax.index_tensor: expects at least one index tensor"),
    (lambda: R.index_put(x, (v,), tvar("u", [5])), r"relax.index_put: values .* do not "
                                                   r"broadcast to the indexed shape \(n, 4\)"),
    (lambda: R.index_put(x, (v,), tvar("u", [4], "int32")), r"relax.index_put: expects values "
                                                            r"of the data's dtype"),
    (lambda: R.slice_scatter(x, tvar("s", [n, 3]), 0, 4, 2, axis=1),
     r"relax.slice_scatter: expects src of length 2 on axis 1 \(the slice 0:4:2\), got 3"),
    (lambda: R.slice_scatter(tvar("xs", [5, 4]), tvar("s", [3, 2]), 0, 4, 2, axis=1),
     r"relax.slice_scatter: expects src to match the input on dim 0, got 3 and 5"),
    (lambda: R.slice_scatter(x, x, 0, 4, 0, axis=1), r"relax.slice_scatter: step must be "
                                                     r"positive"),
    (lambda: R.hamming_window(0, True, 0.5, 0.5), r"relax.hamming_window: window_size must be "
                                                  r"positive"),
    (lambda: R.hamming_window(4, True, 0.5, 0.5, "int32"), r"dtype must be a float type"),
    (lambda: R.nn.conv3d_transpose(tvar("d", [n, 2, 3, 3, 3]), tvar("w", [3, 4, 2, 2, 2])),
     r"relax.nn.conv3d_transpose"),
    (lambda: R.nn.attention_bias(tvar("q", [1, n, 2, 4]), tvar("k", [1, m, 3, 4]),
                                 tvar("v", [1, m, 2, 8]), tvar("bias", [1, 2, n, m])),
     r"relax.nn.attention_bias: number of heads of query and key mismatch"),
    (lambda: R.nn.cross_entropy_with_logits(x, tvar("l", [n, 5])),
     r"relax.nn.cross_entropy_with_logits: requires predictions and labels of one shape"),
    (lambda: R.nn.nll_loss(x, tvar("t", [n, 4], "int64")), r"relax.nn.nll_loss: expects "
                                                             r"targets of rank 1"),
    (lambda: R.nn.nll_loss(x, x), r"relax.nn.nll_loss: requires integer targets"),
    (lambda: R.nn.nll_loss(x, v, reduction="avg"), r"reduction must be 'mean', 'sum' or "),
    (lambda: R.nn.nll_loss(x, v, tvar("w", [3])), r"requires one weight per class \(4\)"),
])
def test_second_batch_errors(make, pattern):
    with pytest.raises(StructInfoError, match=pattern):
        inf(make())


@pytest.mark.parametrize("make,params,printed", [
    (lambda d, i: R.index_tensor(d, [i]), [x, v], "R.index_tensor(x, (v,))"),
    (lambda d, i, u: R.index_put(d, (i,), u, True), [x, v, tvar("u", [4])],
     "R.index_put(x, (v,), u, accumulate=True)"),
    (lambda d: R.slice_scatter(d, d, 0, n, 1), [x],
     "R.slice_scatter(x, x, R.prim_value(0), R.prim_value(n), R.prim_value(1), axis=0)"),
    (lambda: R.hamming_window(8, True, 0.5, 0.25), [],
     'R.hamming_window(R.prim_value(8), R.prim_value(1), R.prim_value(T.float32(0.5)), '
     'R.prim_value(T.float32(0.25)), dtype="float32")'),
    (lambda d, w: R.nn.conv3d_transpose(d, w, strides=2, output_padding=1),
     [tvar("d", [n, 2, 3, 3, 3]), tvar("w", [2, 4, 2, 2, 2])], None),
    (lambda q, b: R.nn.attention_bias(q, q, q, b, causal_mask="TopLeft"),
     [tvar("q", [1, n, 2, 4]), tvar("bias", [1, 2, n, n])],
     'R.nn.attention_bias(q, q, q, bias, scale=None, causal_mask="TopLeft", window_size=None)'),
    (lambda p: R.nn.cross_entropy_with_logits(p, p), [x],
     "R.nn.cross_entropy_with_logits(x, x)"),
    (lambda p, t: R.nn.nll_loss(p, t, reduction="sum", ignore_index=2), [x, v],
     'R.nn.nll_loss(x, v, reduction="sum", ignore_index=2)'),
])
def test_second_batch_round_trip(make, params, printed):
    text = roundtrip(make, *params)
    if printed is not None:
        assert printed in text, text


def test_tvm_top_level_names_are_exported():
    for name in ("call_builtin_with_ctx", "index_tensor", "index_put", "slice_scatter",
                 "hamming_window", "masked_fill", "sort", "quantize"):
        assert callable(getattr(R, name)), name
    for name in ("conv3d_transpose", "attention_bias", "nll_loss", "instance_norm"):
        assert callable(getattr(R.nn, name)), name


def test_wrap_param_and_multinomial():
    check(R.wrap_param(x, "float16"), [n, 4], "float16")
    p, u, i = tvar("p", [3, m]), tvar("u", [n, 1]), tvar("i", [n, 1], "int64")
    check(R.multinomial_from_uniform(p, u, i, "int32"), [n, 1], "int32")
    with pytest.raises(StructInfoError, match=r"relax.multinomial_from_uniform: expects "
                                              r"uniform_sample and sample_indices of shape"):
        inf(R.multinomial_from_uniform(p, tvar("u2", [n, 2]), i))
    with pytest.raises(StructInfoError, match=r"requires float probabilities"):
        inf(R.multinomial_from_uniform(tvar("pi", [3, m], "int32"), u, i))
    roundtrip(lambda a: R.wrap_param(a, "float16"), x)
    text = roundtrip(lambda a, b, c: R.multinomial_from_uniform(a, b, c), p, u, i)
    assert 'R.multinomial_from_uniform(p, u, i, dtype="int64")' in text


def test_nonzero_unique_struct_info():
    s = inf(R.nonzero(x))
    assert s.ndim == 2 and s.shape is None and s.dtype == "int64"
    s = inf(R.unique(tvar("d", [n, 3, m])))
    assert s.ndim == 1 and s.shape is None and s.dtype == "float32"
    s = inf(R.unique(tvar("d", [n, 3]), axis=1, return_index=True, return_counts=True))
    assert [f.ndim for f in s.fields] == [2, 1, 1] and s.fields[2].dtype == "int64"
    with pytest.raises(StructInfoError, match=r"relax.unique: axis 2 is out of range"):
        inf(R.unique(x, axis=2))
    with pytest.raises(StructInfoError, match=r"relax.nonzero: expects a tensor of rank at "
                                              r"least 1"):
        inf(R.nonzero(tvar("s", [])))
    roundtrip(lambda a: R.nonzero(a), x)
    text = roundtrip(lambda a: R.unique(a, return_inverse=True, axis=0), x)
    assert "R.unique(x, " in text


def test_dynamic_strided_slice_struct_info():
    bnd = tvar("bnd", [2], "int64")
    s = inf(R.dynamic_strided_slice(x, bnd, bnd, bnd))
    assert s.ndim == 2 and s.shape is None and s.dtype == "float32"
    with pytest.raises(StructInfoError, match=r"relax.dynamic_strided_slice: expects begin to "
                                              r"have one value per axis of the input \(2\)"):
        inf(R.dynamic_strided_slice(x, tvar("b3", [3], "int64"), bnd, bnd))
    with pytest.raises(StructInfoError, match=r"requires strides to have an integer dtype"):
        inf(R.dynamic_strided_slice(x, bnd, bnd, tvar("f", [2])))
    roundtrip(lambda a, b: R.dynamic_strided_slice(a, b, b, b), x, bnd)
