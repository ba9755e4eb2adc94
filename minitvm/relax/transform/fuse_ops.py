"""FuseOps (TVM's ``relax.transform.FuseOps(fuse_opt_level=-1)``): group the ``R.call_tir``
bindings of each dataflow block into ``Primitive`` Relax functions.

1. For each dataflow block of every non-primitive Relax function, a forward graph is built:
   one node per binding (a ``call_tir``'s pattern is the callee PrimFunc's ``op_pattern``
   attribute, a tuple-get-item is injective, or elementwise for the main field of an
   elementwise call's tuple, batch_norm's: ``_item_pattern``, anything else is opaque) and one opaque node per
   outside value it uses. A block output is an external reference (a root: TVM's rule, Relay's
   for one-result fused functions); with ``fuse_read_outputs`` (minitvm's build pipeline) one
   the block reads fuses into its consumers like any value, the group returning it too (an
   LSTM step's cell state, an output read by the hidden state, split the step's gates into two
   kernels and left the take of the step's input row a third). An edge into
   an elementwise or broadcast call from a value of another shape than its result is a
   broadcast edge (as in Relay's FuseOps; TVM's Relax labels it with the call's pattern), so an
   anchor (conv, matmul) never takes an epilogue that expands its result: an SE block's gate,
   ``x * sigmoid(conv(s) + b)``, fused into the (n, C, 1, 1) conv recomputed the sigmoid at
   each of x's pixels (EfficientNet-B0: 3x the time of the conv and a separate multiply).
2. The shared partitioner (:mod:`minitvm.transform.graph_partitioner`, Relay's too) groups the
   nodes by TVM's post-dominator rules.
3. Each group of two or more bindings becomes a private function with attrs ``{"Primitive": 1}``
   named ``fused_`` + the callees' names, whose parameters are the group's outside inputs (named
   as those variables) and whose result is what the rest of the block uses; the block calls it
   at the group's last binding (bindings are reordered by group dependencies where needed,
   counting a use of a symbolic variable as a use of the match_cast defining it).
Before step 1 each dataflow alias ``y = x`` goes, ``y``'s uses reading ``x`` (otherwise an
opaque node no group crosses: ``inline_dataflow_aliases``; Relay has no such variable), and
with ``fuse_read_outputs`` so does an output alias ``gv = x`` of an ``x`` the block reads,
``x``'s binding defining ``gv``.
Structurally equal groups share one function. An ``R.stop_fusion`` binding (minitvm's fusion
barrier) is an opaque node, so no group crosses it, and is dropped once the groups are built
(its uses read its input). Everything is iterative.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.module import IRModule
from ...ir.op import Op
from ...ir.structural import structural_equal, structural_hash
from ...tir import expr as TE
from ...tir.function import PrimFunc
from ...transform.config import register_pass_config
from ...transform.decorators import module_pass
from ...transform.graph_partitioner import (
    BROADCAST,
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    GraphNode,
    Group,
    partition_graph,
)
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..analysis.var_analysis import free_vars
from ..block_builder import NameSupply
from ..expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ..struct_info import ShapeStructInfo, TupleStructInfo
from .inline_dataflow_aliases import inline_dataflow_aliases
from .remove_stop_fusion import remove_stop_fusion
from .symbolic import bind
from .utils import (
    expr_prim_fields,
    free_symbolic_vars,
    has_relax_function,
    is_flat_value,
    sinfo_prim_fields,
    tir_vars_in,
    used_symbolic_vars,
)

__all__ = ["FuseOps", "fuse_ops", "DEFAULT_MAX_DEPTH"]

DEFAULT_MAX_DEPTH = 256
register_pass_config("relax.FuseOps.max_depth", int, DEFAULT_MAX_DEPTH,
                     "maximum number of bindings fused into one Relax group")
_LEAF_VALUES = (Var, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm)


def _nonzero_attr(func, key: str) -> bool:
    attrs = getattr(func, "attrs", None)
    if not attrs:
        return False
    v = attrs.get(key)
    return v is not None and bool(getattr(v, "value", v))


_CALL_TIR: list = []


def _call_tir_op():
    if not _CALL_TIR:
        _CALL_TIR.append(Op.get("relax.call_tir"))
    return _CALL_TIR[0]


def op_pattern_of(mod: IRModule, call: Call) -> int:
    """The op pattern of a ``call_tir``'s callee (its ``op_pattern`` attr; opaque if absent)."""
    gv = call.args[0]
    func = mod.functions.get(gv) if isinstance(gv, GlobalVar) else None
    if not isinstance(func, PrimFunc) or not func.attrs:
        return OPAQUE
    v = func.attrs.get("op_pattern")
    return OPAQUE if v is None else int(getattr(v, "value", v))


def _leaves(expr) -> list:
    """Leaf values (variables, constants, shapes...) an expression uses, first-use order."""
    # nearly every binding is an operator call (or a call_tir's tuple) on leaves: no walk
    if isinstance(expr, Call) and not isinstance(expr.op, Expr):
        kids = expr.args
    elif isinstance(expr, Tuple):
        kids = expr.fields
    else:
        kids = None
    if kids is not None and all(isinstance(k, _LEAF_VALUES) for k in kids):
        if len(kids) < 2:
            return list(kids)
        out = []
        for k in kids:
            if not any(k is o for o in out):
                out.append(k)
        return out
    if kids is not None:
        flat = _flat_leaves(kids)
        if flat is not None:
            return flat
    out, seen, stack = [], set(), [expr]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, _LEAF_VALUES):
            out.append(e)
        elif isinstance(e, Tuple):
            stack.extend(reversed(e.fields))
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, Call):
            stack.extend(reversed(e.args))
            if isinstance(e.op, Expr):
                stack.append(e.op)
        elif isinstance(e, Function | If | SeqExpr):  # a closure or branch: what it captures
            stack.extend(reversed(free_vars(e)))
    return out


def _flat_leaves(kids):
    """The leaves of operands that are leaves, callees without leaves (globals, extern
    functions) or tuples of those (a ``call_tir``'s operands), first-use order as the walk of
    ``_leaves`` gives them; None for any other operand."""
    out: list = []
    seen: set = set()
    for k in kids:
        fields = k.fields if isinstance(k, Tuple) else (k,)
        for f in fields:
            if isinstance(f, _LEAF_VALUES):
                if id(f) not in seen:
                    seen.add(id(f))
                    out.append(f)
            elif not isinstance(f, GlobalVar | ExternFunc):
                return None
    return out


def _binding_prims(binding) -> list:
    """The PrimExprs a binding mentions: its variable's struct info, a match_cast's pattern,
    and those of its value (``expr_prim_fields``)."""
    prims = list(sinfo_prim_fields(getattr(binding.var, "_struct_info", None)))
    if isinstance(binding, MatchCast):
        prims.extend(sinfo_prim_fields(binding.struct_info))
    prims.extend(expr_prim_fields(binding.value))
    return prims


def symbolic_definers(bindings, known=None) -> dict:
    """Binding variable -> the variables of the block's match_casts that define symbolic
    variables the binding uses (in its value or struct info).

    These dependencies go through no Relax variable, so neither the fusion graph nor the
    group order would see them: a ``call_tir(..., tir_vars=[n])`` could be emitted before the
    ``match_cast`` that defines ``n`` (TVM has the same bug: apache/tvm#20195). A match_cast
    defines the whole-dimension variables of its pattern not already defined: not in
    ``known`` (ids of the variables defined before the block) and not mentioned by an earlier
    binding of the block. With ``known`` None only the block is looked at, which may take a
    use for a definition; the dependencies that adds follow the block's order, so they are
    harmless where an over-approximation will do (the fusion graph's edges).
    """
    if not any(isinstance(b, MatchCast) for b in bindings):
        return {}  # only a match_cast defines symbolic variables
    known = set(known or ())
    definer: dict = {}  # id(tir var) -> the defining match_cast's variable
    out: dict = {}
    for b in bindings:
        tvars = tir_vars_in(_binding_prims(b))
        srcs = []
        for v in tvars:
            d = definer.get(id(v))
            if d is not None and d is not b.var and d not in srcs:
                srcs.append(d)
        if srcs:
            out[b.var] = srcs
        if isinstance(b, MatchCast):
            for e in sinfo_prim_fields(b.struct_info):
                if isinstance(e, TE.Var) and id(e) not in known:
                    definer[id(e)] = b.var
        known.update(id(v) for v in tvars)
    return out


# ------------------------------------------------------------------------------- the graph
class _BlockGraph:
    """The indexed forward graph of one dataflow block (nodes in post-DFS order)."""

    def __init__(self, mod: IRModule, block: DataflowBlock, read_outputs: bool = False):
        self.mod = mod
        self.order: list[GraphNode] = []
        self.nodes: dict = {}  # IR object -> node
        self.sym_deps = symbolic_definers(block.bindings)
        self.block_outputs: set = set()
        self.maybe_root: list[GraphNode] = []
        for binding in block.bindings:
            self._binding(binding)
        for node in self.maybe_root:  # (TVM's rule: every block output is a root)
            node.extern_ref = not (read_outputs and node.outputs)

    def _add(self, ref, pattern, extern=False) -> GraphNode:
        node = GraphNode(ref)
        node.pattern = pattern
        node.extern_ref = extern
        node.index = len(self.order)
        self.order.append(node)
        self.nodes[ref] = node
        return node

    def _leaf(self, e) -> GraphNode:
        node = self.nodes.get(e)
        if node is None:  # defined outside the block (a parameter, an earlier block) or a constant
            node = self._add(e, OPAQUE, extern=True)
        return node

    def _edges(self, values, node_pattern, consumer_ref):
        srcs = [self._leaf(v) for v in values]
        node = self._add(consumer_ref, node_pattern)
        out_shape = _static_shape(consumer_ref) if node_pattern <= BROADCAST else None
        for v, s in zip(values, srcs, strict=True):
            edge = node_pattern
            if out_shape is not None:
                shape = _static_shape(v)
                if shape is not None and not _same_shape(shape, out_shape):
                    edge = BROADCAST  # (a value the consumer expands)
            s.outputs.append((node, edge))
        return node

    def _binding(self, binding) -> None:
        value = binding.value
        var = binding.var
        if isinstance(binding, MatchCast):
            node = self._edges(_leaves(value), OPAQUE, var)
        elif isinstance(value, Call) and value.op is _call_tir_op():
            pattern = op_pattern_of(self.mod, value)
            node = self._edges(_leaves(value.args[1]), pattern, var)
        elif isinstance(value, TupleGetItem) and isinstance(value.tuple_value, Var):
            node = self._edges([value.tuple_value],
                               _item_pattern(self.nodes, value, var, self.block_outputs), var)
        else:
            node = self._edges(_leaves(value), OPAQUE, var)
        for d in self.sym_deps.get(var, ()):
            # the binding uses a symbolic variable the match_cast ``d`` defines: an opaque
            # edge, so no group spans both sides of the match_cast
            self.nodes[d].outputs.append((node, OPAQUE))
        if not isinstance(var, DataflowVar):
            # a block output is used after the block: a root of the post-dominator tree when
            # nothing in the block uses it; when something does, it fuses into its consumers
            # like any value (the group's function returns it as one more output)
            self.block_outputs.add(var)
            self.maybe_root.append(node)


def _item_pattern(nodes: dict, item: TupleGetItem, var, block_outputs: set) -> int:
    """The pattern of tuple-get-item ``item`` (bound to ``var``): elementwise when its tuple is
    an elementwise or broadcast call of the block used only there (batch_norm's result) and the
    field has the shape of the tuple's first (the call's own result, not batch_norm's passed-
    through statistics), so an anchor's epilogue runs on through it into a residual add; else
    injective."""
    src = nodes.get(item.tuple_value)
    if src is None or item.tuple_value in block_outputs or src.pattern > BROADCAST:
        return INJECTIVE
    fields = getattr(getattr(item.tuple_value, "_struct_info", None), "fields", None)
    first = getattr(fields[0], "shape", None) if fields else None
    shape = _static_shape(var)
    if not isinstance(first, ShapeExpr) or shape is None or \
            not _same_shape(first.values, shape):
        return INJECTIVE
    return ELEMWISE


def _static_shape(e):
    """The dims of a tensor-valued expression's shape (PrimExprs), or None when unknown."""
    sinfo = getattr(e, "_struct_info", None)
    shape = getattr(sinfo, "shape", None)
    return shape.values if isinstance(shape, ShapeExpr) else None


def _same_shape(a, b) -> bool:
    """Equal dims: the same integers, or the same symbolic expressions."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x is y:
            continue
        if isinstance(x, TE.IntImm) and isinstance(y, TE.IntImm):
            if x.value != y.value:
                return False
        elif not structural_equal(x, y, map_free_vars=False):
            return False
    return True


# ------------------------------------------------------------------------------- grouping
class _GroupInfo:
    """The bindings of one fused group and what its function takes and returns."""

    __slots__ = ("bindings", "defined", "args", "outputs", "deps", "lift_constants")

    def __init__(self, lift_constants: bool = True):
        self.lift_constants = lift_constants
        self.bindings: list = []
        self.defined: set = set()
        self.args: list = []  # outside values, in first-use order
        self.outputs: list = []  # group variables used outside it, in definition order
        self.deps: list = []  # groups this one uses values of

    def add(self, binding) -> None:
        value = binding.value
        used = value.args[1] if isinstance(value, Call) and value.op is _call_tir_op() else value
        for leaf in _leaves(used):
            if leaf in self.defined or any(leaf is a for a in self.args):
                continue
            if isinstance(leaf, PrimValue | StringImm | DataTypeImm):
                continue  # kept inline in the function, as TVM does
            if isinstance(leaf, Constant) and not self.lift_constants:
                continue
            self.args.append(leaf)
        self.bindings.append(binding)
        self.defined.add(binding.var)
        if not isinstance(binding.var, DataflowVar):
            self.add_output(binding.var)

    def add_output(self, var) -> None:
        if var not in self.outputs:
            self.outputs.append(var)


def _fused_name(bindings) -> str:
    parts = ["fused"]
    for b in bindings:
        v = b.value
        if isinstance(v, Call):
            if v.op is _call_tir_op():
                parts.append(v.args[0].name_hint)
            elif isinstance(v.op, Op):
                parts.append(v.op.name.replace(".", "_"))
            elif isinstance(v.op, GlobalVar):
                name = v.op.name_hint
                parts.append(name[len("fused_"):] if name.startswith("fused_") else name)
    return "_".join(parts)


class _Substituter(ExprMutator):
    """Replace variables (and lifted constants) by the values of a map (a plain, normalizing
    rebuild)."""

    def __init__(self, vmap: dict):
        super().__init__()
        self.var_remap_ = vmap

    def visit_constant_(self, op):
        # a constant lifted to a parameter: the function must read the parameter, since a
        # deduplicated function is called with other groups' constants
        return self.var_remap_.get(op, op)


def _make_function(info: _GroupInfo, attrs: dict) -> tuple[Function, list]:
    """The grouped function of ``info`` and the arguments to call it with."""
    vmap: dict = {}
    params, call_args = [], []
    n_const = 0
    for a in info.args:
        if isinstance(a, Var):
            name = a.name_hint
        else:
            name = f"param_{n_const}"
            n_const += 1
        p = Var(name, a.struct_info)
        vmap[a] = p
        params.append(p)
        call_args.append(a)
    names = NameSupply()
    sub = _Substituter(vmap)
    bindings, results = [], {}
    for b in info.bindings:
        value = sub.visit_expr(b.value)
        if b.var in info.outputs:
            var = Var(names.fresh("gv"), b.var.struct_info)
            results[b.var] = var
        else:
            var = b.var
        vmap[b.var] = var
        bindings.append(VarBinding(var, value))
    outs = [results[v] for v in info.outputs]
    body = outs[0] if len(outs) == 1 else Tuple(outs)
    if isinstance(body, Tuple):
        body._struct_info = TupleStructInfo([o.struct_info for o in outs])
    attrs = {**attrs, "Primitive": 1}
    func = Function(params, SeqExpr([DataflowBlock(bindings)], body), None, True, attrs)
    free = free_symbolic_vars(func)
    if free:  # symbolic variables the parameters do not define are passed as a shape
        p = Var("tir_vars", ShapeStructInfo(free))
        params.append(p)
        call_args.append(ShapeExpr(free))
        func = Function(params, func.body, None, True, attrs)
    # the function gets its own symbolic variables (TVM's SymbolicVarRenewMutator)
    fresh = {v: TE.Var(v.name, v.dtype) for v in used_symbolic_vars(func)}
    if fresh:
        func = bind(func, None, fresh)
    return func, call_args


class _NoKey(Exception):
    """A binding the cheap group key does not describe (the function is then compared
    structurally)."""


def _group_key(info: _GroupInfo, attrs: dict):
    """A cheap description of a group that determines its function up to what is compared
    structurally: the callee and operand wiring of every binding, plus a list of struct infos,
    call attrs and literals to compare (free variables mapped). None when a binding is not a
    call or tuple-get-item on leaves."""
    index = {a: ("p", k) for k, a in enumerate(info.args)}
    wiring, compared = [], [a.struct_info for a in info.args]

    def ref(a):
        r = index.get(a)
        if r is not None:
            return r
        if isinstance(a, GlobalVar):
            return ("global", a)
        if isinstance(a, Tuple):
            return ("tuple", tuple(ref(f) for f in a.fields))
        if isinstance(a, PrimValue | StringImm | DataTypeImm | Constant | ShapeExpr):
            compared.append(a)
            return ("lit", len(compared) - 1)
        raise _NoKey

    try:
        for k, b in enumerate(info.bindings):
            v = b.value
            if isinstance(v, Call) and isinstance(v.op, Op | GlobalVar):
                wiring.append(("call", v.op, tuple(ref(a) for a in v.args)))
                compared.extend(v.sinfo_args)
                if v.attrs is not None:
                    compared.append(v.attrs)
            elif isinstance(v, TupleGetItem):
                wiring.append(("item", v.index, ref(v.tuple_value)))
            else:
                return None
            index[b.var] = ("b", k)
            compared.append(b.var.struct_info)
    except _NoKey:
        return None
    outs = tuple(index[o] for o in info.outputs)
    attr_key = tuple(sorted((k, str(v)) for k, v in attrs.items()))
    return (tuple(wiring), outs, attr_key), compared


class _FunctionTable:
    """Adds grouped functions to the module, reusing the function of an equal group (TVM's
    BlockBuilder deduplicates structurally equal functions)."""

    def __init__(self, mod: IRModule):
        self.mod = mod
        self.names = NameSupply()
        for gv in mod.functions:
            self.names.reserve(gv.name_hint)
        self.by_key: dict = {}
        self.by_hash: dict = {}
        self.added = 0

    def add(self, info: _GroupInfo, attrs: dict) -> tuple[GlobalVar, list]:
        """The GlobalVar of the group's function and the arguments to call it with."""
        key = _group_key(info, attrs)
        if key is not None:
            for gv, sinfos, extra in self.by_key.get(key[0], ()):
                if structural_equal(sinfos, key[1], map_free_vars=True):
                    return gv, list(info.args) + extra(info)
        func, args = _make_function(info, attrs)
        h = structural_hash(func)
        gv = next((g for g, f in self.by_hash.get(h, ()) if structural_equal(f, func)), None)
        if gv is None:
            gv = GlobalVar(self.names.fresh(_fused_name(info.bindings)))
            gv._checked_type = func.struct_info
            self.mod[gv] = func
            self.by_hash.setdefault(h, []).append((gv, func))
            self.added += 1
        if key is not None:
            self.by_key.setdefault(key[0], []).append((gv, key[1], _extra_args(func, info)))
        return gv, args


def _extra_args(func: Function, info: _GroupInfo):
    """How to get the arguments after the group's inputs (the free symbolic variables passed
    as a shape) for another group equal to ``info``."""
    if len(func.params) == len(info.args):
        return lambda other: []
    return lambda other: _make_function(other, {})[1][len(other.args):]


class _Fusor(ExprMutator):
    """Rewrites each dataflow block of a function by its fusion groups."""

    def __init__(self, mod: IRModule, table: _FunctionTable, partition,
                 lift_constants: bool = True):
        super().__init__(mod)
        self.mod = mod
        self.table = table
        self.partition = partition  # (mod, block) -> {var: Group}
        self.lift_constants = lift_constants
        self.known_syms: set = set()  # ids of the symbolic variables defined so far...
        # ...and the blocks visited since, whose symbolic variables are added when a block
        # with a match_cast asks (the only reader: a walk of every binding's PrimExprs per
        # block was most of FuseOps on programs with none)
        self.pending: list = []

    def _known_syms(self) -> set:
        """The ids of the symbolic variables defined before the block being rewritten."""
        for block in self.pending:
            for b in block.bindings:
                self.known_syms.update(id(v) for v in tir_vars_in(_binding_prims(b)))
        self.pending = []
        return self.known_syms

    def visit_function_(self, op: Function):
        saved = self._known_syms()
        self.known_syms = set(saved)
        for p in op.params:
            self.known_syms.update(id(v) for v in tir_vars_in(sinfo_prim_fields(p.struct_info)))
        try:
            return super().visit_function_(op)
        finally:
            self.known_syms = saved
            self.pending = []

    def visit_binding_block(self, block):
        new = super().visit_binding_block(block)
        self.pending.append(block)  # what it defines is defined for the blocks after it
        return new

    def visit_dataflow_block_(self, block: DataflowBlock):
        var2group = self.partition(self.mod, block)
        infos: dict = {}
        for b in block.bindings:
            g = var2group[b.var]
            if g.num_nodes > 1 or g.attrs:
                if g not in infos:
                    infos[g] = _GroupInfo(self.lift_constants)
                infos[g].add(b)
        if not infos:
            if not self.var_remap_ and all(is_flat_value(b.value) for b in block.bindings):
                return block  # nothing fuses, and nothing in it could be rewritten
            return super().visit_dataflow_block_(block)
        bound = {b.var for b in block.bindings}
        sym_deps = symbolic_definers(block.bindings, self._known_syms()) if any(
            isinstance(b, MatchCast) for b in block.bindings) else {}
        deps: dict = {}
        leaves: dict = {}  # binding -> the leaves of its value
        for b in block.bindings:
            g = var2group[b.var]
            leaves[b] = used = _leaves(b.value)
            for leaf in used:
                pg = var2group.get(leaf) if leaf in bound else None
                if pg is None or pg is g:
                    continue
                if pg not in deps.setdefault(g, []):
                    deps[g].append(pg)
                if pg in infos:
                    infos[pg].add_output(leaf)
            for d in sym_deps.get(b.var, ()):  # a symbolic variable's definition comes first
                pg = var2group[d]
                if pg is not g and pg not in deps.setdefault(g, []):
                    deps[g].append(pg)
        self.builder_.begin_dataflow_block()
        remap = self.var_remap_
        for b in _topo_sort(block.bindings, var2group, deps):
            g = var2group[b.var]
            info = infos.get(g)
            if info is None:
                if type(b) is VarBinding and b.value._checked_type is not None and \
                        is_flat_value(b.value) and not any(v in remap for v in leaves[b]):
                    # nothing in it is rewritten: the mutator would give it back as it is
                    self.builder_.emit_normalized(b)
                else:
                    self.visit_binding(b)
            elif b is info.bindings[-1] and info.outputs:
                self._emit_group(info, g)
        bindings = self.builder_._end_block()
        return DataflowBlock(bindings, block.span)

    def _emit_group(self, info: _GroupInfo, group: Group) -> None:
        gv, args = self.table.add(info, group.attrs)
        call = Call(gv, [self.visit_expr(a) for a in args])
        # the function returns the group's outputs: the call has their struct info (in the
        # caller's terms already, so nothing needs deriving)
        sinfos = [o.struct_info for o in info.outputs]
        call._struct_info = sinfos[0] if len(sinfos) == 1 else TupleStructInfo(sinfos)
        if len(info.outputs) == 1:
            out = info.outputs[0]
            if isinstance(out, DataflowVar):
                self.set_var_remap(out, self.builder_.emit(call))
            else:
                self.builder_.emit_normalized(VarBinding(out, self.builder_.normalize(call)))
            return
        tup = self.builder_.emit(call)
        for k, out in enumerate(info.outputs):
            item = TupleGetItem(tup, k)
            if isinstance(out, DataflowVar):
                self.set_var_remap(out, self.builder_.emit(item))
            else:
                self.builder_.emit_normalized(VarBinding(out, self.builder_.normalize(item)))


def _topo_sort(bindings, var2group, deps) -> list:
    """Bindings reordered so that every group comes after the groups it uses, keeping the
    original order where possible (an iterative depth-first walk over groups)."""
    per_group: dict = {}
    order: list = []
    for b in bindings:
        g = var2group[b.var]
        if g not in per_group:
            per_group[g] = []
            order.append(g)
        per_group[g].append(b)
    out, state = [], {}  # group -> 1 visiting, 2 done
    for start in order:
        if start in state:
            continue
        stack = [(start, 0)]
        state[start] = 1
        while stack:
            g, i = stack.pop()
            ds = deps.get(g, ())
            while i < len(ds) and state.get(ds[i]) is not None:
                if state[ds[i]] == 1 and ds[i] is not g:
                    raise ValueError("FuseOps: a cyclic dependency between fused groups")
                i += 1
            if i < len(ds):
                stack.append((g, i + 1))
                state[ds[i]] = 1
                stack.append((ds[i], 0))
                continue
            state[g] = 2
            out.extend(per_group.get(g, ()))
    return out


def _partition_block(fuse_opt_level: int, max_depth: int, read_outputs: bool = False):
    def run(mod, block) -> dict:
        graph = _BlockGraph(mod, block, read_outputs)
        groups = partition_graph(graph.order, fuse_opt_level, max_depth)
        return {n.ref: groups[n.index].find_root() for n in graph.order}

    return run


def make_grouped_functions(mod: IRModule, partition,
                           lift_constants: bool = True) -> tuple[IRModule, int]:
    """Rewrite every dataflow block of the module's non-primitive Relax functions by the
    groups ``partition(mod, block)`` gives (var -> Group; groups of two or more bindings, or
    with attrs, become functions). Returns the module and how many functions were added."""
    mod = mod.shallow_copy()
    table = _FunctionTable(mod)
    fusor = _Fusor(mod, table, partition, lift_constants)
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function) and not _nonzero_attr(func, "Primitive") \
                and not _nonzero_attr(func, "Codegen"):
            new = fusor.visit_expr(func)
            if new is not func:
                mod[gv] = new
    return mod, table.added


def fuse_ops(mod: IRModule, fuse_opt_level: int = 2, max_depth: int = DEFAULT_MAX_DEPTH,
             read_outputs: bool = False) -> tuple[IRModule, int]:
    """The pass body: the fused module and how many grouped functions were added."""
    if fuse_opt_level != 0:
        mod = _without_dataflow_aliases(mod, read_outputs)
    return make_grouped_functions(mod, _partition_block(fuse_opt_level, max_depth,
                                                        read_outputs))


def _without_dataflow_aliases(mod: IRModule, read_outputs: bool = False) -> IRModule:
    """The dataflow aliases ``y = x`` of the non-primitive functions inlined (an alias is no
    call the graph can fuse: left in, it would be a barrier; ``inline_dataflow_aliases``)."""
    out = None
    for gv, func in mod.functions.items():
        if isinstance(func, Function) and not _nonzero_attr(func, "Primitive") \
                and not _nonzero_attr(func, "Codegen"):
            new, removed = inline_dataflow_aliases(func, mod, read_outputs)
            if removed:
                out = out or mod.shallow_copy()
                out[gv] = new
    return mod if out is None else out


def _without_stop_fusion(mod: IRModule) -> IRModule:
    """The ``R.stop_fusion`` barriers (opaque bindings the grouping did not cross) dropped."""
    out = None
    for gv, func in mod.functions.items():
        if isinstance(func, Function):
            new, removed = remove_stop_fusion(func, mod)
            if removed:
                out = out or mod.shallow_copy()
                out[gv] = new
    return mod if out is None else out


@register_pass("relax.transform.FuseOps")  # Relay holds the bare name
def FuseOps(fuse_opt_level: int = -1, fuse_read_outputs: bool = False):  # noqa: N802
    """Module pass (opt 0): fuse ``call_tir`` bindings into ``Primitive`` functions (TVM's
    name and grouping).

    Parameters
    ----------
    fuse_opt_level : int
        0 fuses nothing; -1 (the default) uses the PassContext's opt_level. The config
        ``relax.FuseOps.max_depth`` caps a group's size (default 256).
    fuse_read_outputs : bool
        minitvm's: a block output the block also reads fuses into its consumers, the group
        returning it too (an LSTM step: one kernel for the take and both states' gates, not
        three). False (TVM's rule): every block output ends its group. ``relax.build``'s
        pipeline sets it.
    """

    def run(mod, ctx):
        if not has_relax_function(mod):
            return mod
        level = ctx.opt_level if fuse_opt_level == -1 else fuse_opt_level
        max_depth = int(ctx.config.get("relax.FuseOps.max_depth", DEFAULT_MAX_DEPTH))
        mod, added = fuse_ops(mod, level, max_depth, fuse_read_outputs)
        record_stat("fused functions", added)
        return _without_stop_fusion(mod)

    return module_pass(run, opt_level=0, name="FuseOps")
