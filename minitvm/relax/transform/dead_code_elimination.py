"""DeadCodeElimination (TVM's ``relax.transform.DeadCodeElimination(entry_functions)``):

1. functions not reachable from the entry functions (``entry_functions`` plus every function
   with a ``global_symbol``, and ExternFuncs) are removed — unless some reachable function
   refers to a global the module does not define, in which case nothing is removed;
2. in every Relax function, bindings whose variable is unused are removed (iterated to a
   fixed point: a binding used only by removed bindings is unused too), except bindings whose
   value contains an impure call and ``match_cast``s; variables used in a function's result,
   in ``If`` conditions outside bindings or inside nested functions count as used;
3. in every dataflow block, ``lv = value; gv = lv`` with ``lv`` used nowhere else becomes
   ``gv = value`` (the binding of the intermediate dataflow variable is elided, as TVM's DCE
   leaves FuseTIR's output: ``gv = R.call_tir(cls.fused_..., ...)``);
4. unreachable functions are removed again (step 2 may drop the last call of one).

Empty blocks left behind are dropped by normalization.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..analysis.leaf_reads import leaf_reads
from ..expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    ExternFunc,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .normalize import NormalizingMutator
from .utils import contains_impure_call, has_relax_function, is_impure_call, register

__all__ = ["DeadCodeElimination", "remove_all_unused", "remove_unused_functions",
           "collect_call_map", "elide_intermediate_dataflow_vars"]


# ------------------------------------------------------------------------ unused functions
def _globals_in(func) -> list:
    """The GlobalVars a function refers to (iterative walk over Relax or TIR)."""
    return _walk_globals([func])


_NO_GLOBALS = (Var, Constant, ExternFunc)  # leaves that hold no global (made once)


def _walk_globals(roots: list) -> list:
    """The GlobalVars the nodes ``roots`` refer to (one walk, each node visited once)."""
    from ...ir.node import Node, node_children, node_operands

    out, seen = [], set()
    stack = list(reversed(roots))
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, GlobalVar):
            out.append(e)
            continue
        if isinstance(e, Var | ExternFunc) or not isinstance(e, Node):
            continue
        operands = node_operands(e)
        if operands:  # Relax nodes declare theirs (variables and constants hold no global)
            stack.extend(o for o in operands if not isinstance(o, Var | Constant))
        elif hasattr(e, "__slots__") and not isinstance(e, str):
            try:
                stack.extend(c for c in node_children(e) if hasattr(c, "__slots__"))
            except Exception:  # pragma: no cover - a foreign node without declared fields
                pass
    return out


def _referenced_globals(func) -> list:
    """The GlobalVars ``func`` refers to, as a set would hold them (``_globals_in``'s in
    another order, maybe repeated): a Relax function's flat bindings (a callee or operand
    that is a global, leaves, tuples of those) are read in one loop, and only what else they
    hold (operators, shapes, nested calls, results) is walked, each node once. A
    100,000-binding ``main`` was walked node by node through its operands."""
    if not isinstance(func, Function) or not isinstance(func.body, SeqExpr):
        return _globals_in(func)
    out: list = []
    rest: dict = {}  # id -> node left to the walk
    for block in func.body.blocks:
        for b in block.bindings:
            v = b.value
            if type(v) is Call:
                kids = (v.op, *v.args)
            elif type(v) is Tuple:
                kids = v.fields
            else:
                kids = (v,)
            for k in kids:
                for f in (k.fields if type(k) is Tuple else (k,)):
                    if isinstance(f, GlobalVar):
                        out.append(f)
                    elif not isinstance(f, _NO_GLOBALS):
                        rest.setdefault(id(f), f)
    rest.setdefault(id(func.body.body), func.body.body)
    return out + _walk_globals(list(rest.values()))


def collect_call_map(mod) -> dict:
    """GlobalVar -> the GlobalVars its function refers to (TVM's ir::CollectCallMap)."""
    return {gv: _globals_in(f) for gv, f in mod.functions.items()}


def _is_external(func) -> bool:
    attrs = getattr(func, "attrs", None)
    return bool(attrs) and attrs.get("global_symbol") is not None


def remove_unused_functions(mod, entries, known: dict | None = None) -> tuple:
    """``mod`` without the functions unreachable from ``entries`` (and how many went).
    ``known`` (gv -> (function, its globals)) carries the walks of an earlier call over to
    the functions that are still the same objects."""
    if set(mod.functions) <= set(entries):
        return mod, 0  # every function is an entry: nothing to walk (one 100k-binding main)
    call_map = {}
    for gv, f in mod.functions.items():
        hit = known.get(gv) if known is not None else None
        call_map[gv] = hit[1] if hit is not None and hit[0] is f else _referenced_globals(f)
        if known is not None:
            known[gv] = (f, call_map[gv])
    reachable = set(entries)
    todo = list(entries)
    all_in_module = True
    while todo:
        gv = todo.pop()
        callees = call_map.get(gv)
        if callees is None:
            all_in_module = False
            continue
        for c in callees:
            if c not in reachable:
                reachable.add(c)
                todo.append(c)
    if not all_in_module:
        return mod, 0
    dead = [gv for gv in mod.functions if gv not in reachable]
    if not dead:
        return mod, 0
    mod = mod.shallow_copy()
    for gv in dead:
        mod.remove(gv)
    return mod, len(dead)


# ------------------------------------------------------------------------ unused bindings
class _UseDef:
    """TVM's UDChain: for every variable, the variables whose bound values use it; variables
    used outside any binding (results, nested functions, match_cast values) are outputs."""

    def __init__(self):
        self.bound: dict = {}
        self.uses: dict = {}  # user var -> vars its value uses
        self.outputs: set = set()
        self.flat: dict = {}  # var -> its bound call of leaves (the only call in its value)

    def run(self, func: Function) -> None:
        self._scope(func, None)

    def _scope(self, e, user) -> None:
        if isinstance(e, Function):
            self._operands(e.body, None)
        else:
            self._operands(e, user)

    def _operands(self, root, user) -> None:
        stack = [(root, user)]
        while stack:
            e, user = stack.pop()
            if isinstance(e, Var):
                if user is None:
                    self.outputs.add(e)
                else:
                    self.uses.setdefault(user, []).append(e)
            elif isinstance(e, Call):
                stack.append((e.op, user))
                stack.extend((a, user) for a in e.args)
            elif isinstance(e, Tuple):
                stack.extend((f, user) for f in e.fields)
            elif isinstance(e, TupleGetItem):
                stack.append((e.tuple_value, user))
            elif isinstance(e, If):
                stack.extend(((e.cond, user), (e.true_branch, user), (e.false_branch, user)))
            elif isinstance(e, SeqExpr):
                stack.append((e.body, user))
                for block in e.blocks:
                    for b in block.bindings:
                        v = b.value
                        self.bound[b.var] = v
                        inner = b.var if not isinstance(b, MatchCast) else user
                        if type(v) is not Call or not self._flat_call(v, inner):
                            stack.append((v, inner))
                        else:
                            self.flat[b.var] = v
            elif isinstance(e, Function):
                stack.append((e.body, None))

    def _flat_call(self, call: Call, user) -> bool:
        """Record the variables a call of leaves and tuples of leaves reads (a call_tir: most
        bindings) as the walk would, without pushing its operands; False (nothing recorded)
        for any other call."""
        found = leaf_reads(call)
        if found is None:
            return False
        if user is None:
            self.outputs.update(found)
        elif found:
            self.uses.setdefault(user, []).extend(found)
        return True


def _unused_vars(func: Function) -> set:
    ud = _UseDef()
    ud.run(func)
    live = set(ud.outputs)
    flat = ud.flat
    for var, value in ud.bound.items():
        # a call of leaves holds no other call: its own purity is the answer
        if is_impure_call(value) if flat.get(var) is value else contains_impure_call(value):
            live.add(var)
    todo = list(live)
    while todo:
        v = todo.pop()
        for u in ud.uses.get(v, ()):
            if u not in live:
                live.add(u)
                todo.append(u)
    return {v for v in ud.bound if v not in live}


class _RemoveUnused(NormalizingMutator):
    def __init__(self, unused: set, mod=None):
        super().__init__(mod)
        self.unused = unused
        self.removed = 0

    def visit_var_binding_(self, binding) -> None:
        if binding.var in self.unused:
            self.removed += 1
            return
        super().visit_var_binding_(binding)


def remove_all_unused(func: Function, mod=None):
    """TVM's ``relax.analysis.remove_all_unused``: ``func`` without unused pure bindings, and
    how many bindings were removed."""
    unused = _unused_vars(func)
    if not unused:
        return func, 0
    m = _RemoveUnused(unused, mod)
    return m.visit_expr(func), m.removed


# ------------------------------------------------------------------------ output aliases
def _block_elisions(block: DataflowBlock) -> dict:
    """Dataflow var -> its bound value, for each ``lv`` of the block used only by one
    ``gv = lv`` binding of a non-dataflow variable."""
    from .lower_utils import vars_used

    value_of: dict = {}
    aliased: dict = {}  # lv -> number of ``gv = lv`` bindings
    other_use: set = set()
    for b in block.bindings:
        if isinstance(b, VarBinding) and isinstance(b.value, DataflowVar) and \
                not isinstance(b.var, DataflowVar):
            aliased[b.value] = aliased.get(b.value, 0) + 1
        else:
            other_use.update(v for v in vars_used(b.value) if isinstance(v, DataflowVar))
        if isinstance(b, VarBinding) and isinstance(b.var, DataflowVar):
            value_of[b.var] = b.value
    return {v: value_of[v] for v, n in aliased.items()
            if n == 1 and v in value_of and v not in other_use}


def elide_intermediate_dataflow_vars(func: Function) -> tuple[Function, int]:
    """``func`` with ``lv = value; gv = lv`` made ``gv = value`` in its dataflow blocks when
    ``lv`` is used only there; and the number of bindings elided."""
    body = func.body
    if not isinstance(body, SeqExpr):
        return func, 0
    count, blocks = 0, []
    for block in body.blocks:
        elide = _block_elisions(block) if isinstance(block, DataflowBlock) else {}
        if not elide:
            blocks.append(block)
            continue
        new = []
        for b in block.bindings:
            if b.var in elide:
                continue
            if isinstance(b, VarBinding) and not isinstance(b.var, DataflowVar) and \
                    b.value in elide:
                b = VarBinding(b.var, elide[b.value], b.span)
            new.append(b)
        blocks.append(DataflowBlock(new, block.span))
        count += len(elide)
    if not count:
        return func, 0
    new_body = SeqExpr(blocks, body.body, body.span)
    new_body._checked_type = body._checked_type
    return Function(func.params, new_body, func.ret_struct_info, func.is_pure, func.attrs,
                    func.span), count


# ------------------------------------------------------------------------ the pass
def dead_code_elimination(mod, entry_functions=()):
    """The pass body: returns the new module and (functions removed, bindings removed)."""
    entries = [mod.get_global_var(name) for name in entry_functions]
    for gv, func in mod.functions.items():
        if isinstance(func, ExternFunc) or _is_external(func):
            entries.append(gv)
    known: dict = {}
    mod, n_funcs = remove_unused_functions(mod, entries, known)
    n_bindings = 0
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function):
            new, n = remove_all_unused(func, mod)
            new, m = elide_intermediate_dataflow_vars(new)
            n_bindings += n + m
            if new is not func:
                mod.update_func(gv, new)
                hit = known.get(gv)
                if not n and hit is not None and hit[0] is func:
                    # an elision moves a value to another variable and drops nothing: the
                    # function refers to the same globals, which need no second walk
                    known[gv] = (new, hit[1])
    mod, more = remove_unused_functions(mod, entries, known)
    return mod, (n_funcs + more, n_bindings)


@register("DeadCodeElimination")
def DeadCodeElimination(entry_functions=None):  # noqa: N802 - TVM's name
    """Module pass (opt 1): remove unreachable functions and unused pure bindings."""
    entry = list(entry_functions or [])

    def run(mod, ctx):
        if not has_relax_function(mod):
            return mod  # a module of another dialect: nothing of Relax's to clean
        mod, (funcs, bindings) = dead_code_elimination(mod, entry)
        if funcs:
            record_stat("functions removed", funcs)
        if bindings:
            record_stat("bindings removed", bindings)
        return mod

    return module_pass(run, opt_level=1, name="DeadCodeElimination",
                       needs=["relax_normalized"], keeps=["relax_normalized"])
