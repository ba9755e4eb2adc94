"""TVMScript reads back ``T.index_map(lambda ...)`` (how layout_transform's map prints): a lambda
in parsed text is evaluated when called, with its parameters in a scope of their own."""

import pytest

import minitvm
from minitvm import relax, tir
from minitvm.script import from_source
from minitvm.script.parser.error import ParserError


def _module():
    bb = relax.BlockBuilder()
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 8, 3, 3), "float32"))
    with bb.function("main", [x]):
        y = bb.emit(relax.op.layout_transform(x, lambda a, b, c, d: (a, b // 4, c, d, b % 4)))
        bb.emit_func_output(y)
    return bb.get()


def test_layout_transform_round_trips_through_tvmscript():
    mod = _module()
    text = mod.script()
    assert "T.index_map(lambda a, b, c, d: (a, b // 4, c, d, b % 4))" in text
    back = from_source(text)
    assert minitvm.ir.structural_equal(back, mod)
    imap = back["main"].body.blocks[0].bindings[0].value.attrs.index_map
    assert [int(v) for v in imap.map_indices([0, 5, 1, 2])] == [0, 1, 1, 2, 1]


def test_lambda_parameters_do_not_leak_into_the_function():
    text = _module().script().replace("lambda a, b, c, d: (a, b // 4, c, d, b % 4)",
                                      "lambda n, b, c, d: (n, b // 4, c, d, b % 4)")
    back = from_source(text)  # the lambda's ``n`` shadows the symbolic n only inside it
    assert back["main"].ret_struct_info.shape[0].name == "n"


def test_lambda_with_defaults_is_a_clear_error():
    text = _module().script().replace("lambda a, b, c, d:", "lambda a, b, c, d=1:")
    with pytest.raises(ParserError, match="lambda parameters other than plain names"):
        from_source(text)
