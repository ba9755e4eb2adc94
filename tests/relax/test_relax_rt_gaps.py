"""TVMScript round trip (``from_source(m.script())`` structurally equal to ``m``) of the corners
the systematic run found: symbolic variables per function, If branches, nested SeqExprs,
recursive and dataflow-block local functions, NaN constants, IntImm attributes, VM-lowered
functions, ``(x,)[0]``, NDArray attributes, int64 constant arithmetic in shapes; and the
well-formedness rules (TVM's) that say which IR has no TVMScript form."""

import numpy as np
import pytest
from script_roundtrip_hook import roundtrip_failure

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.analysis import check_well_formed, well_formed

T4 = relax.TensorStructInfo([4], "float32")


def _module(**funcs) -> tvm.IRModule:
    return tvm.IRModule({name: f.with_attr("global_symbol", name) for name, f in funcs.items()})


def _round_trips(mod) -> None:
    assert roundtrip_failure(mod) is None, roundtrip_failure(mod)


# ------------------------------------------------------------------ symbolic variables
def _sym_func(n):
    x = relax.Var("x", relax.TensorStructInfo([n, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        y = bb.emit(relax.op.add(x, x))
        bb.emit_func_output(y)
    return bb.get()["f"]


def test_a_symbolic_variable_shared_by_two_functions_is_ill_formed():
    """TVM's rule: each function declares its own ``n = T.int64()``, so the printed module
    cannot say that two functions share one; such a module is not well formed."""
    n = tir.Var("n", "int64")
    shared = _module(f1=_sym_func(n), f2=_sym_func(n))
    why = check_well_formed(shared)
    assert why is not None and "symbolic variable n is used in both @f1 and @f2" in why
    assert not well_formed(shared)
    # one variable per function (what the parser makes of the text) is well formed and exact
    own = _module(f1=_sym_func(tir.Var("n", "int64")), f2=_sym_func(tir.Var("n", "int64")))
    assert well_formed(own)
    _round_trips(own)
    text = shared.script()
    assert text.count("n = T.int64()") == 2
    back = tvm.script.from_source(text)
    tvm.ir.assert_structural_equal(back, own)
    assert well_formed(back)
    # as in TVM, a variable mapping holds across the module's functions: sharing is a difference
    assert not tvm.ir.structural_equal(back, shared, map_free_vars=True)


# ------------------------------------------------------------------ If, SeqExpr
def _if_func(true_body, false_body, x, c):
    return relax.Function([x, c], relax.SeqExpr([], relax.If(c, relax.SeqExpr([], true_body),
                                                             relax.SeqExpr([], false_body))), T4)


def test_if_branch_bodies_are_leaves_and_normalize_binds_a_bare_call():
    x = relax.Var("x", T4)
    c = relax.Var("c", relax.TensorStructInfo([], "bool"))
    raw = _module(main=_if_func(relax.op.add(x, x), relax.op.multiply(x, x), x, c))
    mod = relax.transform.Normalize()(raw)
    branch = mod["main"].body.blocks[0].bindings[0].value.true_branch
    assert isinstance(branch.body, relax.Var)
    assert well_formed(mod)
    _round_trips(mod)
    # a branch whose body is a call has no TVMScript form: the checker says so
    y = relax.Var("y", T4)
    bb = relax.BlockBuilder()
    call = bb.normalize(relax.op.add(x, x))
    seq = relax.SeqExpr([], call)
    seq._checked_type = call.struct_info_
    other = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(y, call)])], y)
    other._checked_type = T4
    iff = relax.If(c, seq, other)
    iff._checked_type = T4
    z = relax.Var("z", T4)
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(z, iff)])], z)
    body._checked_type = T4
    bad = _module(main=relax.Function([x, c], body, T4))
    why = check_well_formed(bad)
    assert why is not None and "the body of an If branch must be a leaf" in why
    assert "z: R.Tensor((4,), dtype=\"float32\") = R.add(x, x)" in bad.script()


def _nested_seq_module():
    x = relax.Var("x", T4)
    y = relax.Var("y", T4)
    z = relax.Var("z", T4)
    add = relax.BlockBuilder().normalize(relax.op.add(x, x))
    inner = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(y, add)])], y)
    inner._checked_type = T4
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(z, inner)])], z)
    body._checked_type = T4
    return _module(main=relax.Function([x], body, T4))


def test_a_bound_seq_expr_prints_flat_and_is_ill_formed():
    mod = _nested_seq_module()
    text = mod.script()  # printed as what normalization makes of it
    assert "y: R.Tensor((4,), dtype=\"float32\") = R.add(x, x)" in text
    assert "z: R.Tensor((4,), dtype=\"float32\") = y" in text
    why = check_well_formed(mod)
    assert why is not None and "a SeqExpr is only a function body or an If branch" in why
    flat = relax.transform.Normalize()(mod)
    assert well_formed(flat)
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), flat)


# ------------------------------------------------------------------ local functions
RECURSIVE = '''
@I.ir_module
class Mod:
    @R.function
    def main(x: R.Tensor((), "int64")) -> R.Tensor((), "int64"):
        @R.function
        def fact(n: R.Tensor((), "int64")) -> R.Tensor((), "int64"):
            stop: R.Tensor((), "bool") = R.less_equal(n, R.const(1, "int64"))
            if stop:
                r: R.Tensor((), "int64") = R.const(1, "int64")
            else:
                m: R.Tensor((), "int64") = R.subtract(n, R.const(1, "int64"))
                s: R.Tensor((), "int64") = fact(m)
                r: R.Tensor((), "int64") = R.multiply(n, s)
            return r
        out: R.Tensor((), "int64") = fact(x)
        return out
'''


def test_recursive_local_function_parses_and_round_trips():
    mod = tvm.script.from_source(RECURSIVE)
    main = mod["main"]
    binding = main.body.blocks[0].bindings[0]
    fact_var, fact = binding.var, binding.value
    assert isinstance(fact, relax.Function)
    # the call inside the body refers to the variable the function is bound to
    inner = fact.body.blocks[-1].bindings[-1].value.false_branch.blocks[0].bindings[1].value
    assert inner.op is fact_var
    assert isinstance(fact_var.struct_info, relax.FuncStructInfo)
    assert well_formed(mod)
    _round_trips(mod)
    lifted = relax.transform.LambdaLift()(mod)
    _round_trips(lifted)


def test_recursive_local_function_needs_its_return_annotation():
    bad = RECURSIVE.replace('def fact(n: R.Tensor((), "int64")) -> R.Tensor((), "int64"):',
                            'def fact(n: R.Tensor((), "int64")):')
    with pytest.raises(Exception, match="name 'fact' is not defined"):
        tvm.script.from_source(bad)


def test_local_function_in_a_dataflow_block():
    src = '''
@I.ir_module
class Mod:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            @R.function
            def inner(a: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
                R.func_attr({"Composite": "demo.add"})
                with R.dataflow():
                    b: R.Tensor((4,), "float32") = R.add(a, a)
                    R.output(b)
                return b
            gv: R.Tensor((4,), "float32") = inner(x)
            R.output(gv)
        return gv
'''
    mod = tvm.script.from_source(src)
    block = mod["main"].body.blocks[0]
    assert isinstance(block, relax.DataflowBlock)
    assert isinstance(block.bindings[0].var, relax.DataflowVar)
    assert isinstance(block.bindings[0].value, relax.Function)
    _round_trips(mod)


# ------------------------------------------------------------------ constants and attributes
def test_nan_constants_compare_equal_and_round_trip():
    nan = float("nan")
    assert tvm.ir.structural_equal(relax.const(nan, "float32"), relax.const(nan, "float32"))
    assert tvm.ir.structural_equal(tir.FloatImm("float32", nan), tir.FloatImm("float32", nan))
    assert not tvm.ir.structural_equal(tir.FloatImm("float32", nan),
                                       tir.FloatImm("float32", 1.0))
    assert tvm.ir.structural_hash(tir.FloatImm("float32", nan)) == \
        tvm.ir.structural_hash(tir.FloatImm("float32", nan))
    x = relax.Var("x", T4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit(relax.op.add(x, relax.const(nan, "float32")))
        b = bb.emit(relax.op.add(a, relax.const(np.array([nan, 1, np.inf, -np.inf],
                                                         "float32"))))
        bb.emit(relax.PrimValue(tir.FloatImm("float32", nan)))
        bb.emit_func_output(b)
    _round_trips(bb.get())


def test_intimm_function_attributes_keep_their_kind():
    x = relax.Var("x", T4)
    f = relax.Function([x], relax.SeqExpr([], x), T4)
    f = f.with_attr("num_input", 1).with_attr("i32", tir.IntImm("int32", 3)) \
        .with_attr("i64", tir.IntImm("int64", 3)).with_attr("flag", True) \
        .with_attr("many", [tir.IntImm("int64", 1), 2])
    mod = _module(main=f)
    text = mod.script()
    assert '"i32": T.int32(3), "i64": T.int64(3)' in text and '"num_input": 1' in text
    assert '"many": [T.int64(1), 2]' in text and "# from tvm.script import tir as T" in text
    back = tvm.script.from_source(text)
    attrs = back["main"].attrs
    assert type(attrs["num_input"]) is int and attrs["flag"] is True
    assert isinstance(attrs["i64"], tir.IntImm) and attrs["i64"].dtype == "int64"
    assert isinstance(attrs["i32"], tir.IntImm) and attrs["i32"].dtype == "int32"
    _round_trips(mod)


def test_ndarray_attributes_round_trip():
    x = relax.Var("x", T4)
    f = relax.Function([x], relax.SeqExpr([], x), T4)
    f = f.with_attr("params", [tvm.nd.array(np.arange(6, dtype="float32").reshape(2, 3))])
    mod = _module(main=f)
    back = tvm.script.from_source(mod.script(show_meta=True))
    p = back["main"].attrs["params"][0]
    assert isinstance(p, tvm.nd.NDArray)
    np.testing.assert_array_equal(p.numpy(), np.arange(6, dtype="float32").reshape(2, 3))
    _round_trips(mod)


def test_int64_constant_arithmetic_in_a_shape():
    three, one = tir.IntImm("int64", 3), tir.IntImm("int64", 1)
    dim = tir.Mul(tir.Mul(three, one), tir.IntImm("int64", 3))  # unfolded, as legalizations make
    x = relax.Var("x", relax.TensorStructInfo([dim], "float32"))
    f = relax.Function([x], relax.SeqExpr([], x), relax.TensorStructInfo([dim], "float32"))
    mod = _module(main=f)
    assert "T.Mul(T.int64(3), T.int64(1)) * 3" in mod.script()
    _round_trips(mod)


def test_tuple_literal_indexed_in_an_expression():
    x = relax.Var("x", T4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = bb.emit(relax.TupleGetItem(relax.Tuple([x, x]), 1))
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    mod = bb.get()
    assert "(x, x)[1]" in mod.script()
    _round_trips(mod)


# ------------------------------------------------------------------ VM-lowered functions
SYMBOLIC = '''
@I.ir_module
class Mod:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor((4,), "float32")):
        n = T.int64()
        with R.dataflow():
            a = R.add(x, y)
            b = R.reshape(a, R.shape([n * 4]))
            c = R.reshape(b, R.shape([n, 4]))
            R.output(c)
        return c
'''


def test_vm_shape_lower_puts_its_checks_in_the_body_block():
    from minitvm.relax.pipeline import get_pipeline

    mod = tvm.script.from_source(SYMBOLIC)
    low = get_pipeline("default_build")(mod)
    blocks = low["main"].body.blocks
    # no two adjacent blocks of one kind (TVM's normalized form; the text parses back so)
    assert all(type(a) is not type(b) for a, b in zip(blocks, blocks[1:]))
    text = low.script()
    assert 'R.call_builtin_with_ctx("vm.builtin.alloc_shape_heap"' in text
    _round_trips(low)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    x = np.random.default_rng(0).random((3, 4), dtype="float32")
    y = np.arange(4, dtype="float32")
    np.testing.assert_allclose(vm["main"](tvm.nd.array(x), tvm.nd.array(y)).numpy(), x + y)


def test_parsed_tir_statements_carry_their_source_position():
    src = '''
@I.ir_module
class Mod:
    @T.prim_func
    def f(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("c"):
                vi = T.axis.spatial(4, i)
                b[vi] = a[vi] * T.float32(2)
'''
    f = tvm.script.from_source(src)["f"]
    loop = f.body.block.body
    assert isinstance(loop, tir.For)
    assert (loop.span.line, loop.span.column) == (6, 9)
    realize = loop.body
    assert realize.span.line == 7
    store = realize.block.body
    assert isinstance(store, tir.BufferStore) and store.span.line == 9
    # spans are bookkeeping: the same program without them is structurally equal
    assert tvm.ir.structural_equal(tvm.script.from_source(src.replace("\n\n", "\n"))["f"], f)
