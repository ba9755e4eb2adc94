"""The whole-build cache of ``relay.build`` (relay.backend.build_cache): a build seen before is
loaded with the same graph, weights and results; everything that decides a build is in its key
(program, parameters, PassContext, knobs, target, compiler version and sources, what code
outside minitvm registered that the build may read, and nothing else of the op registry);
damaged entries are rebuilt; the switches turn it off; what an entry does not carry
(optimized module, PrimFuncs, kernel callables) is rebuilt on first use."""

import dataclasses
import os
import subprocess
import sys
import threading
import zlib

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.backend import clear_cache, disk_cache, whole_build
from minitvm.backend.options import lowering_options
from minitvm.contrib import graph_executor
from minitvm.instrument import PassTimingInstrument
from minitvm.ir.op import Op, OpPattern
from minitvm.relay.backend import build_cache
from minitvm.relay.op.op import define_op, register_legalize, register_pattern
from minitvm.relay.testing.temp_op_attr import TempOpAttr
from minitvm.schedule.knobs import KnobTable

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
    _fresh()
    yield d
    _fresh()


def _fresh():
    """As in a new process: no kernel compiled or loaded yet."""
    clear_cache()
    codegen.clear_cache()


def _mlp(seed=0, widths=(24, 16)):
    rng = np.random.default_rng(seed)
    x = relay.var("x", shape=(2, 8))
    y, params, k = x, {}, 8
    for i, n in enumerate(widths):
        w, b = relay.var(f"w{i}", shape=(n, k)), relay.var(f"b{i}", shape=(n,))
        params[f"w{i}"] = rng.standard_normal((n, k)).astype("float32")
        params[f"b{i}"] = rng.standard_normal(n).astype("float32")
        y = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(y, w), b))
        k = n
    return tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y)), params


def _build(mod, params, config=None, opt_level=3, instruments=None):
    with tvm.transform.PassContext(opt_level=opt_level, config=config or {},
                                   instruments=instruments):
        return relay.build(mod, target="llvm", params=params)


def _run(lib):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", X)
    m.run()
    return m.get_output(0).numpy()


def _reference(params):
    y = X
    for i in range(len(params) // 2):
        y = np.maximum(y @ params[f"w{i}"].T + params[f"b{i}"], 0)
    return y


def _entries(d):
    disk_cache.flush_all()  # (builds are written on a thread)
    return sorted((d / "builds").glob("*.mtb")) if (d / "builds").is_dir() else []


def test_warm_build_is_loaded_and_runs_the_same(cache_dir):
    mod, params = _mlp()
    cold = _build(mod, params)
    assert not isinstance(cold, build_cache.CachedFactory) and len(_entries(cache_dir)) == 1
    _fresh()
    warm = _build(mod, params)
    assert isinstance(warm, build_cache.CachedFactory)
    assert disk_cache.get_cache().stats["build_hits"] >= 1
    assert warm.get_graph_json() == cold.get_graph_json()
    assert sorted(warm.get_lib().kernels) == sorted(cold.get_lib().kernels)
    for name, k in cold.get_lib().kernels.items():
        w = warm.get_lib().kernels[name]
        assert (w.symbol, w.ws_bytes, w.ir) == (k.symbol, k.ws_bytes, k.ir)
        for a, b in zip(w.consts, k.consts):
            np.testing.assert_array_equal(a, b)
    out = _run(warm)
    np.testing.assert_array_equal(out, _run(cold))
    np.testing.assert_allclose(out, _reference(params), rtol=1e-5, atol=1e-5)
    assert _run(warm) is not None  # a second executor from the same cached factory


def test_cached_factory_rebuilds_what_it_does_not_carry(cache_dir):
    rng = np.random.default_rng(0)
    mod, params = _mlp()
    cold = _build(mod, params)
    _fresh()
    warm = _build(mod, params)
    assert warm._rebuild._factory is None  # nothing rebuilt yet
    tvm.ir.assert_structural_equal(warm.ir_mod, cold.ir_mod)
    name, k = next(iter(warm.get_lib().kernels.items()))
    assert k.prim_func is not None and k.source is not None
    tvm.ir.assert_structural_equal(k.prim_func, cold.get_lib().kernels[name].prim_func)
    f, g = warm.get_lib().get_function(name), cold.get_lib().get_function(name)
    args = [rng.standard_normal([int(d) for d in b.shape]).astype(b.dtype)
            for _, b in cold.get_lib().kernels[name].prim_func.buffer_map.items()]
    args2 = [a.copy() for a in args]
    f(*args)
    g(*args2)
    for a, b in zip(args, args2):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("change", ["params", "opt_level", "config", "codegen_version",
                                    "package", "knobs", "program", "env"])
def test_anything_that_decides_a_build_changes_its_key(cache_dir, monkeypatch, change):
    mod, params = _mlp()
    with tvm.transform.PassContext(opt_level=3):
        base = build_cache.build_key(mod, params, "llvm", lowering_options())
        assert build_cache.build_key(*_mlp(), "llvm", lowering_options()) == base  # stable
    assert base is not None
    opt_level, config, options = 3, {}, None
    if change == "params":
        params = dict(params, b0=params["b0"] + np.float32(1e-3))
    elif change == "opt_level":
        opt_level = 2
    elif change == "config":
        config = {"relay.backend.use_generated_dense": False}
    elif change == "codegen_version":
        monkeypatch.setattr(whole_build, "CODEGEN_VERSION", "test-next")
    elif change == "package":
        monkeypatch.setattr(whole_build, "_PACKAGE", ["an-edited-compiler"])
    elif change == "knobs":
        options = dataclasses.replace(lowering_options(), knobs=KnobTable({"w": {"mr": 4}}))
    elif change == "program":
        mod, _ = _mlp(widths=(24, 12))
    elif change == "env":
        monkeypatch.setenv("MINITVM_SOME_NEW_SWITCH", "1")
    with tvm.transform.PassContext(opt_level=opt_level, config=config):
        key = build_cache.build_key(mod, params, "llvm", options or lowering_options())
    assert key is not None and key != base


def _softmax_net(const=(1.0, 2.0, 3.0), axis=1, param="w", name="x"):
    x = relay.var(name, shape=(2, 3))
    w = relay.var(param, shape=(3,))
    c = relay.const(np.array(const, "float32"))
    y = relay.nn.softmax(relay.add(relay.multiply(x, w), c), axis=axis)
    params = {param: np.array([0.5, 1.0, 2.0], "float32")}
    return tvm.IRModule.from_expr(relay.Function([x, w], y)), params


@pytest.mark.parametrize("change", [
    dict(const=(1.0, 2.0, 3.5)),  # one constant element
    dict(axis=0),                 # one attribute
    dict(param="v"),              # one parameter's name
    dict(name="data"),            # an input's name (the graph's input follows it)
])
def test_modules_differing_in_one_detail_have_different_keys(cache_dir, change):
    with tvm.transform.PassContext(opt_level=3):
        base = build_cache.build_key(*_softmax_net(), "llvm", lowering_options())
        assert base == build_cache.build_key(*_softmax_net(), "llvm", lowering_options())
        key = build_cache.build_key(*_softmax_net(**change), "llvm", lowering_options())
    assert base is not None and key is not None and key != base


def test_one_parameter_element_changes_the_key(cache_dir):
    mod, params = _softmax_net()
    with tvm.transform.PassContext(opt_level=3):
        base = build_cache.build_key(mod, params, "llvm", lowering_options())
        w = params["w"].copy()
        w[1] = np.nextafter(w[1], np.float32(2))
        assert build_cache.build_key(mod, {"w": w}, "llvm", lowering_options()) != base


def test_a_built_module_keys_as_before(cache_dir):
    # building fills in the input module's checked types; the next build must still hit
    mod, params = _mlp()
    with tvm.transform.PassContext(opt_level=3):
        before = build_cache.build_key(mod, params, "llvm", lowering_options())
    _build(mod, params)
    with tvm.transform.PassContext(opt_level=3):
        assert build_cache.build_key(mod, params, "llvm", lowering_options()) == before
    _fresh()
    assert isinstance(_build(mod, params), build_cache.CachedFactory)


def test_a_module_holding_code_is_not_cached(cache_dir):
    mod, params = _softmax_net()
    fn = mod["main"].with_attr("callback", lambda: None)
    mod = tvm.IRModule.from_expr(fn)
    with tvm.transform.PassContext(opt_level=3):
        assert build_cache.build_key(mod, params, "llvm", lowering_options()) is None


def test_changed_weights_are_built_not_reused(cache_dir):
    mod, params = _mlp(seed=0)
    _build(mod, params)
    _fresh()
    params2 = _mlp(seed=1)[1]
    lib = _build(mod, params2)
    assert not isinstance(lib, build_cache.CachedFactory)
    np.testing.assert_allclose(_run(lib), _reference(params2), rtol=1e-5, atol=1e-5)
    assert len(_entries(cache_dir)) == 2


def test_uncachable_builds_have_no_key(cache_dir):
    mod, params = _mlp()
    options = lowering_options()
    tracing = dataclasses.replace(options, knobs=KnobTable(trace=True))
    assert build_cache.build_key(mod, params, "llvm", tracing) is None
    op = Op.get("nn.relu")
    op.set_attr("TestOnlyForeignAttr", lambda *a: None)  # code the key cannot see
    try:
        assert build_cache.build_key(mod, params, "llvm", options) is None
    finally:
        op.reset_attr("TestOnlyForeignAttr")
    assert build_cache.build_key(mod, params, "llvm", options) is not None


@pytest.mark.parametrize("how", ["env", "config", "instruments", "fallback"])
def test_switched_off_or_uncachable_builds_store_nothing(cache_dir, monkeypatch, how):
    mod, params = _mlp()
    config, instruments = {}, None
    if how == "env":
        monkeypatch.setenv("MINITVM_DISABLE_BUILD_CACHE", "1")
    elif how == "config":
        config = {"relay.backend.use_build_cache": False}
    elif how == "instruments":
        instruments = [PassTimingInstrument()]
    else:
        config = {"relay.backend.use_native": False}  # numpy fallback kernels
    for _ in range(2):
        lib = _build(mod, params, config, instruments=instruments)
        assert not isinstance(lib, build_cache.CachedFactory)
        np.testing.assert_allclose(_run(lib), _reference(params), rtol=1e-5, atol=1e-5)
    assert _entries(cache_dir) == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "short"])
def test_damaged_entry_is_rebuilt(cache_dir, damage):
    mod, params = _mlp()
    cold = _run(_build(mod, params))
    (path,) = _entries(cache_dir)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "empty":  # (a file mmap refuses)
        data = bytearray()
    elif damage == "short":  # shorter than the header
        data = data[:10]
    else:
        data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    _fresh()
    lib = _build(mod, params)
    assert not isinstance(lib, build_cache.CachedFactory)
    np.testing.assert_array_equal(_run(lib), cold)
    assert disk_cache.get_cache().stats["corrupt"] >= 1
    _fresh()
    assert isinstance(_build(mod, params), build_cache.CachedFactory)  # rewritten whole


def test_clashing_objects_load_one_engine_each(cache_dir):
    mod, params = _mlp()
    cold = _build(mod, params)
    cache = disk_cache.get_cache()
    with tvm.transform.PassContext(opt_level=3):
        key = build_cache.build_key(mod, params, "llvm", lowering_options())
    payload = build_cache._unpack(cache.get_build(key))
    # each object's IR says it defines one more symbol, the same for all (the JIT's code arenas
    # read what an object defines from its IR, so they must not put two of them together)
    shared = '@mtvm_shared_symbol = global i32 0\n'
    objects = {s: (v[0], v[1], zlib.compress(zlib.decompress(v[2]) + shared.encode()), v[3],
                   ["mtvm_shared_symbol"]) for s, v in payload["objects"].items()}
    loaded = build_cache._load_objects(objects)
    assert len({id(c.engine) for c in loaded.values()}) == len(loaded)
    together = build_cache._load_objects(payload["objects"])
    assert len({id(c.engine) for c in together.values()}) == 1
    assert {s: c.symbol for s, c in loaded.items()} == {s: s for s in payload["objects"]}
    assert _run(cold) is not None


_EXTRA_LIBRARY = '''"""Ops a library outside minitvm registers when it is imported."""
import numpy as np

from minitvm.ir.op import OpPattern
from minitvm.relay.op.op import define_op, register_legalize

define_op("extra_lib.twice", lambda ts, attrs: ts[0], lambda attrs, args, t: args[0] * 2,
          OpPattern.ELEMWISE, num_inputs=1)


@register_legalize("extra_lib.twice")
def _legalize(attrs, inputs, types):
    return None
'''


def test_a_new_process_loads_the_build(cache_dir, tmp_path):
    """A build stored by one process is loaded by another, which imported a library registering
    its own ops (code outside minitvm) and minitvm's lazily registered rules first: what a
    process happens to have imported is not in the key."""
    (tmp_path / "extra_lib.py").write_text(_EXTRA_LIBRARY)
    script = tmp_path / "build_twice.py"
    script.write_text(
        "import sys, numpy as np\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "if len(sys.argv) > 3:\n"
        "    import extra_lib  # noqa: F401  (its ops, registered by code outside minitvm)\n"
        "    import minitvm.relay.transform.fake_quantization_to_integer_rules  # noqa: F401\n"
        "import minitvm as tvm\n"
        "from minitvm import relay\n"
        "from minitvm.contrib import graph_executor\n"
        "from minitvm.relay.backend import build_cache\n"
        "from test_compile_speed_build_cache import _mlp, X\n"
        "build_cache._PACKAGE[:] = ['pinned']  # others may edit the tree between the runs\n"
        "mod, params = _mlp()\n"
        "with tvm.transform.PassContext(opt_level=3):\n"
        "    lib = relay.build(mod, target='llvm', params=params)\n"
        "m = graph_executor.GraphModule(lib['default'](tvm.cpu()))\n"
        "m.set_input('x', X); m.run()\n"
        "np.save(sys.argv[2], m.get_output(0).numpy())\n"
        "print(isinstance(lib, build_cache.CachedFactory))\n")
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, here, str(tmp_path)]))
    outs = []
    for k in range(2):
        extra = ["extra"] if k else []
        out = subprocess.run([sys.executable, str(script), root, str(tmp_path / f"o{k}.npy"),
                              *extra], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        outs.append(out.stdout.strip().splitlines()[-1])
    assert outs == ["False", "True"]  # cold, then loaded in a fresh process
    np.testing.assert_array_equal(np.load(tmp_path / "o0.npy"), np.load(tmp_path / "o1.npy"))


def _user_op(name: str) -> Op:
    """An op registered by this test's code (outside minitvm): type relation, numpy reference
    and a legalization of its own."""
    if name not in Op.list_op_names():
        define_op(name, lambda ts, attrs: ts[0], lambda attrs, args, t: args[0] + 1,
                  OpPattern.ELEMWISE, num_inputs=1)
        register_legalize(name, lambda attrs, inputs, types: None)
    return Op.get(name)


def _key(mod, params):
    with tvm.transform.PassContext(opt_level=3):
        return build_cache.build_key(mod, params, "llvm", lowering_options())


def test_a_user_op_the_model_does_not_call_leaves_the_cache_on(cache_dir):
    mod, params = _mlp()
    cold = _build(mod, params)
    op = _user_op("test.build_key_not_called")
    assert op.foreign and op.changed_attrs()  # its code is not minitvm's
    _fresh()
    warm = _build(mod, params)
    assert isinstance(warm, build_cache.CachedFactory)
    np.testing.assert_array_equal(_run(warm), _run(cold))


def test_a_user_intrinsic_lowering_turns_the_cache_off(cache_dir):
    """An intrinsic's lowering rule is applied to the calls the lowering generates, whatever
    the module calls: one registered from outside minitvm, on a new intrinsic too, is seen."""
    mod, params = _mlp()
    assert _key(mod, params) is not None
    tvm.ir.register_intrin_lowering("tir.build_key_test_intrinsic", "llvm",
                                    f=lambda call: None)
    op = Op.get("tir.build_key_test_intrinsic")
    try:
        assert op.foreign and _key(mod, params) is None
    finally:
        op.reset_attr("llvm.FLowerIntrinsic")
    assert _key(mod, params) is not None


def _calling(op: Op, how: str):
    """A module calling ``op`` directly, inside a primitive (fused) function, or inside a
    composite function of a partitioned one."""
    x = relay.var("x", shape=(2, 8))
    if how == "direct":
        return tvm.IRModule.from_expr(relay.Function([x], relay.Call(op, [relay.nn.relu(x)])))
    p = relay.var("p", shape=(2, 8))
    inner = relay.Function([p], relay.nn.relu(relay.Call(op, [p])))
    if how == "fused":
        inner = inner.with_attr("Primitive", 1)
    else:
        inner = inner.with_attr("Composite", "user.pattern")
        q = relay.var("q", shape=(2, 8))
        inner = relay.Function([q], relay.Call(inner, [q])).with_attr("Compiler", "user")
        inner = inner.with_attr("global_symbol", "user_0")
    return tvm.IRModule.from_expr(relay.Function([x], relay.Call(inner, [x])))


@pytest.mark.parametrize("how", ["direct", "fused", "composite"])
def test_a_user_op_the_model_calls_is_not_cached(cache_dir, how):
    """The user op's code is in no key: a module calling it, wherever, is built, not cached."""
    assert _key(_calling(Op.get("nn.relu"), how), {}) is not None
    assert _key(_calling(_user_op("test.build_key_called"), how), {}) is None


def test_a_user_override_of_a_builtin_attribute_changes_or_disables_the_key(cache_dir):
    """A built-in op's attribute set, overridden or removed by code outside minitvm is in the
    key (plain values) or makes the build uncachable (code), whether or not the module calls
    the op (a pass may introduce it); undone, the key is the one before."""
    mod, params = _mlp()
    base = _key(mod, params)
    assert base is not None
    with TempOpAttr("nn.bias_add", "TOpPattern", OpPattern.OPAQUE):  # an op the module calls
        pattern = _key(mod, params)
        assert pattern is not None and pattern != base
    with TempOpAttr("nn.bias_add", "TOpPattern", OpPattern.OPAQUE):
        assert _key(mod, params) == pattern  # the same override, the same key
    with TempOpAttr("nn.conv2d", "FTVMLegalize", lambda attrs, inputs, types: None):
        assert _key(mod, params) is None  # code, on an op a pass may introduce
    with TempOpAttr("nn.relu", "FTECompute", lambda attrs, inputs, out_type: None):
        assert _key(mod, params) is None
    assert _key(mod, params) == base
    op = Op.get("nn.bias_add")
    saved = op._attrs["TOpPattern"]
    op.reset_attr("TOpPattern")
    try:
        removed = _key(mod, params)
        assert removed is not None and removed not in (base, pattern)
    finally:
        op._attrs["TOpPattern"] = saved
    assert _key(mod, params) == base


def test_registrations_record_whose_code_made_them():
    """minitvm's own registrations (at import, lazily imported too) are built-in; a call from
    other code through minitvm's helpers is not."""
    import minitvm.relay.transform.fake_quantization_to_integer_rules  # noqa: F401

    conv = Op.get("nn.conv2d")
    assert not conv.foreign and conv.changed_attrs() == []
    assert conv.get_attr("FTVMFakeQuantizationToInteger") is not None
    op = Op.get("nn.batch_flatten")
    saved = op._attrs.get("TOpPattern")
    register_pattern("nn.batch_flatten", OpPattern.OPAQUE, level=99)  # a helper, from here
    try:
        assert op.changed_attrs() == ["TOpPattern"]
        assert whole_build.foreign_op_attrs() == [("nn.batch_flatten", "TOpPattern")]
    finally:
        op._attrs["TOpPattern"] = saved
    assert op.changed_attrs() == [] and whole_build.foreign_op_attrs() == []


def test_entries_are_data_only_and_round_trip():
    """An entry is a JSON header plus raw buffers: loading one never runs code (no pickle)."""
    raws: list = []
    payload = {"s": "x", "n": 3, "b": b"\x00obj", "a": np.arange(6, dtype="float32").reshape(2, 3),
               "l": [("k", 1, [np.zeros(0, "int64")])], "d": {"sym": (b"o", 2, b"z", ["f"], [])}}
    head = build_cache._encode(payload, raws)
    back = build_cache._decode(head, [bytes(r) for r in raws])
    assert back["s"] == "x" and back["n"] == 3 and back["b"] == b"\x00obj"
    np.testing.assert_array_equal(back["a"], payload["a"])
    assert back["l"][0][2][0].dtype == np.int64 and back["d"]["sym"][0] == b"o"
    with pytest.raises(TypeError):
        build_cache._encode({"f": lambda: 0}, [])
    with pytest.raises(TypeError):
        build_cache._encode(np.array([object()]), [])
    for module in (build_cache, whole_build):
        source = open(module.__file__).read()
        assert "import pickle" not in source and "pickle.load" not in source


def test_scalar_params_keep_their_shape(cache_dir):
    """0-d parameters (scalar constants relay.build binds as ``p0``...) load as 0-d arrays: a
    loaded build once had them as shape (1,) and its graph refused them at set_input."""
    x = relay.var("x", shape=(3,), dtype="int8")
    y = relay.var("y", shape=(3,), dtype="int8")
    big = relay.greater_equal(y, relay.const(np.int8(7)))
    body = relay.where(big, relay.right_shift(x, relay.const(np.int8(7))), relay.right_shift(x, y))
    mod = tvm.IRModule.from_expr(relay.Function([x, y], body))
    cold = _build(mod, None)
    _fresh()
    warm = _build(mod, None)
    assert isinstance(warm, build_cache.CachedFactory)
    shapes = {k: v.shape for k, v in cold.get_params().items()}
    assert {k: np.asarray(v).shape for k, v in warm.get_params().items()} == shapes
    xv, yv = np.array([-128, 64, 5], "int8"), np.array([1, 9, 2], "int8")
    want = np.where(yv >= 7, xv >> 7, xv >> yv)
    for lib in (cold, warm):
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        m.run(x=xv, y=yv)
        np.testing.assert_array_equal(m.get_output(0).numpy(), want)


def test_writes_to_a_loaded_build_stay_in_the_process(cache_dir):
    # the entry is mapped copy-on-write: a loaded build's arrays are writable, and writing
    # them changes neither the file nor the next load
    mod, params = _mlp()
    cold = _run(_build(mod, params))
    (path,) = _entries(cache_dir)
    before = path.read_bytes()
    _fresh()
    warm = _build(mod, params)
    assert isinstance(warm, build_cache.CachedFactory)
    arrays = [v._data for v in warm.get_params().values()]
    arrays += [c for k in warm.get_lib().kernels.values() for c in k.consts]
    assert arrays
    for a in arrays:
        assert a.flags.writeable
        a[...] = 0
    assert path.read_bytes() == before
    _fresh()
    again = _build(mod, params)
    assert isinstance(again, build_cache.CachedFactory)
    np.testing.assert_array_equal(_run(again), cold)


def test_package_fingerprint_follows_edits(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    first = build_cache.package_fingerprint(str(pkg))
    assert build_cache.package_fingerprint(str(pkg)) == first
    (pkg / "sub" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"\0" * 9)
    (pkg / "c.pyc").write_bytes(b"\0")
    assert build_cache.package_fingerprint(str(pkg)) == first  # compiled files do not count
    st = os.stat(pkg / "sub" / "b.py")
    (pkg / "sub" / "b.py").write_text("y = 3\n")  # same size, new contents
    os.utime(pkg / "sub" / "b.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    edited = build_cache.package_fingerprint(str(pkg))
    assert edited != first
    (pkg / "d.py").write_text("")
    assert build_cache.package_fingerprint(str(pkg)) not in (first, edited)
    assert build_cache.package_fingerprint() == build_cache.package_fingerprint()


def test_the_entry_is_written_while_the_caller_goes_on(cache_dir, monkeypatch):
    # relay.build returns before its entry is on disk; a load of that key (and flush) waits
    release = threading.Event()
    real = disk_cache.DiskCache._write_build_file

    def slow(self, key, chunks):
        assert release.wait(30)
        real(self, key, chunks)

    monkeypatch.setattr(disk_cache.DiskCache, "_write_build_file", slow)
    mod, params = _mlp()
    cold = _build(mod, params)  # returns while the writer waits
    assert not (cache_dir / "builds").is_dir() or not list((cache_dir / "builds").glob("*.mtb"))
    release.set()
    _fresh()
    warm = _build(mod, params)  # waits for the write of its key, then loads it
    assert isinstance(warm, build_cache.CachedFactory)
    np.testing.assert_array_equal(_run(warm), _run(cold))
    assert len(_entries(cache_dir)) == 1


def test_the_entry_is_encoded_on_the_writer_thread(cache_dir, monkeypatch):
    # compressing the kernels' IR and encoding the entry happen after relay.build returned
    release = threading.Event()
    real = build_cache._chunks
    threads = []

    def slow(factory, codes):
        threads.append(threading.current_thread())
        assert release.wait(30)
        return real(factory, codes)

    monkeypatch.setattr(build_cache, "_chunks", slow)
    mod, params = _mlp()
    cold = _build(mod, params)  # returns while the writer thread is still encoding
    release.set()
    disk_cache.get_cache().flush()
    assert threads and threads[0] is not threading.main_thread()
    _fresh()
    warm = _build(mod, params)
    assert isinstance(warm, build_cache.CachedFactory)
    np.testing.assert_array_equal(_run(warm), _run(cold))
    # an entry that cannot be encoded (its chunks are None) leaves nothing on disk
    cache = disk_cache.DiskCache(cache_dir / "other")
    cache.put_build("k", lambda: None, wait=False)
    cache.flush()
    cache.put_build("k2", lambda: None)
    assert cache.get_build("k") is None and cache.get_build("k2") is None


def test_graph_without_an_entry_is_cached(cache_dir, monkeypatch):
    """A graph over the entry limit (``aot.MAX_ENTRY_STEPS``) goes to the whole-build cache too;
    its hit has no entry and runs through the native step loop."""
    from minitvm.backend import aot

    monkeypatch.setattr(aot, "MAX_ENTRY_STEPS", 1)
    x = relay.var("x", shape=(3, 5))
    y = relay.abs(relay.negative(relay.sigmoid(x)))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=0):
        cold = relay.build(mod, target="llvm")
        disk_cache.flush_all()
        _fresh()
        warm = relay.build(mod, target="llvm")
    assert cold.get_lib().entry is None and not isinstance(cold, build_cache.CachedFactory)
    assert isinstance(warm, build_cache.CachedFactory) and warm.get_lib().entry is None
    xv = np.random.default_rng(2).standard_normal((3, 5)).astype("float32")
    outs = []
    for lib in (cold, warm):
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.set_input("x", xv)
        m.run()
        outs.append(m.get_output(0).numpy())
    assert m._step_loop is not None
    np.testing.assert_array_equal(outs[1], outs[0])
    np.testing.assert_allclose(outs[1], np.abs(1 / (1 + np.exp(-xv))), rtol=1e-6)
