"""PlanDevices: decide the virtual device holding every Relay value, as TVM v0.19 does.

Constraints come from ``on_device`` annotations (their ``constrain_body`` / ``constrain_result``
flags say which side they fix), ``device_copy`` calls (argument on the source, result on the
destination), ops that keep shapes on the host (``vm.shape_of``, ``vm.reshape_tensor``) and
virtual devices already on function parameters and results. Primitive ops are device
polymorphic; a Relay function has one device per parameter and one for its result.

After lowering, a PrimFunc called through ``call_lowered`` constrains its arguments and result
by the memory scopes its buffers declare (its GlobalVar carries the Relay type); phase 0 lets a
copy in around each such call, and phase 3 writes the scopes chosen back into the buffers that
declared none (``tir.analysis.device_constraints``).

Phases (TVM's): 0 ``PlanDevicesRewrite`` fixes annotations at a function's body and let-bound
values and copies after a projection, not before; 1 unifies the domains of all expressions;
2 defaults what is left (free ``on_device`` first, then the config's default device: a function's
result, then its parameters, let-bound values to their let's device); 3 writes the result back:
``virtual_device_`` on every function and parameter, ``device_copy`` where a value crosses
devices, and ``on_device(..., constrain_result=True)`` on let-bound values and arguments whose
device differs from their context. Every walk is iterative.
"""

from __future__ import annotations

from operator import is_

from ...ir.module import IRModule
from ...ir.op import Op
from ...ir.type import FuncType
from ...ir.virtual_device import VirtualDevice
from ...tir.analysis.device_constraints import (
    apply_prim_func_arg_and_result_memory_constraints,
    prim_func_arg_and_result_memory_scopes,
)
from ...tir.function import PrimFunc
from ...transform.registry import register_pass
from ...transform.sequential import Sequential
from ...transform.stats import record_stat
from ..adt import Clause, Constructor, Match
from ..expr import (
    Call,
    Constant,
    Function,
    If,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..expr_functor import ExprMutator
from ..op.call import call_lowered
from ._device_domains import (
    UNCONSTRAINED,
    DeviceDomains,
    Domain,
    call_args,
    call_lowered_parts,
    device_copy_props,
    is_primitive,
    make_on_device,
    maybe_on_device_fixed,
    on_device_props,
    post_order,
    pre_order,
)
from ._pass_helpers import make_function_pass, make_module_pass
from .function_pass import is_optimizable

__all__ = ["PlanDevices", "check_host_only", "collect_device_annotation_ops", "collect_device_info",
           "host_program", "plan_devices", "recover_virtual_device_map"]


# ------------------------------------------------------------------ phase 0
def _normal(props) -> bool:
    """An annotation constraining its body only (the form users write)."""
    return props is not None and props[3] and not props[2]


class _RewriteOnDevices(ExprMutator):
    """Fix annotations at function bodies and let-bound values; project before copying; allow
    copies around calls of PrimFuncs, whose buffers may ask for other memory scopes."""

    _expand_scopes = True

    def __init__(self, mod: IRModule | None = None):
        super().__init__()
        self.mod = mod

    def visit_call(self, call):
        lowered = call_lowered_parts(call)
        if lowered is None or self.mod is None or \
                not isinstance(self.mod.functions.get(lowered[0]), PrimFunc):
            return super().visit_call(call)
        args = [_copy_ok(self.visit(a)) for a in lowered[1]]
        return _copy_ok(call_lowered(lowered[0], args, call.attrs, call.span))

    def visit_tuple_getitem(self, op):
        new = super().visit_tuple_getitem(op)
        props = on_device_props(new.tuple_value)
        if _normal(props):
            return make_on_device(new, props[1], props[2], props[3])
        return new

    def visit_let(self, let):
        chain = self._let_chain(let)
        parts = []
        for node in chain:
            value = self.visit(node.value)
            props = on_device_props(value)
            if _normal(props):
                value = maybe_on_device_fixed(props[0], props[1])
            parts.append((self.visit(node.var), value))
        return self._rebuild_let_chain(chain, parts, self.visit(chain[-1].body))

    def visit_function(self, fn):
        new = super().visit_function(fn)
        props = on_device_props(new.body)
        if _normal(props):
            new = new.with_fields(body=maybe_on_device_fixed(props[0], props[1]))
        return new


def _copy_ok(e):
    """``e`` in a free ``on_device``: a copy may go here, no device is imposed (TVM's
    OnDeviceCopyOk)."""
    return make_on_device(e, UNCONSTRAINED, False, False)


# ------------------------------------------------------------------ phase 1
def _relay_type(gv):
    """The Relay function type of a PrimFunc's GlobalVar (its annotation, as TVM reads the
    GlobalVar's type: the PrimFunc's own is of the flattened, destination-passing form)."""
    t = gv.type_annotation if gv.type_annotation is not None else gv._checked_type
    return t if isinstance(t, FuncType) else None


def _prim_funcs(mod: IRModule) -> list:
    """The PrimFuncs of ``mod`` whose GlobalVar carries their Relay function type."""
    return [(gv, f) for gv, f in mod.functions.items()
            if isinstance(f, PrimFunc) and _relay_type(gv) is not None]


def _prim_func_domain(d: DeviceDomains, gv, prim_func):
    """The domain the memory scopes of ``prim_func``'s buffers imply for its Relay type."""
    scopes = prim_func_arg_and_result_memory_scopes(prim_func, _relay_type(gv))
    return Domain(None, tuple(Domain(VirtualDevice(memory_scope=s) if s else UNCONSTRAINED)
                              for s in scopes))


def _post_orders(funcs: list) -> list:
    """Each function's nodes not met in an earlier one, children first: the order every phase
    walks in. The program does not change while it is planned, so the phases share one walk
    (each made its own: three walks of a 100,000-node program)."""
    seen: set = set()
    return [post_order([fn], seen) for _, fn in funcs]


def _analyze(mod: IRModule, domains: DeviceDomains, funcs: list, orders: list) -> set:
    """Unify the domains of every sub-expression; returns the parameters of Relay functions.
    ``orders``: ``_post_orders(funcs)``."""
    params: set = set()
    d = domains
    for gv, pf in _prim_funcs(mod):
        d.unify_exprs(gv, _prim_func_domain(d, gv, pf))
    for (gv, fn), order in zip(funcs, orders, strict=True):
        d.unify_exprs(gv, fn)
        for e in order:
            t = type(e)
            if t is Call:
                _analyze_call(d, e)
            elif t is Let:
                d.unify_exprs(e.var, e.value)
                d.unify_exprs(e, e.body)
            elif t is Function:
                if not is_primitive(e):
                    params.update(e.params)
                    _analyze_function(d, e)
            elif t is Tuple:
                for f in e.fields:
                    d.unify_exprs_collapsed(e, d.domain_for(f))
            elif t is TupleGetItem:
                d.unify_exprs_collapsed(e.tuple_value, d.domain_for(e))
            elif t is If:
                dom = d.domain_for(e)
                d.unify_exprs_collapsed(e.cond, dom)
                d.unify_exprs(e.true_branch, dom)
                d.unify_exprs(e.false_branch, dom)
            elif t is Match:
                dom = d.domain_for(e)
                d.unify_exprs_collapsed(e.data, dom)
                for c in e.clauses:
                    for v in _pattern_vars(c):
                        d.unify_exprs_collapsed(e.data, d.domain_for(v))
                    d.unify_exprs(c.rhs, dom)
            elif t is RefCreate:
                d.unify_exprs_collapsed(e, d.domain_for(e.value))
            elif t is RefRead:
                d.unify_exprs_collapsed(e.ref, d.domain_for(e))
            elif t is RefWrite:
                d.unify_exprs_collapsed(e.ref, d.domain_for(e.value))
                d.unify_exprs_collapsed(e, d.domain_for(e.value))
            elif not isinstance(e, Op | Constructor):
                d.domain_for(e)  # Var, GlobalVar, Constant
    return params


def _pattern_vars(clause) -> list:
    from ..adt import pattern_vars

    return pattern_vars(clause.lhs)


def _analyze_call(d: DeviceDomains, call: Call) -> None:
    func = d.domain_for_callee(call)
    args = call_args(call)
    if func.args is None or len(func.args) != len(args) + 1:
        raise ValueError(f"PlanDevices: the callee of {str(call)[:200]} takes a different "
                         f"number of arguments ({len(args)} given)")
    implied = [d.domain_for(a) for a in args]
    implied.append(d.domain_for(call))
    parts = func.args
    first = parts[0]
    if all(p is first for p in parts):
        # one domain for every argument and the result (a primitive op's call site): unify
        # each with it, pair by pair as the higher-order unification does, without making the
        # implied and joined higher-order domains (the callee's parts are the same classes)
        if all(d.unify(first, x) is not None for x in implied):
            return
        _call_mismatch(d, call, func)
    if d.unify(func, Domain(None, tuple(implied))) is None:
        _call_mismatch(d, call, func)


def _call_mismatch(d: DeviceDomains, call: Call, func: Domain):
    raise ValueError(f"PlanDevices: the virtual devices of the arguments and result of\n  "
                     f"{str(call)[:300]}\ndo not match those of its callee {d.lookup(func)!r}")


def _analyze_function(d: DeviceDomains, fn: Function) -> None:
    func = d.domain_for(fn)
    d.unify_exprs(fn.body, d.lookup(func).args[-1])
    for i, p in enumerate(fn.params):
        d.unify_exprs(p, d.param_domain(func, i))
    fn_vd = getattr(fn, "_virtual_device", None)
    if fn_vd is None or fn_vd.is_fully_unconstrained():
        return
    parts = []
    for p in fn.params:
        pvd = getattr(p, "_virtual_device", None) or UNCONSTRAINED
        parts.append(d.for_virtual_device(d.type_of(p), pvd))
    parts.append(d.for_virtual_device(d.type_of(fn.body), fn_vd))
    if d.unify(func, Domain(None, tuple(parts))) is None:
        raise ValueError(f"PlanDevices: the virtual devices of the function's parameters and "
                         f"result conflict with their uses: {d.lookup(func)!r}\n  "
                         f"{str(fn)[:300]}")


# ------------------------------------------------------------------ phase 2
def _default(domains: DeviceDomains, funcs: list, orders: list) -> None:
    d = domains
    default = d.config.default_primitive_virtual_device
    for order in orders:  # free on_device calls: let the body and context agree if they can
        for e in order:
            props = on_device_props(e)
            if props is not None and not props[2] and not props[3]:
                d.unify(d.domain_for(e), d.domain_for(props[0]))
    seen = set()
    for _, fn in funcs:
        for e in pre_order(fn, seen):
            t = type(e)
            if t is Function:
                if not is_primitive(e):
                    dom = d.domain_for(e)
                    if not d.is_fully_constrained(dom):
                        d.set_result_default_then_params(dom, default)
            elif t is Call:
                dom = d.domain_for_callee(e)
                if not d.is_fully_constrained(dom):
                    d.set_result_default_then_params(dom, default)
            elif t is Let:
                let_vd = d.result_virtual_device(d.domain_for(e))
                if let_vd.is_fully_unconstrained():
                    let_vd = default
                var_dom = d.domain_for(e.var)
                if not d.is_fully_constrained(var_dom):
                    d.set_default(var_dom, let_vd)


# ------------------------------------------------------------------ phase 3
class _Capturer:
    """Rebuilds each function bottom-up with devices made explicit (TVM's DeviceCapturer)."""

    def __init__(self, domains: DeviceDomains, params: set):
        self.d = domains
        self.params = params
        self.rw: dict = {}
        self.vds: dict = {}  # expression -> its value's device (vd_of)
        self.copies = 0

    def vd_of(self, e):
        """The device of ``e``'s value, looking through an on_device around it (remembered:
        the domains are settled in this phase, and a value's device is asked for where it is
        made and again where it is used)."""
        vd = self.vds.get(e)
        if vd is None:
            vd = self.vds[e] = self._vd_of(e)
        return vd

    def _vd_of(self, e):
        props = on_device_props(e)
        if props is not None:
            e = props[0]
        vd = self.d.result_virtual_device(self.d.domain_for(e))
        if vd.is_fully_unconstrained():
            raise ValueError(f"PlanDevices: no virtual device was determined for "
                             f"{str(e)[:300]}")
        return vd

    def child(self, lexical, expected, child_vd, child):
        """``child`` rewritten, copied to ``expected`` if it lives elsewhere, and annotated
        with ``expected`` where the context does not imply it."""
        if isinstance(child, Op | Constructor):
            return child
        out = self.rw[child]
        ty = out._checked_type
        if child_vd is not expected and child_vd != expected:
            from ..op.signal import device_copy

            out = device_copy(_typed(maybe_on_device_fixed(out, child_vd), ty), child_vd,
                              expected)
            out._checked_type = ty
            self.copies += 1
        if expected is not lexical and expected != lexical:
            out = _typed(maybe_on_device_fixed(out, expected), ty)
        return out

    def same(self, parent, child):
        vd = self.vd_of(parent)
        return self.child(vd, vd, self.vd_of(child), child)

    def run(self, fn: Function, order: list) -> Function:
        """``fn`` rebuilt; ``order``: its nodes, children first (``_post_orders``)."""
        rw = self.rw
        for e in order:
            new = rw[e] = self.rebuild(e)
            if new is not e and new._checked_type is None:
                new._checked_type = e._checked_type  # the same value: planning keeps types
        return rw[fn]

    def rebuild(self, e):  # noqa: C901 - one case per expression kind, as TVM's mutator
        t = type(e)
        if t is Var:
            return self.param(e) if e in self.params else e
        if t is Call:
            return self.call(e)
        if t is Function:
            return e if is_primitive(e) else self.function(e)
        if t is Let:
            var_vd = self.vd_of(e.var)
            value = self.child(UNCONSTRAINED, var_vd, self.vd_of(e.value), e.value)
            body = self.same(e, e.body)
            if value is e.value and body is e.body:
                return e
            return Let(e.var, value, body, e.span)
        if t is Tuple:
            return e.with_fields([self.same(e, f) for f in e.fields])
        if t is TupleGetItem:
            return e.with_fields(self.same(e, e.tuple_value))
        if t is If:
            return e.with_fields(self.same(e, e.cond), self.same(e, e.true_branch),
                                 self.same(e, e.false_branch))
        if t is RefCreate:
            return e.with_fields(self.same(e, e.value))
        if t is RefRead:
            return e.with_fields(self.same(e, e.ref))
        if t is RefWrite:
            return e.with_fields(self.same(e, e.ref), self.same(e, e.value))
        if t is Match:
            clauses = []
            for c in e.clauses:
                rhs = self.same(e, c.rhs)
                clauses.append(c if rhs is c.rhs else Clause(c.lhs, rhs))
            return e.with_fields(self.same(e, e.data), clauses)
        return e  # Constant, GlobalVar, Op, Constructor

    def param(self, v: Var) -> Var:
        return _with_device(v, self.vd_of(v))

    def function(self, fn: Function) -> Function:
        result_vd = self.vd_of(fn)
        body = self.child(result_vd, result_vd, self.vd_of(fn.body), fn.body)
        return _with_result_device(fn, [self.rw[p] for p in fn.params], body, result_vd)

    def call(self, call: Call):
        # (the op's name read once: the three special calls are rare, plain calls are most)
        name = call.op.name if isinstance(call.op, Op) else None
        if name == "on_device":  # its job is done: the domains hold what it said
            return self.rw[on_device_props(call)[0]]
        if name == "device_copy":
            copy = device_copy_props(call)
            canon = self.d.config.canonical_virtual_device
            src, dst = canon(copy[1]), canon(copy[2])
            if src == dst:
                return self.rw[copy[0]]
            return self.child(dst, dst, src, copy[0])
        d = self.d
        func = d.domain_for_callee(call)
        call_vd = self.vd_of(call)
        lowered = call_lowered_parts(call) if name == "call_lowered" else None
        callee, old_args = lowered if lowered is not None else (call.op, call.args)
        # an op or constructor stays as it is (``child`` returns it): no callee device to find
        op = callee if isinstance(callee, Op | Constructor) else \
            self.child(call_vd, call_vd, d.result_virtual_device(func), callee)
        args = []
        for i, a in enumerate(old_args):
            param_vd = d.result_virtual_device(d.param_domain(func, i))
            args.append(self.child(call_vd, param_vd, self.vd_of(a), a))
        if op is callee and all(x is y for x, y in zip(args, old_args, strict=True)):
            return call
        if lowered is not None:
            return call_lowered(op, args, call.attrs, call.span)
        return Call(op, args, call.attrs, call.type_args, call.span)

    def prim_func(self, gv, prim_func):
        """``prim_func`` with the memory scopes planned for its parameters and result written
        into the buffers that declared none (TVM's UpdatePrimFunc)."""
        func = self.d.domain_for(gv)
        ty = _relay_type(gv)
        vds = [self.d.result_virtual_device(self.d.param_domain(func, i))
               for i in range(len(ty.arg_types) + 1)]
        return apply_prim_func_arg_and_result_memory_constraints(
            prim_func, ty, [vd.memory_scope or "" for vd in vds])


# ------------------------------------------------------------------ the unconstrained case
# calls the domains treat specially (``domain_for_callee``, ``_Capturer.call``); any other op
# is device polymorphic: one class for its arguments and result
_SPECIAL_OPS = frozenset({"on_device", "device_copy", "call_lowered", "vm.shape_of",
                          "memory.alloc_storage", "memory.alloc_tensor", "vm.reshape_tensor"})
_UNIFORM_KINDS = frozenset({Call, Tuple, TupleGetItem, Var, Constant})


def _uniform_device(mod: IRModule, funcs: list, orders: list, config):
    """The one device of every value when nothing constrains any (else None): one function of
    typed calls of polymorphic ops, tuples, field reads, constants and variables, with no
    device on the function and no PrimFunc of the module. Its values are all joined to the
    function's result or parameters, which phase 2 defaults to the config's default device,
    so phases 1-2 (a union-find class per value, 100,000 of them on a 100k chain) would give
    every value that device; ``_capture_uniform`` then rebuilds as phase 3 would."""
    if len(funcs) != 1 or _prim_funcs(mod):
        return None
    fn, order = funcs[0][1], orders[0]
    fvd = getattr(fn, "_virtual_device", None)
    if (fvd is not None and not fvd.is_fully_unconstrained()) or is_primitive(fn) \
            or not order or order[-1] is not fn:
        return None
    fty = fn._checked_type
    if not isinstance(fty, FuncType) or len(fty.arg_types) != len(fn.params):
        return None
    kinds, special = _UNIFORM_KINDS, _SPECIAL_OPS
    for i in range(len(order) - 1):
        e = order[i]
        t = type(e)
        if t not in kinds:
            return None
        ty = e._checked_type
        if ty is None or isinstance(ty, FuncType):
            return None
        if t is Call and not (isinstance(e.op, Op) and e.op.name not in special):
            return None
    # phase 2's steps, in its order: the function's result takes the default (all values
    # joined to it), its parameters the result's device; each call site's default then changes
    # nothing, nor does an unused parameter's
    default = config.default_primitive_virtual_device
    canon = config.canonical_virtual_device
    vd = canon(VirtualDevice.default(UNCONSTRAINED, default))
    if vd.is_fully_unconstrained() or VirtualDevice.default(vd, default) != vd or \
            canon(VirtualDevice.default(UNCONSTRAINED, vd)) is not vd:
        return None
    return vd


def _capture_uniform(fn: Function, order: list, vd) -> Function:
    """``fn`` rebuilt as ``_Capturer.run`` rebuilds it when every value is on ``vd``: no copy
    nor annotation anywhere, the parameters and the function carry ``vd``."""
    rw: dict = {}
    params = set(fn.params)
    for i in range(len(order) - 1):
        e = order[i]
        t = type(e)
        if t is Call:
            old = e.args
            args = [rw[a] for a in old]
            new = e if all(map(is_, args, old)) else \
                Call(e.op, args, e.attrs, e.type_args, e.span)
        elif t is Var:
            new = _with_device(e, vd) if e in params else e
        elif t is Tuple:
            new = e.with_fields([rw[f] for f in e.fields])
        elif t is TupleGetItem:
            new = e.with_fields(rw[e.tuple_value])
        else:
            new = e
        rw[e] = new
        if new is not e and new._checked_type is None:
            new._checked_type = e._checked_type
    new = _with_result_device(fn, [rw[p] for p in fn.params], rw[fn.body], vd)
    if new is not fn and new._checked_type is None:
        new._checked_type = fn._checked_type
    return new


# ------------------------------------------------------------------ build-time check
def check_host_only(mod: IRModule, where: str = "relay.build") -> None:
    """Raise a clear error naming the device when a planned program places a value anywhere
    but the CPU: minitvm compiles and runs on the host only (PlanDevices itself accepts any
    device a target is given for, as TVM's does)."""
    _check_host_only(mod, where)


def _check_host_only(mod: IRModule, where: str) -> bool:
    """``check_host_only``; also says whether the module holds an ``on_device`` call."""
    from ...target.compilation_config import device_name

    seen: set = set()
    annotated = False
    for fn in mod.functions.values():
        if not isinstance(fn, Function):
            continue
        for e in post_order([fn], seen):
            vds = []
            if type(e) is Function or type(e) is Var:
                vds.append((getattr(e, "_virtual_device", None), e))
            props = on_device_props(e)
            if props is not None:
                vds.append((props[1], e))
                annotated = True
            copy = device_copy_props(e)
            if copy is not None:
                vds += [(copy[1], e), (copy[2], e)]
            for vd, node in vds:
                if vd is not None and vd.device_type_int not in (-1, 1):
                    raise ValueError(
                        f"{where}: the program places a value on {device_name(vd.device_type_int)}"
                        f" ({vd}), but minitvm compiles for the CPU only; at:\n  "
                        f"{' '.join(str(node).split())[:300]}")
    return annotated


class _DropOnDevice(ExprMutator):
    """Removes ``on_device`` calls: no-ops at run time, as TVM's executors treat them."""

    _expand_scopes = True

    def visit_call(self, call):
        props = on_device_props(call)
        if props is not None:
            return self.visit(props[0])
        return super().visit_call(call)


def host_program(mod: IRModule, where: str = "relay.build") -> IRModule:
    """A planned module ready for the CPU code generators: checked to place nothing off the
    host (``check_host_only``), its ``on_device`` annotations dropped."""
    if not _check_host_only(mod, where):
        return mod  # no on_device call to drop: skip rebuilding every function
    out, changed = mod.shallow_copy(), False
    for gv, fn in mod.functions.items():
        if isinstance(fn, Function) and not is_primitive(fn):
            new = _DropOnDevice().visit(fn)
            if new is not fn:
                out.update_func(gv, new)
                changed = True
    return out if changed else mod


# ------------------------------------------------------------------ device maps
def recover_virtual_device_map(mod: IRModule, expr, config=None) -> dict:
    """The virtual device of every sub-expression of ``expr`` (a function of ``mod``), as the
    planner's analysis and defaulting determine them (TVM's RecoverVirtualDeviceMap)."""
    from ...transform import PassContext

    config = _config_for(config, PassContext.current())
    funcs = [(gv, f) for gv, f in mod.functions.items() if is_optimizable(f)]
    domains = DeviceDomains(config, mod)
    orders = _post_orders(funcs)
    _analyze(mod, domains, funcs, orders)
    _default(domains, funcs, orders)
    out = {}
    for e in post_order([expr], set()):
        if not isinstance(e, Op | Constructor):
            out[e] = domains.result_virtual_device(domains.domain_for(e))
    return out


def _register_recover_map() -> None:
    from ...runtime.registry import register_func

    register_func("relay.transform.RecoverVirtualDeviceMap",
                  lambda mod, expr: recover_virtual_device_map(mod, expr), override=True)


_register_recover_map()


class _AnyDeviceConfig:
    """A CompilationConfig that accepts device types without a target (for the analyses)."""

    def __init__(self, base):
        self.base = base
        self.host_virtual_device = base.host_virtual_device
        self.default_primitive_virtual_device = base.default_primitive_virtual_device

    def canonical_virtual_device(self, vd):
        try:
            return self.base.canonical_virtual_device(vd)
        except ValueError:
            return vd


def collect_device_info(expr) -> dict:
    """Expression -> device type of every sub-expression of ``expr``, devices propagated from
    its ``on_device`` / ``device_copy`` calls (``relay.analysis.collect_device_info``)."""
    from ...target import CompilationConfig, Target
    from ...transform import PassContext
    from .infer_type import InferType

    mod = InferType()(IRModule.from_expr(expr))
    main = mod["main"]
    config = _AnyDeviceConfig(CompilationConfig(PassContext.current(),
                                                Target.current(allow_none=True) or "llvm"))
    found = recover_virtual_device_map(mod, main, config)
    root = main if isinstance(expr, Function) else main.body
    keep = set(post_order([root], set()))
    return {e: vd.device_type_int for e, vd in found.items() if e in keep}


def collect_device_annotation_ops(expr) -> dict:
    """``on_device`` call -> the device type it names, for every annotation in ``expr``
    (``relay.analysis.collect_device_annotation_ops``)."""
    out = {}
    for e in post_order([expr], set()):
        props = on_device_props(e)
        if props is not None:
            out[e] = props[1].device_type_int
    return out


# ------------------------------------------------------------------ driver
def _config_for(config, ctx):
    """The CompilationConfig to plan with: given, else the PassContext and current target's."""
    from ...target import CompilationConfig, Target

    if isinstance(config, CompilationConfig) or hasattr(config, "canonical_virtual_device"):
        return config
    if config is not None:  # targets, as relay.build receives them
        return CompilationConfig(ctx, config)
    target = Target.current(allow_none=True)
    return CompilationConfig(ctx, target if target is not None else "llvm")


def plan_devices(mod: IRModule, config) -> IRModule:
    """Phases 1-3 on a type-checked module whose annotations phase 0 has fixed."""
    funcs = [(gv, f) for gv, f in mod.functions.items() if is_optimizable(f)]
    if not funcs:
        return mod
    orders = _post_orders(funcs)
    vd = _uniform_device(mod, funcs, orders, config)
    if vd is not None:
        new = _capture_uniform(funcs[0][1], orders[0], vd)
        if new is funcs[0][1]:
            return mod
        out = mod.shallow_copy()
        out.update_func(funcs[0][0], new)
        return out
    domains = DeviceDomains(config, mod)
    params = _analyze(mod, domains, funcs, orders)
    _default(domains, funcs, orders)
    cap = _Capturer(domains, params)
    out = mod.shallow_copy()
    changed = 0
    for (gv, fn), order in zip(funcs, orders, strict=True):
        new = cap.run(fn, order)
        if new is not fn:
            out.update_func(gv, new)
            changed += 1
    for gv, pf in _prim_funcs(mod):
        new = cap.prim_func(gv, pf)
        if new is not pf:
            out.update_func(gv, new)
            changed += 1
    if cap.copies:
        record_stat("device copies inserted", cap.copies)
    return out if changed else mod


def _with_device(v: Var, vd) -> Var:
    """Parameter ``v`` carrying ``vd``: the same variable (TVM's WithFields)."""
    if getattr(v, "_virtual_device", None) == vd:
        return v
    new = Var(v.name_hint, v.type_annotation, v.span)
    new.vid = v.vid
    new._checked_type = v._checked_type
    new._virtual_device = vd
    return new


def _with_result_device(fn: Function, params: list, body, result_vd) -> Function:
    """``fn`` with ``params`` and ``body``, its result on ``result_vd``."""
    new = fn.with_fields(params=params, body=body)
    if new is fn and getattr(fn, "_virtual_device", None) == result_vd:
        return fn
    if new is fn:
        new = Function(fn.params, fn.body, fn.ret_type, fn.type_params, fn.attrs, fn.span)
    new._virtual_device = result_vd
    return new


def _typed(e, ty):
    """``e`` (a fresh annotation, or the value itself) with the type of the value it wraps."""
    if e._checked_type is None:
        e._checked_type = ty
    return e


@register_pass("PlanDevices")
def PlanDevices(config=None):  # noqa: N802 - TVM's name
    """Assign a virtual device to every expression, inserting device copies (module pass).

    Parameters
    ----------
    config : CompilationConfig, optional
        The targets and default device (``tvm.target.make_compilation_config``); by default
        the current PassContext with the current target (``llvm`` if none).
    """

    def core(mod, ctx):
        return plan_devices(mod, _config_for(config, ctx))

    rewrite = make_function_pass(lambda f, m, c: _RewriteOnDevices(m).visit(f), opt_level=0,
                                 name="PlanDevicesRewrite")
    return Sequential([rewrite, make_module_pass(core, opt_level=0, name="PlanDevicesCore")],
                      opt_level=0, name="PlanDevices")
