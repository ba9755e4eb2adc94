"""Compile-time shortcuts of ``relay.build`` keep the results: functions are matched to kernels
by structural hash then structural equality (so a hash collision never shares a kernel between
different functions), a compute's input tensors are remembered with the body they were read
from, declared externals are found without splitting the IR into lines, and the TIR verifier
reads each expression once."""

import json

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, te, tir
from minitvm.backend import clear_cache
from minitvm.codegen.build import declared_externals
from minitvm.contrib import graph_executor
from minitvm.ir.node import node_fields
from minitvm.relay.backend import graph_executor_codegen
from minitvm.runtime import jit
from minitvm.te.tensor import ComputeOp
from minitvm.tir.analysis import verify_well_formed


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setenv("MINITVM_DISABLE_DISK_CACHE", "1")  # compile here, never load
    clear_cache()
    yield
    clear_cache()


def _two_dense_blocks(second_act):
    """x -> dense+relu -> dense+act: both dense layers 32x32 (weights are parameters)."""
    x = relay.var("x", shape=(4, 32))
    w1 = relay.var("w1", shape=(32, 32))
    w2 = relay.var("w2", shape=(32, 32))
    y = relay.nn.relu(relay.nn.dense(x, w1))
    y = second_act(relay.nn.dense(y, w2))
    return tvm.IRModule.from_expr(relay.Function([x, w1, w2], y))


def _build_and_run(mod, inputs):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, v in inputs.items():
        gm.set_input(k, v)
    gm.run()
    ops = [n["attrs"]["func_name"] for n in json.loads(lib.get_graph_json())["nodes"]
           if n["op"] == "tvm_op"]
    return gm.get_output(0).numpy(), ops


def _inputs(rng):
    return {"x": rng.standard_normal((4, 32)).astype("float32"),
            "w1": rng.standard_normal((32, 32)).astype("float32"),
            "w2": rng.standard_normal((32, 32)).astype("float32")}


def _reference(inputs, second):
    h = np.maximum(inputs["x"] @ inputs["w1"].T, 0)
    return second(h @ inputs["w2"].T)


def test_equal_functions_share_one_kernel():
    rng = np.random.default_rng(0)
    inputs = _inputs(rng)
    got, ops = _build_and_run(_two_dense_blocks(relay.nn.relu), inputs)
    # expected program: both calls run the one dense+relu kernel
    assert len(ops) == 2 and ops[0] == ops[1]
    np.testing.assert_allclose(got, _reference(inputs, lambda v: np.maximum(v, 0)),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("colliding", [False, True])
def test_different_functions_never_share_a_kernel(monkeypatch, colliding):
    if colliding:  # every function keys alike: equality alone must keep them apart
        monkeypatch.setattr(graph_executor_codegen, "structural_hash", lambda f: 7)
        monkeypatch.setattr(graph_executor_codegen, "_function_key", lambda f: 7)
    rng = np.random.default_rng(1)
    inputs = _inputs(rng)
    got, ops = _build_and_run(_two_dense_blocks(relay.sigmoid), inputs)
    assert len(ops) == 2 and ops[0] != ops[1]
    np.testing.assert_allclose(got, _reference(inputs, lambda v: 1 / (1 + np.exp(-v))),
                               rtol=1e-4, atol=1e-4)
    # and a collision does not merge equal functions into different kernels either
    got2, ops2 = _build_and_run(_two_dense_blocks(relay.nn.relu), inputs)
    assert ops2[0] == ops2[1]
    np.testing.assert_allclose(got2, _reference(inputs, lambda v: np.maximum(v, 0)),
                               rtol=1e-4, atol=1e-4)


def test_input_tensors_cached_with_its_body():
    A = te.placeholder((8,), "float32", "A")
    B = te.placeholder((8,), "float32", "B")
    C = te.compute((8,), lambda i: A[i] + 1.0, name="C")
    op = C.op
    assert isinstance(op, ComputeOp)
    assert op.input_tensors == [A]
    assert op.input_tensors == [A]  # from the cache, a fresh list each time
    op.input_tensors.append(B)
    assert op.input_tensors == [A]
    # the cache is not a structural field: the fields are the slots they always were
    assert node_fields(ComputeOp) == ("attrs", "axis", "reduce_axis", "body", "_outputs")
    # a body replaced afterwards is read again
    op.body = B[op.axis[0].var] * 2.0
    assert op.input_tensors == [B]


def test_declared_externals_match_jit_line_scan():
    texts = [
        "",
        'declare void @"GOMP_parallel"(ptr %".1", ptr %".2", i32 %".3", i32 %".4")',
        'define void @"f"()\n{\nentry:\n  ret void\n}\n\ndeclare float @"tanhf"(float %".1")\n'
        'declare <8 x float> @"llvm.exp.v8f32"(<8 x float> %".1")\ndeclare i32 @abs(i32 %".1")'
        '\n  declare x(\n',
    ]
    for text in texts:
        assert declared_externals(text) == jit.external_symbols(text)
    assert declared_externals(texts[2]) == ["tanhf", "abs"]


def test_verifier_reads_let_bound_and_undefined_vars():
    n = tir.Var("n", "int32")
    A = tir.decl_buffer((16,), "float32", "A")
    i = tir.Var("i", "int32")
    v = tir.Var("v", "float32")
    let = tir.Let(v, A[i], v * 2.0)
    ok = tir.PrimFunc([A], tir.For(i, 0, 16, 0, tir.BufferStore(A, let, [i])))
    assert verify_well_formed(ok)
    undefined = tir.Var("u", "float32")
    bad = tir.PrimFunc([A], tir.For(i, 0, 16, 0, tir.BufferStore(
        A, tir.Let(v, A[i], v * undefined), [i])))
    with pytest.raises(ValueError, match="'u' is used but not defined"):
        verify_well_formed(bad)
    assert not verify_well_formed(tir.PrimFunc([A], tir.For(i, 0, n, 0, tir.BufferStore(
        A, A[i], [i]))), assert_mode=False)


def test_labelled_functions_are_keyed_by_their_label():
    from minitvm.relay.expr import Function

    x = relay.var("x", shape=(2,))
    f = Function([x], relay.nn.relu(x))
    assert graph_executor_codegen._function_key(f) == tvm.ir.structural_hash(f)
    g = f.with_attr("hash", "00000000000000ab")
    assert graph_executor_codegen._function_key(g) == ("label", "00000000000000ab")


def test_build_runs_numpy_blas_on_one_thread_and_restores_it(monkeypatch):
    # the build's weight transforms are tiny matrix products that OpenBLAS's threads only slow
    from minitvm.runtime import blas

    if not blas.available() or blas.get_num_threads() is None:
        pytest.skip("no OpenBLAS with a thread setting in this numpy")
    seen = []
    codegen = graph_executor_codegen.GraphCodegen.codegen

    def recording(self, main):
        seen.append(blas.get_num_threads())
        return codegen(self, main)

    monkeypatch.setattr(graph_executor_codegen.GraphCodegen, "codegen", recording)
    before = blas.get_num_threads()
    blas.set_num_threads(2)
    try:
        rng = np.random.default_rng(2)
        inputs = _inputs(rng)
        got, _ = _build_and_run(_two_dense_blocks(relay.nn.relu), inputs)
        assert seen == [1]
        assert blas.get_num_threads() == 2  # the caller's setting is back
    finally:
        blas.set_num_threads(before)
    np.testing.assert_allclose(got, _reference(inputs, lambda v: np.maximum(v, 0)),
                               rtol=1e-4, atol=1e-4)
