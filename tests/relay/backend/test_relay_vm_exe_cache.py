"""The whole-executable cache of ``relay.vm.compile`` (``vm.exe_cache``): a compile seen before
loads the executable it saved (nothing scheduled, the same outputs); everything that decides the
executable changes or disables the key: the module, the parameters, the PassContext, the symbolic
rule tags, the environment, pass instruments, op attributes and schedule rules from outside
minitvm; a compile
whose kernel fell back to numpy after a failed native lowering is not stored."""

import numpy as np
import pytest
from vm_disk_cache import forget_compiled as _forget
from vm_disk_cache import own_disk_cache

import minitvm as tvm
from minitvm import relay
from minitvm.instrument import PassInstrument
from minitvm.relay.backend.vm import exe_cache, symbolic
from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
from minitvm.relay.testing.temp_op_attr import TempOpAttr
from minitvm.runtime.vm import VirtualMachine


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty disk cache of its own with whole builds on, nothing kept in process."""
    yield own_disk_cache(tmp_path, monkeypatch)
    _forget()


def _model(scale: float = 2.0):
    """A dynamic batch through a dense layer, a cumulative sum and box NMS's valid counts."""
    x = relay.var("x", shape=(relay.Any(), 6), dtype="float32")
    w = relay.var("w", shape=(6, 6), dtype="float32")
    y = relay.nn.relu(relay.nn.dense(x, w)) * relay.const(scale, "float32")
    gv = relay.vision.get_valid_counts(relay.reshape(y, (1, -1, 6)), 0.5)
    return tvm.IRModule.from_expr(relay.Function([x, w], relay.Tuple(
        [relay.cumsum(y, axis=1), gv[0], gv[2]])))


def _params(seed: int = 0):
    return {"w": np.random.default_rng(seed).standard_normal((6, 6)).astype("float32")}


def _run(exe, b: int = 3):
    x = np.random.default_rng(b).standard_normal((b, 6)).astype("float32")
    return [o.numpy() for o in VirtualMachine(exe, tvm.cpu()).run(x)]


def test_second_compile_loads_the_executable(fresh_cache):
    mod, params = _model(), _params()
    cold = relay.vm.compile(mod, target="llvm", params=params)
    _forget()  # (a fresh process: only the disk remembers)
    hits, scheduled = exe_cache.STATS["hits"], symbolic.STATS["scheduled"]
    warm = relay.vm.compile(mod, target="llvm", params=params)
    assert exe_cache.STATS["hits"] == hits + 1
    assert symbolic.STATS["scheduled"] == scheduled  # nothing lowered
    assert dynamic_kernel_counts(warm.kernels) == dynamic_kernel_counts(cold.kernels)
    for b in (1, 4):
        for g, w in zip(_run(warm, b), _run(cold, b), strict=True):
            assert g.dtype == w.dtype and g.tobytes() == w.tobytes()


def _key(mod, params, **config):
    with tvm.transform.PassContext(opt_level=config.pop("opt_level", 3), config=config):
        got = exe_cache.exe_key(mod, params, "llvm")
    return None if got is None else got[1]


def test_the_key_changes_with_what_decides_the_executable(fresh_cache, monkeypatch):
    base = _key(_model(), _params())
    assert base is not None and base == _key(_model(), _params())
    assert _key(_model(3.0), _params()) != base  # the module (a constant's bytes)
    assert _key(_model(), _params(1)) != base  # the parameters' bytes
    assert _key(_model(), _params(), opt_level=2) != base  # the PassContext
    assert _key(_model(), _params(), **{"relay.backend.use_native": False}) != base
    monkeypatch.setattr(symbolic, "SYMBOLIC_RULE_TAGS", frozenset())
    assert _key(_model(), _params()) != base  # the rules symbolic kernels lower through
    monkeypatch.undo()
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(fresh_cache))
    monkeypatch.delenv("MINITVM_DISABLE_BUILD_CACHE", raising=False)
    monkeypatch.setenv("MINITVM_SOME_SWITCH", "1")
    assert _key(_model(), _params()) != base  # the environment


def test_no_key_where_the_compile_must_run(fresh_cache, monkeypatch):
    mod, params = _model(), _params()
    assert _key(mod, params, **{exe_cache.CONFIG_KEY: False}) is None
    with tvm.transform.PassContext(opt_level=3, instruments=[PassInstrument()]):
        assert exe_cache.exe_key(mod, params) is None  # instruments expect the passes to run
    with TempOpAttr("nn.dense", "FTVMLegalize", lambda attrs, inputs, types: None):
        assert _key(mod, params) is None  # an op attribute from outside minitvm
    from minitvm.schedule import RULES, Rule

    def outside(t, options=None):  # (a rule whose code is not minitvm's)
        return False

    outside.__module__ = "user_rules"
    monkeypatch.setitem(RULES, "user_tag", [Rule("user", "user", outside, outside)])
    assert _key(mod, params) is None  # a schedule rule from outside minitvm
    monkeypatch.delitem(RULES, "user_tag")
    assert _key(mod, params) is not None
    monkeypatch.setenv("MINITVM_DISABLE_BUILD_CACHE", "1")
    assert _key(mod, params) is None


@pytest.mark.numpy_fallback("matrix_set_diag without its compute")
def test_a_numpy_fallback_is_not_stored(fresh_cache, matrix_set_diag_without_compute):
    """(A static kernel, lowered at compile time: a dynamic one lowers, and warns, per shape
    at run time, loaded or not.)"""
    x = relay.var("x", shape=(2, 3, 3), dtype="float32")
    d = relay.var("d", shape=(2, 3), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x, d], relay.matrix_set_diag(x, d)))
    stores = exe_cache.STATS["stores"]
    exe = relay.vm.compile(mod, target="llvm")
    assert not exe_cache.storable(exe) and exe_cache.STATS["stores"] == stores
    assert exe_cache.storable(relay.vm.compile(_model(), target="llvm", params=_params()))
