"""The JIT's code arenas (``runtime.jit``): kernels share MCJIT engines, an engine goes once no
kernel loaded into it lives (an engine per kernel cost ~0.8 MB: a long fuzzing run held ~400),
a kernel the caches evicted still runs while something holds it, and two kernels defining one
symbol, or calling a symbol an arena defines as other code, never share an arena."""

import ctypes
import gc

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import jit
from minitvm.runtime.bounded_cache import caches, set_limits

_I64 = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)


def _adder(symbol: str, n: int) -> str:
    return f'define i64 @"{symbol}"(i64 %a) {{\n  %r = add i64 %a, {n}\n  ret i64 %r\n}}\n'


def _call(compiled, x: int) -> int:
    return _I64(compiled.address)(x)


@pytest.fixture
def small_arenas(monkeypatch):
    monkeypatch.setattr(jit, "ARENA_OBJECTS", 4)
    with jit._LOCK:
        jit._FILLING[0] = None  # (start on an arena of this test's own)
    gc.collect()
    return jit.code_stats()


def test_dead_kernels_free_their_arenas_and_a_held_one_still_runs(small_arenas):
    before = small_arenas
    held = jit.compile_ir(_adder("mtvm_arena_held", 7), "mtvm_arena_held", opt=1)
    for n in range(24):  # 24 kernels nothing holds
        c = jit.compile_ir(_adder(f"mtvm_arena_{n}", n), f"mtvm_arena_{n}", opt=1)
        assert _call(c, 1) == n + 1
    del c
    gc.collect()
    after = jit.code_stats()
    # held's arena and the one being filled stay (7 arenas were made), each of 4 objects
    assert after["arenas"] <= before["arenas"] + 2
    assert after["objects"] <= before["objects"] + 2 * jit.ARENA_OBJECTS
    assert after["kernels"] <= before["kernels"] + 1
    assert _call(held, 35) == 42
    assert held.engine.objects == jit.ARENA_OBJECTS  # (it shares its engine)


def test_one_symbol_twice_or_an_external_defined_as_other_code_gets_a_new_arena(small_arenas):
    a = jit.compile_ir(_adder("mtvm_arena_dup", 1), "mtvm_arena_dup", opt=1)
    b = jit.compile_ir(_adder("mtvm_arena_dup", 2), "mtvm_arena_dup", opt=1)
    assert b.engine is not a.engine and (_call(a, 0), _call(b, 0)) == (1, 2)
    caller = ('declare i64 @"mtvm_arena_dup"(i64)\n'
              'define i64 @"mtvm_arena_caller{k}"(i64 %a) {{\n'
              '  %r = call i64 @"mtvm_arena_dup"(i64 %a)\n  %s = add i64 %r, {k}\n'
              '  ret i64 %s\n}}\n')
    # the process resolves the symbol to b's copy, defined in the arena being filled: it joins
    c1 = jit.link_entry(caller.format(k=10), "mtvm_arena_caller10", {"mtvm_arena_dup": b.address})
    assert c1.engine is b.engine and _call(c1, 0) == 12
    # resolved to a's copy now: b's arena would link b's, so the caller goes to a new one
    c2 = jit.link_entry(caller.format(k=20), "mtvm_arena_caller20", {"mtvm_arena_dup": a.address})
    assert c2.engine is not b.engine and _call(c2, 0) == 21


def test_user_symbols_get_an_engine_of_their_own(small_arenas):
    mine = jit.compile_ir(_adder("mtvm_arena_mine", 1), "mtvm_arena_mine", opt=1)
    theirs = jit.compile_ir(_adder("user_function", 2), "user_function", opt=1)
    again = jit.compile_ir(_adder("mtvm_arena_again", 3), "mtvm_arena_again", opt=1)
    assert theirs.engine is not mine.engine and theirs.engine.objects == 1
    assert again.engine is mine.engine and _call(theirs, 0) == 2


def test_ir_symbols():
    ir = ('@"mtvm_g" = global i32 0\n@tab = private constant [1 x i32] [i32 1]\n'
          '@ext = external global i32\n'
          'declare float @expf(float)\ndeclare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)\n'
          'define internal void @"mtvm_k_impl"() {\n  ret void\n}\n'
          'define void @"mtvm_k"(ptr %".1") {\n  ret void\n}\n'
          'define private void @p() {\n  ret void\n}\n')
    assert jit.ir_symbols(ir) == (["mtvm_k", "mtvm_g"], ["expf", "ext"])
    many = "".join(f"declare void @f{k}()\n" for k in range(100_000))  # (a flat scan)
    assert len(jit.ir_symbols(many)[1]) == 100_000


def _program(n: int):
    x = relay.var("x", shape=(n,), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(x, relay.const(float(n)))))


def _run(lib, n: int) -> np.ndarray:
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", np.arange(n, dtype="float32"))
    m.run()
    return m.get_output(0).numpy()


def test_distinct_builds_keep_engines_bounded_and_an_evicted_held_kernel_runs(small_arenas,
                                                                              monkeypatch):
    """Every code cache at 1 entry, arenas of 4 objects (a build adds a kernel and its entry):
    after 8 distinct builds of which one is held, only a bounded number of engines and kernels
    live, and the held build, evicted from every cache, computes the right thing."""
    monkeypatch.setenv("MINITVM_DISABLE_DISK_CACHE", "1")
    before = small_arenas
    old = set_limits({name: 1 for name in caches()})
    try:
        held = None
        for n in range(3, 11):
            with tvm.transform.PassContext(opt_level=3):
                lib = relay.build(_program(n), "llvm")
            held = lib if n == 3 else held
        np.testing.assert_allclose(_run(lib, 10), np.arange(10) + 10)
        del lib
        gc.collect()
        after = jit.code_stats()
        assert after["arenas"] <= before["arenas"] + 3
        assert after["kernels"] <= before["kernels"] + 6
        np.testing.assert_allclose(_run(held, 3), np.arange(3) + 3)
    finally:
        set_limits(old)
