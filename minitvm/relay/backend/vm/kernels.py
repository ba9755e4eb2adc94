"""Primitive (fused) functions of a Relay VM program to kernels.

A function whose tensors all have static shapes is lowered once by the te_compiler (native code,
or its numpy fallback). One with ``Any`` dimensions becomes one native kernel over symbolic sizes
that serves every shape (``symbolic``) where its ops lower so; otherwise it is a
*shape-specializing* kernel: at each call it binds the concrete input shapes, re-infers types and lowers that specialization natively,
cached per shape signature (falling back to the ops' numpy references, with a warning, when that
fails; a strict build raises instead).
Structurally equal functions share one kernel.
"""

from __future__ import annotations

import logging

import numpy as np

from ....backend.fallback import report_fallback
from ....ir.attrs import DictAttrs
from ....ir.diagnostics import RelayTypeError
from ....ir.module import IRModule
from ....ir.op import Op
from ....ir.structural import structural_equal
from ....ir.type import TensorType, TupleType
from ....runtime import threadpool
from ....runtime.module import Kernel
from ....runtime.ndarray import contiguous
from ....runtime.vm.vm import call_native
from ....schedule import LoweringError, LoweringOptions
from ...expr import Call, Constant, Function, Tuple, TupleGetItem, Var, bind, const
from ...expr_functor import dataflow_post_order
from ...transform.dynamic_to_static import dynamic_to_static, shape_arguments
from ..te_compiler import fallback_runner, func_ops, lower_function, tensor_types
from .bound_call import BindingCache, BoundCall
from .symbolic import lower_symbolic, packed_weight

LOG = logging.getLogger(__name__)

__all__ = ["SPECIALIZED_FORMAT", "KernelTable", "dynamic_kernel_counts", "is_static_type",
           "same_primitive"]

# the saved format of a shape-specializing kernel (``specialized``: read back as one)
SPECIALIZED_FORMAT = "relay_specialized"


def is_static_type(t) -> bool:
    """Are all dimensions of every tensor in ``t`` known integers?"""
    try:
        for tt in tensor_types(t):
            for d in tt.shape:
                int(getattr(d, "value", d))
    except (TypeError, ValueError, AttributeError, Exception):  # noqa: BLE001  Any, symbolic
        return False
    return True


def _rebuild_type(t, shapes: list, pos: int):
    """The type ``t`` with its tensors' shapes taken from ``shapes`` (in flattened order)."""
    if isinstance(t, TupleType):
        fields = []
        for f in t.fields:
            nt, pos = _rebuild_type(f, shapes, pos)
            fields.append(nt)
        return TupleType(fields), pos
    return TensorType(shapes[pos], t.dtype), pos + 1


_MAX_SHAPE_VALUES = 16  # (a shape argument is a handful of sizes; larger tensors are data)


def shape_value_inputs(func: Function) -> tuple[int, ...]:
    """Positions of ``func``'s parameters that a ``dyn.*`` op reads as a shape (a
    ``dyn.reshape``'s new shape, possibly through a concatenate of them), each a small static
    tensor: their values decide the output's shape, so a specialization binds them. Float ones
    count too (``dyn.image.resize2d``'s roi, a constant the VM passes in: bound, the resize is
    static and native rather than numpy)."""
    params = {p: i for i, p in enumerate(func.params)}
    found, seen = set(), set()
    stack = [a for e in dataflow_post_order(func.body) if isinstance(e, Call)
             for a in shape_arguments(e)]
    while stack:  # (iterative: a long shape computation does not recurse)
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Var) and e in params:
            found.add(params[e])
        elif isinstance(e, Call):
            stack.extend(e.args)
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)

    def small(i: int) -> bool:
        t = func.params[i].checked_type
        return isinstance(t, TensorType) and is_static_type(t) and \
            np.dtype(t.dtype).kind in "iuf" and \
            int(np.prod([int(d) for d in t.shape])) <= _MAX_SHAPE_VALUES

    return tuple(sorted(i for i in found if small(i)))


class ShapeSpecializer:
    """``run(args)`` for a primitive function with dynamic shapes: compile per input shapes
    (and per value of the small integer inputs a ``dyn.*`` op reads as a shape: a fused
    ``dyn.reshape`` becomes a static reshape, ``shape_value_inputs``)."""

    def __init__(self, func: Function, name: str, options: LoweringOptions,
                 const_inputs: frozenset = frozenset()):
        self.func = func
        self.name = name
        self.options = options
        self.const_inputs = const_inputs  # input positions that always receive constants
        self.value_inputs = shape_value_inputs(func)
        # (the VM passes a tuple parameter's fields as separate arrays: each value input's
        # position among the flattened arguments)
        flat = np.cumsum([0] + [len(tensor_types(p.checked_type)) for p in func.params])
        self.value_args = tuple(int(flat[i]) for i in self.value_inputs)
        self.cache: dict[tuple, tuple] = {}
        # (shape key, position, id of the constant) -> (the constant, its transformed copy): a
        # specialization that takes a weight in another layout (``Kernel.input_packs``)
        self._packs: dict[tuple, tuple] = {}
        self._fallback = None  # the numpy run, made at the first call that needs it
        self._bindings = BindingCache()  # (call sites of equal inputs share a binding)

    def _specialize(self, shapes: list, values: tuple = ()) -> tuple:
        pos, params = 0, []
        for p in self.func.params:
            t, pos = _rebuild_type(p.checked_type, shapes, pos)
            params.append(Var(p.name_hint, t))
        binds = dict(zip(self.func.params, params))
        for i, v in zip(self.value_inputs, values, strict=True):  # (the shapes' values)
            binds[self.func.params[i]] = const(v, str(v.dtype))
        body = bind(self.func.body, binds)
        from ...transform import InferType

        if values:  # (a dyn.reshape of bound sizes: a static reshape)
            body = InferType()(IRModule.from_expr(Function(params, body)))["main"].body
            body = dynamic_to_static(body)

        spec = InferType()(IRModule.from_expr(Function(params, body)))["main"]
        spec = Function(spec.params, spec.body, spec.ret_type,
                        attrs=DictAttrs({"Primitive": 1}))
        spec._checked_type = None
        spec = InferType()(IRModule.from_expr(spec))["main"]
        if not is_static_type(spec.body.checked_type):
            return None, None  # the output's shape depends on values (arange): numpy, by design
        kernel = lower_function(spec, f"{self.name}_{len(self.cache)}", self.options,
                                self.const_inputs)
        outs = tensor_types(spec.body.checked_type)
        return kernel, [(tuple(int(getattr(d, "value", d)) for d in t.shape), t.dtype)
                        for t in outs]

    def _entry(self, args: list) -> tuple:
        """``(key, kernel, output (shape, dtype)s)`` for ``args``: the specialization for
        their shapes, made at the first call with them; kernel None: the numpy references."""
        key = tuple((a.shape, a.dtype) for a in args)  # (str(dtype) costs a microsecond)
        values = tuple(tuple(np.asarray(args[i]).reshape(-1).tolist())
                       for i in self.value_args)
        if values:
            key = (key, values)
        entry = self.cache.get(key)
        if entry is None:
            try:
                entry = self._specialize([a.shape for a in args],
                                         tuple(np.asarray(args[i]) for i in self.value_args))
            except RelayTypeError as err:  # (the inputs do not fit the function: no fallback)
                raise ValueError(f"{self.name}: input shapes {[a.shape for a in args]} do not "
                                 f"fit the function's types: {err}") from None
            except (ValueError, TypeError, NotImplementedError, KeyError) as err:
                report_fallback(f"{self.name} at shapes {[a.shape for a in args]}",
                                func_ops(self.func), f"{type(err).__name__}: {err}",
                                self.options.strict_native)
                entry = (None, None)  # the ops' numpy references run it
            self.cache[key] = entry
        return (key, *entry)

    def native_call(self, args: list) -> tuple | None:
        """``(kernel, inputs, outputs, vars)`` of the native call that runs ``args`` (inputs
        with their weights packed, fresh outputs; vars None: the kernel takes none), or None
        when numpy runs them: the Relay VM's native entry records the call
        (``runtime.vm.native_entry``)."""
        key, kernel, outs = self._entry(args)
        if kernel is None or kernel.kind != "native":
            return None
        ins = self._packed_inputs(key, kernel, args)
        return kernel, ins, [np.empty(s, dtype=d) for s, d in outs], None

    def _packed_inputs(self, key, kernel, args: list) -> list:
        ins = [contiguous(a) for a in args]
        for pos, transform in kernel.input_packs.items():
            pk = (key, pos, id(args[pos]))
            held = self._packs.get(pk)
            if held is None or held[0] is not args[pos]:
                held = self._packs[pk] = (args[pos], packed_weight(transform, ins[pos]))
            ins[pos] = held[1]
        return ins

    def bind(self, args: list) -> BoundCall | None:
        """The native call of ``args``'s specialization bound to their shapes, for a call site
        that repeats them (``BoundCall``); None when numpy runs them, the kernel needs a
        workspace, or the function reads input values as a shape (a binding checks shapes
        only, and those values pick the specialization: ``shape_value_inputs``)."""
        if self.value_inputs:
            return None
        key, kernel, outs = self._entry(args)
        if kernel is None or kernel.kind != "native" or kernel.ws_bytes:
            return None
        ins = self._packed_inputs(key, kernel, args)
        packs = [(pos, args[pos], ins[pos]) for pos in kernel.input_packs]
        return self._bindings.bind(args, packs, kernel.consts, outs,
                                   getattr(kernel.kernel, "_fast_call", None), kernel.address)

    def __call__(self, args: list) -> list:
        got = self.native_call(args)
        if got is None:
            _, kernel, _ = self._entry(args)
            if kernel is None:
                if self._fallback is None:
                    self._fallback = fallback_runner(self.func)
                return self._fallback(args)
            return kernel.run(list(args) + list(kernel.consts))
        kernel, ins, outputs, _ = got
        fast = getattr(kernel.kernel, "_fast_call", None) if not kernel.ws_bytes else None
        if fast is not None:  # compiled for exactly these shapes and dtypes: no checks needed
            fast((*ins, *kernel.consts, *outputs), threadpool.get_num_threads())
            return outputs
        return call_native(kernel, ins, outputs)


def _attrs_equal(a, b) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    try:
        da, db = dict(a.items()), dict(b.items())
        if all(isinstance(v, int | str | float) for v in (*da.values(), *db.values())):
            return da == db
    except (AttributeError, TypeError):
        pass
    return structural_equal(a, b)


def _order(func: Function) -> tuple[list, dict]:
    order = dataflow_post_order(func.body)
    return order, {id(e): k for k, e in enumerate(order)}


def _type_key(t):
    """A cheap hashable stand-in for a type (printing types is slow)."""
    if isinstance(t, TensorType):
        return (tuple(d if isinstance(d, int) else
                      (d.value if isinstance(getattr(d, "value", None), int) else str(d))
                      for d in t.shape), t.dtype)
    return str(t)


def same_primitive(f: Function, g: Function, fo=None, go=None) -> bool:
    """Structural equality of two primitive functions whose parameter and result types are
    known equal (``KernelTable``'s key), in one linear walk of each body (the general
    ``structural_equal`` is much slower, and a long program has one fused function per operation
    to compare). ``fo``/``go``: their ``_order`` when already computed. Anything unusual defers
    to ``structural_equal``."""
    if len(f.params) != len(g.params) or not _attrs_equal(f.attrs, g.attrs):
        return False
    fo, fi = fo if fo is not None else _order(f)
    go, gi = go if go is not None else _order(g)
    if len(fo) != len(go):
        return False
    fp = {id(p): k for k, p in enumerate(f.params)}
    gp = {id(p): k for k, p in enumerate(g.params)}
    for a, b in zip(fo, go):
        if a is b and not isinstance(a, Var):  # a node both share (a constant)
            continue
        if type(a) is not type(b):
            return False
        if isinstance(a, Var):
            if id(a) not in fp or fp[id(a)] != gp.get(id(b)):
                return False
        elif isinstance(a, Constant):
            x, y = a.data.numpy(), b.data.numpy()
            if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y):
                return False
        elif isinstance(a, Call):
            if not isinstance(a.op, Op) or a.op is not b.op or len(a.args) != len(b.args):
                return structural_equal(f, g)
            if [fi[id(x)] for x in a.args] != [gi[id(y)] for y in b.args]:
                return False
            if not _attrs_equal(a.attrs, b.attrs):
                return False
            if _type_key(a.checked_type) != _type_key(b.checked_type):
                return False
        elif isinstance(a, Tuple):
            if [fi[id(x)] for x in a.fields] != [gi[id(y)] for y in b.fields]:
                return False
        elif isinstance(a, TupleGetItem):
            if a.index != b.index or fi[id(a.tuple_value)] != gi[id(b.tuple_value)]:
                return False
        else:
            return structural_equal(f, g)
    return True


class KernelTable:
    """The kernels of one executable, indexed as ``InvokePacked`` refers to them."""

    def __init__(self, options: LoweringOptions, store=None):
        self.options = options
        self.store = store  # the build's ``saved.RecordStore`` of symbolic kernels, or None
        self.kernels: list[Kernel] = []
        self._buckets: dict[tuple, list] = {}
        self._names: dict[str, int] = {}
        # (id of a function indexed before, const_inputs) -> (the function, its index): a
        # program calling one function object at many sites looks it up once
        self._by_id: dict[tuple, tuple] = {}
        # how each distinct kernel runs: static, one symbolic kernel for every size, or
        # specialized (compiled at the first call of each input shape)
        self.stats = {"static": 0, "symbolic": 0, "specialized": 0}

    def _dynamic(self, func: Function, name: str, const_inputs: frozenset) -> Kernel:
        """The kernel of a function with ``Any`` dimensions: one symbolic native kernel when
        every op lowers so, else a ``ShapeSpecializer`` (logged at debug level, with why)."""
        try:
            kernel = lower_symbolic(func, name, self.options, const_inputs, self.store)
            self.stats["symbolic"] += 1
            return kernel
        except (LoweringError, ValueError, TypeError, NotImplementedError, KeyError) as err:
            LOG.debug("%s (%s): specialized per shape: %s: %s", name,
                      ", ".join(func_ops(func)), type(err).__name__, err)
        self.stats["specialized"] += 1
        return Kernel(name, "fallback", reason="dynamic shapes: compiled per input shape",
                      source=func, source_format=SPECIALIZED_FORMAT,
                      run=ShapeSpecializer(func, name, self.options, const_inputs))

    def index(self, func: Function, const_inputs: frozenset = frozenset()) -> int:
        """The kernel index of primitive function ``func`` (lowering it the first time);
        ``const_inputs``: the input positions that receive constants (weights), which a kernel
        may take in another layout."""
        hit = self._by_id.get((id(func), const_inputs))
        if hit is not None and hit[0] is func:
            return hit[1]
        k = self._index(func, const_inputs)
        self._by_id[(id(func), const_inputs)] = (func, k)  # (held: its id stays its own)
        return k

    def _index(self, func: Function, const_inputs: frozenset) -> int:
        # a cheap key narrows the search; structural equality decides (hashing every fused
        # function of a long program costs more than comparing it with its bucket's members)
        order = _order(func)
        ops = tuple(e.op.name for e in order[0] if isinstance(e, Call) and isinstance(e.op, Op))
        h = (ops, tuple(_type_key(p.checked_type) for p in func.params),
             _type_key(func.body.checked_type), const_inputs)
        bucket = self._buckets.setdefault(h, [])
        for f, forder, k in bucket:
            if f is func or same_primitive(f, func, forder, order):
                return k
        name = self._fresh_name(func)
        static = all(is_static_type(p.checked_type) for p in func.params) and \
            is_static_type(func.body.checked_type)
        if static:
            kernel = lower_function(func, name, self.options, const_inputs)
            self.stats["static"] += 1
        else:
            kernel = self._dynamic(func, name, const_inputs)
        self.kernels.append(kernel)
        bucket.append((func, order, len(self.kernels) - 1))
        return len(self.kernels) - 1

    def _fresh_name(self, func: Function) -> str:
        ops = func_ops(func)
        base = "vm_mod_fused_" + "_".join(o.replace(".", "_") for o in ops[:6])
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"



def dynamic_kernel_counts(kernels: list) -> dict:
    """How many of ``kernels`` (an executable's) with dynamic shapes are one symbolic kernel
    for every size, and how many compile per input shape (``ShapeSpecializer``)."""
    from .symbolic import SymbolicKernel

    runs = [getattr(k, "run", None) for k in kernels]
    return {"symbolic": sum(isinstance(r, SymbolicKernel) for r in runs),
            "specialized": sum(isinstance(r, ShapeSpecializer) for r in runs)}
