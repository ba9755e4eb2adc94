"""IR-property contracts: typed, A-normal form (anf), graph normal form (gnf), fused.

A pass declares the properties it ``needs``, ``establishes``, ``keeps`` and ``breaks`` (on its
PassInfo). The pass manager remembers, per module object, which properties hold and which pass
promised them; it re-establishes a needed property only when it is stale (InferType only where
types are missing or changed) and, under ``transform.verify_each``, names the pass that broke a
promised property.
"""

from __future__ import annotations

import weakref

from .pass_base import ModulePass
from .pass_info import PassInfo

# module -> {property: name of the pass that established or kept it}
_KNOWN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_ESTABLISHER = {"typed": "InferType", "anf": "ToANormalForm", "gnf": "ToGraphNormalForm",
                "fused": "FuseOps"}


class PropertyError(ValueError):
    """A pass's input lacks a property it needs, or a pass broke a property it promised."""


# ------------------------------------------------------------------------------- walking
def _children(e):
    from ..relay.adt import Match
    from ..relay.expr import Function, Let
    from ..relay.expr_functor import dataflow_children

    t = type(e)
    if t is Let:
        return (e.var, e.value, e.body)
    if t is Function:
        return (*e.params, e.body)
    if t is Match:
        return (e.data, *(c.rhs for c in e.clauses))
    return dataflow_children(e)


def walk(expr, enter=None):
    """Every node reachable from ``expr`` once (explicit stack); ``enter(fn)`` False skips a
    function's body."""
    from ..relay.expr import Function

    seen = {id(expr)}
    stack = [expr]
    while stack:
        e = stack.pop()
        yield e
        if enter is not None and type(e) is Function and not enter(e):
            continue
        for c in _children(e):
            if id(c) not in seen:
                seen.add(id(c))
                stack.append(c)


def relay_functions(mod):
    from ..relay.expr import Function

    return [(gv, f) for gv, f in mod.functions.items() if isinstance(f, Function)]


# ------------------------------------------------------------------------------- checkers
def stale_functions(mod) -> list:
    """Global functions whose types are missing (new or rewritten since the last InferType)."""
    return [gv for gv, f in relay_functions(mod)
            if f._checked_type is None or f.body._checked_type is None]


def check_property(prop: str, mod, deep: bool = False) -> str | None:
    """None when ``prop`` holds on ``mod``, else a sentence saying where it fails."""
    from ..ir.expr import GlobalVar
    from ..ir.op import Op
    from ..relay.adt import Constructor
    from ..relay.expr import Call, Constant, Function, Let, Var
    from ..relay.expr_functor import dataflow_children

    for gv, fn in relay_functions(mod):
        where = f"in @{gv.name_hint}"
        if prop == "typed":
            if fn.body._checked_type is None:
                return f"{where}: the function body has no type"
            if deep:
                for e in walk(fn):
                    if not isinstance(e, Op | Constructor) and e._checked_type is None:
                        return f"{where}: a {type(e).__name__} has no type"
        elif prop == "gnf":
            for e in walk(fn):
                if type(e) is Let:
                    return f"{where}: let %{e.var.name_hint} is a let binding"
        elif prop == "anf":
            atomic = (Var, GlobalVar, Constant, Op, Constructor)
            for e in walk(fn):
                kids = dataflow_children(e)
                if type(e) is Call:
                    kids = e.args if isinstance(e.op, (*atomic, Function)) else kids
                elif type(e).__name__ == "If":
                    kids = (e.cond,)
                for k in kids:
                    if not isinstance(k, atomic):
                        return f"{where}: a {type(k).__name__} operand of a " \
                               f"{type(e).__name__} is not let-bound"
        elif prop == "fused":
            def enter(f):
                return not (f.attrs and f.attrs.get("Primitive"))

            for e in walk(fn, enter):
                if type(e) is Call and isinstance(e.op, Op):
                    return f"{where}: {e.op.name} is called outside a Primitive function"
    return None


# ------------------------------------------------------------------------------- InferType
def _real_infer_type():
    from .registry import get_pass

    return get_pass("InferType")


class _IncrementalInferType(ModulePass):
    """The InferType the pass manager inserts: does nothing when no function is stale."""

    def __init__(self, real):
        super().__init__(None, real.info)
        self._real = real

    def _run(self, mod, ctx):
        stale = stale_functions(mod)
        if not stale:
            return mod
        return self._real._run(mod, ctx)  # InferType itself reports "type-checked functions"


def managed_pass(name: str):
    """The pass the manager runs for a required name (InferType is made incremental)."""
    from .registry import get_pass

    p = get_pass(name)
    if name == "InferType" and p.kind != "sequential":
        return _IncrementalInferType(p)
    return p


def infer_type_after(p, before, updated, ctx):
    """The InferType TVM runs after every function pass (visible to instruments)."""
    typed = _IncrementalInferType(_real_infer_type())
    result = typed(updated, ctx)
    if p.info.has_contracts or _KNOWN.get(before):
        record_properties(p, before, result, ctx, extra=("typed",))
    return result


# ------------------------------------------------------------------------------- contracts
def known_properties(mod) -> dict:
    return dict(_KNOWN.get(mod, {}))


def _verify_mode(ctx) -> bool:
    return bool(ctx.config.get("transform.verify_each"))


def ensure_properties(p, mod, ctx):
    """Make ``mod`` have every property ``p`` needs, re-establishing only stale ones."""
    info = p.info
    for prop in sorted(info.needs):
        known = _KNOWN.get(mod, {})
        promiser = known.get(prop)
        if promiser is not None:
            if _verify_mode(ctx):
                why = check_property(prop, mod, deep=True)
                if why:
                    raise PropertyError(f"pass {info.name!r} needs property {prop!r}, which "
                                        f"pass {promiser!r} promised but broke: {why}")
            continue
        if check_property(prop, mod) is None:
            _KNOWN[mod] = {**known, prop: "(checked)"}
            continue
        if prop == "fused":
            raise PropertyError(f"pass {info.name!r} needs a fused module; run FuseOps first")
        fixer = managed_pass(_ESTABLISHER[prop])
        mod = fixer(mod, ctx)
        why = check_property(prop, mod)
        if why:
            raise PropertyError(f"pass {info.name!r} needs property {prop!r}; "
                                f"{fixer.info.name} did not establish it: {why}")
        _KNOWN[mod] = {**_KNOWN.get(mod, {}), prop: fixer.info.name}
    return mod


def record_properties(p, before, after, ctx, extra=()) -> None:
    """Remember which properties hold on ``after`` and, in verify mode, check the promises."""
    info: PassInfo = p.info
    prev = _KNOWN.get(before, {})
    if after is before:
        now = dict(prev)
    else:
        now = {k: v for k, v in prev.items() if k in info.keeps}
    for prop in (*info.establishes, *extra):
        now[prop] = info.name
    for prop in info.breaks:
        now.pop(prop, None)
    if _verify_mode(ctx):
        for prop in sorted(set(now) & (info.establishes | info.keeps | set(extra))):
            why = check_property(prop, after, deep=True)
            if why:
                verb = "establish" if prop in info.establishes else "keep"
                raise PropertyError(f"pass {info.name!r} promised to {verb} property {prop!r} "
                                    f"but broke it: {why}")
    if now:
        try:
            _KNOWN[after] = now
        except TypeError:
            pass
