"""Parsing Relax TVMScript: bindings and blocks, symbolic shapes, match_cast, if/else, tuples,
calls of module functions, decorators; hand-written text against IR built with the builder,
and print -> parse round trips when the printer is there."""

import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.ir.structural import assert_structural_equal
from minitvm.script.parser import ParserError, from_source
from minitvm.script.parser import ir as I
from minitvm.script.parser import relax as R
from minitvm.script.parser import tir as T


def _t(*shape, dtype="float32"):
    return relax.TensorStructInfo(list(shape), dtype)


# ---------------------------------------------------------------------------- against the builder
TUPLES = '''
@R.function
def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor((4,), dtype="float32")) -> R.Tuple(R.Tensor(("n", 4), dtype="float32"), R.Tensor((4,), dtype="float32")):
    n = T.int64()
    with R.dataflow():
        t: R.Tuple(R.Tensor((n, 4), dtype="float32"), R.Tensor((4,), dtype="float32")) = (x, y)
        a: R.Tensor((4,), dtype="float32") = t[1]
        gv: R.Tuple(R.Tensor((n, 4), dtype="float32"), R.Tensor((4,), dtype="float32")) = (t[0], a)
        R.output(gv)
    return gv
'''


def _tuples_by_builder():
    n = tir.Var("n", "int64")
    x = relax.Var("x", _t(n, 4))
    y = relax.Var("y", _t(4))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            t = bb.emit(relax.Tuple([x, y]))
            a = bb.emit(relax.TupleGetItem(t, 1))
            gv = bb.emit_output(relax.Tuple([relax.TupleGetItem(t, 0), a]))
        bb.emit_func_output(gv)
    return bb.get()["main"]


def test_tuples_and_dataflow_match_the_builder():
    f = from_source(TUPLES)
    assert_structural_equal(f, _tuples_by_builder())
    (block,) = f.body.blocks
    # (the tuple field ``t[0]`` of ``gv`` is bound first, as TVM's normalizer binds it)
    assert [type(b.var) for b in block.bindings] == [relax.DataflowVar, relax.DataflowVar,
                                                    relax.DataflowVar, relax.Var]
    assert f.attrs["global_symbol"] == "main"


def test_tuples_round_trip_through_the_printer(sp):
    sp.roundtrip(_tuples_by_builder())


MATCH_CAST = '''
@R.function
def main(x: R.Tensor(dtype="float32", ndim=2)) -> R.Tensor(dtype="float32", ndim=2):
    m = T.int64()
    y: R.Tensor((m, 4), dtype="float32") = R.match_cast(x, R.Tensor((m, 4), dtype="float32"))
    s: R.Shape([m, 4]) = R.shape([m, 4])
    p = R.prim_value(m)
    z: R.Tensor((m, 4), dtype="float32") = y
    return z
'''


def test_match_cast_defines_symbolic_variables():
    m = tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo(ndim=2, dtype="float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.match_cast(x, _t(m, 4), "y")
        bb.emit(relax.ShapeExpr([m, 4]), "s")
        bb.emit(relax.PrimValue(m), "p")
        z = bb.emit(y, "z")
        bb.emit_func_output(z)
    expected = bb.get()["main"].with_attr("global_symbol", "main")
    expected = relax.Function(expected.params, expected.body,
                              relax.TensorStructInfo(ndim=2, dtype="float32"), True,
                              expected.attrs)
    f = from_source(MATCH_CAST)
    assert_structural_equal(f, expected)
    (block,) = f.body.blocks
    mc = block.bindings[0]
    assert isinstance(mc, relax.MatchCast) and mc.value is f.params[0]
    m_parsed = mc.struct_info.shape.values[0]
    assert block.bindings[1].value.values[0] is m_parsed
    assert block.bindings[2].value.value is m_parsed


def test_symbolic_shape_strings_share_one_variable_per_function():
    text = '''
@R.function
def f(y: R.Tensor(("n * 2",), dtype="float32"), x: R.Tensor(("n", "k"), dtype="float32")) -> R.Tensor(("n", "k"), dtype="float32"):
    n = T.int64()
    k = T.int64()
    z: R.Tensor((n, k), dtype="float32") = x
    return z
'''
    f = from_source(text)
    y, x = f.params
    n, k = x.struct_info.shape.values
    twice = y.struct_info.shape.values[0]
    assert isinstance(twice, tir.Mul) and twice.a is n and twice.b.value == 2
    z = f.body.blocks[0].bindings[0].var
    assert z.struct_info.shape.values[0] is n and z.struct_info.shape.values[1] is k
    assert f.ret_struct_info.shape.values[0] is n
    # another function has its own "n"
    g = from_source(text)
    assert g.params[1].struct_info.shape.values[0] is not n


def test_symbolic_dtype_mismatch_is_an_error():
    text = '''
@R.function
def f(x: R.Tensor(("n",), dtype="float32")):
    n = T.int32()
    return x
'''
    with pytest.raises(ParserError, match=r"'n' is int64 in the signature but declared int32"):
        from_source(text)


# ---------------------------------------------------------------------------- if / else
IF_ELSE = '''
@R.function
def f(c: R.Tensor((), dtype="bool"), x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
    if c:
        t: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")) = (x, x)
        y: R.Tensor((2, 3), dtype="float32") = t[0]
    else:
        y: R.Tensor((2, 3), dtype="float32") = x
    return y
'''


def test_if_else_builds_seq_expr_branches():
    f = from_source(IF_ELSE)
    (block,) = f.body.blocks
    (binding,) = block.bindings
    assert isinstance(binding.value, relax.If) and binding.var.name_hint == "y"
    then, orelse = binding.value.true_branch, binding.value.false_branch
    assert isinstance(then, relax.SeqExpr) and isinstance(orelse, relax.SeqExpr)
    # a branch's last binding of a non-leaf value stays, a leaf becomes the body itself
    assert [b.var.name_hint for b in then.blocks[0].bindings] == ["t", "y"]
    assert then.body is then.blocks[0].bindings[-1].var
    assert orelse.blocks == () and orelse.body is f.params[1]
    assert binding.value.cond is f.params[0]
    assert_structural_equal(binding.var.struct_info, _t(2, 3))
    assert f.body.body is binding.var


def test_if_else_round_trips(sp):
    sp.roundtrip(from_source(IF_ELSE))


@pytest.mark.parametrize("text, match", [
    ('''
@R.function
def f(c: R.Tensor((), dtype="bool"), x: R.Tensor((2,), dtype="float32")):
    if c:
        y = x
    return x
''', r"an if in Relax needs an else branch"),
    ('''
@R.function
def f(c: R.Tensor((), dtype="bool"), x: R.Tensor((2,), dtype="float32")):
    if c:
        y = x
    else:
        z = x
    return x
''', r"same variable; got 'y' and 'z'"),
])
def test_if_else_errors(text, match):
    with pytest.raises(ParserError, match=match):
        from_source(text)


# ---------------------------------------------------------------------------- modules
def test_module_functions_refer_forward_and_derive_call_struct_info():
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 4), dtype="float32")) -> R.Tensor((8, 4), dtype="float32"):
        cls = Module
        y = cls.helper(x)
        z = Module.helper(y)
        return z

    @R.function(private=True)
    def helper(a: R.Tensor(("k", 4), dtype="float32")) -> R.Tensor(("k", 4), dtype="float32"):
        return a
'''
    mod = from_source(text)
    main, helper = mod["main"], mod["helper"]
    assert helper.attrs is None  # private: no global_symbol
    (block,) = main.body.blocks
    y, z = block.bindings
    assert y.value.op is mod.get_global_var("helper")
    assert y.value.args == (main.params[0],)
    assert [int(d) for d in y.var.struct_info.dims()] == [8, 4]
    assert z.value.args == (y.var,)


def test_module_attrs_pure_and_private_flags():
    text = '''
@I.ir_module
class Module:
    I.module_attrs({"system_lib_prefix": "mod_", "flag": T.bool(True)})

    @R.function(pure=False, private=True)
    def f(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        R.func_attr({"relax.force_pure": True, "num_input": 1})
        return x
'''
    mod = from_source(text)
    assert mod.attrs == {"system_lib_prefix": "mod_", "flag": True}
    f = mod["f"]
    assert f.is_pure is False
    assert dict(f.attrs.items()) == {"relax.force_pure": True, "num_input": 1}


def test_nested_function_is_a_binding():
    text = '''
@R.function
def outer(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
    @R.function
    def inner(y: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        return x
    z: R.Tensor((2,), dtype="float32") = inner(x)
    return z
'''
    f = from_source(text)
    (block,) = f.body.blocks
    fn_binding, call_binding = block.bindings
    inner = fn_binding.value
    assert isinstance(inner, relax.Function) and inner.attrs is None
    assert inner.body.body is f.params[0]  # the inner function sees the outer parameter
    assert isinstance(fn_binding.var.struct_info, relax.FuncStructInfo)
    assert call_binding.value.op is fn_binding.var


def test_values_and_constants():
    text = '''
@R.function
def f(x: R.Tensor((2,), dtype="float32")) -> R.Tuple:
    c: R.Tensor((), dtype="float32") = R.const(1.5, "float32")
    s = R.str("hello")
    d = R.dtype("float16")
    p = R.prim_value(T.int64(3))
    q = R.prim_value(True)
    e = R.tuple()
    return e
'''
    f = from_source(text)
    vals = [b.value for b in f.body.blocks[0].bindings]
    assert isinstance(vals[0], relax.Constant) and float(vals[0].data.numpy()) == 1.5
    assert isinstance(vals[1], relax.StringImm) and vals[1].value == "hello"
    assert isinstance(vals[2], relax.DataTypeImm) and vals[2].value == "float16"
    assert isinstance(vals[3], relax.PrimValue) and vals[3].value.dtype == "int64"
    assert vals[4].value.dtype == "bool"
    assert isinstance(vals[5], relax.Tuple) and len(vals[5]) == 0
    assert_structural_equal(f.ret_struct_info, relax.TupleStructInfo([]))


def test_struct_info_namespace():
    assert_structural_equal(R.Tensor((2, 3), "float32"), _t(2, 3))
    assert R.Tensor("float16").dtype == "float16" and R.Tensor("float16").ndim == -1
    assert R.as_struct_info(R.Tensor).dtype == "void"
    assert isinstance(R.as_struct_info(R.Object), relax.ObjectStructInfo)
    assert R.Shape(ndim=3).ndim == 3
    assert R.Prim("int32").dtype == "int32"
    assert len(R.Tuple(R.Tensor((2,), "float32"), R.Object).fields) == 2
    opaque = R.Callable()
    assert opaque.is_opaque() and opaque.purity is False
    func = R.Callable((R.Tensor((2,), "float32"),), R.Tensor((2,), "float32"))
    assert not func.is_opaque() and func.purity is True


def test_operators_are_looked_up_by_name(sp):
    sp.need_ops("add")
    assert R.add is relax.op.add
    if getattr(relax.op, "nn", None) is not None and hasattr(relax.op.nn, "relu"):
        assert R.nn.relu is relax.op.nn.relu
    with pytest.raises(AttributeError, match="R.no_such_op is not available"):
        R.no_such_op  # noqa: B018


def test_registered_op_without_constructor_is_called_generically(monkeypatch):
    from minitvm.ir.op import Op, register_op

    name = "relax.test_parser_only_op"
    monkeypatch.setattr(Op, "_registry", dict(Op._registry))
    op = register_op(name)
    op.set_attr("FInferStructInfo", lambda call, bb: call.args[0].struct_info)
    text = '''
@R.function
def f(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
    y = R.test_parser_only_op(x)
    return y
'''
    f = from_source(text)
    call = f.body.blocks[0].bindings[0].value
    assert call.op is op and call.args == (f.params[0],)
    assert_structural_equal(f.body.blocks[0].bindings[0].var.struct_info, _t(2))


# ---------------------------------------------------------------------------- dataflow rules
def test_outputs_shadowing_and_scope():
    text = '''
@R.function
def f(x: R.Tensor((2,), dtype="float32")):
    with R.dataflow():
        a = x
        a = (a, a)
        b = a
        R.output(a)
    return a
'''
    f = from_source(text)
    bindings = f.body.blocks[0].bindings
    assert [type(b.var) for b in bindings] == [relax.DataflowVar, relax.Var, relax.DataflowVar]
    assert f.body.body is bindings[1].var
    assert bindings[1].value.fields == (bindings[0].var, bindings[0].var)


def test_dataflow_var_is_not_visible_after_the_block():
    text = '''
@R.function
def f(x: R.Tensor((2,), dtype="float32")):
    with R.dataflow():
        a = x
        b = x
        R.output(a)
    return b
'''
    with pytest.raises(ParserError, match=r"name 'b' is not defined"):
        from_source(text)


def test_blocks_split_around_dataflow():
    text = '''
@R.function
def f(x: R.Tensor((2,), dtype="float32")):
    a = x
    with R.dataflow():
        b = a
        R.output(b)
    c = b
    return c
'''
    f = from_source(text)
    kinds = [type(b) for b in f.body.blocks]
    assert kinds == [relax.BindingBlock, relax.DataflowBlock, relax.BindingBlock]


# ---------------------------------------------------------------------------- decorators
def test_decorated_module_and_functions_use_the_callers_names():
    dt = "float16"
    width = 3

    @I.ir_module
    class Module:
        @T.prim_func
        def copy(a: T.Buffer((width,), dt), b: T.Buffer((width,), dt)):
            for i in range(width):
                with T.block("copy"):
                    vi = T.axis.spatial(width, i)
                    T.reads(a[vi])
                    T.writes(b[vi])
                    b[vi] = a[vi]

        @R.function
        def main(x: R.Tensor((width,), dt)) -> R.Tensor((width,), dt):
            cls = Module  # noqa: F841 - TVMScript, read by the parser
            y: R.Tensor((width,), dt) = x
            return y

    assert isinstance(Module, tvm.IRModule)
    assert Module["copy"].buffer_map[Module["copy"].params[0]].dtype == "float16"
    assert Module["main"].params[0].struct_info.dtype == "float16"
    assert Module["copy"].attrs["global_symbol"] == "copy"

    @R.function(private=True)
    def standalone(x: R.Tensor((width,), dt)) -> R.Tensor((width,), dt):
        return x

    assert isinstance(standalone, relax.Function) and standalone.attrs is None

    @T.prim_func
    def kernel(a: T.Buffer((width,), "float32")):
        for i in T.serial(width):
            a[i] = T.float32(0)

    assert isinstance(kernel, tir.PrimFunc) and kernel.attrs["global_symbol"] == "kernel"


# ---------------------------------------------------------------------------- printer round trips
def test_builder_module_round_trips(sp):
    sp.need_ops("add", "multiply")
    n = tir.Var("n", "int64")
    x = relax.Var("x", _t(n, 4))
    y = relax.Var("y", _t(4))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y], attrs={"num_input": 1}):
        with bb.dataflow():
            a = bb.emit(relax.op.add(x, y))
            b = bb.emit(relax.op.multiply(a, relax.const(2.0, "float32")))
            t = bb.emit(relax.Tuple([a, b]))
            gv = bb.emit_output(relax.TupleGetItem(t, 1))
        bb.emit_func_output(gv)
    sp.roundtrip(bb.get())


def test_metadata_constants_round_trip(sp):
    sp.need_printer()
    import numpy as np

    c = relax.const(np.arange(6, dtype="float32").reshape(2, 3))
    x = relax.Var("x", _t(2, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        t = bb.emit(relax.Tuple([x, c]))
        bb.emit_func_output(t)
    mod = bb.get()
    text = mod.script(show_meta=True)
    assert "metadata" in text
    back = from_source(text)
    assert_structural_equal(back, mod)
    with pytest.raises(ParserError, match="name 'metadata' is not defined"):
        from_source(mod.script())


def test_if_and_calls_without_the_analysis_helpers(monkeypatch):
    """The parser derives an If's struct info (least common ancestor of the branches) and a
    call's (the callee's return with its symbolic dimensions bound) itself when
    ``relax.analysis`` lacks the helpers the BlockBuilder asks for."""
    from minitvm.relax import analysis

    for name in ("struct_info_lca", "derive_call_ret_struct_info"):
        if hasattr(analysis, name):
            monkeypatch.delattr(analysis, name)
    f = from_source(IF_ELSE)
    assert_structural_equal(f.body.blocks[0].bindings[0].value.struct_info, _t(2, 3))
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 4), dtype="float32"), c: R.Tensor((), dtype="bool")):
        y = Module.helper(x)
        if c:
            z = y
        else:
            z = R.tuple(y, y)
        return z

    @R.function
    def helper(a: R.Tensor(("k", 4), dtype="float32")) -> R.Tensor(("k", 4), dtype="float32"):
        return a
'''
    main = from_source(text)["main"]
    y, z = main.body.blocks[0].bindings
    assert [int(d) for d in y.var.struct_info.dims()] == [8, 4]
    assert isinstance(z.var.struct_info, relax.ObjectStructInfo)


def test_extern_function_in_a_module(sp):
    text = '''
@I.ir_module
class Module:
    ext = R.ExternFunc("my_extern")

    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        return x
'''
    mod = from_source(text)
    assert isinstance(mod["ext"], relax.ExternFunc) and mod["ext"].global_symbol == "my_extern"
    if sp.printer:
        assert from_source(mod.script()).script() == mod.script()
