"""FuseTIR with symbolic vars no buffer dimension gives back (issue 10): legalization passes
such a var (``n`` of a ``(n * 2, 3)`` buffer) as a scalar ``tir_vars`` parameter, FuseTIR maps
it through the fused group and keeps it as a scalar of the fused PrimFunc when none of the fused
buffers has it as a whole dimension; relax.build + VM (interpreted and native entry) run it."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.script import ir as I  # noqa: E741
from minitvm.script import relax as R
from minitvm.script import tir as T
from minitvm.tir.stmt_functor import post_order

SIZES = (1, 5, 17)


@I.ir_module
class ReshapeAdd:
    @R.function
    def main(x: R.Tensor(("n", 6), "float32"), w: R.Tensor(("n * 2", 3), "float32")):
        n = T.int64()
        with R.dataflow():
            y = R.reshape(x, R.shape([n * 2, 3]))
            z = R.add(y, w)
            u = R.add(z, z)
            R.output(u)
        return u


@I.ir_module
class SplitGroups:
    @R.function
    def main(x: R.Tensor(("n", 6), "float32"), w: R.Tensor(("n * 2", 3), "float32")):
        n = T.int64()
        with R.dataflow():
            a = R.exp(w)
            b = R.add(a, a)
            y = R.reshape(x, R.shape([n * 2, 3]))
            z = R.multiply(y, y)
            R.output(b, z)
        return (b, z)


# fused_exp_add only sees w: (n * 2, 3), so n is its scalar parameter, passed as tir_vars
@I.ir_module
class Expected:
    @T.prim_func(private=True)
    def fused_exp_add(p_w: T.handle, p_output0: T.handle, n: T.int64):
        T.func_attr({"tir.noalias": T.bool(True)})
        w = T.match_buffer(p_w, (n * T.int64(2), T.int64(3)))
        T_add_intermediate = T.match_buffer(p_output0, (n * T.int64(2), T.int64(3)))
        # with T.block("root"):
        compute_intermediate = T.alloc_buffer((n * T.int64(2), T.int64(3)))
        for i0, i1 in T.grid(n * T.int64(2), T.int64(3)):
            with T.block("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(w[v_i0, v_i1])
                T.writes(compute_intermediate[v_i0, v_i1])
                compute_intermediate[v_i0, v_i1] = T.exp(w[v_i0, v_i1])
        for ax0, ax1 in T.grid(n * T.int64(2), T.int64(3)):
            with T.block("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(compute_intermediate[v_ax0, v_ax1], compute_intermediate[v_ax0, v_ax1])
                T.writes(T_add_intermediate[v_ax0, v_ax1])
                T_add_intermediate[v_ax0, v_ax1] = compute_intermediate[v_ax0, v_ax1] + compute_intermediate[v_ax0, v_ax1]
    @T.prim_func(private=True)
    def fused_reshape_multiply(p_x: T.handle, p_output0: T.handle):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(p_x, (n, T.int64(6)))
        T_multiply_intermediate = T.match_buffer(p_output0, (n * T.int64(2), T.int64(3)))
        # with T.block("root"):
        T_reshape_intermediate = T.alloc_buffer((n * T.int64(2), T.int64(3)))
        for ax0, ax1 in T.grid(n * T.int64(2), T.int64(3)):
            with T.block("T_reshape"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[(v_ax0 * T.int64(3) + v_ax1) // T.int64(6), (v_ax0 * T.int64(3) + v_ax1) % T.int64(6)])
                T.writes(T_reshape_intermediate[v_ax0, v_ax1])
                T_reshape_intermediate[v_ax0, v_ax1] = x[(v_ax0 * T.int64(3) + v_ax1) // T.int64(6), (v_ax0 * T.int64(3) + v_ax1) % T.int64(6)]
        for ax0, ax1 in T.grid(n * T.int64(2), T.int64(3)):
            with T.block("T_multiply"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(T_reshape_intermediate[v_ax0, v_ax1], T_reshape_intermediate[v_ax0, v_ax1])
                T.writes(T_multiply_intermediate[v_ax0, v_ax1])
                T_multiply_intermediate[v_ax0, v_ax1] = T_reshape_intermediate[v_ax0, v_ax1] * T_reshape_intermediate[v_ax0, v_ax1]
    @R.function
    def main(x: R.Tensor(("n", 6), dtype="float32"), w: R.Tensor(("n * 2", 3), dtype="float32")) -> R.Tuple(R.Tensor(("n * 2", 3), dtype="float32"), R.Tensor(("n * 2", 3), dtype="float32")):
        n = T.int64()
        cls = Expected
        with R.dataflow():
            b = R.call_tir(cls.fused_exp_add, (w,), out_sinfo=R.Tensor((n * 2, 3), dtype="float32"), tir_vars=R.shape([n]))
            z = R.call_tir(cls.fused_reshape_multiply, (x,), out_sinfo=R.Tensor((n * 2, 3), dtype="float32"))
            R.output(b, z)
        return (b, z)


def _fuse(mod: tvm.IRModule) -> tvm.IRModule:
    return tvm.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
        relax.transform.FuseOps(), relax.transform.FuseTIR()])(mod)


def _vms(mod: tvm.IRModule):
    """A native-entry VM and an interpreting VM over ONE build of ``mod``."""
    ex = relax.build(mod, target="llvm")
    fast = relax.VirtualMachine(ex, tvm.cpu())
    slow = relax.VirtualMachine(ex, tvm.cpu())
    slow.native_entry = False
    return fast, slow


def _check(mod, make, ref, sizes=SIZES):
    fast, slow = _vms(mod)
    rng = np.random.default_rng(0)
    for n in (*sizes, sizes[0]):  # the repeat replays the native entry's recorded plan
        ins = make(rng, n)
        want = ref(*ins)
        for vm in (fast, slow):
            got = vm["main"](*[tvm.nd.array(a) for a in ins])
            got = [got] if isinstance(got, tvm.nd.NDArray) else list(got)
            assert len(got) == len(want)
            for g, e in zip(got, want, strict=True):
                np.testing.assert_allclose(g.numpy(), e, rtol=1e-5, atol=1e-6)
    if "main" in fast._native:
        assert len(fast._native["main"].plans) == len(sizes)


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype("float32")


def test_legalized_add_takes_unrecoverable_var_as_tir_var():
    mod = relax.transform.LegalizeOps()(ReshapeAdd)
    add = mod["add"]
    assert [p.dtype for p in add.params[-1:]] == ["int64"]  # n: not a whole dimension
    calls = [b.value for b in mod["main"].body.blocks[0].bindings]
    for c in calls[1:]:  # both adds: add(y, w) then add(z, z), each with its own arguments
        assert len(c.args) == 3 and [str(v) for v in c.args[2].values] == ["n"]
    assert [a.name_hint for a in calls[1].args[1].fields] == ["y", "w"]
    assert [a.name_hint for a in calls[2].args[1].fields] == ["z", "z"]
    # reshape's x: (n, 6) gives n back: no scalar parameter
    assert all(p.dtype == "handle" for p in mod["reshape"].params)


def test_fused_group_without_the_var_takes_it_as_scalar():
    tvm.ir.assert_structural_equal(_fuse(SplitGroups), Expected)


def test_fused_reshape_add_maps_tir_vars_into_one_var():
    mod = _fuse(ReshapeAdd)
    prims = [f for _, f in mod.functions.items() if isinstance(f, tvm.tir.PrimFunc)]
    assert len(prims) == 1
    fused = prims[0]
    # n comes from x's (n, 6) buffer: the inner add's scalar n became that same var
    assert all(p.dtype == "handle" for p in fused.params)
    used = {id(v) for b in fused.buffer_map.values() for d in b.shape for v in post_order(d)
            if isinstance(v, tvm.tir.Var)}
    assert len(used) == 1  # x's n, w's n * 2 and the output's n * 2: one and the same n


def test_issue_reshape_add_builds_and_runs():
    _check(ReshapeAdd, lambda r, n: [_f32(r, n, 6), _f32(r, n * 2, 3)],
           lambda x, w: [(x.reshape(-1, 3) + w) * 2])


def test_split_groups_scalar_tir_var_runs():
    _check(SplitGroups, lambda r, n: [_f32(r, n, 6), _f32(r, n * 2, 3)],
           lambda x, w: [np.exp(w) * 2, x.reshape(-1, 3) ** 2])


@I.ir_module
class Half:
    @R.function
    def main(x: R.Tensor(("n", 6), "float32")):
        n = T.int64()
        with R.dataflow():
            y = R.reshape(x, R.shape([n // 2, 12]))
            z = R.add(y, y)
            R.output(z)
        return z


@I.ir_module
class TwoVars:
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32"), w: R.Tensor(("n * m",), "float32")):
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            y = R.reshape(x, R.shape([n * m]))
            z = R.add(y, w)
            e = R.exp(w)
            f = R.multiply(e, e)
            R.output(z, f)
        return (z, f)


@I.ir_module
class FlatSlice:
    @R.function
    def main(x: R.Tensor(("n", 2, 3), "float32")):
        with R.dataflow():
            y = R.flatten(x)
            s = R.strided_slice(y, axes=[0], begin=[1], end=[1000], strides=[2])
            z = R.add(s, s)
            R.output(z)
        return z


@pytest.mark.parametrize("case", ["half", "two_vars", "flat_slice"])
def test_neighbours_build_and_run(case):
    if case == "half":
        _check(Half, lambda r, n: [_f32(r, 2 * n, 6)], lambda x: [x.reshape(-1, 12) * 2])
    elif case == "two_vars":
        _check(TwoVars, lambda r, n: [_f32(r, n, 3), _f32(r, n * 3)],
               lambda x, w: [x.reshape(-1) + w, np.exp(w) ** 2])
    else:
        _check(FlatSlice, lambda r, n: [_f32(r, n, 2, 3)], lambda x: [x.reshape(-1)[1::2] * 2])


@I.ir_module
class SameArgTwice:
    @R.function
    def main(y: R.Tensor((4, 3), "float32"), w: R.Tensor((4, 3), "float32")):
        with R.dataflow():
            z = R.add(y, y)
            u = R.add(y, w)
            R.output(z, u)
        return (z, u)


def test_legalize_reuse_keeps_each_calls_arguments():
    # the lowering of add(y, y) must not be replayed as add(y, y) for add(y, w)
    mod = relax.transform.LegalizeOps()(SameArgTwice)
    calls = [b.value for b in mod["main"].body.blocks[0].bindings]
    assert [[a.name_hint for a in c.args[1].fields] for c in calls] == [["y", "y"], ["y", "w"]]
    fast, _ = _vms(SameArgTwice)
    y, w = _f32(np.random.default_rng(1), 4, 3), _f32(np.random.default_rng(2), 4, 3)
    z, u = fast["main"](tvm.nd.array(y), tvm.nd.array(w))
    np.testing.assert_allclose(z.numpy(), y * 2, rtol=1e-6)
    np.testing.assert_allclose(u.numpy(), y + w, rtol=1e-6)
