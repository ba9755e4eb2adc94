"""Factory module, graph executor API, export_library / load_module, input checking."""

import zipfile

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay import testing


@pytest.fixture(scope="module")
def mlp():
    mod, params = testing.mlp.get_workload(batch_size=3)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    x = np.random.default_rng(0).standard_normal((3, 1, 28, 28)).astype("float32")
    ref = relay.create_executor("debug", mod=mod).evaluate()(x, **params).numpy()
    return lib, x, ref


def _run(factory, x):
    m = graph_executor.GraphModule(factory["default"](tvm.cpu(0)))
    m.set_input("data", x)
    m.run()
    return m


def test_factory_api(mlp):
    lib, x, ref = mlp
    graph = lib.get_graph_json()
    assert '"tvm_op"' in graph and '"storage_id"' in graph
    assert set(lib.get_params()) == {f"p{k}" for k in range(len(lib.get_params()))}
    assert lib.get_lib().entry is not None  # all native: one call runs the graph
    m = _run(lib, x)
    assert m.get_num_outputs() == 1
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-6)
    # benchmark/time_evaluator run the graph: one warm-up, then repeat x number timed runs
    runs = [0]
    graph_run = m.run

    def counting_run(**kw):
        runs[0] += 1
        graph_run(**kw)

    m.run = counting_run
    res = m.benchmark(repeat=2, number=3)
    assert runs[0] == 1 + 2 * 3 and len(res.results) == 2
    assert res.mean == pytest.approx(np.mean(res.results)) and res.min <= res.max
    runs[0] = 0
    assert len(m.time_evaluator("run", tvm.cpu(0), number=2)().results) == 1
    assert runs[0] == 1 + 2
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="only 'run'"):
        m.time_evaluator("set_input", tvm.cpu(0))


def test_inputs_are_checked(mlp):
    lib, x, _ = mlp
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    with pytest.raises(ValueError, match=r"expects shape \(3, 1, 28, 28\) float32, got shape"):
        m.set_input("data", x[:1])
    with pytest.raises(ValueError, match="float32, got .* float64"):
        m.set_input("data", x.astype("float64"))
    with pytest.raises(ValueError, match="no input named 'nope'"):
        m.set_input("nope", x)
    with pytest.raises(ValueError, match="out of range"):
        m.get_output(3)


def test_export_and_load(tmp_path, mlp):
    lib, x, ref = mlp
    path = str(tmp_path / "mlp.so")
    lib.export_library(path)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    assert "graph.json" in names and "params.npz" in names
    assert not any(n.endswith((".pkl", ".pickle")) for n in names)
    loaded = tvm.runtime.load_module(path)
    assert loaded.get_graph_json() == lib.get_graph_json()
    np.testing.assert_allclose(_run(loaded, x).get_output(0).numpy(), ref, rtol=1e-4,
                               atol=1e-6)


def test_loaded_kernels_go_through_the_pipeline_they_were_built_with(tmp_path):
    """The archive records each kernel's IR pipeline level (vectorized kernels skip LLVM's loop
    passes), and loading compiles its IR through that level again: the same machine code as the
    build, not what LLVM's full pipeline makes of it. An archive without the record (written
    before it existed) loads at the full pipeline."""
    import json

    from minitvm.runtime import module as rtmod

    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 32, 14, 14))
    w = relay.const(rng.standard_normal((64, 32, 1, 1)).astype("float32"))
    y = relay.nn.relu(relay.nn.conv2d(x, w, kernel_size=(1, 1)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    built = {n: k.compiled.opt for n, k in lib.get_lib().kernels.items() if k.kind == "native"}
    assert built and set(built.values()) != {3}  # (the conv's kernel skips the loop passes)
    path = tmp_path / "conv.so"
    lib.export_library(str(path))
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(members["minitvm_lib.json"])
    assert {n: meta["kernels"][n]["pipeline"] for n in built} == built
    loaded = tvm.runtime.load_module(str(path))
    assert {n: loaded.get_lib().kernels[n].compiled.opt for n in built} == built
    xv = rng.standard_normal((1, 32, 14, 14)).astype("float32")
    outs = []
    for f in (lib, loaded):
        m = graph_executor.GraphModule(f["default"](tvm.cpu(0)))
        m.set_input("x", xv)
        m.run()
        outs.append(m.get_output(0).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    for info in meta["kernels"].values():
        info.pop("pipeline", None)
    meta["meta_sha256"] = rtmod._meta_digest(meta)
    members["minitvm_lib.json"] = json.dumps(meta).encode()
    old = tmp_path / "old.so"
    with zipfile.ZipFile(old, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    legacy = tvm.runtime.load_module(str(old))
    assert {legacy.get_lib().kernels[n].compiled.opt for n in built} == {3}


def test_export_with_numpy_fallback(tmp_path, mlp):
    mod, params = testing.mlp.get_workload(batch_size=3)
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.use_native": False}):
        lib = relay.build(mod, target="llvm", params=params)
    path = str(tmp_path / "mlp_np.tar")
    lib.export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert loaded.get_lib().fallback_functions
    _, x, ref = mlp
    np.testing.assert_allclose(_run(loaded, x).get_output(0).numpy(), ref, rtol=1e-4,
                               atol=1e-6)


def test_damaged_and_foreign_files(tmp_path, mlp):
    lib, _, _ = mlp
    foreign = tmp_path / "foreign.so"
    foreign.write_bytes(b"\x7fELF not really")
    with pytest.raises(ValueError, match="not a minitvm library"):
        tvm.runtime.load_module(str(foreign))
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(ValueError, match="minitvm_lib.json is missing"):
        tvm.runtime.load_module(str(other_zip))
    good = tmp_path / "good.so"
    lib.export_library(str(good))
    data = good.read_bytes()
    cut = tmp_path / "cut.so"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a minitvm library|damaged"):
        tvm.runtime.load_module(str(cut))
    with pytest.raises(ValueError, match="no such file"):
        tvm.runtime.load_module(str(tmp_path / "missing.so"))


@pytest.mark.parametrize("kind", ["graph", "vm", "aot"])
def test_create_executor_kinds_use_built_code(kind, mlp):
    mod, params = testing.mlp.get_workload(batch_size=3)
    _, x, ref = mlp
    ex = relay.create_executor(kind, mod=mod, params=params)
    out = ex.evaluate()(x)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-6)
    assert ex.factory is not None and ex.build_error is None


def test_executor_falls_back_for_control_flow():
    x = relay.var("x", shape=(2,))
    body = relay.If(relay.sum(x) > relay.const(0.0), x * relay.const(2.0), x)
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    ex = relay.create_executor("graph", mod=mod)
    out = ex.evaluate()(np.array([1.0, 2.0], "float32"))
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(ex.evaluate()(np.array([-1.0, -2.0], "float32")).numpy(),
                               [-1.0, -2.0])
    # the interpreter ran it, and the executor says why the graph build was refused
    assert ex.factory is None
    assert "cannot run If" in str(ex.build_error)


def test_tuple_outputs():
    x = relay.var("x", shape=(4, 5))
    out = relay.Tuple([relay.exp(x), relay.sum(x, axis=1)])
    mod = tvm.IRModule.from_expr(relay.Function([x], out))
    xv = np.random.default_rng(0).standard_normal((4, 5)).astype("float32")
    res = relay.create_executor("graph", mod=mod).evaluate()(xv)
    np.testing.assert_allclose(res[0].numpy(), np.exp(xv), rtol=1e-5)
    np.testing.assert_allclose(res[1].numpy(), xv.sum(1), rtol=1e-5, atol=1e-6)


def test_memory_plan_reuses_storage():
    import json

    from minitvm.backend.memory_plan import peak_bytes

    # (a stem and two residual blocks: a chain of convs with skip connections, as in ResNet-18,
    # at 5 kernels rather than ResNet-18's 28)
    mod, params = testing.resnet.get_small_workload(image_shape=(3, 32, 32), channels=8,
                                                    num_blocks=2)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    g = json.loads(lib.get_graph_json())
    sids = g["attrs"]["storage_id"][1]
    assert len(set(sids)) < len(sids)  # intermediates share storage
    shapes, dtypes = g["attrs"]["shape"][1], g["attrs"]["dltype"][1]
    total = sum(int(np.prod(s)) * np.dtype(d).itemsize for s, d in zip(shapes, dtypes))
    assert peak_bytes(g, include_params=True) < total


def test_deep_chain_builds_and_runs():
    """A 100,000-op chain builds and runs at the default recursion limit."""
    n = 100_000
    x = relay.var("x", shape=(2, 3))
    y = x
    c = relay.const(np.float32(0.5))
    for i in range(n):
        y = relay.add(y, c) if i % 2 == 0 else relay.nn.relu(y)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    xv = np.full((2, 3), -1.0, "float32")
    out = _run_named(lib, "x", xv)
    np.testing.assert_allclose(out, np.full((2, 3), 0.5 * n / 2, "float32"), rtol=1e-4)


def _run_named(lib, name, x):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input(name, x)
    m.run()
    return m.get_output(0).numpy()


def test_run_before_inputs_are_set_is_an_error(mlp):
    lib, x, ref = mlp
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    with pytest.raises(ValueError, match=r"run: input\(s\) \['data'\] were never set"):
        m.run()
    with pytest.raises(ValueError, match="get_input: the graph has no input named 'nope'"):
        m.get_input("nope")
    assert m.get_input_index("data") == 0 and m.get_input_index("nope") == -1
    m.get_input("data").copyfrom(x)  # filling the exposed input storage counts as setting it
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-6)
