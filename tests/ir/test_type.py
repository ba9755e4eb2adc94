"""TensorType data types are checked and normalized like TVM's dtype parser."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.type import TensorType, check_dtype


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool", "float16", "bfloat16",
                                   "int64x4", "handle"])
def test_valid_dtypes_are_kept(dtype):
    assert TensorType((2,), dtype).dtype == dtype


def test_uint1_is_bool():
    """TVM's bool is uint1: one data type, spelled "bool"."""
    assert TensorType((2,), "uint1").dtype == "bool"
    assert check_dtype("uint1x8") == "boolx8"


def test_bare_kinds_mean_32_bits():
    assert check_dtype("float") == "float32" and check_dtype("int") == "int32"
    assert relay.var("x", shape=(2,), dtype="float").type_annotation == TensorType((2,))


@pytest.mark.parametrize("dtype", ["floaty", "float33", "int3", "", "float32 "])
def test_unknown_dtype_is_clear_error(dtype):
    with pytest.raises(ValueError, match=f"unknown data type {dtype!r}"):
        relay.var("x", shape=(2,), dtype=dtype)


def test_cast_to_unknown_dtype_is_a_located_type_error():
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.cast(x, "float33")))
    with pytest.raises(TypeError, match=r"unknown data type .float33.[\s\S]*cast\(%x"):
        relay.transform.InferType()(mod)


@pytest.mark.parametrize("value", [object(), "abc", np.array([1 + 2j])])
def test_const_of_a_non_tensor_value_is_clear_error(value):
    with pytest.raises(TypeError, match="is not a tensor data type"):
        relay.const(value)


def test_negative_static_dimension_is_clear_error():
    import pytest

    from minitvm import relay

    with pytest.raises(ValueError, match="static dimensions must be >= 0"):
        relay.var("x", shape=(-2,))
