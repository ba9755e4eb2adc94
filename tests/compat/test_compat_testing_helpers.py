"""tvm.testing's pytest helpers behave as in TVM: parameters, joint parameters, cached
fixtures, known-failing targets, requires_* marks and CompareBeforeAfter."""

import numpy as np
import pytest

import minitvm as tvm
import minitvm.testing
from minitvm import relay, tir

dtype = tvm.testing.parameter("float32", "int8")
shape, fill = tvm.testing.parameters(((2,), 1), ((3, 4), 7))
_SEEN = []


def test_parameter_takes_each_value(dtype):
    assert dtype in ("float32", "int8")
    _SEEN.append(dtype)


def test_parameters_are_joint(shape, fill):
    assert (shape, fill) in (((2,), 1), ((3, 4), 7))
    assert np.full(shape, fill).sum() == fill * int(np.prod(shape))


_CALLS = []


@tvm.testing.fixture(cache_return_value=True)
def expensive(dtype):
    _CALLS.append(dtype)
    return [dtype]


@pytest.mark.parametrize("rep", [0, 1])
def test_cached_fixture_runs_once_per_value(expensive, dtype, rep):
    expensive.append("mutated")  # a deep copy: later tests still see one element
    assert _CALLS.count(dtype) == 1


@tvm.testing.parametrize_targets("llvm")
@tvm.testing.known_failing_targets("llvm")
def test_known_failing_target_is_xfail(target):
    raise AssertionError("fails on llvm, as declared")


@tvm.testing.requires_vulkan
def test_requires_missing_device_skips():
    raise AssertionError("must be skipped")


@tvm.testing.requires_llvm
def test_requires_llvm_runs():
    assert "llvm" in [t for t, _ in tvm.testing.enabled_targets()]


@tvm.testing.requires_package("surely_not_a_real_package_name")
def test_requires_package_skips():
    raise AssertionError("must be skipped")


def test_parameter_rejects_bad_calls():
    with pytest.raises(TypeError):
        tvm.testing.parameter()
    with pytest.raises(ValueError, match="same length"):
        tvm.testing.parameters((1, 2), (3,))


class _Simplify:
    """SimplifyExpr after type inference (collapses consecutive reshapes)."""

    def __call__(self, mod):
        return relay.transform.SimplifyExpr()(relay.transform.InferType()(mod))


class TestCompareBeforeAfterRelay(tvm.testing.CompareBeforeAfter):
    transform = _Simplify()

    def before(self):
        x = relay.var("x", shape=(4,))
        y = relay.reshape(relay.reshape(x, (2, 2)), (4, 1))
        return tvm.IRModule.from_expr(relay.Function([x], y))

    def expected(self):
        x = relay.var("x", shape=(4,))
        y = relay.reshape(x, (4, 1))
        return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))


class TestCompareBeforeAfterRaises(tvm.testing.CompareBeforeAfter):
    expected = ValueError

    @staticmethod
    def transform(mod):
        raise ValueError("the pass refuses this program")

    def before(self):
        n = tir.Var("n", "int32")
        return tir.PrimFunc([n], tir.Evaluate(n))


def test_runtime_convert_and_aliases():
    import importlib

    assert importlib.import_module("minitvm.ir.instrument") is tvm.instrument
    assert importlib.import_module("minitvm.ir.transform") is tvm.transform
    conv = tvm.runtime.convert([1, 2.5, True, 2**40, "s"])
    assert [c.dtype for c in conv[:4]] == ["int32", "float32", "bool", "int64"]
    assert conv[4] == "s"
    with pytest.raises(TypeError, match="set"):
        tvm.runtime.convert({1, 2})


def test_tempdir_and_temp_op_attr():
    from minitvm.contrib import utils
    from minitvm.relay.testing.temp_op_attr import TempOpAttr

    tmp = utils.tempdir()
    path = tmp.relpath("x.txt")
    with open(path, "w") as f:
        f.write("x")
    assert tmp.listdir() == ["x.txt"]
    root = tmp.path
    tmp.remove()
    import os

    assert not os.path.exists(root)
    op = tvm.ir.Op.get("nn.relu")
    before = op.get_attr("FTVMLegalize")
    marker = object()
    with TempOpAttr("nn.relu", "FTVMLegalize", marker):
        assert op.get_attr("FTVMLegalize") is marker
    assert op.get_attr("FTVMLegalize") is before
