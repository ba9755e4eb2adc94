"""Statement emission: loops (serial, unrolled, vectorized, parallel), stores, blocks, allocation.

Statements recurse only on nesting (loop bodies, branches); sequences and let chains are walked
with a work list. A parallel loop is outlined into ``<fn>_par<k>(ptr closure)`` and run through
libgomp's ``GOMP_parallel``; threads take chunks of iterations from a shared counter. With one
thread, or fewer iterations than the loop's ``parallel_min_extent`` annotation, the outlined
function is called directly (no pool wake-up).
"""

from __future__ import annotations

from llvmlite import ir

from ...tir import expr as E
from ...tir import stmt as S
from ...tir.stmt_functor import post_order, walk_stmts
from . import textir
from . import types as T
from .expr import RampVal, fold_int, fold_int_cast, lanes_of
from .vector_pieces import MAX_PIECEWISE_LANES, emit_in_pieces, lane_wise, needs_pieces

MAX_UNROLL = 64
# The widest vectorized loop emitted as one vector; a wider one (up to MAX_PIECEWISE_LANES, a
# lane-wise body) as vector_pieces' pieces, else a serial loop
MAX_VECTOR_LANES = 64
STACK_LIMIT_BYTES = 128 * 1024
# larger temporaries come from malloc, each at the first 64-byte boundary of its block
ALIGN_HEAP_TEMPS = True
# For-loop annotation: a parallel loop with fewer iterations than this runs on the calling thread
PARALLEL_MIN_EXTENT = "parallel_min_extent"
# For-loop annotation: a parallel loop over instances of one static kernel, each on its own slice
# of the buffers (a symbolic batch's images, schedule/batch_loop). Its body is compiled once,
# its own parallel loops outlined too: they run on the calling thread while this loop runs on
# the pool, and on the pool when it does not (one iteration, or one thread). Its extent, and a
# buffer's leading dimension equal to it, count as static where codegen.build picks LLVM's
# pipeline (``ir_pipeline_level``): the body is the static kernel.
INSTANCE_LOOP = "instance_loop"
# Chunks per thread a parallel loop is cut into (threads take them from a shared counter). The
# last chunk a thread takes decides when the loop ends, so coarse chunks leave one thread idle
# for up to a chunk: with 4 per thread a 3x3 conv over 196 pixel panels ran in chunks of 24
# panels, and the ResNet stem + 2 blocks took 9.08 against 8.70 ms with 16 at 2 threads
# (ResNet-50 55.7 against 54.0 ms). A chunk's grab is one atomic add.
CHUNKS_PER_THREAD = 16
# Block or For annotation: float adds/multiplies inside may be reassociated (``reassoc nsz``),
# so LLVM vectorizes a float sum/product reduction with vector partial sums. The result then
# differs from the sequential sum by rounding only (relative ~ n * 2**-24 worst case, usually
# far less); NaN and inf behave as before. Max/min reductions are not affected.
REDUCE_REASSOCIATE = "reduce_reassociate"
# For-loop annotation on a vectorized loop: its body may hold ``IfThenElse(cond, store)`` (no
# else; the store contiguous in the loop var), emitted as one masked vector store whose lanes
# are those where ``cond`` holds (``llvm.masked.store``). The store's value is computed for every
# lane: it may only load what is there for every lane (a register tile, a per-channel operand).
MASKED_STORES = "masked_stores"
# AttrStmt key (node: a buffer's data var): inside its body, the buffer's contiguous vector
# stores of 16, 32 or 64 bytes are non-temporal (``!nontemporal``: written around the caches,
# no read of the line first) where their address is a multiple of the vector's size at run time
# (a test and branch a store; an ordinary store otherwise, so any address is right). The body
# ends in an ``sfence`` (those stores ordered before what this thread does next), and so does
# each chunk of a parallel loop inside it (before the worker's join).
NONTEMPORAL_STORE = "nontemporal_store"
NONTEMPORAL_VECTOR_BYTES = (16, 32, 64)
# Block or For annotation: float arithmetic inside carries no fast-math flag, not even
# ``contract``: each add / multiply rounds on its own (no fused multiply-add), as a reference
# computed op by op in numpy does (the box NMS kernels' overlaps decide which box survives)
EXACT_FLOAT = "exact_float"


def _const_int(e) -> int | None:
    return e.value if isinstance(e, E.IntImm) else None


def _uses_var(e, var) -> bool:
    return any(n is var for n in post_order(e))


class StmtEmitter:
    """Mixin of CodeGenLLVM: ``emit_stmt(stmt)``."""

    def emit_stmt(self, root) -> None:
        work = [root]
        while work:
            s = work.pop()
            if callable(s):
                s()
                continue
            t = type(s)
            if t is S.SeqStmt:
                work.extend(reversed(s.seq))
            elif t is S.LetStmt:
                self.env[id(s.var)] = self.emit(s.value)
                if id(s.value) in self._data_ids():  # a loaded value: its arithmetic wraps
                    self._data_ids().add(id(s.var))
                work.append(lambda v=s.var: self.env.pop(id(v), None))
                work.append(s.body)
            elif t is S.Allocate:
                shape = list(s.extents)
                ptr, cleanup = self.allocate(s.dtype, shape, s.buffer_var.name)
                self.env[id(s.buffer_var)] = ptr
                # (out of scope after: a parallel loop later would capture a pointer its
                # block does not dominate, e.g. a row's run-time-sized buffer inside a loop)
                work.append(lambda v=s.buffer_var: self.env.pop(id(v), None))
                work.append(cleanup)
                work.append(s.body)
            elif t is S.AttrStmt and s.attr_key == NONTEMPORAL_STORE:
                self._nontemporal_scope(s, work)
            elif t in (S.DeclBuffer, S.AttrStmt):
                work.append(s.body)
            elif t is S.AssertStmt:
                work.append(s.body)
            elif t is S.BufferStore:
                self.emit_store(s)
            elif t is S.For:
                self.emit_for(s)
            elif t is S.IfThenElse:
                self.emit_if(s)
            elif t is S.Evaluate:
                self.emit(s.value)
            elif t is S.BlockRealize:
                self.emit_block(s)
            elif t is S.Block:
                self.emit_block(S.BlockRealize([iv.var for iv in s.iter_vars], True, s))
            else:
                raise NotImplementedError(f"llvm codegen does not support {t.__name__}")

    # ---------------------------------------------------------------- stores and branches
    def _nontemporal_scope(self, s: S.AttrStmt, work: list) -> None:
        """``s``'s body with its buffer's vector stores non-temporal, then an ``sfence``."""
        key = id(s.node)
        scopes = self.nontemporal
        scopes[key] = scopes.get(key, 0) + 1

        def close():
            self._fence_nontemporal()
            scopes[key] -= 1
            if not scopes[key]:
                del scopes[key]

        work.append(close)
        work.append(s.body)

    def _fence_nontemporal(self) -> None:
        """An ``sfence`` where non-temporal stores may have been emitted (an open scope)."""
        if self.nontemporal:
            self.builder.call(self._declare("llvm.x86.sse.sfence", T.VOID, []), [])

    def _store_nontemporal(self, value, p, vbytes: int, align: int) -> None:
        """Store vector ``value`` at ``p``: non-temporal where ``p`` is ``vbytes``-aligned."""
        bld = self.builder
        addr = bld.ptrtoint(p, T.I64)
        ok = bld.icmp_unsigned("==", bld.and_(addr, ir.Constant(T.I64, vbytes - 1)),
                               ir.Constant(T.I64, 0))
        nt_bb = bld.append_basic_block("nt.store")
        plain_bb = bld.append_basic_block("nt.plain")
        end_bb = bld.append_basic_block("nt.end")
        bld.cbranch(ok, nt_bb, plain_bb)
        bld.position_at_end(nt_bb)
        bld.store(value, p, align=vbytes, nontemporal=True)
        bld.branch(end_bb)
        bld.position_at_end(plain_bb)
        bld.store(value, p, align=align)
        bld.branch(end_bb)
        bld.position_at_end(end_bb)

    def emit_store(self, s: S.BufferStore) -> None:
        value, idx = self.store_operands(s)
        self.store(s.buffer, idx, value)

    def store_operands(self, s: S.BufferStore) -> tuple:
        """``(value, indices)`` of the store ``s``, emitted (its loads before any store)."""
        memo: dict = {}
        value = self.emit(s.value, memo)
        return value, [self.emit(i, memo) for i in s.indices]

    def emit_if(self, s: S.IfThenElse) -> None:
        if self.lanes > 1:  # (a vectorized loop's body: MASKED_STORES)
            return self.emit_masked_store(s)
        cond = self.emit_scalar(s.condition)
        bld = self.builder
        then_bb = bld.append_basic_block("if.then")
        end_bb = bld.append_basic_block("if.end")
        else_bb = bld.append_basic_block("if.else") if s.else_case is not None else end_bb
        bld.cbranch(cond, then_bb, else_bb)
        bld.position_at_end(then_bb)
        self.emit_stmt(s.then_case)
        bld.branch(end_bb)
        if s.else_case is not None:
            bld.position_at_end(else_bb)
            self.emit_stmt(s.else_case)
            bld.branch(end_bb)
        bld.position_at_end(end_bb)

    def emit_masked_store(self, s: S.IfThenElse) -> None:
        """``if cond: buf[idx] = value`` in a vectorized loop: one masked vector store."""
        self.masked_store(s.then_case, *self.masked_store_operands(s))

    def masked_store_operands(self, s: S.IfThenElse) -> tuple:
        """``(value, offset, mask)`` of the masked store ``s``, emitted."""
        st = s.then_case
        if s.else_case is not None or not isinstance(st, S.BufferStore):
            raise ValueError("vectorized branch: only a store without else is supported")
        memo: dict = {}
        value = self.emit(st.value, memo)
        off = self._offset(st.buffer, [self.emit(i, memo) for i in st.indices])
        if not (isinstance(off, RampVal) and off.stride == 1):
            raise ValueError(f"masked store to {st.buffer.name!r}: not contiguous")
        lanes = off.lanes
        if isinstance(value, RampVal) or lanes_of(value) != lanes:
            value = self.broadcast(value, lanes)
        mask = self.emit(s.condition, memo)
        if lanes_of(mask) != lanes:
            mask = self.broadcast(mask, lanes)
        return value, off, mask

    def masked_store(self, st: S.BufferStore, value, off, mask) -> None:
        """Store ``value`` (a vector) into ``st``'s buffer at ``off`` where ``mask`` holds."""
        lanes = off.lanes
        bld = self.builder
        et = self.mem_type(st.buffer.dtype)
        _check_stored_type(st.buffer, value, et)
        ptr = bld.gep(self.buffer_ptr(st.buffer), [off.base], inbounds=True, source_etype=et)
        vt = ir.VectorType(et, lanes)
        fn = self._declare(f"llvm.masked.store.{T.mangle(vt)}.p0", T.VOID,
                           [vt, T.PTR, T.I32, ir.VectorType(ir.IntType(1), lanes)])
        bld.call(fn, [value, ptr, T.I32(max(1, T.element_bytes(st.buffer.dtype))), mask])
        return None

    def emit_guarded(self, cond, fn) -> None:
        bld = self.builder
        then_bb = bld.append_basic_block("guard.then")
        end_bb = bld.append_basic_block("guard.end")
        bld.cbranch(cond, then_bb, end_bb)
        bld.position_at_end(then_bb)
        fn()
        bld.branch(end_bb)
        bld.position_at_end(end_bb)

    # ---------------------------------------------------------------- blocks
    def _reassociating(self, annotations, fn) -> None:
        """Run ``fn()`` with reassociation allowed when ``annotations`` ask for it, or with no
        fast-math flag at all (``EXACT_FLOAT``)."""
        if not annotations or not (annotations.get(REDUCE_REASSOCIATE) or
                                   annotations.get(EXACT_FLOAT)):
            return fn()
        saved = self.fmf
        if annotations.get(EXACT_FLOAT):
            self.fmf = ()
        else:
            self.fmf = tuple(dict.fromkeys((*saved, "reassoc", "nsz", "contract"))) \
                if "fast" not in saved else saved
        try:
            return fn()
        finally:
            self.fmf = saved

    def emit_block(self, r: S.BlockRealize) -> None:
        self._reassociating(r.block.annotations, lambda: self._emit_block(r))

    def _emit_block(self, r: S.BlockRealize) -> None:
        b = r.block
        vals = [self.emit_scalar(v) for v in r.iter_values]
        for iv, v in zip(b.iter_vars, vals):
            self.env[id(iv.var)] = v
        cleanups = []
        for buf in b.alloc_buffers:
            ptr, cleanup = self.allocate(buf.dtype, list(buf.shape), buf.name)
            self.env[id(buf.data)] = ptr
            cleanups.append(cleanup)

        def body():
            if b.init is not None:
                conds = [E.EQ(iv.var, iv.dom.min) for iv in b.iter_vars
                         if iv.iter_type == E.IterVar.CommReduce]
                if conds:
                    cond = conds[0]
                    for c in conds[1:]:
                        cond = E.And(cond, c)
                    self.emit_guarded(self.emit_scalar(cond), lambda: self.emit_stmt(b.init))
                else:
                    self.emit_stmt(b.init)
            self.emit_stmt(b.body)

        if S.is_true(r.predicate):
            body()
        else:
            self.emit_guarded(self.emit_scalar(r.predicate), body)
        for c in reversed(cleanups):
            c()
        for iv in b.iter_vars:
            self.env.pop(id(iv.var), None)

    # ---------------------------------------------------------------- allocation
    def allocate(self, dtype: str, shape: list, name: str):
        """Stack memory when small and constant-sized, else ``malloc``; returns (ptr, cleanup)."""
        et = self.mem_type(dtype)
        n = 1
        for d in shape:
            c = _const_int(d)
            if c is None:
                n = None
                break
            n *= c
        if n is not None and n * max(1, T.element_bytes(dtype)) <= STACK_LIMIT_BYTES:
            with self.builder.goto_block(self.entry_block):
                if self.entry_block.instructions:
                    self.builder.position_before(self.entry_block.instructions[0])
                ptr = self.builder.alloca(ir.ArrayType(et, max(n, 1)), name=name)
                ptr.align = 64
                ptr.type = T.PTR  # opaque pointers throughout
            return ptr, (lambda: None)
        count = ir.Constant(T.I64, 1)
        for d in shape:
            count = self.builder.mul(count, self.to_i64(self.emit_scalar(d)))
        nbytes = self.builder.mul(count, ir.Constant(T.I64, max(1, T.element_bytes(dtype))))
        nbytes = self.builder.add(nbytes, ir.Constant(T.I64, 64))
        malloc = self._declare("malloc", T.PTR, [T.I64])
        free = self._declare("free", T.VOID, [T.PTR])
        ptr = self.builder.call(malloc, [nbytes], name=name)
        if not ALIGN_HEAP_TEMPS:
            return ptr, (lambda: self.builder.call(free, [ptr]))
        # the block's first 64-byte boundary (the 64 spare bytes above): malloc's 16-byte
        # alignment split every other 64-byte vector access across two cache lines
        addr = self.builder.ptrtoint(ptr, T.I64)
        aligned = self.builder.and_(self.builder.add(addr, ir.Constant(T.I64, 63)),
                                    ir.Constant(T.I64, ~63))
        start = self.builder.gep(ptr, [self.builder.sub(aligned, addr)],
                                 source_etype=ir.IntType(8))
        return start, (lambda: self.builder.call(free, [ptr]))

    # ---------------------------------------------------------------- loops
    def emit_for(self, s: S.For) -> None:
        self._reassociating(s.annotations, lambda: self._emit_for(s))

    def _emit_for(self, s: S.For) -> None:
        kind = s.kind
        extent = _const_int(s.extent)
        if type(s.min) is E.IntImm and s.min.value >= 0:
            self.nonneg_vars().add(id(s.loop_var))  # every value it takes is >= min
        if kind == S.ForKind.PARALLEL and self.parallel_depth == 0 and self.gomp:
            return self.emit_parallel(s)
        if (kind == S.ForKind.VECTORIZED and self.lanes == 1 and extent is not None
                and 1 < extent <= MAX_PIECEWISE_LANES and self._vectorizable(s)):
            if needs_pieces(extent) and lane_wise(s.body):
                return emit_in_pieces(self, s, extent)
            if extent <= MAX_VECTOR_LANES:
                return self.emit_vectorized(s, extent)
        if kind == S.ForKind.UNROLLED and extent is not None and extent <= MAX_UNROLL:
            base = self.emit_scalar(s.min)
            for k in range(extent):
                self.env[id(s.loop_var)] = fold_int(self.builder, "add", base,
                                                    ir.Constant(base.type, k))
                self.emit_stmt(s.body)
            self.env.pop(id(s.loop_var), None)
            return None
        lo = self.emit_scalar(s.min)
        ext = self.emit_scalar(s.extent)
        self.serial_loop(s.loop_var, lo, fold_int(self.builder, "add", lo, ext),
                         lambda: self.emit_stmt(s.body))
        return None

    def serial_loop(self, var, lo, hi, body) -> None:
        """``for var in [lo, hi): body()`` as a canonical LLVM loop."""
        bld = self.builder
        pre = bld.block
        head = bld.append_basic_block("for.head")
        body_bb = bld.append_basic_block("for.body")
        end = bld.append_basic_block("for.end")
        bld.branch(head)
        bld.position_at_end(head)
        i = bld.phi(lo.type, name=getattr(var, "name", "i"))
        i.add_incoming(lo, pre)
        bld.cbranch(bld.icmp_signed("<", i, hi), body_bb, end)
        bld.position_at_end(body_bb)
        self.env[id(var)] = i
        body()
        nxt = bld.add(i, ir.Constant(lo.type, 1), flags=("nsw",))
        i.add_incoming(nxt, bld.block)
        bld.branch(head)
        bld.position_at_end(end)
        self.env.pop(id(var), None)

    def _vectorizable(self, s: S.For) -> bool:
        """Only stores whose index moves with the loop var, let bindings (vector values shared
        by the stores after them), and no control flow inside."""
        masked = bool(s.annotations.get(MASKED_STORES))
        for st in walk_stmts(s.body):
            if isinstance(st, S.BufferStore):
                if not any(_uses_var(i, s.loop_var) for i in st.indices):
                    return False
            elif masked and isinstance(st, S.IfThenElse) and st.else_case is None and \
                    isinstance(st.then_case, S.BufferStore):
                continue
            elif not isinstance(st, (S.SeqStmt, S.LetStmt)):
                return False
        return True

    def emit_vectorized(self, s: S.For, lanes: int) -> None:
        self.lanes = lanes
        base = self.emit_scalar(s.min)
        self.env[id(s.loop_var)] = RampVal(base, 1, lanes)
        try:
            self.emit_stmt(s.body)
        finally:
            self.lanes = 1
            self.env.pop(id(s.loop_var), None)

    # ---------------------------------------------------------------- parallel
    def emit_parallel(self, s: S.For) -> None:
        """Outline the loop body into a function and run it on the OpenMP thread pool."""
        captured = [(k, v) for k, v in self.env.items() if isinstance(v, ir.Value)
                    and not isinstance(v, RampVal)]
        lo = self.emit_scalar(s.min)
        ext = self.emit_scalar(s.extent)
        nested = bool(s.annotations.get(INSTANCE_LOOP))
        fields = [v.type for _, v in captured] + [lo.type, ext.type, T.I64] + \
            ([T.I32] if nested else [])
        sty = ir.LiteralStructType(fields)
        bld = self.builder
        with bld.goto_block(self.entry_block):
            if self.entry_block.instructions:
                bld.position_before(self.entry_block.instructions[0])
            closure = bld.alloca(sty, name="closure")
            closure.type = T.PTR
        # One thread, or too few iterations to pay for waking the pool: run the outlined body
        # on this thread (outside a parallel region it sees one thread and takes every chunk).
        go = bld.icmp_signed(">", self.num_threads, T.I32(1))
        min_ext = max(2, int(s.annotations.get(PARALLEL_MIN_EXTENT, 2)))
        go = bld.and_(go, bld.icmp_signed(">=", ext, ir.Constant(ext.type, min_ext)))
        values = [v for _, v in captured] + [lo, ext, ir.Constant(T.I64, 0)]
        if nested:  # the threads left to the loops inside: all of them when this one is serial
            values.append(bld.select(go, T.I32(1), self.num_threads))
        for k, v in enumerate(values):
            bld.store(v, bld.gep(closure, [T.I32(0), T.I32(k)], source_etype=sty))
        self.par_count += 1
        fn = textir.Function(self.module, ir.FunctionType(T.VOID, [T.PTR]),
                             name=f"{self.symbol}_par{self.par_count}")
        fn.linkage = "internal"
        saved = (self.builder, self.entry_block, self.env, self.function)
        entry = fn.append_basic_block("entry")
        self.function = fn
        self.entry_block = entry
        self.builder = textir.IRBuilder(entry)
        self.env = {}
        self.parallel_depth += 1
        try:
            self._parallel_worker(fn, s, captured, fields, sty)
        finally:
            self.parallel_depth -= 1
            self.builder, self.entry_block, self.env, self.function = saved
        gomp = self._declare("GOMP_parallel", T.VOID, [T.PTR, T.PTR, T.I32, T.I32])
        with bld.if_else(go) as (par, ser):
            with par:
                bld.call(gomp, [fn, closure, self.num_threads, T.I32(0)])
            with ser:
                bld.call(fn, [closure])

    def _parallel_worker(self, fn, s: S.For, captured, fields, sty) -> None:
        """Body of an outlined parallel loop: threads take chunks from a shared atomic counter.

        Dynamic chunks (``CHUNKS_PER_THREAD``) balance uneven iterations and keep a loop
        finishing when one thread is descheduled on a busy machine. Each chunk runs through
        ``<fn>_body(captured..., start, stop)``, whose pointer parameters are ``noalias`` in a
        ``tir.noalias`` kernel (every captured pointer is a distinct buffer or allocation), so
        LLVM vectorizes the chunk without run-time alias checks.
        """
        b = self.builder
        data = fn.args[0]
        n = len(captured)

        def field(k):
            return b.gep(data, [T.I32(0), T.I32(k)], source_etype=sty)

        vals = [b.load(field(k), typ=fields[k]) for k in range(n)]
        ity = fields[n]
        lo = b.load(field(n), typ=ity)
        ext = b.load(field(n + 1), typ=ity)
        counter = field(n + 2)
        threads = [b.load(field(n + 3), typ=T.I32)] if len(fields) > n + 3 else []
        body_fn = self._chunk_function(fn.name + "_body", s, captured, fields[:n], ity,
                                       nested=bool(threads))
        nth = b.call(self._declare("omp_get_num_threads", T.I32, []), [])
        nth = b.sext(nth, ity) if ity.width > 32 else nth
        chunk = b.sdiv(ext, b.mul(nth, ir.Constant(ity, CHUNKS_PER_THREAD)))
        chunk = b.select(b.icmp_signed("<", chunk, ir.Constant(ity, 1)), ir.Constant(ity, 1),
                         chunk)
        chunk64 = b.sext(chunk, T.I64) if ity.width < 64 else chunk
        grab = b.append_basic_block("par.grab")
        work = b.append_basic_block("par.work")
        done = b.append_basic_block("par.done")
        b.branch(grab)
        b.position_at_end(grab)
        start64 = b.atomic_rmw("add", counter, chunk64, "monotonic")
        start = b.trunc(start64, ity) if ity.width < 64 else start64
        b.cbranch(b.icmp_signed("<", start, ext), work, done)
        b.position_at_end(work)
        stop = b.add(start, chunk)
        stop = b.select(b.icmp_signed("<", stop, ext), stop, ext)
        b.call(body_fn, [*vals, *threads, b.add(lo, start), b.add(lo, stop)])
        b.branch(grab)
        b.position_at_end(done)
        b.ret_void()

    def _chunk_function(self, name: str, s: S.For, captured, types, ity,
                        nested: bool = False) -> textir.Function:
        """``void name(captured..., start, stop)`` running iterations [start, stop) of ``s``;
        ``nested`` (an ``INSTANCE_LOOP``): ``(captured..., threads, start, stop)``, the
        body's parallel loops outlined as at the top level, on ``threads`` threads."""
        extra = [T.I32] if nested else []
        body_fn = textir.Function(self.module,
                                  ir.FunctionType(T.VOID, [*types, *extra, ity, ity]), name=name)
        body_fn.linkage = "internal"
        if self.noalias:
            for arg, ty in zip(body_fn.args, types):
                if ty == T.PTR:
                    arg.add_attribute("noalias")
        saved = (self.builder, self.entry_block, self.env, self.function, self.num_threads,
                 self.parallel_depth)
        entry = body_fn.append_basic_block("entry")
        start_bb = body_fn.append_basic_block("start")
        self.function, self.entry_block = body_fn, entry
        self.builder = textir.IRBuilder(start_bb)
        self.env = {key: arg for (key, _), arg in zip(captured, body_fn.args)}
        if nested:
            self.num_threads, self.parallel_depth = body_fn.args[-3], 0
        try:
            self.serial_loop(s.loop_var, body_fn.args[-2], body_fn.args[-1],
                             lambda: self.emit_stmt(s.body))
            self._fence_nontemporal()
            self.builder.ret_void()
            textir.IRBuilder(entry).branch(start_bb)
        finally:
            (self.builder, self.entry_block, self.env, self.function, self.num_threads,
             self.parallel_depth) = saved
        return body_fn

    # ---------------------------------------------------------------- memory access
    def mem_type(self, dtype: str) -> ir.Type:
        return ir.IntType(8) if dtype == "bool" else T.scalar_type(dtype)

    def to_i64(self, v):
        if type(v) is not RampVal and v.type is T.I64:  # (most index values already are)
            return v
        if isinstance(v, RampVal):
            return RampVal(self.to_i64(v.base), v.stride, v.lanes)
        et = v.type.element if isinstance(v.type, ir.VectorType) else v.type
        if et.width == 64:
            return v
        lanes = lanes_of(v)
        return fold_int_cast(self.builder, "sext", v,
                             T.I64 if lanes == 1 else ir.VectorType(T.I64, lanes))

    def _strides(self, buf) -> list:
        """Each dimension's stride in elements: a Python int where it is a constant, else an
        i64 value (computed here, at the access). All-constant strides are worked out once
        per buffer: they need no instruction, and every access of the buffer asks."""
        cache = self.__dict__.setdefault("_const_strides", {})
        hit = cache.get(id(buf))
        if hit is not None and hit[0] is buf:
            return list(hit[1])
        out = self._compute_strides(buf)
        if all(type(st) is int for st in out):
            cache[id(buf)] = (buf, tuple(out))  # (holding buf: its id is not reused)
        return out

    def _compute_strides(self, buf) -> list:
        if buf.strides:
            return [(_const_int(st) if _const_int(st) is not None
                     else self.to_i64(self.emit_scalar(st))) for st in buf.strides]
        out, acc = [], 1
        for k, d in enumerate(reversed(buf.shape)):
            out.append(acc)
            if k == len(buf.shape) - 1:
                break  # (the whole buffer's size: no stride)
            c = _const_int(d)
            if acc is None or isinstance(acc, ir.Value) or c is None:
                dv = self.to_i64(self.emit_scalar(d))
                acc = self.builder.mul(acc if isinstance(acc, ir.Value) else
                                       ir.Constant(T.I64, acc), dv)
            else:
                acc = acc * c
        return out[::-1]

    def _offset(self, buf, idx: list):
        if len(idx) != len(buf.shape) and not (len(idx) == 1 and not buf.strides):
            raise ValueError(f"buffer {buf.name!r} of rank {len(buf.shape)} accessed with "
                             f"{len(idx)} indices")
        strides = [1] if len(idx) == 1 else self._strides(buf)
        off = None
        for v, st in zip(idx, strides):
            v = self.to_i64(v)
            if st != 1:
                stv = st if isinstance(st, ir.Value) else ir.Constant(T.I64, st)
                v = self._ramp_mul(v, stv)
            off = v if off is None else self._ramp_add(off, v)
        if off is None:  # a 0-d buffer: its only element
            off = ir.Constant(T.I64, 0)
        eo = _const_int(buf.elem_offset)
        if eo is None:
            off = self._ramp_add(off, self.to_i64(self.emit_scalar(buf.elem_offset)))
        elif eo:
            off = self._ramp_add(off, ir.Constant(T.I64, eo))
        return off

    def _ramp_add(self, a, b):
        r = self._ramp_arith(E.Add, a, b) if isinstance(a, RampVal) or isinstance(b, RampVal) \
            else None
        if r is not None:
            return r
        a, b = self._match(a, b)
        return fold_int(self.builder, "add", a, b, ("nsw",))

    def _ramp_mul(self, a, b):
        if isinstance(a, RampVal):
            r = self._ramp_arith(E.Mul, a, b)
            if r is not None:
                return r
        a, b = self._match(a, b)
        return fold_int(self.builder, "mul", a, b, ("nsw",))

    def _lane_ptrs(self, base_ptr, off, et):
        bld = self.builder
        if isinstance(off, RampVal):
            return [bld.gep(base_ptr, [bld.add(off.base, ir.Constant(T.I64, k * off.stride))],
                            inbounds=True, source_etype=et) for k in range(off.lanes)]
        return [bld.gep(base_ptr, [bld.extract_element(off, T.I32(k))], inbounds=True,
                        source_etype=et) for k in range(lanes_of(off))]

    def load(self, buf, idx: list):
        bld = self.builder
        et = self.mem_type(buf.dtype)
        base_ptr = self.buffer_ptr(buf)
        off = self._offset(buf, idx)
        align = max(1, T.element_bytes(buf.dtype))
        lanes = lanes_of(off)
        if lanes == 1:
            v = bld.load(bld.gep(base_ptr, [off], inbounds=True, source_etype=et), typ=et,
                         align=align)
        elif isinstance(off, RampVal) and off.stride == 1:
            p = bld.gep(base_ptr, [off.base], inbounds=True, source_etype=et)
            v = bld.load(p, typ=ir.VectorType(et, lanes), align=align)
        elif isinstance(off, RampVal) and 2 <= off.stride <= 4 and buf.dtype != "bool":
            v = self._strided_load(base_ptr, off, et, align)
        else:
            v = ir.Constant(ir.VectorType(et, lanes), ir.Undefined)
            for k, p in enumerate(self._lane_ptrs(base_ptr, off, et)):
                v = bld.insert_element(v, bld.load(p, typ=et, align=align), T.I32(k))
        if buf.dtype == "bool":
            v = bld.trunc(v, T.I1 if lanes == 1 else ir.VectorType(T.I1, lanes))
        return v

    def _strided_load(self, base_ptr, off, et, align: int):
        """A load at constant stride 2-4 as whole vector loads of the span it covers (the last
        one ending at its last element: nothing past it is read) and shuffles, instead of one
        scalar load per lane (stride-2 column phases, strided pooling picks)."""
        bld, lanes, st = self.builder, off.lanes, off.stride
        span = (lanes - 1) * st + 1
        starts = [min(k * lanes, span - lanes) for k in range(-(-span // lanes))]
        vt = ir.VectorType(et, lanes)
        parts = [bld.load(bld.gep(base_ptr, [bld.add(off.base, ir.Constant(T.I64, s0))],
                                  inbounds=True, source_etype=et), typ=vt, align=align)
                 for s0 in starts]
        whole = T.concat_vectors(bld, parts)
        pick = []
        for i in range(lanes):  # lane i is element i*st of the span: in the last load covering it
            e = i * st
            k = max(j for j, s0 in enumerate(starts) if s0 <= e)
            pick.append(k * lanes + e - starts[k])
        mask = ir.Constant(ir.VectorType(T.I32, lanes), pick)
        return bld.shuffle_vector(whole, ir.Constant(whole.type, ir.Undefined), mask)

    def store(self, buf, idx: list, value) -> None:
        bld = self.builder
        et = self.mem_type(buf.dtype)
        base_ptr = self.buffer_ptr(buf)
        off = self._offset(buf, idx)
        align = max(1, T.element_bytes(buf.dtype))
        lanes = lanes_of(off)
        if isinstance(value, RampVal) or lanes_of(value) != lanes:
            value = self.broadcast(value, lanes) if lanes > 1 else value
        if lanes_of(value) != lanes:
            raise ValueError(f"store to {buf.name!r}: vector value with a scalar index")
        if buf.dtype == "bool":
            value = bld.zext(value, et if lanes == 1 else ir.VectorType(et, lanes))
        _check_stored_type(buf, value, et)
        if lanes == 1:
            bld.store(value, bld.gep(base_ptr, [off], inbounds=True, source_etype=et),
                      align=align)
        elif isinstance(off, RampVal) and off.stride == 1:
            p = bld.gep(base_ptr, [off.base], inbounds=True, source_etype=et)
            vbytes = lanes * T.element_bytes(buf.dtype)
            if id(buf.data) in self.nontemporal and \
                    vbytes in NONTEMPORAL_VECTOR_BYTES:
                self._store_nontemporal(value, p, vbytes, align)
            else:
                bld.store(value, p, align=align)
        else:
            for k, p in enumerate(self._lane_ptrs(base_ptr, off, et)):
                bld.store(bld.extract_element(value, T.I32(k)), p, align=align)

    def buffer_ptr(self, buf):
        try:
            return self.env[id(buf.data)]
        except KeyError:
            raise ValueError(f"buffer {buf.name!r} is not allocated or passed in") from None


def _check_stored_type(buf, value, et) -> None:
    """A store's value must have its buffer's element type: LLVM's opaque pointers would
    otherwise take, say, an i8 into a float32 buffer as one byte at the element's address."""
    vt = value.type.element if isinstance(value.type, ir.VectorType) else value.type
    if vt != et:
        raise TypeError(f"store to {buf.name!r} ({buf.dtype}): the value is {vt}, not {et}")
