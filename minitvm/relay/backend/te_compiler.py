"""Relay's half of lowering: a fused primitive function to tensor expressions (each op's
``FTECompute``, from topi), handed to the shared back end (``minitvm.backend``) for scheduling
and code generation.

``lower_function(func, name, options)`` returns a ``runtime.Kernel``: native when every op has a
compute and the schedule succeeds, otherwise a numpy fallback that runs the function op by op
through each op's FNumpy reference (so every model builds and runs; a failed native lowering
warns, or raises in a strict build, ``backend.fallback``). Kernels go through the
shared kernel cache, keyed by the function's structural hash and the lowering options.
"""

from __future__ import annotations

import numpy as np

from ... import te
from ...backend.compile import compile_te
from ...backend.fallback import report_fallback
from ...backend.kernel_cache import STATS, cached_kernel, clear_cache  # noqa: F401
from ...backend.options import lowering_options
from ...backend.parallel_compile import run_sharded
from ...ir.module import IRModule
from ...ir.op import Op
from ...ir.structural import structural_equal, structural_hash
from ...ir.type import TensorType, TupleType
from ...runtime.module import Kernel, register_kernel_format
from ...runtime.ndarray import contiguous
from ...runtime.object import Object
from ...runtime.registry import get_global_func, register_func
from ...schedule import LoweringError, LoweringOptions
from ...tir import expr as E
from ...topi.utils import out_dims, static_shape
from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from ..expr_functor import dataflow_post_order


class NumpyOnlyOp(LoweringError):
    """A primitive function calls an op registered as numpy-only (``TNumpyOnly``) or has
    symbolic shapes: its numpy kernel is the intended implementation, not a failure to report."""


def _static(t) -> tuple[int, ...]:
    try:
        return static_shape(t)
    except ValueError as err:  # symbolic dims: numpy runs it, by design (not a failure)
        raise NumpyOnlyOp(str(err)) from None


def tensor_types(t) -> list[TensorType]:
    """The tensors of a type: itself, or the (flattened) fields of a tuple type."""
    out, stack = [], [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TupleType):
            stack.extend(reversed(x.fields))
        elif isinstance(x, TensorType):
            out.append(x)
        else:
            raise LoweringError(f"unsupported type {x} in a primitive function")
    return out


def func_ops(func: Function) -> list[str]:
    """Names of the ops called in a primitive function, in evaluation order."""
    return [e.op.name for e in dataflow_post_order(func.body)
            if isinstance(e, Call) and isinstance(e.op, Op)]


def _const_expr(c: Constant):
    arr = c.data.numpy()
    dt = str(arr.dtype)
    v = arr.reshape(()).item()
    if dt == "bool":
        return E.IntImm("bool", int(v))
    return E.const(v, dt)


def _constant_fn(val):
    return lambda: val


def _symbolic(t) -> tuple:
    """The shape of a TensorType whose dims may be ``tir`` expressions (not ``Any``)."""
    try:
        return out_dims(t)
    except ValueError as err:
        raise LoweringError(f"a dimension of {t} is unknown") from err


def build_te(func: Function, compute_of=None, symbolic: bool = False):
    """TE placeholders, extra constant inputs (with values) and outputs of ``func``;
    ``compute_of(call)`` (optional) chooses each op call's compute instead of its FTECompute.
    ``symbolic``: the parameters' shapes may hold ``tir`` variables (``vm.symbolic``)."""
    inputs, consts, env = [], [], {}
    shape_of = _symbolic if symbolic else _static
    for p in func.params:
        phs = []
        for t in tensor_types(p.checked_type):
            phs.append(te.placeholder(shape_of(t), t.dtype, f"p{len(inputs) + len(phs)}"))
        inputs.extend(phs)
        env[id(p)] = phs
    for e in dataflow_post_order(func.body):
        if id(e) in env:
            continue
        if isinstance(e, Var):
            raise LoweringError(f"free variable {e.name_hint} in a primitive function")
        if isinstance(e, Constant):
            arr = e.data.numpy()
            if arr.ndim == 0 and not symbolic:
                val = _const_expr(e)
                env[id(e)] = [te.compute((), _constant_fn(val), name="const")]
            else:
                ph = te.placeholder(arr.shape, str(arr.dtype), f"c{len(consts)}")
                consts.append((ph, contiguous(arr)))
                env[id(e)] = [ph]
        elif isinstance(e, Tuple):
            env[id(e)] = [t for f in e.fields for t in env[id(f)]]
        elif isinstance(e, TupleGetItem):
            env[id(e)] = [env[id(e.tuple_value)][e.index]]
        elif isinstance(e, Call) and isinstance(e.op, Op):
            fcompute = e.op.get_attr("FTECompute") if compute_of is None else compute_of(e)
            if fcompute is None:
                why = e.op.get_attr("TNumpyOnly")
                if why:
                    raise NumpyOnlyOp(f"operator {e.op.name} runs in numpy: {why}")
                raise LoweringError(f"operator {e.op.name} has no compute (FTECompute)")
            args = [t for a in e.args for t in env[id(a)]]
            try:
                outs = fcompute(e.attrs, args, e.checked_type)
            except (ValueError, TypeError, NotImplementedError, KeyError) as err:
                raise LoweringError(f"{e.op.name}: {err}") from err
            env[id(e)] = list(outs)
        else:
            raise LoweringError(f"{type(e).__name__} is not supported in a primitive function")
    outputs = env[id(func.body)]
    return inputs, consts, outputs


def _fallback(func: Function, name: str, reason: str, error: str = "") -> Kernel:
    """A kernel running ``func`` op by op in numpy; ``error``: the native lowering's failure."""
    return Kernel(name, "fallback", reason=reason, source=func, source_format="relay",
                  run=fallback_runner(func), error=error)


def _report(kernel: Kernel, func: Function, options: LoweringOptions) -> Kernel:
    """``kernel``, after warning (or raising, strict) when it fell back because lowering failed."""
    if kernel.kind == "fallback" and kernel.error:
        report_fallback(kernel.name, func_ops(func), kernel.error, options.strict_native)
    return kernel


def lower_function(func: Function, name: str = "main", options: LoweringOptions | None = None,
                   const_inputs: frozenset = frozenset(), shash: int | None = None) -> Kernel:
    """Lower one primitive function (through the shared kernel cache).

    ``const_inputs``: flat input positions that receive constants (weights); the kernel may ask
    for them in another layout (``Kernel.input_packs``: position -> numpy transform).
    ``shash``: ``structural_hash(func)`` when the caller has it already.
    """
    options = options if options is not None else LoweringOptions()
    return _report(_lower_cached(func, name, options, const_inputs, shash), func, options)


def _lower_cached(func: Function, name: str, options: LoweringOptions, const_inputs: frozenset,
                  shash: int | None) -> Kernel:
    """``lower_function`` without reporting a fallback (a parallel prefetch leaves that to the
    sequential lowering after it)."""
    tensor_types(func.body.checked_type)  # a clear error for non-tensor outputs
    if func.attrs is not None and func.attrs.get("Compiler") is not None:
        from .contrib import lower_external  # partitioned for an external codegen (BYOC)

        return lower_external(func, name)
    if not options.native:
        return _fallback(func, name, "native lowering disabled")
    users = user_strategies(func)
    target = _current_target() if users else None
    key = (structural_hash(func) if shash is None else shash, options, const_inputs,
           (str(target), tuple((n, _Identity(f)) for n, f in users)) if users else None)
    return cached_kernel(key, func, name, structural_equal,
                         lambda: _lower_native(func, name, options, const_inputs, target))


class _Identity:
    """Keys a cache on an object's identity and keeps it alive (an ``id()`` alone could be
    reused by a later strategy once the first one is freed)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, _Identity) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def _current_target():
    from ...target import Target

    target = Target.current(allow_none=True)
    return target if target is not None else Target("llvm")


def user_strategies(func: Function) -> list:
    """``(op name, FTVMStrategy)`` of the ops in ``func`` that carry a strategy: minitvm's ops
    have none of their own, so each one was registered by user code (``register_strategy``,
    ``TempOpAttr``) and decides the op's compute, as in TVM."""
    out, seen = [], set()
    for e in dataflow_post_order(func.body):
        if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name not in seen:
            seen.add(e.op.name)
            fstrategy = e.op.get_attr("FTVMStrategy")
            if fstrategy is not None:
                out.append((e.op.name, fstrategy))
    return out


def _strategy_compute_of(target):
    """``compute_of`` for ``build_te``: an op with a strategy computes with the implementation
    it selects for ``target``; the others with their FTECompute."""

    def compute_of(call: Call):
        op = call.op
        if op.get_attr("FTVMStrategy") is None:
            return op.get_attr("FTECompute")

        def fcompute(attrs, inputs, out_type):
            return select_implementation(op, attrs, inputs, out_type, target)[1]

        return fcompute

    return compute_of


def prefetch_kernels(funcs: list, options: LoweringOptions | None = None,
                     hashes: dict | None = None) -> int:
    """Lower ``funcs`` (``[(function, const_inputs)]``) in parallel worker processes
    (``backend.parallel_compile``) so that lowering them afterwards, one by one, loads their
    code from the on-disk cache. Returns the number of workers used (0: nothing to share).
    ``hashes``: id(function) -> its structural hash, where the caller computed them."""
    hashes = hashes or {}
    options = options if options is not None else LoweringOptions()
    tasks = [(f, c) for f, c in distinct_tasks(funcs, hashes)  # user strategies: here only
             if options.native and not (f.attrs is not None and f.attrs.get("Compiler"))
             and not user_strategies(f)]

    def group(task):  # structurally equal functions share a group (cheaper than hashing)
        f, c = task
        return (tuple(func_ops(f)), tuple(str(p.checked_type) for p in f.params),
                str(f.body.checked_type), c)

    return run_sharded(tasks, lambda t: _lower_cached(t[0], "prefetch", options, t[1],
                                                      hashes.get(id(t[0]))), group,
                       cost=lambda t: compile_cost(t[0]))


def distinct_tasks(funcs: list, hashes: dict) -> list:
    """``funcs`` (``[(function, const_inputs)]``) less the repeats: one per function object,
    and one per (structural hash, const_inputs) where ``hashes`` (id -> hash) knows it. The
    prefetch only fills the caches: an unrolled RNN's 300 calls of one cell need one lowering,
    not 300 cache look-ups that each confirm structural equality (a hash shared by unequal
    functions only leaves the second to the sequential lowering, which compiles it)."""
    seen: set = set()
    out = []
    for f, c in funcs:
        h = hashes.get(id(f))
        key = (id(f), c) if h is None else ("hash", h, c)
        if key not in seen:
            seen.add(key)
            out.append((f, c))
    return out


def compile_cost(func: Function) -> float:
    """A rough relative guess at how long ``func``'s kernel takes to compile, so that a parallel
    build probes with a cheap one: a convolution's schedule unrolls its window, a GEMM its
    register block."""
    cost = 1.0
    for e in dataflow_post_order(func.body):
        if not (isinstance(e, Call) and isinstance(e.op, Op)):
            continue
        if e.op.name.startswith("nn.conv") and len(e.args) > 1:
            try:
                window = 1
                for d in getattr(e.args[1].checked_type, "shape", ())[2:4]:
                    window *= int(d)
            except (TypeError, ValueError):  # a symbolic kernel size
                window = 9
            cost += 4.0 + window
        elif e.op.name in ("nn.dense", "nn.matmul", "nn.batch_matmul", "nn.contrib_dense_pack"):
            cost += 4.0
    return cost


def _lower_native(func, name, options, const_inputs=frozenset(), target=None) -> Kernel:
    """``target``: lower the ops that carry a user strategy with its selected compute."""
    try:
        for t in tensor_types(func.body.checked_type):
            _static(t)
        compute_of = _strategy_compute_of(target) if target is not None else None
        inputs, consts, outputs = build_te(func, compute_of)
        return compile_te(inputs, consts, outputs, name, options, const_inputs, source=func)
    except NumpyOnlyOp as err:
        return _fallback(func, name, str(err))
    except LoweringError as err:
        return _fallback(func, name, str(err), error=str(err))


# ------------------------------------------------------------------------------ numpy fallback
def _pack(t, flat: list, pos: int):
    if isinstance(t, TupleType):
        out = []
        for f in t.fields:
            v, pos = _pack(f, flat, pos)
            out.append(v)
        return tuple(out), pos
    return flat[pos], pos + 1


def fallback_runner(func: Function):
    """``run_fallback`` of ``func`` as a function of ``args``, the expressions' order found at
    its first call and kept (a dynamic-shape kernel runs in numpy on every call)."""
    order: list = []

    def run(args: list) -> list[np.ndarray]:
        if not order:
            order.extend(dataflow_post_order(func.body))
        return run_fallback(func, args, order)

    return run


def run_fallback(func: Function, args: list, order: list | None = None) -> list[np.ndarray]:
    """Evaluate a primitive function with the ops' numpy references.

    ``args`` are the flattened tensors of the parameters; returns the flattened outputs.
    ``order``: ``func``'s body in dataflow post-order, when the caller keeps it.
    """
    env, pos = {}, 0
    for p in func.params:
        env[id(p)], pos = _pack(p.checked_type, args, pos)
    for e in order if order is not None else dataflow_post_order(func.body):
        if id(e) in env:
            continue
        if isinstance(e, Constant):
            env[id(e)] = e.data.numpy()
        elif isinstance(e, Tuple):
            env[id(e)] = tuple(env[id(f)] for f in e.fields)
        elif isinstance(e, TupleGetItem):
            env[id(e)] = env[id(e.tuple_value)][e.index]
        elif isinstance(e, Call) and isinstance(e.op, Op):
            impl = e.op.get_attr("FNumpy")
            if impl is None:
                raise ValueError(f"operator {e.op.name} has neither a compute nor a numpy "
                                 "reference; it cannot run")
            out = impl(e.attrs, [env[id(a)] for a in e.args], e.checked_type)
            env[id(e)] = out
        else:
            raise ValueError(f"{type(e).__name__} cannot run in a primitive function")
    res = env[id(func.body)]
    flat, stack = [], [res]
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
        else:
            flat.append(np.asarray(x))
    return flat


# ------------------------------------------------------------------------------ saved kernels
def _kernel_text(func: Function) -> str:
    plain = Function(list(func.params), func.body, func.ret_type)
    return IRModule.from_expr(plain).astext(show_meta_data=True)


def _read_kernel(text: str):
    from ..parser import parse
    from ..transform import InferType

    func = InferType()(parse(text))["main"]
    return func, fallback_runner(func)


register_kernel_format("relay", _kernel_text, _read_kernel)


# ------------------------------------------------------------------------------ TVM's TECompiler
def get_valid_implementations(op: Op, attrs, inputs, out_type, target) -> list:
    """The implementations of ``op`` for ``target``: its ``FTVMStrategy``, else the default
    strategy (its FTECompute with the schedule rule table)."""
    from ...target import Target
    from ..op.strategy.generic import default_strategy

    fstrategy = op.get_attr("FTVMStrategy")
    if fstrategy is None:
        strategy = default_strategy(op.name)
    else:  # in the target's scope, so generic functions dispatch on its keys (as TVM)
        tgt = Target(target) if isinstance(target, str) else target
        if tgt is not None:
            with tgt:
                strategy = fstrategy(attrs, inputs, out_type, tgt)
        else:
            strategy = fstrategy(attrs, inputs, out_type, tgt)
    impls = strategy.implementations
    if not impls:
        raise LoweringError(f"the strategy of {op.name} has no implementation for {target}")
    return impls


def select_implementation(op: Op, attrs, inputs, out_type, target, use_autotvm: bool = True):
    """The highest-priority implementation of ``op`` and its outputs on ``inputs``:
    ``(implementation, [te.Tensor])``."""
    impls = get_valid_implementations(op, attrs, inputs, out_type, target)
    best = max(impls, key=lambda i: i.plevel)  # the first one wins a tie
    return best, best.compute(attrs, inputs, out_type)


class LoweredOutput(Object):
    """What lowering one op call gives: its output tensors and the implementation chosen."""

    __slots__ = ("outputs", "implement")

    def __init__(self, outputs, implement):
        self.outputs = list(outputs)
        self.implement = implement

    def __repr__(self):
        return f"LoweredOutput({getattr(self.implement, 'name', self.implement)}, " \
               f"{len(self.outputs)} outputs)"


def _int32_shape(ty):
    """A tensor type with its constant dimensions as int32 immediates (TVM's ``get_shape``);
    tuple types field by field."""
    if isinstance(ty, TensorType):
        dims = [E.IntImm("int32", int(d)) if isinstance(d, E.IntImm | int) else d
                for d in ty.shape]
        return TensorType(dims, ty.dtype)
    if isinstance(ty, TupleType):
        return TupleType([_int32_shape(f) if isinstance(f, TensorType) else f
                          for f in ty.fields])
    return ty


def lower_call(call: Call, inputs: list, target, otype=None) -> LoweredOutput:
    """Lower one op call to tensor expressions: choose the op's implementation for ``target``
    (the highest-priority one of its strategy) and apply it to the TE tensors ``inputs``.
    ``otype`` is the output type to lower for (default: the call's checked type, with int32
    dimensions)."""
    if not isinstance(call, Call) or not isinstance(call.op, Op):
        raise TypeError(f"lower_call takes a call of an operator, got "
                        f"{type(call).__name__}"
                        + (f" of {type(call.op).__name__}" if isinstance(call, Call) else ""))
    ret_type = otype if otype is not None else _int32_shape(call.checked_type)
    from ...target import Target

    tgt = Target(target) if isinstance(target, str) else target
    best, outputs = select_implementation(call.op, call.attrs, list(inputs), ret_type, tgt)
    return LoweredOutput(outputs, best)


register_func("relay.backend.lower_call", lower_call, override=True)


class CCacheKey(Object):
    """A key of the TE compiler's cache: a primitive function and the target to lower it for
    (``TECompiler.lower`` and ``jit`` take one in place of the function and target)."""

    __slots__ = ("source_func", "target")

    def __init__(self, source_func: Function, target):
        if not isinstance(source_func, Function):
            raise TypeError(f"CCacheKey: source_func must be a relay.Function, got "
                            f"{type(source_func).__name__}")
        from ...target import Target

        self.source_func = source_func
        self.target = Target(target) if isinstance(target, str) else target

    def __repr__(self):
        return f"CCacheKey({self.target})"


def _unpack_key(source_func, target):
    if isinstance(source_func, CCacheKey):
        return source_func.source_func, source_func.target
    return source_func, target


class CachedFunc(Object):
    """A lowered function: its PrimFunc (``funcs``, under ``prim_fn_var``), TE inputs and
    outputs, and the target."""

    __slots__ = ("target", "prim_fn_var", "inputs", "outputs", "funcs", "prim_func", "consts",
                 "source", "_kernel")

    def __init__(self, target, prim_fn_var, inputs, outputs, prim_func, consts, source):
        self.target = target
        self.prim_fn_var = prim_fn_var
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.prim_func = prim_func
        self.funcs = IRModule({prim_fn_var: prim_func})
        self.consts = consts
        self.source = source
        self._kernel = None

    def __repr__(self):
        return f"CachedFunc({self.prim_fn_var.name_hint}, target={self.target})"


def _static_te(t) -> tuple[int, ...]:
    return tuple(int(getattr(d, "value", d)) for d in t.shape)


def _ensure_typed(func: Function) -> Function:
    if func.body._checked_type is not None:
        return func
    from ..transform import InferType

    mod = InferType()(IRModule.from_expr(func))
    return mod["main"]


def _fused_name(func: Function, mod_name: str) -> str:
    ops = [n.replace(".", "_") for n in func_ops(func)]
    base = "fused_" + "_".join(ops) if ops else "fused_identity"
    return f"tvmgen_{mod_name}_{base}" if mod_name else base


class TECompiler:
    """Lowers Relay primitive functions to PrimFuncs (``lower``) and native code (``jit``),
    caching by structural equality and target."""

    def __init__(self):
        self._cache: list[tuple[Function, str, CachedFunc]] = []

    def _lookup(self, func: Function, target_key: str) -> CachedFunc | None:
        for f, t, cf in self._cache:
            if t == target_key and structural_equal(f, func):
                return cf
        return None

    def lower(self, source_func: Function, target=None, mod_name: str = "default") -> CachedFunc:
        """The PrimFunc of ``source_func`` for ``target`` (each op's compute chosen by
        ``select_implementation``)."""
        from ...ir.expr import GlobalVar
        from ...schedule import lower_te

        source_func, target = _unpack_key(source_func, target)
        if not isinstance(source_func, Function):
            raise TypeError(f"TECompiler.lower expects a relay.Function, got "
                            f"{type(source_func).__name__}")
        target = target if target is not None else "llvm"
        from ...target import Target

        key = str(Target(target))  # (one key for "llvm" and Target("llvm"))
        cached = self._lookup(source_func, key)
        if cached is not None:
            return cached
        func = _ensure_typed(source_func)
        for t in tensor_types(func.body.checked_type):
            _static(t)

        def compute_of(call):
            def fcompute(attrs, args, out_type):
                # through the global function, as TVM's TE compiler calls it
                lowered = get_global_func("relay.backend.lower_call")(call, args, target,
                                                                      out_type)
                return lowered.outputs

            return fcompute

        inputs, consts, outputs = build_te(func, compute_of)
        name = _fused_name(func, mod_name)
        prim, _ws = lower_te(list(inputs) + [c[0] for c in consts], outputs, name)
        cf = CachedFunc(target, GlobalVar(name), inputs, outputs, prim, consts, func)
        self._cache.append((source_func, key, cf))
        return cf

    def jit(self, source_func: Function, target=None):
        """A function running ``source_func`` natively, called as TVM's packed functions are:
        ``f(*inputs, *outputs)`` writes the outputs in place; ``f(*inputs)`` returns them (one
        NDArray, or a list for several)."""
        from ...runtime.ndarray import NDArray, array
        from ...runtime.vm.vm import call_native

        cf = self.lower(source_func, target)
        if cf._kernel is None:
            try:
                cf._kernel = compile_te(cf.inputs, cf.consts, cf.outputs,
                                        cf.prim_fn_var.name_hint, LoweringOptions(),
                                        source=cf.source)
            except LoweringError as err:
                error = "" if isinstance(err, NumpyOnlyOp) else str(err)
                cf._kernel = _fallback(cf.source, cf.prim_fn_var.name_hint, str(err), error)
            _report(cf._kernel, cf.source, lowering_options())
        kernel = cf._kernel
        out_types = tensor_types(cf.source.body.checked_type)

        n_in, n_out = len(cf.inputs), len(out_types)

        def run(*args):
            if len(args) not in (n_in, n_in + n_out):
                raise ValueError(f"{cf.prim_fn_var.name_hint} takes {n_in} input tensors (and "
                                 f"optionally its {n_out} outputs), got {len(args)}")
            arrays = [contiguous(a.numpy() if isinstance(a, NDArray) else a)
                      for a in args[:n_in]]
            for a, t in zip(arrays, cf.inputs):
                if a.shape != tuple(_static_te(t)) or str(a.dtype) != t.dtype:
                    raise ValueError(f"{cf.prim_fn_var.name_hint}: expected a {t.dtype} tensor "
                                     f"of shape {tuple(_static_te(t))}, got {a.dtype} {a.shape}")
            if kernel.kind == "native":
                outs = [np.empty(_static(t), t.dtype) for t in out_types]
                call_native(kernel, arrays, outs)
            else:
                outs = kernel.run(arrays)
            if len(args) == n_in:
                res = [array(o) for o in outs]
                return res[0] if len(res) == 1 else res
            for dst, o in zip(args[n_in:], outs):
                if isinstance(dst, NDArray):
                    dst.copyfrom(o)
                else:
                    np.copyto(dst, o)
            return None

        return run

    def clear(self) -> None:
        """Forget every lowered function."""
        self._cache.clear()

    def dump(self) -> str:
        """A listing of the cached functions: name, target and Relay source."""
        lines = []
        for _f, t, cf in self._cache:
            lines += [f"{cf.prim_fn_var.name_hint} (target={t})", str(cf.source), ""]
        return "\n".join(lines)

    def items(self) -> list[tuple[Function, CachedFunc]]:
        """The cached ``(function, lowered)`` pairs."""
        return [(f, cf) for f, _t, cf in self._cache]


_TE_COMPILER = TECompiler()


def get() -> TECompiler:
    """The process-wide TECompiler."""
    return _TE_COMPILER


def lower_to_primfunc(relay_func: Function, target=None):
    """The PrimFunc of a primitive Relay function."""
    return TECompiler().lower(relay_func, target).prim_func
