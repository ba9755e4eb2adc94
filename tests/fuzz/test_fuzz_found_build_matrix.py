"""Found by the build-matrix fuzzer (``fuzz_long --build-programs``, seeds 600022, 600086,
600110, 600186, 600323, 600458: every finding of its first 500 programs): at opt_level 1 no
pass folds ``(a, b, c).0`` before FuseOps, which grouped the tuple and its field read -- a
group without a call -- into a ``Primitive=0`` function, and relay.build's graph codegen
refused the call ("the graph executor cannot run Function expressions"). FuseOps now leaves a
call-free group inline."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.transform.fuse_ops import _inline


def _program():
    """Seed 600086 minimized: a field read of a tuple, used by a let-bound tuple."""
    x = relay.var("x", shape=(2, 2))
    y = relay.var("y", shape=(2, 2))
    s = relay.subtract(x, y)
    g = relay.TupleGetItem(relay.Tuple([s, y]), 0)
    v = relay.var("v")
    body = relay.Let(v, relay.Tuple([g, x]), relay.multiply(s, s))
    return tvm.IRModule.from_expr(relay.Function([x, y], body))


def test_call_free_group_is_not_a_function():
    mod = relay.transform.InferType()(_program())
    fused = relay.transform.FuseOps(fuse_opt_level=1)(mod)
    text = fused.astext()
    assert "Primitive=0" not in text
    assert text.count("Primitive=1") == 2  # subtract and multiply
    assert "%3 = %2.0;" in text  # the field read stays inline, in main


def test_graph_executor_builds_it_at_opt_level_1():
    mod = _program()
    xv = np.array([[1, 2], [3, 4]], "float32")
    yv = np.array([[0.5, 0], [1, -1]], "float32")
    ref = relay.create_executor("debug", mod=mod).evaluate()(xv, yv).numpy()
    for level in (0, 1, 2, 3):
        with tvm.transform.PassContext(opt_level=level):
            lib = relay.build(mod, target="llvm")
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        m.set_input("x", xv)
        m.set_input("y", yv)
        m.run()
        np.testing.assert_array_equal(m.get_output(0).numpy(), ref)


def test_inline_survives_a_deep_chain():
    """``_inline`` walks a group with a worklist: a 100,000-deep nest of tuples and field
    reads needs no recursion."""
    p = relay.var("p", shape=(1,))
    a = relay.var("a", shape=(1,))
    e = p
    for k in range(100_000):
        e = relay.Tuple([e]) if k % 2 == 0 else relay.TupleGetItem(e, 0)
    out = _inline(e, {p: a})
    for _ in range(100_000):  # walk back down: the innermost leaf is now ``a``
        out = out.fields[0] if isinstance(out, relay.Tuple) else out.tuple_value
    assert out is a
