"""What every schedule shares: the lowering context, vector widths, loop helpers, errors."""

from __future__ import annotations

import functools

from ..runtime import jit as _jit
from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order, substitute, transform_expr
from ..topi.utils import prod as _prod
from ..topi.x86 import utils as _x86
from .options import LoweringOptions

# elements (times reduction length) before a loop runs in parallel: ~15 us of work, while a
# parallel loop costs a few microseconds under threadpool.keep_warm (was 2**18: a BERT layer's
# layer norms and head transposes stayed on one thread up to seq 341)
PARALLEL_MIN_WORK = 1 << 16
STACK_TEMP_BYTES = 64 * 1024  # temporaries up to this size live on the stack
SMALL_REDUCE = 64  # reductions this short are unrolled and vectorized across outputs


def imm(v: int) -> E.IntImm:
    return E.IntImm("int32", v)


def lanes(dtype: str) -> int:
    bits = int("".join(c for c in dtype if c.isdigit()) or 8) if dtype != "bool" else 8
    return 8 if bits == 64 else 16


def vector_isa() -> str:
    """``"avx512"`` when the host (the CPU code is made for: ``jit.host_cpu``, a build's
    ``-mcpu``) has 512-bit float vectors (32 registers), else ``"avx2"``:
    register tiles are sized by it, and the schedules' per-ISA switches keyed on it.

    The switches were measured on AVX2 first, and AVX-512 had kept the older schedules. On a
    Zen 4 with AVX-512 those ran ResNet-50 at 2.39x ONNX Runtime, MobileNetV2 at 2.21x and the
    ResNet stem + 2 blocks at 3.17x (one thread); with every AVX2 switch on (conv_direct's,
    conv_lanes, conv_pointwise, gemm's and gemm_kernel's blocking, pool, depthwise,
    softmax_rows) 1.00x, 0.92x and 1.08x. So each is on for both ISAs ("the Zen 4 measurement"
    where a switch cites it)."""
    return _isa_of(_jit.host_cpu()[1])


@functools.cache
def _isa_of(features: str) -> str:
    return "avx512" if "+avx512f" in features.split(",") else "avx2"


def isa_class(mcpu: str) -> str | None:
    """``"vnni"`` (AVX-512 VNNI), ``"avx512"`` or ``"avx2"`` for an x86 CPU name of the tables
    in ``topi.x86.utils``; None for older or unknown CPUs (no code of their own here)."""
    if mcpu == "znver4" or (_x86.target_has_vnni(mcpu) and _x86.target_has_avx512(mcpu)):
        return "vnni"
    if _x86.target_has_avx512(mcpu):
        return "avx512"
    if _x86.target_has_avx2(mcpu) or mcpu in {"alderlake", "raptorlake", "meteorlake"}:
        return "avx2"
    return None


def own_isa_cpu() -> str | None:
    """The CPU code is made for (``jit.host_cpu``) when that code is of the CPU's own vector
    ISA, else None: ``-mattr=-avx512f`` makes AVX2 code for an AVX-512 CPU, and what was
    measured on that CPU (its ``host_key`` entries, its built-in table) is AVX-512 code's."""
    return _own_isa_cpu(*_jit.host_cpu())


@functools.cache
def _own_isa_cpu(cpu: str, features: str) -> str | None:
    # (asked at every per-host switch of every schedule: once per CPU and feature string)
    own = isa_class(cpu)
    if own is not None and ("avx2" if own == "avx2" else "avx512") != _isa_of(features):
        return None
    return cpu


def host_key(switch: dict) -> str:
    """The key of per-host ``switch`` that applies here: the host CPU's LLVM name where the
    switch has an entry for it (a value measured on that CPU only, e.g. ``"znver4"``, whose
    AVX-512 runs as two 256-bit halves) and the code is of its own ISA (``own_isa_cpu``), else
    ``vector_isa()``."""
    cpu = own_isa_cpu()
    return cpu if cpu in switch else vector_isa()


def host_switch(switch: dict):
    """The value of per-host ``switch`` on this machine (``host_key``)."""
    return switch[host_key(switch)]


def num_threads() -> E.PrimExpr:
    """The threads a parallel loop placed here runs on (int32, evaluated at run time): the
    call's thread count, 1 inside a parallel loop or where parallel loops compile serial. A
    parallel loop over that many slices of a workspace gives each thread one of its own."""
    return E.Call("int32", "tir.num_threads", [])


def per_thread_slices(ctx, tasks, slots: int, fbody, name: str = "task",
                      min_tasks: int = 1) -> S.Stmt:
    """``tasks`` tasks over a parallel loop of ``min(num_threads(), slots)`` slices of a
    workspace, slice ``p`` running tasks ``p, p + threads, ...`` in turn, so that each thread of
    the call works in a slice of its own (one thread: one slice, the tasks in order).
    ``fbody(task, p)`` is the statement of one task on slice ``p``; the loop variables are
    named after ``name`` (``<name>_slot``, ``<name>_j``). ``tasks`` may be a symbolic count (the
    loop variables take its dtype); then fewer than ``min_tasks`` tasks run on one thread."""
    dt = "int32" if isinstance(tasks, int) else tasks.dtype

    def c(v: int) -> E.IntImm:
        return E.IntImm(dt, v)

    threads = ctx.fresh(f"{name}_threads", dt)
    p, j = ctx.fresh(f"{name}_slot", dt), ctx.fresh(f"{name}_j", dt)
    task = j * threads + p
    count = c(tasks) if isinstance(tasks, int) else tasks
    last = c(tasks - 1) if isinstance(tasks, int) else tasks - c(1)
    one = S.IfThenElse(E.LT(task, count), fbody(task, p), None)
    turns = S.For(j, c(0), E.FloorDiv(last + threads, threads), S.ForKind.SERIAL, one)
    pool = num_threads() if dt == "int32" else E.Cast(dt, num_threads())
    used = E.Min(pool, c(slots))
    if not isinstance(tasks, int) and min_tasks > 1:
        used = E.Select(E.GE(count, c(min_tasks)), used, c(1))
    return S.LetStmt(threads, used, S.For(p, c(0), threads, S.ForKind.PARALLEL, turns))


def prefetch(load: E.BufferLoad) -> S.Stmt:
    """A software prefetch of the cache line holding ``load``'s element (no value is read)."""
    return S.Evaluate(E.Call("int32", "tir.prefetch", [load]))


def dtype_bytes(dtype: str) -> int:
    if dtype == "bool":
        return 1
    return int("".join(c for c in dtype if c.isdigit())) // 8


class LoweringError(ValueError):
    """A fused function that this back end cannot lower natively (it falls back to numpy)."""


class LowerCtx:
    """State of one lowering: its options, buffers of materialized tensors, the workspace."""

    def __init__(self, options: LoweringOptions | None = None, own_temps: bool = False):
        self.options = options if options is not None else LoweringOptions()
        # own_temps: every temporary is allocated in the function body (stack or heap, as the
        # code generator decides) instead of a slice of a workspace parameter
        self.own_temps = own_temps
        self.buf: dict[int, object] = {}
        self.ws_bytes = 0
        self.ws = None
        self.stack_temps: list = []
        self.ws_views: list = []
        self.counter = 0
        self.packed: set = set()  # ids of dense anchors whose weight input is prepacked
        self.flat_views: dict[int, object] = {}  # id(buffer) -> its 1-d view (``flat_view``)

    def fresh(self, name: str, dtype: str = "int32") -> E.Var:
        self.counter += 1
        return E.Var(f"{name}{self.counter}", dtype)

    def flat_view(self, buf):
        """A 1-d view ``<name>_flat`` of ``buf`` (the same data), declared once per lowering at
        the function's top: kernels address a plane across its rows through it."""
        view = self.flat_views.get(id(buf))
        if view is None:
            view = decl_buffer((prod_dims(buf.shape),), buf.dtype, buf.name + "_flat",
                               data=buf.data, elem_offset=buf.elem_offset)
            self.ws_views.append(view)
            self.flat_views[id(buf)] = view
        return view

    def workspace(self):
        if self.ws is None:
            self.ws = param_buffer((1,), "uint8", "workspace")
        return self.ws

    def temp(self, shape, dtype: str, name: str):
        """A temporary buffer: on the stack when small, else a slice of the workspace param."""
        shape = tuple(shape) or (1,)
        if self.own_temps or not is_static(shape):
            b = decl_buffer(shape, dtype, name)
            self.stack_temps.append(b)
            return b
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


# ---------------------------------------------------------------------------------- dims
def const_int(x) -> int | None:
    """``x`` as an int when it is a constant, else None."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, E.IntImm):
        return x.value
    return None


def dim(x):
    """One extent: an int when constant, else the PrimExpr itself."""
    c = const_int(x)
    return c if c is not None else x


def dims_of(t) -> tuple:
    """The shape of tensor or buffer ``t``: ints where static, PrimExprs where symbolic."""
    return tuple(dim(d) for d in t.shape)


def is_static(dims) -> bool:
    return all(const_int(d) is not None for d in dims)


def index_dtype(dims) -> str:
    """The index type of a loop nest over ``dims``: int32 when static, else the widest var's."""
    out = "int32"
    for d in dims:
        if const_int(d) is None and d.dtype == "int64":
            out = "int64"
        elif const_int(d) is None and out != "int64":
            out = d.dtype
    return out


def allocated(buf, body: S.Stmt) -> S.Stmt:
    """``body`` inside the allocation of ``buf`` (stack or heap, the code generator decides)."""
    return S.Allocate(buf.data, buf.dtype, [prod_dims(buf.shape)], True, S.DeclBuffer(buf, body))


def prod_dims(dims, dtype: str | None = None):
    """The product of ``dims``: an int when all are static, else a PrimExpr of ``dtype``."""
    const, syms = 1, []
    for d in dims:
        c = const_int(d)
        if c is None:
            syms.append(d)
        else:
            const *= c
    if not syms:
        return const
    dtype = dtype or index_dtype(syms)
    out = None
    for d in syms:
        d = d if d.dtype == dtype else E.Cast(dtype, d)
        out = d if out is None else out * d
    return out if const == 1 else out * E.IntImm(dtype, const)


def static_part(dims) -> int:
    """The product of the static extents among ``dims`` (a lower bound of the work)."""
    out = 1
    for d in dims:
        c = const_int(d)
        out *= c if c is not None else 1
    return out


def same_dims(a, b) -> bool:
    """Structural equality of two shapes (ints, IntImms or the same Vars)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        cx, cy = const_int(x), const_int(y)
        if cx is not None or cy is not None:
            if cx != cy:
                return False
        elif repr(x) != repr(y):
            return False
    return True


def parallel_for(ctx, extent, work_per_iter: int, body_fn, dtype: str | None = None):
    """``for v in [0, extent)``, on the thread pool when the total work is worth it.

    A symbolic extent gets a parallel loop whose ``parallel_min_extent`` annotation makes the
    generated code run it on the calling thread when the iterations are too few at run time.
    """
    c = const_int(extent)
    dtype = dtype or ("int32" if c is not None else extent.dtype)
    v = ctx.fresh("o", dtype)
    if c is not None:
        kind = S.ForKind.PARALLEL if c > 1 and c * work_per_iter >= PARALLEL_MIN_WORK else \
            S.ForKind.SERIAL
        return S.For(v, E.IntImm(dtype, 0), E.IntImm(dtype, c), kind, body_fn(v))
    need = max(2, -(-PARALLEL_MIN_WORK // max(1, work_per_iter)))
    return S.For(v, E.IntImm(dtype, 0), extent, S.ForKind.PARALLEL, body_fn(v),
                 annotations={"parallel_min_extent": need})


# ---------------------------------------------------------------------------------- loops
def outer_loops(ctx, dims, parallel, body_fn, work_per_iter: int = 1):
    """Loop over ``dims`` (fused into one loop, parallel when asked); ``body_fn(idx_list)``.

    With a symbolic extent among ``dims`` the loop is int64 and, when ``parallel`` is asked,
    runs on the thread pool once it has enough iterations of ``work_per_iter`` at run time.
    """
    if not dims:
        return body_fn([])
    if not is_static(dims):
        return _outer_loops_symbolic(ctx, dims, parallel, body_fn, work_per_iter)
    n = _prod(dims)
    v = ctx.fresh("o")
    kind = S.ForKind.PARALLEL if parallel and n > 1 else S.ForKind.SERIAL
    return S.For(v, 0, n, kind, body_fn(unravel(v, dims)))


def unravel(v, dims) -> list:
    """The indices into static ``dims`` (row-major) of flat position ``v``: unit dims index 0,
    the outermost non-unit one takes what the inner ones leave without a modulo."""
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
    return idx


def _outer_loops_symbolic(ctx, dims, parallel, body_fn, work_per_iter):
    dtype = index_dtype(dims)
    keep = [k for k, d in enumerate(dims) if const_int(d) != 1]

    def body(v):
        idx = [E.IntImm(dtype, 0)] * len(dims)
        rest = v
        for pos, k in enumerate(reversed(keep)):
            d = dims[k]
            if pos == len(keep) - 1:
                idx[k] = rest
            else:
                dd = E.IntImm(dtype, d) if isinstance(d, int) else d
                idx[k] = E.FloorMod(rest, dd)
                rest = E.FloorDiv(rest, dd)
        return body_fn(idx)

    extent = prod_dims(dims, dtype)
    if not parallel:
        v = ctx.fresh("o", dtype)
        return S.For(v, E.IntImm(dtype, 0), extent, S.ForKind.SERIAL, body(v))
    return parallel_for(ctx, extent, work_per_iter, body, dtype)


def vector_inner(ctx, extent, lanes: int, body_fn):
    """``for j in [0, extent)``: vector chunks of ``lanes`` plus a scalar tail."""
    if const_int(extent) is None:
        dt = extent.dtype
        nvec = E.FloorDiv(extent, E.IntImm(dt, lanes))
        vo, vi, t = ctx.fresh("vo", dt), ctx.fresh("vi", dt), ctx.fresh("t", dt)
        vec = S.For(vo, E.IntImm(dt, 0), nvec, S.ForKind.SERIAL, S.For(
            vi, E.IntImm(dt, 0), E.IntImm(dt, lanes), S.ForKind.VECTORIZED,
            body_fn(vo * E.IntImm(dt, lanes) + vi)))
        done = nvec * E.IntImm(dt, lanes)
        tail = S.For(t, done, extent - done, S.ForKind.SERIAL, body_fn(t))
        return S.SeqStmt([vec, tail])
    extent = const_int(extent)
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




def vector_blocks(ctx, nvec, lanes: int, blocks: int, body_fn, dt: str = "int32") -> list[S.Stmt]:
    """Loops over ``nvec`` whole vectors of ``lanes``: ``blocks`` vectors at a time while that
    many remain, then one at a time. ``body_fn(j, lane)`` gets the element offset ``j`` and the
    lane ``j % (blocks * lanes)`` (``j % lanes`` in the single-vector loop), so a reduction
    keeping ``blocks`` vectors of accumulators runs ``blocks`` independent chains: one chain's
    latency (a float max with its NaN test, about 7 cycles on Zen 4) would bound the loop, not
    its loads. ``nvec`` is an int or an expression of type ``dt``."""

    def c(v):
        return E.IntImm(dt, v) if isinstance(v, int) else v

    parts, first = [], 0
    if blocks > 1:
        bw = blocks * lanes
        nblk = nvec // blocks if isinstance(nvec, int) else E.FloorDiv(nvec, c(blocks))
        kb, vb = ctx.fresh("kb", dt), ctx.fresh("vb", dt)
        parts.append(S.For(kb, c(0), c(nblk), S.ForKind.SERIAL, S.For(
            vb, c(0), c(bw), S.ForKind.VECTORIZED, body_fn(kb * c(bw) + vb, vb))))
        first = nblk * blocks if isinstance(nblk, int) else nblk * c(blocks)
    if not isinstance(nvec, int) or not isinstance(first, int) or nvec - first:
        ko, vj = ctx.fresh("ko", dt), ctx.fresh("vj", dt)
        parts.append(S.For(ko, c(first), c(nvec - first), S.ForKind.SERIAL, S.For(
            vj, c(0), c(lanes), S.ForKind.VECTORIZED, body_fn(ko * c(lanes) + vj, vj))))
    return parts


def overlapping_vectors(ctx, first: int, length: int, lanes: int, fbody) -> list[S.Stmt]:
    """``fbody(j)`` for ``j`` in ``[first, first + length)``: vectors of ``lanes`` (of 4 when the
    range is shorter), the last one overlapping the one before instead of a scalar tail, and a
    serial loop under 4. ``fbody`` must store the same value when it runs twice at one ``j``
    (a copy or a pure function of the inputs)."""
    vl = lanes if length >= lanes else (4 if length >= 4 else 0)
    if not vl:
        v = ctx.fresh("t")
        return [S.For(v, imm(first), imm(length), S.ForKind.SERIAL, fbody(v))] if length else []
    vo, vi = ctx.fresh("vo"), ctx.fresh("vi")
    vec = S.For(vi, imm(0), imm(vl), S.ForKind.VECTORIZED, fbody(vo * vl + vi + first))
    out = [S.For(vo, imm(0), imm(length // vl), S.ForKind.SERIAL, vec) if length // vl > 1
           else substitute(vec, {vo: imm(0)})]
    if length % vl:
        vi = ctx.fresh("vi")
        out.append(S.For(vi, imm(0), imm(vl), S.ForKind.VECTORIZED,
                         fbody(vi + (first + length - vl))))
    return out


def fold_lanes(ctx, acc, lanes: int, combine, dt: str = "int32") -> list[S.Stmt]:
    """Statements folding the ``lanes`` partial results of local buffer ``acc`` into ``acc[0]``
    by halves (``acc[l] = combine(acc[l], acc[l + half])``, vectorized): log2(lanes) steps.
    A serial chain over the lanes, which the light LLVM pipeline leaves unrolled with the
    accumulator in memory, cost about 130 cycles per row (Zen 4; a 591-row softmax
    spent 40% of its time in its two folds)."""
    if lanes & (lanes - 1):
        raise ValueError(f"fold_lanes: {lanes} lanes is not a power of two")
    steps, half = [], lanes // 2
    while half >= 1:
        lv = ctx.fresh("l", dt)
        h = E.IntImm(dt, half)
        store = S.BufferStore(acc, combine(E.BufferLoad(acc, [lv]), E.BufferLoad(acc, [lv + h])),
                              [lv])
        steps.append(S.For(lv, E.IntImm(dt, 0), h, S.ForKind.VECTORIZED, store) if half > 1
                     else substitute(store, {lv: E.IntImm(dt, 0)}))
        half //= 2
    return steps


def param_buffer(shape, dtype: str, name: str):
    """A parameter buffer whose data pointer is the parameter itself."""
    return decl_buffer(shape, dtype, name, data=E.Var(name, "handle"))


# ------------------------------------------------------------------ epilogues sharing a buffer
def divisor_near(c: int, target: int) -> int | None:
    """The largest divisor of ``c`` between half of ``target`` and ``target`` (a block size that
    splits ``c`` evenly without shrinking much), or None."""
    for k in range(target, max(1, target // 2) - 1, -1):
        if c % k == 0:
            return k
    return None


def float32_conv2d(t) -> bool:
    """Is ``t`` a float32 NCHW conv2d stage (tag ``conv2d_nchw``) with one group and 4-D data,
    weight and output: the convs the generated kernels take, before their own conditions?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != "conv2d_nchw":
        return False
    a = t.op.attrs
    x, w = a["operands"]
    return t.dtype == x.dtype == w.dtype == "float32" and a["groups"] == 1 and \
        len(x.shape) == len(w.shape) == len(t.shape) == 4


def int8_weight_conv(t) -> bool:
    """Is conv2d stage ``t`` float32 over an int8 weight (a quantized model's integer weights in
    a quarter of the bytes: ``conv_lanes`` widens each tap's weights as it loads them,
    ``conv_direct`` the whole weight into a float32 copy once a call)?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != "conv2d_nchw":
        return False
    x, w = t.op.attrs["operands"]
    return t.dtype == x.dtype == "float32" and w.dtype == "int8"


def static_conv2d_nchw_dims(t) -> list[int] | None:
    """The data, weight and output dims of conv2d stage ``t`` (tag ``conv2d_nchw``, with its
    ``operands``), ``[n, c, h, w, o, cg, kh, kw, n, o, oh, ow]``, when all three are 4-D and
    static (any dtypes, any groups), else None."""
    if not isinstance(t.op, ComputeOp) or t.op.tag != "conv2d_nchw" or \
            "operands" not in t.op.attrs:
        return None
    x, w = t.op.attrs["operands"]
    if not len(x.shape) == len(w.shape) == len(t.shape) == 4:
        return None
    dims = [const_int(d) for d in (*x.shape, *w.shape, *t.shape)]
    return None if any(d is None for d in dims) else dims


def static_grouped_conv2d_dims(t, int8_weight: bool = False) -> tuple[int, ...] | None:
    """``(groups, n, c, h, w, o, kh, kw, oh, ow)`` of a float32 NCHW conv2d stage with 4-D data,
    weight and output, all static, any number of groups (``c``: the input channels of one
    group, its reduction; the output channels split evenly over the groups), else None.
    ``int8_weight``: also one whose weight is int8 (``int8_weight_conv``)."""
    dims = static_conv2d_nchw_dims(t)
    if dims is None:
        return None
    x, w = t.op.attrs["operands"]
    if not (t.dtype == x.dtype == w.dtype == "float32" or int8_weight and int8_weight_conv(t)):
        return None
    n, cin, h, wd, o, cg, kh, kw, _, _, oh, ow = dims
    groups = t.op.attrs["groups"]
    if cin != groups * cg or o % groups:
        return None
    return groups, n, cg, h, wd, o, kh, kw, oh, ow


def static_conv2d_dims(t) -> tuple[int, ...] | None:
    """``(n, c, h, w, o, kh, kw, oh, ow)`` of a ``float32_conv2d`` stage (one group) whose
    shapes are all static (and whose weight has every input channel), else None."""
    dims = static_grouped_conv2d_dims(t)
    return dims[1:] if dims is not None and dims[0] == 1 else None


def emit_with_epilogue(ctx, t, out, bodies, emit, out_shape) -> S.Stmt:
    """Stage ``t`` into ``out`` by ``emit(out_buffer, epi)``, with its fused epilogue stage
    (``ctx.epilogues``) applied in the store when that stage reads ``t`` only at its own output
    position (``epi``: the epilogue's body and axis vars, else None) and ``emit`` can apply it
    (it returns None where it cannot); otherwise ``t`` goes to a temporary of ``out_shape``
    that the epilogue then reads in a pass of its own."""
    u = getattr(ctx, "epilogues", {}).get(id(t))
    if u is None:
        return emit(out, None)
    body = bodies[id(u)]
    if reads_only_at_own_position(body, out, u):
        fused = emit(out, (body, [iv.var for iv in u.op.axis]))
        if fused is not None:
            return fused
    from .lower import injective_nest  # (lower imports the schedules, which import this)

    tmp = ctx.temp(out_shape, t.dtype, t.name)
    return S.SeqStmt([emit(tmp, None),
                      injective_nest(ctx, u, out, redirect_loads(body, out, tmp))])


def loads_of(expr, buf) -> list:
    """The loads of buffer ``buf`` in ``expr``."""
    return [e for e in post_order(expr) if isinstance(e, E.BufferLoad) and e.buffer is buf]


def at_own_position(indices, axes, shape) -> bool:
    """Are ``indices`` the output position ``axes`` of a stage of ``shape`` (a unit axis may be
    read at 0)?"""
    return len(indices) == len(axes) and all(
        i is v or (const_int(n) == 1 and const_int(i) == 0)
        for i, v, n in zip(indices, axes, shape))


def reads_only_at_own_position(body, buf, u) -> bool:
    """Does ``body`` (stage ``u``'s expression) read ``buf`` only at ``u``'s own output position?
    Only then may the producer of ``buf`` write ``u``'s output buffer and ``u`` run in place."""
    axes = [iv.var for iv in u.op.axis]
    return all(at_own_position(e.indices, axes, u.shape) for e in loads_of(body, buf))


def epilogue_value(epi, out, idx, value) -> E.PrimExpr:
    """Epilogue ``epi`` (``emit_with_epilogue``'s body and axis vars) at output position ``idx``,
    its reads of the stage's buffer ``out`` replaced by ``value`` (one expression object: read
    twice, as by SiLU, it is still emitted once)."""
    body, axes = epi
    return transform_expr(substitute(body, dict(zip(axes, idx))), lambda e: value if isinstance(
        e, E.BufferLoad) and e.buffer is out else None)


def redirect_loads(body, src, dst):
    """``body`` with its loads of buffer ``src`` reading ``dst`` at the same indices."""
    return transform_expr(body, lambda e: E.BufferLoad(dst, e.indices) if isinstance(
        e, E.BufferLoad) and e.buffer is src else None)
