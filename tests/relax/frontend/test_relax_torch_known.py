"""``relax.frontend.torch.known.known_value``: the import-time value of a value the torch
importer bound from constants (a QAT scale computed from a buffer), None for anything that
reads an input or an operator without a numpy reference, and a long chain walked without
recursion."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from minitvm import relax
from minitvm.ir.op import Op
from minitvm.relax import op as R
from minitvm.relax.expr import const
from minitvm.relax.frontend.torch.known import known_value


def _built(body):
    """Bindings ``body(bb, x)`` emits inside a function of ``x`` (1, 4) float32: (context with
    the builder, what ``body`` returns)."""
    x = relax.Var("x", relax.TensorStructInfo((1, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = body(bb, x)
            gv = bb.emit_output(x)
        bb.emit_func_output(gv)
    return SimpleNamespace(bb=bb), out


def test_scale_computed_from_a_constant_is_known():
    w = np.array([[1.0, -3.0], [0.5, 2.0]], "float32")

    def body(bb, x):
        a = bb.emit(R.abs(const(w)))
        m = bb.emit(R.max(a, axis=[1], keepdims=False))
        s = bb.emit(R.divide(m, const(np.float32(127))))
        return s, bb.emit(R.reshape(s, (2, 1))), bb.emit(R.add(x, const(np.float32(1))))

    ctx, (s, shaped, from_input) = _built(body)
    np.testing.assert_array_equal(known_value(ctx, s), np.array([3, 2], "float32") / 127)
    assert known_value(ctx, shaped).shape == (2, 1)
    assert known_value(ctx, from_input) is None
    assert known_value(ctx, 0.25) == np.float32(0.25) and known_value(ctx, None) is None


def test_limit_and_a_100000_deep_chain():
    """The walk down a 100,000-binding chain to an input (the bindings in a table as a
    builder's): None, with no recursion; the default limit gives up early."""
    sinfo, negative = relax.TensorStructInfo((1,), "float32"), Op.get("relax.negative")
    x = relax.Var("x", sinfo)
    bound, v = {}, x
    for i in range(100_000):
        value = relax.Call(negative, [v])
        v = relax.Var(f"v{i}", sinfo)
        bound[v] = value
    ctx = SimpleNamespace(bb=SimpleNamespace(lookup_binding=bound.get))
    assert known_value(ctx, v, limit=200_000) is None
    assert known_value(ctx, v) is None  # (past the default limit of 256 calls)
    bound[x] = relax.Call(negative, [const(np.ones(1, "float32"))])
    assert known_value(ctx, v, limit=1_000) is None
