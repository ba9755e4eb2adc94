"""LegalizeOps ties matmul's reduction lengths: where the struct info cannot prove the two
operands' lengths equal, the symbolic one is ``match_cast`` to the other's, so a call whose
lengths differ fails in the VM, where the kernel looped over the first operand's length and
read past the second."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.expr import MatchCast
from minitvm.script import relax as R


@tvm.script.ir_module
class TwoLengths:
    @R.function
    def main(x: R.Tensor(("n", "k"), "float32"), w: R.Tensor(("k2", "m"), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            R.output(y)
        return y


@tvm.script.ir_module
class SymbolicByConstant:
    @R.function
    def main(x: R.Tensor(("n", "k"), "float32"), w: R.Tensor((3, 2), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            R.output(y)
        return y


@tvm.script.ir_module
class OneLength:
    @R.function
    def main(x: R.Tensor(("n", "k"), "float32"), w: R.Tensor(("k", "m"), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            R.output(y)
        return y


def _casts(mod) -> list:
    out = relax.transform.LegalizeOps()(mod)
    return [b for blk in out["main"].body.blocks for b in blk.bindings
            if isinstance(b, MatchCast)]


def test_only_unproven_lengths_are_cast():
    casts = _casts(TwoLengths)
    assert len(casts) == 1 and str(casts[0].struct_info.shape) == "R.shape([k, m])"
    casts = _casts(SymbolicByConstant)  # (the symbolic operand takes the constant length)
    assert len(casts) == 1 and str(casts[0].struct_info.shape) == "R.shape([n, 3])"
    assert _casts(OneLength) == []


@pytest.mark.parametrize("mod", [TwoLengths, SymbolicByConstant], ids=["two", "constant"])
def test_unequal_lengths_fail_when_run(mod):
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 3)).astype("float32"), rng.standard_normal((3, 2)).astype(
        "float32")
    np.testing.assert_allclose(vm["main"](tvm.nd.array(a), tvm.nd.array(b)).numpy(), a @ b,
                               rtol=1e-5, atol=1e-6)
    short = a[:, :2].copy() if mod is SymbolicByConstant else a
    wrong = b if mod is SymbolicByConstant else b[:2].copy()
    with pytest.raises(ValueError, match="dimension . (is 2 but the annotation requires 3|must "
                                         "be 3, got 2)"):
        vm["main"](tvm.nd.array(short), tvm.nd.array(wrong))
