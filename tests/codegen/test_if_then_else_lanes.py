"""``if_then_else`` with a scalar condition inside a vectorized loop: its arms may differ in
width (a vector load beside a scalar constant, a symbolic ramp beside a scalar), and the phi that
joins them takes one type, so the narrower arm is widened in its own block before its branch.
Before the fix a padded, permuted Relax chain failed in ``relax.build`` with "floating point
constant invalid for type"."""

import re

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relax, tir
from minitvm.relax.frontend import nn
from minitvm.runtime import threadpool

LANES = 16


def _var(name, dtype="int32"):
    return tir.Var(name, dtype)


def _c(value, dtype):
    return tir.const(value, dtype)


# Each case: (the value stored at B[i, j] given A, i, j, n, m and the dtype; its numpy
# reference given a, i, j (integer grids of B's shape), n, m). B has n + 2 rows: the rows
# 1..n read A's rows 0..n-1 (a pad of one row on each side), so A is read only under the
# scalar condition ``1 <= i <= n``.
def _inside(i, n):
    return tir.all(i >= 1, i <= n)


CASES = {
    # a vector arm and a scalar constant arm (the new-user trial's kernel)
    "vector_else_constant": (
        lambda A, i, j, n, m, d: tir.if_then_else(_inside(i, n), A[i - 1, j] * _c(2, d),
                                                  _c(0, d)),
        lambda a, i, j, n, m: np.where((i >= 1) & (i <= n), 2 * a[np.clip(i - 1, 0, n - 1), j],
                                       0)),
    # a scalar (non-constant) arm beside a vector arm: the widening emits instructions
    "scalar_then_vector_else": (
        lambda A, i, j, n, m, d: tir.if_then_else(_inside(i, n), A[i - 1, 0], tir.Cast(d, j)),
        lambda a, i, j, n, m: np.where((i >= 1) & (i <= n), a[np.clip(i - 1, 0, n - 1), 0], j)),
    # nested: the then arm ends in the inner if_then_else's end block, not its first block
    "nested": (
        lambda A, i, j, n, m, d: tir.if_then_else(
            i >= 1, tir.if_then_else(i <= n, A[i - 1, j], _c(3, d)), _c(0, d)),
        lambda a, i, j, n, m: np.where(i >= 1, np.where(i <= n, a[np.clip(i - 1, 0, n - 1), j],
                                                        3), 0)),
}
INT_CASES = {
    # a symbolic ramp (i*m + j) beside a scalar constant
    "ramp_else_constant": (
        lambda A, i, j, n, m, d: tir.if_then_else(_inside(i, n), i * m + j, _c(-1, d)),
        lambda a, i, j, n, m: np.where((i >= 1) & (i <= n), i * m + j, -1)),
    # two ramps of different strides
    "ramp_else_ramp": (
        lambda A, i, j, n, m, d: tir.if_then_else(_inside(i, n), i * m + j, j * 2),
        lambda a, i, j, n, m: np.where((i >= 1) & (i <= n), i * m + j, 2 * j)),
}


def _padded_rows(case, dtype):
    """``B[i, j] = case(...)`` for B of shape (n + 2, m): rows in parallel, each row a vector
    body of LANES-wide chunks and a scalar tail for the last ``m % LANES`` columns."""
    value = {**CASES, **INT_CASES}[case][0]
    n, m = _var("n"), _var("m")
    A = tir.decl_buffer((n, m), dtype, "A")
    B = tir.decl_buffer((n + 2, m), dtype, "B")
    i, jo, ji, jt = _var("i"), _var("jo"), _var("ji"), _var("jt")
    j_vec = jo * LANES + ji
    full = tir.floordiv(m, LANES) * LANES
    body = tir.SeqStmt([
        tir.For(jo, 0, tir.floordiv(m, LANES), 0, tir.For(
            ji, 0, LANES, tir.ForKind.VECTORIZED,
            tir.BufferStore(B, value(A, i, j_vec, n, m, dtype), [i, j_vec]))),
        tir.For(jt, full, m - full, 0,
                tir.BufferStore(B, value(A, i, jt, n, m, dtype), [i, jt])),
    ])
    return tir.PrimFunc([A, B, n, m], tir.For(i, 0, n + 2, tir.ForKind.PARALLEL, body))


def _run_both_thread_counts(kernel, ref, dtype, rng):
    old = threadpool.get_num_threads()
    try:
        for threads in (1, 2):
            threadpool.set_num_threads(threads)
            for n, m in [(3, 16), (5, 37), (40, 70)]:  # vector body only, body + tail, larger
                if np.dtype(dtype).kind == "f":
                    a = rng.standard_normal((n, m)).astype(dtype)
                else:
                    a = rng.integers(-50, 50, (n, m)).astype(dtype)
                b = np.full((n + 2, m), 99, dtype)
                kernel(a, b, n, m)
                ii, jj = np.meshgrid(np.arange(n + 2), np.arange(m), indexing="ij")
                np.testing.assert_array_equal(b, ref(a, ii, jj, n, m).astype(dtype),
                                              err_msg=f"threads={threads} n={n} m={m}")
    finally:
        threadpool.set_num_threads(old)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int8"])
@pytest.mark.parametrize("case", list(CASES))
def test_scalar_condition_mixed_width_arms_match_numpy(case, dtype, rng):
    kernel = codegen.build(_padded_rows(case, dtype))["main"]
    _run_both_thread_counts(kernel, CASES[case][1], dtype, rng)


@pytest.mark.parametrize("case", list(INT_CASES))
def test_scalar_condition_ramp_arms_match_numpy(case, rng):
    kernel = codegen.build(_padded_rows(case, "int32"))["main"]
    _run_both_thread_counts(kernel, INT_CASES[case][1], "int32", rng)


def _blocks(src: str, func: str) -> dict:
    """{block label: its instruction lines} of function ``func`` in the printed module."""
    start = re.search(f'define [a-z ]*void @"{func}"', src).start()
    text = src[start:src.index("\n}\n", start)]
    blocks, cur = {}, None
    for line in text.splitlines()[2:]:
        label = re.fullmatch(r'"?([\w.]+)"?:', line)
        if label:
            cur = blocks[label.group(1)] = []
        elif cur is not None and line.strip():
            cur.append(line.strip())
    return blocks


def test_narrow_arm_is_widened_in_its_own_block():
    """Expected program: the join block starts with a ``<16 x float>`` phi; the scalar arm's
    broadcast (insertelement + shufflevector) sits in that arm's block just before its branch,
    the constant arm is a vector constant, and the vector arm is used as it is."""
    A = tir.decl_buffer((6, LANES), "float32", "A")
    B = tir.decl_buffer((6, LANES), "float32", "B")
    i, j = _var("i"), _var("j")
    val = tir.if_then_else(i >= 2, A[i, 0], tir.if_then_else(i >= 1, A[i, j], _c(0.0, "float32")))
    f = tir.PrimFunc([A, B], tir.For(i, 0, 6, 0, tir.For(
        j, 0, LANES, tir.ForKind.VECTORIZED, tir.BufferStore(B, val, [i, j]))))
    mod = codegen.build(f)
    src = mod.get_source()
    impl = re.search(r'define [a-z ]*void @"(\w+_impl)"', src).group(1)
    blocks = _blocks(src, impl)
    defined = {m.group(1): (name, line) for name, lines in blocks.items() for line in lines
               if (m := re.match(r'%"([\w.]+)" = ', line))}
    phis = [(name, line) for name, lines in blocks.items() for line in lines if " phi " in line
            and "<16 x float>" in line]
    assert len(phis) == 2  # the inner and the outer join
    for name, line in phis:
        assert blocks[name][0] == line  # a phi leads its block
        for value, pred in re.findall(r'\[(%"[\w.]+"|<[^\]]*>), %"([\w.]+)"\]', line):
            assert blocks[pred][-1] == f'br label %"{name}"'
            if value.startswith("<"):  # the constant arm: a vector constant
                assert len(re.findall(r"float\s+0x0\b", value)) == LANES
                continue
            where, definition = defined[value[2:-1]]
            assert where == pred, f"{value} of {line!r} is defined in {where}, not {pred}"
            assert "<16 x float>" in definition
    then_block = blocks["ite.then"]
    assert then_block[-3].split(" = ")[1].startswith("insertelement <16 x float> poison, float")
    assert then_block[-2].split(" = ")[1].startswith("shufflevector")
    a = np.arange(6 * LANES, dtype="float32").reshape(6, LANES)
    b = np.zeros_like(a)
    mod["main"](a, b)
    expect = a.copy()
    expect[2:] = a[2:, :1]
    expect[0] = 0
    np.testing.assert_array_equal(b, expect)


class _PadPermuteChain(nn.Module):
    """take -> pad -> permute -> concat -> split -> where -> triu -> astype (the trial's chain)."""

    def forward(self, x, idx):
        t = nn.op.take(x, idx, axis=0)  # (k, m)
        p = nn.op.pad(t, [0, 0, 1, 2], value=0.0)  # (k, m + 3)
        q = nn.op.permute_dims(p, [1, 0])  # (m + 3, k)
        c = nn.op.concat([q, nn.op.negative(q)], dim=0)  # (2 (m + 3), k)
        a, b = nn.op.split(c, 2, axis=0)
        w = nn.op.where(nn.op.greater(a, b), a, b)  # |q|
        u = nn.op.triu(w, 1)
        return nn.op.astype(u, "float16")


def test_relax_pad_permute_chain_builds_and_runs_at_two_shapes(rng):
    spec = {"forward": {"x": nn.spec.Tensor(("n", "m"), "float32"),
                        "idx": nn.spec.Tensor(("k",), "int64")}}
    mod, _ = _PadPermuteChain().export_tvm(spec)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for n, m, k in [(7, 13, 5), (40, 61, 33)]:
        x = rng.standard_normal((n, m)).astype("float32")
        idx = rng.integers(0, n, k).astype("int64")
        out = vm["forward"](tvm.nd.array(x), tvm.nd.array(idx)).numpy()
        q = np.pad(x[idx], [(0, 0), (1, 2)]).T
        expect = np.triu(np.abs(q), 1).astype("float16")
        assert out.dtype == np.float16 and out.shape == (m + 3, k)
        np.testing.assert_array_equal(out, expect)
