"""AnnotateTIROpPattern: the ``op_pattern`` attribute of PrimFuncs of every kind (written in
TVMScript), of legalized Relax ops, and the pass's contract (existing attributes kept, input
module unchanged)."""

import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.ir.op import OpPattern
from minitvm.relax import op as R
from minitvm.relax.transform import AnnotateTIROpPattern, LegalizeOps
from minitvm.script import from_source
from minitvm.tir.analysis import analyze_op_pattern_kind

HEADER = "@I.ir_module\nclass Module:\n"

ELEMWISE = """
    @T.prim_func
    def f(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] + B[vi, vj]
"""
ELEMWISE_WITH_BIAS = """
    @T.prim_func
    def f(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((16, 16), "float32")):
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] + B[vj]
"""
BROADCAST = """
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), B: T.Buffer((1, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vj] + B[0, vj]
"""
INJECTIVE = """
    @T.prim_func
    def f(A: T.Buffer((16, 8), "float32"), C: T.Buffer((8, 16), "float32")):
        for i, j in T.grid(8, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vj, vi]
"""
REDUCE = """
    @T.prim_func
    def f(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16,), "float32")):
        for i, k in T.grid(16, 16):
            with T.block("C"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    C[vi] = T.float32(0.0)
                C[vi] = C[vi] + A[vi, vk]
"""
MATMUL = """
    @T.prim_func
    def f(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 4), "float32"), C: T.Buffer((16, 4), "float32")):
        for i, j, k in T.grid(16, 4, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0.0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""
POOL = """
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), C: T.Buffer((14,), "float32")):
        for i, k in T.grid(14, 3):
            with T.block("C"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    C[vi] = T.float32(-3.0e38)
                C[vi] = T.max(C[vi], A[vi + vk])
"""
OPAQUE = """
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                C[vi] = T.float32(0.0)
                for k in range(16):
                    C[vi] = C[vi] + A[k]
"""
TWO_STORES = """
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = A[vi]
                C[vi + 8] = A[vi]
"""
GATHER = """
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), I: T.Buffer((16,), "int32"), C: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                C[vi] = A[I[vi]]
"""


@pytest.mark.parametrize("body,kind", [
    (ELEMWISE, OpPattern.ELEMWISE), (ELEMWISE_WITH_BIAS, OpPattern.ELEMWISE),
    (BROADCAST, OpPattern.BROADCAST), (INJECTIVE, OpPattern.INJECTIVE),
    (REDUCE, OpPattern.COMM_REDUCE), (MATMUL, OpPattern.OUT_ELEMWISE_FUSABLE),
    (POOL, OpPattern.OUT_ELEMWISE_FUSABLE),
])
def test_pattern_of_script_primfuncs(body, kind):
    mod = from_source(HEADER + body)
    after = AnnotateTIROpPattern()(mod)
    assert int(after["f"].attrs["op_pattern"]) == kind
    assert "op_pattern" not in dict(mod["f"].attrs.items())  # input unchanged
    expected = mod.shallow_copy()
    expected.update_func(mod.get_global_var("f"), mod["f"].with_attr("op_pattern", int(kind)))
    tvm.ir.assert_structural_equal(after, expected)


@pytest.mark.parametrize("body,kind", [
    (OPAQUE, OpPattern.OPAQUE), (TWO_STORES, OpPattern.OPAQUE),
    (GATHER, OpPattern.INJECTIVE),  # TVM's rule: the load's index uses only store variables
])
def test_opaque_and_gather(body, kind):
    assert analyze_op_pattern_kind(from_source(HEADER + body)["f"]) == kind


def _legalized(make, *shapes):
    params = [relax.Var(f"x{k}", relax.TensorStructInfo(list(s), "float32"))
              for k, s in enumerate(shapes)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        gv = bb.emit(make(*params))
        bb.emit_func_output(gv)
    mod = AnnotateTIROpPattern()(LegalizeOps()(bb.get()))
    return [int(f.attrs["op_pattern"]) for f in mod.functions.values()
            if isinstance(f, tir.PrimFunc)]


@pytest.mark.parametrize("make,shapes,kind", [
    (R.add, [(4, 5), (4, 5)], OpPattern.ELEMWISE),
    (R.add, [(4, 5), (5,)], OpPattern.ELEMWISE),
    (R.add, [(4, 1), (5,)], OpPattern.BROADCAST),
    (R.exp, [(4, 5)], OpPattern.ELEMWISE),
    (lambda x: R.permute_dims(x), [(4, 5)], OpPattern.INJECTIVE),
    (lambda x: R.reshape(x, (5, 4)), [(4, 5)], OpPattern.INJECTIVE),
    (lambda x: R.sum(x, [1]), [(4, 5)], OpPattern.COMM_REDUCE),
    (R.matmul, [(4, 5), (5, 3)], OpPattern.OUT_ELEMWISE_FUSABLE),
    (R.nn.softmax, [(4, 5)], OpPattern.OUT_ELEMWISE_FUSABLE),
    (lambda x, w: R.nn.conv2d(x, w), [(1, 3, 6, 6), (4, 3, 3, 3)],
     OpPattern.OUT_ELEMWISE_FUSABLE),
])
def test_pattern_of_legalized_ops(make, shapes, kind):
    assert _legalized(make, *shapes) == [kind]


def test_existing_attribute_kept_and_non_primfuncs_ignored():
    mod = from_source(HEADER + MATMUL)
    gv = mod.get_global_var("f")
    mod.update_func(gv, mod["f"].with_attr("op_pattern", 8))
    after = AnnotateTIROpPattern()(mod)
    assert int(after["f"].attrs["op_pattern"]) == 8
    mod.update_func(gv, mod["f"].with_attr("op_pattern", 0))  # zero: recomputed, as TVM
    after = AnnotateTIROpPattern()(mod)
    assert int(after["f"].attrs["op_pattern"]) == OpPattern.OUT_ELEMWISE_FUSABLE
    with pytest.raises(TypeError, match="expects a tir.PrimFunc"):
        analyze_op_pattern_kind(relax.Var("x"))


def test_many_blocks_iterative():
    """A PrimFunc with 10,000 sequential blocks is analyzed without recursion."""
    from minitvm import te

    a = te.placeholder((4,), "float32", "A")
    t = a
    def step(src, k):
        return te.compute((4,), lambda i: src[i] + 1.0, name=f"T{k}")

    for k in range(10_000):
        t = step(t, k)
    f = te.create_prim_func([a, t])
    assert analyze_op_pattern_kind(f) == OpPattern.ELEMWISE


def test_gathers_with_let_bound_indices_stay_injective():
    """A computed gather index is let-bound before its negative-index wrap (``topi``'s
    ``clamp_index``); the variable stands for its value's variables, so the gather stays
    injective and fuses with its producers and consumers as before."""
    x = relax.Var("x", relax.TensorStructInfo([4, 5], "float32"))
    idx = relax.Var("idx", relax.TensorStructInfo([4, 5], "int64"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, idx]):
        g = bb.emit(R.gather_elements(x, idx, axis=1))
        bb.emit_func_output(g)
    mod = AnnotateTIROpPattern()(LegalizeOps()(bb.get()))
    prims = [f for f in mod.functions.values() if isinstance(f, tir.PrimFunc)]
    assert "T.let" in prims[0].script() or "gather_index" in prims[0].script()
    assert [int(f.attrs["op_pattern"]) for f in prims] == [OpPattern.INJECTIVE]
