"""What every schedule shares: the lowering context, vector widths, loop helpers, errors."""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import substitute
from ..topi.utils import prod as _prod
from .options import LoweringOptions

PARALLEL_MIN_WORK = 1 << 18  # elements (times reduction length) before a loop runs in parallel
STACK_TEMP_BYTES = 64 * 1024  # temporaries up to this size live on the stack
SMALL_REDUCE = 64  # reductions this short are unrolled and vectorized across outputs


def imm(v: int) -> E.IntImm:
    return E.IntImm("int32", v)


def lanes(dtype: str) -> int:
    bits = int("".join(c for c in dtype if c.isdigit()) or 8) if dtype != "bool" else 8
    return 8 if bits == 64 else 16


def dtype_bytes(dtype: str) -> int:
    if dtype == "bool":
        return 1
    return int("".join(c for c in dtype if c.isdigit())) // 8


class LoweringError(ValueError):
    """A fused function that this back end cannot lower natively (it falls back to numpy)."""


class LowerCtx:
    """State of one lowering: its options, buffers of materialized tensors, the workspace."""

    def __init__(self, options: LoweringOptions | None = None):
        self.options = options if options is not None else LoweringOptions()
        self.buf: dict[int, object] = {}
        self.ws_bytes = 0
        self.ws = None
        self.stack_temps: list = []
        self.ws_views: list = []
        self.counter = 0
        self.packed: set = set()  # ids of dense anchors whose weight input is prepacked

    def fresh(self, name: str) -> E.Var:
        self.counter += 1
        return E.Var(f"{name}{self.counter}", "int32")

    def workspace(self):
        if self.ws is None:
            self.ws = param_buffer((1,), "uint8", "workspace")
        return self.ws

    def temp(self, shape, dtype: str, name: str):
        """A temporary buffer: on the stack when small, else a slice of the workspace param."""
        shape = tuple(shape) or (1,)
        nbytes = _prod(shape) * dtype_bytes(dtype)
        if nbytes <= STACK_TEMP_BYTES:
            b = decl_buffer(shape, dtype, name)
            self.stack_temps.append(b)
            return b
        off = -(-self.ws_bytes // 64) * 64
        self.ws_bytes = off + nbytes
        ws = self.workspace()
        view = decl_buffer(shape, dtype, name, data=ws.data, elem_offset=off // dtype_bytes(dtype))
        self.ws_views.append(view)
        return view


# ---------------------------------------------------------------------------------- loops
def outer_loops(ctx, dims, parallel: bool, body_fn):
    """Loop over ``dims`` (fused into one loop, parallel when asked); ``body_fn(idx_list)``."""
    if not dims:
        return body_fn([])
    n = _prod(dims)
    v = ctx.fresh("o")
    idx, rest = [], v
    for k in range(len(dims) - 1, -1, -1):
        d = dims[k]
        if d == 1:
            idx.append(imm(0))
        elif k == 0 or all(x == 1 for x in dims[:k]):
            idx.append(rest)
            rest = imm(0)
        else:
            idx.append(E.FloorMod(rest, d))
            rest = E.FloorDiv(rest, d)
    idx.reverse()
    kind = S.ForKind.PARALLEL if parallel and n > 1 else S.ForKind.SERIAL
    return S.For(v, 0, n, kind, body_fn(idx))


def vector_inner(ctx, extent: int, lanes: int, body_fn):
    """``for j in [0, extent)``: vector chunks of ``lanes`` plus a scalar tail."""
    parts = []
    nvec = extent // lanes if extent >= lanes else 0
    if nvec:
        vo, vi = ctx.fresh("vo"), ctx.fresh("vi")
        inner = S.For(vi, 0, lanes, S.ForKind.VECTORIZED, body_fn(vo * lanes + vi))
        parts.append(S.For(vo, 0, nvec, S.ForKind.SERIAL, inner) if nvec > 1 else
                     substitute(inner, {vo: imm(0)}))
    tail = extent - nvec * lanes
    if tail:
        t = ctx.fresh("t")
        parts.append(S.For(t, nvec * lanes, tail, S.ForKind.SERIAL, body_fn(t)))
    return S.SeqStmt(parts) if len(parts) != 1 else parts[0]




def param_buffer(shape, dtype: str, name: str):
    """A parameter buffer whose data pointer is the parameter itself."""
    return decl_buffer(shape, dtype, name, data=E.Var(name, "handle"))
