"""Kernel cache (in process and on disk) and a 100,000-statement function."""

import numpy as np

from minitvm import codegen, te, tir


def _func(name):
    A = te.placeholder((33,), name="A")
    B = te.compute((33,), lambda i: A[i] * 3.0 + 1.0, name="B")
    return te.create_prim_func([A, B]).with_attr("global_symbol", name)


def test_identical_kernels_compile_once():
    codegen.clear_cache()
    m1 = codegen.build(_func("f1"))
    m2 = codegen.build(_func("f2"))
    info = codegen.cache_info()
    assert info["misses"] == 1 and info["hits"] == 1 and info["size"] == 1
    assert "f1" in m1 and "f2" in m2
    a = np.arange(33, dtype="float32")
    b = np.empty_like(a)
    m2["f2"](a, b)
    np.testing.assert_allclose(b, a * 3 + 1)


def test_ir_module_input_builds_every_prim_func():
    """Every PrimFunc is built, exported under its global_symbol as in TVM (the module's key
    names the function only when it has none)."""
    mod = codegen.build({"first": _func("x"), "second": _func("y")})
    assert sorted(mod.function_names) == ["x", "y"]
    unnamed = _func("u").without_attr("global_symbol")
    assert list(codegen.build({"third": unnamed}).function_names) == ["third"]


def test_disk_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(tmp_path))
    codegen.clear_cache()
    codegen.build(_func("g"))
    assert len(list(tmp_path.glob("*.o"))) == 1
    codegen.clear_cache()
    k = codegen.build(_func("g"))["g"]
    assert k._compiled.from_disk
    a = np.ones(33, "float32")
    b = np.empty_like(a)
    k(a, b)
    np.testing.assert_allclose(b, 4.0)


def test_100k_statement_function_compiles():
    n = 100_000
    B = tir.decl_buffer((n,), "float32", "B")
    seq = tir.SeqStmt([tir.BufferStore(B, float(i % 7), [i]) for i in range(n)])
    k = codegen.build(tir.PrimFunc([B], seq, attrs={"global_symbol": "big"}))["big"]
    b = np.empty(n, "float32")
    k(b)
    np.testing.assert_array_equal(b, np.arange(n) % 7)


def test_auto_parallel_marks_outer_spatial_loops_only():
    from minitvm.tir.transform import parallelize_outer_loops

    A = te.placeholder((512, 256), name="A")
    B = te.compute((512, 256), lambda i, j: A[i, j] * 2.0, name="B")
    k = te.reduce_axis((0, 512), name="k")
    C = te.compute((1,), lambda i: te.sum(B[k, 0], axis=k), name="C")
    f = parallelize_outer_loops(te.create_prim_func([A, B, C]))
    text = f.script()
    assert "for i in T.parallel(512):" in text
    assert text.count("T.parallel") == 1
    a = np.ones((512, 256), "float32")
    b, c = np.empty_like(a), np.empty(1, "float32")
    codegen.build(f)["main"](a, b, c)
    np.testing.assert_allclose(c, [1024.0])


def test_build_ir_module():
    from minitvm.ir.module import IRModule

    mod = IRModule({"scale": _func("scale")})
    built = codegen.build(mod)
    a = np.zeros(33, "float32")
    b = np.empty_like(a)
    built["scale"](a, b)
    np.testing.assert_allclose(b, 1.0)
