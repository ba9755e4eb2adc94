"""Relax ONNX Pad as a gather per axis (``pad_gather``) and TopK / OneHot of sizes from a
symbolic batch, built with the BlockBuilder through the importer's ``Context`` (no ``onnx``
package): the printed program takes and compares, and each runs as numpy pads / sorts."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.frontend.onnx.context import Context
from minitvm.relax.frontend.onnx.importer import _check_first
from minitvm.relax.frontend.onnx.pad_gather import needs_gather, pad_by_gather


def _build(n, body):
    """main(x: (n, 5)) = body(ctx, x), the ``Context.require`` checks put first."""
    x = relax.Var("x", relax.TensorStructInfo([n, 5], "float32"))
    bb = relax.BlockBuilder()
    ctx = Context(bb, 18)
    ctx.node = SimpleNamespace(op_type="Pad", name="pd", input=["x"], output=["y"])
    ctx.size_vars = {n}
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(body(ctx, x))
        bb.emit_func_output(gv)
    mod = bb.get()
    if ctx.checks:
        _check_first(mod, ctx.checks)
    assert relax.analysis.well_formed(mod)
    return mod, relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def test_needs_gather_only_for_symbolic_pads_or_wrap_of_a_symbolic_axis():
    n = tir.Var("N", "int64")
    assert needs_gather([n, 5], [0, n, 0, 1], "constant")
    assert needs_gather([n, 5], [1, 0, 0, 0], "wrap")
    assert not needs_gather([n, 5], [0, 1, 0, 1], "wrap")
    assert not needs_gather([n, 5], [1, 0, 0, 0], "edge")


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pads_of_the_batch_gather_as_numpy_pads(mode):
    n = tir.Var("N", "int64")
    # (columns padded by N - 2 at the front, cropped by 1 at the back; rows wrapped by 1)
    pads = [1 if mode == "wrap" else 0, n - 2, 0, -1]
    mod, vm = _build(n, lambda ctx, x: pad_by_gather(ctx, x, pads, 9.0, mode))
    text = mod.script()
    assert "R.take" in text and "R.nn.pad" not in text
    for rows in (2, 3, 4):
        x = np.arange(rows * 5, dtype="float32").reshape(rows, 5)
        b = rows - 2
        if mode == "constant":
            want = np.pad(x, [(0, 0), (b, 0)], constant_values=9.0)[:, :-1]
        else:
            want = np.pad(x[:, :-1], [(pads[0], 0), (b, 0)],
                          mode={"edge": "edge", "reflect": "reflect", "wrap": "wrap"}[mode])
        np.testing.assert_array_equal(vm["main"](tvm.nd.array(x)).numpy(), want)


def test_top_k_of_the_batch_is_a_stable_sort_head():
    from minitvm.relax.frontend.onnx.ops_extra import _sorted_head

    n = tir.Var("N", "int64")

    def body(ctx, x):
        v, i = _sorted_head(ctx, x, n, 1, True)
        return relax.Tuple([v, i])

    _, vm = _build(n, body)
    x = np.array([[1, 3, 3, 0, 3], [2, 2, 1, 5, 5], [0, 0, 0, 0, 0]], "float32")
    v, i = vm["main"](tvm.nd.array(x))
    want = np.argsort(-x, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(i.numpy(), want)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, want, 1))
