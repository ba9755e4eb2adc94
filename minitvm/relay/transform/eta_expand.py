"""EtaExpand: wrap constructors and global functions used as values in explicit lambdas.

``Cons`` (not applied) becomes ``fn[A](%eta_expand_param: A, %eta_expand_param: List[A]) ->
List[A] { Cons(...) }`` and ``@f`` becomes ``fn (%eta_expand_param...) { @f(...) }`` keeping
@f's return type, type params and attributes. Applied constructors are left alone; global vars
are expanded wherever they appear, including as a call's callee (as TVM does).

As in TVM, one replacement of type variables serves the whole run: every type variable met gets
one fresh ``A`` (of kind Type), shared by all the expansions that mention it, and a constructor or
global var used in several places is expanded once and that one function reused. Globals are
expanded from the module as updated so far (TVM updates its module in place while it walks it).
"""

from __future__ import annotations

from ...ir.type import FuncType, GlobalTypeVar, RelayRefType, TupleType, TypeCall, TypeVar
from ...transform.stats import record_stat
from ..adt import Constructor
from ..expr import Call, Function, Var
from ..expr_functor import ExprMutator
from ._pass_helpers import make_module_pass, register

__all__ = ["EtaExpand", "eta_expand"]


def _subst_type(t, mapping: dict):
    """Replace the type variables of ``t`` (fresh ones are created on first sight)."""
    if isinstance(t, GlobalTypeVar):
        return t
    if isinstance(t, TypeVar):
        if t not in mapping:
            mapping[t] = TypeVar("A")
        return mapping[t]
    if isinstance(t, TupleType):
        return TupleType([_subst_type(f, mapping) for f in t.fields])
    if isinstance(t, FuncType):
        return FuncType([_subst_type(a, mapping) for a in t.arg_types],
                        _subst_type(t.ret_type, mapping),
                        [_subst_type(v, mapping) for v in t.type_params], t.type_constraints)
    if isinstance(t, TypeCall):
        return TypeCall(_subst_type(t.func, mapping), [_subst_type(a, mapping) for a in t.args])
    if isinstance(t, RelayRefType):
        return RelayRefType(_subst_type(t.value, mapping))
    return t


class _EtaExpander(ExprMutator):
    def __init__(self, mod, expand_constructor: bool, expand_global_var: bool):
        super().__init__()
        self.mod = mod
        self.expand_constructor = expand_constructor
        self.expand_global_var = expand_global_var
        self.count = 0
        self.type_map: dict = {}  # one fresh type variable per original, for the whole run

    def visit_call(self, call):
        if isinstance(call.op, Constructor):
            args = [self.visit(a) for a in call.args]
            return call.with_fields(args=args)
        return super().visit_call(call)

    def visit_constructor(self, con):
        if not self.expand_constructor:
            return con
        mapping = self.type_map
        params = [Var("eta_expand_param", _subst_type(t, mapping)) for t in con.inputs]
        adt = self.mod.type_definitions.get(con.belong_to)
        type_vars = adt.type_vars if adt is not None else ()
        type_params = [_subst_type(tv, mapping) for tv in type_vars]
        ret_type = TypeCall(con.belong_to, type_params)
        self.count += 1
        return Function(params, Call(con, params), ret_type, type_params)

    def visit_global_var(self, gv):
        if not self.expand_global_var:
            return gv
        func = self.mod.functions.get(gv)
        if not isinstance(func, Function):
            return gv
        params = [Var("eta_expand_param", p.type_annotation) for p in func.params]
        self.count += 1
        return func.with_fields(params=params, body=Call(gv, params))


def eta_expand(mod, expand_constructor: bool = False, expand_global_var: bool = False):
    """A copy of ``mod`` with constructors and/or global vars eta-expanded in every function."""
    return _eta_counted(mod, expand_constructor, expand_global_var)[0]


def _eta_counted(mod, expand_constructor: bool, expand_global_var: bool):
    """``eta_expand`` plus the number of expansions made."""
    if not (expand_constructor or expand_global_var):
        raise ValueError("EtaExpand must expand at least one language feature: set "
                         "expand_constructor or expand_global_var")
    new = mod.shallow_copy()
    expander = _EtaExpander(new, expand_constructor, expand_global_var)
    for gv in mod.get_global_vars():
        func = mod.functions[gv]
        if isinstance(func, Function):
            out = expander.visit(func)
            if out is not func:
                new.update_func(gv, out)
    return new, expander.count


@register("EtaExpand")
def EtaExpand(expand_constructor: bool = False,  # noqa: N802 - TVM's name
              expand_global_var: bool = False):
    """Module pass (opt 1): add an abstraction over constructors and/or global variables.

    Parameters
    ----------
    expand_constructor : bool
        Whether to expand constructors.
    expand_global_var : bool
        Whether to expand global variables.
    """

    def run(mod, ctx):
        out, n = _eta_counted(mod, expand_constructor, expand_global_var)
        record_stat("eta-expanded references", n)
        return out

    return make_module_pass(run, opt_level=1, name="EtaExpand")

