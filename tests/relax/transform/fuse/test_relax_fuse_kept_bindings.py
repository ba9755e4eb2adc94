"""FuseOps and FuseTIR emit the bindings they do not rewrite as they are (no visit): the
operand shortcuts agree with the full walks, a remapped operand still gets its visit, and a
100,000-binding block where one pair fuses keeps every other binding object, at the default
recursion limit."""

import sys

import numpy as np
from fuse_test_util import run

from minitvm import relax
from minitvm.relax import transform as rt
from minitvm.relax.op.base import call_tir
from minitvm.relax.transform.fuse_ops import _leaves
from minitvm.relax.transform.lower_utils import vars_used
from minitvm.relax.transform.utils import flat_value_kept
from minitvm.script import from_source

PRIMS = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def half(x: T.Buffer((T.int64(4),), "float32"), y: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i in range(T.int64(4)):
            with T.block("compute"):
                vi = T.axis.spatial(T.int64(4), i)
                T.reads(x[vi])
                T.writes(y[vi])
                y[vi] = x[vi] * T.float32(0.5)

    @T.prim_func(private=True)
    def addq(x: T.Buffer((T.int64(4),), "float32"), z: T.Buffer((T.int64(4),), "float32"),
             y: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"op_pattern": 8, "tir.noalias": T.bool(True)})
        for i in range(T.int64(4)):
            with T.block("compute"):
                vi = T.axis.spatial(T.int64(4), i)
                T.reads(x[vi], z[vi])
                T.writes(y[vi])
                y[vi] = x[vi] * T.float32(0.5) + z[vi] * T.float32(0.25)
'''
SINFO = relax.TensorStructInfo([4], "float32")


def ladder(n: int):
    """``v_1 = half(half(x))`` (one fusable pair), then ``v_k = addq(v_{k-1}, v_{k-2})``
    (``v_0 = x``): opaque bindings, each reading the two before it."""
    mod = from_source(PRIMS)
    half, addq = mod.get_global_var("half"), mod.get_global_var("addq")
    x = relax.Var("x", SINFO)
    bb = relax.BlockBuilder(mod)
    with bb.function("main", [x]):
        with bb.dataflow():
            prev = x
            v = bb.emit(call_tir(half, relax.Tuple([bb.emit(call_tir(half, relax.Tuple([x]),
                                                                     SINFO))]), SINFO))
            for _ in range(n - 3):
                prev, v = v, bb.emit(call_tir(addq, relax.Tuple([v, prev]), SINFO))
            gv = bb.emit_output(call_tir(addq, relax.Tuple([v, prev]), SINFO))
        bb.emit_func_output(gv)
    return bb.get()


def reference(x: np.ndarray, n: int) -> np.ndarray:
    prev, v = x, x * np.float32(0.25)
    for _ in range(n - 2):
        prev, v = v, v * np.float32(0.5) + prev * np.float32(0.25)
    return v


def _operands():
    mod = ladder(8)
    block = mod["main"].body.blocks[0]
    return mod, block, [b.var for b in block.bindings]


def test_leaves_and_vars_used_shortcuts_match_the_walks():
    mod, block, vs = _operands()
    gv = mod.get_global_var("addq")
    c = relax.const(np.ones(4, "float32"))
    shape = relax.ShapeExpr([4])
    calls = [call_tir(gv, relax.Tuple([vs[2], c, vs[2], vs[1]]), SINFO),
             relax.Call(relax.ExternFunc("f"), [relax.Tuple([vs[0], vs[1]]), vs[0], shape]),
             relax.Call(vs[3], [vs[1], relax.Tuple([vs[2], vs[1]])])]
    for call in calls:
        # an item of the call is not a flat operand list: the walk, the reference
        walked = _leaves(relax.TupleGetItem(call, 0))
        assert [id(e) for e in _leaves(call)] == [id(e) for e in walked]
        walked = vars_used(relax.TupleGetItem(call, 0))
        assert [id(e) for e in vars_used(call)] == [id(e) for e in walked]
    assert [id(e) for e in _leaves(calls[0])] == [id(vs[2]), id(c), id(vs[1])]
    assert [id(e) for e in vars_used(calls[1])] == [id(vs[0]), id(vs[1])]


def test_flat_value_kept_needs_no_remapped_operand():
    mod, block, vs = _operands()
    value = block.bindings[3].value  # addq(v2, v1)
    assert flat_value_kept(value, {})
    assert flat_value_kept(value, {vs[0]: vs[4]})
    assert not flat_value_kept(value, {vs[1]: vs[4]})  # read inside the call_tir's tuple
    nested = relax.Call(value.op, [value.args[0], relax.Tuple([value])])
    assert not flat_value_kept(nested, {})  # a nested call: the mutator must visit it
    unnormalized = call_tir(value.args[0], relax.Tuple([vs[1]]), SINFO)
    unnormalized._checked_type = None
    assert not flat_value_kept(unnormalized, {})


def test_small_ladder_fuses_the_pair_and_matches_numpy():
    n = 12
    out = rt.FuseTIR()(rt.FuseOps()(ladder(n)))
    main = out["main"].body.blocks[0].bindings
    assert len(main) == n - 1  # the pair is one call, the rest as they were
    assert main[0].value.args[0].name_hint.startswith("fused_")
    x = np.linspace(-1, 1, 4).astype("float32")
    np.testing.assert_allclose(run(out, "main", x), reference(x, n), rtol=1e-5)


def test_100k_ladder_keeps_its_unfused_bindings_without_recursion():
    limit = sys.getrecursionlimit()
    n = 100_000
    mod = ladder(n)
    before = mod["main"].body.blocks[0].bindings
    fused = rt.FuseOps()(mod)
    after = fused["main"].body.blocks[0].bindings
    assert len(after) == n - 1
    # the two bindings after the pair read the fused call's new variable: rebuilt; the rest
    # are kept
    assert after[1] is not before[2] and after[2] is not before[3] and after[3] is before[4]
    assert sum(a is b for a, b in zip(after[1:], before[2:], strict=True)) == n - 4
    out = rt.FuseTIR()(fused)
    lowered = out["main"].body.blocks[0].bindings
    assert sum(a is b for a, b in zip(lowered[1:], after[1:], strict=True)) == n - 2
    assert sys.getrecursionlimit() == limit
