"""TVM's Relax "Export and Load Relax Executables" tutorial with ``import minitvm as tvm``: a
PyTorch MLP through ``from_exported_program(keep_params_as_input=True)`` and
``relax.frontend.detach_params``, ``relax.get_pipeline()`` under ``with target``,
``tvm.compile``, ``export_library(path, workspace_dir=...)``, ``tvm.runtime.load_module``,
``tvm.runtime.tensor`` inputs, the ``tvm.ir.Array`` result, ``loaded["stats"]()``, and the
standalone script that reloads the library and an ``.npz`` of parameters; checked against
PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the tutorial starts from a PyTorch model")

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402


class TorchMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(28 * 28, 128),
                                       torch.nn.ReLU(), torch.nn.Linear(128, 10))

    def forward(self, data):
        return self.net(data)


def first(output):
    """The tutorial's unpacking: PyTorch-imported programs return a tuple."""
    if isinstance(output, tvm.ir.Array) and len(output) > 0:
        return output[0]
    return output


def test_export_load_and_standalone_script(tmp_path):
    torch.manual_seed(0)
    torch_model = TorchMLP().eval()
    example_args = (torch.randn(1, 1, 28, 28, dtype=torch.float32),)
    with torch.no_grad():
        exported_program = torch.export.export(torch_model, example_args)
    mod = from_exported_program(exported_program, keep_params_as_input=True)
    mod, params = relax.frontend.detach_params(mod)
    assert len(params["main"]) == 4  # two weights, two biases

    target = tvm.target.Target("llvm")
    artifact_dir = tmp_path / "relax_export_artifacts"
    artifact_dir.mkdir(exist_ok=True)
    pipeline = relax.get_pipeline()
    with target:
        built_mod = pipeline(mod)
    executable = tvm.compile(built_mod, target=target)
    library_path = artifact_dir / "mlp_cpu.so"
    executable.export_library(str(library_path), workspace_dir=str(artifact_dir))
    assert "mlp_cpu.so" in sorted(p.name for p in artifact_dir.iterdir())

    loaded_rt_mod = tvm.runtime.load_module(str(library_path))
    dev = tvm.cpu(0)
    vm = relax.VirtualMachine(loaded_rt_mod, dev)
    input_tensor = torch.randn(1, 1, 28, 28, dtype=torch.float32)
    vm_input = tvm.runtime.tensor(input_tensor.numpy(), dev)
    vm_params = [tvm.runtime.tensor(p, dev) for p in params["main"]]
    tvm_output = vm["main"](vm_input, *vm_params)
    result_tensor = first(tvm_output)
    assert tuple(result_tensor.shape) == (1, 10)
    with torch.no_grad():
        expected = torch_model(input_tensor).numpy()
    np.testing.assert_allclose(result_tensor.numpy(), expected, rtol=1e-5, atol=1e-5)
    stats = loaded_rt_mod["stats"]()
    assert "Relax VM executable" in stats

    params_path = artifact_dir / "model_params.npz"
    np.savez(str(params_path), **{f"p_{i}": p.numpy() for i, p in enumerate(params["main"])})

    # the standalone script: reload the library and the parameters, run
    lib = tvm.runtime.load_module(str(library_path))
    device = tvm.cpu(0)
    vm2 = relax.VirtualMachine(lib, device)
    params_npz = np.load(str(params_path))
    params2 = [tvm.runtime.tensor(params_npz[f"p_{i}"], device) for i in range(len(params_npz))]
    data = np.random.default_rng(0).standard_normal((1, 1, 28, 28)).astype("float32")
    output = first(vm2["main"](tvm.runtime.tensor(data, device), *params2))
    with torch.no_grad():
        expected2 = torch_model(torch.from_numpy(data)).numpy()
    assert np.argmax(output.numpy()) == np.argmax(expected2)
    np.testing.assert_allclose(output.numpy(), expected2, rtol=1e-5, atol=1e-5)


def test_params_embedded_and_gpu_difference():
    torch.manual_seed(1)
    torch_model = TorchMLP().eval()
    example_args = (torch.randn(1, 1, 28, 28, dtype=torch.float32),)
    with torch.no_grad():
        exported_program = torch.export.export(torch_model, example_args)
        expected = torch_model(*example_args).numpy()
    mod = from_exported_program(exported_program, keep_params_as_input=False)
    executable = tvm.compile(mod, target=tvm.target.Target("llvm"))
    vm = relax.VirtualMachine(executable, tvm.cpu())
    out = first(vm["main"](tvm.runtime.tensor(example_args[0].numpy())))  # no params
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    from minitvm.autotvm import TVMDifferenceError

    with pytest.raises(TVMDifferenceError, match="no cuda code generator"):
        tvm.compile(mod, target=tvm.target.Target("cuda"))
