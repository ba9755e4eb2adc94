"""A reshape to a shape given at run time (``R.reshape(x, R.shape([a, b]))`` with ``a``, ``b``
bound from another argument) is fused into a kernel that indexes ``x`` with the target shape:
its legalization checks the element counts at run time (``vm.builtin.check_reshape``), in the
interpreter and in the native entry, and provably equal sizes get no check."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.runtime.relax_vm.builtins import check_reshape
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class _ArgShape:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), s: R.Shape(["a", "b"])):
        a = T.int64()
        b = T.int64()
        with R.dataflow():
            y = R.reshape(x, R.shape([a, b]))
            z = R.add(y, y)  # fused with the reshape into one kernel
            R.output(z)
        return z


@I.ir_module
class _Provable:
    @R.function
    def main(x: R.Tensor(("n", 6), "float32")):
        n = T.int64()
        with R.dataflow():
            y = R.reshape(x, R.shape([n, 2, 3]))
            z = R.add(y, y)
            R.output(z)
        return z


def _check_calls(mod) -> int:
    return mod.script().count("vm.builtin.check_reshape")


def test_legalize_emits_the_check_only_when_sizes_are_not_provable():
    assert _check_calls(relax.transform.LegalizeOps()(_ArgShape)) == 1
    assert _check_calls(relax.transform.LegalizeOps()(_Provable)) == 0


@pytest.mark.parametrize("native", [True, False])
def test_larger_shape_is_a_clear_error(native):
    ex = relax.build(_ArgShape, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    vm.native_entry = native
    x = np.arange(6, dtype="float32").reshape(2, 3)
    for _ in range(2):  # the second call replays the native plan when there is one
        got = vm["main"](tvm.nd.array(x), tvm.runtime.ShapeTuple([3, 2])).numpy()
        np.testing.assert_array_equal(got, 2 * x.reshape(3, 2))
    if native:
        assert "main" in vm._native  # the check keeps the function on the native entry
    for bad in ([30, 20], [4, 2], [3, 2 + 1]):
        with pytest.raises(ValueError, match=r"reshape: cannot reshape a tensor of shape "
                                             r"\(2, 3\) \(6 elements\) into shape"):
            vm["main"](tvm.nd.array(x), tvm.runtime.ShapeTuple(bad))
    # a good shape after the errors still works (and one never seen before too)
    got = vm["main"](tvm.nd.array(x), tvm.runtime.ShapeTuple([6, 1])).numpy()
    np.testing.assert_array_equal(got, 2 * x.reshape(6, 1))


def test_provable_reshape_numerics():
    ex = relax.build(_Provable, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((n, 6)).astype("float32")
        got = vm["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_allclose(got, 2 * x.reshape(n, 2, 3), rtol=1e-6)


def test_builtin_names_both_shapes():
    x = np.zeros((4, 5), "float32")
    assert check_reshape(x, (2, 10)) is x
    with pytest.raises(ValueError, match=r"\(4, 5\) \(20 elements\) into shape \(3, 7\) "
                                         r"\(21 elements\)"):
        check_reshape(x, (3, 7))
