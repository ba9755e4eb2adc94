"""ONNX sequences and optionals, shared by both importers.

A sequence whose length is known at import is kept as a Python tuple of the dialect's tensor
values (``OnnxSequence``) and an optional as ``OnnxOptional`` (its value, or None when empty):
every sequence operator then resolves at import, and at a graph boundary a sequence becomes a
tuple of tensors (a graph input of sequence type is one parameter per element). The
converters here are dialect-neutral; a dialect supplies the few tensor operations they need
(``SeqOps``) and registers ``register_sequence_ops(table, ops)``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .onnx_model import NodeContext, onnx_dtype

__all__ = ["OnnxSequence", "OnnxOptional", "SeqOps", "SEQUENCE_OPS", "register_sequence_ops",
           "flatten", "unflatten", "unflatten_all", "check_tensor_inputs", "graph_input_kind"]


class OnnxSequence:
    """A sequence of tensors known in length at import: the dialect's values, in order."""

    __slots__ = ("items", "dtype")

    def __init__(self, items, dtype: str | None):
        self.items = tuple(items)
        self.dtype = dtype

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return f"OnnxSequence(len={len(self.items)}, dtype={self.dtype})"


class OnnxOptional:
    """An ONNX optional: ``value`` (a tensor value or an ``OnnxSequence``), or None if empty."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"OnnxOptional({'empty' if self.value is None else type(self.value).__name__})"


class SeqOps:
    """The tensor operations the sequence converters need from a dialect."""

    def concat(self, ctx, values: list, axis: int):
        raise NotImplementedError

    def expand_dims(self, ctx, value, axis: int):
        raise NotImplementedError

    def squeeze(self, ctx, value, axis: int):
        raise NotImplementedError

    def slice_axis(self, ctx, value, axis: int, begin: int, end: int):
        raise NotImplementedError

    def const(self, ctx, arr: np.ndarray):
        raise NotImplementedError


# what ``flatten`` gives per value kind; a structure is nested tuples of these tags
TENSOR = "tensor"


def flatten(value) -> tuple:
    """(structure, tensor leaves) of a value: a tensor, a sequence or an optional. An explicit
    stack, no recursion (nesting is shallow anyway)."""
    leaves: list = []

    def walk(v):
        # returns a structure; sequences inside optionals are one level deep at most in ONNX
        if isinstance(v, OnnxOptional):
            return ("optional", None if v.value is None else walk(v.value))
        if isinstance(v, OnnxSequence):
            leaves.extend(v.items)
            return ("sequence", len(v.items), v.dtype)
        leaves.append(v)
        return TENSOR

    return walk(value), leaves


def output_parts(value) -> tuple[list, bool]:
    """A graph output as (tensors, whether it is a tuple): a sequence gives its tensors as a
    tuple, an empty optional an empty tuple, a present optional or a tensor the value itself."""
    if isinstance(value, OnnxOptional):
        value = value.value
        if value is None:
            return [], True
    if isinstance(value, OnnxSequence):
        return list(value.items), True
    return [value], False


def unflatten(structure, leaves: list):
    """The value of ``structure`` built from ``leaves`` (the inverse of ``flatten``)."""
    it = iter(leaves)

    def build(s):
        if s == TENSOR:
            return next(it)
        if s[0] == "optional":
            return OnnxOptional(None if s[1] is None else build(s[1]))
        return OnnxSequence([next(it) for _ in range(s[1])], s[2])

    return build(structure)


def unflatten_all(structures: list, leaves: list) -> list:
    """The values of ``(structure, leaf count)`` pairs built from consecutive runs of
    ``leaves`` (several outputs flattened one after another)."""
    outs, k = [], 0
    for structure, n in structures:
        outs.append(unflatten(structure, leaves[k:k + n]))
        k += n
    return outs


def graph_input_kind(vi) -> tuple[str, int | None]:
    """('tensor' | 'sequence' | 'optional' | 'optional_sequence', element type code) of a
    graph input's declared type."""
    t = vi.type
    which = t.WhichOneof("value")
    if which == "sequence_type":
        return "sequence", t.sequence_type.elem_type.tensor_type.elem_type or None
    if which == "optional_type":
        inner = t.optional_type.elem_type
        if inner.WhichOneof("value") == "sequence_type":
            return "optional_sequence", \
                inner.sequence_type.elem_type.tensor_type.elem_type or None
        return "optional", inner.tensor_type.elem_type or None
    return "tensor", t.tensor_type.elem_type or None


# operators that take or give sequences/optionals (every other operator takes tensors)
SEQUENCE_OPS = ("SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceAt",
                "SequenceErase", "SequenceLength", "ConcatFromSequence", "SplitToSequence",
                "SequenceMap", "Optional", "OptionalHasElement", "OptionalGetElement")
_PASS_THROUGH = SEQUENCE_OPS + ("If", "Loop", "Identity")


def check_tensor_inputs(ctx: NodeContext, ins: list) -> None:
    """A clear error when a sequence or optional reaches an operator that takes tensors."""
    if ctx.node is None or ctx.node.op_type in _PASS_THROUGH:
        return
    for name, v in zip(ctx.node.input, ins):
        if isinstance(v, OnnxSequence | OnnxOptional):
            kind = "a sequence" if isinstance(v, OnnxSequence) else "an optional"
            raise ctx.fail(f"input {name!r} is {kind}, but {ctx.node.op_type} takes tensors")


def _sequence(ctx: NodeContext, v, what: str) -> OnnxSequence:
    if isinstance(v, OnnxOptional) and isinstance(v.value, OnnxSequence):
        v = v.value
    if not isinstance(v, OnnxSequence):
        raise ctx.fail(f"{what} must be a sequence, got {type(v).__name__}")
    return v


def _position(ctx: NodeContext, value: Callable, v, n: int, lo: int, hi: int, what: str) -> int:
    """A known position in [lo, hi] (negative counts from the end of an ``n``-long sequence)."""
    p = int(np.asarray(value(v, what)).reshape(-1)[0])
    if not lo <= p <= hi:
        raise ctx.fail(f"{what} {p} is out of range [{lo}, {hi}] for a sequence of length {n}")
    return p + n if p < 0 else p


def register_sequence_ops(table, ops: SeqOps, *, value: Callable, shape: Callable,
                          dtype: Callable) -> None:
    """Register the sequence and optional converters in a dialect's table. ``value(ctx, v,
    what)`` gives a known input or raises the dialect's clear error; ``shape(ctx, v)`` and
    ``dtype(ctx, v)`` describe a tensor value."""

    @table.register("SequenceConstruct")
    def _construct(ctx, ins, attrs):
        if not ins:
            raise ctx.fail("needs at least one input")
        return OnnxSequence(ins, dtype(ctx, ins[0]))

    @table.register("SequenceEmpty")
    def _empty(ctx, ins, attrs):
        return OnnxSequence([], onnx_dtype(int(attrs.get("dtype", 1)), ctx.error))

    @table.register("SequenceInsert")
    def _insert(ctx, ins, attrs):
        seq = _sequence(ctx, ins[0], "input_sequence")
        n = len(seq)
        pos = n
        if len(ins) > 2 and ins[2] is not None:
            pos = _position(ctx, lambda v, w: value(ctx, v, w), ins[2], n, -n, n,
                            "SequenceInsert's position")
        items = list(seq.items)
        items.insert(pos, ins[1])
        return OnnxSequence(items, seq.dtype or dtype(ctx, ins[1]))

    @table.register("SequenceAt")
    def _at(ctx, ins, attrs):
        seq = _sequence(ctx, ins[0], "input_sequence")
        n = len(seq)
        pos = _position(ctx, lambda v, w: value(ctx, v, w), ins[1], n, -n, n - 1,
                        "SequenceAt's position")
        return seq.items[pos]

    @table.register("SequenceErase")
    def _erase(ctx, ins, attrs):
        seq = _sequence(ctx, ins[0], "input_sequence")
        n = len(seq)
        if n == 0:
            raise ctx.fail("cannot erase from an empty sequence")
        pos = n - 1
        if len(ins) > 1 and ins[1] is not None:
            pos = _position(ctx, lambda v, w: value(ctx, v, w), ins[1], n, -n, n - 1,
                            "SequenceErase's position")
        items = list(seq.items)
        del items[pos]
        return OnnxSequence(items, seq.dtype)

    @table.register("SequenceLength")
    def _length(ctx, ins, attrs):
        return ops.const(ctx, np.array(len(_sequence(ctx, ins[0], "input_sequence")),
                                       "int64"))

    @table.register("ConcatFromSequence")
    def _concat_from(ctx, ins, attrs):
        seq = _sequence(ctx, ins[0], "input_sequence")
        if not len(seq):
            raise ctx.fail("cannot concatenate an empty sequence")
        axis = int(attrs["axis"])
        rank = len(shape(ctx, seq.items[0]))
        if int(attrs.get("new_axis", 0)):
            if not -rank - 1 <= axis <= rank:
                raise ctx.fail(f"axis {axis} is out of range for stacking rank-{rank} tensors")
            axis = axis % (rank + 1)
            return ops.concat(ctx, [ops.expand_dims(ctx, v, axis) for v in seq.items], axis)
        if not -rank <= axis < rank:
            raise ctx.fail(f"axis {axis} is out of range for rank-{rank} tensors")
        return ops.concat(ctx, list(seq.items), axis % rank)

    @table.register("SplitToSequence")
    def _split_to(ctx, ins, attrs):
        x = ins[0]
        dims = shape(ctx, x)
        axis = int(attrs.get("axis", 0)) % len(dims)
        d = dims[axis]
        if not isinstance(d, int | np.integer):
            raise ctx.fail(f"needs a static length on the split axis {axis}, got {d}")
        d = int(d)
        split = None
        if len(ins) > 1 and ins[1] is not None:
            split = np.asarray(value(ctx, ins[1], "SplitToSequence's split")).astype("int64")
        if split is None:
            items = [ops.slice_axis(ctx, x, axis, i, i + 1) for i in range(d)]
            if not int(attrs.get("keepdims", 1)):
                items = [ops.squeeze(ctx, v, axis) for v in items]
            return OnnxSequence(items, dtype(ctx, x))
        if split.ndim == 0:
            step = int(split)
            if step <= 0:
                raise ctx.fail(f"split must be positive, got {step}")
            sizes = [min(step, d - b) for b in range(0, d, step)]
        else:
            sizes = [int(s) for s in split]
            if sum(sizes) != d or any(s < 0 for s in sizes):
                raise ctx.fail(f"split {sizes} does not add up to the axis length {d}")
        items, b = [], 0
        for s in sizes:
            items.append(ops.slice_axis(ctx, x, axis, b, b + s))
            b += s
        return OnnxSequence(items, dtype(ctx, x))

    @table.register("SequenceMap")
    def _map(ctx, ins, attrs):
        body = attrs["body"]
        seqs = [v for v in ins if isinstance(v, OnnxSequence)]
        if not isinstance(ins[0], OnnxSequence):
            raise ctx.fail("the first input must be a sequence")
        n = len(ins[0])
        if any(len(s) != n for s in seqs):
            raise ctx.fail(f"the input sequences differ in length: {[len(s) for s in seqs]}")
        formal = [vi.name for vi in body.input]
        if len(formal) != len(ins):
            raise ctx.fail(f"the body takes {len(formal)} inputs, the node gives {len(ins)}")
        results: list[list] = [[] for _ in body.output]
        for i in range(n):
            binds = {f: (v.items[i] if isinstance(v, OnnxSequence) else v)
                     for f, v in zip(formal, ins)}
            for acc, out in zip(results, ctx.subgraph(body, binds)):
                acc.append(out)
        return [OnnxSequence(acc, dtype(ctx, acc[0]) if acc else None) for acc in results]

    @table.register("Optional")
    def _optional(ctx, ins, attrs):
        return OnnxOptional(ins[0] if ins and ins[0] is not None else None)

    @table.register("OptionalHasElement")
    def _has_element(ctx, ins, attrs):
        v = ins[0] if ins else None
        present = v is not None and not (isinstance(v, OnnxOptional) and v.value is None)
        return ops.const(ctx, np.array(present))

    @table.register("OptionalGetElement")
    def _get_element(ctx, ins, attrs):
        v = ins[0]
        if isinstance(v, OnnxOptional):
            if v.value is None:
                raise ctx.fail("the optional input is empty")
            return v.value
        return v
