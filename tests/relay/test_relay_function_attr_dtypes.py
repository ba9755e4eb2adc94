"""Function attributes keep the dtype of their integer values through print -> parse (they have
no schema to restore it from): ``io_used_memory=48u64`` parses back to an IntImm of uint64."""

import pytest

import minitvm
from minitvm import relay
from minitvm.tir.expr import IntImm


@pytest.mark.parametrize("dtype, text", [("uint64", "48u64"), ("int64", "48i64"),
                                         ("uint8", "48u8"), ("int32", "48")])
def test_int_attribute_dtype_survives_round_trip(dtype, text):
    x = relay.var("x", shape=(2,))
    func = relay.Function([x], relay.abs(x)).with_attr("size", IntImm(dtype, 48))
    mod = relay.transform.InferType()(minitvm.IRModule.from_expr(func))
    printed = mod.astext()
    assert f"size={text}" in printed
    back = relay.parse(printed)
    value = back["main"].attrs["size"]
    if dtype == "int32":
        assert int(value) == 48
    else:
        assert isinstance(value, IntImm) and value.dtype == dtype and value.value == 48
        assert minitvm.ir.structural_equal(back, mod)


def test_list_attribute_keeps_element_dtypes():
    x = relay.var("x", shape=(2,))
    func = relay.Function([x], relay.abs(x)).with_attr(
        "used_memory", [IntImm("uint64", 8), IntImm("uint64", 16)])
    mod = minitvm.IRModule.from_expr(func)
    back = relay.parse(mod.astext())
    assert [(v.dtype, v.value) for v in back["main"].attrs["used_memory"]] == \
        [("uint64", 8), ("uint64", 16)]


def test_annotate_used_memory_output_round_trips():
    x = relay.var("x", shape=(4, 1))
    mod = minitvm.IRModule.from_expr(relay.Function([x], relay.ceil(x)))
    out = relay.transform.AnnotateUsedMemory()(relay.transform.InferType()(mod))
    assert "io_used_memory=32u64" in out.astext()
    assert minitvm.ir.structural_equal(relay.parse(out.astext()), out)
