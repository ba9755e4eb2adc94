"""TVMScript printing of Relax: the seed tutorial's modules (``origin_mod.show()`` and the module
after LegalizeOps) line for line, and each construct as TVM's printer shows it."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.ir.attrs import _ATTRS_TYPES, make_attrs_class
from minitvm.ir.dialect import module_hook
from minitvm.ir.op import Op
from minitvm.script.printer import script

SEED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "seeds" / "003_aa2813242380c0f9.txt"


def op(name: str) -> Op:
    """The registered op, or an unregistered stand-in of that name (the printer reads the name;
    the shared registry is left alone)."""
    return Op.get(name) if name in Op.list_op_names() else Op(name)


def attrs_class(name: str, fields):
    """Relax's attrs class of that type key, or a stand-in that leaves the by-name registry
    (Relay's class of the same name) as it was."""
    key = "relax.attrs." + name
    if key in _ATTRS_TYPES:
        return _ATTRS_TYPES[key]
    prev = _ATTRS_TYPES.get(name)
    cls = make_attrs_class(name, fields, key)
    if prev is not None:
        _ATTRS_TYPES[name] = prev
    return cls


PermuteDimsAttrs = attrs_class("PermuteDimsAttrs", [("axes", None)])
MatmulAttrs = attrs_class("MatmulAttrs", [("out_dtype", "void")])


def TS(shape=None, dtype="float32", ndim=-1):
    return relax.TensorStructInfo(shape, dtype, ndim=ndim)


def call(name, args, attrs=None, sinfo_args=None, sinfo=None):
    c = relax.Call(op(name), args, attrs, sinfo_args)
    if sinfo is not None:
        c._struct_info = sinfo
    return c


def i64(v):
    return tir.const(v, "int64")


# --------------------------------------------------------------------------- the seed's modules
def _params(n):
    return [relax.Var("x", TS((n, 784))), relax.Var("fc1_weight", TS((128, 784))),
            relax.Var("fc1_bias", TS((128,))), relax.Var("fc2_weight", TS((10, 128))),
            relax.Var("fc2_bias", TS((10,)))]


def _forward(n, params, bindings, gv):
    body = relax.SeqExpr([relax.DataflowBlock(bindings)], gv)
    return relax.Function(params, body, TS((n, 10)),
                          attrs={"global_symbol": "forward", "num_input": 1})


def origin_mod(act: str = "relax.nn.relu") -> tvm.IRModule:
    """``NNModule().export_tvm(...)`` of the seed, built node by node."""
    n = tir.Var("n", "int64")
    x, w1, b1, w2, b2 = params = _params(n)
    dv = relax.DataflowVar
    pd, mm, ad = dv("permute_dims", TS((784, 128))), dv("matmul", TS((n, 128))), dv(
        "add", TS((n, 128)))
    rl, pd1, mm1 = dv("relu", TS((n, 128))), dv("permute_dims1", TS((128, 10))), dv(
        "matmul1", TS((n, 10)))
    ad1, gv = dv("add1", TS((n, 10))), relax.Var("gv", TS((n, 10)))
    B = relax.VarBinding
    bindings = [
        B(pd, call("relax.permute_dims", [w1], PermuteDimsAttrs(axes=None))),
        B(mm, call("relax.matmul", [x, pd], MatmulAttrs(out_dtype="void"))),
        B(ad, call("relax.add", [mm, b1])),
        B(rl, call(act, [ad])),
        B(pd1, call("relax.permute_dims", [w2], PermuteDimsAttrs(axes=None))),
        B(mm1, call("relax.matmul", [rl, pd1], MatmulAttrs(out_dtype="void"))),
        B(ad1, call("relax.add", [mm1, b2])),
        B(gv, ad1),
    ]
    return tvm.IRModule({"forward": _forward(n, params, bindings, gv)})


def _kernel(tensors):
    return te.create_prim_func(tensors).without_attr("global_symbol")


def _transpose(r, c, wname):
    w = te.placeholder((i64(r), i64(c)), name=wname)
    return _kernel([w, te.compute((i64(c), i64(r)), lambda ax0, ax1: w[ax1, ax0], name="T_transpose")])


def _matmul(n, xname, wname, k, m):
    x = te.placeholder((n, i64(k)), name=xname)
    w = te.placeholder((i64(k), i64(m)), name=wname)
    r = te.reduce_axis((i64(0), i64(k)), name="k")
    mm = te.compute((n, i64(m)), lambda i0, i1: te.sum(x[i0, r] * w[r, i1], axis=r),
                    name="matmul")
    return _kernel([x, w, mm])


def _add(n, aname, bname, m):
    a = te.placeholder((n, i64(m)), name=aname)
    b = te.placeholder((i64(m),), name=bname)
    return _kernel([a, b, te.compute((n, i64(m)), lambda ax0, ax1: a[ax0, ax1] + b[ax1],
                                     name="T_add")])


def _relu(n):
    a = te.placeholder((n, i64(128)), name="add")
    return _kernel([a, te.compute((n, i64(128)), lambda i0, i1: te.max(a[i0, i1],
                                                                         tir.const(0.0)),
                                  name="compute")])


def legalized_mod() -> tvm.IRModule:
    """The seed's module after ``LegalizeOps``: PrimFuncs from te and ``R.call_tir`` calls."""
    n = tir.Var("n", "int64")
    mod = tvm.IRModule()
    mod["transpose"] = _transpose(128, 784, "fc1_weight")
    mod["transpose1"] = _transpose(10, 128, "fc2_weight")
    mod["matmul"] = _matmul(n, "x", "permute_dims", 784, 128)
    mod["matmul1"] = _matmul(n, "relu", "permute_dims1", 128, 10)
    mod["add"] = _add(n, "matmul", "fc1_bias", 128)
    mod["add1"] = _add(n, "matmul1", "fc2_bias", 10)
    mod["relu"] = _relu(n)
    x, w1, b1, w2, b2 = params = _params(n)

    def call_tir(f, args, out):
        return call("relax.call_tir", [mod.get_global_var(f), relax.Tuple(args)], sinfo_args=[out])

    dv = relax.DataflowVar
    pd, mm, ad = dv("permute_dims", TS((784, 128))), dv("matmul", TS((n, 128))), dv(
        "add", TS((n, 128)))
    rl, pd1, mm1 = dv("relu", TS((n, 128))), dv("permute_dims1", TS((128, 10))), dv(
        "matmul1", TS((n, 10)))
    ad1, gv = dv("add1", TS((n, 10))), relax.Var("gv", TS((n, 10)))
    B = relax.VarBinding
    bindings = [
        B(pd, call_tir("transpose", [w1], TS((784, 128)))),
        B(mm, call_tir("matmul", [x, pd], TS((n, 128)))),
        B(ad, call_tir("add", [mm, b1], TS((n, 128)))),
        B(rl, call_tir("relu", [ad], TS((n, 128)))),
        B(pd1, call_tir("transpose1", [w2], TS((128, 10)))),
        B(mm1, call_tir("matmul1", [rl, pd1], TS((n, 10)))),
        B(ad1, call_tir("add1", [mm1, b2], TS((n, 10)))),
        B(gv, ad1),
    ]
    mod["forward"] = _forward(n, params, bindings, gv)
    return mod


def _seed_text(name: str) -> str:
    """A module seed 003 prints, as TVM prints it (tests/relax/seed/seed003_<name>.txt)."""
    return (pathlib.Path(__file__).resolve().parents[1] / "relax" / "seed" /
            f"seed003_{name}.txt").read_text()


ORIGIN = _seed_text("origin").rstrip("\n")

LEGALIZED = _seed_text("legalized").rstrip("\n")


def _seed_prints() -> list[list[str]]:
    """The programs the seed prints (its text lost the indentation: compared line by line)."""
    lines = SEED.read_text().splitlines()
    out, k = [], 0
    while True:
        try:
            k = lines.index("# from tvm.script import ir as I", k)
        except ValueError:
            return out
        end = lines.index("return gv", k)
        out.append(lines[k:end + 1])
        k = end + 1


def _stripped(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def test_seed_origin_mod_show(capsys):
    mod = origin_mod()
    assert mod.script() == ORIGIN
    mod.show()
    assert capsys.readouterr().out == ORIGIN + "\n"
    assert str(mod) == ORIGIN


def test_seed_legalized_module():
    assert legalized_mod().script() == LEGALIZED


def test_seed_relu_to_gelu_module():
    expected = ORIGIN.replace("R.nn.relu(add)", "R.nn.gelu(add)")
    assert origin_mod("relax.nn.gelu").script() == expected


@pytest.mark.skipif(not SEED.exists(), reason="the seed text is not next to this checkout")
def test_the_seed_text_line_for_line():
    prints = _seed_prints()
    assert len(prints) == 4
    assert _stripped(ORIGIN) == prints[0]
    assert _stripped(LEGALIZED) == prints[1]
    assert _stripped(origin_mod("relax.nn.gelu").script()) == prints[3]


# --------------------------------------------------------------------------- struct info
@pytest.mark.parametrize("sinfo, text", [
    (relax.ObjectStructInfo(), "R.Object"),
    (relax.PrimStructInfo("float32"), 'R.Prim("float32")'),
    (relax.ShapeStructInfo(ndim=-1), "R.Shape(ndim=-1)"),
    (relax.ShapeStructInfo(ndim=2), "R.Shape(ndim=2)"),
    (relax.ShapeStructInfo([1, 2, 3]), "R.Shape([1, 2, 3])"),
    (TS((784, 128)), 'R.Tensor((784, 128), dtype="float32")'),
    (TS((128,)), 'R.Tensor((128,), dtype="float32")'),
    (TS(()), 'R.Tensor((), dtype="float32")'),
    (TS(dtype="float32", ndim=2), 'R.Tensor(dtype="float32", ndim=2)'),
    (TS(dtype="int8"), 'R.Tensor(dtype="int8")'),
    (TS((10, 10), dtype=None), "R.Tensor((10, 10))"),
    (TS(dtype=None), "R.Tensor"),
    (TS(dtype=None, ndim=3), "R.Tensor(ndim=3)"),
    (relax.TupleStructInfo([]), "R.Tuple"),
    (relax.TupleStructInfo([TS((2,)), relax.ObjectStructInfo()]),
     'R.Tuple(R.Tensor((2,), dtype="float32"), R.Object)'),
    (relax.FuncStructInfo([TS((2,))], TS((2,))),
     'R.Callable((R.Tensor((2,), dtype="float32"),), R.Tensor((2,), dtype="float32"), True)'),
    (relax.FuncStructInfo([], TS((2,)), purity=False),
     'R.Callable((), R.Tensor((2,), dtype="float32"), False)'),
    (relax.FuncStructInfo.opaque_func(), "R.Callable"),
    (relax.FuncStructInfo.opaque_func(ret=TS(dtype="float32", ndim=2), purity=True),
     'R.Callable(ret=R.Tensor(dtype="float32", ndim=2), purity=True)'),
])
def test_struct_info(sinfo, text):
    assert str(sinfo) == text


def test_symbolic_struct_info_declares_its_variables():
    a, b = tir.Var("a", "int64"), tir.Var("b", "int64")
    assert str(relax.ShapeStructInfo([1, a, 3])) == "R.Shape([1, a, 3])"
    assert script(relax.ShapeStructInfo([1, a, 3]), verbose_expr=True) == (
        "a = T.int64()\nR.Shape([1, a, 3])")
    sinfo = relax.FuncStructInfo(
        [relax.PrimStructInfo("float32"), relax.ObjectStructInfo(),
         relax.ShapeStructInfo([1, a, 3]), relax.PrimStructInfo(value=b)],
        relax.TensorStructInfo([1, 2, 3], "float32"))
    assert script(sinfo, verbose_expr=True) == (
        "a = T.int64()\nb = T.int64()\n"
        'R.Callable((R.Prim("float32"), R.Object, R.Shape([1, a, 3]), R.Prim(value=b)), '
        'R.Tensor((1, 2, 3), dtype="float32"), True)')
    s = tir.SizeVar("s", "int64")
    assert script(TS((s, 2)), verbose_expr=True) == (
        's = T.int64(is_size_var=True)\nR.Tensor((s, 2), dtype="float32")')


def test_symbolic_arithmetic_in_shapes():
    n = tir.Var("n", "int64")
    two = tir.const(2, "int64")
    sinfo = TS([n * 128, n + 1, n // 2, two * n - 1, (n + 1) * 2, n - (n - 1), n % 3])
    assert str(sinfo) == ('R.Tensor((n * 128, n + 1, n // 2, 2 * n - 1, (n + 1) * 2, '
                          'n - (n - 1), n % 3), dtype="float32")')
    m = tir.Var("m", "int64")
    assert str(TS([tir.Min(n, m), tir.Max(n, m)])) == (
        'R.Tensor((T.min(n, m), T.max(n, m)), dtype="float32")')


# --------------------------------------------------------------------------- expressions
def test_leaf_expressions():
    assert str(relax.PrimValue(1)) == "R.prim_value(1)"
    n = tir.Var("n", "int64")
    assert str(relax.PrimValue(n + 1)) == "R.prim_value(n + 1)"
    assert str(relax.StringImm("hello")) == 'R.str("hello")'
    assert str(relax.StringImm('say "hi"\n')) == 'R.str("say \\"hi\\"\\n")'
    assert str(relax.DataTypeImm("float32")) == 'R.dtype("float32")'
    assert str(relax.ShapeExpr([1, 2, 3])) == "R.shape([1, 2, 3])"
    assert str(relax.ShapeExpr([n, 4])) == "R.shape([n, 4])"
    assert str(relax.Tuple([])) == "R.tuple()"


@pytest.mark.parametrize("value, dtype, text", [
    (1.0, None, 'R.const(1, "float32")'),
    (0.5, "float32", 'R.const(0.5, "float32")'),
    (0.1, "float32", 'R.const(0.10000000149011612, "float32")'),
    (0.1, "float64", 'R.const(0.10000000000000001, "float64")'),
    (3, None, 'R.const(3, "int64")'),
    (-7, "int32", 'R.const(-7, "int32")'),
    (True, None, 'R.const(True, "bool")'),
    (1.5, "float16", 'R.const(1.5, "float16")'),
])
def test_scalar_constants(value, dtype, text):
    assert str(relax.const(value, dtype)) == text


def test_tensor_constants_go_to_the_metadata_section():
    c0 = relax.const(np.arange(4, dtype="float32"))
    c1 = relax.const(np.ones((2, 2), "int32"))
    text = str(call("relax.add", [c0, c1, c0]))
    assert text == ('R.add(metadata["relax.expr.Constant"][0], '
                    'metadata["relax.expr.Constant"][1], metadata["relax.expr.Constant"][0])\n'
                    "# Metadata omitted. Use show_meta=True in script() method to show it.")
    shown = call("relax.add", [c0, c0]).script(show_meta=True)
    head, body = shown.split("\n")
    assert head.startswith('metadata = tvm.ir.load_json("""') and head.endswith('""")')
    assert '"relax.expr.Constant": [{"dtype": "float32", "shape": [4]' in head
    assert body == 'R.add(metadata["relax.expr.Constant"][0], metadata["relax.expr.Constant"][0])'


def _abc():
    x, y, z = (tir.Var(v, "int64") for v in "xyz")
    return [relax.Var(name, TS([1, v, 3])) for name, v in zip("abc", (x, y, z))]


def test_variables_and_tuples():
    a, b, c = _abc()
    assert str(a) == "a"
    assert a.script(verbose_expr=True) == 'x = T.int64()\na: R.Tensor((1, x, 3), dtype="float32")\na'
    dv = relax.DataflowVar("d", TS((2,)))
    assert dv.script(verbose_expr=True) == 'd: R.Tensor((2,), dtype="float32")\nd'
    tup = relax.Tuple([a, b, c])
    assert str(tup) == "(a, b, c)"
    assert str(relax.Tuple([a])) == "(a,)"
    assert str(relax.TupleGetItem(tup, 0)) == "(a, b, c)[0]"
    assert relax.TupleGetItem(tup, 2).script(verbose_expr=True) == """\
x = T.int64()
a: R.Tensor((1, x, 3), dtype="float32")
y = T.int64()
b: R.Tensor((1, y, 3), dtype="float32")
z = T.int64()
c: R.Tensor((1, z, 3), dtype="float32")
(a, b, c)[2]"""
    assert str(relax.Var("v", None)) == "v"
    assert relax.Var("", TS((2,))).script(verbose_expr=True).startswith("v: ")


def test_calls_print_attrs_as_keywords_in_field_order():
    a, b, _ = _abc()
    StridedSliceAttrs = attrs_class(
        "StridedSliceAttrs",
        [("axes", ()), ("begin", ()), ("end", ()), ("strides", None), ("assume_inbound", False)])
    c = call("relax.strided_slice", [a], StridedSliceAttrs(axes=[1], begin=[0], end=[4]))
    assert str(c) == ("R.strided_slice(a, axes=[1], begin=[0], end=[4], strides=None, "
                      "assume_inbound=False)")
    LeakyReluAttrs = attrs_class("LeakyReluAttrs", [("alpha", 0.01)])
    assert str(call("relax.nn.leakyrelu", [a], LeakyReluAttrs())) == "R.nn.leakyrelu(a, alpha=0.01)"
    AstypeAttrs = attrs_class("AstypeAttrs", [("dtype", "void")])
    assert str(call("relax.astype", [a], AstypeAttrs(dtype="float16"))) == (
        'R.astype(a, dtype="float16")')
    # DictAttrs: sorted keys; sinfo_args last; ops outside relax by their full name
    d = call("relax.my_op", [a, b], tvm.ir.DictAttrs({"z": 1, "a": "s"}), [TS((2,))])
    assert str(d) == 'R.my_op(a, b, a="s", z=1, sinfo_args=(R.Tensor((2,), dtype="float32"),))'
    assert str(call("nn.relu", [a])) == "nn.relu(a)"


def test_call_forms():
    a, _, _ = _abc()
    x = a.struct_info.shape[1]
    gv = relax.GlobalVar("tir_func")
    ct = call("relax.call_tir", [gv, relax.Tuple([a]), relax.ShapeExpr([x])], sinfo_args=[a.struct_info])
    assert str(ct) == ('R.call_tir(tir_func, (a,), out_sinfo=R.Tensor((1, x, 3), dtype="float32"), '
                       "tir_vars=R.shape([x]))")
    two = call("relax.call_tir", [gv, relax.Tuple([a, a])],
               sinfo_args=[relax.TupleStructInfo([TS((2,)), TS((3,))])])
    assert str(two) == ('R.call_tir(tir_func, (a, a), out_sinfo=[R.Tensor((2,), dtype="float32"), '
                        'R.Tensor((3,), dtype="float32")])')
    dps = call("relax.call_dps_packed", [relax.ExternFunc("my_dps_func"), relax.Tuple([a])],
               sinfo_args=[TS((2,))])
    assert str(dps) == 'R.call_dps_packed("my_dps_func", (a,), out_sinfo=R.Tensor((2,), dtype="float32"))'
    packed = relax.Call(relax.ExternFunc("vm.builtin.f"), [a], sinfo_args=[relax.ObjectStructInfo()])
    assert str(packed) == 'R.call_packed("vm.builtin.f", a, sinfo_args=(R.Object,))'
    f = relax.Var("f", relax.FuncStructInfo([a.struct_info], a.struct_info))
    assert str(relax.Call(f, [a])) == "f(a)"
    assert str(relax.Call(gv, [a])) == "tir_func(a)"
    assert str(call("relax.assert_op", [relax.const(False), relax.StringImm("x: {}"), a])) == (
        'R.assert_op(R.const(False, "bool"), a, format=R.str("x: {}"))')
    assert str(call("relax.print", [relax.StringImm("x: {}"), a])) == (
        'R.print(a, format=R.str("x: {}"))')
    assert str(relax.ExternFunc("ext")) == 'R.ExternFunc("ext")'


# --------------------------------------------------------------------------- bindings
def test_seq_expr_and_blocks():
    x = tir.Var("x", "int64")
    a = relax.Var("a", TS([1, x, 3]))
    b = relax.DataflowVar("b", TS([1, x, 3]))
    c = relax.Var("c", TS([1, x, 3]))
    block = relax.DataflowBlock([relax.VarBinding(b, call("relax.sin", [a])),
                                 relax.VarBinding(c, call("relax.sin", [b]))])
    assert str(relax.SeqExpr([block], c)) == """\
x = T.int64()
a: R.Tensor((1, x, 3), dtype="float32")
with R.dataflow():
    b: R.Tensor((1, x, 3), dtype="float32") = R.sin(a)
    c: R.Tensor((1, x, 3), dtype="float32") = R.sin(b)
    R.output(c)
c"""
    b2 = relax.Var("b", TS([1, x, 3]))
    plain = relax.BindingBlock([relax.VarBinding(b2, call("relax.sin", [a])),
                                relax.VarBinding(c, call("relax.sin", [b2]))])
    assert script(plain) == """\
x = T.int64()
a: R.Tensor((1, x, 3), dtype="float32")
b: R.Tensor((1, x, 3), dtype="float32") = R.sin(a)
c: R.Tensor((1, x, 3), dtype="float32") = R.sin(b)"""
    assert script(relax.DataflowBlock([])) == "with R.dataflow():\n    R.output()"


def test_match_cast_and_builtin_names():
    x = tir.Var("x", "int64")
    a = relax.Var("a", TS([1, x, 3]))
    b = relax.Var("b", TS([1, 5, 3]))
    assert script(relax.MatchCast(b, a, b.struct_info)) == """\
x = T.int64()
a: R.Tensor((1, x, 3), dtype="float32")
b: R.Tensor((1, 5, 3), dtype="float32") = R.match_cast(a, R.Tensor((1, 5, 3), dtype="float32"))"""
    r, t = relax.Var("R", TS([1, x, 3])), relax.Var("T", TS([1, x, 3]))
    assert script(relax.VarBinding(t, call("relax.sin", [r]))) == """\
x = T.int64()
R_1: R.Tensor((1, x, 3), dtype="float32")
T_1: R.Tensor((1, x, 3), dtype="float32") = R.sin(R_1)"""


def test_if_expression():
    a = relax.Var("a", TS([], "bool"))
    b, c = relax.Var("b", TS([1, 2, 3])), relax.Var("c", TS([1, 2, 3]))
    assert script(relax.If(a, relax.SeqExpr([], b), relax.SeqExpr([], c))) == """\
a: R.Tensor((), dtype="bool")
if a:
    b: R.Tensor((1, 2, 3), dtype="float32")
    b
else:
    c: R.Tensor((1, 2, 3), dtype="float32")
    c"""


def _fn(params, bindings, ret, sinfo=None, **kw):
    return relax.Function(params, relax.SeqExpr([relax.BindingBlock(bindings)], ret),
                          sinfo if sinfo is not None else ret.struct_info, **kw)


def test_if_binding_names_and_symbolic_match_cast():
    cond, x = relax.Var("c", TS([], "bool")), relax.Var("x", TS([4]))
    t1, t2, r = relax.Var("t", TS([4])), relax.Var("t", TS([4])), relax.Var("r", TS([4]))
    branch = relax.If(cond,
                      relax.SeqExpr([relax.BindingBlock([relax.VarBinding(t1, call("relax.add", [x, x]))])], t1),
                      relax.SeqExpr([relax.BindingBlock([relax.VarBinding(t2, call("relax.multiply", [x, x]))])], t2))
    m = tir.Var("m", "int64")
    mc, t3 = relax.Var("mc", TS([m])), relax.Var("t", TS([m]))
    f = _fn([cond, x], [relax.VarBinding(r, branch),
                        relax.MatchCast(mc, r, TS([m])),
                        relax.VarBinding(t3, mc)], t3, TS(dtype="float32", ndim=1),
            attrs={"global_symbol": "cond"})
    # names of a branch are free again after it; symbolic variables go to the function's top
    assert f.script() == """\
# from tvm.script import tir as T
# from tvm.script import relax as R

@R.function
def cond(c: R.Tensor((), dtype="bool"), x: R.Tensor((4,), dtype="float32")) -> R.Tensor(dtype="float32", ndim=1):
    m = T.int64()
    if c:
        t: R.Tensor((4,), dtype="float32") = R.add(x, x)
        r: R.Tensor((4,), dtype="float32") = t
    else:
        t: R.Tensor((4,), dtype="float32") = R.multiply(x, x)
        r: R.Tensor((4,), dtype="float32") = t
    mc: R.Tensor((m,), dtype="float32") = R.match_cast(r, R.Tensor((m,), dtype="float32"))
    t: R.Tensor((m,), dtype="float32") = mc
    return t"""


def test_two_variables_of_one_name():
    x = relax.Var("x", TS([2]))
    lv1, lv2, lv3 = (relax.Var("lv", TS([2])) for _ in range(3))
    f = _fn([x], [relax.VarBinding(lv1, call("relax.add", [x, x])),
                  relax.VarBinding(lv2, call("relax.add", [lv1, x])),
                  relax.VarBinding(lv3, call("relax.add", [lv2, lv1]))], lv3,
            attrs={"global_symbol": "main"})
    assert f.script().splitlines()[4:8] == [
        '    lv: R.Tensor((2,), dtype="float32") = R.add(x, x)',
        '    lv_1: R.Tensor((2,), dtype="float32") = R.add(lv, x)',
        '    lv_2: R.Tensor((2,), dtype="float32") = R.add(lv_1, lv)',
        "    return lv_2"]


def test_void_bindings_print_as_statements():
    x = relax.Var("x", TS([], "int32"))
    y, z = relax.Var("y", relax.TupleStructInfo([])), relax.Var("z", TS([], "int32"))
    p = call("relax.print", [relax.StringImm("Hi there!")], sinfo=relax.TupleStructInfo([]))
    f = _fn([x], [relax.VarBinding(y, p), relax.VarBinding(z, call("relax.add", [x, x]))], z,
            is_pure=False, attrs={"global_symbol": "baz", "relax.force_pure": True})
    assert f.script() == """\
# from tvm.script import relax as R

@R.function(pure=False)
def baz(x: R.Tensor((), dtype="int32")) -> R.Tensor((), dtype="int32"):
    R.func_attr({"relax.force_pure": True})
    R.print(format=R.str("Hi there!"))
    z: R.Tensor((), dtype="int32") = R.add(x, x)
    return z"""
    assert f.script(syntax_sugar=False).splitlines()[5] == (
        '    y: R.Tuple = R.print(format=R.str("Hi there!"))')


def test_hide_inferable_struct_info():
    A, B = relax.Var("A", TS([10, 20])), relax.Var("B", TS(dtype="float32", ndim=2))
    B2 = relax.Var("B2", TS([10, 20]))
    C, D, E = relax.Var("C", TS([10, 20])), relax.Var("D", TS([10, 20])), relax.Var("E", TS([10, 20]))
    f = _fn([A, B], [relax.MatchCast(B2, B, TS([10, 20])),
                     relax.VarBinding(C, call("relax.add", [A, B2], sinfo=TS([10, 20]))),
                     relax.VarBinding(D, C),
                     relax.VarBinding(E, call("relax.add", [D, B], sinfo=TS(dtype="float32", ndim=2)))],
            E, attrs={"global_symbol": "func"})
    assert f.script(show_all_struct_info=False) == """\
# from tvm.script import relax as R

@R.function
def func(A: R.Tensor((10, 20), dtype="float32"), B: R.Tensor(dtype="float32", ndim=2)) -> R.Tensor((10, 20), dtype="float32"):
    B2 = R.match_cast(B, R.Tensor((10, 20), dtype="float32"))
    C = R.add(A, B2)
    D = C
    E: R.Tensor((10, 20), dtype="float32") = R.add(D, B)
    return E"""


# --------------------------------------------------------------------------- functions, modules
def test_function_names_privacy_and_attrs():
    a = relax.Var("a", TS([10, 10], None))
    f = _fn([a], [], a, attrs={"some_attr": 1})
    assert f.script() == """\
# from tvm.script import relax as R

@R.function(private=True)
def main(a: R.Tensor((10, 10))) -> R.Tensor((10, 10)):
    R.func_attr({"some_attr": 1})
    return a"""
    assert f.script(name="func").splitlines()[3] == "def func(a: R.Tensor((10, 10))) -> R.Tensor((10, 10)):"
    g = f.with_attr("global_symbol", "func")
    assert g.script().splitlines()[2:5] == [
        "@R.function", "def func(a: R.Tensor((10, 10))) -> R.Tensor((10, 10)):",
        '    R.func_attr({"some_attr": 1})']
    # a global symbol that differs from the name stays an attribute
    assert g.script(name="other").splitlines()[4] == (
        '    R.func_attr({"global_symbol": "func", "some_attr": 1})')
    no_ret = relax.Function([a], relax.SeqExpr([], call("relax.sin", [a])), None)
    assert no_ret.script().splitlines()[3] == "def main(a: R.Tensor((10, 10))):"


def test_symbolic_signature_prints_strings():
    n = tir.Var("n", "int64")
    x = relax.Var("x", TS([n, n * 2]))
    f = _fn([x], [], x, TS([n * 2, n]), attrs={"global_symbol": "f"})
    assert f.script().splitlines()[4:6] == [
        'def f(x: R.Tensor(("n", "n * 2"), dtype="float32")) -> R.Tensor(("n * 2", "n"), dtype="float32"):',
        "    n = T.int64()"]


def test_nested_function():
    x, y, z = (relax.Var(v, TS([], "int32")) for v in "xyz")
    nested = _fn([y], [], y)
    nv = relax.Var("nested", nested.struct_info)
    main = _fn([x], [relax.VarBinding(nv, nested), relax.VarBinding(z, relax.Call(nv, [x]))], z,
               attrs={"global_symbol": "main"})
    # TVM prints the nested function's header and an indented empty line before it
    assert tvm.IRModule({"main": main}).script() == """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((), dtype="int32")) -> R.Tensor((), dtype="int32"):
        # from tvm.script import relax as R
<8 spaces>
        @R.function
        def nested(y: R.Tensor((), dtype="int32")) -> R.Tensor((), dtype="int32"):
            return y

        z: R.Tensor((), dtype="int32") = nested(x)
        return z""".replace("<8 spaces>", " " * 8)


def _cross_call_module():
    x, y = relax.Var("x", TS([], "int32")), relax.Var("y", TS([], "int32"))
    bar = _fn([x], [relax.VarBinding(y, call("relax.multiply", [x, x]))], y)
    gbar = relax.GlobalVar("bar")
    x2, y2, y3 = (relax.Var(v, TS([], "int32")) for v in ("x", "y", "y"))
    foo = _fn([x2], [relax.VarBinding(y2, relax.Call(gbar, [x2])),
                     relax.VarBinding(y3, relax.Call(gbar, [y2]))], y3,
              attrs={"global_symbol": "foo"})
    n = relax.Var("n", TS([], "int32"))
    main = _fn([n], [], n, attrs={"global_symbol": "main"})
    return tvm.IRModule({"main": main, gbar: bar, "foo": foo, "ext": relax.ExternFunc("ext"),
                         "kernel": _transpose(2, 3, "w")})


def test_module_order_aliases_and_private_functions():
    assert _cross_call_module().script() == """\
# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def kernel(w: T.Buffer((T.int64(2), T.int64(3)), "float32"), T_transpose: T.Buffer((T.int64(3), T.int64(2)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        # with T.block("root"):
        for ax0, ax1 in T.grid(T.int64(3), T.int64(2)):
            with T.block("T_transpose"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(w[v_ax1, v_ax0])
                T.writes(T_transpose[v_ax0, v_ax1])
                T_transpose[v_ax0, v_ax1] = w[v_ax1, v_ax0]

    ext = R.ExternFunc("ext")
    @R.function(private=True)
    def bar(x: R.Tensor((), dtype="int32")) -> R.Tensor((), dtype="int32"):
        y: R.Tensor((), dtype="int32") = R.multiply(x, x)
        return y

    @R.function
    def foo(x: R.Tensor((), dtype="int32")) -> R.Tensor((), dtype="int32"):
        cls = Module
        y: R.Tensor((), dtype="int32") = cls.bar(x)
        y_1: R.Tensor((), dtype="int32") = cls.bar(y)
        return y_1

    @R.function
    def main(n: R.Tensor((), dtype="int32")) -> R.Tensor((), dtype="int32"):
        return n"""


def test_module_options():
    mod = _cross_call_module()
    text = mod.script(module_alias="", name="Mod", indent_spaces=2)
    assert "class Mod:" in text
    assert "    y: R.Tensor((), dtype=\"int32\") = Mod.bar(x)" in text
    assert "cls = " not in text
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        mod.script(colour=True)
    # a variable may not take the module alias
    x = relax.Var("cls", TS([2]))
    assert _fn([x], [], x).script().splitlines()[3] == (
        'def main(cls_1: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):')


def test_header_lists_only_the_dialects_used():
    x = relax.Var("x", TS([2]))
    mod = tvm.IRModule({"main": _fn([x], [], x, attrs={"global_symbol": "main"})})
    assert mod.script().splitlines()[:3] == [
        "# from tvm.script import ir as I", "# from tvm.script import relax as R", ""]


def test_module_hooks():
    mod = origin_mod()
    assert mod.astext() == mod.script()
    assert module_hook("file_suffix", mod)(mod) == ".py"
    tir_only = tvm.IRModule({"kernel": _transpose(2, 3, "w")})
    assert tir_only.script().splitlines()[:6] == [
        "# from tvm.script import ir as I", "# from tvm.script import tir as T", "",
        "@I.ir_module", "class Module:", "    @T.prim_func(private=True)"]
    f = mod["forward"]
    assert str(f) == f.script()
    assert f.script().startswith("# from tvm.script import tir as T\n# from tvm.script import relax as R\n\n@R.function\ndef forward(")


# --------------------------------------------------------------------------- size
def test_100k_binding_dataflow_block_at_the_default_recursion_limit():
    limit = sys.getrecursionlimit()
    x = relax.Var("x", TS([4]))
    cur, bindings = x, []
    for _ in range(100_000):
        v = relax.DataflowVar("lv", TS([4]))
        bindings.append(relax.VarBinding(v, call("relax.add", [cur, x])))
        cur = v
    gv = relax.Var("gv", TS([4]))
    bindings.append(relax.VarBinding(gv, cur))
    f = relax.Function([x], relax.SeqExpr([relax.DataflowBlock(bindings)], gv), TS([4]),
                       attrs={"global_symbol": "main"})
    lines = tvm.IRModule({"main": f}).script().splitlines()
    assert sys.getrecursionlimit() == limit
    assert len(lines) == 100_011
    assert lines[8] == '            lv: R.Tensor((4,), dtype="float32") = R.add(x, x)'
    assert lines[-4:] == [
        '            lv_99999: R.Tensor((4,), dtype="float32") = R.add(lv_99998, x)',
        '            gv: R.Tensor((4,), dtype="float32") = lv_99999',
        "            R.output(gv)", "        return gv"]


def test_100k_deep_expression():
    x = relax.Var("x", TS([4]))
    e = x
    for _ in range(100_000):
        e = call("relax.add", [e, x])
    text = str(e)
    assert text.startswith("R.add(R.add(R.add(") and text.endswith("x), x), x)")
    assert len(text) == len("R.add(, x)") * 100_000 + 1
