"""``transpose_pieces``: a transposing stage whose innermost axis a pad (or a last-axis
concatenate) cuts into pieces is tiled as ``transpose_nest`` tiles it, once per piece, the
border pieces storing constants and the interior a copy with no per-element test."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend import te_compiler
from minitvm.schedule import LoweringOptions, injective_loops, lower_te
from minitvm.schedule.common import const_int
from minitvm.schedule.lower import TRANSPOSE_TILE
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, post_order_visit, walk_stmts


def _lowered(f):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    ins, _, outs = te_compiler.build_te(mod["main"])
    func, _ = lower_te(ins, outs, "k", options=LoweringOptions())
    return func


def _run(f, *arrays):
    lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for i, a in enumerate(arrays):
        m.set_input(f.params[i].name_hint, a)
    m.run()
    return m.get_output(0).numpy()


def _transpose_pad(shape, perm, width, value=0.0):
    x = relay.var("x", shape=shape)
    return relay.Function([x], relay.nn.pad(relay.transpose(x, perm), width,
                                            pad_value=relay.const(value)))


def _loops(func):
    return [s for s in walk_stmts(func.body) if isinstance(s, S.For)]


def _lane_tests(func) -> int:
    """How many ``if_then_else`` / ``Select`` under a vectorized loop test its lane index."""
    found = 0
    for v in (s for s in _loops(func) if s.kind == S.ForKind.VECTORIZED):
        nodes = []
        post_order_visit(v.body, nodes.append)
        for e in nodes:
            cond = e.args[0] if isinstance(e, E.Call) and e.op_name == "tir.if_then_else" \
                else e.condition if isinstance(e, E.Select) else None
            if cond is not None and any(n is v.loop_var for n in post_order(cond)):
                found += 1
    return found


def test_the_padded_transpose_has_no_lane_test_and_tiles_its_rows(monkeypatch):
    f = _transpose_pad((1, 56, 56, 64), (0, 3, 1, 2), ((0, 0), (0, 0), (1, 1), (1, 1)))
    func = _lowered(f)
    assert _lane_tests(func) == 0, func.script()
    # the rows of a tile: serial loops of TRANSPOSE_TILE iterations around the vectors
    assert TRANSPOSE_TILE in {c for c in (const_int(s.extent) for s in _loops(func))}
    monkeypatch.setattr(injective_loops, "transpose_pieces", lambda *a: None)
    assert _lane_tests(_lowered(f)) > 0  # transpose_nest alone tests every lane


@pytest.mark.parametrize("shape,perm,width", [
    ((1, 56, 56, 64), (0, 3, 1, 2), ((0, 0), (0, 0), (1, 1), (1, 1))),
    ((2, 9, 11, 37), (0, 3, 1, 2), ((0, 0), (0, 0), (2, 3), (3, 0))),
    ((1, 200, 128), (0, 2, 1), ((0, 0), (0, 0), (15, 15))),
    ((1, 50, 7), (0, 2, 1), ((0, 0), (0, 0), (2, 0))),       # pieces of 2 and 50 columns
    ((3, 20, 21), (0, 2, 1), ((0, 0), (1, 2), (1, 1))),       # pads on the tiled axis too
    ((1, 6, 5, 40), (0, 3, 1, 2), ((0, 0), (1, 0), (0, 0), (7, 9))),
])
def test_padded_transposes_match_numpy(shape, perm, width):
    a = np.random.default_rng(0).standard_normal(shape).astype("float32")
    got = _run(_transpose_pad(shape, perm, width, 0.25), a)
    np.testing.assert_array_equal(got, np.pad(a.transpose(perm), width, constant_values=0.25))


def test_a_transpose_joined_along_its_last_axis_matches_numpy():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((1, 40, 24)).astype("float32")
    b = rng.standard_normal((1, 24, 5)).astype("float32")
    x, y = relay.var("x", shape=a.shape), relay.var("y", shape=b.shape)
    f = relay.Function([x, y], relay.concatenate([relay.transpose(x, (0, 2, 1)), y], axis=2))
    np.testing.assert_array_equal(_run(f, a, b),
                                  np.concatenate([a.transpose(0, 2, 1), b], axis=2))


def test_an_unpadded_transpose_keeps_transpose_nest(monkeypatch):
    x = relay.var("x", shape=(1, 32, 48))
    f = relay.Function([x], relay.transpose(x, (0, 2, 1)))
    text = _lowered(f).script()
    monkeypatch.setattr(injective_loops, "transpose_pieces", lambda *a: None)
    assert _lowered(f).script() == text
