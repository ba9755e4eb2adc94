"""FoldTransposeIntoConsumer (relax/transform/fold_transpose_into_consumer.py) and the matmul
schedule reading an untransposed ``[N, K]`` weight in place (schedule/gemm_tb.py): the
weights-as-arguments path (``matmul(x, permute_dims(w))``, as ``export_tvm`` gives it)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.transform.fold_transpose_into_consumer import transpose_permutation
from minitvm.schedule import gemm_tb
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


def _linear_module(k=37, h=20, o=10, bias=True):
    """main(x: (n, k), w1: (h, k), b1, w2: (o, h)) = relu(x @ w1.T + b1) @ w2.T, legalized
    and fused (weights passed as arguments)."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, k], "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo([h, k], "float32"))
    b1 = relax.Var("b1", relax.TensorStructInfo([h], "float32"))
    w2 = relax.Var("w2", relax.TensorStructInfo([o, h], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w1, b1, w2]):
        with bb.dataflow():
            t = bb.emit(relax.op.matmul(x, relax.op.permute_dims(w1)))
            if bias:
                t = bb.emit(relax.op.add(t, b1))
            t = bb.emit(relax.op.nn.relu(t))
            y = bb.emit(relax.op.matmul(t, relax.op.permute_dims(w2, [1, 0])))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    return bb.get()


def _prims(mod):
    return {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, tir.PrimFunc)}


def _zero(mod):
    return relax.get_pipeline("zero")(mod)


def test_transposes_folded_into_the_matmul_prim_funcs():
    mod = _zero(_linear_module())
    assert sum(transpose_permutation(f) is not None for f in _prims(mod).values()) == 2
    after = relax.transform.FoldTransposeIntoConsumer()(mod)
    prims = _prims(after)
    assert not any(transpose_permutation(f) is not None for f in prims.values())
    assert sorted(prims) == ["fused_matmul_add_relu_tb", "matmul1_tb"]
    # the weight parameter is now [N, K] and read as W[j, k]
    f = prims["fused_matmul_add_relu_tb"]
    w = f.buffer_map[f.params[1]]
    assert [int(d) for d in w.shape] == [20, 37]
    text = after.script()
    assert "permute_dims" not in text.split("@R.function")[1]
    assert "R.call_tir(cls.fused_matmul_add_relu_tb, (x, w1, b1)" in text


@I.ir_module
class _Before:
    @T.prim_func(private=True)
    def transpose(w: T.Buffer((T.int64(3), T.int64(4)), "float32"),
                  out: T.Buffer((T.int64(4), T.int64(3)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i, j in T.grid(T.int64(4), T.int64(3)):
            with T.block("T_transpose"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(w[vj, vi])
                T.writes(out[vi, vj])
                out[vi, vj] = w[vj, vi]

    @T.prim_func(private=True)
    def matmul(x: T.Buffer((T.int64(2), T.int64(4)), "float32"),
               wt: T.Buffer((T.int64(4), T.int64(3)), "float32"),
               y: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i, j, k in T.grid(T.int64(2), T.int64(3), T.int64(4)):
            with T.block("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(x[vi, vk], wt[vk, vj])
                T.writes(y[vi, vj])
                with T.init():
                    y[vi, vj] = T.float32(0.0)
                y[vi, vj] = y[vi, vj] + x[vi, vk] * wt[vk, vj]

    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((3, 4), "float32")):
        cls = _Before
        with R.dataflow():
            t = R.call_tir(cls.transpose, (w,), out_sinfo=R.Tensor((4, 3), "float32"))
            y = R.call_tir(cls.matmul, (x, t), out_sinfo=R.Tensor((2, 3), "float32"))
            R.output(y)
        return y


@I.ir_module
class _Expected:
    @T.prim_func(private=True)
    def matmul_tb(x: T.Buffer((T.int64(2), T.int64(4)), "float32"),
                  wt_t: T.Buffer((T.int64(3), T.int64(4)), "float32"),
                  y: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i, j, k in T.grid(T.int64(2), T.int64(3), T.int64(4)):
            with T.block("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(x[vi, vk], wt_t[vj, vk])
                T.writes(y[vi, vj])
                with T.init():
                    y[vi, vj] = T.float32(0.0)
                y[vi, vj] = y[vi, vj] + x[vi, vk] * wt_t[vj, vk]

    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((3, 4), "float32")):
        cls = _Expected
        with R.dataflow():
            y = R.call_tir(cls.matmul_tb, (x, w), out_sinfo=R.Tensor((2, 3), "float32"))
            R.output(y)
        return y


def test_structural_before_expected():
    after = relax.transform.FoldTransposeIntoConsumer()(_Before)
    tvm.ir.assert_structural_equal(after, _Expected)


def test_shared_transpose_and_elementwise_consumers_keep_the_transpose():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((3, 4), "float32")):
            with R.dataflow():
                t = R.permute_dims(w)
                y = R.matmul(x, t)
                z = R.add(t, t)  # an elementwise consumer: not a reduction, not folded
                R.output(y, z)
            return (y, z)

    mod = relax.transform.LegalizeOps()(Mod)
    after = relax.transform.FoldTransposeIntoConsumer()(mod)
    prims = _prims(after)
    assert "transpose" in prims and "matmul_tb" in prims and "matmul" not in prims
    ex = relax.build(after, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4)).astype("float32")
    w = rng.standard_normal((3, 4)).astype("float32")
    y, z = vm["main"](tvm.nd.array(x), tvm.nd.array(w))
    np.testing.assert_allclose(y.numpy(), x @ w.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z.numpy(), 2 * w.T, rtol=1e-6)


@pytest.mark.parametrize("k,h,o", [(37, 20, 10), (64, 32, 16), (5, 6, 3)])
def test_weights_as_args_numerics_at_three_sizes_one_build(k, h, o):
    ex = relax.build(_linear_module(k, h, o), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((h, k)).astype("float32")
    b1 = rng.standard_normal(h).astype("float32")
    w2 = rng.standard_normal((o, h)).astype("float32")
    # 1 and 7 rows: the in-place NT kernel (row tiles and tails); 200: the packed GEMM
    for n in (1, 7, gemm_tb.MAX_ROWS + 104):
        x = rng.standard_normal((n, k)).astype("float32")
        want = np.maximum(x @ w1.T + b1, 0) @ w2.T
        for _ in range(2):  # the interpreter's call, then the native entry's replay
            got = vm["main"](*(tvm.nd.array(a) for a in (x, w1, b1, w2))).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_pipeline_builds_with_no_transpose_kernel():
    ex = relax.build(_linear_module(), "llvm")
    names = [k for k in ex.kernels] if hasattr(ex, "kernels") else []
    if not names:
        pytest.skip("the executable does not list its kernels")
    assert not any(n.startswith("transpose") for n in names), names


def test_transposed_a_operand_is_not_folded():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4, 2), "float32"), w: R.Tensor((4, 3), "float32")):
            with R.dataflow():
                y = R.matmul(R.permute_dims(x), w)
                R.output(y)
            return y

    mod = relax.transform.LegalizeOps()(Mod)
    after = relax.transform.FoldTransposeIntoConsumer()(mod)
    assert after is mod or tvm.ir.structural_equal(after, mod)
    with pytest.raises(TypeError, match="FoldTransposeIntoConsumer.*IRModule"):
        relax.transform.FoldTransposeIntoConsumer()(relax.Var("x"))


def test_not_a_transpose():
    @T.prim_func
    def copy(a: T.Buffer((4, 3), "float32"), b: T.Buffer((4, 3), "float32")):
        for i, j in T.grid(4, 3):
            with T.block("copy"):
                vi, vj = T.axis.remap("SS", [i, j])
                b[vi, vj] = a[vi, vj]

    assert transpose_permutation(copy) is None
    assert transpose_permutation(_Before["transpose"]) == (1, 0)


def test_long_chain_no_recursion():
    """100,000 bindings through the pass at the default recursion limit."""
    mod = _zero(_linear_module(bias=False))
    main = mod["main"]
    from minitvm.relax.expr import DataflowBlock, Function, SeqExpr, VarBinding

    blocks = main.body.blocks
    first = blocks[0].bindings
    x = main.params[0]
    extra = []
    prev = x
    for i in range(100_000):  # a chain of aliases in front of the real bindings
        v = relax.DataflowVar(f"c{i}", x.struct_info)
        extra.append(VarBinding(v, prev))
        prev = v
    body = SeqExpr([DataflowBlock(extra + list(first))], main.body.body)
    body._checked_type = main.body._checked_type
    mod = mod.shallow_copy()
    mod.update_func(mod.get_global_var("main"),
                    Function(main.params, body, main.ret_struct_info, main.is_pure, main.attrs))
    after = relax.transform.FoldTransposeIntoConsumer()(mod)
    assert not any(transpose_permutation(f) is not None for f in _prims(after).values())
    assert len(after["main"].body.blocks[0].bindings) == 100_000 + len(first) - 2
