"""Device domains for PlanDevices: a union-find over the virtual devices of expressions.

A domain is first-order (one VirtualDevice, maybe partly unconstrained) or higher-order
(``fn(D1, ..., Dn): Dr`` for a value of function type). Unifying two domains joins their
virtual devices field by field; it fails where two fields are constrained differently. Also the
``on_device`` helpers the planner's phases share, and the iterative walks they run on.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.type import FuncType
from ...ir.virtual_device import VirtualDevice
from ..adt import Constructor, Match, pattern_vars
from ..expr import (
    Call,
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

UNCONSTRAINED = VirtualDevice()


class Domain:
    """A first-order (``args is None``) or higher-order (params..., result) device domain."""

    __slots__ = ("vd", "args", "up")

    def __init__(self, vd: VirtualDevice | None, args: tuple | None = None):
        self.vd = vd
        self.args = args
        self.up = None  # union-find parent; None at a root

    def __repr__(self):
        if self.args is None:
            return f"?{self.vd}?" if not self.vd.is_fully_unconstrained() else "?"
        return f"fn({', '.join(map(repr, self.args[:-1]))}):{self.args[-1]!r}"


def as_virtual_device(value) -> VirtualDevice:
    """A VirtualDevice from the value an attribute holds (VirtualDevice, Device, name, int)."""
    if value is None:
        return UNCONSTRAINED
    if isinstance(value, VirtualDevice):
        return value
    if isinstance(value, str):
        from ...runtime.ndarray import device

        return VirtualDevice(device(value))
    return VirtualDevice(value)


# ------------------------------------------------------------------ on_device / device_copy
def on_device_props(e):
    """``(body, virtual_device, constrain_result, constrain_body)`` of an on_device call."""
    if type(e) is Call and isinstance(e.op, Op) and e.op.name == "on_device":
        a = e.attrs
        return (e.args[0], as_virtual_device(getattr(a, "virtual_device", None)),
                bool(getattr(a, "constrain_result", False)),
                bool(getattr(a, "constrain_body", True)))
    return None


def device_copy_props(e):
    """``(body, src, dst)`` of a device_copy call."""
    if type(e) is Call and isinstance(e.op, Op) and e.op.name == "device_copy":
        a = e.attrs
        return (e.args[0], as_virtual_device(getattr(a, "src_virtual_device", None)),
                as_virtual_device(getattr(a, "dst_virtual_device", None)))
    return None


def make_on_device(body, vd, constrain_result: bool, constrain_body: bool):
    from ..op.annotation import on_device

    return on_device(body, vd, constrain_result=constrain_result, constrain_body=constrain_body)


def maybe_on_device(body, vd: VirtualDevice, constrain_result: bool, constrain_body: bool):
    """``body`` annotated with ``vd``, unless its device is already evident (a variable, an op,
    a constructor, a function) or ``vd`` says nothing; nested annotations are merged."""
    if vd.is_fully_unconstrained() or isinstance(body, Op | Constructor | GlobalVar | Var
                                                 | Function):
        return body
    props = on_device_props(body)
    if props is None:
        return make_on_device(body, vd, constrain_result, constrain_body)
    inner_body, inner, inner_result, inner_body_c = props
    if constrain_result and inner_body_c and inner != vd:
        raise ValueError(f"on_device: cannot constrain the result and the body of nested "
                         f"on_device calls to different virtual devices ({vd} and {inner})")
    if constrain_body and inner_result and inner != vd:
        raise ValueError(f"on_device: nested on_device calls constrain one expression to "
                         f"different virtual devices ({vd} and {inner})")
    chosen = vd if (inner_body_c or constrain_result) else inner
    return make_on_device(inner_body, chosen, constrain_result, inner_body_c)


def maybe_on_device_fixed(body, vd: VirtualDevice):
    return maybe_on_device(body, vd, True, True)


def call_lowered_parts(e):
    """``(global_var, arguments)`` of a ``call_lowered`` call, else None."""
    if type(e) is Call and isinstance(e.op, Op) and e.op.name == "call_lowered":
        if len(e.args) != 2 or not isinstance(e.args[0], GlobalVar) or \
                type(e.args[1]) is not Tuple:
            raise ValueError("call_lowered expects a GlobalVar and a Tuple of arguments")
        return e.args[0], list(e.args[1].fields)
    return None


def call_args(call: Call) -> list:
    """The arguments of a call, those of the lowered function for ``call_lowered``."""
    lowered = call_lowered_parts(call)
    return list(call.args) if lowered is None else lowered[1]


# ------------------------------------------------------------------ walks
def is_primitive(fn) -> bool:
    attrs = fn.attrs
    if not attrs:
        return False
    v = attrs.get("Primitive")
    return bool(getattr(v, "value", v)) if v is not None else False


def children(e) -> tuple:
    """The sub-expressions the planner walks into (not into primitive functions' bodies)."""
    t = type(e)
    if t is Call:
        op = e.op
        lowered = call_lowered_parts(e)
        if lowered is not None:  # the tuple of arguments is a calling convention, not a value
            return (lowered[0], *lowered[1])
        return tuple(e.args) if isinstance(op, Op | Constructor) else (op, *e.args)
    if t is Tuple:
        return tuple(e.fields)
    if t is TupleGetItem:
        return (e.tuple_value,)
    if t is Let:
        return (e.var, e.value, e.body)
    if t is Function:
        return () if is_primitive(e) else (*e.params, e.body)
    if t is If:
        return (e.cond, e.true_branch, e.false_branch)
    if t is RefCreate:
        return (e.value,)
    if t is RefRead:
        return (e.ref,)
    if t is RefWrite:
        return (e.ref, e.value)
    if t is Match:
        out = [e.data]
        for c in e.clauses:
            out.extend(pattern_vars(c.lhs))
            out.append(c.rhs)
        return tuple(out)
    return ()


def post_order(roots, seen: set) -> list:
    """Every node reachable from ``roots`` and not in ``seen``, children first (iterative)."""
    order, stack = [], [(r, False) for r in reversed(roots)]
    while stack:
        e, ready = stack.pop()
        if ready:
            order.append(e)
            continue
        if e in seen:
            continue
        seen.add(e)
        stack.append((e, True))
        stack.extend((c, False) for c in reversed(children(e)) if c not in seen)
    return order


def pre_order(root, seen: set):
    """Nodes reachable from ``root``, each after a user of it (iterative)."""
    stack = [root]
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        yield e
        stack.extend(c for c in reversed(children(e)) if c not in seen)


# ------------------------------------------------------------------ domains
class DeviceDomains:
    """The domain of every expression and call site, over one CompilationConfig."""

    def __init__(self, config, mod):
        self.config = config
        self.mod = mod
        self.exprs: dict = {}
        self.callees: dict = {}
        self.host = Domain(config.host_virtual_device)

    # construction
    def make(self, ty, vd: VirtualDevice) -> Domain:
        """A domain shaped like ``ty`` whose (innermost) result is on ``vd``."""
        if isinstance(ty, FuncType):
            args = [self.make(a, UNCONSTRAINED) for a in ty.arg_types]
            args.append(self.make(ty.ret_type, vd))
            return Domain(None, tuple(args))
        return Domain(vd)

    def free(self, ty) -> Domain:
        return self.make(ty, UNCONSTRAINED)

    def for_virtual_device(self, ty, vd: VirtualDevice) -> Domain:
        vd = self.config.canonical_virtual_device(vd)
        return self.free(ty) if vd.is_fully_unconstrained() else self.make(ty, vd)

    def type_of(self, e):
        t = e._checked_type
        if t is None and isinstance(e, GlobalVar) and e in self.mod.functions:
            fn = self.mod.functions[e]
            # a PrimFunc's Relay type is its GlobalVar's (its own is of the flattened form)
            t = fn._checked_type if isinstance(fn, Function) else (
                e.type_annotation if e.type_annotation is not None else e._checked_type)
        if t is None:
            raise ValueError(f"PlanDevices needs typed expressions (run InferType first); no "
                             f"type for {type(e).__name__} {str(e)[:200]}")
        return t

    def domain_for(self, e) -> Domain:
        d = self.exprs.get(e)
        if d is None:
            d = self.exprs[e] = self.free(self.type_of(e))
            return d
        return self.lookup(d)

    # union-find
    @staticmethod
    def lookup(d: Domain) -> Domain:
        up = d.up
        if up is None:  # a root, or one step below one (most lookups: 3 million on a 100k
            return d    # chain), without the path-compression loops
        if up.up is None:
            return up
        root = d
        while root.up is not None:
            root = root.up
        while d.up is not None and d.up is not root:
            d.up, d = root, d.up
        return root

    def _join(self, a: Domain, b: Domain) -> Domain | None:
        if a is b:
            return a
        if (a.args is None) != (b.args is None) or (
                a.args is not None and len(a.args) != len(b.args)):
            raise ValueError(f"PlanDevices: device domains {a!r} and {b!r} are of different "
                             f"kinds and cannot be unified")
        if a.args is None:
            if b.vd.is_fully_unconstrained():
                return a
            if a.vd.is_fully_unconstrained():
                return b
            if a.vd is b.vd:
                return a
            joined = VirtualDevice.join(a.vd, b.vd)
            if joined is None:
                return None
            return Domain(self.config.canonical_virtual_device(joined))
        args = []
        for x, y in zip(a.args, b.args, strict=True):
            j = self.unify(x, y)
            if j is None:
                return None
            args.append(j)
        return Domain(None, tuple(args))

    def unify(self, a: Domain, b: Domain) -> Domain | None:
        """The joined domain of ``a`` and ``b`` (now equivalent), or None if they conflict."""
        a, b = self.lookup(a), self.lookup(b)
        j = self._join(a, b)
        if j is None:
            return None
        if a is not j:
            a.up = j
        if b is not j:
            b.up = j
        return j

    def unify_collapsed(self, first: Domain, other: Domain) -> bool:
        """Unify first-order ``first`` with ``other``, every part of ``other`` if higher-order."""
        other = self.lookup(other)
        if other.args is None or self.lookup(first).args is not None:
            return self.unify(first, other) is not None
        return all(self.unify(sub, first) is not None for sub in other.args)

    def unify_exprs(self, lhs, rhs) -> None:
        """Unify the domains of two expressions (or an expression and a domain); a clear error
        names both when their devices conflict."""
        ld = self.domain_for(lhs)
        rd = rhs if isinstance(rhs, Domain) else self.domain_for(rhs)
        if self.unify(ld, rd) is None:
            raise ValueError(f"PlanDevices: incompatible virtual devices {self.lookup(ld)!r} and "
                             f"{self.lookup(rd)!r} for\n  {_short(lhs)}\nand\n  {_short(rhs)}")

    def unify_exprs_collapsed(self, first_order_expr, other) -> None:
        d = self.domain_for(first_order_expr)
        if not self.unify_collapsed(d, other):
            raise ValueError(f"PlanDevices: incompatible virtual devices {self.lookup(d)!r} and "
                             f"{self.lookup(other)!r} for\n  {_short(first_order_expr)}")

    # callees
    def domain_for_callee(self, call: Call) -> Domain:
        """The higher-order domain the callee of ``call`` has at this call site; primitive ops
        are device polymorphic (each call site gets its own)."""
        d = self.callees.get(call)
        if d is not None:
            return self.lookup(d)
        op = call.op
        lowered = call_lowered_parts(call)
        if lowered is not None:  # the lowered function's own domain (no polymorphism)
            return self.domain_for(lowered[0])
        props = on_device_props(call)
        copy = device_copy_props(call) if props is None else None
        if props is not None:
            body, vd, c_result, c_body = props
            t = self.type_of(body)
            arg = self.for_virtual_device(t, vd) if c_body else self.free(t)
            res = self.for_virtual_device(t, vd) if c_result else self.free(t)
            d = Domain(None, (arg, res))
        elif copy is not None:
            t = self.type_of(copy[0])
            d = Domain(None, (self.for_virtual_device(t, copy[1]),
                              self.for_virtual_device(t, copy[2])))
        elif isinstance(op, Op) and op.name == "vm.shape_of":
            d = Domain(None, (self.free(self.type_of(call.args[0])), self.host))
        elif isinstance(op, Op) and op.name == "memory.alloc_storage":
            # sizes on the host, the storage where its attribute says
            vd = as_virtual_device(getattr(call.attrs, "virtual_device", None))
            d = Domain(None, (*(self.host for _ in call.args),
                              self.for_virtual_device(self.type_of(call), vd)))
        elif isinstance(op, Op) and op.name == "memory.alloc_tensor":
            same = self.free(self.type_of(call))  # the tensor lives where its storage does
            d = Domain(None, (same, *(self.host for _ in call.args[1:]), same))
        elif isinstance(op, Op) and op.name == "vm.reshape_tensor":
            same = self.free(self.type_of(call))
            d = Domain(None, (same, self.host, same))
        elif isinstance(op, Op):
            same = Domain(UNCONSTRAINED)
            d = Domain(None, (same,) * (len(call.args) + 1))
        elif isinstance(op, Constructor):
            result = Domain(UNCONSTRAINED)
            params = []
            for t in op.inputs:
                p = self.free(t)
                self.unify_collapsed(result, p)
                params.append(p)
            d = Domain(None, (*params, result))
        else:
            return self.domain_for(op)
        self.callees[call] = d
        return d

    # defaulting
    def is_fully_constrained(self, d: Domain) -> bool:
        stack = [d]
        while stack:
            x = self.lookup(stack.pop())
            if x.args is None:
                if not x.vd.is_fully_constrained():
                    return False
            else:
                stack.extend(x.args)
        return True

    def set_default(self, d: Domain, vd: VirtualDevice) -> None:
        """Fill the unconstrained fields of every part of ``d`` from ``vd``."""
        stack = [d]
        while stack:
            x = self.lookup(stack.pop())
            if x.args is not None:
                stack.extend(x.args)
                continue
            if x.vd is vd:
                # a device defaulted from itself is itself: once the first call site takes the
                # config's interned default, every domain unified with it ends here, with no
                # new VirtualDevice made and compared (400,000 of them on a 100k ladder)
                continue
            filled = VirtualDevice.default(x.vd, vd)
            if filled == x.vd:
                continue
            filled = self.config.canonical_virtual_device(filled)
            if self.unify(x, Domain(filled)) is None:
                raise ValueError(f"PlanDevices: cannot default {x!r} to {vd}")

    def set_result_default_then_params(self, d: Domain, vd: VirtualDevice) -> None:
        d = self.lookup(d)
        if d.args is None:
            self.set_default(d, vd)
            return
        self.set_default(self.result_domain(d), vd)
        self.set_default(d, self.result_virtual_device(d))

    def result_domain(self, d: Domain) -> Domain:
        d = self.lookup(d)
        while d.args is not None:
            d = self.lookup(d.args[-1])
        return d

    def result_virtual_device(self, d: Domain) -> VirtualDevice:
        return self.result_domain(d).vd

    def param_domain(self, d: Domain, i: int) -> Domain:
        return self.lookup(self.lookup(d).args[i])


def _short(e, limit: int = 300) -> str:
    try:
        s = str(e)
    except Exception:  # the message must not hide the conflict
        s = type(e).__name__
    s = " ".join(s.split())
    return s if len(s) <= limit else s[:limit] + " ..."
