"""Regression tests (Relax II fixes): FuseTIR with weights bound as constants by BindParams
and relax.build of such a module; emit_te passing variables used only by the compute body as
``tir_vars``; BlockBuilder taking an ExternFunc call's result from its ``sinfo_args``."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.relax import transform as rt
from minitvm.relax.frontend import nn


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 8)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


def _mlp_bound():
    mod, params = _MLP().export_tvm({"forward": {"x": nn.spec.Tensor(("n", 16), "float32")}})
    rng = np.random.default_rng(0)
    values = {name.replace(".", "_"): rng.standard_normal([int(d) for d in p.shape])
              .astype("float32") for name, p in params}
    return mod, rt.BindParams("forward", values)(mod), values


def _reference(x, p):
    h = np.maximum(x @ p["fc1_weight"].T + p["fc1_bias"], 0)
    return h @ p["fc2_weight"].T + p["fc2_bias"]


def _primitive_with_constant():
    """main(x) calls a Primitive function computing exp((x + c) * c) with a constant ``c``."""
    c = relax.const(np.arange(4, dtype="float32"))
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("fused_add_multiply_exp", [x], attrs={"Primitive": 1}, private=True):
        with bb.dataflow():
            a = bb.emit_te(lambda u, v: te.compute(u.shape, lambda i: u[i] + v[i], name="T_add"),
                           x, c, primfunc_name_hint="add")
            m = bb.emit_te(lambda u, v: te.compute(u.shape, lambda i: u[i] * v[i], name="T_mul"),
                           a, c, primfunc_name_hint="multiply")
            gv = bb.emit_output(bb.emit_te(lambda u: te.compute(u.shape, lambda i: tir.exp(u[i]),
                                                               name="T_exp"),
                                           m, primfunc_name_hint="exp"))
        bb.emit_func_output(gv)
    fused = bb.get().get_global_var("fused_add_multiply_exp")
    y = relax.Var("y", relax.TensorStructInfo([4], "float32"))
    with bb.function("main", [y]):
        with bb.dataflow():
            gv = bb.emit_output(relax.Call(fused, [y]))
        bb.emit_func_output(gv)
    return bb.get(), c


def test_fuse_tir_lifts_a_constant_to_one_parameter():
    before, c = _primitive_with_constant()
    mod = rt.FuseTIR()(before)
    prim = mod["fused_add_multiply_exp"]
    assert isinstance(prim, tir.PrimFunc)
    # the constant, used twice, is one parameter after the function's own
    assert [p.name for p in prim.params] == ["p_x", "p_param_1", "p_output0"]
    call = mod["main"].body.blocks[0].bindings[0].value
    assert call.op.name == "relax.call_tir"
    assert len(call.args[1].fields) == 2 and call.args[1].fields[1] is c
    assert "add" not in [gv.name_hint for gv in mod.get_global_vars()]  # callees removed
    xs = np.random.rand(4).astype("float32")
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    want = np.exp((xs + np.arange(4)) * np.arange(4))
    np.testing.assert_allclose(vm["main"](xs).numpy(), want, rtol=1e-5)
    vm0 = relax.VirtualMachine(relax.build(before, "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm0["main"](xs).numpy(), want, rtol=1e-5)


def test_fuse_tir_after_bind_params():
    _, bound, _ = _mlp_bound()
    mod = tvm.transform.Sequential([rt.LegalizeOps(), rt.AnnotateTIROpPattern(), rt.FuseOps(),
                                    rt.FuseTIR()])(bound)
    fused = mod["fused_matmul_add_relu"]
    assert isinstance(fused, tir.PrimFunc) and fused.params[-1].name == "p_output0"
    calls = [b.value for blk in mod["forward"].body.blocks for b in blk.bindings
             if isinstance(b.value, relax.Call) and b.value.args
             and getattr(b.value.args[0], "name_hint", "") == "fused_matmul_add_relu"]
    assert len(calls) == 1
    assert len(calls[0].args[1].fields) == len(fused.params) - 1
    assert isinstance(calls[0].args[1].fields[-1], relax.Constant)


def test_build_with_bound_params_matches_unbound():
    unbound, bound, p = _mlp_bound()
    vm_b = relax.VirtualMachine(relax.build(bound, "llvm"), tvm.cpu())
    vm_u = relax.VirtualMachine(relax.build(unbound, "llvm"), tvm.cpu())
    order = ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((n, 16)).astype("float32")
        got = vm_b["forward"](x).numpy()
        np.testing.assert_allclose(got, _reference(x, p), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got, vm_u["forward"](x, *[p[k] for k in order]).numpy(),
                                   rtol=1e-5, atol=1e-5)


def _scale_by(n, s):
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    sh = relax.Var("sh", relax.ShapeStructInfo([s]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, sh]):
        with bb.dataflow():
            y = bb.emit_te(lambda a: te.compute(a.shape, lambda i: a[i] * s.astype("float32"),
                                                name="T_mul"), x)
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    return bb.get()


def test_emit_te_passes_body_only_vars_as_tir_vars():
    n, s = tir.Var("n", "int64"), tir.Var("s", "int64")
    mod = _scale_by(n, s)
    prim = mod["te_func"]
    assert [p.name for p in prim.params][-1] == "s"
    assert prim.params[-1] is not s  # renewed, as every shape variable
    call = mod["main"].body.blocks[0].bindings[0].value
    assert list(call.args[2].values) == [s]
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    xs = np.random.rand(5).astype("float32")
    np.testing.assert_allclose(vm["main"](xs, tvm.runtime.ShapeTuple([3])).numpy(), xs * 3,
                               rtol=1e-6)


def test_emit_te_arange_step_from_shape():
    n, step = tir.Var("n", "int64"), tir.Var("step", "int64")
    sh = relax.Var("sh", relax.ShapeStructInfo([n, step]))
    bb = relax.BlockBuilder()
    with bb.function("main", [sh]):
        out = bb.emit_te(lambda: te.compute((n,), lambda i: i * step, name="T_arange"))
        bb.emit_func_output(out)
    mod = bb.get()
    call = mod["main"].body.blocks[0].bindings[0].value
    assert list(call.args[2].values) == [n, step]
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    np.testing.assert_array_equal(vm["main"](tvm.runtime.ShapeTuple([4, 3])).numpy(),
                                  np.arange(4) * 3)


def test_emit_te_float_free_var_is_a_clear_error():
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    f = tir.Var("alpha", "float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with pytest.raises(TypeError, match="variable 'alpha' of dtype float32"):
            bb.emit_te(lambda a: te.compute(a.shape, lambda i: a[i] * f), x)
        bb.emit_func_output(x)


def test_extern_func_call_uses_sinfo_args():
    x = relax.Var("x", relax.TensorStructInfo([3], "float32"))
    t = relax.TensorStructInfo([3], "float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(relax.Call(relax.ExternFunc("my_f"), [x], sinfo_args=[t]))
        z = bb.emit(relax.Call(relax.ExternFunc("my_g"), [x], sinfo_args=[t, t]))
        w = bb.emit(relax.Call(relax.ExternFunc("my_h"), [x]))
        bb.emit_func_output(relax.Tuple([y, z, w]))
    tvm.ir.assert_structural_equal(y.struct_info, t)
    tvm.ir.assert_structural_equal(z.struct_info, relax.TupleStructInfo([t, t]))
    assert isinstance(w.struct_info, relax.ObjectStructInfo)


def test_fused_scalar_constant_keeps_rank_zero():
    """A 0-d constant lifted into a fused PrimFunc reaches the kernel as a 0-d tensor."""
    x = relax.Var("x", relax.TensorStructInfo([2, 3], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([3, 4], "float32"))
    c = relax.const(np.array(2.0, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            m = bb.emit(relax.op.matmul(x, w))
            gv = bb.emit_output(relax.op.divide(m, c))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    a = np.random.rand(2, 3).astype("float32")
    b = np.random.rand(3, 4).astype("float32")
    np.testing.assert_allclose(vm["main"](a, b).numpy(), a @ b / 2, rtol=1e-5)


def test_shared_fused_function_reads_its_constant_parameters():
    """Groups that differ only in their constants share one fused function: each call must use
    its own constants (the function reads the lifted parameters, not the first constants)."""
    x = relax.Var("x", relax.TensorStructInfo([2, 4], "float32"))
    rng = np.random.default_rng(5)
    ws = [rng.standard_normal((4, 4)).astype("float32") for _ in range(3)]
    bs = [rng.standard_normal((4,)).astype("float32") for _ in range(3)]
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            outs = []
            for w, b in zip(ws, bs, strict=True):
                m = bb.emit(relax.op.matmul(x, relax.const(w)))
                outs.append(bb.emit_output(relax.op.add(m, relax.const(b))))
        bb.emit_func_output(relax.Tuple(outs))
    mod = bb.get()
    fused = tvm.transform.Sequential([rt.LegalizeOps(), rt.AnnotateTIROpPattern(),
                                      rt.FuseOps()])(mod)
    names = [gv.name_hint for gv in fused.get_global_vars()]
    assert names.count("fused_matmul_add") == 1  # one function for the three groups
    f = fused["fused_matmul_add"]
    assert not any(isinstance(b.value.args[1].fields[-1], relax.Constant)
                   for blk in f.body.blocks for b in blk.bindings)  # reads its parameters
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    a = rng.standard_normal((2, 4)).astype("float32")
    for got, w, b in zip(vm["main"](a), ws, bs, strict=True):
        np.testing.assert_allclose(got.numpy(), a @ w + b, rtol=1e-5, atol=1e-5)
