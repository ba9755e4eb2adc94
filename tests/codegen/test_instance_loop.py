"""``INSTANCE_LOOP`` parallel loops (llvm/stmt.py): the body, parallel loops of its own
included, is compiled once; those loops run on the pool when the instance loop runs on one
thread and on the calling thread when it runs on the pool; the loop's symbolic extent does not
keep the kernel from the light LLVM pipelines (``codegen.build.ir_pipeline_level``)."""

import sys

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.codegen.llvm.stmt import INSTANCE_LOOP
from minitvm.runtime import jit, threadpool

cg = sys.modules[codegen.__name__ + ".build"]  # the module (``codegen.build`` is the function)


def _instances(annotated: bool = True, rows: int = 64, lanes: int = 16):
    """``B[b, r, :] = A[b, r, :] * 3 + b`` for each of ``n`` instances ``b`` (a parallel loop,
    an ``INSTANCE_LOOP`` when ``annotated``), each instance's rows a parallel loop of its own
    and its lanes a vectorized one."""
    n = tir.Var("n", "int64")
    A = tir.decl_buffer((n, rows, lanes), "float32", "A")
    B = tir.decl_buffer((n, rows, lanes), "float32", "B")
    b, r, v = tir.Var("b", "int64"), tir.Var("r", "int64"), tir.Var("v", "int64")
    value = A[b, r, v] * tir.const(3.0, "float32") + tir.Cast("float32", b)
    inner = tir.For(r, 0, rows, tir.ForKind.PARALLEL, tir.For(
        v, 0, lanes, tir.ForKind.VECTORIZED, tir.BufferStore(B, value, [b, r, v])))
    ann = {INSTANCE_LOOP: 1} if annotated else None
    body = tir.For(b, 0, n, tir.ForKind.PARALLEL, inner, annotations=ann)
    return tir.PrimFunc([A, B], body, attrs={"tir.noalias": True})


def _ir(func) -> str:
    cg.clear_cache()
    return cg.compile_prim_func(func, "k", auto_parallel=False)[1]


def _defined(ir_text: str) -> dict[str, str]:
    """Function name -> its body's text."""
    out = {}
    for part in ir_text.split("\ndefine ")[1:]:
        name = part[part.index("@") + 1:part.index("(")].strip('"')
        out[name] = part[:part.index("\n}")]
    return out


def test_body_is_compiled_once_and_its_parallel_loop_outlined():
    funcs = _defined(_ir(_instances()))
    # the multiply of the body appears once in the whole module
    assert sum(body.count(" fmul ") for body in funcs.values()) == 1
    # the instance loop's chunk function launches the rows' loop with the threads it was given
    (chunk,) = [name for name in funcs if name.endswith("_par1_body")]
    assert '@"GOMP_parallel"' in funcs[chunk]
    assert any(name.endswith("_par2_body") for name in funcs)
    # without the annotation a parallel loop inside a parallel loop is serial, inline
    plain = _defined(_ir(_instances(annotated=False)))
    assert not any('@"GOMP_parallel"' in plain[name] for name in plain
                   if name.endswith("_par1_body"))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_instances_compute_every_element(threads, rng):
    kernel = codegen.build(_instances(), auto_parallel=False)["main"]
    old = threadpool.get_num_threads()
    threadpool.set_num_threads(threads)
    try:
        for n in (1, 0, 2, 5, 1):
            a = rng.standard_normal((n, 64, 16)).astype("float32")
            out = np.full_like(a, np.nan)
            kernel(a, out)
            want = a * np.float32(3.0) + np.arange(n, dtype="float32")[:, None, None]
            np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)  # (fused multiply-add)
    finally:
        threadpool.set_num_threads(old)


def test_instance_loop_extent_counts_as_static_for_the_pipeline():
    # the body is a static, vectorized kernel with nothing to hoist: the minimal pipeline
    assert cg.ir_pipeline_level(_instances(), 3) == jit.MINIMAL_PIPELINE
    # the same loop unmarked is a symbolic loop over symbolic buffers: the light pipeline
    assert cg.ir_pipeline_level(_instances(annotated=False), 3) == cg.LIGHT_PIPELINE_LEVEL
    # another symbolic dimension still counts (the instance loop's extent only as a leading one)
    f = _instances()
    m = tir.Var("m", "int64")
    A = f.buffer_map[f.params[0]]
    C = tir.decl_buffer((m, 16), "float32", "C")
    g = tir.PrimFunc([A, f.buffer_map[f.params[1]], C], f.body, attrs=f.attrs)
    assert cg.ir_pipeline_level(g, 3) == cg.LIGHT_PIPELINE_LEVEL
