"""RewriteDataflowReshape on reshapes under a symbolic batch: ViT's head split
``(197, n, 192) -> (197, 3n, 64)`` indexes its input with ``// n`` and ``% n``, which the
analyzer cannot drop; the row-major offsets still agree exactly as polynomials over
floor-division atoms (``minitvm.schedule.flat_index``), so the call becomes ``R.reshape``."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.transform.rewrite_dataflow_reshape import is_reshape_prim_func

parser = pytest.importorskip("minitvm.script.parser")
if not hasattr(parser, "from_source"):  # pragma: no cover - depends on the tree
    pytest.skip("the TVMScript parser has no from_source yet", allow_module_level=True)

HEAD_SPLIT = """
    @T.prim_func(private=True)
    def head_split(var_x: T.handle, var_y: T.handle):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(var_x, (T.int64(197), n, T.int64(192)))
        y = T.match_buffer(var_y, (T.int64(197), n * T.int64(3), T.int64(64)))
        for ax0, ax1, ax2 in T.grid(T.int64(197), n * T.int64(3), T.int64(64)):
            with T.block("y"):
                v0, v1, v2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                y[v0, v1, v2] = x[((v1 * T.int64(64) + v2) // T.int64(192) + v0 * n) // n,
                                  ((v1 * T.int64(64) + v2) // T.int64(192) + v0 * n) % n,
                                  (v1 * T.int64(64) + v2) % T.int64(192)]
"""

BEFORE = """
@I.ir_module
class Module:
""" + HEAD_SPLIT + """
    @R.function
    def main(x: R.Tensor((197, "n", 192), dtype="float32")):
        n = T.int64()
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.head_split, (x,),
                            out_sinfo=R.Tensor((197, n * 3, 64), dtype="float32"))
            gv: R.Tensor((197, n * 3, 64), dtype="float32") = R.add(lv, lv)
            R.output(gv)
        return gv
"""

EXPECTED = """
@I.ir_module
class Module:
""" + HEAD_SPLIT + """
    @R.function
    def main(x: R.Tensor((197, "n", 192), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            lv: R.Tensor((197, n * 3, 64), dtype="float32") = R.reshape(
                x, R.shape([197, n * 3, 64]))
            gv: R.Tensor((197, n * 3, 64), dtype="float32") = R.add(lv, lv)
            R.output(gv)
        return gv
"""

TRANSPOSE = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def swap(var_x: T.handle, var_y: T.handle):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(192)))
        y = T.match_buffer(var_y, (T.int64(192), n))
        for ax0, ax1 in T.grid(T.int64(192), n):
            with T.block("y"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                y[v0, v1] = x[v1, v0]

    @R.function
    def main(x: R.Tensor(("n", 192), dtype="float32")):
        n = T.int64()
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.swap, (x,), out_sinfo=R.Tensor((192, n), dtype="float32"))
            R.output(gv)
        return gv
"""

# the same offsets as a reshape, but the store only runs where the guard holds
GUARDED = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def guarded(var_x: T.handle, var_y: T.handle):
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(6)))
        y = T.match_buffer(var_y, (n * T.int64(2), T.int64(3)))
        for ax0, ax1 in T.grid(n * T.int64(2), T.int64(3)):
            with T.block("y"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.where(ax1 < T.int64(2))
                y[v0, v1] = x[v0 // T.int64(2), v0 % T.int64(2) * T.int64(3) + v1]
"""


def test_symbolic_head_split_becomes_reshape():
    after = relax.transform.RewriteDataflowReshape()(parser.from_source(BEFORE))
    tvm.ir.assert_structural_equal(after, parser.from_source(EXPECTED))


def test_symbolic_transpose_is_left_alone():
    mod = parser.from_source(TRANSPOSE)
    assert not is_reshape_prim_func(mod["swap"])
    after = relax.transform.RewriteDataflowReshape()(mod)
    tvm.ir.assert_structural_equal(after, parser.from_source(TRANSPOSE))


def test_guarded_copy_is_not_a_reshape():
    assert not is_reshape_prim_func(parser.from_source(GUARDED)["guarded"])


def test_head_split_numerics_at_several_batches():
    # relax.build's pipeline runs RewriteDataflowReshape: the view must hold the same values
    mod = parser.from_source(BEFORE)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(0)
    for n in (1, 3, 4):
        x = rng.standard_normal((197, n, 192)).astype("float32")
        np.testing.assert_array_equal(vm["main"](x).numpy(), 2 * x.reshape(197, 3 * n, 64))


# the batch reaches the PrimFunc as a scalar parameter (``tir_vars``), as from the ONNX importer
MERGE = """
    @T.prim_func(private=True)
    def merge(var_x: T.handle, var_y: T.handle, batch: T.int64):
        T.func_attr({"tir.noalias": T.bool(True)})
        x = T.match_buffer(var_x, (batch * T.int64(197), T.int64(192)))
        y = T.match_buffer(var_y, (T.int64(197), batch, T.int64(192)))
        for ax0, ax1, ax2 in T.grid(T.int64(197), batch, T.int64(192)):
            with T.block("y"):
                v0, v1, v2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                y[v0, v1, v2] = x[v0 * batch + v1, v2]
"""

MERGE_BEFORE = """
@I.ir_module
class Module:
""" + MERGE + """
    @R.function
    def main(x: R.Tensor(("n * 197", 192), dtype="float32"), s: R.Shape(["n"])):
        n = T.int64()
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.merge, (x,), out_sinfo=R.Tensor((197, n, 192), dtype="float32"),
                            tir_vars=R.shape([n]))
            R.output(gv)
        return gv
"""

MERGE_EXPECTED = """
@I.ir_module
class Module:
""" + MERGE + """
    @R.function
    def main(x: R.Tensor(("n * 197", 192), dtype="float32"), s: R.Shape(["n"])):
        n = T.int64()
        with R.dataflow():
            gv: R.Tensor((197, n, 192), dtype="float32") = R.reshape(x, R.shape([197, n, 192]))
            R.output(gv)
        return gv
"""


def test_reshape_with_tir_vars_becomes_reshape():
    after = relax.transform.RewriteDataflowReshape()(parser.from_source(MERGE_BEFORE))
    tvm.ir.assert_structural_equal(after, parser.from_source(MERGE_EXPECTED))
