"""Helpers for the Relax pass tests: struct-info shorthands, module builders, structural
comparison and a tiny numpy interpreter for Relax functions (there is no Relax VM yet).

The interpreter covers what the tests build: operator calls (through the same numpy references
FoldConstant uses), calls of global functions, tuples, ``If``, ``match_cast`` and closures
(``make_closure`` / ``invoke_(pure_)closure``). Operand trees are shallow in normal form, so it
recurses only on calls of functions.
"""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.ir.expr import GlobalVar
from minitvm.ir.op import Op
from minitvm.relax.transform.fold_constant import run_reference
from minitvm.relax.transform.utils import substitute_sinfo


def T(*shape, dtype="float32"):  # noqa: N802 - reads like R.Tensor
    return relax.TensorStructInfo(list(shape), dtype)


def assert_equal(actual, expected, map_free_vars: bool = False):
    tvm.ir.assert_structural_equal(actual, expected, map_free_vars)


def module(**funcs) -> tvm.IRModule:
    return tvm.IRModule(dict(funcs))


def has_op(name: str) -> bool:
    try:
        Op.get(name)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------ interpreter
class _Closure:
    def __init__(self, gvar, env):
        self.gvar = gvar
        self.env = list(env)


def _bind_dims(sinfo, value, sym):
    """Record the values of the symbolic dimensions of ``sinfo`` that ``value`` has."""
    if isinstance(sinfo, relax.TensorStructInfo) and isinstance(value, np.ndarray):
        dims = sinfo.dims()
        if dims is not None:
            if len(dims) != value.ndim:
                raise ValueError(f"rank mismatch: {sinfo} vs an array of shape {value.shape}")
            for d, n in zip(dims, value.shape):
                if isinstance(d, tir.Var):
                    if sym.setdefault(d, n) != n:
                        raise ValueError(f"{d} is {sym[d]} and {n}")
                elif isinstance(d, tir.IntImm) and d.value != n:
                    raise ValueError(f"shape mismatch: {sinfo} vs {value.shape}")
    elif isinstance(sinfo, relax.TupleStructInfo) and isinstance(value, tuple):
        for s, v in zip(sinfo.fields, value):
            _bind_dims(s, v, sym)


class Interpreter:
    def __init__(self, mod):
        self.mod = mod
        self.sym: dict = {}

    def run(self, name: str, *args):
        func = self.mod[name]
        return self.call(func, [np.asarray(a) if not isinstance(a, tuple) else a
                                for a in args])

    def call(self, func, args):
        if isinstance(func, _Closure):
            return self.call(self.mod[func.gvar], list(args) + func.env)
        if len(args) != len(func.params):
            raise TypeError(f"expected {len(func.params)} arguments, got {len(args)}")
        env = dict(zip(func.params, args))
        for p, a in zip(func.params, args):
            _bind_dims(p.struct_info, a, self.sym)
        return self.eval(func.body, env)

    def eval(self, e, env):
        if isinstance(e, relax.Var):
            if e not in env:
                raise KeyError(f"unbound variable {e.name_hint}")
            return env[e]
        if isinstance(e, relax.Constant):
            return e.data.numpy()
        if isinstance(e, relax.ShapeExpr):
            return tuple(int(v.value) for v in e.values)
        if isinstance(e, relax.PrimValue):
            return e.value.value
        if isinstance(e, relax.StringImm | relax.DataTypeImm):
            return e.value
        if isinstance(e, GlobalVar):
            return self.mod[e]
        if isinstance(e, relax.Tuple):
            return tuple(self.eval(f, env) for f in e.fields)
        if isinstance(e, relax.TupleGetItem):
            return self.eval(e.tuple_value, env)[e.index]
        if isinstance(e, relax.SeqExpr):
            for block in e.blocks:
                for b in block.bindings:
                    env[b.var] = self.eval(b.value, env)
                    if isinstance(b, relax.MatchCast):
                        _bind_dims(b.struct_info, env[b.var], self.sym)
            return self.eval(e.body, env)
        if isinstance(e, relax.If):
            cond = bool(np.asarray(self.eval(e.cond, env)))
            return self.eval(e.true_branch if cond else e.false_branch, env)
        if isinstance(e, relax.Function):
            closure_env = dict(env)
            return lambda *a: self.call_local(e, closure_env, list(a))
        if isinstance(e, relax.Call):
            return self.eval_call(e, env)
        raise NotImplementedError(f"cannot evaluate {type(e).__name__}")

    def call_local(self, func, env, args):
        inner = dict(env)
        inner.update(zip(func.params, args))
        return self.eval(func.body, inner)

    def eval_call(self, call, env):
        op = call.op
        if isinstance(op, Op):
            if op.name == "relax.make_closure":
                return _Closure(call.args[0], self.eval(call.args[1], env))
            if op.name in ("relax.invoke_closure", "relax.invoke_pure_closure"):
                clo = self.eval(call.args[0], env)
                args = list(self.eval(call.args[1], env))
                return clo(*args) if callable(clo) else self.call(clo, args)
            args = [self.eval(a, env) for a in call.args]
            sinfo = substitute_sinfo(call.struct_info,
                                     lambda v: tir.IntImm("int64", self.sym[v])
                                     if v in self.sym else None)
            out = run_reference(call, [np.asarray(a) for a in args], sinfo)
            if out is None:
                raise NotImplementedError(f"no numpy reference for {op.name}")
            return out
        callee = self.eval(op, env)
        args = [self.eval(a, env) for a in call.args]
        if callable(callee) and not isinstance(callee, relax.Function | _Closure):
            return callee(*args)
        return self.call(callee, args)


def run(mod, name, *args):
    """Evaluate function ``name`` of ``mod`` on numpy arguments."""
    return Interpreter(mod).run(name, *args)


def assert_same_results(before, after, name, *args, rtol=1e-6):
    a = run(before, name, *args)
    b = run(after, name, *args)
    _compare(a, b, rtol)


def _compare(a, b, rtol):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _compare(x, y, rtol)
        return
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol)


def te_add(a, b):
    """Elementwise ``a + b`` of two 1-D tensors as a TE compute (``emit_te``'s function)."""
    return te.compute(a.shape, lambda i: a[i] + b[i], name="add")


def add_chain(length: int, dim=4) -> tvm.IRModule:
    """``main(x)``: ``length`` ``emit_te`` adds in one dataflow block, each of the last and
    ``x`` (``dim`` an int or a symbolic size): a call_tir chain for the lowering passes."""
    x = relax.Var("x", relax.TensorStructInfo([dim], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = bb.emit_te(te_add, x, x)
            for _ in range(length - 1):
                v = bb.emit_te(te_add, v, x)
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    return bb.get()
