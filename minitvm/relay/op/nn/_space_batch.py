"""nn.space_to_batch_nd and nn.batch_to_space_nd: move spatial blocks into the batch and back
(the TensorFlow form of dilated convolution that FlattenAtrousConv folds away). Numpy
references: ``minitvm.topi.reference.nn``."""

from __future__ import annotations

import numpy as np

from ....ir.attrs import make_attrs_class
from ....ir.op import OpPattern
from ....ir.type import TensorType
from ....topi.shape_conditions import at_most, divides
from ....topi.utils import arith, is_static_dim
from ...expr import Call
from ..op import define_op
from ..type_relations import check_num_args, tensor_arg

SpaceToBatchNDAttrs = make_attrs_class(
    "SpaceToBatchNDAttrs", [("block_shape", None), ("paddings", None), ("pad_value", 0.0)])
BatchToSpaceNDAttrs = make_attrs_class(
    "BatchToSpaceNDAttrs", [("block_shape", None), ("crops", None)])


def _check(op, data, block, pairs, what):
    if len(pairs) != len(block):
        raise TypeError(f"{op}: {what} has {len(pairs)} entries for {len(block)} block dims")
    if len(data.shape) < len(block) + 1:
        raise TypeError(f"{op}: data of rank {len(data.shape)} has too few dims for block "
                        f"{list(block)}")


def _s2b_rel(arg_types, attrs):
    op = "nn.space_to_batch_nd"
    check_num_args(op, arg_types, 1)
    data = tensor_arg(arg_types, 0, op)
    block, pads = tuple(attrs.block_shape), tuple(attrs.paddings)
    _check(op, data, block, pads, "paddings")
    shape = list(data.shape)
    for i, (b, (lo, hi)) in enumerate(zip(block, pads, strict=True), start=1):
        padded = arith(lambda d, p=lo + hi: d + p, shape[i]) if lo + hi else shape[i]
        if not divides(padded, b):  # (a symbolic size: stated, checked at each call)
            raise TypeError(f"{op}: padded dim {i} ({padded}) is not divisible by block {b}")
        shape[i] = arith(lambda d, b=b: d // b, padded)
    shape[0] = arith(lambda d: d * int(np.prod(block)), shape[0])
    return TensorType(shape, data.dtype)


def _b2s_rel(arg_types, attrs):
    op = "nn.batch_to_space_nd"
    check_num_args(op, arg_types, 1)
    data = tensor_arg(arg_types, 0, op)
    block, crops = tuple(attrs.block_shape), tuple(attrs.crops)
    _check(op, data, block, crops, "crops")
    prod = int(np.prod(block))
    if not divides(data.shape[0], prod):
        raise TypeError(f"{op}: batch {data.shape[0]} is not divisible by {prod}")
    shape = list(data.shape)
    shape[0] = arith(lambda d: d // prod, shape[0])
    for i, (b, (lo, hi)) in enumerate(zip(block, crops, strict=True), start=1):
        if lo + hi and not is_static_dim(shape[i]):  # (a static one is not checked, as TVM)
            at_most(lo + hi, arith(lambda d, b=b: d * b, shape[i]))  # (stated: crops fit)
        shape[i] = arith(lambda d, b=b, c=lo + hi: d * b - c, shape[i])
    return TensorType(shape, data.dtype)


define_op("nn.space_to_batch_nd", _s2b_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=SpaceToBatchNDAttrs, num_inputs=1)
define_op("nn.batch_to_space_nd", _b2s_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=BatchToSpaceNDAttrs, num_inputs=1)


def space_to_batch_nd(data, block_shape, paddings, pad_value=0):
    """Divide spatial dims into blocks and interleave them into the batch dim."""
    return Call(_op("nn.space_to_batch_nd"), [data], SpaceToBatchNDAttrs(
        block_shape=list(block_shape), paddings=[list(p) for p in paddings],
        pad_value=float(pad_value)))


def batch_to_space_nd(data, block_shape, crops):
    """Inverse of space_to_batch_nd: move batch blocks back into spatial dims, then crop."""
    return Call(_op("nn.batch_to_space_nd"), [data], BatchToSpaceNDAttrs(
        block_shape=list(block_shape), crops=[list(c) for c in crops]))


def _op(name):
    from ....ir.op import Op

    return Op.get(name)
