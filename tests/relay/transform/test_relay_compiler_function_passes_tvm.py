"""TVM v0.19's external-codegen helper passes: OutlineCompilerFunctionsWithExistingGlobalSymbols,
MarkCompilerFunctionsAsExtern and InlineCompilerFunctionsBoundTo (TVM's
test_compiler_function_utils.py cases restated with our own programs)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay

_HEADER = '#[version = "0.0.5"]\n'
_MAIN_SIG = ("def @main(%a: Tensor[(6, 8), float32], %b: Tensor[(3, 4, 5), float32]) "
             "-> (Tensor[(6, 10), float32], Tensor[(3, 4, 4), float32]) {\n")

# the "ext_a" partition: a dense+add composite inside a compiler function
_EXT_A_PARAMS = ("(%p0: Tensor[(6, 8), float32], %p1: Tensor[(10, 8), float32], "
                 "%p2: Tensor[(10), float32]")
_EXT_A_BODY = """
  %10 = fn (%c0: Tensor[(6, 8), float32], %c1: Tensor[(10, 8), float32],
            %c2: Tensor[(10), float32], PartitionedFromPattern="nn.dense_add_",
            Composite="ext_a.dense_bias") -> Tensor[(6, 10), float32] {
    %11 = nn.dense(%c0, %c1, units=10);
    add(%11, %c2)
  };
  %10(%p0, %p1, %p2)
"""
_EXT_A_ATTRS = ', Inline=1, Compiler="ext_a", global_symbol="ext_a_main_0", Primitive=1'
_EXT_A_FN = f"fn{_EXT_A_PARAMS}{_EXT_A_ATTRS}) -> Tensor[(6, 10), float32] {{{_EXT_A_BODY}}}"

# the "ext_b" partition stays inline in every case
_EXT_B = """
  %2 = fn(%q0: Tensor[(3, 4, 5), float32], %q1: Tensor[(3, 4, 5), float32], Inline=1,
          Compiler="ext_b", global_symbol="ext_b_main_3", Primitive=1)
          -> Tensor[(3, 4, 4), float32] {
    %20 = fn (%d0: Tensor[(3, 4, 5), float32], %d1: Tensor[(3, 4, 5), float32],
              PartitionedFromPattern="nn.batch_matmul_", Composite="ext_b.batch_matmul")
              -> Tensor[(3, 4, 4), float32] {
      nn.batch_matmul(%d0, %d1, transpose_b=True)
    };
    %20(%q0, %q1)
  };
  %3 = %2(%b, meta[relay.Constant][2]);
  (%1, %3)
}
"""


def _consts():
    rng = np.random.default_rng(7)
    shapes = [(10, 8), (10,), (3, 4, 5)]
    return {"relay.Constant": [relay.const(rng.standard_normal(s).astype("float32"))
                               for s in shapes]}


_META = _consts()


def _parse(text):
    return relay.parse(_HEADER + text, "from_string", None, _META)


def original_inline():
    """ext_a's function written at its call site."""
    return _parse(_MAIN_SIG + f"  %0 = {_EXT_A_FN};\n"
                  "  %1 = %0(%a, meta[relay.Constant][0], meta[relay.Constant][1]);" + _EXT_B)


def original_let_bound():
    """ext_a's function bound by a let and called through the variable."""
    return _parse(_MAIN_SIG + f"  let %f = {_EXT_A_FN};\n"
                  "  %1 = %f(%a, meta[relay.Constant][0], meta[relay.Constant][1]);" + _EXT_B)


def _with_global(attrs):
    return _parse(_MAIN_SIG
                  + "  %1 = @ext_a_main_0(%a, meta[relay.Constant][0], meta[relay.Constant][1]);"
                  + _EXT_B
                  + f"def @ext_a_main_0{_EXT_A_PARAMS}{attrs}) -> Tensor[(6, 10), float32] "
                  + f"{{{_EXT_A_BODY}}}\n")


def expected_outlined():
    return _with_global(_EXT_A_ATTRS)


def expected_extern():
    return _with_global(", Extern=1")


def expected_inlined():
    return _parse(_MAIN_SIG + "  %0 = nn.dense(%a, meta[relay.Constant][0], units=10);\n"
                  "  %1 = add(%0, meta[relay.Constant][1]);" + _EXT_B)


def _inputs():
    rng = np.random.default_rng(3)
    return [rng.standard_normal((6, 8)).astype("float32"),
            rng.standard_normal((3, 4, 5)).astype("float32")]


def _run(mod):
    out = relay.create_executor("debug", mod=mod, target="llvm").evaluate()(*_inputs())
    return [o.numpy() for o in out]


def _same_numbers(before, after):
    for x, y in zip(_run(before), _run(after), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


def test_outline_inline_compiler_function():
    before = original_inline()
    after = relay.transform.OutlineCompilerFunctionsWithExistingGlobalSymbols("ext_a")(before)
    tvm.ir.assert_structural_equal(after, expected_outlined(), map_free_vars=True)
    assert "ext_a_main_0" not in before  # the input module is untouched
    _same_numbers(before, after)


def test_outline_let_bound_compiler_function():
    before = original_let_bound()
    after = relay.transform.OutlineCompilerFunctionsWithExistingGlobalSymbols("ext_a")(before)
    tvm.ir.assert_structural_equal(after, expected_outlined(), map_free_vars=True)
    _same_numbers(before, after)


def test_outline_without_filter_lifts_every_compiler():
    after = relay.transform.OutlineCompilerFunctionsWithExistingGlobalSymbols()(original_inline())
    assert sorted(g.name_hint for g in after.functions) == ["ext_a_main_0", "ext_b_main_3",
                                                            "main"]
    body = after["main"].body
    assert isinstance(body.fields[1].op, tvm.ir.GlobalVar)
    assert body.fields[1].op.name_hint == "ext_b_main_3"


def test_outline_other_compiler_filter_changes_nothing():
    before = original_inline()
    after = relay.transform.OutlineCompilerFunctionsWithExistingGlobalSymbols("nope")(before)
    tvm.ir.assert_structural_equal(after, before)


def test_outline_shares_one_global_for_equal_symbols():
    x = relay.var("x", shape=(4,))
    p = relay.var("p", shape=(4,))
    ext = relay.Function([p], relay.exp(p)).with_attrs(
        {"Compiler": "ext_a", "global_symbol": "ext_exp"})
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(ext(x), ext(relay.abs(x)))))
    mod = relay.transform.InferType()(mod)
    after = relay.transform.OutlineCompilerFunctionsWithExistingGlobalSymbols()(mod)
    gv = after.get_global_var("ext_exp")
    add = after["main"].body
    assert add.args[0].op is gv and add.args[1].op is gv
    assert len(after.functions) == 2


def test_outline_needs_global_symbol():
    x = relay.var("x", shape=(4,))
    p = relay.var("p", shape=(4,))
    ext = relay.Function([p], relay.exp(p)).with_attr("Compiler", "ext_a")
    mod = tvm.IRModule.from_expr(relay.Function([x], ext(x)))
    with pytest.raises(ValueError, match="no 'global_symbol'"):
        relay.transform.OutlineCompilerFunctionsWithExistingGlobalSymbols()(mod)


def test_filter_must_be_a_string():
    with pytest.raises(TypeError, match="compiler_filter must be a str"):
        relay.transform.MarkCompilerFunctionsAsExtern(3)


def test_mark_compiler_functions_as_extern():
    before = expected_outlined()
    after = relay.transform.MarkCompilerFunctionsAsExtern("ext_a")(before)
    tvm.ir.assert_structural_equal(after, expected_extern(), map_free_vars=True)
    assert before["ext_a_main_0"].attrs["Compiler"] == "ext_a"  # input untouched
    assert dict(after["ext_a_main_0"].attrs.items()) == {"Extern": 1}


def test_mark_extern_filter_leaves_other_compilers():
    before = expected_outlined()
    after = relay.transform.MarkCompilerFunctionsAsExtern("ext_b")(before)
    tvm.ir.assert_structural_equal(after, before)
    after_all = relay.transform.MarkCompilerFunctionsAsExtern()(before)
    tvm.ir.assert_structural_equal(after_all, expected_extern(), map_free_vars=True)


def test_inline_compiler_functions_bound_to():
    before = expected_outlined()
    gv = before.get_global_var("ext_a_main_0")
    after = relay.transform.InlineCompilerFunctionsBoundTo([gv])(before)
    tvm.ir.assert_structural_equal(after, expected_inlined(), map_free_vars=True)
    assert "ext_a_main_0" in before
    _same_numbers(before, after)


def test_inline_nothing_is_identity():
    before = expected_outlined()
    after = relay.transform.InlineCompilerFunctionsBoundTo([])(before)
    tvm.ir.assert_structural_equal(after, before)


def test_inline_errors():
    mod = expected_outlined()
    with pytest.raises(ValueError, match="@missing is not in the module"):
        relay.transform.InlineCompilerFunctionsBoundTo([tvm.ir.GlobalVar("missing")])(mod)
    x = relay.var("x", shape=(4,))
    plain = tvm.IRModule.from_expr(relay.Function([x], relay.exp(x)))
    plain["helper"] = relay.Function([relay.var("y", shape=(4,))], relay.const(1.0))
    plain["main"] = relay.Function([x], plain.get_global_var("helper")(x))
    with pytest.raises(ValueError, match="not a Relay function with a 'Compiler'"):
        relay.transform.InlineCompilerFunctionsBoundTo([plain.get_global_var("helper")])(plain)


def _long_chain(n):
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(n):
        e = relay.negative(e)
    return x, e


def test_deep_chain_outline_and_inline():
    x, e = _long_chain(100_000)
    p = relay.var("p", shape=(2,))
    ext = relay.Function([p], relay.exp(p)).with_attrs(
        {"Compiler": "ext_a", "global_symbol": "ext_exp"})
    mod = tvm.IRModule.from_expr(relay.Function([x], ext(e)))
    out = relay.transform.OutlineCompilerFunctionsWithExistingGlobalSymbols()(mod)
    assert out["main"].body.op.name_hint == "ext_exp"
    back = relay.transform.InlineCompilerFunctionsBoundTo([out.get_global_var("ext_exp")])(out)
    assert back["main"].body.op.name == "exp" and len(back.functions) == 1


def test_deep_let_chain_outline():
    x = relay.var("x", shape=(2,))
    p = relay.var("p", shape=(2,))
    ext = relay.Function([p], relay.exp(p)).with_attrs(
        {"Compiler": "ext_a", "global_symbol": "ext_exp"})
    f = relay.var("f")
    body = x
    lets = []
    for i in range(100_000):
        v = relay.var(f"v{i}")
        lets.append((v, relay.negative(body)))
        body = v
    body = f(body)
    for v, val in reversed(lets):
        body = relay.Let(v, val, body)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Let(f, ext, body)))
    out = relay.transform.OutlineCompilerFunctionsWithExistingGlobalSymbols()(mod)
    e = out["main"].body
    assert isinstance(e, relay.Let) and e.var.name_hint == "v0"
