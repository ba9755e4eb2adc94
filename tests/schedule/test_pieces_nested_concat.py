"""``pieces.cuts`` / ``resolve`` on a concatenate inside a piece of another (PNA's four
aggregators concatenated, then concatenated with the node features and scaled twice): the
inner tree tests its position as the outer piece's offset, clamped in bounds
(``max(min(j - 48, 191), 0) < 96``), which now cuts the axis at ``96 + 48`` too, so each inner
piece is a plain vector copy; every lane gathered through the whole inner tree before (a
200x624 store 281 -> 14 us one thread, PNA's aggregation kernel 430 -> ~20 us)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend import te_compiler
from minitvm.schedule import LoweringOptions, lower_te, pieces
from minitvm.tir import expr as E


def _nested(n, widths):
    """concat([v0, inner, inner * s, inner / s]) with inner = concat of the other v's, the last
    through sqrt."""
    vs = [relay.var(f"v{i}", shape=(n, w)) for i, w in enumerate(widths)]
    s = relay.var("s", shape=(n, 1))
    inner = relay.concatenate([*vs[1:-1], relay.sqrt(vs[-1])], 1)
    return relay.Function([*vs, s], relay.concatenate([vs[0], inner, inner * s, inner / s], 1))


def _lowered(f):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    ins, _, outs = te_compiler.build_te(mod["main"])
    func, _ = lower_te(ins, outs, "k", options=LoweringOptions())
    return func


def test_inner_pieces_are_plain_copies():
    text = _lowered(_nested(8, [48] * 5)).script()
    assert "if_then_else" not in text and "Select" not in text, text


def test_clamped_offset_test_cuts_where_the_clamp_passes_it():
    j = E.Var("j", "int32")
    off = E.Sub(j, E.IntImm("int32", 48))
    clamped = E.Max(E.Min(off, E.IntImm("int32", 191)), E.IntImm("int32", 0))

    def tree(index, c):
        return E.Call("float32", "tir.if_then_else",
                      [E.LT(index, E.IntImm("int32", c)), E.FloatImm("float32", 1.0),
                       E.FloatImm("float32", 2.0)])

    assert pieces.cuts(tree(clamped, 96), j, 624) == [144]
    assert pieces.cuts(tree(clamped, 300), j, 624) == []  # past the clamp: always true
    assert pieces.cuts(tree(off, 10), j, 624) == [58]


@pytest.mark.parametrize("n, widths", [(200, [48] * 5), (3, [5, 7, 2, 9]), (4, [16, 3, 20])])
def test_matches_numpy(n, widths):
    rng = np.random.default_rng(n)
    feed = {f"v{i}": rng.random((n, w)).astype("float32") for i, w in enumerate(widths)}
    feed["s"] = rng.random((n, 1)).astype("float32") + 0.5
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(_nested(n, widths)), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(**feed)
    vals = list(feed.values())
    inner = np.concatenate([*vals[1:len(widths) - 1], np.sqrt(vals[len(widths) - 1])], 1)
    want = np.concatenate([vals[0], inner, inner * feed["s"], inner / feed["s"]], 1)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-6)
