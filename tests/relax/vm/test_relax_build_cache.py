"""The whole-build cache of ``relax.build`` (relax.vm.build_cache): a warm rebuild is loaded and
runs as the fresh build does; a changed weight, shape, opt level, target or pipeline misses; a
new process loads the build; damaged entries are rebuilt; uncachable builds store nothing."""

import os
import subprocess
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relax
from minitvm.backend import clear_cache, whole_build
from minitvm.relax.vm import build_cache

X = np.linspace(-1, 1, 16, dtype="float32").reshape(2, 8)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private cache directory with the build cache on and empty in-process caches."""
    d = tmp_path / "cache"
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(d))
    for var in ("MINITVM_DISABLE_DISK_CACHE", "MINITVM_DISABLE_BUILD_CACHE",
                "MINITVM_CACHE_MAX_BYTES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MINITVM_COMPILE_JOBS", "1")
    monkeypatch.setattr(whole_build, "_PACKAGE", ["pinned"])  # others may edit the tree
    clear_cache()
    codegen.clear_cache()
    yield d
    clear_cache()
    codegen.clear_cache()


def _mlp(rows=2, seed=0, width=16):
    """main(x: (rows, 8), w: (8, width)) = relu(x @ w + b), b a constant, w a parameter."""
    rng = np.random.default_rng(seed)
    x = relax.Var("x", relax.TensorStructInfo([rows, 8], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([8, width], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.op.matmul(x, w))
            y = bb.emit(relax.op.add(y, relax.const(rng.random(width).astype("float32"))))
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(y)))
        bb.emit_func_output(gv)
    return bb.get(), {"w": rng.standard_normal((8, width)).astype("float32")}


def _run(ex, x=X):
    return relax.VirtualMachine(ex, tvm.cpu())["main"](x).numpy()


def _key(mod, params, target="llvm", pipeline="default_build", opt_level=3):
    with tvm.transform.PassContext(opt_level=opt_level):
        found = build_cache.build_key(mod, params, target, pipeline, "bytecode")
    assert found is not None
    return found[1]


def test_warm_build_is_loaded_and_runs_the_same(cache_dir):
    mod, params = _mlp()
    hits, stores = build_cache.STATS["hits"], build_cache.STATS["stores"]
    fresh = relax.build(mod, "llvm", params=params)
    assert build_cache.STATS["stores"] == stores + 1
    whole_build.active_cache().flush()
    warm = relax.build(mod, "llvm", params=params)
    assert build_cache.STATS["hits"] == hits + 1
    assert warm is not fresh and warm.as_text() == fresh.as_text()
    expect = np.maximum(X @ params["w"] + mod["main"].body.blocks[0].bindings[1].value.args[1]
                        .data.numpy(), 0)
    np.testing.assert_allclose(_run(fresh), expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(_run(warm), _run(fresh))


@pytest.mark.parametrize("change", ["weight", "shape", "opt_level", "target", "pipeline",
                                    "constant"])
def test_what_decides_a_build_changes_its_key(cache_dir, change):
    mod, params = _mlp()
    base = _key(mod, params)
    assert _key(*_mlp()) == base  # the same program made again keys the same
    kw = {}
    if change == "weight":
        params = {"w": params["w"].copy()}
        params["w"][3, 5] += np.float32(1e-3)
    elif change == "shape":
        mod, params = _mlp(rows=3)
    elif change == "opt_level":
        kw["opt_level"] = 2
    elif change == "target":
        kw["target"] = "llvm -mcpu=haswell"
    elif change == "pipeline":
        kw["pipeline"] = "zero"
    elif change == "constant":
        mod, _ = _mlp(seed=1)
    assert _key(mod, params, **kw) != base


def test_changed_weight_is_built_not_reused(cache_dir):
    mod, params = _mlp()
    relax.build(mod, "llvm", params=params)
    whole_build.active_cache().flush()
    other = {"w": params["w"] * 2}
    hits = build_cache.STATS["hits"]
    ex = relax.build(mod, "llvm", params=other)
    assert build_cache.STATS["hits"] == hits
    np.testing.assert_allclose(_run(ex), np.maximum(X @ other["w"] + _bias(mod), 0),
                               rtol=1e-5, atol=1e-6)


def _bias(mod):
    return mod["main"].body.blocks[0].bindings[1].value.args[1].data.numpy()


def test_uncachable_builds_have_no_key(cache_dir, monkeypatch):
    mod, params = _mlp()
    assert build_cache.build_key(mod, params, "llvm", relax.get_pipeline("zero"),
                                 "bytecode") is None  # a pass object: its code is not seen
    with tvm.transform.PassContext(config={whole_build.CONFIG_KEY: False}):
        assert build_cache.build_key(mod, params, "llvm", "default_build", "bytecode") is None
    monkeypatch.setenv("MINITVM_DISABLE_BUILD_CACHE", "1")
    assert build_cache.build_key(mod, params, "llvm", "default_build", "bytecode") is None
    stores = build_cache.STATS["stores"]
    relax.build(mod, "llvm", params=params)
    assert build_cache.STATS["stores"] == stores


def test_damaged_entry_is_rebuilt(cache_dir):
    mod, params = _mlp()
    fresh = _run(relax.build(mod, "llvm", params=params))
    cache = whole_build.active_cache()
    cache.flush()
    cache_key = build_cache.build_key(mod, params, "llvm", "default_build", "bytecode")[1]
    path = cache._build_path(cache_key)
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(path, "wb").write(bytes(data))
    hits = build_cache.STATS["hits"]
    np.testing.assert_array_equal(_run(relax.build(mod, "llvm", params=params)), fresh)
    assert build_cache.STATS["hits"] == hits


def test_a_new_process_loads_the_build(cache_dir, tmp_path):
    """A build stored here is loaded by a fresh process: this one's op registry holds what other
    test modules registered (their own ops, by code outside minitvm) and what they imported,
    the fresh one's does not; neither is in the key."""
    mod, params = _mlp()
    fresh = _run(relax.build(mod, "llvm", params=params))  # cold, stored here
    whole_build.active_cache().flush()
    script = tmp_path / "load.py"
    script.write_text(
        "import sys, numpy as np\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from minitvm import relax\n"
        "from minitvm.backend import whole_build\n"
        "from minitvm.relax.vm import build_cache\n"
        "from test_relax_build_cache import _mlp, _run\n"
        "whole_build._PACKAGE[:] = ['pinned']\n"
        "mod, params = _mlp()\n"
        "ex = relax.build(mod, 'llvm', params=params)\n"
        "np.save(sys.argv[2], _run(ex))\n"
        "print(build_cache.STATS['hits'])\n")
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, here]))
    out = subprocess.run([sys.executable, str(script), root, str(tmp_path / "o.npy")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "1"  # loaded in a fresh process
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), fresh)


def test_constants_of_every_kind_round_trip():
    from minitvm.runtime.relax_vm.builtins import ShapeTuple

    values = [np.arange(6, dtype="int8").reshape(2, 3), ShapeTuple([2, 3]), "s", 7, 1.5, True,
              None]
    back = [build_cache._from_constant(build_cache._constant(v)) for v in values]
    np.testing.assert_array_equal(back[0], values[0])
    assert isinstance(back[1], ShapeTuple) and back[1] == (2, 3)
    assert back[2:] == values[2:] and type(back[5]) is bool
    with pytest.raises(TypeError):
        build_cache._constant(object())
