"""TVM's Relax "Relax Creation" deep-dive tutorial with ``import minitvm as tvm``: the MLP
written four ways — TVMScript (with the one-line ``R.matmul(data, R.permute_dims(w0)) + b0``
sugar the tutorial notes is printed one operation per binding: ``lv``, ``lv1``, then the
user's ``lv0``), TVMScript calling a ``@T.prim_func`` through ``R.call_tir``, an
``nn.Module`` exported with ``export_tvm`` (plus ``nn.extern``, ``nn.tensor_expr_op`` and
``nn.tensor_ir_op``), and the ``BlockBuilder`` (``emit``, ``emit_te``, ``add_func``,
``call_dps_packed``, ``call_tir``). The four MLPs bind the same operators in the same order;
the one calling ``env.linear`` is built and run with that function registered, against numpy
(one build keeps the test short: the others differ only in how they are written)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, topi
from minitvm.relax.frontend import nn
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class RelaxModule:
    @R.function
    def forward(data: R.Tensor(("n", 784), dtype="float32"),
                w0: R.Tensor((128, 784), dtype="float32"), b0: R.Tensor((128,), dtype="float32"),
                w1: R.Tensor((10, 128), dtype="float32"), b1: R.Tensor((10,), dtype="float32")
                ) -> R.Tensor(("n", 10), dtype="float32"):
        with R.dataflow():
            lv0 = R.matmul(data, R.permute_dims(w0)) + b0
            lv1 = R.nn.relu(lv0)
            lv2 = R.matmul(lv1, R.permute_dims(w1)) + b1
            R.output(lv2)
        return lv2


@I.ir_module
class RelaxModuleWithTIR:
    @T.prim_func
    def relu(x: T.handle, y: T.handle):
        n = T.int64()
        m = T.int64()
        X = T.match_buffer(x, (n, m), "float32")
        Y = T.match_buffer(y, (n, m), "float32")
        for i, j in T.grid(n, m):
            with T.block("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    @R.function
    def forward(data: R.Tensor(("n", 784), dtype="float32"),
                w0: R.Tensor((128, 784), dtype="float32"), b0: R.Tensor((128,), dtype="float32"),
                w1: R.Tensor((10, 128), dtype="float32"), b1: R.Tensor((10,), dtype="float32")
                ) -> R.Tensor(("n", 10), dtype="float32"):
        n = T.int64()
        cls = RelaxModuleWithTIR
        with R.dataflow():
            lv0 = R.matmul(data, R.permute_dims(w0)) + b0
            lv1 = R.call_tir(cls.relu, lv0, R.Tensor((n, 128), dtype="float32"))
            lv2 = R.matmul(lv1, R.permute_dims(w1)) + b1
            R.output(lv2)
        return lv2


@T.prim_func
def tir_linear(x: T.handle, w: T.handle, b: T.handle, z: T.handle):
    M = T.int64()
    N = T.int64()
    K = T.int64()
    X = T.match_buffer(x, (M, K), "float32")
    W = T.match_buffer(w, (N, K), "float32")
    B = T.match_buffer(b, (N,), "float32")
    Z = T.match_buffer(z, (M, N), "float32")
    for i, j, k in T.grid(M, N, K):
        with T.block("linear"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Z[vi, vj] = 0
            Z[vi, vj] = Z[vi, vj] + X[vi, vk] * W[vj, vk]
    for i, j in T.grid(M, N):
        with T.block("add"):
            vi, vj = T.axis.remap("SS", [i, j])
            Z[vi, vj] = Z[vi, vj] + B[vj]


@pytest.fixture(scope="module")
def weights():
    rng = np.random.default_rng(0)
    shapes = ((3, 784), (128, 784), (128,), (10, 128), (10,))
    return [rng.standard_normal(s).astype("float32") * 0.1 for s in shapes]


def mlp_reference(data, w0, b0, w1, b1):
    return np.maximum(data @ w0.T + b0, 0) @ w1.T + b1


def ops(mod) -> list[str]:
    """The operators (or called functions) of ``forward``'s bindings, in order."""
    out = []
    for b in mod["forward"].body.blocks[0].bindings:
        v = b.value
        if isinstance(v, relax.Call):
            callee = v.args[0] if v.op.name in ("relax.call_tir", "relax.call_dps_packed") else v.op
            out.append(getattr(callee, "name_hint", None) or getattr(callee, "global_symbol", None)
                       or callee.name)
    return out


MLP_OPS = ["relax.permute_dims", "relax.matmul", "relax.add", "relax.nn.relu",
           "relax.permute_dims", "relax.matmul", "relax.add"]


def run(mod, *args):
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return vm["forward"](*[tvm.nd.array(a) for a in args]).numpy()


def test_tvmscript_sugar_prints_one_operation_per_binding():
    text = RelaxModule.script()
    # the tutorial's note: nested operands bound first, the user's names kept (renamed on clash)
    assert 'lv: R.Tensor((784, 128), dtype="float32") = R.permute_dims(w0, axes=None)' in text
    assert 'lv1: R.Tensor((n, 128), dtype="float32") = R.matmul(data, lv' in text
    assert 'lv0: R.Tensor((n, 128), dtype="float32") = R.add(lv1, b0)' in text
    assert "R.output(lv2_1)" in text and "return lv2_1" in text  # the operand temp lv2 stays inside
    block = RelaxModule["forward"].body.blocks[0]
    assert [type(b.var).__name__ for b in block.bindings].count("Var") == 1
    assert tvm.ir.structural_equal(tvm.script.from_source(text), RelaxModule)
    assert ops(RelaxModule) == MLP_OPS


def test_tvmscript_calling_tir():
    text = RelaxModuleWithTIR.script()
    assert "R.call_tir(cls.relu, (lv0,), out_sinfo=R.Tensor((n, 128)" in text
    assert ops(RelaxModuleWithTIR) == [o if o != "relax.nn.relu" else "relu" for o in MLP_OPS]


class NNModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


class NNModuleWithTIR(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        n = x.shape[0]
        x = nn.extern("env.linear", [x, self.fc1.weight, self.fc1.bias],
                      out=nn.Tensor.placeholder((n, 128), "float32"))
        x = nn.tensor_expr_op(topi.nn.relu, "relu", [x])
        return nn.tensor_ir_op(tir_linear, "tir_linear", [x, self.fc2.weight, self.fc2.bias],
                               out=nn.Tensor.placeholder((n, 10), "float32"))


def test_nn_module_export():
    spec = {"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}}
    mod, params = NNModule().export_tvm(spec)
    assert [name for name, _ in params] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert ops(mod) == MLP_OPS


def test_nn_module_with_extern_te_and_tir(weights):
    spec = {"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}}
    mod, _ = NNModuleWithTIR().export_tvm(spec)
    text = mod.script()
    assert 'R.call_dps_packed("env.linear", (x, fc1_weight, fc1_bias), ' \
        'out_sinfo=R.Tensor((n, 128), dtype="float32"))' in text
    assert "R.call_tir(cls.relu, (env_linear,)" in text
    assert "R.call_tir(cls.tir_linear, (relu, fc2_weight, fc2_bias)" in text
    assert {gv.name_hint for gv in mod.functions} == {"forward", "relu", "tir_linear"}
    assert ops(mod) == ["env.linear", "relu", "tir_linear"]

    @tvm.register_func("env.linear", override=True)
    def env_linear(x, w, b, out):  # destination-passing: writes its result into ``out``
        out.copyfrom(x.numpy() @ w.numpy().T + b.numpy())

    np.testing.assert_allclose(run(mod, *weights), mlp_reference(*weights), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="placeholder"):
        nn.extern("env.linear", [], out=3)
    with pytest.raises(RuntimeError, match="export_tvm"):
        nn.tensor_ir_op(tir_linear, "tir_linear", [], out=[])


def _block_builder_params():
    n = T.int64()
    x = relax.Var("x", R.Tensor((n, 784), "float32"))
    fc1_weight = relax.Var("fc1_weight", R.Tensor((128, 784), "float32"))
    fc1_bias = relax.Var("fc1_bias", R.Tensor((128,), "float32"))
    fc2_weight = relax.Var("fc2_weight", R.Tensor((10, 128), "float32"))
    fc2_bias = relax.Var("fc2_bias", R.Tensor((10,), "float32"))
    return n, [x, fc1_weight, fc1_bias, fc2_weight, fc2_bias]


def test_block_builder():
    n, params = _block_builder_params()
    x, fc1_weight, fc1_bias, fc2_weight, fc2_bias = params
    bb = relax.BlockBuilder()
    with bb.function("forward", params):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.matmul(x, relax.op.permute_dims(fc1_weight)) + fc1_bias)
            lv1 = bb.emit(relax.op.nn.relu(lv0))
            gv = bb.emit(relax.op.matmul(lv1, relax.op.permute_dims(fc2_weight)) + fc2_bias)
            gv = bb.emit_output(gv)
        bb.emit_func_output(gv)
    mod = bb.get()
    assert len(mod["forward"].body.blocks[0].bindings) == 8  # each nested operand bound
    assert ops(mod) == MLP_OPS

    bb = relax.BlockBuilder()
    with bb.function("forward", params):
        with bb.dataflow():
            lv0 = bb.emit(relax.call_dps_packed(
                "env.linear", [x, fc1_weight, fc1_bias],
                out_sinfo=relax.TensorStructInfo((n, 128), "float32")))
            lv1 = bb.emit_te(topi.nn.relu, lv0)
            tir_gv = bb.add_func(tir_linear, "tir_linear")
            gv = bb.emit(relax.call_tir(tir_gv, [lv1, fc2_weight, fc2_bias],
                                        out_sinfo=relax.TensorStructInfo((n, 10), "float32")))
            gv = bb.emit_output(gv)
        bb.emit_func_output(gv)
    assert ops(bb.get()) == ["env.linear", "relu", "tir_linear"]
