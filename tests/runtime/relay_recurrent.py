"""A GRU- / LSTM-like Relay loop over a run-time length written with the builder API (the
Relay VM loop tests' program: no extras needed)."""

import numpy as np

import minitvm as tvm
from minitvm import relay

ANY = relay.Any()
HID = 16  # (rows of batch * 64 bytes: a row view starts at a 64-byte boundary)


def recurrent(kind: str, fixed_index: bool = False, return_row: bool = False, shift: int = 0):
    """A GRU-like (``gru``: one state) or LSTM-like (``lstm``: h and c) loop over the rows of
    ``x [?, batch, 3]`` writing each step's h into row t of a ``[?, batch, HID]`` result
    (``fixed_index``: into row t // 2, so every other step overwrites the row h, read then,
    is a view of);
    ``return_row``: the function returns the last h too; ``shift``: row t + shift instead."""
    x = relay.var("x", shape=(ANY, ANY, 3), dtype="float32")
    rng = np.random.default_rng(0)
    w = relay.const(rng.standard_normal((HID, 3)).astype("float32"))
    u = relay.const(rng.standard_normal((HID, HID)).astype("float32") * 0.5)
    i = relay.var("i", shape=(), dtype="int64")
    n = relay.var("n", shape=(), dtype="int64")
    src = relay.var("src", shape=(ANY, ANY, 3), dtype="float32")
    h = relay.var("h", shape=(ANY, HID), dtype="float32")
    c = relay.var("c", shape=(ANY, HID), dtype="float32")
    ys = relay.var("ys", shape=(ANY, ANY, HID), dtype="float32")

    def body(i, n, src, h, c, ys):
        at = relay.floor_divide(i, relay.const(2, "int64")) if fixed_index else i
        if shift:
            at = at + relay.const(shift, "int64")
        pre = relay.nn.dense(relay.take(src, at, axis=0), w) + relay.nn.dense(h, u)
        if kind == "lstm":
            c2 = relay.sigmoid(pre) * c + relay.tanh(pre)
            h2 = relay.tanh(c2) * relay.sigmoid(pre + relay.const(1.0))
        else:
            c2 = c
            h2 = relay.tanh(pre) * relay.const(0.5) + h * relay.const(0.5)
        return [i + relay.const(1, "int64"), n, src, h2, c2, relay.op.vm.update_row(ys, h2, at)]

    loop = relay.loops.while_loop(lambda i, n, *_: relay.less(i, n), [i, n, src, h, c, ys], body)
    shape = relay.shape_of(x, "int64")
    rows = relay.take(shape, relay.const(0, "int64"))
    h0 = relay.zeros_like(relay.nn.dense(relay.take(x, relay.const(0, "int64"), axis=0), w))
    ys0 = relay.zeros_like(relay.nn.dense(x, w))
    call = relay.Call(loop, [relay.const(0, "int64"), rows, x, h0, h0, ys0])
    outs = [relay.TupleGetItem(call, 5)] + ([relay.TupleGetItem(call, 3)] if return_row else [])
    return tvm.IRModule.from_expr(relay.Function([x], relay.Tuple(outs)))
