"""The on-disk kernel cache (backend.disk_cache) and parallel kernel compilation
(backend.parallel_compile): entries round-trip, corrupt ones are rebuilt, writes are atomic under
concurrent processes, the size limit evicts least recently used entries, the switches turn it
off, ``minitvm cache info/clear`` work, and forked workers speed a build without changing it."""

import os
import time

import numpy as np
import pytest

import minitvm as tvm
from minitvm import cli, codegen, relay
from minitvm.backend import clear_cache, disk_cache, parallel_compile
from minitvm.contrib import graph_executor
from minitvm.runtime import jit


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private cache directory, empty in-process caches, parallel compiling off by default."""
    d = tmp_path / "cache"
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(d))
    monkeypatch.delenv("MINITVM_DISABLE_DISK_CACHE", raising=False)
    monkeypatch.delenv("MINITVM_CACHE_MAX_BYTES", raising=False)
    monkeypatch.setenv("MINITVM_COMPILE_JOBS", "1")
    clear_cache()
    codegen.clear_cache()
    yield d
    clear_cache()
    codegen.clear_cache()


def _mlp(widths=(24, 40, 16)):
    """dense + bias + relu layers of distinct widths: one distinct kernel per layer."""
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(2, 8))
    y, params, k = x, {}, 8
    for i, n in enumerate(widths):
        w, b = relay.var(f"w{i}", shape=(n, k)), relay.var(f"b{i}", shape=(n,))
        params[f"w{i}"] = rng.standard_normal((n, k)).astype("float32")
        params[f"b{i}"] = rng.standard_normal(n).astype("float32")
        y = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(y, w), b))
        k = n
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
    return mod, params


def _build_run(mod, params, config=None):
    with tvm.transform.PassContext(opt_level=3, config=config or {}):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", np.linspace(-1, 1, 16, dtype="float32").reshape(2, 8))
    m.run()
    return m.get_output(0).numpy()


def _fresh_process_caches():
    clear_cache()
    codegen.clear_cache()


def _entries(d):
    return sorted((d / "kernels").glob("*.mtk"))


# ------------------------------------------------------------------------------ the store
def test_put_get_round_trip_and_no_partial_files(tmp_path):
    c = disk_cache.DiskCache(tmp_path)
    assert c.get("k") is None
    c.put("k", b"\x7fELF object bytes", "define void @f() {\n  ret void\n}\n")
    assert c.get("k") == (b"\x7fELF object bytes", "define void @f() {\n  ret void\n}\n")
    assert [p.suffix for p in (tmp_path / "kernels").iterdir()] == [".mtk"]
    assert c.stats["hits"] == 1 and c.stats["misses"] == 1 and c.stats["writes"] == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_entry_is_ignored_and_removed(tmp_path, damage):
    c = disk_cache.DiskCache(tmp_path)
    c.put("k", b"object code" * 50, "ir text")
    (path,) = _entries(tmp_path)
    data = path.read_bytes()
    data = {"truncate": data[:-7], "flip": data[:-3] + bytes([data[-3] ^ 1]) + data[-2:],
            "garbage": b"not an entry at all", "empty": b""}[damage]
    path.write_bytes(data)
    assert c.get("k") is None
    assert not path.exists() and c.stats["corrupt"] == 1


def test_concurrent_writers_leave_one_valid_entry(tmp_path):
    pids = []
    for k in range(4):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                cc = disk_cache.DiskCache(tmp_path)
                for _ in range(20):
                    cc.put("shared", bytes([k]) * 20000, f"ir {k}")
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    for pid in pids:
        assert os.waitpid(pid, 0)[1] == 0
    obj, ir = disk_cache.DiskCache(tmp_path).get("shared")
    k = obj[0]
    assert obj == bytes([k]) * 20000 and ir == f"ir {k}"
    assert [p.name for p in (tmp_path / "kernels").iterdir() if p.suffix != ".mtk"] == []


def test_size_limit_evicts_least_recently_used(tmp_path):
    c = disk_cache.DiskCache(tmp_path, max_bytes=10**9)
    for k in range(4):
        c.put(f"k{k}", os.urandom(3000), "")
    paths = {k: c._path(f"k{k}") for k in range(4)}
    for k, p in paths.items():  # k0 oldest ... k3 newest
        os.utime(p, (1000 + k, 1000 + k))
    assert c.get("k0") is not None  # a hit makes k0 the most recently used
    c.max_bytes = 3 * paths[1].stat().st_size
    assert c.evict() == 1
    assert not paths[1].exists()
    assert all(paths[k].exists() for k in (0, 2, 3))
    c.max_bytes = 0
    c.put("k9", b"x", "")  # a write keeps the limit too
    assert _entries(tmp_path) == []


def test_stale_temporary_files_are_removed(tmp_path):
    c = disk_cache.DiskCache(tmp_path)
    (tmp_path / "kernels").mkdir(parents=True)
    stale = tmp_path / "kernels" / "abc.mtk.1.x.tmp"
    fresh = tmp_path / "kernels" / "abd.mtk.2.y.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (time.time() - 2 * disk_cache.STALE_TMP_SECONDS,) * 2)
    assert c.info()["entries"] == 0
    assert not stale.exists() and fresh.exists()  # a fresh one may still be being written


def test_default_directory_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(tmp_path / "a"))
    assert disk_cache.default_dir() == tmp_path / "a"
    monkeypatch.delenv("MINITVM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.default_dir() == tmp_path / "xdg" / "minitvm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert disk_cache.default_dir() == tmp_path / "home" / ".cache" / "minitvm"


def test_bad_size_limit_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("MINITVM_CACHE_MAX_BYTES", "lots")
    with pytest.raises(ValueError, match="MINITVM_CACHE_MAX_BYTES='lots'"):
        disk_cache.get_cache(tmp_path)


def test_unwritable_directory_warns_and_builds(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    c = disk_cache.DiskCache(blocker)
    with pytest.warns(RuntimeWarning, match="cannot write the kernel cache"):
        c.put("k", b"obj", "ir")
    assert c.get("k") is None


# ------------------------------------------------------------------------------ in relay.build
def test_warm_build_loads_every_kernel_from_disk(cache_dir):
    mod, params = _mlp()
    cold = _build_run(mod, params)
    entries = _entries(cache_dir)
    assert len(entries) >= 3
    cache = disk_cache.get_cache()
    hits = cache.stats["hits"]
    _fresh_process_caches()
    warm = _build_run(mod, params)
    assert cache.stats["hits"] - hits == len(entries)
    assert _entries(cache_dir) == entries  # nothing rewritten
    np.testing.assert_array_equal(cold, warm)


def test_corrupt_entries_are_rebuilt_in_a_build(cache_dir):
    mod, params = _mlp()
    cold = _build_run(mod, params)
    for p in _entries(cache_dir):
        p.write_bytes(p.read_bytes()[:100])
    _fresh_process_caches()
    again = _build_run(mod, params)
    np.testing.assert_array_equal(cold, again)
    assert all(disk_cache._decode(p.read_bytes()) for p in _entries(cache_dir))


def test_disk_loaded_kernel_still_shows_its_optimized_ir(cache_dir):
    A = tvm.te.placeholder((64,), name="A")
    B = tvm.te.compute((64,), lambda i: A[i] * 2.0, name="B")
    f = tvm.te.create_prim_func([A, B])
    store = disk_cache.get_cache()
    codegen.compile_prim_func(f, "f", object_cache=store)
    codegen.clear_cache()
    kernel, ir_text = codegen.compile_prim_func(f, "f", object_cache=store)
    assert kernel._compiled.from_disk and "define" in ir_text
    assert "fmul" in kernel._compiled.optimized_ir
    a = np.arange(64, dtype="float32")
    b = np.empty_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a * 2)


@pytest.mark.parametrize("how", ["env", "config"])
def test_switched_off_writes_nothing(cache_dir, monkeypatch, how):
    config = {}
    if how == "env":
        monkeypatch.setenv("MINITVM_DISABLE_DISK_CACHE", "1")
    else:
        config = {"relay.backend.use_disk_cache": False}
    with tvm.transform.PassContext(config=config):
        assert disk_cache.active_cache() is None
    mod, params = _mlp()
    _build_run(mod, params, config)
    assert not cache_dir.exists() or _entries(cache_dir) == []


def test_object_needing_unknown_symbol_is_not_loaded():
    ir = ('declare float @"mtvm_no_such_function"(float)\n'
          'define float @"f"(float %x) {\n'
          '  %y = call float @"mtvm_no_such_function"(float %x)\n'
          '  ret float %y\n}\n')
    assert jit.external_symbols(ir) == ["mtvm_no_such_function"]
    with pytest.raises(ValueError, match="unknown symbols"):
        jit.load_object(b"", "f", externals=jit.external_symbols(ir))


# ------------------------------------------------------------------------------ the CLI
def test_cli_cache_info_and_clear(cache_dir, capsys):
    mod, params = _mlp()
    _build_run(mod, params)
    n = disk_cache.get_cache().info()["entries"]  # kernels, and runtime.jit's entry objects
    assert n > len(_entries(cache_dir)) >= 3
    assert cli.main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(cache_dir) in out and f"entries:   {n}" in out
    assert cli.main(["cache", "clear", "--dir", str(cache_dir)]) == 0
    assert f"removed {n} cached kernels" in capsys.readouterr().out
    assert disk_cache.get_cache().info()["entries"] == 0


# ------------------------------------------------------------------------------ parallel
# Six distinct kernels (dense layers of distinct widths): the probes lowered in process, then a
# worker's share. The parallel tests lower MIN_TASKS to 6 (8 by default): every kernel is
# compiled twice a test (cold, then cold again in parallel), so each one saved counts twice.
PARALLEL_WIDTHS = tuple(range(12, 12 + 4 * 6, 4))


def _spy_run_sharded(monkeypatch, module: str) -> list:
    """The workers each ``run_sharded`` call of ``module`` (a module's dotted name) forks, in
    order, recorded as the calls run (with ``MIN_TASKS`` lowered to ``PARALLEL_WIDTHS``'s
    kernels)."""
    import sys

    monkeypatch.setattr(parallel_compile, "MIN_TASKS", len(PARALLEL_WIDTHS))
    forked: list = []
    real = parallel_compile.run_sharded
    monkeypatch.setattr(sys.modules[module], "run_sharded",
                        lambda *a, **k: forked.append(real(*a, **k)) or forked[-1])
    return forked


def test_parallel_build_matches_sequential(cache_dir, monkeypatch):
    mod, params = _mlp(PARALLEL_WIDTHS)
    seq = _build_run(mod, params)
    n = len(_entries(cache_dir))
    for p in _entries(cache_dir):
        p.unlink()
    _fresh_process_caches()
    monkeypatch.setenv("MINITVM_COMPILE_JOBS", "2")
    forked = _spy_run_sharded(monkeypatch, "minitvm.relay.backend.te_compiler")
    par = _build_run(mod, params)
    assert forked == [1]
    assert len(_entries(cache_dir)) == n
    np.testing.assert_array_equal(seq, par)


def _relax_chain(widths):
    """A Relax ``main`` of matmul + bias + relu layers of distinct widths (one kernel each)."""
    from minitvm import relax

    rng = np.random.default_rng(0)
    x = relax.Var("x", relax.TensorStructInfo([2, 8], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y, k = x, 8
            for n in widths:
                w = relax.const(rng.standard_normal((k, n)).astype("float32"))
                b = relax.const(rng.standard_normal((n,)).astype("float32"))
                y = bb.emit(relax.op.nn.relu(relax.op.add(relax.op.matmul(y, w), b)))
                k = n
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


def _relax_build_run(mod):
    from minitvm import relax

    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](np.linspace(-1, 1, 16, dtype="float32").reshape(2, 8)).numpy()


def test_parallel_relax_build_matches_sequential(cache_dir, monkeypatch):
    # relax.build shares a cold build's kernels among forked workers as relay.build does
    mod = _relax_chain(PARALLEL_WIDTHS)
    seq = _relax_build_run(mod)
    n = len(_entries(cache_dir))
    assert n >= len(PARALLEL_WIDTHS)
    for p in _entries(cache_dir):
        p.unlink()
    _fresh_process_caches()
    monkeypatch.setenv("MINITVM_COMPILE_JOBS", "2")
    forked = _spy_run_sharded(monkeypatch, "minitvm.relax.vm.build")
    par = _relax_build_run(mod)
    assert forked == [1]
    assert len(_entries(cache_dir)) == n
    np.testing.assert_array_equal(seq, par)
    _fresh_process_caches()  # warm: the probes load their code, no worker is forked
    forked.clear()
    np.testing.assert_array_equal(_relax_build_run(mod), seq)
    assert forked == [0]


def test_run_sharded_survives_crashing_and_hanging_workers(cache_dir, monkeypatch, tmp_path):
    monkeypatch.setattr(parallel_compile, "WORKER_TIMEOUT", 1.0)
    parent = os.getpid()
    done = tmp_path / "done"
    done.mkdir()

    def run_one(k):
        disk_cache.get_cache().put(f"task{k}", b"code", "")  # compiled: not a warm build
        if os.getpid() != parent and k == 3:
            os._exit(7)  # a crashing worker
        if os.getpid() != parent and k == 5:
            time.sleep(60)  # a hanging worker: killed after the time-out
        (done / str(k)).write_text(str(os.getpid()))

    with tvm.transform.PassContext(config={"relay.backend.compile_jobs": 3}):
        t0 = time.monotonic()
        n = parallel_compile.run_sharded(list(range(12)), run_one, group=lambda k: k)
    assert n == 2 and time.monotonic() - t0 < 30
    assert len(list(done.iterdir())) >= 6  # the rest is left to the sequential lowering


def test_warm_build_forks_no_worker(cache_dir, monkeypatch):
    mod, params = _mlp(PARALLEL_WIDTHS)
    cold = _build_run(mod, params)
    _fresh_process_caches()
    monkeypatch.setenv("MINITVM_COMPILE_JOBS", "2")
    forked = _spy_run_sharded(monkeypatch, "minitvm.relay.backend.te_compiler")
    np.testing.assert_array_equal(_build_run(mod, params), cold)
    assert forked == [0]  # the first kernel came from disk: no worker
    np.testing.assert_array_equal(_build_run(mod, params), cold)
    assert forked == [0, 0]  # everything cached in process: no worker either


def test_run_sharded_stays_in_process_when_it_cannot_help(cache_dir, monkeypatch):
    ran = []
    assert parallel_compile.run_sharded(list(range(20)), ran.append, group=lambda k: k) == 0
    assert ran == []  # MINITVM_COMPILE_JOBS=1: the caller lowers everything itself
    monkeypatch.setenv("MINITVM_COMPILE_JOBS", "4")
    assert parallel_compile.run_sharded([1, 2, 3], ran.append, group=lambda k: k) == 0
    monkeypatch.setenv("MINITVM_DISABLE_DISK_CACHE", "1")
    assert parallel_compile.run_sharded(list(range(20)), ran.append, group=lambda k: k) == 0
    assert ran == []


def test_bad_compile_jobs_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("MINITVM_COMPILE_JOBS", "many")
    with pytest.raises(ValueError, match="MINITVM_COMPILE_JOBS='many'"):
        parallel_compile.compile_jobs()


def test_run_sharded_never_forks_from_a_thread(cache_dir, monkeypatch):
    import threading

    monkeypatch.setenv("MINITVM_COMPILE_JOBS", "4")
    out = []
    t = threading.Thread(target=lambda: out.append(
        parallel_compile.run_sharded(list(range(20)), lambda k: None, group=lambda k: k)))
    t.start()
    t.join()
    assert out == [0]


def test_store_does_not_list_the_directory_each_time(tmp_path, monkeypatch):
    """A store counts its own writes and rescans only on the first store, every
    RESCAN_WRITES stores or when the count passes the limit (listing the directory on
    every store cost seconds of a cold build)."""
    from minitvm.backend import disk_cache as dc

    cache = dc.DiskCache(tmp_path, max_bytes=1 << 30)
    scans = []
    real = cache._files
    monkeypatch.setattr(cache, "_files", lambda: scans.append(1) or real())
    for k in range(20):
        cache.put(f"k{k}", b"x" * 100, "ir")
    assert len(scans) == 1
    cache.max_bytes = 1  # now over the limit: the next store rescans and evicts
    cache.put("last", b"y" * 100, "ir")
    assert len(scans) == 2 and cache.stats["evicted"] > 0
