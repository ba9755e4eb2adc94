"""Parsing ``@T.prim_func`` TVMScript into the TIR that ``tir.printer`` prints: parse(print(f))
is f again (the printer's golden functions, te.create_prim_func output), and the block / loop /
statement forms build the expected nodes."""

import sys

import pytest

from minitvm import te, tir
from minitvm.script.parser import ParserError, from_source
from minitvm.script.parser import tir as T


def _i64(v):
    return tir.const(v, "int64")


def test_elementwise_from_te_round_trips(sp):
    A = te.placeholder((128,), name="A")
    B = te.placeholder((128,), name="B")
    C = te.compute((128,), lambda i: A[i] + B[i], name="C")
    g = sp.roundtrip(te.create_prim_func([A, B, C]))
    assert g.attrs["global_symbol"] == "main" and g.attrs["tir.noalias"] is True


def test_fused_reduction_from_te_round_trips(sp):
    n = te.var("n", "int64")
    x = te.placeholder((n, _i64(784)), name="x")
    w = te.placeholder((_i64(784), _i64(128)), name="w")
    b = te.placeholder((_i64(128),), name="b")
    k = te.reduce_axis((_i64(0), _i64(784)), name="k")
    mm = te.compute((n, _i64(128)), lambda i, j: te.sum(x[i, k] * w[k, j], axis=k), name="mm")
    add = te.compute((n, _i64(128)), lambda i, j: mm[i, j] + b[j], name="add")
    relu = te.compute((n, _i64(128)), lambda i, j: te.max(add[i, j], tir.const(0.0)),
                      name="relu")
    g = sp.roundtrip(te.create_prim_func([x, w, b, relu]))
    assert [buf.name for buf in g.body.block.alloc_buffers] == ["mm", "add"]


def test_loop_kinds_lets_and_ifs_round_trip(sp):
    A = tir.decl_buffer((64,), "float32", "A")
    i, j, i2 = tir.Var("i", "int32"), tir.Var("j", "int32"), tir.Var("i", "int32")
    x = tir.Var("x", "float32")
    body = tir.SeqStmt([
        tir.For(i, 0, 4, tir.ForKind.PARALLEL, tir.For(
            j, 0, 16, tir.ForKind.VECTORIZED,
            tir.BufferStore(A, A[i * 16 + j] * 2.0, [i * 16 + j]))),
        tir.For(i2, 2, 6, tir.ForKind.UNROLLED, tir.LetStmt(x, A[i2], tir.IfThenElse(
            x > 0.5, tir.BufferStore(A, x, [i2]), tir.BufferStore(A, tir.exp(-x), [i2])))),
        tir.Evaluate(0),
    ])
    sp.roundtrip(tir.PrimFunc([A], body, attrs={"global_symbol": "k"}))


def test_blocks_with_domains_predicates_and_allocations(sp):
    text = '''
@T.prim_func
def f(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    T.func_attr({"tir.noalias": T.bool(True), "op_pattern": 3})
    for i, k in T.grid(16, 16):
        with T.block("sum"):
            vi = T.axis.spatial((0, 16), i)
            vk = T.axis.reduce(16, k)
            T.where(i < 15)
            T.reads(A[vi, 0:16])
            T.writes(B[vi])
            T.block_attr({"meta": 1})
            tmp = T.alloc_buffer((4,), scope="local")
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
'''
    f = from_source(text)
    assert dict(f.attrs.items()) == {"tir.noalias": True, "op_pattern": 3, "global_symbol": "f"}
    root = f.body.block
    realize = root.body.body.body
    block = realize.block
    assert [iv.iter_type for iv in block.iter_vars] == [tir.IterVar.DataPar,
                                                        tir.IterVar.CommReduce]
    assert block.iter_vars[0].dom.extent.value == 16
    assert isinstance(realize.predicate, tir.LT)
    (read,) = block.reads
    assert read.region[1].min.value == 0 and read.region[1].extent.value == 16
    assert block.annotations == {"meta": 1}
    (tmp,) = block.alloc_buffers
    assert tmp.name == "tmp" and tmp.scope == "local"
    assert isinstance(block.init, tir.BufferStore)
    again = from_source(f.script())
    assert again.script() == f.script()
    sp.prim_funcs_equal(again, f)


def test_statements_that_scope_over_the_rest():
    text = '''
@T.prim_func(private=True)
def f(A: T.Buffer((8,), "int32"), n: T.int32):
    assert n > 0, "n must be positive"
    half = n // 2
    for t in T.thread_binding(8, thread="threadIdx.x"):
        A[t] += half
    A[0:4] = A[4:8]
'''
    f = from_source(text)
    assert "global_symbol" not in f.attrs
    assert [p.dtype for p in f.params] == ["handle", "int32"]
    stmt = f.body
    assert isinstance(stmt, tir.AssertStmt) and stmt.message.value == "n must be positive"
    let = stmt.body
    assert isinstance(let, tir.LetStmt) and let.var.name == "half"
    loop, vec = let.body.seq
    assert loop.kind == tir.ForKind.THREAD_BINDING and loop.thread_binding.thread_tag == \
        "threadIdx.x"
    assert isinstance(loop.body.value, tir.Add)
    assert isinstance(vec.indices[0], tir.Ramp) and vec.indices[0].lanes == 4
    assert not isinstance(f.body, tir.BlockRealize)  # no block: no implicit root


def test_symbolic_shapes_and_match_buffer():
    text = '''
@T.prim_func
def f(var_x: T.handle, m: T.int64):
    n = T.int64()
    x = T.match_buffer(var_x, (n, m), "float16")
    for i in range(n):
        x[i, 0] = T.float16(1)
'''
    f = from_source(text)
    buf = f.buffer_map[f.params[0]]
    assert buf.dtype == "float16" and buf.shape[1] is f.params[1]
    loop = f.body
    assert loop.extent is buf.shape[0] and loop.loop_var.dtype == "int64"


def test_long_expression_chain_is_evaluated_without_recursion():
    terms = " + ".join(["A[0]"] * 2000)
    text = f'''
@T.prim_func
def f(A: T.Buffer((1,), "float32")):
    A[0] = {terms}
'''
    limit = sys.getrecursionlimit()
    assert limit <= 10_000
    f = from_source(text)
    assert sys.getrecursionlimit() == limit
    depth, e = 0, f.body.value
    while isinstance(e, tir.Add):
        depth += 1
        e = e.a
    assert depth == 1999


def test_decorated_prim_func_uses_caller_constants():
    N = 8

    @T.prim_func
    def fill(A: T.Buffer((N,), "float32")):
        for i in range(N):
            A[i] = T.float32(N)

    assert fill.body.extent.value == 8 and fill.body.body.value.value == 8.0


@pytest.mark.parametrize("text, match, line", [
    ('''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.reads(A[0])
''', r"T.reads is only valid inside `with T.block", 4),
    ('''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("b"):
            vi, vj = T.axis.remap("SS", [i, 3])
''', r"T.axis.remap binds loop variables", 6),
    ('''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    while True:
        pass
''', r"not supported in TVMScript \(TIR\): a `While` statement", 4),
    ('''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    for i in [1, 2]:
        pass
''', r"a TIR loop iterates over range", 4),
    ('''
@T.prim_func
def f(a: T.float33):
    pass
''', r"T has no attribute|T.float33 is not available", 3),
])
def test_tir_errors(text, match, line):
    with pytest.raises(ParserError, match=match) as info:
        from_source(text)
    assert info.value.lineno == line
