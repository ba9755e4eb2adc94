"""The functional forms torch.export's decompositions give in-place writes, onto ``relax.op``:
``empty`` (a buffer about to be written), ``copy`` (its contents replaced) and
``slice_scatter`` / ``select_scatter`` (a slice or one index of an axis replaced). Circular
padding (``nn.Conv1d(padding_mode="circular")``, Informer's and TimesNet's token embeddings)
decomposes into exactly these, as does ``x[:, a:b] = y`` in a model's forward."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...expr import const
from .context import AtenContext, register, torch_dtype


@register("empty.memory_format", "empty_strided.default", "new_empty.default")
def _empty(ctx: AtenContext, args):
    """A tensor whose contents torch leaves undefined: zeros (every later read of it follows a
    write in the programs that use it)."""
    name = ctx.node.target.__name__
    # schema order: empty(size, *, dtype), empty_strided(size, stride, *, dtype),
    # new_empty(self, size, *, dtype)
    size = args[1] if name.startswith("new_empty") else args[0]
    k = 1 if name.startswith("empty.") else 2
    dtype = args[k] if len(args) > k else None
    if dtype is not None:
        dtype = torch_dtype(dtype)
    else:
        dtype = ctx.dtype(args[0]) if name.startswith("new_empty") else "float32"
    dims = [ctx.sym(d) for d in size]
    if all(isinstance(d, int) for d in dims):
        return const(np.zeros(dims, dtype))
    return ctx.emit(_op.zeros(ctx.shape_expr(dims), dtype))


@register("copy.default")
def _copy(ctx: AtenContext, args):
    """copy(self, src): ``src`` broadcast to ``self``'s shape in ``self``'s dtype (the
    functional ``self.copy_(src)``; ``self``'s old values are not read)."""
    x, src = args[0], args[1]
    src = ctx.tensor(src, x)
    if ctx.dtype(src) != ctx.dtype(x):
        src = ctx.emit(_op.astype(src, ctx.dtype(x)))
    shape = ctx.shape(x)
    if ctx.shape(src) == shape:
        return src
    return ctx.emit(_op.broadcast_to(src, ctx.shape_expr(shape)))


@register("slice_scatter.default")
def _slice_scatter(ctx: AtenContext, args):
    """slice_scatter(self, src, dim=0, start=None, end=None, step=1): ``self`` with
    ``self[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``."""
    x, src = args[0], args[1]
    dim = int(args[2]) % ctx.ndim(x) if len(args) > 2 else 0
    start = args[3] if len(args) > 3 and args[3] is not None else 0
    end = args[4] if len(args) > 4 and args[4] is not None else ctx.shape(x)[dim]
    step = int(args[5]) if len(args) > 5 else 1
    n = ctx.shape(x)[dim]
    if isinstance(end, int) and isinstance(n, int):
        end = min(end, n)
    if isinstance(start, int) and isinstance(n, int) and start < 0:
        start += n
    if isinstance(end, int) and isinstance(n, int) and end < 0:
        end += n
    if ctx.dtype(src) != ctx.dtype(x):
        src = ctx.emit(_op.astype(src, ctx.dtype(x)))
    return ctx.emit(_op.slice_scatter(x, src, start, end, step, dim))


@register("select_scatter.default")
def _select_scatter(ctx: AtenContext, args):
    """select_scatter(self, src, dim, index): ``self`` with index ``index`` of ``dim``
    replaced by ``src`` (whose rank is one less)."""
    x, src, dim, index = args[0], args[1], int(args[2]) % ctx.ndim(args[0]), int(args[3])
    n = ctx.shape(x)[dim]
    if index < 0:
        index += n
    src = ctx.emit(_op.expand_dims(src, dim))
    return _slice_scatter(ctx, [x, src, dim, index, index + 1, 1])
