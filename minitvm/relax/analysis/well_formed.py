"""``well_formed``: whether a Relax function or module is well formed (TVM's
``relax.analysis.well_formed``).

Checked: every Relax variable is defined (a parameter, a binding, a match_cast) before use and in
scope (If branches and inner functions scope their bindings; a DataflowVar only inside its
dataflow block); no variable is defined twice; symbolic (tir) variables in struct info are defined
(by a parameter's struct info or a match_cast) before use; dataflow blocks hold no If and no
impure call; function bodies and If branches are SeqExprs (a branch's body a leaf or a tuple of
leaves), and a SeqExpr is nothing else (not a bound value: normalization flattens those); GlobalVars name functions of the
module; every expression has struct info (``check_struct_info``). Across a module's functions:
a Relax variable and a symbolic variable belong to one function (TVM's rule), and a call of a
module function passes as many arguments as its FuncStructInfo has parameters, none provably
incompatible with them. The walk uses explicit stacks, so blocks of any length and programs of
any depth are checked at the default recursion limit.
"""

from __future__ import annotations

import logging

from ...ir.expr import GlobalVar
from ...ir.module import IRModule
from ...ir.op import Op
from ...tir import expr as T
from ...tir.stmt_functor import post_order
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
from ..struct_info import (
    FuncStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = ["well_formed", "check_well_formed", "free_symbolic_vars", "defined_symbolic_vars"]

logger = logging.getLogger("minitvm.relax.analysis.well_formed")


class _Malformed(Exception):
    pass


def _sinfo_prim_exprs(sinfo, definable_only: bool = False):
    """(expr, definable) for each symbolic expression in ``sinfo``; ``definable``: a bare tir
    Var in a position a match (parameter, match_cast) binds. Function struct info is skipped
    when ``definable_only`` (its parameters bind their own)."""
    out = []
    stack = [sinfo]
    while stack:
        s = stack.pop()
        if s is None:
            continue
        exprs = ()
        if isinstance(s, TensorStructInfo) and isinstance(s.shape, ShapeExpr):
            exprs = s.shape.values
        elif isinstance(s, ShapeStructInfo) and s.values is not None:
            exprs = s.values
        elif isinstance(s, PrimStructInfo) and s.value is not None:
            exprs = (s.value,)
        elif isinstance(s, TupleStructInfo):
            stack.extend(reversed(s.fields))
        elif isinstance(s, FuncStructInfo) and not s.is_opaque() and not definable_only:
            stack.append(s.ret)
            stack.extend(reversed(s.params))
        for e in exprs:
            out.append((e, isinstance(e, T.Var)))
    return out


def _tir_vars(e) -> list:
    return [n for n in post_order(e) if isinstance(n, T.Var)]


def _sinfo_relax_vars(sinfo) -> list:
    """Relax Vars a struct info refers to (a tensor's shape held in a Var)."""
    out, stack = [], [sinfo]
    while stack:
        s = stack.pop()
        if isinstance(s, TensorStructInfo) and isinstance(s.shape, Var):
            out.append(s.shape)
        elif isinstance(s, TupleStructInfo):
            stack.extend(s.fields)
        elif isinstance(s, FuncStructInfo) and not s.is_opaque():
            stack.append(s.ret)
            stack.extend(s.params)
    return out


def _name(v) -> str:
    return getattr(v, "name_hint", None) or getattr(v, "name", None) or repr(v)


class _Checker:
    def __init__(self, mod: IRModule | None, check_struct_info: bool, owners: dict | None = None,
                 func_name: str = ""):
        self.mod = mod
        self.check_sinfo = check_struct_info
        self.where = ""
        # across the module's functions: id(var) -> name of the function defining it
        self.owners = owners if owners is not None else {}
        self.func_name = func_name
        # scoped state, undone through logs
        self.visible: set[int] = set()
        self.visible_log: list = []
        self.sym: set[int] = set()
        self.sym_log: list = []
        self.ever: set[int] = set()  # defined anywhere in the function (duplicate check)
        self.dataflow_defined: set[int] = set()  # DataflowVars bound in finished blocks
        self.in_dataflow = False
        self.block_start = 0  # visible_log length when the current dataflow block began

    def fail(self, msg: str):
        raise _Malformed(f"{self.where}{msg}")

    # ---------------------------------------------------------------- definitions
    def define_var(self, v: Var, what: str):
        if not isinstance(v, Var):
            self.fail(f"{what} binds {type(v).__name__}, not a Var")
        if id(v) in self.ever:
            self.fail(f"variable %{_name(v)} is defined more than once")
        other = self.owners.get(id(v))
        if other is not None and other != self.func_name:
            self.fail(f"variable %{_name(v)} is also defined in function @{other} (a Relax "
                      "variable belongs to one function)")
        self.owners[id(v)] = self.func_name
        if isinstance(v, DataflowVar) and not self.in_dataflow:
            self.fail(f"DataflowVar %{_name(v)} is defined outside a dataflow block")
        if self.check_sinfo and v.struct_info_ is None:
            self.fail(f"variable %{_name(v)} has no struct info")
        self.ever.add(id(v))
        self.visible.add(id(v))
        self.visible_log.append(v)

    def define_sym_from(self, sinfo, what: str):
        """A match (parameter, match_cast) against ``sinfo``: bare tir Vars in definable
        positions become defined; every other symbolic expression must use defined ones."""
        items = _sinfo_prim_exprs(sinfo, definable_only=True)
        for e, definable in items:
            if definable and id(e) not in self.sym:
                self.claim_sym(e)
                self.sym.add(id(e))
                self.sym_log.append(e)
        for e, _ in items:
            self.check_sym_expr(e, what)
        for rv in _sinfo_relax_vars(sinfo):
            self.use_var(rv)

    def check_sinfo_syms(self, sinfo, what: str):
        if sinfo is None:
            return
        for e, _ in _sinfo_prim_exprs(sinfo, definable_only=True):
            self.check_sym_expr(e, what)
        for rv in _sinfo_relax_vars(sinfo):
            self.use_var(rv)

    def claim_sym(self, tv):
        """A symbolic variable belongs to one function of a module (TVM's rule: each function
        declares its own ``n = T.int64()``; the printed module could not say they are one)."""
        key = ("sym", id(tv))
        other = self.owners.get(key)
        if other is not None and other[0] != self.func_name:
            self.fail(f"symbolic variable {_name(tv)} is used in both @{other[0]} and "
                      f"@{self.func_name} (a symbolic variable belongs to one function of a "
                      "module)")
        self.owners[key] = (self.func_name, tv)  # the variable kept alive: its id stays unique

    def check_sym_expr(self, e, what: str):
        for tv in _tir_vars(e):
            self.claim_sym(tv)
            if id(tv) not in self.sym:
                self.fail(f"symbolic variable {_name(tv)} is used in {what} before it is "
                          "defined (by a parameter's struct info or a match_cast)")

    def use_var(self, v: Var):
        if id(v) in self.visible:
            return
        if isinstance(v, DataflowVar) and id(v) in self.dataflow_defined:
            self.fail(f"DataflowVar %{_name(v)} is used outside its dataflow block")
        if id(v) in self.ever:
            self.fail(f"variable %{_name(v)} is used outside the scope that defines it")
        self.fail(f"variable %{_name(v)} is used before it is defined")

    # ---------------------------------------------------------------- the walk
    def run(self, root: Function):
        stack: list = [("func", root)]
        while stack:
            kind, x = stack.pop()
            if kind == "expr":
                self.visit_expr(x, stack)
            elif kind == "seq":
                self.visit_seq(x, stack)
            elif kind == "func":
                self.visit_function(x, stack)
            elif kind == "call":
                x()
            else:  # pragma: no cover
                raise AssertionError(kind)

    def _save(self):
        return (len(self.visible_log), len(self.sym_log), self.in_dataflow, self.block_start)

    def _restore(self, state):
        nv, ns, dflow, start = state
        while len(self.visible_log) > nv:
            self.visible.discard(id(self.visible_log.pop()))
        while len(self.sym_log) > ns:
            self.sym.discard(id(self.sym_log.pop()))
        self.in_dataflow, self.block_start = dflow, start

    def visit_function(self, f: Function, stack):
        state = self._save()
        self.in_dataflow = False
        for p in f.params:
            self.define_var(p, "a function parameter")
            self.define_sym_from(p.struct_info_, f"the struct info of parameter %{_name(p)}")
        if not isinstance(f.body, SeqExpr):
            self.fail(f"the body of a function must be a SeqExpr, got {type(f.body).__name__}")
        stack.append(("call", lambda: self._restore(state)))
        stack.append(("seq", f.body))

    def visit_seq(self, seq: SeqExpr, stack):
        state = self._save()
        todo: list = []
        for block in seq.blocks:
            todo.append(("call", lambda b=block: self.begin_block(b)))
            for binding in block.bindings:
                todo.extend(self.binding_tasks(binding))
            todo.append(("call", lambda b=block: self.end_block(b)))
        todo.append(("expr", seq.body))
        todo.append(("call", lambda: self._restore(state)))
        stack.extend(reversed(todo))

    def begin_block(self, block):
        if isinstance(block, DataflowBlock):
            if self.in_dataflow:
                self.fail("a dataflow block is nested in another dataflow block")
            self.in_dataflow = True
            self.block_start = len(self.visible_log)

    def end_block(self, block):
        if not isinstance(block, DataflowBlock):
            return
        self.in_dataflow = False
        kept = []
        for v in self.visible_log[self.block_start:]:
            if isinstance(v, DataflowVar):
                self.visible.discard(id(v))
                self.dataflow_defined.add(id(v))
            else:
                kept.append(v)
        del self.visible_log[self.block_start:]
        self.visible_log.extend(kept)

    def binding_tasks(self, b) -> list:
        if isinstance(b, MatchCast):
            return [("expr", b.value),
                    ("call", lambda: self.define_sym_from(
                        b.struct_info, f"the match_cast of %{_name(b.var)}")),
                    ("call", lambda: self.define_var(b.var, "a match_cast"))]
        if isinstance(b, VarBinding):
            if isinstance(b.value, Function):  # a recursive local function sees itself
                return [("call", lambda: self.define_binding_var(b)), ("expr", b.value)]
            return [("expr", b.value), ("call", lambda: self.define_binding_var(b))]
        return [("call", lambda: self.fail(f"unknown binding {type(b).__name__}"))]

    def define_binding_var(self, b: VarBinding):
        self.define_var(b.var, "a binding")
        self.check_sinfo_syms(b.var.struct_info_, f"the struct info of %{_name(b.var)}")

    def visit_expr(self, e, stack):
        if isinstance(e, Op):
            return
        if isinstance(e, GlobalVar):
            if self.mod is not None and e not in self.mod.functions:
                names = {g.name_hint for g in self.mod.functions}
                why = ("another GlobalVar of that name is in the module"
                       if e.name_hint in names else "the module has no such function")
                self.fail(f"GlobalVar @{e.name_hint} does not refer to a function of the "
                          f"module ({why})")
            return
        if not isinstance(e, Expr):
            self.fail(f"{type(e).__name__} {e!r} is not a Relax expression")
        if self.check_sinfo and e._struct_info is None:
            self.fail(f"{type(e).__name__} {_describe(e)} has no struct info")
        if isinstance(e, Var):
            self.use_var(e)
        elif isinstance(e, ShapeExpr):
            for d in e.values:
                self.check_sym_expr(d, "a shape expression")
        elif isinstance(e, PrimValue):
            self.check_sym_expr(e.value, "a prim value")
        elif isinstance(e, Tuple):
            stack.extend(("expr", f) for f in reversed(e.fields))
        elif isinstance(e, TupleGetItem):
            stack.append(("expr", e.tuple_value))
        elif isinstance(e, Call):
            self.visit_call(e, stack)
        elif isinstance(e, If):
            self.visit_if(e, stack)
        elif isinstance(e, SeqExpr):
            self.fail("a SeqExpr is only a function body or an If branch (here it is nested in "
                      "another expression or bound to a variable; relax.transform.Normalize "
                      "flattens it)")
        elif isinstance(e, Function):
            stack.append(("func", e))

    def visit_call(self, c: Call, stack):
        if self.in_dataflow and _is_impure(c):
            self.fail(f"impure call {_describe(c)} in a dataflow block")
        if isinstance(c.op, GlobalVar) and self.mod is not None:
            self.check_global_call(c)
        for s in c.sinfo_args:
            self.check_sinfo_syms(s, f"the sinfo_args of {_describe(c)}")
        stack.extend(("expr", a) for a in reversed(c.args))
        stack.append(("expr", c.op))

    def check_global_call(self, c: Call):
        """A call of a module function: its arguments against the callee's FuncStructInfo
        (count, and no provably incompatible argument)."""
        callee = self.mod.functions.get(c.op)
        if not isinstance(callee, Function):
            return
        fsinfo = callee.struct_info_
        if not isinstance(fsinfo, FuncStructInfo) or fsinfo.is_opaque():
            return
        if len(c.args) != len(fsinfo.params):
            self.fail(f"call to @{c.op.name_hint} passes {len(c.args)} argument(s), but the "
                      f"function takes {len(fsinfo.params)}")
        if not self.check_sinfo:
            return
        from ..op._common import fmt_sinfo
        from .struct_info_analysis import BaseCheckResult, struct_info_base_check_result

        for i, (p, a) in enumerate(zip(fsinfo.params, c.args, strict=True)):
            arg = getattr(a, "struct_info_", None)
            if arg is None:
                continue
            res = struct_info_base_check_result(p, arg)
            if res in (BaseCheckResult.FAIL_L0, BaseCheckResult.FAIL_L1):
                self.fail(f"argument {i} of the call to @{c.op.name_hint} is {fmt_sinfo(arg)}, "
                          f"which the parameter's {fmt_sinfo(p)} does not accept")

    def visit_if(self, e: If, stack):
        if self.in_dataflow:
            self.fail("an If is not allowed in a dataflow block")
        for br in (e.true_branch, e.false_branch):
            if not isinstance(br, SeqExpr):
                self.fail(f"If branches must be SeqExprs, got {type(br).__name__}")
            if not _is_leaf_or_tuple(br.body):
                self.fail(f"the body of an If branch must be a leaf expression (a variable, "
                          f"constant or a tuple of them), got a {type(br.body).__name__} "
                          "(relax.transform.Normalize binds it to a variable)")
        stack.append(("seq", e.false_branch))
        stack.append(("seq", e.true_branch))
        stack.append(("expr", e.cond))


_LEAVES = (Var, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, GlobalVar, ExternFunc,
           Op)


def _is_leaf_or_tuple(e) -> bool:
    """TVM's IsLeafOrTuple: what may sit where normalized Relax allows no computation."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Tuple):
            stack.extend(x.fields)
        elif not isinstance(x, _LEAVES):
            return False
    return True


def _describe(e) -> str:
    if isinstance(e, Call):
        op = e.op
        name = getattr(op, "name", None) or getattr(op, "name_hint", None) or type(op).__name__
        return f"to {name}"
    return _name(e) if isinstance(e, Var | GlobalVar) else ""


def _is_impure(c: Call) -> bool:
    op = c.op
    if isinstance(op, Op):
        purity = op.get_attr("FPurity")
        return purity is not None and not purity
    sinfo = getattr(op, "_checked_type", None)
    return isinstance(sinfo, FuncStructInfo) and not sinfo.purity


def _function_problem(func: Function, mod, check_struct_info: bool, name: str = "",
                      owners: dict | None = None) -> str | None:
    checker = _Checker(mod, check_struct_info, owners, name)
    checker.where = f"in @{name}: " if name else ""
    try:
        checker.run(func)
    except _Malformed as err:
        return str(err)
    return None


def check_well_formed(obj, check_struct_info: bool = True) -> str | None:
    """The first problem that makes ``obj`` (an IRModule or a relax.Function) ill formed, or
    None when it is well formed."""
    if isinstance(obj, IRModule):
        owners: dict = {}
        for gv, fn in obj.functions.items():
            if isinstance(fn, Function):
                why = _function_problem(fn, obj, check_struct_info, gv.name_hint, owners)
                if why:
                    return why
        return None
    if isinstance(obj, Function):
        return _function_problem(obj, None, check_struct_info)
    raise TypeError(f"well_formed expects an IRModule or a relax.Function, got "
                    f"{type(obj).__name__}")


def well_formed(obj, check_struct_info: bool = True) -> bool:
    """Whether ``obj`` (an IRModule or a relax.Function) is well formed; a problem is logged as
    a warning (logger ``minitvm.relax.analysis.well_formed``) naming it and the variable."""
    why = check_well_formed(obj, check_struct_info)
    if why is not None:
        logger.warning("relax.analysis.well_formed: %s", why)
        return False
    return True


# ------------------------------------------------------------------------- symbolic variables
def defined_symbolic_vars(expr) -> list:
    """Symbolic (tir) variables ``expr`` defines: in its parameters' struct info and in its
    match_casts, in definition order (TVM's ``DefinedSymbolicVars``)."""
    from .var_analysis import _walk

    out: dict = {}
    for e in _walk(expr):
        sinfos = []
        if isinstance(e, Function):
            sinfos = [p.struct_info_ for p in e.params]
        elif isinstance(e, MatchCast):
            sinfos = [e.struct_info]
        for s in sinfos:
            for x, definable in _sinfo_prim_exprs(s, definable_only=True):
                if definable:
                    out.setdefault(x, None)
    return list(out)


def free_symbolic_vars(expr) -> list:
    """Symbolic (tir) variables used in ``expr`` but not defined by it, in first-use order
    (TVM's ``FreeSymbolicVars``)."""
    from .var_analysis import _walk

    defined = {id(v) for v in defined_symbolic_vars(expr)}
    used: dict = {}

    def add_sinfo(s):
        for x, _ in _sinfo_prim_exprs(s):
            for tv in _tir_vars(x):
                used.setdefault(tv, None)

    for e in _walk(expr):
        if isinstance(e, Function):
            for p in e.params:
                add_sinfo(p.struct_info_)
            add_sinfo(e.ret_struct_info)
        elif isinstance(e, MatchCast):
            add_sinfo(e.struct_info)
        elif isinstance(e, Var):
            add_sinfo(e.struct_info_)
        elif isinstance(e, ShapeExpr):
            for d in e.values:
                for tv in _tir_vars(d):
                    used.setdefault(tv, None)
        elif isinstance(e, PrimValue):
            for tv in _tir_vars(e.value):
                used.setdefault(tv, None)
        elif isinstance(e, Call):
            for s in e.sinfo_args:
                add_sinfo(s)
    return [v for v in used if id(v) not in defined]


# ------------------------------------------------------------------------- verify-each hook
def _well_formed_hook(gv_or_func, func=None, limit: int = 5):
    """The core's ``well_formed`` hook. Called as ``fn(func)``: the problem or None; called as
    verify-each does, ``fn(gv, func, limit)``: a list of at most one problem."""
    if func is None:
        return check_well_formed(gv_or_func)
    why = _function_problem(func, None, True, getattr(gv_or_func, "name_hint", ""))
    return [why] if why and limit > 0 else []


def _register():
    from ...ir.dialect import register_hook

    register_hook("well_formed", Function, _well_formed_hook)


_register()
