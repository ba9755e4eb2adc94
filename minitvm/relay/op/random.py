"""``relay.random``: TVM's splittable Threefry generator ops (threefry_generate, threefry_split,
uniform, normal) and ``threefry_key``. A generator is a (10,) uint64 tensor passed explicitly,
so the ops are pure functions. Numpy references: ``minitvm.topi.reference.random``."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType, TupleType
from ...topi.reference.random import threefry_key_array
from ..expr import Call, Constant, Expr, TupleWrapper, const
from .op import define_op, register_numpy_only
from .type_relations import check_num_args, tensor_arg, type_str

__all__ = ["threefry_key", "threefry_generate", "threefry_split", "uniform", "normal"]


class ThreefryGenerateAttrs(Attrs):
    __slots__ = ()
    _fields = (("out_shape", ()),)


class UniformAttrs(Attrs):
    __slots__ = ()
    _fields = (("out_shape", ()), ("out_dtype", "float32"))


class NormalAttrs(Attrs):
    __slots__ = ()
    _fields = (("out_shape", ()), ("out_dtype", "float32"))


_KEY = TensorType((10,), "uint64")


def _key_arg(arg_types, op_name):
    key = tensor_arg(arg_types, 0, op_name)
    if tuple(key.shape) != (10,) or key.dtype != "uint64":
        raise TypeError(f"{op_name}: the generator key must be a Tensor[(10), uint64], got "
                        f"{type_str(key)}")
    return key


def _out_shape(attrs, op_name):
    shape = tuple(int(s) for s in attrs.out_shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"{op_name}: out_shape must be non-negative, got {list(shape)}")
    if int(np.prod(shape, dtype=np.int64)) % 4:
        raise ValueError(f"{op_name}: Threefry generates groups of 4 numbers; the out_shape "
                         f"{list(shape)} has {int(np.prod(shape, dtype=np.int64))} elements")
    return shape


def _generate_rel(arg_types, attrs):
    op_name = "random.threefry_generate"
    check_num_args(op_name, arg_types, 1)
    _key_arg(arg_types, op_name)
    return TupleType([_KEY, TensorType(_out_shape(attrs, op_name), "uint64")])


def _split_rel(arg_types, attrs):
    check_num_args("random.threefry_split", arg_types, 1)
    _key_arg(arg_types, "random.threefry_split")
    return TupleType([_KEY, _KEY])


def _dist_rel(op_name, what):
    def rel(arg_types, attrs):
        check_num_args(op_name, arg_types, 3)
        _key_arg(arg_types, op_name)
        dtype = str(attrs.out_dtype)
        if dtype not in ("float32", "float64"):
            raise TypeError(f"{op_name}: out_dtype must be float32 or float64, got {dtype}")
        for i, name in zip((1, 2), what):
            t = tensor_arg(arg_types, i, op_name)
            if t.shape or t.dtype != dtype:
                raise TypeError(f"{op_name}: {name} must be a {dtype} scalar, got {type_str(t)}")
        return TupleType([_KEY, TensorType(_out_shape(attrs, op_name), dtype)])

    rel.__name__ = f"dist_rel[{op_name}]"
    return rel


define_op("random.threefry_generate", _generate_rel, pattern=OpPattern.OPAQUE,
          attrs_type=ThreefryGenerateAttrs, num_inputs=1,
          describe="Random uint64 words and the next generator state.")
define_op("random.threefry_split", _split_rel, pattern=OpPattern.OPAQUE, num_inputs=1,
          describe="Split a generator into two independent ones.")
define_op("random.uniform", _dist_rel("random.uniform", ("low", "high")),
          pattern=OpPattern.OPAQUE, attrs_type=UniformAttrs, num_inputs=3,
          describe="Uniform samples in [low, high) and the next generator state.")
define_op("random.normal", _dist_rel("random.normal", ("mean", "scale")),
          pattern=OpPattern.OPAQUE, attrs_type=NormalAttrs, num_inputs=3,
          describe="Normal samples and the next generator state.")


def threefry_key(seed: int) -> Constant:
    """The initial generator state for ``seed`` (a constant, as TVM's)."""
    return const(threefry_key_array(seed))


def threefry_generate(key: Expr, shape) -> TupleWrapper:
    attrs = ThreefryGenerateAttrs(out_shape=tuple(int(s) for s in shape))
    return TupleWrapper(Call(Op.get("random.threefry_generate"), [key], attrs), 2)


def threefry_split(key: Expr) -> TupleWrapper:
    return TupleWrapper(Call(Op.get("random.threefry_split"), [key]), 2)


def _scalar(v, dtype):
    return v if isinstance(v, Expr) else const(v, dtype)


def uniform(key: Expr, shape, dtype: str = "float32", low=0.0, high=1.0) -> TupleWrapper:
    attrs = UniformAttrs(out_shape=tuple(int(s) for s in shape), out_dtype=dtype)
    return TupleWrapper(Call(Op.get("random.uniform"),
                             [key, _scalar(low, dtype), _scalar(high, dtype)], attrs), 2)


def normal(key: Expr, shape, dtype: str = "float32", mean=0.0, scale=1.0) -> TupleWrapper:
    attrs = NormalAttrs(out_shape=tuple(int(s) for s in shape), out_dtype=dtype)
    return TupleWrapper(Call(Op.get("random.normal"),
                             [key, _scalar(mean, dtype), _scalar(scale, dtype)], attrs), 2)

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("random.uniform", "the random streams are defined bit-exactly by the numpy reference")
register_numpy_only("random.normal", "the random streams are defined bit-exactly by the numpy reference")
register_numpy_only("random.threefry_generate", "the random streams are defined bit-exactly by the numpy reference")
register_numpy_only("random.threefry_split", "the random streams are defined bit-exactly by the numpy reference")
