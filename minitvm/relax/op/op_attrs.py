"""Attribute classes of Relax ops, with TVM's type keys, field names, order and defaults.

Fields are declared in TVM's order so the TVMScript printer can show them as TVM does
(``R.matmul(x, w, out_dtype="void")``). Class names shared with Relay's attrs (``TakeAttrs``,
``Conv2DAttrs``, ...) keep pointing at Relay's classes in the by-name registry; Relax's are
reached by their ``relax.attrs.*`` type key.
"""

from __future__ import annotations

from ...ir.attrs import _ATTRS_TYPES, Attrs, make_attrs_class

__all__ = [
    "AstypeAttrs", "MatmulAttrs", "PermuteDimsAttrs", "ExpandDimsAttrs", "SqueezeAttrs",
    "ConcatAttrs", "SplitAttrs", "StridedSliceAttrs", "TakeAttrs", "StatisticalAttrs",
    "ArgmaxArgminAttrs", "InitAttrs", "Conv2DAttrs", "Conv2DTransposeAttrs", "Pool2DAttrs",
    "AdaptivePool2DAttrs", "SoftmaxAttrs", "LeakyReluAttrs", "LayerNormAttrs",
    "GroupNormAttrs", "RMSNormAttrs", "BatchNormAttrs", "DropoutAttrs", "AttentionAttrs",
    "PadAttrs", "Conv1DAttrs", "Conv1DTransposeAttrs", "RepeatAttrs", "TriluAttrs",
]


def _attrs(name: str, fields: list[tuple[str, object]], doc: str) -> type[Attrs]:
    prev = _ATTRS_TYPES.get(name)
    cls = make_attrs_class(name, fields, "relax.attrs." + name)
    cls.__doc__ = doc
    cls.__module__ = __name__
    cls.__qualname__ = name
    if prev is not None:  # keep the by-name entry of the Relay class of the same name
        _ATTRS_TYPES[name] = prev
    return cls


AstypeAttrs = _attrs("AstypeAttrs", [("dtype", "void")], "Attributes of astype.")
MatmulAttrs = _attrs("MatmulAttrs", [("out_dtype", "void")], "Attributes of matmul.")
PermuteDimsAttrs = _attrs("PermuteDimsAttrs", [("axes", None)],
                          "Attributes of permute_dims (axes None: reverse).")
ExpandDimsAttrs = _attrs("ExpandDimsAttrs", [("axis", ())], "Attributes of expand_dims.")
SqueezeAttrs = _attrs("SqueezeAttrs", [("axis", None)], "Attributes of squeeze.")
ConcatAttrs = _attrs("ConcatAttrs", [("axis", 0)], "Attributes of concat.")
SplitAttrs = _attrs("SplitAttrs", [("indices_or_sections", 1), ("axis", 0)],
                    "Attributes of split.")
StridedSliceAttrs = _attrs(
    "StridedSliceAttrs",
    [("axes", ()), ("begin", ()), ("end", ()), ("strides", None), ("assume_inbound", False)],
    "Attributes of strided_slice.")
TakeAttrs = _attrs("TakeAttrs", [("axis", None), ("mode", "fast")], "Attributes of take.")
StatisticalAttrs = _attrs("StatisticalAttrs", [("axis", None), ("keepdims", False)],
                          "Attributes of the reductions (sum, mean, max, ...).")
ArgmaxArgminAttrs = _attrs("ArgmaxArgminAttrs", [("axis", None), ("keepdims", False)],
                           "Attributes of argmax/argmin.")
InitAttrs = _attrs("InitAttrs", [("dtype", "void")],
                   "Attributes of full/ones/zeros(_like) and arange.")
Conv2DAttrs = _attrs(
    "Conv2DAttrs",
    [("strides", (1, 1)), ("padding", (0, 0, 0, 0)), ("dilation", (1, 1)), ("groups", 1),
     ("data_layout", "NCHW"), ("kernel_layout", "OIHW"), ("out_layout", "NCHW"),
     ("out_dtype", "void")],
    "Attributes of nn.conv2d.")
Conv1DAttrs = _attrs(
    "Conv1DAttrs",
    [("strides", (1,)), ("padding", (0, 0)), ("dilation", (1,)), ("groups", 1),
     ("data_layout", "NCW"), ("kernel_layout", "OIW"), ("out_layout", "NCW"),
     ("out_dtype", "void")],
    "Attributes of nn.conv1d.")
Conv1DTransposeAttrs = _attrs(
    "Conv1DTransposeAttrs",
    [("strides", (1,)), ("padding", (0, 0)), ("output_padding", (0,)), ("dilation", (1,)),
     ("groups", 1), ("data_layout", "NCW"), ("kernel_layout", "IOW"), ("out_layout", "NCW"),
     ("out_dtype", "void")],
    "Attributes of nn.conv1d_transpose.")
Conv2DTransposeAttrs = _attrs(
    "Conv2DTransposeAttrs",
    [("strides", (1, 1)), ("padding", (0, 0, 0, 0)), ("output_padding", (0, 0)),
     ("dilation", (1, 1)), ("groups", 1), ("data_layout", "NCHW"), ("kernel_layout", "IOHW"),
     ("out_layout", "NCHW"), ("out_dtype", "void")],
    "Attributes of nn.conv2d_transpose.")
Pool2DAttrs = _attrs(
    "Pool2DAttrs",
    [("pool_size", (1, 1)), ("strides", (1, 1)), ("dilation", (1, 1)),
     ("padding", (0, 0, 0, 0)), ("ceil_mode", False), ("count_include_pad", False),
     ("layout", "NCHW"), ("out_layout", "NCHW")],
    "Attributes of nn.max_pool2d / nn.avg_pool2d.")
AdaptivePool2DAttrs = _attrs(
    "AdaptivePool2DAttrs", [("output_size", None), ("layout", "NCHW"), ("out_layout", "NCHW")],
    "Attributes of nn.adaptive_avg_pool2d.")
SoftmaxAttrs = _attrs("SoftmaxAttrs", [("axis", -1)], "Attributes of softmax/log_softmax.")
LeakyReluAttrs = _attrs("LeakyReluAttrs", [("alpha", 0.01)], "Attributes of leakyrelu.")
LayerNormAttrs = _attrs(
    "LayerNormAttrs", [("axes", (-1,)), ("epsilon", 1e-5), ("center", True), ("scale", True)],
    "Attributes of nn.layer_norm.")
GroupNormAttrs = _attrs(
    "GroupNormAttrs",
    [("num_groups", 1), ("channel_axis", 1), ("axes", ()), ("epsilon", 1e-5), ("center", True),
     ("scale", True)],
    "Attributes of nn.group_norm.")
RMSNormAttrs = _attrs("RMSNormAttrs", [("axes", (-1,)), ("epsilon", 1e-5)],
                      "Attributes of nn.rms_norm.")
BatchNormAttrs = _attrs(
    "BatchNormAttrs",
    [("axis", 1), ("epsilon", 1e-5), ("center", True), ("scale", True), ("momentum", 0.1)],
    "Attributes of nn.batch_norm.")
DropoutAttrs = _attrs("DropoutAttrs", [("rate", 0.5)], "Attributes of nn.dropout.")
AttentionAttrs = _attrs(
    "AttentionAttrs", [("scale", None), ("causal_mask", None), ("window_size", None)],
    "Attributes of nn.attention.")
PadAttrs = _attrs("PadAttrs", [("pad_width", ()), ("pad_value", 0.0), ("pad_mode", "constant")],
                  "Attributes of nn.pad.")
RepeatAttrs = _attrs("RepeatAttrs", [("repeats", 1), ("axis", None)], "Attributes of repeat.")
TriluAttrs = _attrs("TriluAttrs", [("k", 0)], "Attributes of tril/triu.")
