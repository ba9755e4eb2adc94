"""``SizeFactors`` (the ONNX importer's record of what each run-time size is made of), on Relay
expressions built directly: the length of ``arange(0, batch, 1)`` is the batch, so a broadcast
of it against the batch and a flatten after it keep what they are made of."""

from __future__ import annotations

from minitvm import relay
from minitvm.relay.frontend.common import infer_type
from minitvm.relay.frontend.onnx.size_factors import SizeFactors


def _batch_positions(x, start=0, step=1):
    """``arange(start, x.shape[0], step)`` as a PyTorch export computes it (Shape, Gather, Cast,
    Range)."""
    b = relay.cast(relay.take(relay.shape_of(x, "int64"), relay.const(0, "int64")), "int64")
    return relay.arange(relay.const(start, "int64"), b, relay.const(step, "int64"),
                        dtype="int64")


def test_arange_up_to_the_batch_has_the_batch_length_through_a_broadcast_and_a_flatten():
    batch = relay.Any()
    idx = relay.var("idx", shape=(batch, 256, 16), dtype="int64")
    rows = _batch_positions(idx)
    offsets = relay.multiply(relay.expand_dims(rows, 1, 2), relay.const(256, "int64"))
    flat = relay.reshape(relay.add(idx, offsets), [-1])  # (KPConv's neighbour rows)
    sizes = SizeFactors()
    sizes.note(flat)
    n = infer_type(rows).shape[0]
    assert n is not batch and sizes.canonical(n) is batch
    summed = infer_type(flat.args[0]).shape[0]
    assert sizes.canonical(summed) is batch  # (a broadcast of two Anys: noted as the batch)
    assert sizes.of(infer_type(flat).shape[0]) == ((batch,), 256 * 16)


def test_other_aranges_over_the_batch_are_not_its_length():
    batch = relay.Any()
    x = relay.var("x", shape=(batch, 4), dtype="float32")
    for start, step in ((1, 1), (0, 2)):
        rows = _batch_positions(x, start, step)
        sizes = SizeFactors()
        sizes.note(rows)
        n = infer_type(rows).shape[0]
        assert sizes.canonical(n) is n and sizes.of(n) == ((n,), 1)

