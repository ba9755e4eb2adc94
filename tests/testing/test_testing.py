"""tvm.testing helpers."""

import numpy as np
import pytest

import minitvm as tvm


def test_assert_allclose_accepts_ndarrays():
    a = tvm.nd.array(np.array([1.0, 2.0], "float32"))
    tvm.testing.assert_allclose(a, np.array([1.0, 2.0]))
    tvm.testing.assert_allclose(a, [1.0, 2.0 + 1e-6], rtol=1e-5)
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        tvm.testing.assert_allclose(a, [1.0, 2.1])
    with pytest.raises(AssertionError, match=r"shape mismatch: actual \(2,\) vs desired \(1, 2\)"):
        tvm.testing.assert_allclose(a, [[1.0, 2.0]])


def test_enabled_targets():
    targets = tvm.testing.enabled_targets()
    assert targets == [("llvm", tvm.cpu(0))]
    assert tvm.testing.device_enabled("llvm -mcpu=skylake")
    assert not tvm.testing.device_enabled("cuda")


@tvm.testing.parametrize_targets
def test_parametrize_targets_bare(target, dev):
    assert target == "llvm" and dev == tvm.cpu(0)


@tvm.testing.parametrize_targets("llvm", "cuda")
def test_parametrize_targets_filters_disabled(target):
    assert target == "llvm"


@tvm.testing.requires_gpu
def test_requires_gpu_is_skipped():
    raise AssertionError("must not run without a GPU")
