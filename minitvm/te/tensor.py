"""TE tensors and the operations that produce them (placeholders and computes)."""

from __future__ import annotations

from ..ir.node import Node
from ..tir.expr import IterVar, PrimExpr, ProducerLoad, Reduce, _to_expr


class Operation(Node):
    """Base of tensor-producing operations."""

    __slots__ = ("name", "tag", "attrs")

    def output(self, index: int = 0) -> Tensor:
        return self._outputs[index]

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def input_tensors(self) -> list[Tensor]:
        return []


class PlaceholderOp(Operation):
    """An input tensor."""

    __slots__ = ("shape", "dtype", "_outputs")

    def __init__(self, name: str, shape, dtype: str):
        self.name = name
        self.tag = ""
        self.attrs = {}
        self.shape = shape
        self.dtype = dtype


class ComputeOp(Operation):
    """A tensor defined elementwise by ``body`` over ``axis`` (plus ``reduce_axis``)."""

    __slots__ = ("axis", "reduce_axis", "body", "_outputs", "_inputs")
    # the structural fields: every slot but ``_inputs``, a cache of ``input_tensors``
    _node_fields = ("attrs", "axis", "reduce_axis", "body", "_outputs")

    def __init__(self, name: str, tag: str, attrs, axis, body: PrimExpr):
        self.name = name
        self.tag = tag
        self.attrs = dict(attrs or {})
        self.axis = list(axis)
        self.body = body
        self.reduce_axis = list(body.axis) if isinstance(body, Reduce) else []

    @property
    def input_tensors(self) -> list[Tensor]:
        # kept with the body it was read from (schedules ask for it once per stage pair)
        cached = getattr(self, "_inputs", None)
        if cached is not None and cached[0] is self.body:
            return list(cached[1])
        from ..tir.stmt_functor import post_order

        out, seen = [], set()
        for n in post_order(self.body):
            if isinstance(n, ProducerLoad) and id(n.producer) not in seen:
                seen.add(id(n.producer))
                out.append(n.producer)
        self._inputs = (self.body, tuple(out))
        return out


class Tensor(Node):
    """The output of an Operation; ``A[i, j]`` reads an element inside ``te.compute``."""

    __slots__ = ("op", "value_index", "shape", "dtype")

    def __init__(self, op: Operation, value_index: int, shape, dtype: str):
        self.op = op
        self.value_index = value_index
        self.shape = tuple(_to_expr(s) for s in shape)
        self.dtype = dtype

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices) -> ProducerLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        indices = tuple(i.var if isinstance(i, IterVar) else i for i in indices)
        if len(indices) != len(self.shape):
            raise ValueError(f"tensor {self.name!r} has {len(self.shape)} dims but is indexed "
                             f"with {len(indices)}")
        return ProducerLoad(self, indices)

    def __call__(self, *indices) -> ProducerLoad:
        return self[indices]

    def __repr__(self):
        dims = ", ".join(repr(s) for s in self.shape)
        return f"Tensor(shape=[{dims}], op.name={self.name})"
