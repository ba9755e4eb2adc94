"""FuseTIR (TVM's ``relax.transform.FuseTIR()``): turn every ``Primitive`` Relax function made
by FuseOps into one PrimFunc and its calls into one ``R.call_tir``.

The fused PrimFunc runs the callees' bodies in binding order inside one root block:

* a tensor parameter ``x`` of the Relax function becomes the handle ``p_x`` matched to a buffer
  ``x`` (its shape from the struct info, symbolic dimensions bound by ``T.match_buffer``);
* every callee output buffer ``B`` becomes ``B_intermediate``: a ``T.alloc_buffer`` of the root
  block, or the buffer of output handle ``p_output0``, ``p_output1``... when the Relax function
  returns it;
* callee symbolic variables are matched to the fused shapes, loop and block variables renewed
  (a callee used twice stays SSA) and repeated block names numbered ``T_add_1``...;
* a Relax constant argument of a callee (a weight bound by BindParams) becomes a tensor
  parameter ``p_param_<k>`` after the function's own, and the call passes the constant;
* a ``tir_vars`` shape parameter becomes scalar parameters after the outputs (``call_tir``'s
  convention) and the call passes them as ``tir_vars``.
Primitive functions for an external codegen (a ``Codegen`` attribute, or a ``Composite`` one
still holding Relax operators) are left as they are; a Composite function lowered by LegalizeOps
is fused like the others, as TVM fuses every Primitive function. The pass then runs DeadCodeElimination (the callees and the
Primitive functions go; ``lv = f(..); gv = lv`` becomes ``gv = f(..)``).
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.module import IRModule
from ...ir.op import Op
from ...tir import expr as TE
from ...tir import stmt as TS
from ...tir.buffer import Buffer, decl_buffer
from ...tir.function import PrimFunc
from ...tir.stmt_functor import (
    post_order,
    substitute,
    transform_expr,
    transform_stmt,
    walk_stmts,
)
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..expr import (
    Call,
    Constant,
    Function,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ..op.base import call_tir
from ..struct_info import PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo
from .dead_code_elimination import dead_code_elimination
from .fuse_ops import _nonzero_attr
from .utils import flat_value_kept, has_relax_function, register

__all__ = ["FuseTIR", "fuse_tir", "fuse_primitive_function"]


class FuseTIRError(ValueError):
    """A Primitive function FuseTIR cannot merge (names the function and the binding)."""


def _tensor_fields(sinfo) -> list:
    """The tensors of a (possibly nested) tuple struct info, flattened; the other fields of a
    tuple (an ``R.Prim``, a shape) are no buffers of the fused PrimFunc and are left out."""
    out, stack = [], [sinfo]
    while stack:
        s = stack.pop()
        if isinstance(s, TupleStructInfo):
            stack.extend(reversed(s.fields))
        elif isinstance(s, TensorStructInfo) or (
                s is sinfo and not isinstance(s, PrimStructInfo | ShapeStructInfo)):
            out.append(s)  # (a lone non-tensor stays, for add_params' error message)
    return out


class _FusedBuilder:
    """Collects the pieces of the fused PrimFunc while walking the Primitive function."""

    def __init__(self, mod: IRModule, func: Function, name: str):
        self.mod = mod
        self.func = func
        self.name = name
        self.params: list = []
        self.scalar_params: list = []
        self.buffer_map: dict = {}
        self.expr2bufs: dict = {}  # relax var -> the fused buffers that hold its value
        self.relax2tir: dict = {}  # relax symbolic var -> its var in the fused function
        self.allocs: list = []
        self.bodies: list = []
        self.block_names: dict = {}
        self.constants: list = []  # Relax constants lifted to tensor parameters, in order

    # ------------------------------------------------------------------ symbolic shapes
    def _fused_dim(self, e):
        """A Relax shape dimension in terms of the fused function's variables."""
        for v in _tir_vars(e):
            if v not in self.relax2tir:
                self.relax2tir[v] = TE.Var(v.name, v.dtype)
        return substitute(e, self.relax2tir) if self.relax2tir else e

    def _tensor_buffer(self, sinfo, name: str) -> Buffer:
        if not isinstance(sinfo, TensorStructInfo) or not isinstance(sinfo.shape, ShapeExpr):
            raise FuseTIRError(f"FuseTIR: {self.name}: {name!r} must be a tensor of known "
                               f"shape, got {sinfo}")
        shape = [self._fused_dim(d) for d in sinfo.shape.values]
        return decl_buffer(shape, sinfo.dtype, name)

    # ------------------------------------------------------------------ parameters
    def add_params(self) -> None:
        for p in self.func.params:
            sinfo = p.struct_info
            if isinstance(sinfo, ShapeStructInfo):
                if sinfo.values is None:
                    raise FuseTIRError(f"FuseTIR: {self.name}: shape parameter {p.name_hint!r} "
                                       "has unknown values")
                for v in sinfo.values:
                    if not isinstance(v, TE.Var):
                        raise FuseTIRError(f"FuseTIR: {self.name}: shape parameter "
                                           f"{p.name_hint!r} must hold symbolic variables, "
                                           f"got {v}")
                    self.scalar_params.append(self._fused_dim(v))
                continue
            if isinstance(sinfo, PrimStructInfo):
                raise FuseTIRError(f"FuseTIR: {self.name}: scalar parameter {p.name_hint!r} "
                                   "is not supported")
            fields = _tensor_fields(sinfo)
            tuple_param = isinstance(sinfo, TupleStructInfo)
            bufs = []
            for k, s in enumerate(fields):
                name = f"{p.name_hint}_{k}" if tuple_param else p.name_hint
                buf = self._tensor_buffer(s, name)
                handle = TE.Var(f"p_{name}", "handle")
                self.params.append(handle)
                self.buffer_map[handle] = buf
                bufs.append(buf)
            self.expr2bufs[p] = bufs

    def _lift_constant(self, const: Constant) -> None:
        """A constant argument (a weight bound by BindParams) becomes one more tensor parameter
        after the function's own; the rewritten call passes the constant there."""
        taken = {h.name for h in self.params}
        k = len(self.params)
        while f"p_param_{k}" in taken:
            k += 1
        name = f"param_{k}"
        buf = self._tensor_buffer(const.struct_info, name)
        handle = TE.Var(f"p_{name}", "handle")
        self.params.append(handle)
        self.buffer_map[handle] = buf
        self.expr2bufs[const] = [buf]
        self.constants.append(const)

    # ------------------------------------------------------------------ bindings
    def add_binding(self, binding) -> None:
        value = binding.value
        if isinstance(value, TupleGetItem) and value.tuple_value in self.expr2bufs:
            bufs = self.expr2bufs[value.tuple_value]
            fields = value.tuple_value.struct_info.fields
            start = sum(len(_tensor_fields(f)) for f in fields[:value.index])
            self.expr2bufs[binding.var] = bufs[start:start + len(_tensor_fields(
                fields[value.index]))]
            return
        if isinstance(value, Var) and value in self.expr2bufs and value not in self.func.params:
            self.expr2bufs[binding.var] = self.expr2bufs[value]  # an alias (``gv = lv``)
            return
        if not (isinstance(value, Call) and value.op is Op.get("relax.call_tir")):
            raise FuseTIRError(f"FuseTIR: {self.name}: binding {binding.var.name_hint!r} is "
                               "neither a call_tir nor a tuple-get-item")
        callee = self.mod.functions.get(value.args[0])
        if not isinstance(callee, PrimFunc):
            raise FuseTIRError(f"FuseTIR: {self.name}: {value.args[0].name_hint} is not a "
                               "PrimFunc in the module")
        self._inline_callee(binding, value, callee)

    def _inline_callee(self, binding, call: Call, callee: PrimFunc) -> None:
        in_bufs = []
        for a in call.args[1].fields:
            if isinstance(a, Constant) and a not in self.expr2bufs:
                self._lift_constant(a)
            if a not in self.expr2bufs:
                raise FuseTIRError(f"FuseTIR: {self.name}: argument {a} of "
                                   f"{binding.var.name_hint!r} must be a parameter or a "
                                   "variable bound earlier")
            in_bufs.extend(self.expr2bufs[a])
        out_sinfos = _tensor_fields(call.sinfo_args[0])
        tir_vars = list(call.args[2].values) if len(call.args) > 2 else []
        n_in, n_out = len(in_bufs), len(out_sinfos)
        if len(callee.params) != n_in + n_out + len(tir_vars):
            raise FuseTIRError(
                f"FuseTIR: {self.name}: {call.args[0].name_hint} takes {len(callee.params)} "
                f"parameters but the call passes {n_in} inputs, {n_out} outputs and "
                f"{len(tir_vars)} tir_vars")
        vmap: dict = {}  # callee var -> fused expression
        bmap: dict = {}  # callee buffer -> fused buffer
        for p, fused in zip(callee.params[:n_in], in_bufs):
            cb = callee.buffer_map[p]
            bmap[cb] = fused
            _match_shape(cb.shape, fused.shape, vmap)
        for p, v in zip(callee.params[n_in + n_out:], tir_vars):
            vmap[p] = self._fused_dim(v)
        outs = []
        for p, s in zip(callee.params[n_in:n_in + n_out], out_sinfos):
            cb = callee.buffer_map[p]
            target = [self._fused_dim(d) for d in s.shape.values]
            _match_shape(cb.shape, target, vmap)
            buf = decl_buffer([_subst(d, vmap) for d in cb.shape], cb.dtype,
                              f"{cb.name}_intermediate")
            bmap[cb] = buf
            self.allocs.append(buf)
            outs.append(buf)
        self.expr2bufs[binding.var] = outs
        body = callee.body
        if (isinstance(body, TS.BlockRealize) and body.block.name_hint == "root"
                and not body.block.iter_vars):
            for ab in body.block.alloc_buffers:
                nb = decl_buffer([_subst(d, vmap) for d in ab.shape], ab.dtype, ab.name,
                                 scope=ab.scope)
                bmap[ab] = nb
                self.allocs.append(nb)
            body = body.block.body
        self.bodies.append(self._rewrite(body, vmap, bmap))

    def _rewrite(self, body, vmap: dict, bmap: dict):
        """The callee body on the fused buffers and variables, its binders renewed."""
        vmap = dict(vmap)
        for s in walk_stmts(body):
            binders = []
            if isinstance(s, TS.For):
                binders = [s.loop_var]
            elif isinstance(s, TS.LetStmt):
                binders = [s.var]
            elif isinstance(s, TS.Block):
                binders = [iv.var for iv in s.iter_vars]
                for ab in s.alloc_buffers:
                    bmap.setdefault(ab, None)
            for v in binders:
                vmap[v] = TE.Var(v.name, v.dtype)
        for ab in [b for b, nb in bmap.items() if nb is None]:
            bmap[ab] = decl_buffer([_subst(d, vmap) for d in ab.shape], ab.dtype, ab.name,
                                   scope=ab.scope)
        memo: dict = {}

        def fpost(e):
            if isinstance(e, TE.Var):
                return vmap.get(e)
            if isinstance(e, TE.BufferLoad) and e.buffer in bmap:
                return TE.BufferLoad(bmap[e.buffer], e.indices, e.predicate)
            return None

        def fexpr(e):
            return transform_expr(e, fpost, memo)

        def region(rs):
            return tuple(TS.BufferRegion(bmap.get(r.buffer, r.buffer), r.region) for r in rs)

        def fstmt(s):
            if isinstance(s, TS.For):
                return TS.For(vmap.get(s.loop_var, s.loop_var), s.min, s.extent, s.kind,
                              s.body, s.thread_binding, s.annotations, s.span)
            if isinstance(s, TS.LetStmt):
                return TS.LetStmt(vmap.get(s.var, s.var), s.value, s.body, s.span)
            if isinstance(s, TS.BufferStore):
                return TS.BufferStore(bmap.get(s.buffer, s.buffer), s.value, s.indices,
                                      getattr(s, "predicate", None), s.span)
            if isinstance(s, TS.Block):
                ivs = [TE.IterVar(iv.dom, vmap.get(iv.var, iv.var), iv.iter_type,
                                  iv.thread_tag) for iv in s.iter_vars]
                return TS.Block(ivs, region(s.reads), region(s.writes),
                                self._unique_block_name(s.name_hint), s.body, s.init,
                                [bmap.get(b, b) for b in s.alloc_buffers],
                                s.match_buffers, s.annotations, s.span)
            return None

        return transform_stmt(body, fexpr, fstmt)

    def _unique_block_name(self, name: str) -> str:
        if name not in self.block_names:
            self.block_names[name] = 0
            return name
        while True:
            self.block_names[name] += 1
            candidate = f"{name}_{self.block_names[name]}"
            if candidate not in self.block_names:
                self.block_names[candidate] = 0
                return candidate

    # ------------------------------------------------------------------ result
    def finish(self, result) -> PrimFunc:
        results = result.fields if isinstance(result, Tuple) else (result,)
        out_bufs = []
        for r in results:
            if r not in self.expr2bufs or r in self.func.params:
                raise FuseTIRError(f"FuseTIR: {self.name}: the result {r} must be computed "
                                   "in the function")
            out_bufs.extend(self.expr2bufs[r])
        params = list(self.params)
        buffer_map = dict(self.buffer_map)
        for k, buf in enumerate(out_bufs):
            handle = TE.Var(f"p_output{k}", "handle")
            params.append(handle)
            buffer_map[handle] = buf
        params.extend(self.scalar_params)
        taken = {id(b) for b in out_bufs}
        allocs = [b for b in self.allocs if id(b) not in taken]
        root = TS.Block([], [], [], "root", TS.stmt_seq(*self.bodies),
                        alloc_buffers=allocs)
        body = TS.BlockRealize([], True, root)
        return PrimFunc(params, body, None, buffer_map, {"tir.noalias": True})


def _tir_vars(e) -> list:
    """The variables of a dimension, in first-use order."""
    if not isinstance(e, TE.PrimExpr):
        return []
    return [x for x in post_order(e) if isinstance(x, TE.Var)]


def _subst(e, vmap):
    return substitute(e, vmap) if vmap else e


def _match_shape(callee_shape, fused_shape, vmap: dict) -> None:
    """Bind the callee's symbolic dimensions to the fused function's (first binding wins)."""
    for cd, fd in zip(callee_shape, fused_shape):
        if isinstance(cd, TE.Var) and cd not in vmap:
            vmap[cd] = fd


def fuse_primitive_function(mod: IRModule, func: Function, name: str) -> PrimFunc:
    """The PrimFunc that computes Primitive function ``func`` (named ``name``) of ``mod``."""
    return _fuse(mod, func, name)[0]


def _fuse(mod: IRModule, func: Function, name: str) -> tuple[PrimFunc, list]:
    """The fused PrimFunc and the constants it takes after the function's tensor arguments."""
    body = func.body
    if not isinstance(body, SeqExpr):
        raise FuseTIRError(f"FuseTIR: {name}: the body must be a sequence of bindings")
    builder = _FusedBuilder(mod, func, name)
    builder.add_params()
    for block in body.blocks:
        for b in block.bindings:
            builder.add_binding(b)
    return builder.finish(body.body), builder.constants


class _CallRewriter(ExprMutator):
    """Calls of a fused Primitive function become ``call_tir`` of its PrimFunc."""

    def __init__(self, mod, replacements: dict):
        super().__init__(mod)
        self.replacements = replacements

    def visit_binding(self, binding) -> None:
        v = binding.value
        if type(binding) is VarBinding and not (
                isinstance(v, Call) and isinstance(v.op, GlobalVar) and v.op in
                self.replacements) and flat_value_kept(v, self.var_remap_):
            self.builder_.emit_normalized(binding)  # (no fused call in it: kept as it is)
            return
        super().visit_binding(binding)

    def visit_call_(self, op: Call):
        call = super().visit_call_(op)
        rep = self.replacements.get(call.op) if isinstance(call.op, GlobalVar) else None
        if rep is None:
            return call
        new_gv, func, constants = rep
        tensors, tir_vars = [], []
        for a, p in zip(call.args, func.params):
            if isinstance(p.struct_info, ShapeStructInfo):
                tir_vars.extend(a.values if isinstance(a, ShapeExpr) else a.struct_info.values)
            elif isinstance(p.struct_info, TupleStructInfo):
                n = len(_tensor_fields(p.struct_info))
                tensors.extend(_flat_items(a, n, self.builder_))
            else:
                tensors.append(a)
        tensors.extend(constants)
        out = self.builder_.normalize(call).struct_info
        out_sinfo = out if isinstance(out, TensorStructInfo) else _tensor_fields(out)
        return call_tir(new_gv, Tuple(tensors), out_sinfo, tir_vars or None)


def _flat_items(a, n: int, builder) -> list:
    """The ``n`` tensors of (possibly nested) tuple value ``a``, in the order of
    ``_tensor_fields``: its fields, or tuple-get-items bound to new vars (an explicit stack, so
    deep nesting does not recurse)."""
    out, stack = [], [a]
    while stack:
        v = stack.pop()
        if isinstance(v, Tuple):
            stack.extend(reversed(v.fields))
        elif isinstance(v.struct_info, TupleStructInfo):
            fields = v.struct_info.fields
            items = [builder.emit(TupleGetItem(v, k)) for k, f in enumerate(fields)
                     if isinstance(f, TensorStructInfo | TupleStructInfo)]
            stack.extend(reversed(items))
        elif isinstance(v.struct_info, TensorStructInfo):
            out.append(v)
    if len(out) != n:
        raise FuseTIRError(f"FuseTIR: a tuple argument holds {len(out)} tensors where the fused "
                           f"function's parameter holds {n}")
    return out


def _left_to_codegen(func: Function) -> bool:
    """Whether Primitive function ``func`` is not FuseTIR's to fuse: one for an external codegen
    (a ``Codegen`` attribute), or a ``Composite`` one still holding Relax operators (a group
    FuseOpsByPattern made for a codegen). A composite whose body LegalizeOps has lowered to
    ``call_tir``s is fused like any Primitive function (relax.build after FuseOpsByPattern)."""
    attrs = func.attrs or {}
    if "Codegen" in attrs:
        return True
    if "Composite" not in attrs:
        return False
    body = func.body
    return not isinstance(body, SeqExpr) or any(
        isinstance(b.value, Call) and isinstance(b.value.op, Op)
        and b.value.op.name != "relax.call_tir"
        for blk in body.blocks for b in blk.bindings)


def fuse_tir(mod: IRModule) -> tuple[IRModule, int]:
    """The pass body: the module with each Primitive function fused into a PrimFunc."""
    primitive = {gv: f for gv, f in mod.functions.items()
                 if isinstance(f, Function) and _nonzero_attr(f, "Primitive")
                 and not _left_to_codegen(f)}
    if not primitive:
        return mod, 0
    mod = mod.shallow_copy()
    replacements = {}
    for gv, func in primitive.items():
        prim, constants = _fuse(mod, func, gv.name_hint)
        new_gv = GlobalVar(gv.name_hint)
        replacements[gv] = (new_gv, func, constants)
        mod.remove(gv)
        mod[new_gv] = prim
    rewriter = _CallRewriter(mod, replacements)
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function):
            new = rewriter.visit_expr(func)
            if new is not func:
                mod[gv] = new
    mod, _ = dead_code_elimination(mod)
    return mod, len(primitive)


@register("FuseTIR")
def FuseTIR():  # noqa: N802 - TVM's name
    """Module pass (opt 0): fuse the PrimFuncs of each ``Primitive`` Relax function into one
    PrimFunc called by ``call_tir``, then remove what is no longer used."""

    def run(mod, ctx):
        if not has_relax_function(mod):
            return mod
        mod, fused = fuse_tir(mod)
        record_stat("fused PrimFuncs", fused)
        return mod

    return module_pass(run, opt_level=0, name="FuseTIR")
