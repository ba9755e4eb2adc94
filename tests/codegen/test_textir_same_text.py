"""The code generator's own IR text builder (``codegen/llvm/textir.py``) writes exactly the text
llvmlite's ``ir`` module wrote before it replaced it: every kernel here is generated with both
and compared byte for byte, from hand-written TIR (branches, phis, scratch memory, parallel
loops, strings, casts, intrinsics) and from the Relay operators' schedules. (Byte for byte with
its value numbering off; on, it leaves out repeated pure instructions, and the kernels compute
the same.)"""

import importlib
import types

import numpy as np
import pytest
from llvmlite import ir

import minitvm as tvm
from minitvm import relay, te, tir
from minitvm.backend import kernel_cache
from minitvm.codegen.llvm import codegen as cg_mod
from minitvm.codegen.llvm import expr as expr_mod
from minitvm.codegen.llvm import stmt as stmt_mod
from minitvm.codegen.llvm import textir
from minitvm.runtime import jit

cbuild = importlib.import_module("minitvm.codegen.build")  # (the package re-exports build())

# llvmlite's classes behind the names the code generator uses (the builder it used before)
LLVMLITE = types.SimpleNamespace(Module=lambda name: ir.Module(name=name), Function=ir.Function,
                                 IRBuilder=ir.IRBuilder, GlobalVariable=ir.GlobalVariable)


class _PlainBuilder(textir.IRBuilder):
    """textir's builder writing every instruction, as llvmlite's does (no value numbering)."""

    value_numbering = False


PLAIN = types.SimpleNamespace(Module=textir.Module, Function=textir.Function,
                              IRBuilder=_PlainBuilder, GlobalVariable=textir.GlobalVariable)


def _generate(func, builder, gomp=True, fast_math=False, symbol="kern") -> str:
    saved = [m.textir for m in (cg_mod, expr_mod, stmt_mod)]
    try:
        for m in (cg_mod, expr_mod, stmt_mod):
            m.textir = builder
        return cg_mod.CodeGenLLVM(func, symbol, fast_math=fast_math, gomp=gomp).generate()
    finally:
        for m, old in zip((cg_mod, expr_mod, stmt_mod), saved):
            m.textir = old


def _assert_same(func, **kw) -> str:
    new = _generate(func, PLAIN, **kw)
    old = _generate(func, LLVMLITE, **kw)
    assert new == old
    numbered = _generate(func, textir, **kw)
    assert numbered.count("\n") <= new.count("\n")
    return new


def _var(name, dtype="int32"):
    return tir.Var(name, dtype)


def test_scalar_branch_phi_and_guarded_load():
    n = _var("n")
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n + 2,), "float32", "B")
    i = _var("i")
    val = tir.if_then_else(tir.all(i >= 1, i <= n), A[i - 1], tir.const(0.0, "float32"))
    text = _assert_same(tir.PrimFunc([A, B], tir.For(i, 0, n + 2, 0,
                                                     tir.BufferStore(B, val, [i]))))
    assert " = phi  float " in text


@pytest.mark.parametrize("size", [16, None])
def test_stack_and_heap_scratch(size):
    n = _var("n")
    A = tir.decl_buffer((n,), "float32", "A")
    tmp = tir.decl_buffer((size or n,), "float32", "tmp")
    i = _var("i")
    ext = size or n
    body = tir.Allocate(tmp.data, "float32", [ext], True, tir.DeclBuffer(tmp, tir.SeqStmt([
        tir.For(i, 0, ext, 0, tir.BufferStore(tmp, A[i] + 1.0, [i])),
        tir.For(i, 0, ext, 0, tir.BufferStore(A, tmp[ext - 1 - i], [i])),
    ])))
    text = _assert_same(tir.PrimFunc([A], body))
    assert ("malloc" in text) == (size is None)
    assert ("alloca [16 x float], align 64" in text) == (size == 16)


@pytest.mark.parametrize("gomp", [True, False])
def test_parallel_loop_outlined(gomp):
    A = tir.decl_buffer((64, 8), "float32", "A")
    B = tir.decl_buffer((64, 8), "float32", "B")
    i, j = _var("i"), _var("j")
    body = tir.For(i, 0, 64, tir.ForKind.PARALLEL, tir.For(
        j, 0, 8, tir.ForKind.VECTORIZED, tir.BufferStore(B, A[i, j] * 2.0, [i, j])))
    f = tir.PrimFunc([A, B], body).with_attr("tir.noalias", True)
    text = _assert_same(f, gomp=gomp)
    assert ("GOMP_parallel" in text) == gomp


def test_strings_extern_calls_and_int_ops():
    A = tir.decl_buffer((32,), "int32", "A")
    B = tir.decl_buffer((32,), "int32", "B")
    C = tir.decl_buffer((32,), "bool", "C")
    i = _var("i")
    d = _var("d")
    a = A[i]

    def op(name, *args):
        return tir.Call("int32", f"tir.{name}", args)

    two = tir.const(2, "int32")
    stmts = [
        tir.BufferStore(B, tir.floordiv(a, d) + tir.floormod(a, d) + tir.truncdiv(a, d), [i]),
        tir.BufferStore(B, op("bitwise_xor", op("shift_left", a, two), op(
            "bitwise_or", op("shift_right", a, two), op("bitwise_and", tir.max(a, d),
                                                          tir.min(a, d)))), [i]),
        tir.BufferStore(C, tir.all(a > 0, a != d), [i]),
        tir.Evaluate(tir.call_extern("int32", "abs", a)),
    ]
    _assert_same(tir.PrimFunc([A, B, C, d], tir.For(i, 0, 32, 0, tir.SeqStmt(stmts))))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_math_intrinsics_and_casts(dtype):
    A = te.placeholder((64,), dtype, "A")
    def unary(fn):
        return lambda k: fn(A[k])

    def cast(t):
        return lambda k: A[k].astype(t)

    fs = [te.compute((64,), unary(fn), name=f"o{n}")
          for n, fn in enumerate((te.exp, te.tanh, te.erf, te.sigmoid, te.log, te.sqrt,
                                  te.floor, te.abs))]
    casts = [te.compute((64,), cast(t), name=f"c{t}")
             for t in ("int8", "uint64", "int32", "float32" if dtype != "float32" else "float64")]
    for fast in (False, True):
        _assert_same(te.create_prim_func([A, *fs, *casts]), fast_math=fast)


def test_strided_vector_load():
    A = tir.decl_buffer((64,), "float32", "A")
    B = tir.decl_buffer((16,), "float32", "B")
    i = _var("i")
    body = tir.For(i, 0, 16, tir.ForKind.VECTORIZED, tir.BufferStore(B, A[i * 3 + 1], [i]))
    text = _assert_same(tir.PrimFunc([A, B], body))
    assert "shufflevector" in text


class _Checked(cg_mod.CodeGenLLVM):
    """CodeGenLLVM that also generates with llvmlite's builder and compares."""

    seen = 0

    def generate(self) -> str:
        text = super().generate()  # (numbered: the kernel built and run below)
        kw = dict(gomp=self.gomp, fast_math="fast" in self.fmf, symbol=self.symbol)
        plain = _generate(self.func, PLAIN, **kw)
        assert plain == _generate(self.func, LLVMLITE, **kw), \
            f"{self.symbol}: textir and llvmlite IR differ"
        assert text.count("\n") <= plain.count("\n")
        type(self).seen += 1
        return text


def _conv_block():
    x = relay.var("x", shape=(1, 16, 14, 14))
    w1 = relay.var("w1", shape=(32, 16, 3, 3))
    w2 = relay.var("w2", shape=(32, 32, 1, 1))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1), strides=(2, 2)))
    y = relay.nn.conv2d(y, w2)
    y = relay.nn.max_pool2d(y, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    y = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(y),
                                        relay.var("wd", shape=(10, 512))))
    return relay.Function(relay.analysis.free_vars(y), y)


def test_relay_operator_kernels_same_text_and_results(monkeypatch):
    monkeypatch.setenv("MINITVM_DISABLE_DISK_CACHE", "1")
    monkeypatch.setattr(cbuild, "CodeGenLLVM", _Checked)
    monkeypatch.setattr(cbuild, "_CACHE", {})  # compile afresh, not from this process's cache
    monkeypatch.setattr(kernel_cache, "_CACHE", {})
    _Checked.seen = 0
    func = _conv_block()
    rng = np.random.default_rng(0)
    args = {p.name_hint: rng.standard_normal([int(d) for d in p.type_annotation.shape])
            .astype("float32") for p in func.params}
    mod = relay.transform.InferType()(relay.IRModule.from_expr(func))
    lib = relay.build(mod, target="llvm")
    assert _Checked.seen >= 4
    from minitvm.contrib import graph_executor

    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, v in args.items():
        gm.set_input(k, v)
    gm.run()
    got = gm.get_output(0).numpy()
    ref = relay.create_executor("debug", mod=mod).evaluate()(*[args[p.name_hint]
                                                                 for p in func.params])
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-5)


def test_value_numbering_drops_repeated_index_arithmetic(rng):
    """``B[i, j] = A[i, j] * 2 + A[i, j + 1]``: the row offset ``i * 8`` is computed once per
    block, not once per access; the kernel computes the same as without numbering."""
    A = tir.decl_buffer((16, 9), "float32", "A")
    B = tir.decl_buffer((16, 8), "float32", "B")
    i, j = _var("i"), _var("j")
    body = tir.For(i, 0, 16, 0, tir.For(j, 0, 8, 0, tir.BufferStore(
        B, A[i, j] * tir.const(2.0, "float32") + A[i, j + 1], [i, j])))
    func = tir.PrimFunc([A, B], body, attrs={"tir.noalias": True})
    plain, numbered = _generate(func, PLAIN), _generate(func, textir)
    assert plain.count(" = mul nsw i64") > numbered.count(" = mul nsw i64") >= 1
    assert numbered.count("\n") < plain.count("\n")
    a = rng.standard_normal((16, 9)).astype("float32")
    outs = []
    for k, text in enumerate((plain, numbered)):
        sym = f"numbering_{k}"
        compiled = jit.compile_ir(text.replace('"kern', f'"{sym}'), sym)
        f = cbuild.KernelFunction("f", cg_mod.KernelSignature(func, "f"), compiled.address,
                                  compiled)
        b = np.empty((16, 8), "float32")
        f(a, b)
        outs.append(b)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[1], a[:, :8] * 2 + a[:, 1:], rtol=1e-6)


def test_value_numbering_reuses_only_values_before_the_insertion_point():
    """Appending at a block's end reuses an equal earlier pure instruction; inserting before
    it (where it is not yet defined) writes a new one, and so does another block; memory
    reads are never merged (a store may come between)."""
    mod = textir.Module("m")
    i32 = ir.IntType(32)
    fn = textir.Function(mod, ir.FunctionType(ir.VoidType(), [i32, i32, ir.PointerType()]), "f")
    bld = textir.IRBuilder(fn.append_basic_block("entry"))
    a, b, p = fn.args
    first = bld.add(a, b)
    assert bld.add(a, b) is first  # appended: the same value
    assert bld.add(a, b, name="named") is not first  # a named value is always written
    assert bld.load(p, typ=i32) is not bld.load(p, typ=i32)
    bld.position_before(first)
    earlier = bld.add(a, b)
    insts = fn.blocks[0].instructions
    assert earlier is not first and insts.index(earlier) < insts.index(first)
    other = textir.IRBuilder(fn.append_basic_block("next"))
    assert other.add(a, b) is not first  # another block: its own values
