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


def _stacked_pairs(a, b, steps: int, width: int):
    """A bidirectional RNN's outputs as unrolled: step t's two directions concatenated along
    features, the steps stacked on axis 1, the features split back per direction."""
    rows = [relay.concatenate([relay.squeeze(relay.strided_slice(v, [t], [t + 1]), [0])
                               for v in (a, b)], 1) for t in range(steps)]
    return relay.reshape(relay.stack(rows, 1), (2, steps, 2, width))


def _chained_piece_tests(func) -> int:
    """Piece-tree tests (``if_then_else`` conditions) in innermost loops that divide an
    expression of that loop's variable: a per-lane test where a per-row one would do."""
    inner = [s for s in walk_stmts(func.body) if isinstance(s, S.For) and
             not any(isinstance(x, S.For) for x in walk_stmts(s.body))]
    found = 0
    for loop in inner:
        nodes = []
        post_order_visit(loop.body, nodes.append)
        conds = [e.args[0] for e in nodes
                 if isinstance(e, E.Call) and e.op_name == "tir.if_then_else"]
        found += sum(1 for c in conds for e in post_order(c)
                     if isinstance(e, (E.FloorDiv, E.FloorMod)) and
                     any(v is loop.loop_var for v in post_order(e.a)))
    return found


def test_a_stack_of_concatenates_tests_its_step_once_per_row():
    """70 steps (more than split_planes gives a nest each): the stack's tree tests ``t``, not
    a chain through the vector lanes; the kernel matches numpy."""
    from minitvm import codegen

    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((70, 2, 8)).astype("float32") for _ in range(2))
    x, y = relay.var("a", shape=a.shape), relay.var("b", shape=b.shape)
    func = _lowered(relay.Function([x, y], _stacked_pairs(x, y, 70, 8)))
    assert _chained_piece_tests(func) == 0
    got = np.full((2, 70, 2, 8), np.nan, np.float32)
    codegen.build(func)["k"](a, b, got)
    ref = np.stack([np.concatenate([a[t], b[t]], 1) for t in range(70)], 1)
    np.testing.assert_array_equal(got, ref.reshape(2, 70, 2, 8))


def test_a_comparison_of_a_chain_is_simplified():
    from minitvm import te
    from minitvm.tir import op as tir_op

    a = te.placeholder((4, 8), "float32", "a")
    t = te.compute((4, 3, 8), lambda i, h, k: tir_op.if_then_else(
        ((i * 3 + h) * 8 + k) // 8 % 3 < 2, a[i, k], a[i, 7 - k]), name="t")
    body = t.op.body[0] if isinstance(t.op.body, (list, tuple)) else t.op.body
    cond = simplify_index_chains(t, body).args[0]
    assert isinstance(cond, E.LT) and cond.a is t.op.axis[1].var
