"""The target and device calls every TVM tutorial makes, with ``import minitvm as tvm``:
``tvm.target.Target("llvm -mcpu=...")`` and what it prints and exposes, ``tvm.device("cpu", 0)``
/ ``tvm.cpu()``, ``tvm.nd.array(..., dev).numpy()``."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm


@pytest.mark.parametrize("text, printed, keys", [
    ("llvm", "llvm -keys=cpu", ["cpu"]),
    ("llvm -mcpu=znver4", "llvm -keys=cpu -mcpu=znver4", ["cpu"]),
    # attributes print in name order after the keys, as TVM prints them
    ("llvm -num-cores=4 -mcpu=skylake-avx512 -model=xeon",
     "llvm -keys=cpu -mcpu=skylake-avx512 -model=xeon -num-cores=4", ["cpu"]),
    # the device name becomes the first key
    ("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu",
     "llvm -keys=arm_cpu,cpu -device=arm_cpu -mtriple=aarch64-linux-gnu", ["arm_cpu", "cpu"]),
    ("cuda", "cuda -keys=cuda,gpu", ["cuda", "gpu"]),
    # a printed target parses back to itself, keys given once
    ("llvm -keys=cpu -mcpu=znver4", "llvm -keys=cpu -mcpu=znver4", ["cpu"]),
])
def test_target_prints_like_tvm(text, printed, keys):
    t = tvm.target.Target(text)
    assert str(t) == printed and t.keys == keys
    assert "keys" not in t.attrs
    assert tvm.target.Target(str(t)) == t and hash(tvm.target.Target(str(t))) == hash(t)
    assert tvm.target.Target(t.export()) == t


def test_target_attributes():
    t = tvm.target.Target("llvm -mcpu=znver4 -mattr=+avx512f,+avx512bw -num-cores=2",
                          host="llvm")
    assert t.kind.name == "llvm" and t.mcpu == "znver4" and t.num_cores == 2
    assert t.mattr == ["+avx512f", "+avx512bw"] and t.host.kind.name == "llvm"
    assert t.attrs["mcpu"] == "znver4" and t.export()["keys"] == ["cpu"]
    with t:
        assert tvm.target.Target.current() is t
    assert tvm.target.Target.current() is None
    with pytest.raises(ValueError, match="not defined"):
        tvm.target.Target("nosuchkind")


def test_devices_and_arrays():
    dev = tvm.device("cpu", 0)
    assert dev == tvm.cpu() == tvm.cpu(0) and str(dev) == "cpu(0)"
    assert dev.device_type == 1 and dev.device_id == 0 and dev.exist
    assert tvm.device(str(tvm.target.Target("llvm")), 0) == dev
    a = np.arange(6, dtype="float32").reshape(2, 3)
    nd = tvm.nd.array(a, dev)
    assert nd.shape == (2, 3) and nd.dtype == "float32" and nd.device == dev
    np.testing.assert_array_equal(nd.numpy(), a)
    np.testing.assert_array_equal(nd.asnumpy(), a)
    empty = tvm.nd.empty((2, 3), "int8", dev)
    assert empty.dtype == "int8" and empty.shape == (2, 3)
    np.testing.assert_array_equal(empty.copyfrom(a.astype("int8")).numpy(), a.astype("int8"))
