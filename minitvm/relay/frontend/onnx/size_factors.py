"""What each run-time size a reshape computes is made of, so later converters can reason about it.

A dynamic-batch model reshapes ``(batch, 64, C)`` to ``(-1, C)`` and back to ``(batch, 64,
-1)``: Relay's type relation gives the merged axis a fresh ``relay.Any()``, and without knowing
it is ``batch * 64`` the importer cannot tell that the final -1 is ``C`` (it fell back to a
``dyn.reshape`` whose type knows no sizes). ``SizeFactors`` notes, for each new ``relay.Any()``
of a reshape's output, the sizes it is the product of (the input's run-time sizes, each a
graph-input ``relay.Any()``) times a static factor. A size that is exactly one other size
(``batch * 1``: a flatten of ``(batch, 1, C)``) is the same size (``canonical``). An
elementwise broadcast of two tensors whose batch sizes are separate ``relay.Any()`` objects gets
a fresh one too: it is noted as what the inputs agree it is made of. The length of
``arange(0, n, 1)`` up to a run-time size ``n`` is noted as ``n``.
"""

from __future__ import annotations

from ....ir.op import OpPattern
from ....ir.prim_expr import Any
from ....ir.type import TensorType
from ...expr import Call, Tuple, TupleGetItem
from ..common import infer_type
from .shape_values import SizeOf, evaluate

__all__ = ["SizeFactors"]

_SIZE_PRESERVING = ("reshape", "nn.batch_flatten")  # (element count in == element count out)
_BROADCASTING = (OpPattern.ELEMWISE, OpPattern.BROADCAST)  # (numpy broadcasting of the args)


def _remove(bases: list, items: list) -> list | None:
    """``bases`` less ``items`` (by identity), or None when one is missing."""
    rest = list(bases)
    for it in items:
        for i, b in enumerate(rest):
            if b is it:
                del rest[i]
                break
        else:
            return None
    return rest


class SizeFactors:
    """id of a ``relay.Any()`` -> (the graph-input sizes it multiplies, a static factor)."""

    def __init__(self):
        self.table: dict[int, tuple[tuple, int]] = {}
        self._seen: dict[int, object] = {}  # (the expressions walked, kept so ids stay theirs)

    def of(self, d: Any) -> tuple[tuple, int]:
        return self.table.get(id(d), ((d,), 1))

    def canonical(self, d: Any) -> Any:
        """The size ``d`` is exactly equal to (itself unless it is one other size times 1)."""
        bases, k = self.of(d)
        return bases[0] if k == 1 and len(bases) == 1 else d

    def expand(self, dims) -> tuple[list, int]:
        """(the graph-input sizes, the static product) that ``dims`` (ints and Anys)
        multiply to."""
        bases, k = [], 1
        for d in dims:
            if isinstance(d, Any):
                b, f = self.of(d)
                bases += list(b)
                k *= f
            else:
                k *= int(d)
        return bases, k

    def define(self, d: Any, sizes, k: int) -> None:
        """Note that the fresh size ``d`` is the product of ``sizes`` (Anys, each expanded by
        what it is noted as) times ``k``: a size the graph computed (``batch * 2``) and a
        reshape takes as a dimension."""
        bases, f = self.expand(sizes)
        self._seen[id(d)] = d  # (kept alive: the table is keyed by id)
        self.table[id(d)] = (tuple(sorted(bases, key=id)), f * int(k))

    @staticmethod
    def same_sizes(a: list, b: list) -> bool:
        """Whether two lists of graph-input sizes hold the same ones (as multisets)."""
        return _remove(a, b) == []

    def note(self, expr) -> None:
        """Walk the expressions ``expr`` is built from that were not walked before (producers
        first), noting what each new run-time size of a reshape is made of."""
        order, stack = [], [(expr, False)]
        while stack:
            e, done = stack.pop()
            if done:
                order.append(e)
                continue
            if id(e) in self._seen or not isinstance(e, Call | Tuple | TupleGetItem):
                continue
            self._seen[id(e)] = e
            stack.append((e, True))
            kids = e.args if isinstance(e, Call) else e.fields if isinstance(e, Tuple) else \
                [e.tuple_value]
            stack.extend((k, False) for k in kids)
        for e in order:
            if not isinstance(e, Call) or not hasattr(e.op, "get_attr"):
                continue
            if e.op.name in _SIZE_PRESERVING:
                self._note_reshape(e)
            elif e.op.name == "arange":
                self._note_arange(e)
            elif e.op.get_attr("TOpPattern") in _BROADCASTING:
                self._note_broadcast(e)

    def _key(self, d: Any) -> tuple:
        bases, k = self.of(d)
        return tuple(sorted(id(b) for b in bases)), k

    def _note_broadcast(self, call: Call) -> None:
        """A new run-time size of an elementwise broadcast (two tensors whose batch sizes are
        separate ``relay.Any()`` objects): the inputs' size there when they all agree on what
        it is made of (and the others are 1)."""
        tout = infer_type(call)
        args = [infer_type(a) for a in call.args]
        if not isinstance(tout, TensorType) or not all(isinstance(t, TensorType) for t in args):
            return
        nd = len(tout.shape)
        for i, d in enumerate(tout.shape):
            if not isinstance(d, Any) or id(d) in self.table:
                continue
            aligned = [t.shape[i - nd + len(t.shape)] for t in args if i - nd + len(t.shape) >= 0]
            if any(a is d for a in aligned):
                continue
            anys = [a for a in aligned if isinstance(a, Any)]
            if not anys or any(not isinstance(a, Any) and a != 1 for a in aligned):
                continue
            if len({self._key(a) for a in anys}) == 1:
                self.table[id(d)] = self.of(anys[0])

    def _note_arange(self, call: Call) -> None:
        """``arange(0, n, 1)`` of a run-time size ``n`` the graph read (the batch) has ``n``
        elements: ``arange(b)[:, None, None] * n + idx`` then broadcasts against the batch to
        the batch, not a fresh size, and the reshapes after it infer their static sizes
        (KPConv's neighbour gather: ``(b * n * k, C)`` back to ``(b, n, k, -1)``)."""
        tout = infer_type(call)
        if not isinstance(tout, TensorType) or len(tout.shape) != 1 or \
                not isinstance(tout.shape[0], Any) or id(tout.shape[0]) in self.table:
            return
        start, stop, step = (evaluate(a) for a in call.args)
        if start is None or stop is None or step is None or \
                not start.size == stop.size == step.size == 1:
            return
        start, stop, step = start.item(), stop.item(), step.item()
        if isinstance(start, SizeOf) or isinstance(step, SizeOf) or start != 0 or step != 1:
            return
        if isinstance(stop, SizeOf) and stop.factors is not None and stop.factors[1] > 0:
            self.define(tout.shape[0], *stop.factors)

    def _note_reshape(self, call: Call) -> None:
        tin, tout = infer_type(call.args[0]), infer_type(call)
        if not isinstance(tin, TensorType) or not isinstance(tout, TensorType):
            return
        if not all(isinstance(d, int | Any) for d in (*tin.shape, *tout.shape)):
            return
        in_any = [d for d in tin.shape if isinstance(d, Any)]
        new = [d for d in tout.shape if isinstance(d, Any) and not any(d is a for a in in_any)]
        if len(new) != 1 or id(new[0]) in self.table:
            return
        bases_in, k_in = self.expand(tin.shape)
        bases_kept, k_out = self.expand([d for d in tout.shape if d is not new[0]])
        rest = _remove(bases_in, bases_kept)
        if rest is None or not rest or k_out == 0 or k_in % k_out:
            return
        self.table[id(new[0])] = (tuple(sorted(rest, key=id)), k_in // k_out)
