"""Golden tests of the Relay text printer: the seed tutorial's printed programs and TVM's forms."""

import textwrap

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir import Op

T54 = relay.TensorType((1, 64, 54, 54), "float32")


def _op(name):
    if name not in Op.list_op_names():
        pytest.skip(f"op {name} is not registered yet")
    return Op.get(name)


def _typed(expr, ty):
    expr._checked_type = ty
    return expr


def _call(name, args, ty, **attrs):
    op = _op(name)
    a = op.attrs_type(**attrs) if op.attrs_type is not None else None
    return _typed(relay.Call(op, args, a), ty)


def _dedent(s):
    return textwrap.dedent(s).strip("\n") + "\n"


def _seed_parts():
    x = relay.var("x", shape=(1, 64, 56, 56))
    w = relay.var("weight", shape=(64, 64, 3, 3))
    c0 = _typed(relay.const(np.zeros((1, 64, 54, 54), "float32")), T54)
    c1 = _typed(relay.const(np.ones((1, 64, 54, 54), "float32")), T54)
    return x, w, c0, c1


def test_seed_fold_constant_output():
    x, w, c0, c1 = _seed_parts()
    conv = _call("nn.conv2d", [x, w], T54, padding=(0, 0, 0, 0))
    a1 = _call("add", [conv, c0], T54)
    out = _call("add", [_call("add", [a1, c1], T54), _call("add", [a1, c1], T54)], T54)
    mod = tvm.IRModule.from_expr(relay.Function([x, w], out, T54))
    ty = "/* ty=Tensor[(1, 64, 54, 54), float32] */"
    expected = _dedent(f"""
        def @main(%x: Tensor[(1, 64, 56, 56), float32], %weight: Tensor[(64, 64, 3, 3), float32]) -> Tensor[(1, 64, 54, 54), float32] {{
          %0 = nn.conv2d(%x, %weight, padding=[0, 0, 0, 0]) {ty};
          %1 = add(%0, meta[relay.Constant][0] {ty} {ty}) {ty};
          %2 = add(%1, meta[relay.Constant][1] {ty} {ty}) {ty};
          %3 = add(%1, meta[relay.Constant][1] {ty} {ty}) {ty};
          add(%2, %3) {ty}
        }}
        """)
    expected += "\n// meta data omitted. you can use show_meta_data=True to include meta data"
    assert str(mod) == expected


def test_seed_fuse_ops_output_names_and_primitive_functions():
    x, w, c0, c1 = _seed_parts()
    p0 = relay.var("p0", shape=(1, 64, 56, 56))
    p1 = relay.var("p1", shape=(64, 64, 3, 3))
    f0 = relay.Function([p0, p1], _call("nn.conv2d", [p0, p1], T54, padding=(0, 0, 0, 0)), T54,
                        attrs={"Primitive": 1})
    q0, q1 = relay.var("p0", T54), relay.var("p1", T54)
    f2 = relay.Function([q0, q1], _call("add", [q0, q1], T54), T54, attrs={"Primitive": 1})
    r0 = relay.var("p0", T54)
    f6 = relay.Function([r0], _call("add", [r0, r0], T54), T54, attrs={"Primitive": 1})
    v1 = _typed(relay.Call(f0, [x, w]), T54)
    v3 = _typed(relay.Call(f2, [v1, c0]), T54)
    out = _typed(relay.Call(f6, [v3]), T54)
    text = str(tvm.IRModule.from_expr(relay.Function([x, w], out, T54)))
    ty = "/* ty=Tensor[(1, 64, 54, 54), float32] */"
    assert text.splitlines()[1:7] == [
        "  %0 = fn (%p0: Tensor[(1, 64, 56, 56), float32], %p1: Tensor[(64, 64, 3, 3), "
        "float32], Primitive=1) -> Tensor[(1, 64, 54, 54), float32] {",
        f"    nn.conv2d(%p0, %p1, padding=[0, 0, 0, 0]) {ty}",
        "  };",
        f"  %1 = %0(%x, %weight) {ty};",
        "  %2 = fn (%p01: Tensor[(1, 64, 54, 54), float32], %p11: Tensor[(1, 64, 54, 54), "
        "float32], Primitive=1) -> Tensor[(1, 64, 54, 54), float32] {",
        f"    add(%p01, %p11) {ty}",
    ]
    assert f"  %3 = %2(%1, meta[relay.Constant][0] {ty} {ty}) {ty};" in text
    assert "%4 = fn (%p02: Tensor[(1, 64, 54, 54), float32], Primitive=1)" in text
    assert text.splitlines()[-4] == f"  %4(%3) {ty}"


def test_seed_alter_layout_output_string_attrs_and_scalar():
    x, w, c0, _ = _seed_parts()
    t5 = relay.TensorType((1, 4, 54, 54, 16), "float32")
    lt = _call("layout_transform", [x], relay.TensorType((1, 4, 56, 56, 16), "float32"),
               src_layout="NCHW", dst_layout="NCHW16c")
    conv = _call("nn.conv2d", [lt, w], t5, padding=(0, 0, 0, 0), data_layout="NCHW16c")
    two = _typed(relay.const(2.0), relay.TensorType((), "float32"))
    m = _call("multiply", [_call("add", [c0, c0], T54), two], T54)
    text = str(relay.Function([x, w], _call("add", [conv, m], t5)))
    ty = "/* ty=Tensor[(1, 64, 54, 54), float32] */"
    assert ('%0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c") '
            "/* ty=Tensor[(1, 4, 56, 56, 16), float32] */;") in text
    assert 'nn.conv2d(%0, %weight, padding=[0, 0, 0, 0], data_layout="NCHW16c")' in text
    assert (f"add(meta[relay.Constant][0] {ty} {ty}, meta[relay.Constant][0] {ty} {ty}) {ty};"
            in text)
    assert f"multiply(%2, 2f /* ty=float32 */) {ty}" in text


@pytest.mark.parametrize("value,dtype,text", [
    (42, "int16", "42i16"), (42, "int32", "42"), (42, "int64", "42i64"), (3, "float16", "3f16"),
    (3, "float32", "3f"), (3, "float64", "3f64"), (True, "bool", "True"), (-1.5, "float32", "-1.5f"),
    (1e-05, "float32", "1e-05f"), (1e11, "float32", "1e+11f"), (0.5, "float32", "0.5f"),
])
def test_scalar_constants_inline(value, dtype, text):
    assert str(relay.const(value, dtype)) == text


def test_non_simple_constants_are_meta_refs():
    assert str(relay.const(np.arange(3, dtype="int8"))).startswith("meta[relay.Constant][0]")
    assert str(relay.const(7, "uint8")).startswith("meta[relay.Constant][0]")


def test_attr_value_formats():
    x = relay.var("x", shape=(1, 2, 3, 3))
    conv = relay.Call(_op("nn.conv2d"), [x, x], _op("nn.conv2d").attrs_type(
        channels=2, kernel_size=(3, 3), out_dtype="int32"))
    assert "channels=2, kernel_size=[3, 3], out_dtype=\"int32\"" in str(conv)
    op = _op("nn.batch_norm")
    fields = dict(op.attrs_type._fields)
    if "epsilon" in fields:
        y = relay.Call(op, [x, x, x, x, x], op.attrs_type(epsilon=2e-05, center=False))
        assert "epsilon=2e-05f, center=False" in str(y)


@pytest.mark.parametrize("ty,text", [
    (relay.TensorType((1, 64, 54, 54), "float32"), "Tensor[(1, 64, 54, 54), float32]"),
    (relay.TensorType((3,), "float32"), "Tensor[(3), float32]"),
    (relay.TensorType((), "int64"), "int64"),
    (relay.TensorType((relay.Any(), 4), "float32"), "Tensor[(?, 4), float32]"),
    (relay.TupleType([relay.TensorType((), "bool")]), "(bool,)"),
    (relay.TupleType([]), "()"),
    (relay.FuncType([relay.TensorType((), "int32")], relay.TensorType((2,), "int8")),
     "fn (int32) -> Tensor[(2), int8]"),
    (relay.RefType(relay.TensorType((), "float32")), "ref(float32)"),
])
def test_type_text(ty, text):
    assert str(ty) == text


def test_symbolic_dims_are_meta_refs():
    n = tvm.tir.SizeVar("n", "int64")
    x = relay.var("x", shape=(n, 2))
    assert "Tensor[(meta[tir.SizeVar][0], 2), float32]" in str(relay.Function([x], x))
    assert '"type_key": "tir.SizeVar"' in relay.Function([x], x).astext()


def test_adt_definitions_and_match():
    mod = tvm.IRModule()
    lst = relay.GlobalTypeVar("List")
    a = relay.TypeVar("A")
    cons = relay.Constructor("Cons", [a, relay.TypeCall(lst, [a])], lst)
    nil = relay.Constructor("Nil", [], lst)
    mod[lst] = relay.TypeData(lst, [a], [cons, nil])
    xs = relay.var("xs", relay.TypeCall(lst, [relay.TensorType((), "int32")]))
    h, t = relay.var("h"), relay.var("t")
    m = relay.Match(xs, [
        relay.Clause(relay.PatternConstructor(cons, [relay.PatternVar(h), relay.PatternWildcard()]),
                     h),
        relay.Clause(relay.PatternConstructor(nil, []), relay.const(0)),
    ])
    mod["head"] = relay.Function([xs], m)
    mod["mk"] = relay.Function([], relay.Call(cons, [relay.const(1), relay.Call(nil, [])]))
    mod["wild"] = relay.Function([xs], relay.Match(xs, [relay.Clause(
        relay.PatternVar(t), t)], complete=False))
    assert str(mod) == _dedent("""
        type List[A] {
          Cons(A, List[A]),
          Nil,
        }

        def @head(%xs: List[int32]) {
          match (%xs) {
            Cons(%h, _) => {
              %h
            },
            Nil => {
              0
            },
          }
        }

        def @mk() {
          %0 = Nil;
          Cons(1, %0)
        }

        def @wild(%xs1: List[int32]) {
          match? (%xs1) {
            %t => {
              %t
            },
          }
        }
        """)


def test_let_if_tuple_ref_forms():
    x = relay.var("x", shape=(2,))
    c = relay.var("c", relay.TensorType((), "bool"))
    v = relay.var("v")
    r = relay.var("r")
    body = relay.Let(v, relay.Tuple([x, x]), relay.If(
        c, relay.TupleGetItem(v, 0),
        relay.Let(r, relay.RefCreate(x), relay.Tuple([relay.RefWrite(r, x), relay.RefRead(r)]))))
    assert str(relay.Function([x, c], body)) == _dedent("""
        fn (%x: Tensor[(2), float32], %c: bool) {
          let %v = (%x, %x);
          if (%c) {
            %v.0
          } else {
            let %r = ref(%x);
            %0 = ref_write(%r, %x);
            %1 = ref_read(%r);
            (%0, %1)
          }
        }
        """).rstrip("\n")


def test_free_vars_dedup_type_params_and_one_tuple():
    x1, x2 = relay.var("x"), relay.var("x")
    a = relay.TypeVar("A")
    y = relay.var("y", a)
    f = relay.Function([y], relay.Tuple([y]), a, [a])
    text = str(relay.Tuple([relay.add(x1, x2), f]))
    assert text == _dedent("""
        free_var %x;
        free_var %x1;
        %0 = add(%x, %x1);
        %1 = fn [A](%y: A) -> A {
          (%y,)
        };
        (%0, %1)
        """).rstrip("\n")


def test_names_and_temps_are_numbered_across_functions():
    mod = tvm.IRModule()
    for name in ("g", "f"):
        x = relay.var("x", shape=(1,))
        y = relay.add(x, x)
        mod[name] = relay.Function([x], relay.multiply(y, y))
    text = str(mod)
    assert text.index("def @f") < text.index("def @g")
    assert "def @f(%x: Tensor[(1), float32]) {\n  %0 = add(%x, %x);" in text
    assert "def @g(%x1: Tensor[(1), float32]) {\n  %1 = add(%x1, %x1);" in text
    assert "}\n\ndef @g" in text


def test_shared_final_and_let_value_rules():
    x = relay.var("x", shape=(1,))
    y = relay.exp(x)
    v = relay.var("v")
    # a let value used once is inlined; a shared one gets a temp before the let
    assert "let %v = exp(%x);\n  %v" in str(relay.Function([x], relay.Let(v, y, v)))
    f = relay.Function([x], relay.Let(v, y, relay.add(v, y)))
    assert "%0 = exp(%x);\n  let %v = %0;\n  add(%v, %0)" in str(f)


def test_astext_header_metadata_and_omitted_comment():
    c = relay.const(np.array([1.5, -2.0], "float32"))
    mod = tvm.IRModule.from_expr(relay.Function([], relay.add(c, c)))
    full = mod.astext()
    assert full.startswith('#[version = "0.0.5"]\ndef @main() {')
    assert '#[metadata]\n{\n  "relay.Constant": [' in full and '"type_key"' in full
    brief = mod.astext(show_meta_data=False)
    assert brief.endswith(
        "/* For debugging purposes the metadata section has been omitted.\n"
        " * If you would like to see the full metadata section you can set the \n"
        " * option to `True` when invoking `astext`. \n */")
    assert "type_key" not in str(mod) and not str(mod).startswith("#[version")
    assert str(mod).endswith("// meta data omitted. you can use show_meta_data=True to include "
                             "meta data")
    plain = tvm.IRModule.from_expr(relay.Function([], relay.const(1)))
    assert str(plain) == "def @main() {\n  1\n}\n"


def test_annotate_replaces_type_comment():
    x = relay.var("x", shape=(2,))
    call = _typed(relay.add(x, x), relay.TensorType((2,), "float32"))
    text = relay.astext(relay.Function([x], call),
                        annotate=lambda e: " /* call */" if isinstance(e, relay.Call) else "")
    assert "add(%x, %x) /* call */" in text and "ty=" not in text


def test_call_attrs_of_function_calls_carry_type_key():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], x)
    attrs = _op("nn.conv2d").attrs_type(groups=2)
    text = str(relay.Call(f, [x], attrs))
    assert 'groups=2, attrs_type_key="relay.attrs.Conv2DAttrs")' in text


def _chain(n):
    x = relay.var("x", shape=(2,))
    y = x
    add = _op("add")
    for _ in range(n):
        y = relay.Call(add, [y, x])
    return relay.Function([x], y)


def _let_chain(n):
    x = relay.var("x", shape=(2,))
    vs = [relay.var(f"v{i}") for i in range(n)]
    body = vs[-1]
    for i in range(n - 1, -1, -1):
        body = relay.Let(vs[i], vs[i - 1] if i else x, body)
    return relay.Function([x], body)


def test_deep_add_chain_prints_without_recursion():
    text = str(_chain(100_000))
    lines = text.splitlines()
    assert lines[1] == "  %0 = add(%x, %x);"
    assert lines[-2] == "  add(%99998, %x)"


def test_deep_let_chain_prints_without_recursion():
    lines = str(_let_chain(100_000)).splitlines()
    assert lines[1] == "  let %v0 = %x;" and lines[-3] == "  let %v99999 = %v99998;"
    assert lines[-2] == "  %v99999"


def test_deep_nesting_prints_without_recursion():
    x = relay.var("x", relay.TensorType((), "bool"))
    body = x
    for _ in range(3000):
        body = relay.If(x, body, x)
    f = relay.Function([x], body)
    text = str(f)  # inline nested docs are ropes: linear memory, not cubic
    assert text.count("if (%x) {") == 3000
    assert text.splitlines()[3001] == " " * 6002 + "%x"
    tvm.ir.assert_structural_equal(f, relay.parse_expr(f.astext()), map_free_vars=True)


def test_resnet_sized_graph_prints_every_binding():
    x = relay.var("x", shape=(1, 64, 56, 56))
    w = relay.var("w", shape=(64, 64, 3, 3))
    y = x
    for _ in range(160):  # ~ResNet-50's op count, with attrs and types on every call
        y = _call("nn.conv2d", [y, w], T54, padding=(1, 1, 1, 1), channels=64,
                  kernel_size=(3, 3))
        y = _call("add", [y, _typed(relay.const(np.zeros((1, 64, 1, 1), "float32")), T54)], T54)
        y = _call("nn.relu", [y], T54)
    lines = str(relay.Function([x, w], y)).splitlines()
    ty = "/* ty=Tensor[(1, 64, 54, 54), float32] */"
    # header, 479 bindings, the result, "}", and the meta-data note
    assert len(lines) == 483
    assert lines[0].startswith("fn (%x: Tensor[(1, 64, 56, 56), float32], %w: ")
    for k, line in enumerate(lines[1:480]):
        prev = "%x" if k == 0 else f"%{k - 1}"
        if k % 3 == 0:
            body = f"nn.conv2d({prev}, %w, padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3])"
        elif k % 3 == 1:
            body = f"add({prev}, meta[relay.Constant][{k // 3}] {ty} {ty})"
        else:
            body = f"nn.relu({prev})"
        assert line == f"  %{k} = {body} {ty};"
    assert lines[480:482] == [f"  nn.relu(%478) {ty}", "}"]
    assert lines[482].startswith("// meta data omitted")
