"""Reshape chains in injective stages (``schedule/index_chains``): a load index that nests
divisions (a reshape over a transpose over a reshape) is simplified under the axis bounds
before the stage is scheduled. IR (no nested division left) and numerics against numpy."""

import numpy as np
from relay_build import build_run

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import LoweringOptions, lower_te
from minitvm.schedule.index_chains import simplify_index_chains
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, post_order_visit, walk_stmts


def _lowered(f):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    ins, _, outs = te_compiler.build_te(mod["main"])
    func, _ = lower_te(ins, outs, "k", options=LoweringOptions())
    return func


def _divided_inner_loads(func) -> int:
    """Loads whose index divides (or takes the modulo of) an expression of the innermost
    loop's variable: per-element division chains left in the loop."""
    inner = [s for s in walk_stmts(func.body) if isinstance(s, S.For) and
             not any(isinstance(x, S.For) for x in walk_stmts(s.body))]
    found = 0
    for loop in inner:
        nodes = []
        post_order_visit(loop.body, nodes.append)
        loads = [e for e in nodes if isinstance(e, E.BufferLoad)]
        found += sum(1 for ld in loads for i in ld.indices for e in post_order(i)
                     if isinstance(e, (E.FloorDiv, E.FloorMod)) and
                     any(v is loop.loop_var for v in post_order(e.a)))
    return found


def _fold_columns(x, c=4, k=3, o=5):
    """FuseFormer's fold rearrangement: columns [N, C*k*k, o*o] -> [N, C, k, o, k, o]."""
    y = relay.reshape(x, (x.type_annotation.shape[0], c, k, k, o, o))
    return relay.transpose(y, [0, 1, 2, 4, 3, 5])


def test_a_transpose_over_a_reshape_reads_without_division_chains():
    x = relay.var("x", shape=(2, 36, 25))
    func = _lowered(relay.Function([x], _fold_columns(x)))
    assert _divided_inner_loads(func) == 0


def test_reshape_chains_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 36, 25)).astype("float32")
    (got,), _ = build_run(lambda x: relay.reshape(_fold_columns(x), (2, 4, 15, 15)), a)
    ref = a.reshape(2, 4, 3, 3, 5, 5).transpose(0, 1, 2, 4, 3, 5).reshape(2, 4, 15, 15)
    np.testing.assert_array_equal(got, ref)

    b = rng.standard_normal((6, 35)).astype("float32")  # a chain whose blocks do not divide
    (got,), _ = build_run(lambda x: relay.reshape(relay.transpose(relay.reshape(
        x, (6, 5, 7)), (0, 2, 1)), (10, 21)), b)
    np.testing.assert_array_equal(got, b.reshape(6, 5, 7).transpose(0, 2, 1).reshape(10, 21))


def test_a_body_without_chains_is_returned_as_is():
    from minitvm import te

    a = te.placeholder((4, 8), "float32", "a")
    t = te.compute((4, 8), lambda i, j: a[i, j // 2] * 2.0, name="t")
    body = t.op.body[0] if isinstance(t.op.body, (list, tuple)) else t.op.body
    assert simplify_index_chains(t, body) is body
