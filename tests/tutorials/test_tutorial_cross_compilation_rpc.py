"""TVM's "Cross Compilation and RPC" tutorial with ``import minitvm as tvm`` in its
``local_demo`` form: ``rpc.LocalSession()`` (upload, load_module, remote.cpu()), the Relax
deployment of a PyTorch MLP through the session (``set_input`` / ``invoke_stateful`` /
``get_outputs``, ``time_evaluator("invoke_stateful")``), and the TE "add one" kernel
compiled with ``tvm.compile`` and timed. The network pieces (``rpc.connect``, trackers) and
remote GPUs raise ``TVMDifferenceError``."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, rpc, te
from minitvm.autotvm import TVMDifferenceError
from minitvm.contrib import utils


def test_add_one_kernel():
    n = tvm.runtime.convert(1024)
    A = te.placeholder((n,), name="A")  # noqa: N806
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")  # noqa: N806
    mod = tvm.IRModule.from_expr(te.create_prim_func([A, B]).with_attr("global_symbol",
                                                                       "add_one"))
    func = tvm.compile(mod, target="llvm")
    dev = tvm.cpu()
    a = tvm.runtime.tensor(np.random.uniform(size=1024).astype(A.dtype), dev)
    b = tvm.runtime.tensor(np.zeros(1024, dtype=A.dtype), dev)
    func(a, b)
    np.testing.assert_equal(b.numpy(), a.numpy() + 1)
    time_f = func.time_evaluator("add_one", dev, number=10)
    assert time_f(a, b).mean > 0


def test_deploy_pytorch_model_through_local_session():
    torch = pytest.importorskip("torch", reason="the deployment section starts from PyTorch")
    from minitvm.relax.frontend.torch import from_exported_program

    class TorchMLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(28 * 28, 128),
                                           torch.nn.ReLU(), torch.nn.Linear(128, 10))

        def forward(self, data):
            return self.net(data)

    torch.manual_seed(0)
    torch_model = TorchMLP().eval()
    example_args = (torch.randn(1, 1, 28, 28, dtype=torch.float32),)
    with torch.no_grad():
        exported_program = torch.export.export(torch_model, example_args)
    mod = from_exported_program(exported_program, keep_params_as_input=True)
    mod, params = relax.frontend.detach_params(mod)

    target = tvm.target.Target("llvm")
    pipeline = relax.get_pipeline()
    with target:
        built_mod = pipeline(mod)
    executable = tvm.compile(built_mod, target=target)
    temp = utils.tempdir()
    lib_path = temp.relpath("model_deployed.so")
    executable.export_library(lib_path)
    params_path = temp.relpath("model_params.npz")
    np.savez(params_path, **{f"p_{i}": p.numpy() for i, p in enumerate(params["main"])})

    remote = rpc.LocalSession()
    remote.upload(lib_path)
    remote.upload(params_path)
    assert remote.listdir() == "model_deployed.so,model_params.npz"
    lib = remote.load_module("model_deployed.so")
    dev = remote.cpu()
    vm = relax.VirtualMachine(lib, dev)
    params_npz = np.load(params_path)
    remote_params = [tvm.runtime.tensor(params_npz[f"p_{i}"], dev)
                     for i in range(len(params_npz))]
    input_data = np.random.randn(1, 1, 28, 28).astype("float32")
    vm.set_input("main", tvm.runtime.tensor(input_data, dev), *remote_params)
    vm.invoke_stateful("main")
    output = vm.get_outputs("main")
    result = output[0] if isinstance(output, tvm.ir.Array) and len(output) > 0 else output
    with torch.no_grad():
        expected = torch_model(torch.from_numpy(input_data)).numpy()
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5, atol=1e-5)
    time_f = vm.time_evaluator("invoke_stateful", dev, number=2, repeat=2)
    assert time_f("main").mean > 0
    assert remote.download("model_params.npz") == open(params_path, "rb").read()
    remote.remove("model_params.npz")
    assert remote.listdir() == "model_deployed.so"


def test_network_rpc_is_a_difference():
    with pytest.raises(TVMDifferenceError, match="LocalSession"):
        rpc.connect("10.77.1.162", 9090)
    with pytest.raises(TVMDifferenceError, match="no RPC server"):
        rpc.connect_tracker("127.0.0.1", 9190)
    remote = rpc.LocalSession()
    with pytest.raises(TVMDifferenceError, match="host CPU only"):
        remote.cl()
    with pytest.raises(ValueError, match="outside the session"):
        remote.download("../../etc/passwd")
