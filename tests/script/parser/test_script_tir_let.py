"""``T.Let(body, where={v: value})``: a ``tir.Let`` prints in TVM's form, with ``v = T.int32()``
declared just before the statement that binds it, and parses back structurally equal (the let
variable is a binding occurrence: two functions binding different variables are equal)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.ir.structural import structural_hash
from minitvm.script.parser import ParserError, from_source
from minitvm.tir import expr as E
from minitvm.tir.stmt_functor import post_order_visit


def _let_chain(i, A):
    x, y = E.Var("x", "int32"), E.Var("y", "int32")
    return E.Let(x, A[i] * 3, E.Let(y, x + 1, x * y))


def _func():
    A = te.placeholder((8,), "int32", name="A")
    B = te.compute((8,), lambda i: _let_chain(i, A), name="B")
    return te.create_prim_func([A, B])


def test_let_prints_in_tvms_form():
    assert _func().script() == '''\
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i in range(8):
        with T.block("B"):
            v_i = T.axis.spatial(8, i)
            T.reads(A[v_i])
            T.writes(B[v_i])
            x = T.int32()
            y = T.int32()
            B[v_i] = T.Let(T.Let(x * y, where={y: x + 1}), where={x: A[v_i] * 3})'''


def test_let_round_trips_and_runs(sp):
    f = _func()
    back = sp.roundtrip(f)
    assert structural_hash(back) == structural_hash(f)
    lets = _lets(back)
    assert sorted(v.var.name for v in lets) == ["x", "y"]
    mod = tvm.IRModule.from_expr(back.with_attr("global_symbol", "let_chain"))
    run = tvm.compile(mod, target="llvm")
    a = np.random.default_rng(0).integers(-100, 100, 8).astype("int32")
    b = tvm.runtime.tensor(np.zeros(8, "int32"), tvm.cpu())
    run(tvm.runtime.tensor(a, tvm.cpu()), b)
    np.testing.assert_array_equal(b.numpy(), (a * 3) * (a * 3 + 1))


def _lets(func) -> list:
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, E.Let) else None)
    return found


def test_sibling_blocks_each_declare_their_let_variable(sp):
    """A declaration is scoped to the block body that holds it: each block declares its own."""
    A = te.placeholder((4,), "int32", name="A")
    t, u = E.Var("t", "int32"), E.Var("t", "int32")
    B = te.compute((4,), lambda i: E.Let(t, A[i] + 1, t * t), name="B")
    C = te.compute((4,), lambda i: E.Let(u, B[i] - 1, u + u), name="C")
    f = te.create_prim_func([A, C])
    text = f.script()
    assert "            t = T.int32()" in text and "            t_1 = T.int32()" in text
    sp.roundtrip(f)
    # the same variable bound in both blocks (not SSA, so not structurally equal once parsed
    # into two variables) still prints text that parses: each block body declares it
    D = te.compute((4,), lambda i: E.Let(t, B[i] - 1, t + t), name="D")
    again = te.create_prim_func([A, D]).script()
    assert again.count("t = T.int32()") == 2
    assert len(_lets(from_source(again))) == 2


def test_let_in_a_condition_and_a_loop_extent_round_trips(sp):
    f = from_source('''
@T.prim_func
def main(A: T.Buffer((16,), "int32")):
    k = T.int32()
    for i in range(T.Let(k * 2, where={k: 4})):
        j = T.int32()
        if T.Let(j < 3, where={j: i % 5}):
            m = T.int32()
            A[i] = T.Let(m + m, where={m: i})
''')
    assert len(_lets(f)) == 3
    sp.roundtrip(f)


def test_different_let_variables_are_structurally_equal():
    A = te.placeholder((4,), "int32", name="A")

    def bind(name):
        v = E.Var(name, "int32")
        return te.create_prim_func([A, te.compute((4,), lambda i: E.Let(v, A[i], v + 1))])

    tvm.ir.assert_structural_equal(bind("p"), bind("q"))


@pytest.mark.parametrize("where,match", [
    ("{}", "binds exactly one variable"),
    ("{k: 1, m: 2}", "binds exactly one variable"),
    ("{1: 2}", "the key of `where` is the bound variable"),
])
def test_let_errors_name_what_is_wrong(where, match):
    src = f'''
@T.prim_func
def main(A: T.Buffer((4,), "int32")):
    k = T.int32()
    m = T.int32()
    A[0] = T.Let(k, where={where})
'''
    with pytest.raises(ParserError, match=match):
        from_source(src)


def test_undeclared_let_variable_is_a_clear_error():
    with pytest.raises(ParserError, match="name 'k' is not defined"):
        from_source('''
@T.prim_func
def main(A: T.Buffer((4,), "int32")):
    A[0] = T.Let(k + 1, where={k: 2})
''')
