"""FuseOps and FuseTIR on a 100,000-binding chain at the default recursion limit."""

import sys

import numpy as np
from fuse_test_util import run

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import transform as rt
from minitvm.relax.op.base import call_tir
from minitvm.script import from_source

N = 100_000
EXP = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def exp(x: T.Buffer((T.int64(4),), "float32"), y: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i in range(T.int64(4)):
            with T.block("compute"):
                vi = T.axis.spatial(T.int64(4), i)
                T.reads(x[vi])
                T.writes(y[vi])
                y[vi] = x[vi] * T.float32(0.5) + T.float32(0.25)
'''


def chain() -> tvm.IRModule:
    mod = from_source(EXP)
    exp = mod.get_global_var("exp")
    sinfo = relax.TensorStructInfo([4], "float32")
    x = relax.Var("x", sinfo)
    bb = relax.BlockBuilder(mod)
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for _ in range(N - 1):
                v = bb.emit(call_tir(exp, relax.Tuple([v]), sinfo))
            gv = bb.emit_output(call_tir(exp, relax.Tuple([v]), sinfo))
        bb.emit_func_output(gv)
    return bb.get()


def test_100k_binding_chain_fuses_without_recursion():
    limit = sys.getrecursionlimit()
    mod = chain()
    fused = rt.FuseOps()(mod)
    # groups of at most relax.FuseOps.max_depth (256) bindings; equal groups share a function
    main = fused["main"].body.blocks[0].bindings
    assert len(main) == -(-N // 256)
    names = sorted(gv.name_hint for gv in fused.functions if gv.name_hint.startswith("fused"))
    assert len(names) == 2
    out = rt.FuseTIR()(fused)
    assert sys.getrecursionlimit() == limit
    prims = [f for f in out.functions.values() if isinstance(f, tir.PrimFunc)]
    assert len(prims) == 2 and not any("Primitive" in (f.attrs or {})
                                       for f in out.functions.values())
    x = np.linspace(-1, 1, 4).astype("float32")
    # y -> y / 2 + 1/4, applied 100,000 times, reaches its fixed point 1/2
    np.testing.assert_allclose(run(out, "main", x), np.full(4, 0.5, "float32"), rtol=1e-6)


def test_100k_chain_through_fuse_ops_by_pattern_and_merge():
    from minitvm.relax import op as R
    from minitvm.relax.dpl import is_op, wildcard

    sinfo = relax.TensorStructInfo([4], "float32")
    x = relax.Var("x", sinfo)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for k in range(N // 2):
                v = bb.emit(R.nn.relu(v))
                v = bb.emit(R.negative(v) if k % 2 else R.exp(v))
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    mod = bb.get()
    pats = [("cg.relu_exp", is_op("relax.exp")(is_op("relax.nn.relu")(wildcard()))),
            ("cg.relu", is_op("relax.nn.relu")(wildcard()))]
    composite = rt.FuseOpsByPattern(pats)(mod)
    names = sorted(gv.name_hint for gv in composite.functions)
    assert names == ["fused_relax_nn_relu", "fused_relax_nn_relu_relax_exp", "main"]
    assert len(composite["main"].body.blocks[0].bindings) == N // 2 + N // 4 + 1
    merged = rt.MergeCompositeFunctions()(composite)
    # negative (not offloaded) separates the runs: one offloaded function per run, all equal
    offloaded = [gv for gv, f in merged.functions.items() if "Codegen" in (f.attrs or {})]
    assert len(offloaded) == 1
    assert len(merged["main"].body.blocks[0].bindings) == N // 4 + N // 4 + 1
