"""LegalizeOps (TVM's ``relax.transform.LegalizeOps``): every call of a Relax operator with a
legalization and known shapes becomes a ``call_tir`` of a PrimFunc built from topi computes.

The legalization of op ``relax.X`` is ``customize_legalize_map["relax.X"]`` when given, else the
op's ``FLegalize`` attribute; calls of ops without one, or whose argument or result shapes are
unknown, stay as they are (with a warning for the former when ``enable_warning``). PrimFuncs
are named after the op (``add``, ``add1``...) and an identical PrimFunc is reused.

Calls of one op with the same attributes on arguments of the same struct info lower to the same
PrimFunc: that lowering is cached, so a 100,000-binding function costs one topi build per
distinct call signature, not per binding.
"""

from __future__ import annotations

import warnings

from ....ir.op import Op
from ....ir.structural import structural_equal
from ....tir import expr as E
from ....tir.stmt_functor import post_order
from ....transform.decorators import module_pass
from ....transform.stats import record_stat
from ...expr import Call, Constant, Function, ShapeExpr, Tuple
from ...struct_info import PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo
from ..normalize import NormalizingMutator, is_normalized
from ..utils import has_relax_function, is_flat_value, iter_bindings, register
from .common import known_struct_info

__all__ = ["LegalizeOps", "legalize_module"]

#: Relax's own calling/closure ops: never legalized, never warned about (as in TVM)
_NO_WARNING = frozenset({
    "relax.call_tir", "relax.call_dps_packed", "relax.call_pure_packed", "relax.call_tir_inplace",
    "relax.call_tir_with_grad", "relax.invoke_closure", "relax.invoke_pure_closure",
    "relax.make_closure", "relax.null_value", "relax.shape_of", "relax.print", "relax.assert_op",
    "relax.call_builtin_with_ctx", "relax.call_inplace_packed", "relax.to_vdevice",
    "relax.stop_fusion",  # (a fusion barrier: FuseOps consumes it)
})
#: families of lowering-level ops (memory, VM builtins): not computations, never warned about
_NO_WARNING_PREFIXES = ("relax.builtin.", "relax.memory.", "relax.vm.")


def _prim_key(e) -> tuple:
    """A hashable key of a PrimExpr: its nodes in post-order, variables by identity."""
    if isinstance(e, E.IntImm):  # (a static dim: its own post-order)
        return ((e.dtype, e.value),)
    out = []
    for n in post_order(e):
        if isinstance(n, E.IntImm | E.FloatImm):
            out.append((n.dtype, n.value))
        elif isinstance(n, E.Var):
            out.append(id(n))
        else:
            out.append((type(n).__name__, getattr(n, "dtype", None)))
    return tuple(out)


def _scalar_value(e):
    """(dtype, value) of a 0-d Relax constant, else None."""
    if isinstance(e, Constant) and e.data.ndim == 0:
        v = e.data.numpy()
        return str(v.dtype), v.tobytes()
    return None


def _sinfo_key(sinfo):
    """A hashable key of a struct info, symbolic variables by identity (two different ``n``s
    must not share a lowering whose tir_vars refer to one of them); None when not cacheable."""
    if isinstance(sinfo, TensorStructInfo):
        if not isinstance(sinfo.shape, ShapeExpr):
            return None
        return ("T", sinfo.dtype, tuple(_prim_key(d) for d in sinfo.shape.values),
                id(sinfo.vdevice) if sinfo.vdevice is not None else None)
    if isinstance(sinfo, PrimStructInfo):
        return ("P", sinfo.dtype, None if sinfo.value is None else _prim_key(sinfo.value))
    if isinstance(sinfo, ShapeStructInfo):
        if sinfo.values is None:
            return None
        return ("S", tuple(_prim_key(v) for v in sinfo.values))
    if isinstance(sinfo, TupleStructInfo):
        fields = tuple(_sinfo_key(f) for f in sinfo.fields)
        return None if any(f is None for f in fields) else ("U", fields)
    return None


def _attrs_key(attrs):
    if attrs is None:
        return None
    try:
        return repr(attrs)
    except Exception:  # an attrs object without a printable form: no caching
        return object()


class _Legalizer(NormalizingMutator):
    def __init__(self, mod, cmap: dict, enable_warning: bool):
        super().__init__(mod)
        self.cmap = dict(cmap or {})
        self.enable_warning = enable_warning
        self.count = 0
        self.warned: set[str] = set()
        # (op, attrs, arg keys) -> (call_tir op, arg positions, out sinfo args, tir_vars)
        self.cache: dict = {}
        self.skeys: dict = {}  # id(struct info) -> (struct info, key)

    def has_work(self, func: Function) -> bool:
        """Whether visiting ``func`` could change it or warn: False for a normalized function
        whose bindings are all flat calls of Relax's own quiet ops (``call_tir``...), globals,
        externs or variables, or other flat values, with no legalization for any of those ops
        (a lowered 100,000-binding function, seen again, is then one scan, not a rebuild)."""
        seen: dict = {}  # op -> whether its calls need the visit
        for b in iter_bindings(func):
            v = b.value
            if not is_flat_value(v):
                return True
            if isinstance(v, Call) and isinstance(v.op, Op):
                op = v.op
                busy = seen.get(op)
                if busy is None:
                    name = op.name
                    quiet = name in _NO_WARNING or name.startswith(_NO_WARNING_PREFIXES)
                    busy = seen[op] = not quiet or self._lookup(op) is not None
                if busy:
                    return True
        return is_normalized(func) is not None

    def _lookup(self, op: Op):
        fn = self.cmap.get(op.name)
        return fn if fn is not None else op.get_attr("FLegalize")

    def visit_call_(self, op: Call):
        call = super().visit_call_(op)
        if not isinstance(call.op, Op):
            return call
        fn = self._lookup(call.op)
        if fn is None:
            name = call.op.name
            quiet = name in _NO_WARNING or name.startswith(_NO_WARNING_PREFIXES)
            if self.enable_warning and not quiet and name not in self.warned:
                self.warned.add(name)
                warnings.warn(f"LegalizeOps: no legalization function for {name}; its calls "
                              "are left as they are", stacklevel=2)
            return call
        self.builder_.normalize(call)
        # TVM's ``RequiresArgumentShapes`` (default true): shape conversions lower without them
        if call.op.get_attr("RequiresArgumentShapes") is not False and \
                not self._known_shapes(call):
            return call
        key = self._key(call)
        hit = self.cache.get(key) if key is not None else None
        if hit is not None:
            return self._reuse(call, hit)
        result = fn(self.builder_, call)
        if result is None or result is call:
            return call
        result = self.builder_.normalize(result)
        self.count += 1
        if key is not None and structural_equal(result._checked_type, call._checked_type):
            self._remember(key, call, result)
        return result

    # ------------------------------------------------------------------ the cache
    def _key(self, call: Call):
        if call.op.name in self.cmap:
            return None
        args = tuple(self._skey(a.struct_info) for a in call.args)
        out = self._skey(call.struct_info)
        if out is None or any(a is None for a in args):
            return None
        attrs = _attrs_key(call.attrs)
        if attrs is not None and not isinstance(attrs, str):
            return None
        # a scalar constant argument is folded into the PrimFunc (power(x, 3.0)): its value
        # is part of the lowering, so of the key
        values = tuple(_scalar_value(a) for a in call.args)
        return call.op, attrs, args, out, values

    def _facts(self, sinfo) -> tuple:
        """(sinfo, ``_sinfo_key``, known shapes) memoized by struct-info object: a call's
        result struct info is its binding variable's and the next calls' argument's, so each
        is looked at once, not three times. The object is kept alive with its facts so its id
        stays unique."""
        hit = self.skeys.get(id(sinfo))
        if hit is None:
            hit = (sinfo, _sinfo_key(sinfo), known_struct_info(sinfo))
            self.skeys[id(sinfo)] = hit
        return hit

    def _skey(self, sinfo):
        return self._facts(sinfo)[1]

    def _known_shapes(self, call: Call) -> bool:
        """``has_known_shapes(call)`` with each struct info's answer memoized."""
        if not self._facts(call.struct_info)[2]:
            return False
        return all(self._facts(a.struct_info)[2] for a in call.args)

    def _remember(self, key, call: Call, result) -> None:
        """Cache ``result`` when it is one call_tir whose tensor arguments are the call's own
        arguments (then only their positions are recorded)."""
        if not (isinstance(result, Call) and isinstance(result.op, Op)
                and result.op.name == "relax.call_tir" and isinstance(result.args[1], Tuple)):
            return
        if len({id(a) for a in call.args}) != len(call.args):
            return  # add(y, y): which y a field is cannot be told, add(y, w) must not reuse it
        positions = []
        for a in result.args[1].fields:
            pos = next((k for k, b in enumerate(call.args) if b is a), None)
            if pos is None:
                return
            positions.append(pos)
        folded = set(range(len(call.args))) - set(positions)
        if any(_scalar_value(call.args[k]) is None for k in folded):
            return  # an argument folded into the PrimFunc whose value is not in the key
        self.cache[key] = (result, positions)

    def _reuse(self, call: Call, hit):
        template, positions = hit
        args = Tuple([call.args[k] for k in positions])
        new = Call(template.op, [template.args[0], args, *template.args[2:]], template.attrs,
                   template.sinfo_args, call.span)
        self.count += 1
        # the template's result struct info with this call's own (equal, by the cache key)
        # object: no re-inference, and the binding keeps its variable
        new._checked_type = call._checked_type
        return new


def legalize_module(mod, customize_legalize_map=None, enable_warning: bool = True):
    """``mod`` with its Relax operator calls legalized (a new module; ``mod`` is unchanged)."""
    if not has_relax_function(mod):
        return mod
    mutator = _Legalizer(mod, customize_legalize_map, enable_warning)
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, Function) or not mutator.has_work(func):
            continue
        new = mutator.visit_expr(func)
        if new is not func:
            mutator.builder_.update_func(gv, new)
    if mutator.count:
        record_stat("calls legalized", mutator.count)
    return mutator.builder_.get()


@register("LegalizeOps")
def LegalizeOps(customize_legalize_map=None, enable_warning: bool = True):  # noqa: N802
    """Module pass (opt 0): lower Relax operator calls to ``call_tir`` of PrimFuncs.

    Parameters
    ----------
    customize_legalize_map : Optional[Dict[str, Callable[[BlockBuilder, Call], Expr]]]
        Legalizations used instead of the registered ones, by op name (``"relax.add"``).
    enable_warning : bool
        Warn once per op that has no legalization.
    """
    cmap = dict(customize_legalize_map or {})
    for k, v in cmap.items():
        if not isinstance(k, str) or not callable(v):
            raise TypeError("LegalizeOps: customize_legalize_map maps op names (str) to "
                            f"functions fn(bb, call) -> Expr, got {k!r}: {v!r}")

    def run(mod, ctx):
        return legalize_module(mod, cmap, enable_warning)

    return module_pass(run, opt_level=0, name="LegalizeOps")
