"""The CTC forward-variable kernel (``topi.ctc`` stage, ``schedule.ctc`` loops, Relay's
``nn.ctc_log_alpha``): built native and run by the interpreter (its numpy reference), the
sample's likelihood read off the table against a brute-force sum over every alignment of
tiny inputs (repeated labels, a nonzero blank, an empty target, a sample too short for its
target), padded and concatenated targets alike; and the type relation's errors."""

import itertools

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def _collapse(path, blank: int) -> tuple:
    out, last = [], None
    for c in path:
        if c != last and c != blank:
            out.append(c)
        last = c
    return tuple(out)


def _brute_force(log_probs, labels, frames: int, blank: int) -> float:
    """``log P(labels)``: every path of ``frames`` symbols that collapses to them."""
    classes = log_probs.shape[1]
    total = [sum(log_probs[t, c] for t, c in enumerate(path))
             for path in itertools.product(range(classes), repeat=frames)
             if _collapse(path, blank) == tuple(labels)]
    return float(np.logaddexp.reduce(total)) if total else -np.inf


def _module(shapes, blank: int, width: int):
    names = ("lp", "tg", "il", "tl")
    dtypes = ("float64", "int64", "int64", "int64")
    xs = [relay.var(n, shape=s, dtype=d) for n, s, d in zip(names, shapes, dtypes, strict=True)]
    out = relay.op.nn.ctc_log_alpha(*xs, blank=blank, width=width)
    return tvm.IRModule.from_expr(relay.Function(xs, out))


def _native(mod, args):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in zip(("lp", "tg", "il", "tl"), args, strict=True):
        g.set_input(name, value)
    g.run()
    return g.get_output(0).numpy()


@pytest.mark.parametrize("concatenated", [False, True], ids=["padded", "concatenated"])
def test_likelihoods_match_every_alignment(concatenated):
    rng = np.random.default_rng(0)
    frames, batch, classes, blank = 5, 4, 3, 2
    log_probs = np.log(rng.dirichlet(np.ones(classes), (frames, batch)))
    padded = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0], [1, 1, 1]], dtype="int64")
    target_lengths = np.array([2, 1, 0, 3], dtype="int64")
    input_lengths = np.array([5, 4, 3, 2], dtype="int64")  # (the last cannot fit 1 1 1)
    targets = np.concatenate([padded[n, :target_lengths[n]] for n in range(batch)]) \
        if concatenated else padded
    width = 7
    args = [log_probs, targets, input_lengths, target_lengths]
    mod = _module([a.shape for a in args], blank, width)
    native = _native(mod, args)
    interpreted = relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()
    np.testing.assert_allclose(native, interpreted, rtol=1e-12)
    for n in range(batch):
        steps, length = input_lengths[n], target_lengths[n]
        last = native[n, steps - 1, [2 * length, 2 * length - 1] if length else [0]]
        want = _brute_force(log_probs[:steps, n], padded[n, :length], steps, blank)
        np.testing.assert_allclose(np.logaddexp.reduce(last), want, rtol=1e-12)
        assert np.isneginf(native[n, steps:]).all()  # (past the sample's frames)
        assert np.isneginf(native[n, :, 2 * length + 1:]).all()


@pytest.mark.parametrize("shapes, dtype, match", [
    ([(5, 2, 3), (2, 3), (3,), (2,)], "float32", "batch"),
    ([(5, 2), (2, 3), (2,), (2,)], "float32", "expects log_probs"),
    ([(5, 2, 3), (2, 3), (2,), (2,)], "int32", "must be floats"),
], ids=["batch", "rank", "dtype"])
def test_type_relation_errors(shapes, dtype, match):
    dtypes = (dtype, "int64", "int64", "int64")
    xs = [relay.var(f"x{i}", shape=s, dtype=d) for i, (s, d) in
          enumerate(zip(shapes, dtypes, strict=True))]
    mod = tvm.IRModule.from_expr(relay.Function(xs, relay.op.nn.ctc_log_alpha(*xs, width=5)))
    with pytest.raises(Exception, match=match):
        relay.transform.InferType()(mod)
