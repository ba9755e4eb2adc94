"""The row softmax's max (``schedule/softmax_rows.py``): a one-instruction ``a > b ? a : b`` in
``MAX_ACCUMULATORS`` independent accumulators on rows of enough vectors. It drops a NaN that
IEEE's max would keep, so these check that every output of a row holding NaN (or +inf, or only
-inf) is still what numpy gives, wherever in the row it sits: in a block of accumulators, in a
leftover vector, in the overlapping last chunk, in a scalar tail; in Relay and Relax, static and
symbolic widths; and the accumulator's width in the lowered kernel."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay, tir
from minitvm.contrib import graph_executor
from minitvm.schedule import softmax_rows
from minitvm.schedule.common import lanes
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

L = lanes("float32")
NACC = softmax_rows.MAX_ACCUMULATORS
pytestmark = pytest.mark.skipif(not softmax_rows.applies(), reason="row softmax off here")


def _softmax(x):
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def _with_specials(rows: int, width: int, rng) -> np.ndarray:
    """Random rows, then NaN at several places, +inf, and a row of -inf."""
    x = rng.standard_normal((rows, width)).astype("float32")
    spots = sorted({min(max(j, 0), width - 1)
                    for j in (0, L + 3, NACC * L + 1, width // 2, width - L, width - 1)})
    for r, j in enumerate(spots):
        x[r, j] = np.nan
    x[len(spots), width // 3] = np.inf
    x[len(spots) + 1, :] = -np.inf
    x[len(spots) + 2, width - 1] = 80.0  # an exp that overflows without the max subtracted
    return x


WIDTHS = [7, 37, 2 * NACC * L, 197, 2 * NACC * L + 3 * L, 1000]


def _relay_lib(shape):
    x = relay.var("x", shape=shape)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(x, axis=-1)))
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="llvm")


@pytest.mark.parametrize("width", WIDTHS)
def test_relay_rows_with_nan_and_inf(width, rng):
    x = _with_specials(12, width, rng)
    lib = _relay_lib(x.shape)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), _softmax(x.astype("float64")),
                               rtol=1e-5, atol=1e-6)


def _acc_width(lib) -> list[int]:
    out = []
    for k in lib.get_lib().kernels.values():
        if k.prim_func is not None:
            out += [int(s.buffer.shape[0]) for s in walk_stmts(k.prim_func.body)
                    if isinstance(s, S.DeclBuffer) and s.buffer.name == "sm_acc"]
    return out


def test_accumulators_only_on_long_rows():
    assert _acc_width(_relay_lib((4, 2 * NACC * L))) == [NACC * L]
    assert _acc_width(_relay_lib((4, 2 * NACC * L - 1))) == [L]


@pytest.mark.parametrize("symbolic", [False, True])
def test_relax_rows_with_nan_and_inf(symbolic, rng):
    n = tir.Var("n", "int64") if symbolic else 2 * NACC * L + 2 * L + 5
    x = relax.Var("x", relax.TensorStructInfo([12, n], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.nn.softmax(x, axis=-1))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    widths = [n] if not symbolic else [9, 2 * NACC * L, 2 * NACC * L + 2 * L + 5, 600]
    for w in widths:
        xv = _with_specials(12, w, rng)
        got = vm["main"](tvm.nd.array(xv)).numpy()
        np.testing.assert_allclose(got, _softmax(xv.astype("float64")), rtol=1e-5, atol=1e-6)
