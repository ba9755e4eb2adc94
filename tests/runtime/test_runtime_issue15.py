"""Issue 15 regressions in the runtime: one GraphModule used from several threads (3), library
files validated member by member with digests, no `.tmp` left behind (6), argument errors of
get_output / load_params / set_input (12), concurrent builds keep their own configs (10)."""

import io
import json
import os
import threading
import zipfile

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import blas


def _dense_mod(batch=4, k=32, n=16):
    x = relay.var("x", shape=(batch, k), dtype="float32")
    w = relay.var("w", shape=(n, k), dtype="float32")
    body = relay.nn.relu(relay.nn.dense(x, w) + relay.const(0.5))
    return tvm.IRModule.from_expr(relay.Function([x, w], body))


@pytest.fixture(scope="module")
def built():
    rng = np.random.default_rng(0)
    wv = rng.standard_normal((16, 32)).astype("float32")
    mod = _dense_mod()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    return lib, wv


def _ref(x, w):
    return np.maximum(x @ w.T + 0.5, 0)


# ------------------------------------------------------------------------------ (3) threads
def test_one_graph_module_from_many_threads(built):
    lib, wv = built
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((4, 32)).astype("float32") for _ in range(8)]
    errors, barrier = [], threading.Barrier(4)

    m.load_params({"w": wv})

    def worker(tid):
        try:
            barrier.wait()
            for r in range(30):
                x = inputs[(tid + r) % len(inputs)]
                m.set_input("x", x)
                m.run()
                got = m.get_output(0).numpy().copy()
                np.testing.assert_allclose(got, _ref(x, wv), rtol=1e-4, atol=1e-4)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_inputs_are_per_thread_parameters_are_shared(built):
    lib, wv = built
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.load_params({"w": wv, "folded_away": np.zeros(3)})  # unknown names are skipped, as in TVM
    x = np.ones((4, 32), "float32")
    m.set_input("x", x)
    seen = {}

    def other():
        try:
            m.run()
        except ValueError as err:
            seen["err"] = str(err)
        m.set_input("x", 2 * x)
        m.run()
        seen["out"] = m.get_output(0).numpy().copy()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert "never set" in seen["err"] and "each thread sets its own" in seen["err"]
    np.testing.assert_allclose(seen["out"], _ref(2 * x, wv), rtol=1e-4)
    m.run()  # this thread's input is untouched by the other thread
    np.testing.assert_allclose(m.get_output(0).numpy(), _ref(x, wv), rtol=1e-4)
    # load_params reaches every thread's storage, existing and future
    w2 = np.full_like(wv, 0.01)
    m.load_params({"w": w2})
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _ref(x, w2), rtol=1e-4)
    t = threading.Thread(target=lambda: (m.set_input("x", x), m.run(),
                                         seen.__setitem__("w2", m.get_output(0).numpy().copy())))
    t.start()
    t.join()
    np.testing.assert_allclose(seen["w2"], _ref(x, w2), rtol=1e-4)


# ------------------------------------------------------------------------------ (12) arguments
@pytest.mark.parametrize("index", ["0", None, 1.5, True, [0]])
def test_get_output_index_errors(built, index):
    m = graph_executor.GraphModule(built[0]["default"](tvm.cpu()))
    with pytest.raises(ValueError, match="output index must be an integer"):
        m.get_output(index)


def test_get_output_accepts_numpy_integers(built):
    lib, wv = built
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(x=np.zeros((4, 32), "float32"), w=wv)
    assert m.get_output(np.int64(0)).shape == (4, 16)


@pytest.mark.parametrize("params,message", [
    (b"garbage", "not a parameter archive"), (42, "expected a dict"),
    ({"w": np.zeros((2, 2), "float32")}, "expects shape"),
    ({3.5: np.zeros(3)}, "named by a string or an integer"),
])
def test_load_params_errors(built, params, message):
    m = graph_executor.GraphModule(built[0]["default"](tvm.cpu()))
    with pytest.raises(ValueError, match=message):
        m.load_params(params)


def test_load_params_from_bytes(built):
    lib, wv = built
    buf = io.BytesIO()
    np.savez(buf, w=np.full_like(wv, 0.5))
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.load_params(buf.getvalue())
    x = np.ones((4, 32), "float32")
    m.run(x=x)
    np.testing.assert_allclose(m.get_output(0).numpy(), _ref(x, np.full_like(wv, 0.5)),
                               rtol=1e-5)


@pytest.mark.parametrize("key", [None, 2.5, b"x"])
def test_set_input_bad_keys(built, key):
    m = graph_executor.GraphModule(built[0]["default"](tvm.cpu()))
    with pytest.raises(ValueError):
        m.set_input(key if key is not None else 0.0, np.zeros((4, 32), "float32"))


# ------------------------------------------------------------------------------ (6) files
@pytest.fixture(scope="module")
def exported(built, tmp_path_factory):
    path = tmp_path_factory.mktemp("lib") / "dense.so"
    built[0].export_library(str(path))
    return path


def _members(path):
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _write(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)


def test_exported_library_runs_and_records_digests(built, exported):
    meta = json.loads(_members(exported)["minitvm_lib.json"])
    assert meta["version"] == 2 and "graph.json" in meta["sha256"] and meta["meta_sha256"]
    m = graph_executor.GraphModule(tvm.runtime.load_module(str(exported))["default"](tvm.cpu()))
    x = np.ones((4, 32), "float32")
    m.run(x=x, w=built[1])
    np.testing.assert_allclose(m.get_output(0).numpy(), _ref(x, built[1]), rtol=1e-4)


def test_edited_workspace_size_is_refused(exported, tmp_path):
    members = _members(exported)
    meta = json.loads(members["minitvm_lib.json"])
    for info in meta["kernels"].values():
        info["ws_bytes"] = 8  # the edit that used to corrupt the heap
    members["minitvm_lib.json"] = json.dumps(meta).encode()
    bad = tmp_path / "ws.so"
    _write(bad, members)
    with pytest.raises(ValueError, match=r"ws\.so.*'minitvm_lib\.json' was modified"):
        tvm.runtime.load_module(str(bad))


@pytest.mark.parametrize("member", ["graph.json", "params.npz", "entry.ll"])
def test_edited_member_is_refused_by_name(exported, tmp_path, member):
    members = _members(exported)
    if member not in members:
        pytest.skip(f"{member} not in this library")
    data = bytearray(members[member])
    data[len(data) // 2] ^= 0x01
    members[member] = bytes(data)
    bad = tmp_path / "edit.so"
    _write(bad, members)
    with pytest.raises(ValueError, match=f"edit.so.*'{member}'"):
        tvm.runtime.load_module(str(bad))


@pytest.mark.parametrize("meta_edit,message", [
    (lambda m: m.update(kernels=[]), "field 'kernels' must be an object"),
    (lambda m: next(iter(m["kernels"].values())).update(ws_bytes="8"), "field 'ws_bytes'"),
    (lambda m: next(iter(m["kernels"].values())).update(kind="alien"), "field 'kind'"),
    (lambda m: next(iter(m["kernels"].values())).update(num_consts=-1), "field 'num_consts'"),
    (lambda m: m.pop("sha256"), "field 'sha256'"),
    (lambda m: m.update(version=1), "version 1"),
    # an empty symbol made LLVM abort the whole process (found by the library fuzzer)
    (lambda m: next(iter(m["kernels"].values())).update(symbol=""), "not a valid function name"),
    (lambda m: next(iter(m["kernels"].values())).update(symbol="nope"), "not defined by its"),
    (lambda m: m.update(entry_symbol=""), "not a valid function name"),
    (lambda m: next(iter(m["kernels"].values())).update(pipeline=7), "field 'pipeline'"),
    (lambda m: next(iter(m["kernels"].values())).update(pipeline=True), "field 'pipeline'"),
])
def test_wrong_field_types_are_value_errors(exported, tmp_path, meta_edit, message):
    members = _members(exported)
    meta = json.loads(members["minitvm_lib.json"])
    meta_edit(meta)
    members["minitvm_lib.json"] = json.dumps(meta).encode()
    bad = tmp_path / "field.so"
    _write(bad, members)
    with pytest.raises(ValueError, match=message) as err:
        tvm.runtime.load_module(str(bad))
    assert "field.so" in str(err.value)


@pytest.mark.parametrize("member,data,message", [
    ("params.npz", b"\x80\x04garbage", "'params.npz' is not an .npz archive"),
    ("graph.json", b"[" * 100000, "'graph.json': not valid JSON"),
    ("graph.json", b'{"nodes": 3}', "'graph.json'"),
    ("minitvm_lib.json", b"{not json", "'minitvm_lib.json' is not valid JSON"),
])
def test_garbage_members_are_value_errors(exported, tmp_path, member, data, message):
    members = _members(exported)
    members[member] = data
    bad = tmp_path / "garbage.so"
    _write(bad, members)
    with pytest.raises(ValueError, match=message):
        tvm.runtime.load_module(str(bad))


def test_truncated_archives_are_value_errors(exported, tmp_path):
    raw = exported.read_bytes()
    for frac in (0.2, 0.5, 0.9, 0.99):
        cut = tmp_path / f"cut{frac}.so"
        cut.write_bytes(raw[: int(len(raw) * frac)])
        with pytest.raises(ValueError):
            tvm.runtime.load_module(str(cut))


def test_failed_export_leaves_no_tmp_file(built, tmp_path, monkeypatch):
    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", boom)
    with pytest.raises(OSError, match="disk full"):
        built[0].export_library(str(tmp_path / "out.so"))
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------ (10) builds
def test_concurrent_builds_keep_their_own_backend_config():
    from minitvm.relay import testing

    mod, params = testing.mlp.get_workload(batch_size=16)
    x = np.random.default_rng(3).standard_normal((16, 1, 28, 28)).astype("float32")
    ref = relay.create_executor("debug", mod=mod).evaluate()(x, **params).numpy()
    # dense: generated (weights prepacked to 3-d) by default; BLAS when the generated dense
    # is off and the process has one; plain generated loops when both are off
    configs = [{}, {"relay.backend.use_generated_dense": False},
               {"relay.backend.use_generated_dense": False, "relay.backend.use_blas": False}]
    expect = [(False, True), (blas.available(), False), (False, False)]
    results, errors = {}, []

    def kinds(lib):
        used = any(blas.SHIM_SYMBOL in (k.ir or "") for k in lib.get_lib().kernels.values())
        return used, any(v.numpy().ndim == 3 for v in lib.get_params().values())

    def build(i, cfg, barrier):
        try:
            with tvm.transform.PassContext(opt_level=3, config=cfg):
                barrier.wait()
                lib = relay.build(mod, target="llvm", params=params)
            m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
            m.run(data=x)
            results[i] = (kinds(lib), m.get_output(0).numpy().copy())
        except Exception as err:  # noqa: BLE001
            errors.append(err)

    for _ in range(3):
        results.clear()
        barrier = threading.Barrier(len(configs), timeout=60)
        threads = [threading.Thread(target=build, args=(i, c, barrier))
                   for i, c in enumerate(configs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[0]
        for i, cfg in enumerate(configs):
            used, out = results[i]
            np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
            assert used == expect[i], (i, cfg)
    with tvm.transform.PassContext(opt_level=3):  # nothing leaked into a later default build
        assert kinds(relay.build(mod, target="llvm", params=params)) == expect[0]
