"""The leftover rows of a GEMM over a symbolic row count: tiles of the binary digits of
``M % mr`` (8, 4, 2, 1 rows of a 12-row tile), not one tile per remainder; with a constant
factor (``n * 16``: a Relax activation of ``n`` images of 16 tokens, flattened) in units of the
remainders it can take (none when the tile's rows divide the factor). Exact at every size."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.schedule import gemm_kernel
from minitvm.tir.expr import IntImm, Mul, Var


def _rows(n, c):
    return Mul(n, IntImm("int64", c))


def test_row_rests():
    n = Var("n", "int64")
    assert gemm_kernel.row_step(_rows(n, 16)) == 16
    assert gemm_kernel.row_step(Mul(IntImm("int64", 3), _rows(n, 4))) == 12
    assert gemm_kernel.row_step(n) == 1
    assert gemm_kernel.row_rests(n, 6) == [1, 2, 3, 4, 5]
    assert gemm_kernel.row_rests(_rows(n, 16), 8) == []
    assert gemm_kernel.row_rests(_rows(n, 16), 6) == [2, 4]
    assert gemm_kernel.row_rests(_rows(n, 9), 6) == [3]


def _tile_rows(monkeypatch, M, mr, nr) -> list[int]:
    """The row counts of the micro-kernel tiles the GEMM over ``M`` rows compiles."""
    rows = []
    micro = gemm_kernel.GemmBuilder.micro_kb

    def record(self, b, row0, jo, n, *args):
        rows.append(n)
        return micro(self, b, row0, jo, n, *args)

    monkeypatch.setattr(gemm_kernel.GemmBuilder, "micro_kb", record)
    gemm_kernel.gemm(M, 40, 300, mr=mr, nr=nr, prepacked_b=True)
    return rows


@pytest.mark.parametrize("factor", [16, 4, 5])
def test_symbolic_rows_of_a_factor_compile_only_possible_tails(monkeypatch, factor):
    mr, nr = gemm_kernel.default_tile()
    n = Var("n", "int64")
    plain = _tile_rows(monkeypatch, n, mr, nr)
    rows = _tile_rows(monkeypatch, _rows(n, factor), mr, nr)
    rests = gemm_kernel.row_rests(_rows(n, factor), mr)
    assert set(rests) == {r for r in range(1, mr) if r % np.gcd(factor, mr) == 0}
    # the tails: the binary digits of the remainder, in units of the step (1, 2, 4, 8 rows of
    # a 12-row tile; none when the tile's rows divide the factor)
    unit = int(np.gcd(factor, mr))
    digits = [unit << k for k in range(mr) if rests and unit << k <= rests[-1]]
    assert sorted(set(plain)) == sorted({mr, *[1 << k for k in range(mr) if 1 << k < mr]})
    assert sorted(set(rows)) == sorted({mr, *digits})
    # each tile compiled as often as the full one (once per kind of column panel)
    assert all(rows.count(r) == rows.count(mr) for r in rows)


@pytest.mark.parametrize("tokens", [16, 5, 1])
def test_relax_symbolic_batch_of_few_tokens_matches_numpy(tokens):
    """(n, tokens, 64) @ (64, 40) + bias with a symbolic n: one GEMM over ``n * tokens`` rows
    (too few tokens for a loop over images), exact at every batch size."""
    n = tir.Var("n", "int64")
    rng = np.random.default_rng(tokens)
    w = rng.standard_normal((64, 40)).astype("float32") * 0.2
    bias = rng.standard_normal(40).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo([n, tokens, 64], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(relax.op.matmul(x, relax.const(w)), relax.const(bias)))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for batch in (1, 2, 3, 7, 11, 12, 13, 27):
        a = rng.standard_normal((batch, tokens, 64)).astype("float32")
        out = vm["main"](tvm.nd.array(a)).numpy()
        np.testing.assert_allclose(out, a @ w + bias, rtol=1e-4, atol=1e-4)
