"""Every Relax pass on one 100,000-binding dataflow block at the default recursion limit."""

import sys

import numpy as np
import pytest
from relax_pass_util import T

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax import transform as rt
from minitvm.relax.transform.normalize import is_normalized

STEPS = 25_000  # four bindings per step: 100,000 bindings in one dataflow block


@pytest.fixture(scope="module")
def big():
    """``main(x)``: per step ``a = exp(p); b = exp(p); d = multiply(a, x); p = add(a, b)``
    (b duplicates a, d is dead), after a constant-foldable prologue."""
    x = relax.Var("x", T(4))
    bb = relax.BlockBuilder()
    one = relax.const(np.ones(4, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            c = bb.emit(R.add(one, one))
            p = bb.emit(R.add(x, c))
            for _ in range(STEPS):
                a = bb.emit(R.exp(p))
                b = bb.emit(R.exp(p))
                bb.emit(R.multiply(a, x))
                p = bb.emit(R.add(a, b))
            gv = bb.emit_output(p)
        bb.emit_func_output(gv)
    mod = bb.get()
    assert len(mod["main"].body.blocks[0].bindings) == 4 * STEPS + 3
    return mod


@pytest.fixture()
def default_recursion_limit():
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _bindings(mod):
    return [b for block in mod["main"].body.blocks for b in block.bindings]


def test_every_pass_on_a_100k_binding_block(big, default_recursion_limit):
    n = 4 * STEPS + 3
    results = {}
    passes = [
        rt.Normalize(), rt.CanonicalizeBindings(), rt.ConvertToDataflow(), rt.ToNonDataflow(),
        rt.DeadCodeElimination(), rt.EliminateCommonSubexpr(),
        rt.EliminateCommonSubexpr(call_only=True), rt.FoldConstant(), rt.LambdaLift(),
        rt.BindParams("main", {"x": np.ones(4, "float32")}), rt.BindSymbolicVars({}),
        rt.RemoveUnusedOutputs(), rt.AttachGlobalSymbol(),
    ]
    for p in passes:
        out = p(big)
        assert is_normalized(out["main"]) is None, p.info.name
        results[p.info.name] = out
    assert results["Normalize"]["main"] is big["main"]
    # the output binding ``gv = p`` is folded into p's binding
    assert len(_bindings(results["CanonicalizeBindings"])) == n - 1
    non_df = results["ToNonDataflow"]["main"]
    assert not any(isinstance(b.var, relax.DataflowVar) for b in _bindings(results[
        "ToNonDataflow"]))
    assert len(non_df.body.blocks) == 1
    # the dead d go, and the output alias ``gv = p`` is folded into p's binding
    assert len(_bindings(results["DeadCodeElimination"])) == n - STEPS - 1
    cse = _bindings(results["EliminateCommonSubexpr"])
    assert sum(isinstance(b.value, relax.Var) for b in cse) == STEPS + 1
    assert len(_bindings(results["FoldConstant"])) == n - STEPS - 1
    assert results["LambdaLift"]["main"] is big["main"]
    assert len(results["BindParams"]["main"].params) == 0
    assert results["AttachGlobalSymbol"]["main"].attrs["global_symbol"] == "main"


def test_pipeline_on_a_100k_binding_block(big, default_recursion_limit):
    seq = tvm.transform.Sequential([
        rt.ToNonDataflow(), rt.ConvertToDataflow(), rt.EliminateCommonSubexpr(),
        rt.CanonicalizeBindings(), rt.FoldConstant(), rt.DeadCodeElimination(),
    ])
    out = seq(big)
    bindings = _bindings(out)
    # per step: a = exp(p); p = add(a, a); plus the prologue p = add(x, 2)
    assert len(bindings) == 2 * STEPS + 1
    assert isinstance(bindings[0].value.args[1], relax.Constant)
    np.testing.assert_allclose(bindings[0].value.args[1].data.numpy(), np.full(4, 2.0))
    assert isinstance(out["main"].body.blocks[0], relax.DataflowBlock)
