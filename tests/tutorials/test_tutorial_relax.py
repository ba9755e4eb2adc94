"""TVM's Relax tutorials with ``import minitvm as tvm``: the "Quick Start" (an ``nn.Module``
MLP, ``export_tvm``, ``relax.get_pipeline("zero")``, ``relax.build``, ``relax.VirtualMachine``),
the "IRModule" tutorial (TVMScript module with a prim_func and ``R.call_tir``, BlockBuilder,
``tvm.compile``, ``export_library`` + ``load_module``, ``time_evaluator``), and the
"End-to-End Optimize Model" tutorial on a small PyTorch net through ``from_exported_program``
(plus MetaSchedule's ``relax_integration`` in place of its tuning step)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend import nn
from minitvm.script import ir as I  # noqa: N812
from minitvm.script import relax as R  # noqa: N812
from minitvm.script import tir as T  # noqa: N812


class MLPModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 64)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


def test_quick_start_mlp():
    mod, param_spec = MLPModel().export_tvm(
        spec={"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    script = mod.script()
    assert "def forward(x: R.Tensor((1, 784), dtype=\"float32\")" in script
    assert 'R.matmul(x, permute_dims, out_dtype="void")' in script
    assert [name for name, _ in param_spec] == ["fc1.weight", "fc1.bias", "fc2.weight",
                                                "fc2.bias"]
    mod = relax.get_pipeline("zero")(mod)
    assert any(isinstance(f, tvm.tir.PrimFunc) for f in mod.functions.values())
    target = tvm.target.Target("llvm")
    ex = relax.build(mod, target)
    dev = tvm.cpu()
    vm = relax.VirtualMachine(ex, dev)
    rng = np.random.default_rng(0)
    data = rng.random((1, 784)).astype("float32")
    params = [rng.standard_normal(p.shape).astype("float32") for _, p in param_spec]
    out = vm["forward"](tvm.nd.array(data, dev), *[tvm.nd.array(p, dev) for p in params])
    ref = np.maximum(data @ params[0].T + params[1], 0) @ params[2].T + params[3]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-3)


@I.ir_module
class TVMScriptModule:
    @T.prim_func
    def relu(x: T.handle, y: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (n, 16), "float32")
        Y = T.match_buffer(y, (n, 16), "float32")
        for i, j in T.grid(n, 16):
            with T.block("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    @R.function
    def main(x: R.Tensor(("n", 16), dtype="float32")) -> R.Tensor(("n", 16), dtype="float32"):
        n = T.int64()
        cls = TVMScriptModule
        with R.dataflow():
            lv = R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((n, 16), dtype="float32"))
            R.output(lv)
        return lv


def test_irmodule_tvmscript_build_export_time(tmp_path):
    mod = TVMScriptModule
    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == ["main", "relu"]
    assert "R.call_tir(cls.relu, (x,)" in mod.script()
    ex = tvm.compile(mod, target="llvm")
    path = str(tmp_path / "relax_lib.so")
    ex.export_library(path)
    loaded = tvm.runtime.load_module(path)
    dev = tvm.cpu()
    vm = relax.VirtualMachine(loaded, dev)
    x = np.random.default_rng(1).standard_normal((5, 16)).astype("float32")
    np.testing.assert_array_equal(vm["main"](tvm.nd.array(x, dev)).numpy(), np.maximum(x, 0))
    timer = vm.time_evaluator("main", dev, number=2, repeat=2)
    res = timer(tvm.nd.array(x, dev))
    assert len(res.results) == 2 and str(res).startswith("Execution time summary:")


def test_block_builder_and_pass_sequence():
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((3, 4), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.add(x, x))
            lv1 = bb.emit(relax.op.multiply(lv0, x))
            gv = bb.emit_output(lv1)
        bb.emit_func_output(gv)
    mod = bb.get()
    seq = tvm.ir.transform.Sequential([relax.transform.LegalizeOps(),
                                       relax.transform.AnnotateTIROpPattern(),
                                       relax.transform.FoldConstant(),
                                       relax.transform.FuseOps(),
                                       relax.transform.FuseTIR()])
    fused = seq(mod)
    prims = [gv.name_hint for gv, f in fused.functions.items()
             if isinstance(f, tvm.tir.PrimFunc)]
    assert len(prims) == 1 and prims[0].startswith("fused_add_multiply")
    vm = relax.VirtualMachine(relax.build(fused, "llvm"), tvm.cpu())
    a = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), (a + a) * a)


def test_e2e_optimize_small_torch_model(tmp_path):
    torch = pytest.importorskip("torch", reason="the end-to-end tutorial imports from PyTorch")
    from minitvm.relax.frontend.torch import from_exported_program

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.fc = torch.nn.Linear(8, 10)

        def forward(self, x):
            y = torch.relu(self.conv(x)).mean(dim=(2, 3))
            return self.fc(y)

    torch.manual_seed(0)
    torch_model = Net().eval()
    example_args = (torch.randn(1, 3, 8, 8, dtype=torch.float32),)
    with torch.no_grad():
        exported_program = torch.export.export(torch_model, example_args)
        mod = from_exported_program(exported_program, keep_params_as_input=True)
        expected = torch_model(*example_args).numpy()
    mod, params = relax.frontend.detach_params(mod)
    assert "R.nn.conv2d" in mod.script()
    target = tvm.target.Target("llvm")
    ex = tvm.compile(mod, target=target)
    dev = tvm.cpu()
    vm = relax.VirtualMachine(ex, dev)
    nd_params = [tvm.nd.array(p, dev) for p in params["main"]]
    out = vm["main"](tvm.nd.array(example_args[0].numpy(), dev), *nd_params)
    out0 = out[0] if isinstance(out, (list, tuple, tvm.runtime.container.ADT)) else out
    np.testing.assert_allclose(out0.numpy(), expected, rtol=1e-5, atol=1e-5)

    # the tutorial's tuning step, with minitvm's tuner (one trial)
    from minitvm import meta_schedule as ms

    database = ms.relax_integration.tune_relax(mod, None, target, str(tmp_path), 1)
    assert len(database) >= 1
    ex2 = ms.relax_integration.compile_relax(database, mod, target)
    out2 = relax.VirtualMachine(ex2, dev)["main"](tvm.nd.array(example_args[0].numpy()),
                                                  *nd_params)
    out2 = out2[0] if isinstance(out2, (list, tuple, tvm.runtime.container.ADT)) else out2
    np.testing.assert_allclose(out2.numpy(), expected, rtol=1e-5, atol=1e-5)
