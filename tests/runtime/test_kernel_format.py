"""Numpy-fallback kernels in exported libraries: saved in their dialect's registered text
format, read back by it, and clear errors for a format nobody registered."""

import json
import zipfile

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import module as rt_module
from minitvm.runtime.module import Kernel, register_kernel_format

SHAPE = (4, 6)


def _mixed_mod():
    """exp (native) and relu * 2 -> matrix_set_diag (its compute taken away by the tests: a numpy
    fallback)."""
    x = relay.var("x", shape=SHAPE)
    ones = relay.const(np.ones(min(SHAPE), "float32"))
    out = relay.Tuple([relay.exp(x),
                       relay.matrix_set_diag(relay.nn.relu(x) * relay.const(2.0), ones)])
    return tvm.IRModule.from_expr(relay.Function([x], out))


def _build(mod, config=None):
    with tvm.transform.PassContext(opt_level=3, config=config or {}):
        return relay.build(mod, target="llvm")


def _run(factory, xv):
    m = graph_executor.GraphModule(factory["default"](tvm.cpu(0)))
    m.run(x=xv)
    return [m.get_output(k).numpy() for k in range(m.get_num_outputs())]


@pytest.fixture(scope="module")
def xv():
    return np.random.default_rng(0).standard_normal(SHAPE).astype("float32")


def _reference(xv):
    return [np.exp(xv), _diag_set(np.maximum(xv, 0) * 2)]


def _diag_set(y):
    y = y.copy()
    np.fill_diagonal(y, 1.0)
    return y


def _check(outs, xv):
    want = _reference(xv)
    assert len(outs) == 2
    np.testing.assert_allclose(outs[0], want[0], rtol=1e-5)
    np.testing.assert_array_equal(outs[1], want[1])


@pytest.mark.parametrize("config", [{}, {"relay.backend.use_native": False}],
                         ids=["op-without-compute", "use_native-off"])
@pytest.mark.numpy_fallback("fallback kernels on purpose: matrix_set_diag has no compute")
@pytest.mark.usefixtures("matrix_set_diag_without_compute")
def test_fallback_kernels_round_trip(tmp_path, xv, config):
    lib = _build(_mixed_mod(), config)
    fallback = lib.get_lib().fallback_functions
    assert fallback and lib.get_lib().entry is None
    if not config:
        assert lib.get_lib().native_functions  # a mixed library
        assert any("matrix_set_diag" in why for why in fallback.values())
    _check(_run(lib, xv), xv)
    path = str(tmp_path / "mixed.so")
    lib.export_library(path)
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        meta = json.loads(z.read("minitvm_lib.json"))
    for name in fallback:
        assert meta["kernels"][name]["format"] == "relay"
        assert f"kernels/{name}.relay" in names
    loaded = tvm.runtime.load_module(path)
    got = loaded.get_lib()
    assert got.fallback_functions == fallback  # names and reasons survive
    assert sorted(got.native_functions) == sorted(lib.get_lib().native_functions)
    for name in fallback:
        k = got.kernels[name]
        assert k.source_format == "relay" and k.run is not None
    _check(_run(loaded, xv), xv)


def _rewrite(src, dst, edit):
    """Copy archive ``src`` to ``dst``, passing every member through ``edit(name, data)``
    (returns ``(name, data)`` or None to drop it)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            res = edit(info.filename, zin.read(info.filename))
            if res is not None:
                zout.writestr(res[0], res[1])


def _retag(meta_bytes, fmt):
    meta = json.loads(meta_bytes)
    for info in meta["kernels"].values():
        if info["kind"] != "native":
            info["format"] = fmt
    return json.dumps(meta).encode()


@pytest.mark.numpy_fallback("fallback kernels on purpose: matrix_set_diag has no compute")
@pytest.mark.usefixtures("matrix_set_diag_without_compute")
def test_unregistered_format_in_a_library_is_a_clear_error(tmp_path):
    lib = _build(_mixed_mod())
    (name,) = lib.get_lib().fallback_functions
    good = tmp_path / "good.so"
    lib.export_library(str(good))

    def edit(fname, data):
        if fname == "minitvm_lib.json":
            return fname, _retag(data, "klingon")
        if fname == f"kernels/{name}.relay":
            return f"kernels/{name}.klingon", data
        return fname, data

    bad = tmp_path / "bad.so"
    _rewrite(good, bad, edit)
    with pytest.raises(ValueError, match="'klingon'") as err:
        tvm.runtime.load_module(str(bad))
    msg = str(err.value)
    assert name in msg and "bad.so" in msg and "no imported dialect" in msg


@pytest.mark.numpy_fallback("fallback kernels on purpose: matrix_set_diag has no compute")
@pytest.mark.usefixtures("matrix_set_diag_without_compute")
def test_format_whose_source_is_missing_is_a_clear_error(tmp_path):
    lib = _build(_mixed_mod())
    (name,) = lib.get_lib().fallback_functions
    good = tmp_path / "good.so"
    lib.export_library(str(good))
    bad = tmp_path / "bad.so"
    _rewrite(good, bad, lambda f, d: (f, _retag(d, "klingon")) if f == "minitvm_lib.json"
             else (f, d))  # the table says klingon, the archive holds the .relay text
    with pytest.raises(ValueError, match=f"kernel '{name}'.*klingon source is missing"):
        tvm.runtime.load_module(str(bad))


@pytest.mark.numpy_fallback("fallback kernels on purpose: matrix_set_diag has no compute")
@pytest.mark.usefixtures("matrix_set_diag_without_compute")
def test_damaged_fallback_source_is_a_clear_error(tmp_path):
    lib = _build(_mixed_mod())
    (name,) = lib.get_lib().fallback_functions
    good = tmp_path / "good.so"
    lib.export_library(str(good))
    bad = tmp_path / "bad.so"
    _rewrite(good, bad, lambda f, d: (f, b"this is not relay {") if f.endswith(".relay")
             else (f, d))
    with pytest.raises(ValueError, match=f"kernel '{name}': cannot read the fallback kernel"):
        tvm.runtime.load_module(str(bad))


@pytest.mark.numpy_fallback("fallback kernels on purpose: matrix_set_diag has no compute")
@pytest.mark.usefixtures("matrix_set_diag_without_compute")
def test_exporting_an_unregistered_fallback_format_is_a_clear_error(tmp_path):
    lib = _build(_mixed_mod())
    kernels = lib.get_lib().kernels
    (name,) = lib.get_lib().fallback_functions
    k = kernels[name]
    kernels[name] = Kernel(name, "fallback", reason=k.reason, source=k.source,
                           source_format="klingon", run=k.run)
    path = tmp_path / "out.so"
    with pytest.raises(ValueError, match=f"{name}.*'klingon' is not registered"):
        lib.export_library(str(path))
    assert list(tmp_path.iterdir()) == []  # nothing (not even a temporary) left behind
    # a fallback with no source format at all is refused the same way
    kernels[name] = Kernel(name, "fallback", reason=k.reason, run=k.run)
    with pytest.raises(ValueError, match=f"{name}.*is not registered"):
        lib.export_library(str(path))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.numpy_fallback("fallback kernels on purpose: matrix_set_diag has no compute")
@pytest.mark.usefixtures("matrix_set_diag_without_compute")
def test_a_registered_format_round_trips(tmp_path, xv):
    """A dialect's own format: its writer's text is what its reader gets back."""
    lib = _build(_mixed_mod())
    kernels = lib.get_lib().kernels
    (name,) = lib.get_lib().fallback_functions
    k = kernels[name]
    written, read = [], []

    def write(source):
        written.append(source)
        return "diag-of-2relu"

    def read_text(text):
        read.append(text)
        return text, lambda args: [_diag_set(np.maximum(args[0], 0) * 2)]

    kernels[name] = Kernel(name, "fallback", reason=k.reason, source=k.source,
                           source_format="test_fmt", run=k.run)
    register_kernel_format("test_fmt", write, read_text)
    try:
        path = str(tmp_path / "custom.so")
        lib.export_library(path)
        assert written == [k.source]
        with zipfile.ZipFile(path) as z:
            assert z.read(f"kernels/{name}.test_fmt").decode() == "diag-of-2relu"
        loaded = tvm.runtime.load_module(path)
        assert read == ["diag-of-2relu"]
        lk = loaded.get_lib().kernels[name]
        assert lk.source_format == "test_fmt" and lk.source == "diag-of-2relu"
        _check(_run(loaded, xv), xv)
    finally:
        rt_module._KERNEL_FORMATS.pop("test_fmt", None)
    with pytest.raises(ValueError, match="'test_fmt'"):
        tvm.runtime.load_module(path)
