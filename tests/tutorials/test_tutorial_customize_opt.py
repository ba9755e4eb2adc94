"""TVM's Relax "Customize Optimization" tutorial with ``import minitvm as tvm``: the
``nn.Module`` MLP exported with ``export_tvm``, the library-dispatch pass written as a
``@tvm.transform.module_pass`` class over ``relax.backend.get_pattern`` +
``FuseOpsByPattern(annotate_codegen=True)`` + ``RunCodegen``, and deployment with
``relax.build`` / ``relax.VirtualMachine``.

Its cuBLAS and CUDA steps are deliberate differences: the cuBLAS patterns register and
partition as in TVM (the printed module matches the tutorial's), the tutorial's own
``tvm.get_global_func("relax.ext.cublas", True)`` check finds no codegen, ``RunCodegen`` and a
``"cuda"`` build raise ``TVMDifferenceError``. The same dispatch then runs for real with a
CPU "library" registered the way a BYOC codegen is (``relax.ext.<name>``), checked against
numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import IRModule, relax
from minitvm.autotvm import TVMDifferenceError
from minitvm.relax.backend.patterns import make_matmul_pattern
from minitvm.relax.frontend import nn


class RelaxModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10, bias=False)

    def forward(self, x):
        x = self.fc1(x)
        x = self.relu1(x)
        x = self.fc2(x)
        return x


input_shape = (1, 784)


def export():
    return RelaxModel().export_tvm({"forward": {"x": nn.spec.Tensor(input_shape, "float32")}})


@tvm.transform.module_pass(opt_level=0, name="CublasDispatch")
class CublasDispatch:
    def transform_module(self, mod: IRModule, _ctx: tvm.transform.PassContext) -> IRModule:
        if not tvm.get_global_func("relax.ext.cublas", True):
            raise Exception("CUBLAS is not enabled.")
        patterns = [relax.backend.get_pattern("cublas.matmul_transposed_bias_relu")]
        mod = relax.transform.FuseOpsByPattern(patterns, annotate_codegen=True)(mod)
        mod = relax.transform.RunCodegen()(mod)
        return mod


def test_prepare_module(capsys):
    mod, params = export()
    mod.show()
    shown = capsys.readouterr().out
    assert "@I.ir_module" in shown and "def forward(x: R.Tensor((1, 784)" in shown
    assert shown.count("R.matmul(") == 2 and "R.nn.relu(" in shown
    assert [name for name, _ in params] == ["fc1.weight", "fc1.bias", "fc2.weight"]


def test_cublas_dispatch_is_a_difference():
    import minitvm.relax.backend.cuda.cublas as _cublas  # noqa: F401  (registers the patterns)

    mod, _ = export()
    assert CublasDispatch().info.name == "CublasDispatch"
    with pytest.raises(Exception, match="CUBLAS is not enabled."):
        CublasDispatch()(mod)
    # the dispatch's partitioning step alone: the first Linear and the ReLU are fused into a
    # function for cuBLAS, the rest is unchanged (the module the tutorial prints)
    pattern = relax.backend.get_pattern("cublas.matmul_transposed_bias_relu")
    assert pattern.name == "cublas.matmul_transposed_bias_relu"
    names = [p.name for p in relax.backend.get_patterns_with_prefix("cublas")]
    assert "cublas.matmul_transposed_bias_relu" in names and "cublas.matmul" in names
    fused = relax.transform.FuseOpsByPattern([pattern], annotate_codegen=True)(mod)
    script = fused.script()
    wrapper = "fused_relax_permute_dims_relax_matmul_relax_add_relax_nn_relu_cublas"
    assert f"lv: R.Tensor((1, 256), dtype=\"float32\") = cls.{wrapper}(fc1_weight, x, " \
           "fc1_bias)" in script
    assert 'R.func_attr({"Codegen": "cublas"})' in script
    assert 'R.func_attr({"Composite": "cublas.matmul_transposed_bias_relu"})' in script
    assert "R.matmul(lv, permute_dims1" in script  # fc2 stays as it was
    with pytest.raises(TVMDifferenceError, match="no cublas codegen"):
        relax.transform.RunCodegen()(fused)


def test_cuda_deploy_is_a_difference():
    mod, _ = export()
    with pytest.raises(TVMDifferenceError, match="only the 'llvm'"):
        relax.build(mod, target="cuda")


def compile_linear_relu(func):
    """The CPU "library" codegen for one offloaded function: find which parameter is the
    data, the weight and the bias in its composite body, return the destination-passing
    kernel relu(x @ weight.T + bias)."""
    composite = func.body.blocks[0].bindings[0].value
    assert composite.attrs["Composite"] == "npblas.linear_relu"
    values = {b.var: b.value for b in composite.body.blocks[0].bindings}
    relu = values[composite.body.body]
    add = values[relu.args[0]]
    matmul = values[add.args[0]]
    weight = values[matmul.args[1]].args[0]
    order = [composite.params.index(v) for v in (matmul.args[0], weight, add.args[1])]

    def kernel(*args):
        x, w, b = (args[k].numpy() for k in order)
        args[-1].copyfrom(np.maximum(x @ w.T + b, 0))

    return kernel


@pytest.fixture
def cpu_library():
    """A BYOC codegen named ``npblas``: its patterns registered, ``relax.ext.npblas`` returning
    one kernel per offloaded function."""
    seen = []

    def codegen(functions, options, constant_names):
        seen.extend(functions)
        kernels = {}
        for f in functions:
            assert f.attrs["Codegen"] == "npblas"
            kernels[str(f.attrs["global_symbol"])] = compile_linear_relu(f)
        return [kernels]

    pattern, annotations = make_matmul_pattern(with_bias=True, activation="relax.nn.relu",
                                               transposed_rhs=True)
    relax.backend.register_patterns([("npblas.linear_relu", pattern, annotations)])
    tvm.register_func("relax.ext.npblas", codegen, override=True)
    yield seen
    tvm.runtime.registry.remove_global_func("relax.ext.npblas")
    relax.backend.unregister_patterns(["npblas.linear_relu"])


def test_dispatch_to_a_cpu_library(cpu_library, tmp_path):
    @tvm.transform.module_pass(opt_level=0, name="NpBlasDispatch")
    class NpBlasDispatch:
        def transform_module(self, mod: IRModule, _ctx) -> IRModule:
            if not tvm.get_global_func("relax.ext.npblas", True):
                raise Exception("npblas is not enabled.")
            patterns = relax.backend.get_patterns_with_prefix("npblas")
            mod = relax.transform.FuseOpsByPattern(patterns, annotate_codegen=True)(mod)
            mod = relax.transform.RunCodegen()(mod)
            return mod

    mod, params = export()
    mod = NpBlasDispatch()(mod)
    assert len(cpu_library) == 1
    script = mod.script()
    assert 'R.call_dps_packed("fused_relax_permute_dims_relax_matmul_relax_add_relax_nn_relu_' \
           'npblas", (fc1_weight, x, fc1_bias), out_sinfo=R.Tensor((1, 256), ' \
           'dtype="float32"))' in script
    assert "Codegen" not in script and len(mod.get_attr("external_mods")) == 1

    ex = relax.build(mod, target="llvm")
    dev = tvm.device("cpu", 0)
    vm = relax.VirtualMachine(ex, dev)
    rng = np.random.default_rng(0)
    data = tvm.nd.array(rng.random(input_shape).astype("float32"), dev)
    cpu_params = [tvm.nd.array(rng.random(p.shape).astype(p.dtype), dev) for _, p in params]
    cpu_out = vm["forward"](data, *cpu_params).numpy()
    w1, b1, w2 = (p.numpy() for p in cpu_params)
    expected = np.maximum(data.numpy() @ w1.T + b1, 0) @ w2.T
    np.testing.assert_allclose(cpu_out, expected, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="external codegen modules"):
        ex.export_library(str(tmp_path / "lib.so"))


def test_run_codegen_errors():
    mod, _ = export()
    pattern, annotations = make_matmul_pattern(transposed_rhs=True)
    fused = relax.transform.FuseOpsByPattern([("nosuchlib.matmul", pattern, annotations)],
                                             annotate_codegen=True)(mod)
    with pytest.raises(ValueError, match="no codegen is registered for 'nosuchlib'"):
        relax.transform.RunCodegen()(fused)
    # nothing to offload: the module comes back as it was
    assert tvm.ir.structural_equal(relax.transform.RunCodegen()(mod), mod)


def test_auto_tuning_and_deploy(tmp_path):
    """The tutorial's tuning step on the CPU: zero pipeline, MetaScheduleTuneTIR,
    MetaScheduleApplyDatabase under ``with target``, then relax.build and the VM."""
    mod, params = export()
    device = tvm.cpu(0)
    target = tvm.target.Target.from_device(device)
    assert str(target) == "llvm -keys=cpu"
    trials = 2
    with target:
        mod = tvm.ir.transform.Sequential([
            relax.get_pipeline("zero"),
            relax.transform.MetaScheduleTuneTIR(work_dir=str(tmp_path), max_trials_global=trials),
            relax.transform.MetaScheduleApplyDatabase(work_dir=str(tmp_path)),
        ])(mod)
    assert (tmp_path / "records.jsonl").exists()  # (a GEMV-only model: nothing to tune)
    assert mod.get_attr("minitvm.schedule_knobs") is not None
    ex = relax.build(mod, target="llvm")
    vm = relax.VirtualMachine(ex, device)
    rng = np.random.default_rng(1)
    data = tvm.nd.array(rng.random(input_shape).astype("float32"), device)
    cpu_params = [tvm.nd.array(rng.random(p.shape).astype(p.dtype), device) for _, p in params]
    out = vm["forward"](data, *cpu_params).numpy()
    w1, b1, w2 = (p.numpy() for p in cpu_params)
    np.testing.assert_allclose(out, np.maximum(data.numpy() @ w1.T + b1, 0) @ w2.T,
                               rtol=1e-4, atol=1e-4)


def test_tuned_knobs_reach_the_build(tmp_path):
    """A convolution has knobs to tune: the records MetaScheduleTuneTIR writes are what
    relax.build lowers the kernel with after MetaScheduleApplyDatabase."""
    from minitvm.schedule.knobs import KnobTable
    from minitvm.tune import MeasureResult
    from minitvm.tune.workload import measure_workload

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(4, 8, 3, padding=1)

        def forward(self, x):
            return self.conv(x)

    mod, params = ConvNet().export_tvm({"forward": {"x": nn.spec.Tensor((1, 4, 8, 8),
                                                                           "float32")}})
    class InProcessRunner:  # one short timing, here rather than in a worker: a fast test
        def run(self, task, candidates):
            return [MeasureResult(measure_workload(task, knobs, repeat=1, min_repeat_ms=1.0),
                                  None, 0.0) for knobs in candidates]

    with tvm.target.Target("llvm"):
        mod = relax.transform.MetaScheduleTuneTIR(str(tmp_path), 1,
                                                  runner=InProcessRunner())(mod)
        tuned = relax.transform.MetaScheduleApplyDatabase(str(tmp_path))(mod)
    records = (tmp_path / "records.jsonl").read_text().splitlines()
    assert records, "a conv2d workload is tunable"
    table = tuned.get_attr("minitvm.schedule_knobs")
    tracing = KnobTable(table.entries, trace=True)
    ex = relax.build(tuned.with_attr("minitvm.schedule_knobs", tracing), target="llvm")
    assert set(tracing.seen) & set(table.entries), "the build looked up the tuned workload"
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 4, 8, 8)).astype("float32")
    w, b = (rng.standard_normal(p.shape).astype("float32") for _, p in params)
    out = relax.VirtualMachine(ex, tvm.cpu())["forward"](tvm.nd.array(x), tvm.nd.array(w),
                                                          tvm.nd.array(b)).numpy()
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = sum(np.einsum("nchw,oc->nohw", padded[:, :, i:i + 8, j:j + 8], w[:, :, i, j])
              for i in range(3) for j in range(3)) + b[None, :, None, None]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    with pytest.raises(FileNotFoundError, match="run MetaScheduleTuneTIR"):
        relax.transform.MetaScheduleApplyDatabase(str(tmp_path / "elsewhere"))(mod)


def test_dlight_rules_are_a_difference():
    from minitvm import dlight as dl

    with pytest.raises(TVMDifferenceError, match="no GPU schedule rules"):
        dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Fallback())
