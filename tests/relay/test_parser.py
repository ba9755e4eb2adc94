"""Relay text parser: round trips of printed programs, syntax forms, errors, deep chains."""

import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir import Op
from minitvm.relay.parser import ParseError

HDR = '#[version = "0.0.5"]\n'


def _op(name):
    if name not in Op.list_op_names():
        pytest.skip(f"op {name} is not registered yet")
    return Op.get(name)


def _infer(mod):
    infer = getattr(relay.transform, "InferType", None)
    return infer()(mod) if infer is not None else mod


def _roundtrip(mod_or_expr):
    if isinstance(mod_or_expr, tvm.IRModule):
        mod_or_expr = _infer(mod_or_expr)
        back = relay.parse(mod_or_expr.astext())
    else:
        back = relay.parse_expr(mod_or_expr.astext())
    tvm.ir.assert_structural_equal(mod_or_expr, back, map_free_vars=True)
    return back


def _mod(*funcs, **named):
    mod = tvm.IRModule()
    for name, f in named.items():
        mod[name] = f
    for f in funcs:
        mod["main"] = f
    return mod


def test_roundtrip_constants_and_attrs():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.const(np.random.rand(4, 3, 3, 3).astype("float32"))
    conv = relay.Call(_op("nn.conv2d"), [x, w], _op("nn.conv2d").attrs_type(
        padding=(1, 1, 1, 1), channels=4, kernel_size=(3, 3), out_dtype="float32"))
    y = relay.add(conv, relay.const(np.float32(1.0 / 3.0)))
    y = relay.multiply(y, relay.const(2, "int64").astype("float32"))
    back = _roundtrip(_mod(relay.Function([x], y)))
    const = back["main"].body.args[0].args[0].args[1]
    np.testing.assert_array_equal(const.data.numpy(), w.data.numpy())


@pytest.mark.parametrize("value,dtype", [
    (42, "int16"), (-7, "int32"), (2**40, "int64"), (0.1, "float16"), (1 / 3, "float32"),
    (1e-300, "float64"), (True, "bool"), (False, "bool"), (5, "uint8"), (float("nan"), "float32"),
])
def test_roundtrip_scalars(value, dtype):
    c = relay.const(value, dtype)
    back = relay.parse_expr(relay.Tuple([c]).astext())
    got = back.fields[0].data.numpy()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, c.data.numpy())


def test_roundtrip_tuples_lets_ifs_refs_closures():
    x = relay.var("x", shape=(2,))
    c = relay.var("c", relay.TensorType((), "bool"))
    v, r, f, y = relay.var("v"), relay.var("r"), relay.var("f"), relay.var("y", shape=(2,))
    closure = relay.Function([y], relay.add(y, x))
    body = relay.Let(v, relay.Tuple([x, relay.Tuple([x])]), relay.Let(
        f, closure, relay.If(c, relay.Call(f, [relay.TupleGetItem(v, 0)]),
                             relay.Let(r, relay.RefCreate(x), relay.Tuple([
                                 relay.RefWrite(r, x), relay.RefRead(r)]).__getitem__(1)))))
    _roundtrip(_mod(relay.Function([x, c], body)))


def test_roundtrip_gnf_sharing_and_multiple_functions():
    mod = tvm.IRModule()
    x = relay.var("x", shape=(3,))
    e = relay.exp(x)
    mod["helper"] = relay.Function([x], relay.add(e, e))
    a = relay.var("a", shape=(3,))
    gv = mod.get_global_var("helper")
    shared = relay.Call(gv, [a])
    mod["main"] = relay.Function([a], relay.Tuple([shared, relay.multiply(shared, a)]))
    back = _roundtrip(mod)
    main = back["main"].body
    assert main.fields[0] is main.fields[1].args[0]  # the temp stays one shared node


def test_roundtrip_adts_match_and_type_params():
    mod = tvm.IRModule()
    lst = relay.GlobalTypeVar("List")
    a = relay.TypeVar("A")
    cons = relay.Constructor("Cons", [a, relay.TypeCall(lst, [a])], lst)
    nil = relay.Constructor("Nil", [], lst)
    mod[lst] = relay.TypeData(lst, [a], [cons, nil])
    b = relay.TypeVar("B")
    xs = relay.var("xs", relay.TypeCall(lst, [b]))
    h, t = relay.var("h", b), relay.var("t")
    length = relay.GlobalVar("length")
    m = relay.Match(xs, [
        relay.Clause(relay.PatternConstructor(cons, [relay.PatternWildcard(), relay.PatternVar(t)]),
                     relay.add(relay.const(1), relay.Call(length, [t]))),
        relay.Clause(relay.PatternConstructor(nil), relay.const(0)),
    ])
    mod[length] = relay.Function([xs], m, relay.TensorType((), "int32"), [b])
    p, t2 = relay.var("p"), relay.var("t2")
    b = relay.TypeVar("B")
    xs = relay.var("xs", relay.TypeCall(lst, [b]))
    h = relay.var("h", b)
    mod["first"] = relay.Function([xs], relay.Match(xs, [
        relay.Clause(relay.PatternConstructor(cons, [relay.PatternVar(h), relay.PatternVar(t2)]),
                     relay.Call(cons, [h, t2])),
        relay.Clause(relay.PatternVar(p), p)], complete=False), None, [b])
    mod["mk"] = relay.Function([], relay.Call(cons, [relay.const(0), relay.Call(nil, [])]))
    back = _roundtrip(mod)
    assert "match?" in back.astext()


def test_roundtrip_function_attrs_and_free_vars():
    x = relay.var("x", shape=(2, 2))
    z = relay.var("z", shape=(2, 2))
    prim = relay.Function([x], relay.exp(x)).with_attr("Primitive", 1).with_attr(
        "Compiler", "ccompiler")
    expr = relay.Call(prim, [relay.add(z, z)])
    back = relay.parse_expr(expr.astext())
    tvm.ir.assert_structural_equal(expr, back, map_free_vars=True)
    assert back.op.attrs["Primitive"] == 1 and back.op.attrs["Compiler"] == "ccompiler"


def test_parse_handwritten_text():
    text = HDR + """
    def @main(%x: Tensor[(2, 3), float32], %y: float32) -> Tensor[(2, 3), float32] {
      %0 = %x + %y * 2f;   // graph binding, not a let
      let %t = (%0, -1.5f, 3i64);
      if (True) { %t.0 } else { negative(%x) }
    }
    """
    mod = relay.parse(text)
    body = mod["main"].body
    assert isinstance(body, relay.Let)
    first = body.value.fields[0]
    assert first.op.name == "add" and first.args[1].op.name == "multiply"
    assert body.value.fields[1].data.numpy() == np.float32(-1.5)
    assert body.value.fields[2].data.dtype == "int64"


def test_parse_expr_without_header_and_binary_precedence():
    e = relay.parse_expr("free_var %a: int32; free_var %b: int32; %a - %b * %a < %b")
    assert e.op.name == "less" and e.args[0].op.name == "subtract"
    assert e.args[0].args[1].op.name == "multiply"


def test_parse_runs_type_inference():
    mod = relay.parse(HDR + "def @main(%x: Tensor[(2), float32]) { add(%x, %x) }")
    try:
        ty = mod["main"].body.checked_type
    except ValueError:
        pytest.skip("InferType is not available yet")
    assert ty == relay.TensorType((2,), "float32")


def test_init_meta_table_and_init_module():
    c = np.arange(4, dtype="float32")
    mod = relay.parse(HDR + "def @f(%x: Tensor[(4), float32]) { add(%x, meta[relay.Constant][0]) }",
                      init_meta_table={"relay.Constant": [relay.const(c)]})
    np.testing.assert_array_equal(mod["f"].body.args[1].data.numpy(), c)
    mod2 = relay.parse(HDR + "def @main(%y: Tensor[(4), float32]) { @f(%y) }", init_module=mod)
    assert mod2["main"].body.op is mod.get_global_var("f") and "f" in mod2


def test_missing_version_header():
    with pytest.raises(ParseError, match="expected text format semantic version"):
        relay.parse("def @main() { 1 }")
    with pytest.raises(ParseError, match="invalid semantic version"):
        relay.parse('#[version = "0.0.4"]\ndef @main() { 1 }')
    assert relay.fromtext(HDR + "def @main() { 1 }")["main"].body.data.numpy() == 1


def test_syntax_error_reports_line_column_and_caret():
    with pytest.raises(ParseError) as info:
        relay.parse(HDR + "def @main(%x: float32) {\n  add(%x, %x;\n}", source_name="prog.relay")
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "prog.relay:3:13: parse error: expected ')'" in msg
    assert msg.endswith("  add(%x, %x;\n              ^")
    with pytest.raises(ParseError, match="unbound variable %y"):
        relay.parse_expr("free_var %x: int32; add(%x, %y)")
    with pytest.raises(ParseError, match="unknown operator or constructor 'no_such_op'"):
        relay.parse_expr("no_such_op(1)")
    with pytest.raises(ParseError, match=r"meta\[relay.Constant\]\[0\] is not in the metadata"):
        relay.parse_expr("meta[relay.Constant][0]")
    with pytest.raises(ParseError, match="invalid attributes"):
        relay.parse_expr("free_var %x: Tensor[(1, 1, 1, 1), float32]; nn.conv2d(%x, %x, bad=1)")


def test_tvm_parser_aliases_warn():
    with pytest.warns(DeprecationWarning, match="tvm.parser.parse_expr is deprecated"):
        e = tvm.parser.parse_expr("1f")
    assert e.data.numpy() == np.float32(1)
    with pytest.warns(DeprecationWarning, match="use tvm.relay.parse instead"):
        tvm.parser.parse(HDR + "def @main() { 1 }")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        relay.parse_expr("1")


def test_deep_add_chain_parses_without_recursion():
    x = relay.var("x", shape=(2,))
    y = x
    add = _op("add")
    for _ in range(100_000):
        y = relay.Call(add, [y, x])
    f = relay.Function([x], y)
    back = relay.parse_expr(f.astext())
    tvm.ir.assert_structural_equal(f, back, map_free_vars=True)


def test_deep_let_chain_parses_without_recursion():
    x = relay.var("x", shape=(2,))
    vs = [relay.var(f"v{i}") for i in range(100_000)]
    body = vs[-1]
    for i in range(len(vs) - 1, -1, -1):
        body = relay.Let(vs[i], vs[i - 1] if i else x, body)
    f = relay.Function([x], body)
    back = relay.parse_expr(f.astext())
    tvm.ir.assert_structural_equal(f, back, map_free_vars=True)


def test_deep_nesting_parses_without_recursion():
    text = "free_var %c: bool; " + "if (%c) { " * 5000 + "1" + " } else { 0 }" * 5000
    e = relay.parse_expr(text)
    depth = 0
    while isinstance(e, relay.If):
        e, depth = e.true_branch, depth + 1
    assert depth == 5000
    nested = "(" * 3000 + "1" + ",)" * 3000
    assert isinstance(relay.parse_expr(nested), relay.Tuple)
