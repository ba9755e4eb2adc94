"""Symbolic kernels saved as data (``vm/saved.py``): a warm ``relay.vm.compile`` (its kernels'
records on disk, nothing kept in process) schedules nothing, and an exported executable loads
them without lowering, scheduling or generating code, with the same numerics."""

import json

import numpy as np
import pytest
from vm_disk_cache import forget_compiled as _forget
from vm_disk_cache import own_disk_cache

import minitvm as tvm
from minitvm import relay
from minitvm.backend import compile as backend_compile
from minitvm.backend import parallel_compile
from minitvm.ir.fingerprint import fingerprint
from minitvm.relay.backend import build_cache
from minitvm.relay.backend.vm import exe_cache, saved, symbolic
from minitvm.relay.backend.vm.kernels import ShapeSpecializer, dynamic_kernel_counts
from minitvm.relay.backend.vm.saved import SavedFunction
from minitvm.relay.backend.vm.symbolic import SymbolicKernel
from minitvm.runtime import module as runtime_module
from minitvm.runtime.module import load_module
from minitvm.runtime.vm import Executable, VirtualMachine
from minitvm.tir import expr as E

_RNG = np.random.default_rng(0)
_W_CONV = _RNG.standard_normal((16, 8, 3, 3)).astype("float32")
_W_DENSE = _RNG.standard_normal((10, 16 * 16)).astype("float32")


def _conv_dense(batch):
    """A conv and a dense whose constant weights the symbolic kernels take packed."""
    x = relay.var("x", shape=(batch, 8, 4, 4), dtype="float32")
    y = relay.nn.relu(relay.nn.conv2d(x, relay.const(_W_CONV), kernel_size=(3, 3),
                                      padding=(1, 1), channels=16))
    y = relay.nn.dense(relay.nn.batch_flatten(y), relay.const(_W_DENSE))
    return tvm.IRModule.from_expr(relay.Function([x], y))


def _broadcast():
    """Two batches the kernel takes equal; a call where the second is 1 breaks that."""
    x = relay.var("x", shape=(relay.Any(), relay.Any(), 4), dtype="float32")
    y = relay.var("y", shape=(relay.Any(), 1, 4), dtype="float32")
    z = relay.nn.softmax(relay.exp(x) * relay.const(0.5))
    return tvm.IRModule.from_expr(relay.Function([x, y], relay.nn.relu(z + y)))


def _refused_dynamic():
    """An argwhere of a dynamic batch: its result's length depends on values, so the symbolic
    path refuses it and it is specialized per shape. (Scans, then sorts of the whole dynamic
    axis, then a top-k of a fixed k along it, which this test took before, are now one
    symbolic kernel.)"""
    x = relay.var("x", shape=(relay.Any(), 5), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function(
        [x], relay.argwhere(relay.greater(relay.exp(x), relay.const(1.0)))))


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty disk cache of its own, nothing kept in process; sequential compiles."""
    cache = own_disk_cache(tmp_path, monkeypatch)
    # (the kernels' records are what these tests check: whole executables not cached)
    with tvm.transform.PassContext(opt_level=3, config={parallel_compile.CONFIG_KEY: 1,
                                                        exe_cache.CONFIG_KEY: False}):
        yield cache
    _forget()


@pytest.fixture
def counted(monkeypatch):
    """Calls of the symbolic scheduler, of the code generator and of LLVM on a library's IR,
    from now on."""
    calls = {"schedule": 0, "codegen": 0, "llvm": 0}
    schedule, codegen = symbolic.schedule_symbolic_te, backend_compile.compile_prim_func
    compile_ir = runtime_module._compile_ir

    def count_llvm(*args, **kwargs):
        calls["llvm"] += 1
        return compile_ir(*args, **kwargs)

    monkeypatch.setattr(runtime_module, "_compile_ir", count_llvm)

    def count_schedule(*args, **kwargs):
        calls["schedule"] += 1
        return schedule(*args, **kwargs)

    def count_codegen(*args, **kwargs):
        calls["codegen"] += 1
        return codegen(*args, **kwargs)

    monkeypatch.setattr(symbolic, "schedule_symbolic_te", count_schedule)
    monkeypatch.setattr(backend_compile, "compile_prim_func", count_codegen)
    return calls


def _outputs(exe, *shapes):
    vm = VirtualMachine(exe, tvm.cpu())
    rng = np.random.default_rng(1)
    return [vm.run(rng.standard_normal(s).astype("float32")).numpy() for s in shapes]


def _symbolic_runs(exe):
    return [k.run for k in exe.kernels if isinstance(k.run, SymbolicKernel)]


def test_warm_compile_schedules_nothing(fresh_cache, counted):
    cold = relay.vm.compile(_conv_dense(relay.Any()), target="llvm")
    n = len(_symbolic_runs(cold))
    assert n >= 2 and counted["schedule"] == n and saved.STATS["writes"] >= n
    _forget()  # (a fresh process: only the disk remembers)
    hits, before = saved.STATS["hits"], dict(counted)
    warm = relay.vm.compile(_conv_dense(relay.Any()), target="llvm")
    assert counted == before  # neither scheduled nor generated again
    assert saved.STATS["hits"] - hits == n
    assert dynamic_kernel_counts(warm.kernels) == dynamic_kernel_counts(cold.kernels)
    def packs(exe):  # each kernel's weight transforms: position, kind and fields
        return [[(pos, type(f), vars(f)) for pos, f in sorted(r.kernel.input_packs.items())]
                for r in _symbolic_runs(exe)]

    assert packs(warm) == packs(cold)
    assert any(packs(warm)), "a weight is taken packed (its transform restored from the record)"
    shapes = [(1, 8, 4, 4), (3, 8, 4, 4)]
    for got, want in zip(_outputs(warm, *shapes), _outputs(cold, *shapes)):
        np.testing.assert_array_equal(got, want)


def test_refused_function_is_recorded_with_its_error(fresh_cache):
    relay.vm.compile(_refused_dynamic(), target="llvm")
    scheduled, hits = symbolic.STATS["scheduled"], saved.STATS["hits"]
    _forget()
    exe = relay.vm.compile(_refused_dynamic(), target="llvm")
    assert symbolic.STATS["scheduled"] == scheduled  # the refusal came from the record
    assert saved.STATS["hits"] > hits
    assert any(isinstance(k.run, ShapeSpecializer) for k in exe.kernels)
    vm = VirtualMachine(exe, tvm.cpu())
    for n in (2, 3):
        x = np.random.default_rng(n).standard_normal((n, 5)).astype("float32")
        np.testing.assert_array_equal(vm.run(x).numpy(), np.argwhere(np.exp(x) > 1))


def test_damaged_records_are_lowered_again(fresh_cache, counted):
    cold = relay.vm.compile(_conv_dense(relay.Any()), target="llvm")
    records = list((fresh_cache / "builds").glob("*.mtb"))
    assert records
    for p in records:
        p.write_bytes(p.read_bytes()[:100])
    _forget()
    scheduled = counted["schedule"]
    warm = relay.vm.compile(_conv_dense(relay.Any()), target="llvm")
    assert counted["schedule"] > scheduled
    for got, want in zip(_outputs(warm, (2, 8, 4, 4)), _outputs(cold, (2, 8, 4, 4))):
        np.testing.assert_array_equal(got, want)


def _export(exe, folder):
    code, lib = exe.save()
    lib.export_library(str(folder / "kernels.so"))
    return code, str(folder / "kernels.so")


def test_loaded_executable_compiles_nothing_and_computes_the_same(fresh_cache, tmp_path,
                                                                  counted):
    exe = relay.vm.compile(_conv_dense(relay.Any()), target="llvm")
    code, path = _export(exe, tmp_path)
    _forget()
    before = dict(counted)
    loaded = Executable.load_exec(code, load_module(path))
    assert counted == before  # no scheduling, no code generation, the build's machine code
    runs = _symbolic_runs(loaded)
    assert len(runs) == len(exe.kernels) and all(r.kernel.kind == "native" for r in runs)
    assert any(r.kernel.input_packs for r in runs)
    assert all(isinstance(r._spec_args[0], SavedFunction) and r._spec_args[0]._func is None
               for r in runs)  # (no Relay function parsed)
    shapes = [(1, 8, 4, 4), (4, 8, 4, 4)]
    for got, want in zip(_outputs(loaded, *shapes), _outputs(exe, *shapes)):
        np.testing.assert_array_equal(got, want)
    assert counted == before


def test_loaded_kernel_specializes_a_shape_its_typing_breaks(fresh_cache, tmp_path):
    exe = relay.vm.compile(_broadcast(), target="llvm")
    code, path = _export(exe, tmp_path)
    loaded = Executable.load_exec(code, load_module(path))
    vm = VirtualMachine(loaded, tvm.cpu())
    rng = np.random.default_rng(2)
    for n, s, m in ((2, 3, 2), (4, 2, 1)):  # the second: y's batch broadcast at 1
        xv = rng.standard_normal((n, s, 4)).astype("float32")
        yv = rng.standard_normal((m, 1, 4)).astype("float32")
        e = np.exp(xv) * 0.5
        sm = np.exp(e - e.max(-1, keepdims=True))
        want = np.maximum(sm / sm.sum(-1, keepdims=True) + yv, 0)
        np.testing.assert_allclose(vm.run(xv, yv).numpy(), want, rtol=1e-5, atol=1e-6)
    parsed = [r for r in _symbolic_runs(loaded) if r._fallback is not None]
    assert parsed and all(r._spec_args[0]._func is not None for r in parsed)


def test_saved_kernel_without_a_record_is_lowered_again(fresh_cache):
    exe = relay.vm.compile(_conv_dense(relay.Any()), target="llvm")
    kernel = next(k for k in exe.kernels if isinstance(k.run, SymbolicKernel))
    text = saved.saved_text(kernel)
    head, _, body = text.partition("\n")
    meta = json.loads(head[len(saved.SAVED_HEADER):])
    old = {"name": meta["name"], "const_inputs": meta["const_inputs"]}  # (as written before)
    old_text = f"{saved.SAVED_HEADER}{json.dumps(old)}\n{body[meta['ir_chars']:]}"
    _forget()
    scheduled = symbolic.STATS["scheduled"]
    _, run = saved.read_saved(old_text)
    assert isinstance(run, SymbolicKernel) and symbolic.STATS["scheduled"] == scheduled + 1
    _, again = saved.read_saved(text)
    assert symbolic.STATS["scheduled"] == scheduled + 1
    assert again.kernel.ir == run.kernel.ir
    assert saved.saved_text(Executable([], [], [kernel]).kernels[0]) == text


def test_saved_kernel_from_another_host_compiles_its_ir(fresh_cache, counted):
    exe = relay.vm.compile(_conv_dense(relay.Any()), target="llvm")
    kernel = next(k for k in exe.kernels if isinstance(k.run, SymbolicKernel))
    text = saved.saved_text(kernel)
    head, _, body = text.partition("\n")
    meta = json.loads(head[len(saved.SAVED_HEADER):])
    assert meta["object"] and meta["host"]
    meta["host"] = "another cpu"
    before = dict(counted)
    _, run = saved.read_saved(f"{saved.SAVED_HEADER}{json.dumps(meta)}\n{body}")
    assert counted["llvm"] == before["llvm"] + 1 and counted["schedule"] == before["schedule"]
    assert run.kernel.ir == kernel.run.kernel.ir and run.kernel.kind == "native"


def test_dimension_records_round_trip():
    n, m = E.Var("n", "int64"), E.Var("m", "int64")
    dims = [n, 7, E.FloorDiv(E.Mul(n, E.IntImm("int64", 8)), E.IntImm("int64", 48)),
            E.Max(E.Sub(m, E.IntImm("int64", 1)), E.IntImm("int64", 0)), E.Cast("int32", m)]
    index = {id(n): 0, id(m): 1}
    data = json.loads(json.dumps([saved._dim_data(d, index) for d in dims]))
    fresh = [E.Var("n", "int64"), E.Var("m", "int64")]
    back = [saved._dim_expr(d, fresh) for d in data]
    env_old, env_new = {id(n): 30, id(m): 5}, {id(fresh[0]): 30, id(fresh[1]): 5}
    assert [symbolic._eval_dim(d, env_new) for d in back] == \
        [symbolic._eval_dim(d, env_old) for d in dims] == [30, 7, 5, 4, 5]
    with pytest.raises(ValueError, match="is not a size of the kernel"):
        saved._dim_data(E.Var("k", "int64"), index)
    with pytest.raises(ValueError, match="bad dimension record"):
        saved._dim_expr(["var", 5], fresh)
    with pytest.raises(ValueError, match=f"not a version {saved.RECORD_VERSION} symbolic kernel record"):
        saved.restore({"version": 0})


def _outside_attribute(*args):
    """An op attribute whose code lives outside minitvm (this test module)."""


def test_records_stay_on_with_an_op_attribute_from_outside(fresh_cache):
    """A Relay op attribute registered from outside minitvm turns relay.build's whole-build
    cache off (no digest sees its code); the symbolic records stay on, each key holding the
    attributes of the ops its function calls: the scan's kernel is read back, the relu's (whose
    op carries the outside attribute) has no record and is lowered again."""
    op = tvm.ir.Op.get("nn.relu")
    own = op._attrs.get("FPrimalGradient")  # (the gradient: no build consults it)
    op.set_attr("FPrimalGradient", _outside_attribute, 99)
    try:
        assert build_cache.op_registry_digest(()) is None
        store = saved.RecordStore.open()
        assert store is not None and store.per_function_ops
        x = relay.var("x", shape=(relay.Any(), 5), dtype="float32")
        mod = tvm.IRModule.from_expr(relay.Function(
            [x], relay.Tuple([relay.cumsum(x, axis=1), relay.nn.relu(x)])))
        cold = relay.vm.compile(mod, target="llvm")
        assert dynamic_kernel_counts(cold.kernels) == {"symbolic": 2, "specialized": 0}
        _forget()
        scheduled, hits = symbolic.STATS["scheduled"], saved.STATS["hits"]
        warm = relay.vm.compile(mod, target="llvm")
        assert saved.STATS["hits"] - hits == 1  # the scan's record
        assert symbolic.STATS["scheduled"] - scheduled == 1  # the relu, lowered again
        xv = np.random.default_rng(2).standard_normal((3, 5)).astype("float32")
        for got, want in zip(VirtualMachine(warm, tvm.cpu()).run(xv),
                             VirtualMachine(cold, tvm.cpu()).run(xv), strict=True):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    finally:
        op.reset_attr("FPrimalGradient")
        if own is not None:
            op._attrs["FPrimalGradient"] = own
    assert ("nn.relu", "FPrimalGradient") not in build_cache.foreign_op_attrs()


def test_records_off_with_an_intrinsic_lowering_from_outside(fresh_cache):
    """An intrinsic's lowering registered from outside minitvm may change the code of any
    kernel, whichever ops its function calls: no records then."""
    tvm.ir.register_intrin_lowering("tir.vmscan_test_intrinsic", "llvm", f=_outside_attribute)
    op = tvm.ir.Op.get("tir.vmscan_test_intrinsic")
    try:
        assert saved.RecordStore.open() is None
    finally:
        op.reset_attr("llvm.FLowerIntrinsic")
    assert ("tir.vmscan_test_intrinsic", "llvm.FLowerIntrinsic") not in \
        build_cache.foreign_op_attrs()


def test_called_ops_walks_a_long_chain():
    """The ops a kernel's key reads (``fingerprint``'s, as it walks the function) are found
    iteratively: a 100,000-call chain at the default recursion limit."""
    x = relay.var("x", shape=(2,), dtype="float32")
    y = x
    for k in range(100_000):
        y = relay.exp(y) if k % 2 else relay.negative(y)
    called: set[str] = set()
    fingerprint(relay.Function([x], y), called)
    assert called == {"exp", "negative"}
