"""Relax's fused matmul PrimFuncs (LegalizeOps + FuseOps + FuseTIR: matmul with an elementwise
tail) on the shared GEMM schedules: the epilogue applied in the micro-kernel's store
(``gemm.emit_fused``), and ``C.T = W @ A.T`` for a ``[N, K]`` weight passed at run time
(``gemm.SWAP_TB``), numerically equal to numpy on odd and symbolic shapes."""

import math

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.codegen.build import build
from minitvm.schedule import gemm, gemm_kernel, gemm_tb, optimize_prim_func
from minitvm.schedule.common import vector_isa
from minitvm.script.parser import from_source
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts

ISA = vector_isa()  # the GEMM switches below are on for AVX2 and AVX-512 alike
FUSED, SWAP, INLINE = gemm.FUSED_EPILOGUE[ISA], gemm.SWAP_TB[ISA], gemm.INLINE_PACK[ISA]

# the epilogue blocks after the matmul block (``mm``): each reads the previous one
_TAILS = {
    "bias": ["T_add[v0, v1] = mm[v0, v1] + bias[v1]"],
    "bias_relu": ["T_add[v0, v1] = mm[v0, v1] + bias[v1]",
                  "T_relu[v0, v1] = T.max(T_add[v0, v1], T.float32(0.0))"],
    "bias_gelu": ["T_add[v0, v1] = mm[v0, v1] + bias[v1]",
                  "T_gelu[v0, v1] = T.float32(0.5) * T_add[v0, v1] * (T.float32(1.0) + "
                  "T.erf(T_add[v0, v1] * T.float32(0.70710678118654746)))"],
    "bias_residual": ["T_add[v0, v1] = mm[v0, v1] + bias[v1]",
                      "T_res[v0, v1] = T_add[v0, v1] + res[v0, v1]"],
    # reads the matmul away from its own position: the epilogue stays a pass of its own
    "flip": ["T_flip[v0, v1] = mm[v0, {n} - 1 - v1] + bias[v1]"],
}


def _source(tail: str, n: int, k: int) -> str:
    """TVMScript of a FuseTIR-style ``fused_matmul_<tail>_tb`` with a symbolic row count."""
    stmts = [s.format(n=n) for s in _TAILS[tail]]
    names = [s.split("[")[0] for s in stmts]
    res = ", p_res: T.handle" if "res[" in "".join(stmts) else ""
    lines = [
        "@T.prim_func",
        f"def fused(p_x: T.handle, w: T.Buffer((T.int64({n}), T.int64({k})), \"float32\"), "
        f"bias: T.Buffer((T.int64({n}),), \"float32\"){res}, p_out: T.handle):",
        "    T.func_attr({\"tir.noalias\": T.bool(True)})",
        "    m = T.int64()",
        f"    x = T.match_buffer(p_x, (m, T.int64({k})))",
    ]
    if res:
        lines.append(f"    res = T.match_buffer(p_res, (m, T.int64({n})))")
    lines.append(f"    {names[-1]} = T.match_buffer(p_out, (m, T.int64({n})))")
    for name in ["mm", *names[:-1]]:
        lines.append(f"    {name} = T.alloc_buffer((m, T.int64({n})))")
    lines += [
        f"    for i, j, r in T.grid(m, T.int64({n}), T.int64({k})):",
        "        with T.block(\"mm\"):",
        "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, r])",
        "            with T.init():",
        "                mm[vi, vj] = T.float32(0.0)",
        "            mm[vi, vj] = mm[vi, vj] + x[vi, vk] * w[vj, vk]",
    ]
    for s, name in zip(stmts, names):
        lines += [
            f"    for a0, a1 in T.grid(m, T.int64({n})):",
            f"        with T.block(\"{name}\"):",
            "            v0, v1 = T.axis.remap(\"SS\", [a0, a1])",
            f"            {s}",
        ]
    return "\n".join(lines) + "\n"


def _reference(tail, x, w, bias, res):
    mm = x.astype("float64") @ w.T.astype("float64")
    if tail == "flip":
        return mm[:, ::-1] + bias
    y = mm + bias
    if tail == "bias_relu":
        return np.maximum(y, 0)
    if tail == "bias_gelu":
        erf = np.vectorize(math.erf)
        return 0.5 * y * (1 + erf(y / math.sqrt(2)))
    if tail == "bias_residual":
        return y + res
    return y


def _stores(func):
    return [s for s in walk_stmts(func.body) if isinstance(s, S.BufferStore)]


def _loads(e):
    return [x for x in post_order(e) if isinstance(x, E.BufferLoad)]


def _out_buffer(func):
    return func.buffer_map[func.params[-1]]


def _epilogue_in_store(func) -> bool:
    """A store of the output whose value is a register accumulator plus the bias."""
    out = _out_buffer(func)
    for st in _stores(func):
        names = {ld.buffer.name for ld in _loads(st.value)}
        if st.buffer.data is out.data or st.buffer.name.startswith("matmul_c"):
            if "bias" in names and any(n.startswith(("acc", "nt_sum")) for n in names):
                return True
    return False


def _separate_pass(func) -> bool:
    """A store of the output that reads the output and no accumulator (a pass of its own)."""
    out = _out_buffer(func)
    for st in _stores(func):
        if st.buffer.data is not out.data:
            continue
        lds = _loads(st.value)
        if any(ld.buffer.data is out.data for ld in lds) and \
                not any(ld.buffer.name.startswith(("acc", "nt_sum")) for ld in lds):
            return True
    return False


def _run(func, tail, m, n, k, rng):
    x = rng.standard_normal((m, k)).astype("float32")
    w = (rng.standard_normal((n, k)) / math.sqrt(k)).astype("float32")
    bias = rng.standard_normal(n).astype("float32")
    res = rng.standard_normal((m, n)).astype("float32")
    out = np.zeros((m, n), "float32")
    args = [x, w, bias] + ([res] if tail == "bias_residual" else []) + [out]
    func(*args)
    want = _reference(tail, x, w, bias, res)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(7)


@pytest.mark.parametrize("tail", ["bias", "bias_relu", "bias_gelu", "bias_residual", "flip"])
def test_fused_matmul_tails_match_numpy_at_every_row_count(tail, rng):
    # N <= K and a weight of 2^19 elements: below 16 rows gemm_tb, up to gemm_tb.MAX_ROWS the
    # swapped GEMM (SWAP_TB), above that W packed per call; 37 and 301 leave partial tiles
    n, k = 512, 1024
    f = from_source(_source(tail, n, k))
    g = optimize_prim_func(f)
    assert g is not f
    fn = build(g)["fused"]
    for m in (1, 5, 16, 37, gemm_tb.MAX_ROWS, 301):
        _run(fn, tail, m, n, k, rng)


@pytest.mark.parametrize("tail", ["bias_relu", "bias_residual"])
def test_odd_widths_partial_panels(tail, rng):
    n, k = 45, 29  # N not a multiple of any register tile width, K odd
    fn = build(optimize_prim_func(from_source(_source(tail, n, k))))["fused"]
    for m in (1, 3, 17, 250):
        _run(fn, tail, m, n, k, rng)


@pytest.mark.skipif(not FUSED, reason="the fused store is off for this ISA (FUSED_EPILOGUE)")
@pytest.mark.parametrize("tail", ["bias", "bias_relu", "bias_residual"])
def test_call_free_epilogue_is_applied_in_the_store(tail):
    g = optimize_prim_func(from_source(_source(tail, 512, 1024)))
    assert _epilogue_in_store(g)
    assert not _separate_pass(g)


@pytest.mark.skipif(not FUSED, reason="the fused store is off for this ISA (FUSED_EPILOGUE)")
def test_gelu_keeps_a_pass_of_its_own():
    g = optimize_prim_func(from_source(_source("bias_gelu", 512, 1024)))
    assert _separate_pass(g)
    assert not _epilogue_in_store(g)
    erfs = [s for s in _stores(g) if any(
        isinstance(e, E.Call) and "erf" in str(getattr(e.op, "name", e.op))
        for e in post_order(s.value))]
    assert erfs and all(s.buffer.data is _out_buffer(g).data for s in erfs)


@pytest.mark.skipif(not FUSED, reason="the fused store is off for this ISA (FUSED_EPILOGUE)")
def test_epilogue_reading_elsewhere_reads_a_temporary():
    g = optimize_prim_func(from_source(_source("flip", 512, 1024)))
    assert not _epilogue_in_store(g)
    out = _out_buffer(g)
    passes = [s for s in _stores(g) if s.buffer.data is out.data and any(
        ld.buffer.name.startswith("matmul_out") for ld in _loads(s.value))]
    assert passes  # the epilogue pass reads the matmul's temporary, never the output itself
    assert not any(ld.buffer.data is out.data for s in passes for ld in _loads(s.value))


def test_separate_pass_when_the_isa_does_not_fuse(monkeypatch, rng):
    monkeypatch.setitem(gemm.FUSED_EPILOGUE, vector_isa(), False)
    g = optimize_prim_func(from_source(_source("bias_relu", 64, 48)))
    assert _separate_pass(g)
    assert not _epilogue_in_store(g)
    fn = build(g)["fused"]
    for m in (1, 37):
        _run(fn, "bias_relu", m, 64, 48, rng)


def _allocations(func) -> set:
    return {s.buffer_var.name for s in walk_stmts(func.body) if isinstance(s, S.Allocate)}


@pytest.mark.skipif(not SWAP, reason="the swapped GEMM is off for this ISA (SWAP_TB)")
def test_swapped_gemm_packs_the_activation_not_the_weight():
    g = optimize_prim_func(from_source(_source("bias", 512, 1024)))
    names = _allocations(g)
    assert any(n.startswith("matmul_apack") for n in names)  # A packed (16..MAX_ROWS rows)
    # above MAX_ROWS W is packed block by block as the GEMM uses it (INLINE_PACK)
    assert any(n.startswith("matmul_bblock") for n in names)
    # a weight that stays in cache (the seed MLP's 784 -> 128) keeps gemm_tb for few rows
    small = optimize_prim_func(from_source(_source("bias", 128, 784)))
    assert not any(n.startswith("matmul_apack") for n in _allocations(small))


@pytest.mark.skipif(not SWAP, reason="the swapped GEMM is off for this ISA (SWAP_TB)")
def test_swapped_gemm_stores_its_tiles_transposed():
    g = optimize_prim_func(from_source(_source("bias", 512, 1024)))
    # the output C[m, n] is written with the micro-kernel's column (the row of A) first
    out = _out_buffer(g)
    stores = [s for s in _stores(g) if s.buffer.data is out.data and any(
        ld.buffer.name.startswith("acc") for ld in _loads(s.value))]
    assert stores
    assert any(any(isinstance(e, E.Var) and e.name.startswith("jj")
                   for e in post_order(s.indices[0])) for s in stores)


def _divides_by_a_variable(e) -> bool:
    return any(isinstance(x, E.FloorDiv | E.FloorMod) and not isinstance(x.b, E.IntImm)
               for x in post_order(e))


@pytest.mark.skipif(not SWAP, reason="the swapped GEMM is off for this ISA (SWAP_TB)")
def test_swapped_gemm_over_symbolic_rows_stays_small():
    # the fused loop's digits by the symbolic panel-group count are let-bound, not divided out
    # in every index; a partial panel's rows of C run in one rolled loop of min(32, m - first
    # row) turns (GemmLoops.rolled_transposed_store), no test per row, each turn that row's
    # stores unrolled
    g = optimize_prim_func(from_source(_source("bias_relu", 512, 1024)))
    out = _out_buffer(g)
    stmts = list(walk_stmts(g.body))
    lets = [s for s in stmts if isinstance(s, S.LetStmt) and _divides_by_a_variable(s.value)]
    assert lets  # q // groups and q % groups, once per iteration
    for s in stmts:
        if isinstance(s, S.BufferStore):
            assert not any(_divides_by_a_variable(i) for i in s.indices)
    guards = [s for s in stmts if isinstance(s, S.IfThenElse)
              and any(isinstance(e, E.Var) and e.name == "jj" for e in post_order(s.condition))]
    assert not guards
    rolled = [s for s in stmts if isinstance(s, S.For) and s.loop_var.name == "jj"
              and s.kind != S.ForKind.VECTORIZED  # (the packed branch's full vector rows)
              and any(isinstance(st, S.BufferStore) and st.buffer.data is out.data
                      for st in walk_stmts(s.body))]
    assert rolled
    for s in rolled:  # columns of the tile (rows of C): a serial loop, its rows (ii) unrolled
        assert s.kind == S.ForKind.SERIAL and isinstance(s.extent, E.Min)
        assert isinstance(s.body, S.For) and s.body.kind == S.ForKind.UNROLLED
        assert s.body.loop_var.name == "ii"


# ---------------------------------------------------------------------------------- Relax
def _relax_linear(k, h, lead):
    """main(x: (*lead, n, k), w: (h, k), b: (h,), r: (*lead, n, h)) = x @ w.T + b + r, and
    relu(x @ w.T + b): weights passed at run time, as ``export_tvm`` gives them."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([*lead, n, k], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([h, k], "float32"))
    b = relax.Var("b", relax.TensorStructInfo([h], "float32"))
    r = relax.Var("r", relax.TensorStructInfo([*lead, n, h], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b, r]):
        with bb.dataflow():
            t = bb.emit(relax.op.matmul(x, relax.op.permute_dims(w)))
            t = bb.emit(relax.op.add(t, b))
            y1 = bb.emit(relax.op.add(t, r))
            t2 = bb.emit(relax.op.matmul(x, relax.op.permute_dims(w)))
            y2 = bb.emit(relax.op.nn.relu(relax.op.add(t2, b)))
            gv = bb.emit_output(relax.Tuple([y1, y2]))
        bb.emit_func_output(gv)
    return bb.get()


@pytest.mark.parametrize("lead", [(), (1,), (3,)])
def test_relax_build_symbolic_rows_match_numpy(lead, rng):
    k, h = 600, 1000  # N > K: gemm_tb / packed; the leading axis 3 unravels the GEMM's rows
    ex = relax.build(_relax_linear(k, h, lead), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    w = (rng.standard_normal((h, k)) / math.sqrt(k)).astype("float32")
    b = rng.standard_normal(h).astype("float32")
    for n in (1, 7, 33, 70):
        x = rng.standard_normal((*lead, n, k)).astype("float32")
        r = rng.standard_normal((*lead, n, h)).astype("float32")
        y1, y2 = vm["main"](*(tvm.nd.array(v) for v in (x, w, b, r)))
        ref = x.astype("float64") @ w.T + b
        np.testing.assert_allclose(y1.numpy(), ref + r, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(y2.numpy(), np.maximum(ref, 0), rtol=1e-4, atol=1e-4)


def test_relax_build_swapped_rows_match_numpy(rng):
    k, h = 1024, 512  # N <= K, 2^19 weight elements: the swapped GEMM from 16 rows (SWAP_TB)
    ex = relax.build(_relax_linear(k, h, (2,)), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    w = (rng.standard_normal((h, k)) / math.sqrt(k)).astype("float32")
    b = rng.standard_normal(h).astype("float32")
    for n in (9, 24, 101):  # 2 * n rows: 18, 48, 202
        x = rng.standard_normal((2, n, k)).astype("float32")
        r = rng.standard_normal((2, n, h)).astype("float32")
        y1, y2 = vm["main"](*(tvm.nd.array(v) for v in (x, w, b, r)))
        ref = x.astype("float64") @ w.T + b
        np.testing.assert_allclose(y1.numpy(), ref + r, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(y2.numpy(), np.maximum(ref, 0), rtol=1e-4, atol=1e-4)


def _eval(e, m: int) -> int:
    """The value of index expression ``e`` with its one variable (the row count) set to m."""
    if isinstance(e, int):
        return e
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        return m
    if isinstance(e, E.Cast):
        return _eval(e.value, m)
    ops = {E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
           E.FloorDiv: lambda a, b: a // b}
    return ops[type(e)](_eval(e.a, m), _eval(e.b, m))


@pytest.mark.skipif(not INLINE, reason="the inline packing is off for this ISA (INLINE_PACK)")
def test_inline_pack_buffer_holds_one_k_block_per_panel():
    n, k = 768, 3072  # 3072 = 8 K blocks of 384
    g = optimize_prim_func(from_source(_source("bias_residual", n, k)))
    blocks = [s for s in walk_stmts(g.body) if isinstance(s, S.Allocate)
              and s.buffer_var.name.startswith("matmul_bblock")]
    assert len(blocks) == 1
    # chunks of INLINE_PACK_ROWS rows rounded up to whole tiles: 258 (6 x 43) on AVX2, 256
    # (8 x 32) on AVX-512
    mr = gemm_kernel.default_tile()[0]
    rows = -(-gemm_kernel.INLINE_PACK_ROWS // mr) * mr
    kc = gemm_kernel.BLOCKING[ISA][0]
    for m, chunks in ((1, 1), (rows, 1), (rows + 1, 2), (1000, 4)):
        size = 1
        for d in blocks[0].extents:
            size *= _eval(d, m)
        assert size == chunks * n * kc  # not n * k: one K block of every panel per chunk
    assert not any(isinstance(s, S.Allocate) and s.buffer_var.name.startswith("matmul_bpack")
                   for s in walk_stmts(g.body))
    # a weight that stays in cache (the seed MLP's 784 -> 128) is packed in a pass of its own
    small = optimize_prim_func(from_source(_source("bias_relu", 128, 784)))
    names = _allocations(small)
    assert any(n.startswith("matmul_bpack") for n in names)
    assert not any(n.startswith("matmul_bblock") for n in names)


@pytest.mark.parametrize("n,k", [(520, 1010), (1000, 530), (768, 1000)])
def test_inline_pack_odd_shapes_match_numpy(n, k, rng):
    # weights of at least INLINE_PACK_MIN_WEIGHT elements: odd N (a partial panel, groups
    # not dividing the panels) and K (a short last K block)
    assert n * k >= gemm.INLINE_PACK_MIN_WEIGHT
    fn = build(optimize_prim_func(from_source(_source("bias_residual", n, k))))["fused"]
    for m in (gemm_tb.MAX_ROWS + 1, 301, 600):  # 600: three row chunks, a partial last
        _run(fn, "bias_residual", m, n, k, rng)
