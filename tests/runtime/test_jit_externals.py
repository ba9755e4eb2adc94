"""An object whose external symbols do not resolve must not reach LLVM's linker, which aborts
the process ("LLVM ERROR: Symbol not found"): the BLAS shim is made on first need
(``jit.provide_symbol``), anything else unknown is a ``RuntimeError`` naming it."""

import os
import subprocess
import sys
import textwrap

import pytest

from minitvm.runtime import jit

_CALLER = """
declare i32 @{callee}(i64, i64, i64, i64, i64, ptr, i64, i64, ptr, i64, i64, ptr, i64, i64, float)

define i32 @{name}() {{
entry:
  %r = call i32 @{callee}(i64 111, i64 111, i64 0, i64 0, i64 0, ptr null, i64 0, i64 1,
                          ptr null, i64 0, i64 1, ptr null, i64 0, i64 1, float 0.0)
  ret i32 %r
}}
"""


def test_an_unknown_external_is_an_error_naming_it():
    ir = _CALLER.format(callee="mtvm_no_such_function_anywhere", name="mtvm_calls_nothing")
    with pytest.raises(RuntimeError, match="mtvm_no_such_function_anywhere"):
        jit.compile_ir(ir, "mtvm_calls_nothing")
    # (the JIT still works afterwards: nothing was half-linked)
    ok = jit.compile_ir("define i32 @mtvm_one() {\n  ret i32 1\n}\n", "mtvm_one")
    assert ok.address


def test_a_kernel_calling_the_blas_shim_loads_before_anything_asked_for_blas():
    # a fresh process: the shim is not registered until the first kernel calling it loads
    code = textwrap.dedent(f"""
        import ctypes, llvmlite.binding as llvm
        from minitvm.runtime import blas, jit
        jit.init()
        assert not llvm.address_of_symbol(blas.SHIM_SYMBOL)
        ir = {_CALLER!r}.format(callee=blas.SHIM_SYMBOL, name="mtvm_calls_the_shim")
        try:
            k = jit.compile_ir(ir, "mtvm_calls_the_shim")
        except RuntimeError as err:  # a machine with no BLAS: the error says so
            assert "no BLAS library" in str(err) and not blas.available(), err
            print("no blas")
        else:
            assert blas.available() and k.address
            # m = n = k = 0, no transposes (CBLAS 111): a call that does nothing, through the shim to the BLAS
            assert ctypes.CFUNCTYPE(ctypes.c_int32)(k.address)() == 0
            print("linked")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() in ("linked", "no blas")
