"""strided_slice with begin/end computed from symbolic dims (``n - 1``, another tensor's ``m``):
struct-info inference gives the symbolic length TVM's topi canonicalization gives, LegalizeOps
lowers it (TVMScript Expected), and one build runs it at several sizes against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.arith import Analyzer
from minitvm.relax import op as R
from minitvm.relax.transform import LegalizeOps
from minitvm.script import from_source
from minitvm.tir.stmt_functor import substitute

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")


def _len_at(dim, values: dict) -> int:
    """A symbolic dim evaluated at ``values`` (var -> int)."""
    imms = {k: tir.IntImm("int64", v) for k, v in values.items()}
    out = Analyzer().simplify(substitute(dim, imms))
    assert isinstance(out, tir.IntImm), out
    return out.value


@pytest.mark.parametrize("begin,end,stride", [
    (1, n - 1, 1), (0, n - 1, 2), (n - 3, n, 1), (n - 1, 0, -2), (m, n, 1), (1, m, 1),
    (n - 1, -100, -1), (m - 4, n - 1, 3),
])
def test_infer_symbolic_begin_end_matches_python_slicing(begin, end, stride):
    x = relax.Var("x", relax.TensorStructInfo([n, 9], "float32"))
    out = R.infer_struct_info(R.strided_slice(x, [0], [begin], [end], [stride]))
    assert out.shape is not None and int(out.shape[1]) == 9
    for nv in range(0, 8):
        for mv in (-9, -2, 0, 3, 11):
            env = {n: nv, m: mv}
            b = begin if isinstance(begin, int) else _len_at(begin, env)
            e = end if isinstance(end, int) else _len_at(end, env)
            assert _len_at(out.shape[0], env) == len(range(nv)[b:e:stride]), (nv, mv)


def test_infer_assume_inbound_and_unknown_stride():
    x = relax.Var("x", relax.TensorStructInfo([n, 9], "float32"))
    out = R.infer_struct_info(R.strided_slice(x, [0, 1], [1, 0], [n - 1, 3],
                                              assume_inbound=True))
    assert Analyzer().can_prove_equal(out.shape[0], n - 2) and int(out.shape[1]) == 3
    # the end is the axis' own length: no clamping left in the length
    out = R.infer_struct_info(R.strided_slice(x, [0], [2], [n], assume_inbound=False))
    assert Analyzer().can_prove_equal(out.shape[0], tir.Max(n - tir.Min(n, 2), 0))
    # a symbolic stride: its sign (and so the length) is unknown
    out = R.infer_struct_info(R.strided_slice(x, [0], [0], [n], [m]))
    assert out.shape is None and out.ndim == 2


def test_infer_constant_bounds_assume_inbound_on_symbolic_axis():
    """``x[:1]`` / ``x[1:5:2]`` of a symbolic axis taken in bounds: the given length, not
    ``min(n, 1)``; without the flag, or with a negative bound, the clamped length as before."""
    x = relax.Var("x", relax.TensorStructInfo([n, 9], "float32"))
    out = R.infer_struct_info(R.strided_slice(x, [0], [0], [1], assume_inbound=True))
    assert isinstance(out.shape[0], tir.IntImm) and int(out.shape[0]) == 1
    out = R.infer_struct_info(R.strided_slice(x, [0], [1], [5], [2], assume_inbound=True))
    assert int(out.shape[0]) == 2
    out = R.infer_struct_info(R.strided_slice(x, [0], [0], [1]))
    assert Analyzer().can_prove_equal(out.shape[0], tir.Min(n, 1))
    out = R.infer_struct_info(R.strided_slice(x, [0], [-2], [n], assume_inbound=True))
    assert not isinstance(out.shape[0], tir.IntImm)


def test_build_constant_bounds_assume_inbound_runs():
    x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            head = bb.emit(R.strided_slice(x, [0], [1], [3], assume_inbound=True))
            gv = bb.emit_output(R.add(head, R.sum(x, [0], True)))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for nv in (3, 5):
        a = np.arange(nv * 3, dtype="float32").reshape(nv, 3)
        np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(),
                                   a[1:3] + a.sum(0, keepdims=True))


def check(before: str, expected: str):
    mod = from_source(before)
    text = mod.script()
    after = LegalizeOps()(mod)
    assert mod.script() == text  # the input module is not modified
    tvm.ir.assert_structural_equal(after, from_source(expected))
    tvm.ir.assert_structural_equal(from_source(after.script()), after)  # round trip
    return after


def test_legalize_symbolic_end_assume_inbound():
    check("""
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        gv = R.strided_slice(x, axes=[0, 1], begin=[1, 0], end=[n - 1, 3], assume_inbound=True)
        return gv
""", """
@I.ir_module
class Expected:
    @T.prim_func(private=True)
    def strided_slice(var_x: T.handle, var_T_strided_slice_with_axes: T.handle):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(4)))
        T_strided_slice_with_axes = T.match_buffer(var_T_strided_slice_with_axes,
                                                   (n - T.int64(2), T.int64(3)))
        for ax0, ax1 in T.grid(n - T.int64(2), T.int64(3)):
            with T.block("T_strided_slice_with_axes"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[v_ax0 + T.min(n, T.int64(1)), v_ax1])
                T.writes(T_strided_slice_with_axes[v_ax0, v_ax1])
                T_strided_slice_with_axes[v_ax0, v_ax1] = x[v_ax0 + T.min(n, T.int64(1)), v_ax1]

    @R.function
    def main(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n - 2", 3), "float32"):
        n = T.int64()
        cls = Expected
        gv = R.call_tir(cls.strided_slice, (x,), out_sinfo=R.Tensor((n - 2, 3), "float32"))
        return gv
""")


def test_legalize_begin_from_another_tensors_dim():
    # m is bound by y only: the PrimFunc takes it as a tir_vars scalar; the begin it reads is
    # canonicalized (a negative m counts from the end, then clamped into [0, n]); m is a
    # parameter's dimension, so not negative: the result has length max(n - min(m, n), 0)
    check("""
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("m",), "float32")):
        n = T.int64()
        m = T.int64()
        gv = R.strided_slice(x, axes=[0], begin=[m], end=[n])
        return gv
""", """
@I.ir_module
class Expected:
    @T.prim_func(private=True)
    def strided_slice(var_x: T.handle, var_T_strided_slice_with_axes: T.handle, m: T.int64):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(4)))
        T_strided_slice_with_axes = T.match_buffer(var_T_strided_slice_with_axes, (T.max(
            n - T.min(m, n), T.int64(0)), T.int64(4)))
        for ax0, ax1 in T.grid(T.max(n - T.min(m, n), T.int64(0)), T.int64(4)):
            with T.block("T_strided_slice_with_axes"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[v_ax0 + T.min(T.min(T.max(T.Select(m < T.int64(0), m + n, m),
                                                    T.int64(0)), n), n), v_ax1])
                T.writes(T_strided_slice_with_axes[v_ax0, v_ax1])
                T_strided_slice_with_axes[v_ax0, v_ax1] = x[v_ax0 + T.min(T.min(T.max(
                    T.Select(m < T.int64(0), m + n, m), T.int64(0)), n), n), v_ax1]

    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("m",), "float32")) -> R.Tensor(
            ("T.max(n - T.min(m, n), 0)", 4), "float32"):
        n = T.int64()
        m = T.int64()
        cls = Expected
        gv = R.call_tir(cls.strided_slice, (x,), out_sinfo=R.Tensor(
            (T.max(n - T.min(m, n), 0), 4), "float32"),
            tir_vars=R.shape([m]))
        return gv
""")


SLICES = """
@I.ir_module
class Slices:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("m",), "float32")):
        n = T.int64()
        m = T.int64()
        a = R.strided_slice(x, axes=[0], begin=[n - 3], end=[n])
        b = R.strided_slice(x, axes=[0], begin=[n - 1], end=[0], strides=[-2])
        c = R.strided_slice(x, axes=[0], begin=[m], end=[n])
        d = R.strided_slice(x, axes=[0, 1], begin=[1, 0], end=[n - 1, 3], assume_inbound=True)
        e = R.strided_slice(x, axes=[0], begin=[0], end=[n - 1], strides=[2])
        return (a, b, c, d, e)
"""


def test_numerics_one_build_several_sizes():
    mod = from_source(SLICES)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(0)
    for nv, mv in ((5, 2), (9, 7), (2, 4), (3, 1)):
        a = rng.standard_normal((nv, 4)).astype("float32")
        outs = vm["main"](tvm.nd.array(a), tvm.nd.array(np.zeros(mv, "float32")))
        want = [a[nv - 3:nv], a[nv - 1:0:-2], a[mv:nv], a[1:nv - 1, 0:3], a[0:nv - 1:2]]
        for got, w in zip(outs, want, strict=True):
            np.testing.assert_allclose(got.numpy(), w, rtol=1e-6)
