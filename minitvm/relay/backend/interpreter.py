"""The debug interpreter (``relay.create_executor("debug")``): runs any Relay program with numpy.

The evaluator is a loop over an explicit task stack with a separate value stack, never Python
recursion: dataflow chains, Let chains and calls (including recursion through GlobalVars and
closures, with proper tail calls) grow heap lists only. Each function activation has its own
environment and a memo table for sub-expressions its body uses more than once; a memoized value is
dropped after its last use, and single-use values are never stored. Operators run through their
``FNumpy`` implementation; tensors are numpy arrays inside and ``tvm.nd.NDArray`` outside.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import GlobalVar
from ...ir.gc_pause import gc_paused
from ...ir.op import Op
from ...ir.type import TensorType, TupleType
from ...runtime.ndarray import NDArray
from ..adt import Constructor, Match, PatternConstructor, PatternTuple, PatternVar
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
from .executor import Executor, check_args, convert_kwargs
from .values import ADT, Closure, ConstructorValue, RefValue, to_python_value

__all__ = [
    "Interpreter", "Executor", "InterpreterError", "Machine", "ConstructorValue", "RefValue",
    "Closure", "ADT", "type_str", "value_type",
]

# annotations planning leaves in a program: values pass through unchanged on the host
_DEVICE_IDENTITIES = frozenset({"on_device", "device_copy"})


class InterpreterError(RuntimeError):
    """An error while evaluating a Relay program; the message names the failing expression."""


# Task codes of the machine (ints: the dispatch loop compares them in order of frequency).
_EVAL, _CALL, _TUPLE, _GETITEM, _BIND, _IF, _MATCH, _MEMO, _RET, _REFNEW, _REFGET, _REFSET = (
    range(12)
)

# Expression kinds: leaves are evaluated on the spot; the others may be memoized.
_LEAF = {Var: 0, Constant: 1, Op: 2, GlobalVar: 3, Constructor: 4}
_MEMO_KINDS = (Call, Tuple, TupleGetItem, If, Let, Match, RefCreate, RefRead, RefWrite, Function)


def _children(e) -> tuple:
    """Sub-expressions evaluated in the same activation as ``e`` (nested functions excluded)."""
    t = type(e)
    if t is Call:
        return (e.op, *e.args)
    if t is Tuple:
        return e.fields
    if t is TupleGetItem:
        return (e.tuple_value,)
    if t is Let:
        return (e.value, e.body)
    if t is If:
        return (e.cond, e.true_branch, e.false_branch)
    if t is Match:
        return (e.data, *(c.rhs for c in e.clauses))
    if t is RefCreate:
        return (e.value,)
    if t is RefRead:
        return (e.ref,)
    if t is RefWrite:
        return (e.ref, e.value)
    return ()


def use_counts(body) -> dict:
    """How many parents reference each memoizable node of ``body`` (only counts above one)."""
    counts: dict = {}
    seen = {body}
    stack = [body]
    while stack:
        for c in _children(stack.pop()):
            if isinstance(c, _MEMO_KINDS):
                counts[c] = counts.get(c, 0) + 1
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return {k: n for k, n in counts.items() if n > 1}


# --------------------------------------------------------------------------- types of values
def _shape_str(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def type_str(t) -> str:
    """``Tensor[(1, 3), float32]``, written without the printer."""
    if isinstance(t, TensorType):
        return f"Tensor[{_shape_str(t.shape)}, {t.dtype}]"
    if isinstance(t, TupleType):
        return "(" + ", ".join(type_str(f) for f in t.fields) + ")"
    try:
        return str(t)
    except Exception:  # the printer may not exist yet
        return type(t).__name__


def value_type(v):
    """The Relay type of a tensor or tuple value (None for other values)."""
    if isinstance(v, np.ndarray | NDArray):
        return TensorType(v.shape, str(v.dtype))
    if isinstance(v, tuple):
        fields = [value_type(f) for f in v]
        return None if any(f is None for f in fields) else TupleType(fields)
    return None


_NP_DTYPES: dict = {}


def _np_dtype(name: str):
    d = _NP_DTYPES.get(name)
    if d is None:
        d = _NP_DTYPES[name] = np.dtype(name)
    return d


def _is_static(t) -> bool:
    if isinstance(t, TensorType):
        return all(type(d) is int for d in t.shape)
    if isinstance(t, TupleType):
        return all(_is_static(f) for f in t.fields)
    return False


def _is_dynamic(t) -> bool:
    """A tensor type (or a tuple of them) with a dimension not known statically."""
    if isinstance(t, TensorType):
        return not all(type(d) is int for d in t.shape)
    if isinstance(t, TupleType):
        return any(_is_dynamic(f) for f in t.fields)
    return False


# id -> (type, _is_static, _is_dynamic) of the types calls were checked with: a program's calls
# share a few type objects (types are immutable), so each is classified once, not per call
_TYPE_KINDS: dict[int, tuple] = {}
_TYPE_KINDS_MAX = 4096


def _type_kinds(t) -> tuple[bool, bool]:
    """``(_is_static(t), _is_dynamic(t))``, remembered per type object."""
    hit = _TYPE_KINDS.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1], hit[2]
    static, dynamic = _is_static(t), _is_dynamic(t)
    if len(_TYPE_KINDS) >= _TYPE_KINDS_MAX:
        _TYPE_KINDS.clear()
    _TYPE_KINDS[id(t)] = (t, static, dynamic)  # (the type kept: its id stays its own)
    return static, dynamic


def _np_arg(v):
    if type(v) is np.ndarray:
        return v
    if isinstance(v, NDArray):
        return v.numpy()
    if isinstance(v, tuple | list | ADT):
        return tuple(_np_arg(f) for f in v)
    if isinstance(v, np.generic | int | float | bool):
        return np.asarray(v)
    return v


def _describe_value(v) -> str:
    t = value_type(v)
    return type_str(t) if t is not None else type(v).__name__


def describe_call(call, args=None) -> str:
    """A short, one-line description of a call: ``nn.conv2d(Tensor[...], ...) {attrs}``."""
    op = call.op
    name = op.name if isinstance(op, Op) else getattr(op, "name_hint", type(op).__name__)
    if args is not None:
        inner = ", ".join(_describe_value(a) for a in args)
    else:
        inner = ", ".join(type(a).__name__ for a in call.args)
    text = f"{name}({inner})"
    if call.attrs is not None:
        try:
            items = dict(call.attrs.items())
            text += " " + ", ".join(f"{k}={v!r}" for k, v in items.items())
        except Exception:
            pass
    if all(a is not None for a in call.args):
        try:
            from ...ir.diagnostics import describe_expr

            text += f" [expression `{describe_expr(call)}`]"
        except Exception:  # diagnostics are optional here
            pass
    if call.span is not None:
        text += f" at {call.span}"
    return text


# --------------------------------------------------------------------------- the machine
class Machine:
    """Evaluates expressions of one IRModule; caches per-function analyses between runs."""

    def __init__(self, mod=None):
        self.mod = mod
        self._uses: dict = {}
        self._free: dict = {}
        self._globals: dict = {}
        self.peak_tasks = 0  # deepest task stack seen at a (non-tail) call, for diagnostics

    # ---- caches
    def _body_uses(self, body) -> dict:
        u = self._uses.get(body)
        if u is None:
            u = self._uses[body] = use_counts(body)
        return u

    def _free_vars(self, fn) -> tuple:
        fv = self._free.get(fn)
        if fv is None:  # every closure inside ``fn`` at once: per closure is quadratic
            from ..analysis.scoped_free_vars import free_vars_of_functions

            for f, vs in free_vars_of_functions(fn).items():
                self._free.setdefault(f, tuple(vs))
            fv = self._free[fn]
        return fv

    def global_closure(self, gv) -> Closure:
        c = self._globals.get(gv)
        if c is None:
            if self.mod is None or gv not in self.mod:
                raise InterpreterError(f"global function @{gv.name_hint} is not in the module")
            c = self._globals[gv] = Closure(self.mod[gv], {})
        return c

    # ---- entry points
    def eval_expr(self, expr, env: dict | None = None):
        """Evaluate ``expr`` with ``env`` (Var -> value) as the environment."""
        return self._run([(_RET, None), (_EVAL, expr)], [], dict(env or {}), expr)

    def call(self, fn_value, args: list):
        """Apply a function value (Closure, Constructor, Op) to already converted arguments."""
        return self._run([(_RET, None), (_CALL, Call(fn_value, [None] * len(args)))],
                         [fn_value, *args], {}, None)

    # ---- the loop
    @gc_paused  # (values are acyclic: full collections would only rescan the program)
    def _run(self, tasks: list, vals: list, env: dict, root):
        memo: dict = {}
        uses = self._body_uses(root) if root is not None else {}
        push, pop = tasks.append, tasks.pop
        vpush, vpop = vals.append, vals.pop
        while True:
            code, e = pop()
            if code == _EVAL:
                t = type(e)
                leaf = _LEAF.get(t)
                if leaf is not None:
                    vpush(self._leaf(leaf, e, env))
                    continue
                hit = memo.get(e)
                if hit is not None:
                    self._consume(memo, e, hit)
                    vpush(hit[0])
                    hit = None  # hold no reference: the value may be freed after its last use
                    continue
                if t is Call:
                    push((_CALL, e))
                    self._operands(e.op, e.args, env, memo, push, vpush)
                elif t is Let:
                    if e in uses:
                        push((_MEMO, e))
                    push((_BIND, e))
                    push((_EVAL, e.value))
                elif t is Tuple:
                    push((_TUPLE, e))
                    self._operands(None, e.fields, env, memo, push, vpush)
                elif t is TupleGetItem:
                    push((_GETITEM, e))
                    push((_EVAL, e.tuple_value))
                elif t is If:
                    if e in uses:
                        push((_MEMO, e))
                    push((_IF, e))
                    push((_EVAL, e.cond))
                elif t is Function:
                    v = self._make_closure(e, env)
                    self._finish(e, v, uses, memo)
                    vpush(v)
                elif t is Match:
                    if e in uses:
                        push((_MEMO, e))
                    push((_MATCH, e))
                    push((_EVAL, e.data))
                elif t is RefCreate:
                    push((_REFNEW, e))
                    push((_EVAL, e.value))
                elif t is RefRead:
                    push((_REFGET, e))
                    push((_EVAL, e.ref))
                elif t is RefWrite:
                    push((_REFSET, e))
                    self._operands(None, (e.ref, e.value), env, memo, push, vpush)
                else:
                    raise InterpreterError(f"cannot evaluate a {t.__name__}")
            elif code == _CALL:
                n = len(e.args)
                args = vals[len(vals) - n:]
                del vals[len(vals) - n:]
                fn = vpop()
                if type(fn) is Closure:
                    func = fn.func
                    if len(func.params) != n:
                        raise InterpreterError(
                            f"function with {len(func.params)} parameters called with {n} "
                            f"arguments: {describe_call(e, args)}")
                    if e in uses:
                        push((_MEMO, e))
                    if tasks[-1][0] != _RET:  # not a tail call: remember the caller
                        push((_RET, (env, memo, uses)))
                        if len(tasks) > self.peak_tasks:
                            self.peak_tasks = len(tasks)
                    env = dict(fn.env)
                    for p, a in zip(func.params, args):
                        env[p] = a
                    memo = {}
                    uses = self._body_uses(func.body)
                    push((_EVAL, func.body))
                    continue
                if isinstance(fn, Op):
                    v = self._apply_op(fn, e, args)
                elif isinstance(fn, Constructor):
                    v = ConstructorValue(fn.tag, args, fn)
                else:
                    raise InterpreterError(
                        f"cannot call a value of type {type(fn).__name__}: {describe_call(e)}")
                self._finish(e, v, uses, memo)
                vpush(v)
            elif code == _RET:
                if e is None:
                    return vpop()
                env, memo, uses = e
            elif code == _BIND:
                v = vpop()
                env[e.var] = v
                if type(v) is Closure and v.func is e.value and e.var in self._free_vars(v.func):
                    v.env[e.var] = v  # a recursive let-bound function sees itself
                push((_EVAL, e.body))
            elif code == _TUPLE:
                n = len(e.fields)
                v = tuple(vals[len(vals) - n:]) if n else ()
                del vals[len(vals) - n:]
                self._finish(e, v, uses, memo)
                vpush(v)
            elif code == _GETITEM:
                tup = vpop()
                try:
                    v = tup[e.index]
                except (IndexError, TypeError):
                    raise InterpreterError(
                        f"TupleGetItem index {e.index} on {_describe_value(tup)}") from None
                self._finish(e, v, uses, memo)
                vpush(v)
            elif code == _IF:
                c = vpop()
                push((_EVAL, e.true_branch if self._truth(c) else e.false_branch))
            elif code == _MEMO:
                memo[e] = [vals[-1], uses[e] - 1]
            elif code == _MATCH:
                data = vpop()
                for clause in e.clauses:
                    binds = _match(clause.lhs, data)
                    if binds is not None:
                        env.update(binds)
                        push((_EVAL, clause.rhs))
                        break
                else:
                    raise InterpreterError(
                        f"match failed: no clause matches {_describe_value(data)}")
            elif code == _REFNEW:
                v = RefValue(vpop())
                self._finish(e, v, uses, memo)
                vpush(v)
            elif code == _REFGET:
                ref = vpop()
                if not isinstance(ref, RefValue):
                    raise InterpreterError(f"RefRead of a {type(ref).__name__}, not a reference")
                v = ref.value
                self._finish(e, v, uses, memo)
                vpush(v)
            else:  # _REFSET
                new = vpop()
                ref = vpop()
                if not isinstance(ref, RefValue):
                    raise InterpreterError(f"RefWrite to a {type(ref).__name__}, not a reference")
                ref.value = new
                self._finish(e, (), uses, memo)
                vpush(())

    # ---- helpers of the loop
    @staticmethod
    def _finish(e, v, uses, memo):
        n = uses.get(e)
        if n is not None:
            memo[e] = [v, n - 1]

    @staticmethod
    def _consume(memo, e, hit):
        hit[1] -= 1
        if hit[1] <= 0:
            del memo[e]

    def _leaf(self, kind: int, e, env):
        if kind == 0:
            try:
                return env[e]
            except KeyError:
                raise InterpreterError(
                    f"variable %{e.name_hint} is not bound (a free variable of the evaluated "
                    "expression? bind it or make it a parameter)") from None
        if kind == 1:
            return e.data.numpy()
        if kind == 3:
            return self.global_closure(e)
        return e  # Op, Constructor: callable values

    def _operands(self, first, exprs, env, memo, push, vpush):
        """Push operand values that are ready now; schedule the rest in evaluation order."""
        ops = exprs if first is None else (first, *exprs)
        for i, c in enumerate(ops):
            leaf = _LEAF.get(type(c))
            if leaf is not None:
                vpush(self._leaf(leaf, c, env))
                continue
            hit = memo.get(c)
            if hit is not None:
                self._consume(memo, c, hit)
                vpush(hit[0])
                continue
            for rest in reversed(ops[i:]):
                push((_EVAL, rest))
            return

    def _make_closure(self, fn, env) -> Closure:
        captured = {}
        for v in self._free_vars(fn):
            if v in env:
                captured[v] = env[v]
        return Closure(fn, captured)

    @staticmethod
    def _truth(c) -> bool:
        arr = np.asarray(c.numpy() if isinstance(c, NDArray) else c)
        if arr.size != 1:
            raise InterpreterError(
                f"If condition must be a scalar boolean, got a tensor of shape {arr.shape}")
        return bool(arr.reshape(()))

    def _apply_op(self, op: Op, call, args):
        if op.name in _DEVICE_IDENTITIES:  # any value (closure, reference, ADT) stays itself
            return args[0]
        impl = op.get_attr("FNumpy")
        if impl is None:
            raise InterpreterError(
                f"operator {op.name} has no numpy implementation (FNumpy); cannot interpret "
                f"{describe_call(call)}")
        np_args = [_np_arg(a) for a in args]
        out_type = call._checked_type
        if not _type_kinds(out_type)[0] or any(
                _type_kinds(getattr(a, "_checked_type", None))[1] for a in call.args):
            # (a static result of dynamic operands, a loss or a reduction, is checked too)
            out_type = self._runtime_type(op, call, np_args) or out_type
        try:
            res = impl(call.attrs, np_args, out_type)
        except Exception as err:
            raise InterpreterError(
                f"error while evaluating {describe_call(call, np_args)}: "
                f"{type(err).__name__}: {err}") from err
        if isinstance(res, tuple | list):
            res = tuple(np.asarray(r) for r in res)
        else:
            res = np.asarray(res)
        if type(out_type) is TensorType and _type_kinds(out_type)[0] and (
                res.shape != out_type.shape or res.dtype != _np_dtype(out_type.dtype)):
            raise InterpreterError(
                f"operator {op.name} returned {_describe_value(res)} but its type is "
                f"{type_str(out_type)}: {describe_call(call, np_args)}")
        return res

    @staticmethod
    def _runtime_type(op: Op, call, np_args):
        """The call's output type from its type relation on the actual argument types."""
        rel = op.get_attr("FTypeRelation")
        if rel is None:
            return None
        arg_types = [value_type(a) for a in np_args]
        if any(t is None for t in arg_types):
            return None
        try:
            return rel(arg_types, call.attrs)
        except Exception as err:
            raise InterpreterError(
                f"type error while evaluating {describe_call(call, np_args)}: {err}") from err


def _match(pattern, value):
    """Bindings (Var -> value) if ``pattern`` matches ``value``, else None; iterative."""
    binds = {}
    stack = [(pattern, value)]
    while stack:
        p, v = stack.pop()
        t = type(p)
        if t is PatternVar:
            binds[p.var] = v
        elif t is PatternConstructor:
            if not isinstance(v, ConstructorValue):
                raise InterpreterError(
                    f"constructor pattern {p.constructor.name_hint} applied to a "
                    f"{type(v).__name__}")
            if v.tag != p.constructor.tag or (
                    v.constructor is not None and v.constructor.name_hint
                    != p.constructor.name_hint):
                return None
            stack.extend(zip(p.patterns, v.fields))
        elif t is PatternTuple:
            stack.extend(zip(p.patterns, v))
        # PatternWildcard matches anything
    return binds


# --------------------------------------------------------------------------- the executor
def infer_types(mod):
    """Run ``relay.transform.InferType`` when it is available (it is imported lazily)."""
    try:
        from ..transform import InferType
    except ImportError:
        return mod
    return InferType()(mod)


class Interpreter(Executor):
    """The debug executor: type-checks the module, then evaluates it with numpy.

    Parameters
    ----------
    mod : IRModule
        The module holding ``main`` and the functions and ADTs it uses (may be None).
    device : Device
        Kept for API compatibility; everything runs on the CPU.
    target : str or Target
        Kept for API compatibility.
    """

    _checks_when_made = True  # (``_prepare`` runs InferType)

    def __init__(self, mod, device=None, target="llvm"):
        self.mod = mod
        self.device = device
        self.target = target

    def _prepare(self, expr):
        """The type-checked module and the GlobalVar of the entry function."""
        from ...ir.module import IRModule

        mod = self.mod
        if expr is None:
            if mod is None or "main" not in mod:
                raise ValueError("evaluate() without an expression needs a module with @main")
            gv = mod.get_global_var("main")
        elif isinstance(expr, GlobalVar):
            if mod is None or expr not in mod:
                raise ValueError(f"@{expr.name_hint} is not in the executor's module")
            gv = expr
        else:
            mod = mod.shallow_copy() if mod is not None else IRModule()
            name = "main" if "main" not in mod else "__interpreter_entry"
            mod[name] = expr
            gv = mod.get_global_var(name)
        mod = infer_types(mod)
        return mod, gv

    def _make_executor(self, expr=None):
        mod, gv = self._prepare(expr)
        func = mod[gv]
        if not isinstance(func, Function):
            raise ValueError(f"@{gv.name_hint} is a {type(func).__name__}, not a relay.Function")
        fname = gv.name_hint if expr is None or isinstance(expr, GlobalVar) else "fn"
        machine = Machine(mod)

        def _interp_wrapper(*args, **kwargs):
            args = convert_kwargs(func, args, kwargs, fname)
            values = check_args(func, args, fname)
            return to_python_value(machine.call(machine.global_closure(gv), values))

        return _interp_wrapper
