"""Attribute classes of the ``nn.*`` operators, with TVM's names, field order and defaults.

A field TVM declares without a default uses ``REQUIRED`` here: any value given for it (even None)
differs from the default, so the printer always shows it (``nn.dense(%x, %w, units=None)``).
"""

from __future__ import annotations

from ....ir.attrs import Attrs

__all__ = ["REQUIRED"]


class _Required:
    """Default marker of a field TVM declares without a default."""

    __slots__ = ()

    def __repr__(self):
        return "<required>"

    def __reduce__(self):
        return "REQUIRED"


REQUIRED = _Required()


def _attrs(name: str, fields) -> type:
    cls = type(name, (Attrs,), {"__slots__": (), "_fields": tuple(fields),
                                "__doc__": f"Attributes of the nn ops using ``{name}``."})
    cls.__module__ = __name__
    globals()[name] = cls
    __all__.append(name)
    return cls


def _conv_fields(nd: int, data_layout: str, kernel_layout: str):
    return [
        ("strides", (1,) * nd), ("padding", (0,) * (2 if nd == 1 else nd)),
        ("dilation", (1,) * nd), ("groups", 1), ("channels", None), ("kernel_size", None),
        ("data_layout", data_layout), ("kernel_layout", kernel_layout), ("out_layout", ""),
        ("out_dtype", ""),
    ]


def _conv_transpose_fields(nd: int, data_layout: str, kernel_layout: str):
    return [
        ("channels", None), ("kernel_size", None), ("strides", (1,) * nd),
        ("output_padding", (0,) * nd), ("padding", (0,) * nd), ("dilation", (1,) * nd),
        ("groups", 1), ("data_layout", data_layout), ("kernel_layout", kernel_layout),
        ("out_layout", ""), ("out_dtype", ""),
    ]


def _pool_fields(nd: int, layout: str, avg: bool):
    fields = [("pool_size", REQUIRED), ("strides", (1,) * nd), ("dilation", (1,) * nd),
              ("padding", (0,) * nd), ("layout", layout), ("out_layout", ""),
              ("ceil_mode", False)]
    if avg:
        fields.append(("count_include_pad", False))
    return fields


_NORM = [("axis", 1), ("epsilon", 1e-5), ("center", True), ("scale", True)]

BiasAddAttrs = _attrs("BiasAddAttrs", [("axis", 1)])
Conv1DAttrs = _attrs("Conv1DAttrs", _conv_fields(1, "NCW", "OIW"))
Conv2DAttrs = _attrs("Conv2DAttrs", _conv_fields(2, "NCHW", "OIHW"))
Conv3DAttrs = _attrs("Conv3DAttrs", _conv_fields(3, "NCDHW", "OIDHW"))
Conv1DTransposeAttrs = _attrs("Conv1DTransposeAttrs", _conv_transpose_fields(1, "NCW", "IOW"))
Conv2DTransposeAttrs = _attrs("Conv2DTransposeAttrs", _conv_transpose_fields(2, "NCHW", "IOHW"))
SoftmaxAttrs = _attrs("SoftmaxAttrs", [("axis", -1)])
MaxPool2DAttrs = _attrs("MaxPool2DAttrs", _pool_fields(2, "NCHW", False))
AvgPool2DAttrs = _attrs("AvgPool2DAttrs", _pool_fields(2, "NCHW", True))
MaxPool1DAttrs = _attrs("MaxPool1DAttrs", _pool_fields(1, "NCW", False))
AvgPool1DAttrs = _attrs("AvgPool1DAttrs", _pool_fields(1, "NCW", True))
GlobalPool2DAttrs = _attrs("GlobalPool2DAttrs", [("layout", "NCHW"), ("out_layout", "")])
AdaptivePool2DAttrs = _attrs(
    "AdaptivePool2DAttrs", [("output_size", ()), ("layout", "NCHW"), ("out_layout", "")]
)
MatmulAttrs = _attrs("MatmulAttrs", [("units", REQUIRED), ("out_dtype", ""),
                                     ("transpose_a", False), ("transpose_b", False)])
DenseAttrs = _attrs("DenseAttrs", [("units", REQUIRED), ("out_dtype", "")])
BatchMatmulAttrs = _attrs("BatchMatmulAttrs", [("out_dtype", ""), ("transpose_a", False),
                                               ("transpose_b", False)])
SparseDenseAttrs = _attrs("SparseDenseAttrs", [("sparse_lhs", False)])
UpSamplingAttrs = _attrs("UpSamplingAttrs", [
    ("scale_h", REQUIRED), ("scale_w", REQUIRED), ("layout", "NCHW"),
    ("method", "nearest_neighbor"), ("align_corners", False),
])
PadAttrs = _attrs("PadAttrs", [("pad_width", REQUIRED), ("pad_mode", "constant")])
LeakyReluAttrs = _attrs("LeakyReluAttrs", [("alpha", 0.25)])
PReluAttrs = _attrs("PReluAttrs", [("axis", 1)])
DropoutAttrs = _attrs("DropoutAttrs", [("rate", 0.5)])
BatchNormAttrs = _attrs("BatchNormAttrs", list(_NORM))
InstanceNormAttrs = _attrs("InstanceNormAttrs", list(_NORM))
LayerNormAttrs = _attrs("LayerNormAttrs", [("axis", -1)] + _NORM[1:])
GroupNormAttrs = _attrs("GroupNormAttrs", [("num_groups", 0)] + list(_NORM))
LRNAttrs = _attrs("LRNAttrs", [("size", 5), ("axis", 1), ("bias", 2.0), ("alpha", 0.0001),
                               ("beta", 0.75)])
L2NormalizeAttrs = _attrs("L2NormalizeAttrs", [("eps", REQUIRED), ("axis", REQUIRED)])
