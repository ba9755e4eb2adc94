"""FoldTransposeIntoConsumer: a ``call_tir`` of a pure transpose PrimFunc (``permute_dims`` as
LegalizeOps writes it) whose result a reduction PrimFunc (a matmul) reads becomes a read of the
untransposed tensor with permuted indices inside that consumer, and the transpose disappears.
Only a 2-D transpose read as the B of ``A @ B`` is folded (other reads would leave the GEMM
patterns the schedules know).

Why: ``nn.Linear`` exports ``matmul(x, permute_dims(w))``; FuseOps keeps the injective transpose
out of the matmul's group (a reduction absorbs no producer), so with weights passed as arguments
every call copied W transposed before the GEMM. The rewritten consumer reads ``W[j, k]``, which
the schedules recognize as ``matmul`` with ``transpose_b`` (TVM gets the same effect from
``FuseTransposeMatmul`` / dlight's NT-matmul rules). A consumer PrimFunc is specialized once
per (function, positions) and shared by its call sites."""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.gc_pause import paused
from ...ir.op import Op
from ...tir import expr as T
from ...tir import stmt as S
from ...tir.buffer import Buffer
from ...tir.function import PrimFunc
from ...tir.stmt_functor import post_order, stmt_exprs, transform_expr, transform_stmt, walk_stmts
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..expr import BindingBlock, DataflowBlock, Function, SeqExpr, Tuple, Var, VarBinding
from .lower_utils import normalized, simplify, vars_used
from .utils import has_relax_function, register

__all__ = ["FoldTransposeIntoConsumer", "transpose_permutation"]


def _call_tir_parts(value):
    """(PrimFunc GlobalVar, argument fields) of a ``call_tir`` value, or None."""
    if getattr(value, "op", None) is None or not isinstance(value.op, Op) or \
            value.op.name != "relax.call_tir" or len(value.args) != 2:
        return None
    gv, args = value.args
    if not isinstance(gv, GlobalVar) or not isinstance(args, Tuple):
        return None
    return gv, list(args.fields)


def _same(a, b) -> bool:
    try:
        d = simplify(T.Sub(T.Cast("int64", a) if a.dtype != "int64" else a,
                           T.Cast("int64", b) if b.dtype != "int64" else b))
    except Exception:  # an expression the analyzer cannot take: not provably equal
        return False
    return isinstance(d, T.IntImm) and d.value == 0


def transpose_permutation(func: PrimFunc) -> tuple | None:
    """``perm`` when ``func`` is ``dst[v0, .., vn] = src[v_perm[0], .., v_perm[n]]`` over the
    whole of ``dst`` (one spatial block, nothing else), else None."""
    if not isinstance(func, PrimFunc) or len(func.params) != 2 or \
            any(p not in func.buffer_map for p in func.params):
        return None
    src, dst = (func.buffer_map[p] for p in func.params)
    if src.dtype != dst.dtype or len(src.shape) != len(dst.shape) or len(dst.shape) < 2:
        return None
    blocks = [s for s in walk_stmts(func.body) if isinstance(s, S.Block)]
    inner = [b for b in blocks if b.iter_vars]
    if len(inner) != 1 or any(b.alloc_buffers or b.match_buffers for b in blocks):
        return None
    blk = inner[0]
    store = blk.body
    if blk.init is not None or not isinstance(store, S.BufferStore) or store.buffer is not dst \
            or not isinstance(store.value, T.BufferLoad) or store.value.buffer is not src:
        return None
    ivars = [iv.var for iv in blk.iter_vars]
    if any(iv.iter_type != T.IterVar.DataPar for iv in blk.iter_vars) or \
            len(ivars) != len(dst.shape) or \
            any(i is not v for i, v in zip(store.indices, ivars, strict=True)):
        return None
    pos = {id(v): k for k, v in enumerate(ivars)}
    perm = tuple(pos.get(id(i), -1) for i in store.value.indices)
    if sorted(perm) != list(range(len(ivars))) or perm == tuple(range(len(ivars))):
        return None
    if not all(_same(iv.dom.extent, d) and _same(iv.dom.min, T.IntImm(d.dtype, 0))
               for iv, d in zip(blk.iter_vars, dst.shape, strict=True)):
        return None
    return perm


def _b_operand_load(load, block) -> bool:
    """``buf[k, j]`` with ``k`` a reduction and ``j`` a spatial axis of ``block``: the B of
    ``A @ B``, which read transposed is the ``[N, K]`` weight the NT-GEMM schedule takes (a
    transposed A or a batched operand would leave the GEMM patterns)."""
    kinds = {id(iv.var): iv.iter_type for iv in block.iter_vars}
    idx = load.indices
    return len(idx) == 2 and kinds.get(id(idx[0])) == T.IterVar.CommReduce and \
        kinds.get(id(idx[1])) == T.IterVar.DataPar


def _read_by_reduction(func: PrimFunc, buf: Buffer) -> bool:
    """Is ``buf`` only read in ``func`` (never stored, matched or aliased), and read as the B
    operand of a matmul block (``_b_operand_load``) wherever a reduction block reads it?"""
    reduced = False
    for s in walk_stmts(func.body):
        if isinstance(s, S.BufferStore) and s.buffer is buf:
            return False
        if isinstance(s, S.Block):
            if any(r.buffer is buf for r in s.writes) or \
                    any(getattr(m, "source", None) is not None and m.source.buffer is buf
                        for m in s.match_buffers):
                return False
            if any(iv.iter_type == T.IterVar.CommReduce for iv in s.iter_vars):
                loads = [n for e in stmt_exprs(s.body) if isinstance(s.body, S.BufferStore)
                         for n in post_order(e)
                         if isinstance(n, T.BufferLoad) and n.buffer is buf]
                if any(not _b_operand_load(ld, s) for ld in loads):
                    return False
                reduced |= bool(loads)
    return reduced


def _fold(func: PrimFunc, folds: dict) -> PrimFunc:
    """``func`` with buffer parameter ``k`` replaced, for each ``k: perm`` in ``folds``, by the
    untransposed tensor (``src[perm-indexed]`` for each ``old[idx]``)."""
    params, bmap, remap = list(func.params), dict(func.buffer_map), {}
    for k, perm in folds.items():
        old = func.buffer_map[func.params[k]]
        shape = [old.shape[p] for p in perm]
        new = Buffer(T.Var(old.name + "_t", "handle"), old.dtype, shape, name=old.name + "_t")
        param = T.Var(func.params[k].name + "_t", "handle")
        bmap = {param if p is func.params[k] else p: new if p is func.params[k] else b
                for p, b in bmap.items()}  # (the order of the parameters kept)
        params[k] = param
        remap[id(old)] = (new, perm)

    def fpost(e):
        if isinstance(e, T.BufferLoad) and id(e.buffer) in remap:
            new, perm = remap[id(e.buffer)]
            return T.BufferLoad(new, [e.indices[p] for p in perm], e.predicate)
        return None

    memo: dict = {}

    def fstmt(s):
        if isinstance(s, S.Block) and any(id(r.buffer) in remap for r in s.reads):
            reads = []
            for r in s.reads:
                if id(r.buffer) in remap:
                    new, perm = remap[id(r.buffer)]
                    r = S.BufferRegion(new, [r.region[p] for p in perm])
                reads.append(r)
            return S.Block(s.iter_vars, reads, s.writes, s.name_hint, s.body, s.init,
                           s.alloc_buffers, s.match_buffers, s.annotations)
        return None

    body = transform_stmt(func.body, lambda e: transform_expr(e, fpost, memo), fstmt)
    return PrimFunc(params, body, func.ret_type, bmap, func.attrs)


class _Folder:
    """Module-wide state: transpose facts per PrimFunc, and the specialized consumers."""

    def __init__(self, mod):
        self.mod, self.out = mod, mod.shallow_copy()
        self.perm: dict = {}
        self.made: dict = {}
        self.count = 0

    def perm_of(self, gv):
        if gv not in self.perm:
            f = self.mod.functions.get(gv)
            self.perm[gv] = transpose_permutation(f) if isinstance(f, PrimFunc) else None
        return self.perm[gv]

    def specialized(self, gv, folds: dict) -> GlobalVar:
        key = (gv, tuple(sorted(folds.items())))
        if key not in self.made:
            func = _fold(self.mod.functions[gv], folds)
            name, n = gv.name_hint + "_tb", 1
            while name in self.out:
                name, n = f"{gv.name_hint}_tb{n}", n + 1
            new = GlobalVar(name)
            self.out.update_func(new, func)
            self.made[key] = new
        return self.made[key]

    def rewrite(self, func: Function) -> Function:
        if not isinstance(func.body, SeqExpr):
            return func
        transposed = {}  # id(var) -> (source tensor, perm)
        changed = False
        blocks = []
        for block in func.body.blocks:
            out = []
            for b in block.bindings:
                parts = _call_tir_parts(b.value) if isinstance(b, VarBinding) else None
                if parts is not None:
                    gv, args = parts
                    perm = self.perm_of(gv)
                    if perm is not None and len(args) == 1:
                        transposed[id(b.var)] = (args[0], perm)
                    else:
                        nb = self._fold_call(b, gv, args, transposed)
                        changed |= nb is not b
                        b = nb
                out.append(b)
            blocks.append(type(block)(out, block.span) if isinstance(
                block, DataflowBlock | BindingBlock) else block)
        if not changed:
            return func
        blocks = _drop_unused(blocks, func.body.body, transposed)
        seq = SeqExpr(blocks, func.body.body, func.body.span)
        seq._checked_type = func.body._checked_type
        return Function(func.params, seq, func.ret_struct_info, func.is_pure, func.attrs,
                        func.span)

    def _fold_call(self, b, gv, args, transposed):
        prim = self.mod.functions.get(gv)
        if not isinstance(prim, PrimFunc) or len(prim.params) < len(args):
            return b
        folds = {}
        for k, a in enumerate(args):
            if isinstance(a, Var) and id(a) in transposed and prim.params[k] in prim.buffer_map \
                    and _read_by_reduction(prim, prim.buffer_map[prim.params[k]]):
                folds[k] = transposed[id(a)][1]
        if not folds:
            return b
        new_gv = self.specialized(gv, folds)
        new_args = [transposed[id(a)][0] if k in folds else a for k, a in enumerate(args)]
        v = b.value
        call = type(v)(v.op, [new_gv, normalized(Tuple(new_args), self.out)], v.attrs,
                       v.sinfo_args, v.span)
        call._checked_type = v._checked_type
        self.count += len(folds)
        return VarBinding(b.var, call, b.span)


def _drop_unused(blocks, body, transposed) -> list:
    """``blocks`` without the transposes nothing reads any more."""
    used: set = set()
    for block in blocks:
        for b in block.bindings:
            used.update(id(v) for v in vars_used(b.value))
    used.update(id(v) for v in vars_used(body))
    return [type(block)([b for b in block.bindings
                         if id(b.var) not in transposed or id(b.var) in used], block.span)
            for block in blocks]


@register("FoldTransposeIntoConsumer")
def FoldTransposeIntoConsumer():  # noqa: N802 - pass factory named like TVM's passes
    """Module pass (opt 0): transposes feeding a reduction PrimFunc are read in place there."""

    def run(mod, _ctx):
        if not has_relax_function(mod):
            return mod
        with paused():
            folder = _Folder(mod)
            for gv, func in list(mod.functions.items()):
                if isinstance(func, Function):
                    new = folder.rewrite(func)
                    if new is not func:
                        folder.out.update_func(gv, new)
            if not folder.count:
                return mod
            _drop_unreferenced(folder.out, folder)
        record_stat("transposes folded", folder.count)
        return folder.out

    return module_pass(run, opt_level=0, name="FoldTransposeIntoConsumer")


def _drop_unreferenced(out, folder) -> None:
    """Remove the PrimFuncs this pass made unreachable (replaced consumers, folded transposes)."""
    candidates = {gv for gv, _ in folder.made} | {gv for gv, p in folder.perm.items() if p}
    live: set = set()
    for func in out.functions.values():
        if isinstance(func, Function):
            for b in _bindings(func.body):
                parts = _call_tir_parts(b.value)
                if parts is not None:
                    live.add(parts[0])
                for v in _globals_in(b.value):
                    live.add(v)
    for gv in candidates:
        if gv not in live and gv in out.functions:
            out.remove(gv)


def _bindings(seq):
    stack = [seq]
    while stack:
        s = stack.pop()
        if isinstance(s, SeqExpr):
            for block in s.blocks:
                for b in block.bindings:
                    yield b
                    v = b.value
                    if hasattr(v, "true_branch"):
                        stack.extend((v.true_branch, v.false_branch))
                    elif isinstance(v, SeqExpr):
                        stack.append(v)


def _globals_in(value) -> list:
    """GlobalVars appearing as call operands or arguments (one level into tuples)."""
    out = []
    for e in (getattr(value, "op", None), *getattr(value, "args", ())):
        if isinstance(e, GlobalVar):
            out.append(e)
        elif isinstance(e, Tuple):
            out.extend(f for f in e.fields if isinstance(f, GlobalVar))
    return out
