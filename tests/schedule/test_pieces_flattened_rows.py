"""``pieces.cuts`` / ``resolve`` on a concatenate of rows read through a flattening reshape: the
piece tree tests ``j // d % m < c`` (the reshape's unravelling of the flat position ``j``),
which cuts the flat axis at ``c * d`` where the ``% m`` never wraps over the axis. RetinaNet's
five heads, each permuted to ``[1, H*W*A/8, 8]``, concatenated and flattened: one gather per
lane from all five inputs (130 us) before, one piece per head after (26 us)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend import te_compiler
from minitvm.schedule import LoweringOptions, lower_te, pieces
from minitvm.tir import expr as E


def _heads(sizes, channels, row):
    xs = [relay.var(f"x{i}", shape=(1, channels, s, s)) for i, s in enumerate(sizes)]
    parts = [relay.reshape(relay.transpose(x, [0, 2, 3, 1]), (1, -1, row)) for x in xs]
    return relay.Function(xs, relay.reshape(relay.concatenate(parts, 1), (1, -1)))


def _lowered(f):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    ins, _, outs = te_compiler.build_te(mod["main"])
    func, _ = lower_te(ins, outs, "k", options=LoweringOptions())
    return func


def test_the_flattened_concatenate_is_stored_piece_by_piece():
    text = _lowered(_heads([16, 8, 4, 2, 1], 72, 8)).script()
    assert "if_then_else" not in text and "Select" not in text, text


@pytest.mark.parametrize("sizes, channels, row", [
    ([16, 8, 4, 2, 1], 72, 8),  # RetinaNet's class heads
    ([5, 3], 12, 4),  # heads whose rows are not a whole number of vectors
    ([7, 4, 1], 6, 3),
])
def test_matches_numpy(sizes, channels, row):
    rng = np.random.default_rng(len(sizes))
    arrays = [rng.standard_normal((1, channels, s, s)).astype("float32") for s in sizes]
    f = _heads(sizes, channels, row)
    lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for i, a in enumerate(arrays):
        m.set_input(f"x{i}", a)
    m.run()
    want = np.concatenate([a.transpose(0, 2, 3, 1).reshape(1, -1, row) for a in arrays], 1)
    np.testing.assert_array_equal(m.get_output(0).numpy(), want.reshape(1, -1))


def _tree(index, c: int):
    a, b = E.Var("a", "float32"), E.Var("b", "float32")
    return E.Call("float32", "tir.if_then_else", [E.LT(index, E.IntImm("int32", c)), a, b])


def test_cuts_only_where_the_modulo_never_wraps():
    j = E.Var("j", "int32")
    rows = E.FloorMod(E.FloorDiv(j, E.IntImm("int32", 8)), E.IntImm("int32", 10))
    assert pieces.cuts(_tree(rows, 6), j, 80) == [48]  # 80 / 8 = 10 rows: never wraps
    assert pieces.cuts(_tree(rows, 6), j, 160) == []  # 20 rows: rows 10.. wrap, no cut
    assert pieces.cuts(_tree(E.FloorDiv(j, E.IntImm("int32", 4)), 3), j, 40) == [12]
    assert pieces.cuts(_tree(E.FloorMod(j, E.IntImm("int32", 50)), 7), j, 50) == [7]


def test_resolve_takes_the_branch_of_a_flattened_range():
    j = E.Var("j", "int32")
    rows = E.FloorMod(E.FloorDiv(j, E.IntImm("int32", 8)), E.IntImm("int32", 10))
    tree = _tree(rows, 6)
    assert pieces.resolve(tree, j, 0, 48, 80) is tree.args[1]
    assert pieces.resolve(tree, j, 48, 80, 80) is tree.args[2]
    assert pieces.resolve(tree, j, 0, 48) is not tree.args[1]  # no extent: the tree stays
