"""bench_model_switch's builds: each build under a switch compiles its kernels anew (the
in-process kernel cache keys kernels by function and options, which a module switch is not,
so a second build took the first one's kernels), ``--kernel-cache`` keeps them, a per-host
switch's entry is set by ``NAME[KEY]`` and restored after."""

from __future__ import annotations

import os
import platform
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import bench_model_switch as bms  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.backend import kernel_cache  # noqa: E402
from minitvm.schedule import resize  # noqa: E402
from minitvm.schedule.common import host_key  # noqa: E402


@pytest.fixture
def small_resize(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(tmp_path / "cache"))
    x = relay.var("x", shape=(1, 2, 5, 7))
    y = relay.nn.relu(relay.image.resize2d(x, (11, 13)))
    kernel_cache.clear_cache()
    yield tvm.IRModule.from_expr(relay.Function([x], y))
    kernel_cache.clear_cache()


def test_each_build_compiles_its_own_kernels(small_resize):
    bms.build(small_resize, {}, "schedule.resize.ROW_BYTES", 16384, False)
    bms.build(small_resize, {}, "schedule.resize.ROW_BYTES", 64, False)
    assert kernel_cache.STATS["hits"] == 0 and kernel_cache.STATS["misses"] >= 1
    bms.build(small_resize, {}, "schedule.resize.ROW_BYTES", 64, True)  # --kernel-cache
    assert kernel_cache.STATS["hits"] >= 1
    assert resize.ROW_BYTES == 16384  # restored


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the entry set turns on x86's non-temporal stores")
def test_per_host_entry(small_resize, monkeypatch):
    key = host_key(resize.NONTEMPORAL_MIN_BYTES)
    before = dict(resize.NONTEMPORAL_MIN_BYTES)
    seen = []
    real = resize._streamed

    def spy(out):
        seen.append(dict(resize.NONTEMPORAL_MIN_BYTES))
        return real(out)

    monkeypatch.setattr(resize, "_streamed", spy)
    gm, _ = bms.build(small_resize, {}, f"schedule.resize.NONTEMPORAL_MIN_BYTES[{key}]", 1,
                      False)
    assert seen and all(s == {**before, key: 1} for s in seen)
    assert resize.NONTEMPORAL_MIN_BYTES == before  # restored
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 7)).astype("float32")
    gm.set_input("x", x)
    gm.run()
    assert gm.get_output(0).numpy().shape == (1, 2, 11, 13)
    with pytest.raises(SystemExit, match=r"no per-host dict with key 'nohost'"):
        bms.build(small_resize, {}, "schedule.resize.NONTEMPORAL_MIN_BYTES[nohost]", 1, False)
    with pytest.raises(SystemExit, match=r"no per-host dict"):
        bms.build(small_resize, {}, "schedule.resize.ROW_BYTES[avx2]", 1, False)
