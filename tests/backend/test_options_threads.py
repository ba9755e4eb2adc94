"""Lowering options come from the PassContext of each build, never from module state.

(a) ``backend.lowering_options`` reflects every ``relay.backend.*`` config key; BLAS is on only
when the process has one; ``LoweringOptions`` is an immutable, hashable value.
(b) Two ``relay.build`` calls running at the same time in two threads, each under its own
PassContext, each take the path their own config asks for (BLAS vs generated code, packed dense
vs not), produce correct outputs, and leave the module globals of ``schedule`` / ``backend``
as they were.
"""

import dataclasses
import sys
import threading

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.backend.options import lowering_options
from minitvm.contrib import graph_executor
from minitvm.relay import testing
from minitvm.runtime import blas
from minitvm.schedule import LoweringOptions
from minitvm.schedule.knobs import builtin_table

KEYS = {
    "relay.backend.use_native": "native",
    "relay.backend.use_blas": "blas",
    "relay.backend.use_generated_conv": "generated_conv",
    "relay.backend.use_generated_dense": "generated_dense",
    "relay.backend.use_generated_batch_matmul": "generated_batch_matmul",
}
BATCH = 16
ROUNDS = 4


# ------------------------------------------------------------------------------ (a) options
def _expected(overrides):
    want = {field: True for field in KEYS.values()}
    want.update(overrides)
    want["blas"] = want["blas"] and blas.available()
    # (outside any use_knobs block a build reads the built-in table of the host's ISA)
    return LoweringOptions(**want, knobs=builtin_table())


def test_defaults_outside_and_inside_a_context():
    assert lowering_options() == _expected({})
    with tvm.transform.PassContext(opt_level=3):
        assert lowering_options() == _expected({})


@pytest.mark.parametrize("key", sorted(KEYS))
@pytest.mark.parametrize("value", [False, True])
def test_each_config_key_is_reflected(key, value):
    with tvm.transform.PassContext(opt_level=3, config={key: value}):
        got = lowering_options()
    assert got == _expected({KEYS[key]: value})
    # an explicit context is read the same way, whatever context is current
    ctx = tvm.transform.PassContext(opt_level=3, config={key: value})
    assert lowering_options(ctx) == got
    with tvm.transform.PassContext(opt_level=3, config={key: not value}):
        assert lowering_options(ctx) == got


def test_all_keys_off_at_once():
    cfg = dict.fromkeys(KEYS, False)
    with tvm.transform.PassContext(opt_level=3, config=cfg):
        assert lowering_options() == LoweringOptions(
            native=False, blas=False, generated_conv=False, generated_dense=False,
            generated_batch_matmul=False, knobs=builtin_table())


def test_blas_is_only_on_when_a_blas_is_available(monkeypatch):
    cfg = {"relay.backend.use_blas": True}
    with tvm.transform.PassContext(opt_level=3, config=cfg):
        assert lowering_options().blas is blas.available()
    monkeypatch.setattr(blas, "available", lambda: False)
    with tvm.transform.PassContext(opt_level=3, config=cfg):
        assert lowering_options().blas is False
    assert lowering_options().blas is False


def test_lowering_options_is_frozen_and_hashable():
    a = LoweringOptions(blas=True, generated_dense=False)
    b = LoweringOptions(blas=True, generated_dense=False)
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert len({a, b, LoweringOptions()}) == 2
    for field in KEYS.values():
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(a, field, not getattr(a, field))
        changed = dataclasses.replace(a, **{field: not getattr(a, field)})
        assert changed != a
        assert getattr(a, field) == getattr(b, field)  # the original is untouched


# ------------------------------------------------------------------------------ (b) threads
_SIMPLE = (bool, int, float, str, bytes, type(None))


def _simple(v) -> bool:
    if isinstance(v, _SIMPLE):
        return True
    if isinstance(v, (tuple, frozenset)):
        return all(_simple(x) for x in v)
    return False


def _globals_snapshot() -> dict:
    """Simple-typed globals (and the rule table) of every schedule / backend module."""
    snap = {}
    for name, mod in sorted(sys.modules.items()):
        if mod is None or not name.startswith(("minitvm.schedule", "minitvm.backend")):
            continue
        g = vars(mod)
        snap[(name, "<names>")] = frozenset(g)
        for k, v in g.items():
            if _simple(v):
                snap[(name, k)] = v
    from minitvm.schedule import lower

    snap[("minitvm.schedule.lower", "RULES")] = {tag: tuple(rules)
                                                 for tag, rules in lower.RULES.items()}
    return snap


@pytest.fixture(scope="module")
def mlp():
    mod, params = testing.mlp.get_workload(batch_size=BATCH)
    x = np.random.default_rng(0).standard_normal((BATCH, 1, 28, 28)).astype("float32")
    ref = relay.create_executor("debug", mod=mod).evaluate()(x, **params).numpy()
    return mod, params, x, ref


def _uses_blas(lib) -> bool:
    return any(blas.SHIM_SYMBOL in k.ir for k in lib.get_lib().kernels.values())


def _packed_dense(lib) -> bool:
    """The generated dense takes its weights prepacked ([N/nr, K, nr]): 3-d params."""
    return any(v.numpy().ndim == 3 for v in lib.get_params().values())


def _run(lib, x):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(data=x)
    return m.get_output(0).numpy()


def _build_pair(mod, params, configs):
    """Build ``mod`` under each config at the same time, one thread per config."""
    barrier = threading.Barrier(len(configs), timeout=60)
    results, errors = [None] * len(configs), []

    def work(i, cfg):
        try:
            with tvm.transform.PassContext(opt_level=3, config=cfg):
                barrier.wait()  # both threads are inside their own context before building
                results[i] = relay.build(mod, target="llvm", params=params)
        except BaseException as err:  # reported in the main thread
            errors.append(err)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(i, c)) for i, c in enumerate(configs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a build thread hung"
    if errors:
        raise errors[0]
    return results


def _concurrent_builds(mlp, configs, check):
    mod, params, x, ref = mlp
    before = _globals_snapshot()
    outer = lowering_options()
    for r in range(ROUNDS):
        if r % 2 == 0:
            kernel_cache.clear_cache()  # both builds really lower (odd rounds hit the cache)
        libs = _build_pair(mod, params, configs)
        for cfg, lib in zip(configs, libs):
            check(cfg, lib)
            np.testing.assert_allclose(_run(lib, x), ref, rtol=1e-4, atol=1e-6)
    assert lowering_options() == outer  # the main thread's (default) context is unchanged
    after = _globals_snapshot()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"module globals changed during the builds: {changed}"


def test_concurrent_builds_blas_vs_generated(mlp):
    if not blas.available():
        pytest.skip("no BLAS in this process (runtime.blas.available() is False): the BLAS "
                    "half of the concurrent build cannot be exercised")
    # dense goes to BLAS only when the generated dense is off as well
    with_blas = {"relay.backend.use_blas": True, "relay.backend.use_generated_dense": False}
    without = {"relay.backend.use_blas": False, "relay.backend.use_generated_dense": False}

    def check(cfg, lib):
        wants = cfg["relay.backend.use_blas"]
        assert _uses_blas(lib) is wants, f"{cfg}: BLAS shim {'missing' if wants else 'present'}"
        assert bool(lib.get_lib().blas) is wants  # the summary's "GEMM via ..."
        assert not _packed_dense(lib)

    _concurrent_builds(mlp, [with_blas, without], check)


def test_concurrent_builds_generated_dense_on_off(mlp):
    on = {"relay.backend.use_generated_dense": True}
    off = {"relay.backend.use_generated_dense": False}

    def check(cfg, lib):
        generated = cfg["relay.backend.use_generated_dense"]
        assert _packed_dense(lib) is generated, f"{cfg}: dense weights packed: {not generated}"
        # without the generated dense, dense goes to BLAS when there is one
        assert _uses_blas(lib) is (not generated and blas.available())

    _concurrent_builds(mlp, [on, off], check)


def test_concurrent_builds_native_on_off(mlp):
    """One build all native, the other all numpy fallback, at the same time."""
    native = {"relay.backend.use_native": True}
    numpy_only = {"relay.backend.use_native": False}

    def check(cfg, lib):
        k = lib.get_lib()
        if cfg["relay.backend.use_native"]:
            assert not k.fallback_functions and k.entry is not None
        else:
            assert not k.native_functions and k.entry is None

    _concurrent_builds(mlp, [native, numpy_only], check)
