"""Relax ``stack`` picks its input by a branch, as Relay's: a transposed convolution's four
phases interleaved by two stacks and reshapes (UNet's up-path, symbolic batch) load one input
per element, not all four under a chain of selects (0.218 -> 0.170 ms for UNet's first one)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.pipeline import get_pipeline
from minitvm.tir import expr as E
from minitvm.tir.stmt_functor import post_order_visit

_RNG = np.random.default_rng(0)
C, H = 4, 16


def _interleave(n):
    """main(x0..x3 (n, C, H, H), b (1, C, 1, 1)): the 2x2 interleave of the four phases + b."""
    xs = [relax.Var(f"x{k}", relax.TensorStructInfo([n, C, H, H], "float32")) for k in range(4)]
    bias = relax.Var("b", relax.TensorStructInfo([1, C, 1, 1], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [*xs, bias]):
        with bb.dataflow():
            rows = [bb.emit(relax.op.reshape(relax.op.stack(pair, axis=4), [n, C, H, 2 * H]))
                    for pair in (xs[:2], xs[2:])]
            up = bb.emit(relax.op.reshape(relax.op.stack(rows, axis=3), [n, C, 2 * H, 2 * H]))
            out = bb.emit_output(relax.op.add(up, bias))
        bb.emit_func_output(out)
    return bb.get()


def _reference(xs, b):
    n = xs[0].shape[0]
    out = np.empty((n, C, 2 * H, 2 * H), "float32")
    for k, x in enumerate(xs):
        out[:, :, k // 2::2, k % 2::2] = x
    return out + b


def test_the_legalized_stack_picks_by_if_then_else():
    legal = get_pipeline("zero")(_interleave(tir.Var("n", "int64")))
    (func,) = [f for f in legal.functions.values() if isinstance(f, tvm.tir.PrimFunc)]
    picks, selects = [], []
    post_order_visit(func.body, lambda e: (
        picks.append(e) if isinstance(e, E.Call) and e.op_name.endswith("if_then_else") else
        selects.append(e) if isinstance(e, E.Select) else None))
    assert len(picks) == 3 and not selects  # one pick per stack, no select loading every input


@pytest.mark.parametrize("symbolic", [False, True])
def test_interleaved_phases_branch_on_the_row_and_match_numpy(symbolic):
    n = tir.Var("n", "int64") if symbolic else 2
    ex = relax.build(_interleave(n), "llvm")
    (kernel,) = [v[0] for name, v in ex.kernels.items() if "stack" in name]
    # the row's phase is uniform in the vector loop: a branch, each side loading its two inputs
    assert "ite.then" in kernel.ir
    vm = relax.VirtualMachine(ex, tvm.cpu())
    b = _RNG.standard_normal((1, C, 1, 1)).astype("float32")
    for batch in ([1, 3] if symbolic else [2]):
        xs = [_RNG.standard_normal((batch, C, H, H)).astype("float32") for _ in range(4)]
        got = vm["main"](*[tvm.nd.array(x) for x in xs], tvm.nd.array(b)).numpy()
        np.testing.assert_array_equal(got, _reference(xs, b))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_of_three_matches_numpy(axis):
    xs = [_RNG.standard_normal((2, 3, 5)).astype("float32") for _ in range(3)]
    vs = [relax.Var(f"x{k}", relax.TensorStructInfo([2, 3, 5], "float32")) for k in range(3)]
    bb = relax.BlockBuilder()
    with bb.function("main", vs):
        out = bb.emit(relax.op.stack(vs, axis=axis))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    got = vm["main"](*[tvm.nd.array(x) for x in xs]).numpy()
    np.testing.assert_array_equal(got, np.stack(xs, axis))
