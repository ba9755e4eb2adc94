"""A build's ``-mcpu`` (``backend.target_cpu``): ``target="llvm -mcpu=haswell"`` on an AVX-512
host makes AVX2 code: the schedules' AVX2 choices, no AVX-512 instruction in the machine code (an
AVX2 CPU would stop on one with SIGILL), the same numbers; CPUs the host cannot run, or that are
no x86 name, leave the host's code; the caches keep the two kinds of code apart."""

import re
import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.backend import target_cpu
from minitvm.contrib import graph_executor
from minitvm.runtime import jit
from minitvm.schedule import common, knobs

pytestmark = pytest.mark.skipif(not jit.host_has("avx2", "fma"),
                                reason="the host has no AVX2: no AVX2 code runs here")

# instructions, registers and operand forms only AVX-512 has (EVEX: zmm, mask registers,
# registers 16-31, broadcasts, VNNI, VBMI, ...)
AVX512 = re.compile(r"zmm|%k[0-7]\b|[xy]mm(1[6-9]|2[0-9]|3[01])\b|\{1to|vpdpbusd|vpdpwssd|"
                    r"vpermi2|vpermt2|vpternlog|vscalef|vrndscale|vcompress|vexpand|kmov|"
                    r"vpmovm2|2m\s|vcvtt?ps2udq|vcvtudq2ps")
HOST_AVX512 = jit.host_has("avx512f")


def _build(fn, target):
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(fn), target=target)


def _run(lib, inputs):
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, v in inputs.items():
        g.set_input(k, v)
    g.run()
    return g.get_output(0).numpy()


def _asm(lib, mcpu=None):
    """Machine code of every native kernel of ``lib``, generated as its build generated it."""
    cpu = target_cpu.codegen_cpu(mcpu) if mcpu else None
    parts = []
    for k in lib.get_lib().kernels.values():
        if k.kind == "native" and k.ir:
            if cpu is None:
                parts.append(jit.assembly(k.ir, getattr(k.compiled, "opt", 3)))
            else:
                with jit.generating_for(*cpu):
                    parts.append(jit.assembly(k.ir, getattr(k.compiled, "opt", 3)))
    assert parts, "no native kernel"
    return "\n".join(parts)


def _avx512_lines(asm: str) -> list[str]:
    return [ln.strip() for ln in asm.splitlines()
            if AVX512.search(ln) and not ln.lstrip().startswith((".", "#"))]


def _np_conv(x, w, groups=1):
    """numpy's conv2d of NCHW ``x`` and OIHW ``w``, stride 1, padding 1 (int64 for integers)."""
    acc = "int64" if x.dtype.kind in "ui" else "float64"
    xp = np.pad(x.astype(acc), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
    if groups == 1:
        return np.einsum("nchwij,ocij->nohw", win, w.astype(acc))
    return np.einsum("nchwij,cij->nchw", win, w[:, 0].astype(acc))


def _conv(rng):
    x = relay.var("x", shape=(1, 8, 10, 10))
    w = relay.const(rng.standard_normal((16, 8, 3, 3)).astype("float32"))
    b = relay.const(rng.standard_normal(16).astype("float32"))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    return relay.Function([x], y), {"x": rng.standard_normal((1, 8, 10, 10)).astype("float32")}


def _dense(rng):
    x = relay.var("x", shape=(6, 64))
    w = relay.const(rng.standard_normal((40, 64)).astype("float32"))
    return relay.Function([x], relay.nn.dense(x, w)), \
        {"x": rng.standard_normal((6, 64)).astype("float32")}


def _depthwise(rng):
    x = relay.var("x", shape=(1, 24, 12, 12))
    w = relay.const(rng.standard_normal((24, 1, 3, 3)).astype("float32"))
    y = relay.clip(relay.nn.conv2d(x, w, padding=(1, 1), groups=24), 0.0, 6.0)
    return relay.Function([x], y), {"x": rng.standard_normal((1, 24, 12, 12)).astype("float32")}


def _pool(rng):
    x = relay.var("x", shape=(1, 16, 14, 14))
    y = relay.add(relay.nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1)),
                  relay.nn.avg_pool2d(x, (3, 3), (2, 2), padding=(1, 1)))
    return relay.Function([x], y), {"x": rng.standard_normal((1, 16, 14, 14)).astype("float32")}


def _int8(rng):
    x = relay.var("x", shape=(1, 8, 6, 6), dtype="uint8")
    w = relay.const(rng.integers(-128, 128, (16, 8, 3, 3)).astype("int8"))
    y = relay.nn.conv2d(x, w, padding=(1, 1), out_dtype="int32")
    d = relay.var("d", shape=(4, 64), dtype="uint8")
    wd = relay.const(rng.integers(-128, 128, (16, 64)).astype("int8"))
    z = relay.nn.dense(d, wd, out_dtype="int32")
    out = relay.add(relay.sum(y, axis=[2, 3]), relay.sum(z, axis=[0], keepdims=True))
    return relay.Function([x, d], out), {
        "x": rng.integers(0, 256, (1, 8, 6, 6)).astype("uint8"),
        "d": rng.integers(0, 256, (4, 64)).astype("uint8")}


KERNELS = {"conv": _conv, "dense": _dense, "depthwise": _depthwise, "pool": _pool,
           "int8": _int8}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_haswell_build_has_no_avx512_and_matches_the_host_build(name):
    fn, inputs = KERNELS[name](np.random.default_rng(0))
    lib = _build(fn, "llvm -mcpu=haswell")
    bad = _avx512_lines(_asm(lib, "haswell"))
    assert not bad, f"AVX-512 in an AVX2 build of {name}: {bad[:5]}"
    got = _run(lib, inputs)
    want = WANT[name](fn, inputs)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    else:
        np.testing.assert_array_equal(got, want)


def _want_conv(fn, inputs):
    body = fn.body.args[0]  # relu(bias_add(conv, b))
    conv, b = body.args[0], body.args[1].data.numpy()
    y = _np_conv(inputs["x"], conv.args[1].data.numpy()) + b[None, :, None, None]
    return np.maximum(y, 0)


def _want_int8(fn, inputs):
    y, z = fn.body.args[0].args[0], fn.body.args[1].args[0]
    conv = _np_conv(inputs["x"], y.args[1].data.numpy()).sum(axis=(2, 3))
    dense = (inputs["d"].astype("int64") @ z.args[1].data.numpy().astype("int64").T).sum(0)
    return conv + dense[None]


WANT = {
    "conv": _want_conv,
    "dense": lambda fn, i: i["x"].astype("float64") @ fn.body.args[1].data.numpy().T,
    "depthwise": lambda fn, i: np.clip(_np_conv(i["x"], fn.body.args[0].args[1].data.numpy(),
                                                groups=24), 0, 6),
    "pool": lambda fn, i: _run(_build(fn, "llvm"), i),  # (the host's build: padded windows)
    "int8": _want_int8,
}


@pytest.mark.skipif(not HOST_AVX512, reason="the host has no AVX-512 to leave out")
def test_the_host_build_of_the_same_kernels_uses_avx512():
    """The check above finds AVX-512 where it is: the host's build of the dense kernel (zmm
    registers)."""
    fn, _ = _dense(np.random.default_rng(0))
    assert _avx512_lines(_asm(_build(fn, "llvm")))


def test_numbers_of_a_haswell_dense_and_pool_against_numpy():
    rng = np.random.default_rng(1)
    fn, inputs = _dense(rng)
    w = fn.body.args[1].data.numpy()
    got = _run(_build(fn, "llvm -mcpu=haswell"), inputs)
    np.testing.assert_allclose(got, inputs["x"] @ w.T, rtol=1e-5, atol=1e-4)
    x = relay.var("x", shape=(1, 4, 8, 8))
    xv = rng.standard_normal((1, 4, 8, 8)).astype("float32")
    got = _run(_build(relay.Function([x], relay.nn.max_pool2d(x, (2, 2), (2, 2))),
                      "llvm -mcpu=znver3"), {"x": xv})
    np.testing.assert_array_equal(got, xv.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5)))


def test_inside_the_scope_the_schedules_see_the_target_isa_and_table():
    cpu = target_cpu.codegen_cpu("haswell")
    with target_cpu.for_target("llvm -mcpu=haswell"):
        assert jit.codegen_target() == cpu
        assert common.vector_isa() == "avx2"
        assert not jit.host_has("avx512f")
        assert jit.host_cpu()[0] == "haswell"
        table = knobs.builtin_table()
        avx2 = knobs.builtin_table("avx2")
        assert (table is None) == (avx2 is None)
        if table is not None:
            assert table.entries == avx2.entries
    assert jit.codegen_target() is None
    assert jit.host_cpu() == jit.real_host_cpu()


@pytest.mark.skipif(not HOST_AVX512, reason="the host's code is AVX2 code already")
def test_host_and_haswell_builds_in_one_process_keep_their_own_kernels():
    """The in-process kernel caches are keyed by the CPU: a haswell build after the host's build
    of the same graph (and the host's after it) compiles its own code."""
    fn, inputs = _dense(np.random.default_rng(2))
    host = _build(fn, "llvm")
    has = _build(fn, "llvm -mcpu=haswell")
    again = _build(fn, "llvm")
    assert _avx512_lines(_asm(host)) and _avx512_lines(_asm(again))
    assert not _avx512_lines(_asm(has, "haswell"))
    assert {k.ir for k in has.get_lib().kernels.values()} != \
        {k.ir for k in host.get_lib().kernels.values()}


def test_limited_features_turn_later_isas_off():
    host = "+avx2,+fma,+avx512f,+avx512bw,+avx512vnni,+amx-tile,-sse4a,+avxvnni"
    assert target_cpu.limited_features(host, "avx2") == \
        "+avx2,+fma,-avx512f,-avx512bw,-avx512vnni,-amx-tile,-sse4a,-avxvnni"
    assert target_cpu.limited_features(host, "avx512") == \
        "+avx2,+fma,+avx512f,+avx512bw,-avx512vnni,-amx-tile,-sse4a,-avxvnni"
    assert target_cpu.limited_features(host, "vnni") == \
        "+avx2,+fma,+avx512f,+avx512bw,+avx512vnni,-amx-tile,-sse4a,+avxvnni"


@pytest.mark.parametrize("mcpu, cls", [("haswell", "avx2"), ("znver3", "avx2"),
                                       ("skylake", "avx2"), ("skylake-avx512", "avx512"),
                                       ("cascadelake", "vnni"), ("znver4", "vnni"),
                                       ("alderlake", "avx2"), ("sandybridge", None),
                                       ("cortex-a72", None), ("", None)])
def test_isa_class(mcpu, cls):
    assert target_cpu.isa_class(mcpu) == cls


def test_cpus_the_host_cannot_run_or_does_not_know_leave_the_host_code(monkeypatch):
    monkeypatch.setattr(jit, "real_host_cpu", lambda: ("haswell", "+avx,+avx2,+fma,-avx512f"))
    with pytest.warns(UserWarning, match=r"-mcpu=skylake-avx512: this host \(haswell\) lacks"):
        assert target_cpu.codegen_cpu("skylake-avx512") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert target_cpu.codegen_cpu("haswell") is None  # the host's own name
        assert target_cpu.codegen_cpu("cortex-a72") is None
        assert target_cpu.codegen_cpu("") is None
        assert target_cpu.codegen_cpu("znver3") == ("znver3", "+avx,+avx2,+fma,-avx512f")


def test_relax_build_and_the_relay_vm_honour_the_mcpu_too():
    from minitvm import relax
    from minitvm.relax import op as R
    from minitvm.runtime import vm as runtime_vm

    rng = np.random.default_rng(3)
    w = rng.standard_normal((64, 40)).astype("float32")
    xv = rng.standard_normal((6, 64)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo((6, 64), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(R.matmul(x, relax.const(w)))
        bb.emit_func_output(y)
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(bb.get(), "llvm -mcpu=haswell")
    cpu = target_cpu.codegen_cpu("haswell")
    with jit.generating_for(*cpu):
        asm = "\n".join(jit.assembly(k.ir, getattr(k.compiled, "opt", 3))
                        for k, _ in ex.kernels.values() if k.ir)
    assert asm and not _avx512_lines(asm)
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(xv)).numpy()
    np.testing.assert_allclose(got, xv @ w, rtol=1e-4, atol=1e-4)

    fn, inputs = _dense(rng)
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(tvm.IRModule.from_expr(fn), target="llvm -mcpu=haswell")
    with jit.generating_for(*cpu):
        asm = "\n".join(jit.assembly(k.ir, getattr(k.compiled, "opt", 3))
                        for k in exe.get_lib().kernels.values() if k.kind == "native" and k.ir)
    assert asm and not _avx512_lines(asm)
    got = runtime_vm.VirtualMachine(exe, tvm.cpu()).invoke("main", inputs["x"]).numpy()
    np.testing.assert_allclose(got, WANT["dense"](fn, inputs), rtol=1e-4, atol=1e-4)


def test_apply_history_best_lays_the_records_over_the_target_isa_table():
    from minitvm import tune

    avx2 = knobs.builtin_table("avx2")
    if avx2 is None:
        pytest.skip("no built-in AVX2 table")
    ctx = tune.apply_history_best([], target="llvm -mcpu=haswell")
    assert ctx.table.entries == avx2.entries


@pytest.mark.parametrize("c,o,hw,winograd", [(64, 16, 16, False), (32, 32, 16, True)])
def test_haswell_3x3_convs_take_the_avx2_winograd_default(c, o, hw, winograd):
    """AVX2's ``conv_winograd.DIRECT_SMALL_OUTPUT``: 64->16 at 16x16 direct, 32->32 Winograd;
    both match numpy."""
    from minitvm.tir import stmt as S
    from minitvm.tir.stmt_functor import walk_stmts

    rng = np.random.default_rng(4)
    x = relay.var("x", shape=(1, c, hw, hw))
    wv = rng.standard_normal((o, c, 3, 3)).astype("float32")
    fn = relay.Function([x], relay.nn.conv2d(x, relay.const(wv), padding=(1, 1)))
    lib = _build(fn, "llvm -mcpu=haswell")
    (k,) = [k for n, k in lib.get_lib().kernels.items() if "conv2d" in n]
    assert any(isinstance(s, S.DeclBuffer) and s.buffer.name == "wg_v"
               for s in walk_stmts(k.prim_func.body)) == winograd
    xv = rng.standard_normal((1, c, hw, hw)).astype("float32")
    np.testing.assert_allclose(_run(lib, {"x": xv}), _np_conv(xv, wv), rtol=1e-4, atol=1e-3)


def test_kernels_lowered_after_the_build_keep_its_mcpu():
    """A Relay VM kernel compiled at run time (a per-shape specialization, at its first call with
    new shapes) is made for the build's -mcpu, outside the build's scope: the lowering options
    carry the CPU and ``backend.compile.made_for`` enters it."""
    from minitvm.relay.backend.vm.kernels import ShapeSpecializer
    from minitvm.runtime import vm as runtime_vm

    cpu = target_cpu.codegen_cpu("haswell")
    x = relay.var("x", shape=(relay.Any(), 12))
    fn = relay.Function([x], relay.reshape(x * relay.const(2.0), relay.shape_of(x)))
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(tvm.IRModule.from_expr(fn), target="llvm -mcpu=haswell")
    (spec,) = [k.run for k in exe.get_lib().kernels.values() if isinstance(k.run, ShapeSpecializer)]
    assert spec.options.cpu == cpu
    xv = np.arange(36, dtype="float32").reshape(3, 12)
    got = runtime_vm.VirtualMachine(exe, tvm.cpu()).invoke("main", xv).numpy()
    np.testing.assert_array_equal(got, xv * 2)

    # a specialization with vector work (a conv of a run-time batch), lowered lazily with those
    # options outside any -mcpu scope: AVX2's code, not the host's (its options without the CPU)
    import dataclasses

    rng = np.random.default_rng(5)
    wv = rng.standard_normal((16, 8, 3, 3)).astype("float32")
    d = relay.var("d", shape=(relay.Any(), 8, 10, 10))
    conv = relay.Function([d], relay.nn.relu(relay.nn.conv2d(d, relay.const(wv), padding=(1, 1))))
    conv = relay.transform.InferType()(tvm.IRModule.from_expr(conv))["main"]
    conv = relay.Function(conv.params, conv.body, attrs=tvm.ir.make_node("DictAttrs", Primitive=1))
    conv = relay.transform.InferType()(tvm.IRModule.from_expr(conv))["main"]
    dv = rng.standard_normal((2, 8, 10, 10)).astype("float32")
    irs = {}
    for name, options in [("haswell", spec.options),
                          ("host", dataclasses.replace(spec.options, cpu=None))]:
        lazy = ShapeSpecializer(conv, f"lazy_conv_{name}", options)
        assert jit.codegen_target() is None
        (out,) = lazy([dv])
        np.testing.assert_allclose(out, np.maximum(_np_conv(dv, wv), 0), rtol=1e-4, atol=1e-3)
        ((kernel, _),) = lazy.cache.values()
        irs[name] = kernel.ir
    assert irs["haswell"] != irs["host"]
    assert "<8 x float>" in irs["haswell"] and "<32 x float>" not in irs["haswell"]


def test_tuning_for_an_mcpu_tunes_its_kernels_and_its_records_serve_its_builds():
    """``extract_tasks`` for ``llvm -mcpu=haswell`` finds the workloads relay.build makes for
    it (NCHW convs with AVX2's knob spaces; it found none: it optimized for the -mcpu, whose x86
    rule re-blocks convs into ops that have no kernel here), the records carry the CPU the code
    was made for, and a build for the host's vector width does not take AVX2's knobs."""
    from minitvm import tune
    from minitvm.tune.runner import MeasureResult

    fn, _ = _conv(np.random.default_rng(6))
    mod = tvm.IRModule.from_expr(fn)
    tasks = tune.extract_tasks(mod, target="llvm -mcpu=haswell")
    assert [t.workload[0] for t in tasks] == ["conv2d_nchw"]
    assert all(t.target == "llvm -mcpu=haswell" for t in tasks)
    from minitvm.tune.builtin import declared_space

    with jit.generating_for(*target_cpu.codegen_cpu("haswell")):  # (AVX2's register tiles)
        assert [t.space for t in tasks] == [declared_space(t.workload) for t in tasks]
    if HOST_AVX512:  # (the host's differ)
        assert [t.space for t in tasks] != [declared_space(t.workload) for t in tasks]

    class Scripted:  # a cost per candidate, in this process: the records are what is checked
        def run(self, task, candidates):
            return [MeasureResult([1e-3 / (1 + i)]) for i in range(len(candidates))]

    db = tune.tune_tasks(tasks, None, trials=3, runner=Scripted(), progress="none", confirm=0)
    assert len(db) == 3 * len(tasks) and {r.cpu for r in db} == {"haswell"}
    haswell = tune.knob_table(db, "llvm -mcpu=haswell")
    assert set(haswell.entries) == {t.key for t in tasks}
    if HOST_AVX512:
        assert tune.knob_table(db, "llvm").entries == {}


@pytest.mark.skipif(not HOST_AVX512, reason="the host has no AVX-512 to turn off")
def test_mattr_turning_avx512_off_builds_avx2_code():
    """``llvm -mattr=-avx512f`` keeps the host CPU but makes AVX2 code (every AVX-512 feature
    off with it, as LLVM does), as ``-mcpu=haswell`` does; the numbers are the same."""
    cpu = target_cpu.codegen_cpu("", ["-avx512f"])
    assert cpu is not None and cpu[0] == jit.real_host_cpu()[0]
    assert not [f for f in cpu[1].split(",") if f.startswith("+avx512")]
    fn, inputs = _conv(np.random.default_rng(7))
    lib = _build(fn, "llvm -mattr=-avx512f")
    with jit.generating_for(*cpu):
        asm = "\n".join(jit.assembly(k.ir, getattr(k.compiled, "opt", 3))
                        for k in lib.get_lib().kernels.values() if k.kind == "native" and k.ir)
    assert asm and not _avx512_lines(asm)
    np.testing.assert_allclose(_run(lib, inputs), _want_conv(fn, inputs), rtol=1e-4, atol=1e-4)


def test_mattr_entries_the_host_cannot_run_or_kernels_need_are_left_out():
    host = "+avx,+avx2,+fma,+sse4.2,+avx512f,+avx512vl,+avx512vnni,-amx-tile"
    with pytest.warns(UserWarning, match="lacks amx-tile"):
        assert target_cpu.with_mattr(host, host, ["+amx-tile"]) == host
    with pytest.warns(UserWarning, match="need avx2"):
        assert target_cpu.with_mattr(host, host, ["-avx2"]) == host
    with pytest.warns(UserWarning, match="not '\\+feature'"):
        assert target_cpu.with_mattr(host, host, ["avx2"]) == host
    off = target_cpu.with_mattr(host, host, ["-avx512f"])
    assert off == "+avx,+avx2,+fma,+sse4.2,-avx512f,-avx512vl,-avx512vnni,-amx-tile"
    assert target_cpu.with_mattr(host, host, ["-avx512vnni"]) == \
        "+avx,+avx2,+fma,+sse4.2,+avx512f,+avx512vl,-avx512vnni,-amx-tile"
    assert target_cpu.codegen_cpu("", ["+avx2"]) is None  # (nothing changes: the host's code)


@pytest.mark.skipif(not HOST_AVX512, reason="the host has no AVX-512 to turn off")
def test_records_tuned_under_mattr_carry_their_vector_isa_and_serve_only_its_builds():
    """Records of code made with ``-mattr=-avx512f`` name the host CPU with the code's ISA
    (``"rocketlake/avx2"``; they named the host CPU alone, so an AVX-512 build of the host took
    AVX2-tuned knobs and the reverse); inside that scope the CPU's own entries (measured as
    AVX-512 code) do not apply, the AVX2 table does."""
    from minitvm import tune
    from minitvm.tune.runner import MeasureResult

    host = jit.real_host_cpu()[0]
    assert target_cpu.code_cpu_name("llvm") == host
    assert target_cpu.code_cpu_name("llvm -mattr=-avx512f") == f"{host}/avx2"
    assert target_cpu.same_vector_isa(f"{host}/avx2", "haswell")
    assert not target_cpu.same_vector_isa(f"{host}/avx2", host)
    with target_cpu.for_target("llvm -mattr=-avx512f"):
        assert common.vector_isa() == "avx2" and common.own_isa_cpu() is None
        assert common.host_key({host: 1, "avx2": 2, "avx512": 3}) == "avx2"
        assert knobs.builtin_table().entries == knobs.builtin_table("avx2").entries
    assert common.own_isa_cpu() == host

    fn, _ = _conv(np.random.default_rng(8))
    tasks = tune.extract_tasks(tvm.IRModule.from_expr(fn), target="llvm -mattr=-avx512f")

    class Scripted:  # a cost per candidate, in this process: the records are what is checked
        def run(self, task, candidates):
            return [MeasureResult([1e-3 / (1 + i)]) for i in range(len(candidates))]

    db = tune.tune_tasks(tasks, None, trials=2, runner=Scripted(), progress="none", confirm=0)
    assert {r.cpu for r in db} == {f"{host}/avx2"}
    assert set(tune.knob_table(db, "llvm -mattr=-avx512f").entries) == {t.key for t in tasks}
    assert set(tune.knob_table(db, "llvm -mcpu=haswell").entries) == {t.key for t in tasks}
    assert tune.knob_table(db, "llvm").entries == {}


def test_a_loaded_vm_executable_keeps_the_cpu_its_build_made_code_for(tmp_path, monkeypatch):
    """A Relay VM executable built for ``-mcpu=haswell``, saved and loaded: its symbolic kernels
    load the build's AVX2 code and its per-shape kernels are lowered for haswell at their first
    call (they were the loading host's code: a loaded executable computed other numbers than
    the one that saved it); a record naming features this host lacks leaves the host's code."""
    from minitvm.relay.backend.vm.kernels import ShapeSpecializer
    from minitvm.relay.backend.vm.symbolic import SymbolicKernel
    from minitvm.runtime import load_module
    from minitvm.runtime import module as runtime_module
    from minitvm.runtime import vm as runtime_vm

    cpu = target_cpu.codegen_cpu("haswell")
    rng = np.random.default_rng(9)
    wv = rng.standard_normal((8, 12)).astype("float32")
    x = relay.var("x", shape=(relay.Any(), 12))
    y = relay.nn.relu(relay.nn.dense(x, relay.const(wv)))
    fn = relay.Function([x], relay.Tuple([y, relay.reshape(x * relay.const(2.0),
                                                          relay.shape_of(x))]))
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(tvm.IRModule.from_expr(fn), target="llvm -mcpu=haswell")
    code, lib = exe.save()
    lib.export_library(str(tmp_path / "k.so"))
    made_in = []  # (the CPU each symbolic kernel's code is loaded or compiled under)

    def spy(real):
        def call(*args, **kwargs):
            made_in.append(jit.host_cpu())
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(jit, "load_object", spy(jit.load_object))
    monkeypatch.setattr(runtime_module, "_compile_ir", spy(runtime_module._compile_ir))
    loaded = runtime_vm.Executable.load_exec(code, load_module(str(tmp_path / "k.so")))
    runs = [k.run for k in loaded.get_lib().kernels.values()]
    symbolic = [r for r in runs if isinstance(r, SymbolicKernel)]
    special = [r for r in runs if isinstance(r, ShapeSpecializer)]
    assert symbolic and special
    assert all(r._spec_args[2].cpu == cpu for r in symbolic)
    assert all(r.options.cpu == cpu for r in special)
    assert made_in and set(made_in) == {cpu}  # (AVX2 machine code, as the build's)
    xv = rng.standard_normal((3, 12)).astype("float32")
    got = runtime_vm.VirtualMachine(loaded, tvm.cpu()).invoke("main", xv)
    np.testing.assert_allclose(got[0].numpy(), np.maximum(xv @ wv.T, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1].numpy(), xv * 2)

    assert target_cpu.loaded_cpu(list(cpu)) == cpu
    assert target_cpu.loaded_cpu(["futurecpu", "+avx2,+no-such-feature"]) is None
    assert target_cpu.loaded_cpu(None) is None and target_cpu.loaded_cpu("haswell") is None
