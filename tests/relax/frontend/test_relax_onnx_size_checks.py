"""``Context.require`` (Relax ONNX importer) without the ``onnx`` package: a condition decided
at import folds away or fails naming the node; one over an input's symbolic dim becomes an
``R.assert_op`` that the importer puts ahead of ``main``'s dataflow block, and that raises at
run time with the values."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.frontend.onnx.context import Context, ONNXImportError
from minitvm.relax.frontend.onnx.importer import _check_first


class _Node:
    op_type, name = "Split", "sp"


def _ctx(n):
    x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
    bb = relax.BlockBuilder()
    ctx = Context(bb, 18)
    ctx.node = _Node()
    ctx.size_vars = {n}
    return ctx, bb, x


def test_decided_conditions_fold_at_import():
    n = tir.Var("N", "int64")
    ctx, bb, x = _ctx(n)
    with bb.function("main", [x]):  # (its parameters' dims are known to be >= 0)
        ctx.require(True, "never")
        ctx.require(n >= 0, "a dim is never negative")  # (proved: no check)
        ctx.require(tir.EQ(n - n, 0), "folds")
        assert ctx.checks == []
        with pytest.raises(ONNXImportError, match=r"Split node 'sp': sizes add up to 3, not 4"):
            ctx.require(3 == 4, "sizes add up to {}, not {}", [3, 4])
        bb.emit_func_output(x)


def test_a_check_over_a_symbolic_dim_runs_before_the_dataflow_block():
    n = tir.Var("N", "int64")
    ctx, bb, x = _ctx(n)
    with bb.function("main", [x]):
        with bb.dataflow():
            ctx.require(tir.EQ(n, 3), "the axis has {} rows, not 3", [n])
            y = bb.emit(relax.op.add(x, x))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    mod = bb.get()
    assert len(ctx.checks) == 1
    _check_first(mod, ctx.checks)
    assert not mod["main"].is_pure
    assert relax.analysis.well_formed(mod)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    ok = np.ones((3, 3), "float32")
    np.testing.assert_array_equal(vm["main"](tvm.nd.array(ok)).numpy(), ok * 2)
    with pytest.raises(AssertionError, match=r"Split node 'sp': the axis has 4 rows, not 3"):
        vm["main"](tvm.nd.array(np.ones((4, 3), "float32")))


def test_a_dim_not_of_the_inputs_is_refused():
    n, m = tir.Var("N", "int64"), tir.Var("M", "int64")
    ctx, _, _ = _ctx(n)
    with pytest.raises(ONNXImportError, match="only over the dims of the main graph's inputs"):
        ctx.require(tir.EQ(m, 3), "M is {}", [m])
