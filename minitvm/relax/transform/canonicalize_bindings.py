"""CanonicalizeBindings (TVM's ``relax.transform.CanonicalizeBindings``): a Sequential of

1. ``CanonicalizeTIRVariables``: a ``match_cast`` that pins a symbolic variable to a known
   expression (``R.match_cast(x, R.Tensor([n]))`` with ``x: R.Tensor([16])``) makes every later
   use of the variable that expression (``n`` becomes ``16``); two casts implying different
   values are an error;
2. ``CanonicalizeRelaxBindings``:

   - a trivial binding ``y = x`` (or a ``match_cast`` that does not refine the struct info) is
     removed and ``y`` replaced by ``x``; when ``y`` is a dataflow block's output used after the
     block and ``x`` a DataflowVar, ``x``'s binding is made to bind ``y`` instead;
   - ``t[i]`` of a tuple known at compile time is its field; variables bound to constants are
     replaced by the constant;
   - a Var defined in a dataflow block and used only there becomes a DataflowVar;
   - a DataflowVar used only to define an output ``gv = lv`` is removed, ``gv`` bound to
     ``lv``'s value.

Bindings left unused are not removed (DeadCodeElimination does that).
"""

from __future__ import annotations

from ...ir.structural import structural_equal
from ...transform.sequential import Sequential
from ...transform.stats import record_stat
from ..analysis.var_analysis import all_vars, free_vars
from ..expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .function_pass import function_pass
from .normalize import NormalizingMutator, if_struct_info, normalize_function
from .symbolic import SymbolicVarMutator
from .utils import infer_symbolic_var_map, register, simplify_prim

__all__ = ["CanonicalizeBindings", "CanonicalizeTIRVariables", "CanonicalizeRelaxBindings",
           "canonicalize_bindings", "canonicalize_tir_variables", "canonicalize_relax_bindings"]


# ================================================================== symbolic variables
class _SymbolicVarCanonicalizer(SymbolicVarMutator):
    def __init__(self, mod=None):
        super().__init__(mod)
        self.known: dict = {}  # tir var -> (expression, the MatchCast that implied it)
        self.replaced = 0

    def _active(self) -> bool:
        return bool(self.known)

    def lookup_prim(self, var):
        hit = self.known.get(var)
        return None if hit is None else hit[0]

    def visit_match_cast_(self, binding: MatchCast) -> None:
        implied = infer_symbolic_var_map([(binding.var, binding.value)])
        for tv, expr in implied.items():
            old = self.known.get(tv)
            if old is not None:
                a, b = simplify_prim(old[0]), simplify_prim(expr)
                if _provably_different(a, b):
                    raise ValueError(
                        "MatchCast statements must be consistent.  However, the definition of "
                        f"Relax variable {old[1].var.name_hint} implies that TIR variable "
                        f"{tv.name} is {a!r}, while the later definition of Relax variable "
                        f"{binding.var.name_hint} instead implies that TIR variable {tv.name} "
                        f"is {b!r}")
            elif expr is not tv:
                self.known[tv] = (expr, binding)
                self.replaced += 1
        super().visit_match_cast_(binding)

    def visit_function_(self, op: Function):
        cached = dict(self.known)
        try:
            return super().visit_function_(op)
        finally:
            self.known = cached

    def visit_if_(self, op: If):
        cond = self.visit_expr(op.cond)
        cached = dict(self.known)
        t = self.visit_with_new_scope(op.true_branch)
        self.known = dict(cached)
        f = self.visit_with_new_scope(op.false_branch)
        self.known = cached
        if cond is op.cond and t is op.true_branch and f is op.false_branch:
            return op
        # the branches may have had different symbolic variables inlined: keep the If's own
        # (substituted) struct info by casting a branch whose result became more specific
        sinfo = self.sinfo(op._struct_info) if op._struct_info is not None else None
        if sinfo is not None:
            t = _cast_branch(t, sinfo, "then_branch_with_dyn")
            f = _cast_branch(f, sinfo, "else_branch_with_dyn")
        new = If(cond, t, f, op.span)
        new._checked_type = sinfo if sinfo is not None else \
            if_struct_info(t.struct_info, f.struct_info)
        return new


def _cast_branch(branch, sinfo, name):
    if structural_equal(sinfo, branch.struct_info):
        return branch
    from ..expr import BindingBlock

    var = Var(name, sinfo)
    seq = SeqExpr([BindingBlock([MatchCast(var, branch, sinfo)])], var)
    seq._checked_type = sinfo
    return seq


def _provably_different(a, b) -> bool:
    from ...ir.prim_expr import IntImm

    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value != b.value
    return False


def canonicalize_tir_variables(func, mod=None):
    from .utils import iter_bindings

    if not any(isinstance(b, MatchCast) for b in iter_bindings(func)):
        return func, 0  # only a match_cast pins symbolic variables
    m = _SymbolicVarCanonicalizer(mod)
    out = m.visit_expr(func)
    if out is not func:
        out = normalize_function(out, mod)
    return out, m.replaced


# ================================================================== relax bindings
class _Plan:
    __slots__ = ("replace_usage", "replace_binding", "remove", "inline_constant")

    def __init__(self):
        self.replace_usage: dict = {}
        self.replace_binding: dict = {}
        self.remove: set = set()
        self.inline_constant: dict = {}


class _Planner:
    """TVM's CanonicalizePlanner: where each variable is defined and used, which bindings are
    trivial, which variables are bound to constants or known tuples."""

    def __init__(self):
        self.current_block = None
        self.def_blocks: dict = {}
        self.trivial: dict = {}  # var -> the var it is a trivial binding of (ordered)
        self.known: dict = {}  # var -> bound value
        self.constants: dict = {}
        self.defined_inside_dataflow: dict = {}  # ordered set
        self.used_outside: set = set()

    def inside_dataflow(self) -> bool:
        return isinstance(self.current_block, DataflowBlock)

    # scopes -------------------------------------------------------------------------------
    def visit_function(self, f: Function, root: bool = False) -> None:
        cache = self.current_block
        self.current_block = None
        if not root:  # a module-level function has no free variables
            for v in free_vars(f):
                self.used_outside.add(v)
        for p in f.params:
            self.visit_var_def(p)
        self.visit_expr(f.body)
        self.current_block = cache

    def visit_seq(self, s: SeqExpr) -> None:
        cache = self.current_block
        self.current_block = None
        for block in s.blocks:
            self.current_block = block
            for b in block.bindings:
                self.visit_binding(b)
            self.current_block = None
        self.visit_expr(s.body)
        self.current_block = cache

    def visit_binding(self, b) -> None:
        same_sinfo = True
        value = b.value
        if isinstance(b, MatchCast):
            same_sinfo = structural_equal(b.var._struct_info, value._struct_info)
        if isinstance(value, TupleGetItem):
            tup = value.tuple_value
            while isinstance(tup, Var) and tup in self.known:
                tup = self.known[tup]
            if isinstance(tup, Tuple):
                value = tup.fields[value.index]
        if isinstance(value, Var) and same_sinfo:
            self.trivial[b.var] = value
        if isinstance(value, Constant):
            self.constants[b.var] = value
        self.known[b.var] = value
        self.def_blocks[b.var] = self.current_block
        self.visit_expr(b.value)
        self.visit_var_def(b.var)

    def visit_var_def(self, var) -> None:
        if self.inside_dataflow():
            self.defined_inside_dataflow[var] = None

    def use(self, var) -> None:
        if not self.inside_dataflow():
            self.used_outside.add(var)
            return
        home = self.def_blocks.get(var, _MISSING)
        if home is not _MISSING and self.current_block is not None and \
                self.current_block is not home:
            self.used_outside.add(var)

    # expressions (operand trees iteratively; scopes recursively) ---------------------------
    def visit_expr(self, e) -> None:
        stack = [e]
        while stack:
            x = stack.pop()
            if isinstance(x, Var):
                self.use(x)
            elif isinstance(x, Call):
                stack.extend(reversed(x.args))
                stack.append(x.op)
            elif isinstance(x, Tuple):
                stack.extend(reversed(x.fields))
            elif isinstance(x, TupleGetItem):
                stack.append(x.tuple_value)
            elif isinstance(x, SeqExpr):
                self.visit_seq(x)
            elif isinstance(x, If):
                self.visit_expr(x.cond)
                self.visit_expr(x.true_branch)
                self.visit_expr(x.false_branch)
            elif isinstance(x, Function):
                self.visit_function(x)

    def plan(self) -> _Plan:
        plan = _Plan()
        for var in self.defined_inside_dataflow:
            if not isinstance(var, DataflowVar) and var not in self.used_outside:
                new = DataflowVar(var.name_hint, var._struct_info, var.span)
                plan.replace_binding[var] = new
                plan.replace_usage[var] = new
        plan.inline_constant = dict(self.constants)
        for bound_var, bound_to in self.trivial.items():
            while bound_to in self.trivial:
                bound_to = self.trivial[bound_to]
            while bound_to in plan.replace_binding:
                bound_to = plan.replace_binding[bound_to]
            if isinstance(bound_var, DataflowVar) or not isinstance(bound_to, DataflowVar) or \
                    bound_var not in self.used_outside:
                plan.replace_usage[bound_var] = bound_to
                plan.remove.add(bound_var)
            else:
                plan.replace_binding[bound_to] = bound_var
                plan.replace_usage[bound_to] = bound_var
                plan.remove.add(bound_var)
        return plan


_MISSING = object()


class _BindingCanonicalizer(NormalizingMutator):
    def __init__(self, plan: _Plan, mod=None):
        super().__init__(mod)
        self.plan = plan
        self.removed = 0

    def visit_binding(self, binding) -> None:
        if binding.var in self.plan.remove:
            self.removed += 1
            return
        super().visit_binding(binding)

    def visit_var_def(self, var):
        rb = self.plan.replace_binding
        new = var
        while new in rb:
            new = rb[new]
        return super().visit_var_def(new)

    def _use(self, op):
        ru = self.plan.replace_usage
        new = op
        while new in ru:
            new = ru[new]
        const = self.plan.inline_constant.get(new)
        if const is not None:
            return const
        return self.var_remap_.get(new, new)

    visit_var_ = _use
    visit_dataflow_var_ = _use

    def visit_dataflow_block_(self, block: DataflowBlock):
        new_block = super().visit_dataflow_block_(block)
        return _fold_output_bindings(new_block)


def _operand_vars(value) -> list:
    """The variables an operand tree (calls, tuples, accesses, leaves) uses."""
    out = []
    stack = [value]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            out.append(e)
        elif isinstance(e, Call):
            stack.append(e.op)
            stack.extend(e.args)
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, If | SeqExpr | Function):
            out.extend(free_vars(e))
    return out


def _rhs_vars(value) -> list:
    """TVM's FreeVars(value) (AllVars for a function literal)."""
    if isinstance(value, Function):
        return all_vars(value)
    return _operand_vars(value)


def _vars_used(value) -> list:
    """TVM's AllVars(value) (FreeVars for a function literal)."""
    if isinstance(value, Function):
        return free_vars(value)
    if isinstance(value, If | SeqExpr):
        return all_vars(value)
    return _operand_vars(value)


def _fold_output_bindings(block: DataflowBlock) -> DataflowBlock:
    """``lv = expr; gv = lv`` with ``lv`` used nowhere else becomes ``gv = expr``."""
    disqualified: set = set()
    output_vars: set = set()
    candidates: dict = {}
    bindings = block.bindings
    for b in reversed(bindings):
        var, value = b.var, b.value
        if isinstance(var, DataflowVar):
            for rv in _rhs_vars(value):
                if isinstance(rv, DataflowVar):
                    disqualified.add(rv)
            if var not in disqualified and var in output_vars and not isinstance(b, MatchCast):
                candidates[var] = value
        else:
            if isinstance(value, DataflowVar):
                if value in output_vars:
                    disqualified.add(value)
                output_vars.add(value)
            else:
                for rv in _vars_used(value):
                    if isinstance(rv, DataflowVar):
                        disqualified.add(rv)
    if not candidates:
        return block
    out = []
    for b in bindings:
        if isinstance(b.var, DataflowVar) and b.var in candidates:
            continue
        if not isinstance(b.var, DataflowVar) and isinstance(b.value, DataflowVar) and \
                b.value in candidates:
            value = candidates[b.value]
            if isinstance(b, MatchCast):
                out.append(MatchCast(b.var, value, b.struct_info, b.span))
            else:
                out.append(VarBinding(b.var, value, b.span))
            continue
        out.append(b)
    return DataflowBlock(out, block.span)


def canonicalize_relax_bindings(func, mod=None):
    planner = _Planner()
    planner.visit_function(func, root=True)
    plan = planner.plan()
    if not (plan.replace_usage or plan.replace_binding or plan.remove or
            plan.inline_constant) and not _has_output_fold(func):
        return func, 0
    m = _BindingCanonicalizer(plan, mod)
    return m.visit_expr(func), m.removed


def _has_output_fold(func) -> bool:
    """Whether any dataflow block binds an output directly to a DataflowVar."""
    from .utils import iter_bindings

    for b in iter_bindings(func):
        if not isinstance(b.var, DataflowVar) and isinstance(b.value, DataflowVar):
            return True
    return False


def canonicalize_bindings(func, mod=None):
    """Both canonicalizations on one function (TVM's ``relax::CanonicalizeBindings(expr)``)."""
    func, _ = canonicalize_tir_variables(func, mod)
    func, _ = canonicalize_relax_bindings(func, mod)
    return func


# ================================================================== passes
@register("CanonicalizeTIRVariables")
def CanonicalizeTIRVariables():  # noqa: N802 - TVM's name
    """Function pass (opt 1): replace symbolic variables pinned by a match_cast."""

    def transform(func, mod, ctx):
        out, n = canonicalize_tir_variables(func, mod)
        if n:
            record_stat("symbolic variables replaced", n)
        return out

    return function_pass(transform, opt_level=1, name="CanonicalizeTIRVariables",
                         needs=["relax_normalized"], keeps=["relax_normalized"])


@register("CanonicalizeRelaxBindings")
def CanonicalizeRelaxBindings():  # noqa: N802 - TVM's name
    """Function pass (opt 1): remove trivial bindings, inline constants and known tuple
    fields, narrow dataflow-local Vars to DataflowVars."""

    def transform(func, mod, ctx):
        out, n = canonicalize_relax_bindings(func, mod)
        if n:
            record_stat("trivial bindings removed", n)
        return out

    return function_pass(transform, opt_level=1, name="CanonicalizeRelaxBindings",
                         needs=["relax_normalized"], keeps=["relax_normalized"])


@register("CanonicalizeBindings")
def CanonicalizeBindings():  # noqa: N802 - TVM's name
    """Sequential ``CanonicalizeTIRVariables, CanonicalizeRelaxBindings`` (named
    ``CanonicalizeBindings``, as TVM builds it)."""
    return Sequential([CanonicalizeTIRVariables(), CanonicalizeRelaxBindings()],
                      name="CanonicalizeBindings")
