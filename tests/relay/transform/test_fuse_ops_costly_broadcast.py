"""FuseOps keeps a broadcast argument computed by a short elementwise chain holding a
transcendental (a RotatE relation's ``cos`` / ``sin`` rotation, (b, 1, d) against (b, k, d)
candidates) out of a consumer that copies it more than twice over: fused, the chain would run
once per copy. Also through a tuple (phase 2 of the partitioner honours the opaque edge as
phase 1 does). Cheap chains, and arguments copied at most twice, fuse as before; numerics are
unchanged."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.transform.fuse_ops import _COSTLY_LOOKBACK


def _groups(body, *params) -> list[str]:
    mod = tvm.IRModule.from_expr(relay.Function(list(params), body))
    text = relay.transform.FuseOps(2)(relay.transform.InferType()(mod)).astext()
    return text.split("fn (")[1:]


def _rotation(k: int, op=relay.cos):
    x = relay.var("x", shape=(4, 1, 8))
    y = relay.var("y", shape=(4, k, 8))
    return op(x) * relay.const(2.0) - y, x, y


def test_costly_chain_runs_once_at_its_own_size():
    groups = _groups(*_rotation(5))
    assert len(groups) == 2
    small = [g for g in groups if "cos(" in g]
    assert len(small) == 1 and "subtract" not in small[0]
    assert "(4, 1, 8)" in small[0].split("->")[1].split("{")[0]


def test_copied_at_most_twice_or_cheap_still_fuses():
    assert len(_groups(*_rotation(2))) == 1                    # 2 copies: fuse
    assert len(_groups(*_rotation(5, relay.negative))) == 1    # no transcendental: fuse


def test_rotation_through_a_tuple_kept_apart():
    """Both halves of a complex rotation (cos and sin shared) broadcast against candidates
    and concatenated: the cos / sin chain's post-dominator is the tuple; it stays apart."""
    x = relay.var("x", shape=(4, 1, 8))
    y = relay.var("y", shape=(4, 6, 8))
    c, s = relay.cos(x), relay.sin(x)
    re = relay.expand_dims(c * x - s - y, 0)
    im = relay.expand_dims(s * x + c - y, 0)
    groups = _groups(relay.concatenate([re, im], 0), x, y)
    big = [g for g in groups if "concatenate" in g]
    assert len(big) == 1 and "cos(" not in big[0] and "sin(" not in big[0]


def test_lookback_is_bounded():
    """A transcendental further back than the lookback does not count (the walk is a
    constant, not a function of the program's size), so a long cheap chain still fuses."""
    x = relay.var("x", shape=(4, 1, 8))
    y = relay.var("y", shape=(4, 5, 8))
    e = relay.cos(x)
    for _ in range(_COSTLY_LOOKBACK + 2):
        e = relay.negative(e)
    groups = _groups(e - y, x, y)
    assert any("cos(" in g and "subtract" in g for g in groups)


def test_costly_broadcast_numerics():
    body, x, y = _rotation(7, relay.exp)
    mod = tvm.IRModule.from_expr(relay.Function([x, y], body))
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((4, 1, 8)).astype("float32")
    yv = rng.standard_normal((4, 7, 8)).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", xv)
    g.set_input("y", yv)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), np.exp(xv) * 2 - yv, rtol=1e-5,
                               atol=1e-6)
