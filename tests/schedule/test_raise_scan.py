"""``schedule.raise_scan``: which raised stages are prefix scans (tagged for ``schedule.scan``)
and which rank / pick pairs are top-k selections (replaced by ``topi.selection.topk_indices``);
look-alikes stay plain stages; a 100,000-deep rank expression is walked without recursion."""

import numpy as np

import minitvm as tvm
from minitvm import te
from minitvm.schedule import optimize_prim_func
from minitvm.schedule.raise_scan import scan_tag, selection_stage
from minitvm.tir import expr as E
from minitvm.topi import scan as topi_scan
from minitvm.topi import selection
from minitvm.topi.scan import SCAN_TAG
from minitvm.topi.selection import TOPK_TAG


def _x(shape=(4, 9), dtype="float32"):
    return te.placeholder(shape, dtype, "x")


def test_scan_stage_is_tagged():
    x = _x()
    for kind in ("sum", "prod"):
        for axis, exclusive in ((0, False), (1, True)):
            t = topi_scan.scan(x, kind, axis, "float64", exclusive)
            tag, attrs = scan_tag(t)
            assert tag == SCAN_TAG
            assert attrs == {"operands": (x,), "scan": kind, "axis": axis,
                             "exclusive": exclusive}


def test_scan_look_alikes_are_not_tagged():
    x = _x()
    k = te.reduce_axis((E.IntImm("int32", 0), E.IntImm("int32", 9)), name="k")
    # a mask against the wrong identity, a load at another index, a reversed mask
    bodies = [
        lambda i, j: te.sum(E.Select(k.var <= j, x[i, k.var], E.FloatImm("float32", 1.0)),
                            axis=k),
        lambda i, j: te.sum(E.Select(k.var <= j, x[j % 4, k.var], E.FloatImm("float32", 0.0)),
                            axis=k),
        lambda i, j: te.sum(E.Select(k.var >= j, x[i, k.var], E.FloatImm("float32", 0.0)),
                            axis=k),
        lambda i, j: te.max(E.Select(k.var <= j, x[i, k.var], E.FloatImm("float32", 0.0)),
                            axis=k),
    ]
    for body in bodies:
        t = te.compute((4, 9), body, name="t")
        assert scan_tag(t) == ("", {})
        assert selection_stage(t) is None


def test_ranked_indices_become_the_selection_stage():
    x = _x((3, 20), "int32")
    for largest in (True, False):
        idx = selection.ranked_indices(x, 5, 1, largest, "int64")
        t = selection_stage(idx)
        assert t.op.tag == TOPK_TAG and t.dtype == "int64"
        assert {k: v for k, v in t.op.attrs.items() if k != "operands"} == \
            {"k": 5, "axis": 1, "largest": largest}
        assert t.op.attrs["operands"] == (x,)


def test_rank_look_alikes_are_not_selections():
    x = _x((3, 20))
    n = x.shape[1]
    # a rank without the position tie-break: ties would share a rank
    def rank(i0, i1):
        q = te.reduce_axis((E.IntImm("int64", 0), n), name="q")
        return te.sum(E.Select(selection.better(x[i0, q.var], x[i0, i1], True),
                               E.IntImm("int64", 1), E.IntImm("int64", 0)), axis=q)

    r = te.compute(x.shape, rank, name="T_topk_rank")

    def pick(i0, i1):
        p = te.reduce_axis((E.IntImm("int64", 0), n), name="p")
        return te.sum(selection.pick_body(r, [i0, i1], p.var, 1, "int32"), axis=p)

    assert selection_stage(te.compute((3, 4), pick, name="T_topk_indices")) is None


def test_symbolic_shapes_are_not_selections():
    n = tvm.tir.Var("n", "int64")
    x = te.placeholder((3, n), "float32", "x")
    assert selection_stage(selection.ranked_indices(x, 2, 1, True, "int32")) is None


def test_deep_rank_expression_no_recursion():
    """A 100,000-deep rank condition: the matcher walks it iteratively and declines it."""
    x = _x((2, 5))
    n = x.shape[1]

    def rank(i0, i1):
        q = te.reduce_axis((E.IntImm("int64", 0), n), name="q")
        cond = E.LT(x[i0, q.var], x[i0, i1])
        for _ in range(100_000):
            cond = E.Or(cond, E.LT(q.var, i1))
        return te.sum(E.Select(cond, E.IntImm("int64", 1), E.IntImm("int64", 0)), axis=q)

    r = te.compute(x.shape, rank, name="T_topk_rank")

    def pick(i0, i1):
        p = te.reduce_axis((E.IntImm("int64", 0), n), name="p")
        return te.sum(selection.pick_body(r, [i0, i1], p.var, 1, "int32"), axis=p)

    assert selection_stage(te.compute((2, 3), pick, name="T_topk_indices")) is None


def test_create_prim_func_round_trip_runs_native():
    """The block form ``te.create_prim_func`` writes is raised and computes the selection."""
    x = _x((4, 100))
    idx = selection.ranked_indices(x, 70, 1, True, "int32")
    vals = selection.gather(x, idx, 1)
    f = te.create_prim_func([x, vals, idx])
    g = optimize_prim_func(f)
    assert "T_topk_rank" not in str(g)
    from minitvm.codegen.build import build

    mod = build(g)
    a = np.random.default_rng(1).integers(-3, 4, (4, 100)).astype("float32")
    out_v, out_i = np.zeros((4, 70), "float32"), np.zeros((4, 70), "int32")
    args = [tvm.nd.array(v) for v in (a, out_v, out_i)]
    mod(*args)
    want = np.argsort(-a, axis=1, kind="stable")[:, :70]
    np.testing.assert_array_equal(args[2].numpy(), want)
    np.testing.assert_array_equal(args[1].numpy(), np.take_along_axis(a, want, 1))
