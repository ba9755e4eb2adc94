"""Issue 15 regressions in the Relay front half: metadata scalars (2), no RecursionError on deep
types and metadata (7), broadcast_to's text round trip (8), ConvertLayout with rank-changing
broadcasts (9), parser literal/attribute errors (11), int64-overflowing shapes (12), opt-in crash
reproducers (13), ADT equality and relay.const dtypes (14)."""

import os

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.parser import ParseError

HEADER = '#[version = "0.0.5"]\n'


def _typed(body_fn, *shapes):
    params = [relay.var(f"x{i}", shape=s, dtype="float32") for i, s in enumerate(shapes)]
    return relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function(params, body_fn(*params))))


# ----------------------------------------------------------------------------- (2) metadata
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("typed", [True, False])
def test_non_finite_scalar_constant_round_trips(value, typed):
    x = relay.var("x", shape=(), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, relay.const(np.float32(value)))))
    if typed:
        mod = relay.transform.InferType()(mod)
    text = mod.astext()
    assert '"shape": []' in text
    back = relay.parse(text)
    assert back["main"].checked_type.ret_type == relay.TensorType((), "float32")
    c = back["main"].body.args[1].data.numpy()
    assert c.shape == () and (np.isnan(c) if np.isnan(value) else c == value)
    if typed:
        tvm.ir.assert_structural_equal(mod, back)


# ----------------------------------------------------------------------------- (7) depth
def test_infer_type_on_tuples_nested_deeply():
    x = relay.var("x", shape=(2,), dtype="float32")
    e = x
    for _ in range(3000):
        e = relay.Tuple([e])
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], e)))
    t = mod["main"].checked_type.ret_type
    for _ in range(3000):
        assert isinstance(t, relay.TupleType)
        t = t.fields[0]
    assert t == relay.TensorType((2,), "float32")


def test_type_solver_unifies_deep_types_without_recursion():
    from minitvm.ir.type import IncompleteType
    from minitvm.relay.type_solver import TypeSolver, UnifyError, is_ground

    def nest(t, n):
        for _ in range(n):
            t = relay.TupleType([t, relay.FuncType([t], t)]) if n < 20 else relay.TupleType([t])
        return t

    leaf = relay.TensorType((3,), "float32")
    solver = TypeSolver()
    hole = IncompleteType()
    a, b = nest(leaf, 5000), nest(hole, 5000)
    solver.unify(a, b)
    assert is_ground(solver.resolve(b)) and solver.resolve(hole) == leaf
    with pytest.raises(UnifyError, match="a type cannot contain itself"):
        h2 = IncompleteType()
        TypeSolver().unify(h2, nest(h2, 3000))
    with pytest.raises(UnifyError, match="dtype float32 vs int8"):
        TypeSolver().unify(nest(leaf, 3000), nest(relay.TensorType((3,), "int8"), 3000))


@pytest.mark.parametrize("kind,depth", [("tuple", 5000), ("fn", 3000)])
def test_parser_and_printer_on_deep_types(kind, depth):
    if kind == "tuple":
        ty = "(" * depth + "float32" + ",)" * depth
    else:
        ty = "fn () -> " * depth + "float32"
    mod = relay.parse(HEADER + f"def @main(%x: {ty}) {{ %x }}")
    back = relay.parse(mod.astext())
    tvm.ir.assert_structural_equal(mod, back)


def test_parser_on_deep_patterns_and_attribute_lists():
    pat = "(" * 3000 + "%y" + ",)" * 3000
    val = "(" * 3000 + "%x" + ",)" * 3000
    fn = relay.parse_expr(f"fn (%x: float32) {{ match ({val}) {{ {pat} => %y }} }}")
    p = fn.body.clauses[0].lhs
    for _ in range(3000):
        p = p.patterns[0]
    assert fn.body.clauses[0].rhs is p.var  # the innermost pattern binds %y
    with pytest.raises(ParseError):  # nested lists in an attribute: parsed, then refused
        relay.parse(HEADER + "def @main(%x: Tensor[(2, 3), float32]) { sum(%x, axis="
                    + "[" * 3000 + "1" + "]" * 3000 + ") }")


def test_deep_metadata_json_is_a_parse_error():
    text = HEADER + "def @main(%x: float32) { %x }\n#[metadata]\n" + "[" * 100000 + "]" * 100000
    with pytest.raises(ParseError, match="invalid metadata section.*nested too deeply"):
        relay.parse(text)


@pytest.mark.parametrize("meta", [
    '{"relay.Constant": 5}', '{"relay.Constant": [5]}',
    '{"relay.Constant": [{"dtype": "float32", "shape": [-1], "data": "AAAAAA=="}]}',
    '{"relay.Constant": [{"dtype": "object", "shape": [], "data": ""}]}',
    '{"relay.Constant": [{"dtype": "float32", "shape": [2], "data": "!!"}]}',
    '{"relay.Constant": [{"dtype": "float32", "shape": [1e18], "data": "AAAA"}]}',
])
def test_damaged_metadata_entries_are_parse_errors(meta):
    text = HEADER + "def @main() { meta[relay.Constant][0] }\n#[metadata]\n" + meta
    with pytest.raises(ParseError, match="invalid metadata section"):
        relay.parse(text)


# ----------------------------------------------------------------------------- (8) broadcast_to
def test_broadcast_to_round_trips_through_text():
    mod = _typed(lambda x: relay.broadcast_to(x, (3, 4)), (3, 1))
    text = mod.astext()
    assert "broadcast_to(%x0, shape=[3, 4])" in text
    back = relay.parse(text)
    tvm.ir.assert_structural_equal(mod, back)
    x = np.arange(3, dtype="float32").reshape(3, 1)
    out = relay.create_executor("debug", mod=back).evaluate()(x).numpy()
    np.testing.assert_array_equal(out, np.broadcast_to(x, (3, 4)))


# ----------------------------------------------------------------------------- (9) layouts
@pytest.mark.parametrize("tail", [
    lambda c: relay.expand_dims(c, 0), lambda c: relay.expand_dims(c, 1, 2),
    lambda c: relay.broadcast_to(c, (2, 1, 2, 4, 4)), lambda c: relay.broadcast_to(c, (3, 2, 4, 4)),
    lambda c: relay.add(relay.expand_dims(c, 1), relay.const(1.0)),
], ids=["expand0", "expand1x2", "bcast_rank5", "bcast_rank4", "expand_then_add"])
def test_convert_layout_nhwc_with_rank_changing_broadcasts(tail):
    x = relay.var("x", shape=(1, 3, 4, 4))
    w = relay.var("w", shape=(2, 3, 3, 3))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x, w], tail(relay.nn.conv2d(x, w, padding=(1, 1))))))
    with tvm.transform.PassContext(opt_level=3):
        out = relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "default"]})(mod)
    out = relay.transform.InferType()(out)
    assert out["main"].checked_type == mod["main"].checked_type
    assert 'data_layout="NHWC"' in out.astext()
    # the rank-changing op runs on the NCHW value: a transform back comes right before it
    rng = np.random.default_rng(0)
    xv, wv = rng.random((1, 3, 4, 4), "float32"), rng.random((2, 3, 3, 3), "float32")
    a = relay.create_executor("debug", mod=mod).evaluate()(xv, wv).numpy()
    b = relay.create_executor("debug", mod=out).evaluate()(xv, wv).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- (11) parser
@pytest.mark.parametrize("text,message", [
    ("300i8", "out of range for int8"), ("-1u8", "out of range for uint8"),
    ("-129i8", "out of range for int8"), ("99999999999999999999", "out of range for int32"),
    ("1" * 5000, "invalid number literal"), ("1e999f", "out of range for float32"),
    ("1e39f", "out of range for float32"),
])
def test_bad_literals_are_parse_errors_with_position(text, message):
    with pytest.raises(ParseError, match=message) as err:
        relay.parse(HEADER + "def @main() {\n  " + text + "\n}")
    assert (err.value.line, err.value.column) == (3, 3)


def test_good_literals_at_the_edges():
    assert relay.parse_expr("-128i8").data.numpy() == -128
    assert relay.parse_expr("255u8").data.numpy() == 255
    assert relay.parse_expr("1e308f64").data.numpy() == 1e308


@pytest.mark.parametrize("sig,body,message", [
    ("Tensor[(1e999, 2), float32]", "%x", "a dimension must be an integer"),
    ("Tensor[(2.5, 3), float32]", "%x", "a dimension must be an integer"),
    ("Tensor[(99999999999999999999, 3), float32]", "%x", "does not fit in int64"),
    ("Tensor[(2, 3), float7]", "%x", "unknown dtype 'float7'"),
    ("Tensor[(2, 3), int3]", "%x", "unknown dtype 'int3'"),
    ("Tensor[(2, 3), float32]", "sum(%x, axis=1.5)", "attribute axis must hold integers"),
    ("Tensor[(2, 3), float32]", "sum(%x, axis=[0, 1.5])", "attribute axis must hold integers"),
    ("Tensor[(2, 3), float32]", 'cast(%x, dtype="float7")', "not a known dtype"),
    ("Tensor[(2, 3), float32]", "meta[relay.Constant][1e999]", "metadata index must be an integer"),
    ("(float32, float32)", "%x.99999999999999999999", "tuple index"),
])
def test_invalid_types_and_attributes_are_parse_errors(sig, body, message):
    with pytest.raises(ParseError, match=message) as err:
        relay.parse(HEADER + f"def @main(%x: {sig}) {{ {body} }}")
    assert err.value.line == 2 and err.value.column > 1


# ----------------------------------------------------------------------------- (12) sizes
def test_int64_overflowing_shape_is_refused_at_build_time():
    x = relay.var("x", shape=(2**33, 2**33), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))
    with pytest.raises(ValueError, match="overflows int64"):
        relay.build(mod, target="llvm")


# ----------------------------------------------------------------------------- (13) reproducers
def test_crash_reproducers_are_opt_in(tmp_path, monkeypatch):
    monkeypatch.delenv("MINITVM_CRASH_REPRODUCER", raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    bad = HEADER + "def @main(%x: float32) -> int8 { %x }"
    with pytest.raises(TypeError) as err:
        relay.parse(bad)
    assert not hasattr(err.value, "reproducer") and not os.listdir(tmp_path)
    monkeypatch.setenv("MINITVM_CRASH_REPRODUCER", "1")
    with pytest.raises(TypeError) as err:
        relay.parse(bad)
    assert os.path.dirname(os.path.dirname(err.value.reproducer)) == str(tmp_path)
    monkeypatch.setenv("MINITVM_CRASH_REPRODUCER", "0")  # an explicit off wins over config
    with tvm.transform.PassContext(config={"transform.reproducer_dir": str(tmp_path / "r")}):
        with pytest.raises(TypeError) as err:
            relay.parse(bad)
    assert not hasattr(err.value, "reproducer")
    monkeypatch.delenv("MINITVM_CRASH_REPRODUCER")
    with tvm.transform.PassContext(config={"transform.crash_reproducer": True,
                                           "transform.reproducer_dir": str(tmp_path / "r")}):
        with pytest.raises(TypeError) as err:
            relay.parse(bad)
    assert err.value.reproducer.startswith(str(tmp_path / "r"))


# ----------------------------------------------------------------------------- (14) equality
ADT_TEXT = HEADER + """type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @main(%x: float32) -> float32 {
  match? (Cons(%x, Nil)) { Cons(%y, _) => %y, Nil => %x }
}
"""


def test_parsing_adt_text_twice_gives_equal_modules():
    a, b = relay.parse(ADT_TEXT), relay.parse(ADT_TEXT)
    tvm.ir.assert_structural_equal(a, b)
    assert tvm.ir.structural_hash(a) == tvm.ir.structural_hash(b)
    c = relay.parse(ADT_TEXT.replace("Cons(%x, Nil)", "Nil"))
    assert not tvm.ir.structural_equal(a, c)


@pytest.mark.parametrize("value,dtype", [
    (np.int8(3), "int8"), (np.uint8(3), "uint8"), (np.int16(3), "int16"),
    (np.float16(1.5), "float16"), (np.float32(1.5), "float32"), (np.float64(1.5), "float32"),
    (np.int64(2), "int32"), (np.array([1.0, 2.0]), "float32"), (np.array([1, 2], "int8"), "int8"),
    ([1.0, 2.0], "float32"), ([1, 2], "int32"), (3, "int32"), (2.5, "float32"), (True, "bool"),
    (np.array(1.5, "float16"), "float16"),
])
def test_relay_const_dtype_rules_match_tvm(value, dtype):
    assert relay.const(value).data.dtype == dtype
    assert relay.const(value, "float64").data.dtype == "float64"


# ----------------------------------------------------------------------------- printer scopes
def test_shared_let_node_prints_once_and_round_trips():
    # found by the random program generator: a Let used twice sent the printer into an endless
    # loop (block -> scope -> expr -> block ...) that ate all memory
    x = relay.var("x", shape=(2,), dtype="float32")
    v = relay.var("v", shape=(2,), dtype="float32")
    shared = relay.Let(v, relay.exp(x), relay.add(v, v))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.multiply(shared, relay.negative(shared)))))
    text = mod.astext()
    assert text.count("let %v") == 1
    tvm.ir.assert_structural_equal(relay.parse(text), mod)


def test_value_shared_by_two_global_functions_prints_in_each():
    # LambdaLift's output shares nodes between @main and the lifted function: a %N bound in
    # one function must not be referenced from the next
    x = relay.var("x", shape=(2,), dtype="float32")
    shared = relay.exp(relay.const(np.ones(2, "float32")))
    gv = relay.GlobalVar("helper")
    mod = tvm.IRModule()
    mod[gv] = relay.Function([x], relay.add(x, relay.add(shared, shared)))
    y = relay.var("y", shape=(2,), dtype="float32")
    mod["main"] = relay.Function([y], relay.multiply(relay.Call(gv, [y]),
                                                     relay.add(shared, shared)))
    mod = relay.transform.InferType()(mod)
    tvm.ir.assert_structural_equal(relay.parse(mod.astext()), mod)


def test_type_solver_on_a_100000_deep_type():
    from minitvm.ir.type import IncompleteType
    from minitvm.relay.type_solver import TypeSolver, is_ground, substitute

    leaf, hole = relay.TensorType((2,), "float32"), IncompleteType()
    a, b = leaf, hole
    for _ in range(100_000):
        a, b = relay.TupleType([a]), relay.TupleType([b])
    solver = TypeSolver()
    solver.unify(a, b)
    assert solver.resolve(hole) == leaf and is_ground(solver.resolve(b))
    tv = relay.TypeVar("T")
    c = tv
    for _ in range(100_000):
        c = relay.TupleType([c])
    d = substitute(c, {tv: leaf})
    for _ in range(100_000):
        d = d.fields[0]
    assert d is leaf


def test_deep_tuple_argument_of_an_operator_is_a_type_error():
    # found by the parser fuzzer: the relation cache hashed the 3,000-deep argument type and
    # the error message formatted it, both recursively
    val = "(" * 3000 + "%x" + ",)" * 3000
    with pytest.raises(TypeError, match="negative"):
        relay.parse(HEADER + f"def @main(%x: float32) {{ negative({val}) }}")
