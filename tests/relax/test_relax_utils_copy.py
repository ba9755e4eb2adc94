"""relax.utils.copy_with_new_vars, and relax.build copying a function bound to two names (the
passes key their maps on variables: the aliased copy's bindings got mixed up and the build
failed with "variable 'lv1' is used before it is defined")."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.ir import structural_equal
from minitvm.script import from_source

SRC = """
@I.ir_module
class Module:
    @R.function
    def forward(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((4, 3), "float32")):
        n = T.int64()
        with R.dataflow():
            lv = R.matmul(x, w)
            lv1 = R.nn.relu(lv)
            gv = R.reshape(lv1, R.shape([n * 3]))
            R.output(gv)
        return gv
"""


def _vars(func):
    return {id(v) for v in relax.analysis.all_vars(func)}


def test_copy_is_alpha_equal_and_shares_no_variable():
    mod = from_source(SRC)
    f = mod["forward"]
    g = relax.utils.copy_with_new_vars(f)
    assert structural_equal(f, g)
    assert not _vars(f) & _vars(g)
    from minitvm.relax.transform.utils import defined_symbolic_vars

    assert not set(map(id, defined_symbolic_vars(f))) & set(map(id, defined_symbolic_vars(g)))
    mod["main"] = g
    assert relax.analysis.well_formed(mod)
    with pytest.raises(TypeError, match="relax.Function"):
        relax.utils.copy_with_new_vars(mod["forward"].body)


def test_build_copies_an_aliased_function():
    mod = from_source(SRC)
    mod["main"] = mod["forward"]
    before = mod["main"]
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    assert mod["main"] is before  # the user's module is left as it was
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype("float32")
    for n in (1, 5):
        x = rng.standard_normal((n, 4)).astype("float32")
        want = np.maximum(x @ w, 0).reshape(-1)
        for name in ("main", "forward"):
            got = vm[name](tvm.nd.array(x), tvm.nd.array(w)).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
