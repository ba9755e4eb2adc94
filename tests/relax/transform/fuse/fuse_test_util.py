"""Helpers for the fusion tests: a small runner for Relax functions whose bindings call
PrimFuncs (``call_tir``, calls of other Relax functions, tuples), executing every PrimFunc
natively through ``minitvm.codegen.build``; module checks in TVM's Before/Expected style."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax, tir
from minitvm.codegen.build import build
from minitvm.ir.op import Op
from minitvm.relax.analysis import check_well_formed

_KERNELS: dict = {}


def kernel(prim: tir.PrimFunc):
    """The compiled PrimFunc (compiled once per object)."""
    k = _KERNELS.get(id(prim))
    if k is None or k[0] is not prim:
        k = _KERNELS[id(prim)] = (prim, build(prim)["main"])
    return k[1]


def _bind(sinfo, value, sym: dict) -> None:
    if isinstance(sinfo, relax.TensorStructInfo) and isinstance(sinfo.shape, relax.ShapeExpr):
        for d, n in zip(sinfo.shape.values, value.shape):
            if isinstance(d, tir.Var):
                sym.setdefault(d, n)
    elif isinstance(sinfo, relax.TupleStructInfo):
        for s, v in zip(sinfo.fields, value):
            _bind(s, v, sym)
    elif isinstance(sinfo, relax.ShapeStructInfo) and sinfo.values is not None:
        for d, n in zip(sinfo.values, value):
            if isinstance(d, tir.Var):
                sym.setdefault(d, n)


def _dim(e, sym: dict) -> int:
    if isinstance(e, tir.IntImm):
        return int(e.value)
    from minitvm.tir.stmt_functor import substitute

    v = substitute(e, {k: tir.IntImm(k.dtype, int(n)) for k, n in sym.items()})
    from minitvm.arith import Analyzer

    v = Analyzer().simplify(v)
    if not isinstance(v, tir.IntImm):
        raise ValueError(f"cannot evaluate dimension {e}")
    return int(v.value)


def _alloc(sinfo, sym):
    if isinstance(sinfo, relax.TupleStructInfo):
        return tuple(_alloc(s, sym) for s in sinfo.fields)
    shape = [_dim(d, sym) for d in sinfo.shape.values]
    return np.zeros(shape, sinfo.dtype)


def _flat(v) -> list:
    return [x for item in v for x in _flat(item)] if isinstance(v, tuple) else [v]


def run(mod: tvm.IRModule, name: str, *args):
    """Run Relax function ``name`` of ``mod`` on numpy arrays (calls nest by one frame)."""
    func = mod[name]
    call_tir = Op.get("relax.call_tir")
    env, sym = {}, {}
    for p, a in zip(func.params, args, strict=True):
        env[p] = a
        _bind(p.struct_info, a, sym)

    def value(e):
        if isinstance(e, relax.Var):
            return env[e]
        if isinstance(e, relax.Constant):
            return e.data.numpy()
        if isinstance(e, relax.Tuple):
            return tuple(value(f) for f in e.fields)
        if isinstance(e, relax.ShapeExpr):
            return tuple(_dim(d, sym) for d in e.values)
        if isinstance(e, relax.TupleGetItem):
            return value(e.tuple_value)[e.index]
        if isinstance(e, relax.Call) and e.op is call_tir:
            ins = [x for a in e.args[1].fields for x in _flat(value(a))]
            out = _alloc(e.sinfo_args[0], sym)
            extra = [_dim(d, sym) for d in e.args[2].values] if len(e.args) > 2 else []
            kernel(mod[e.args[0]])(*ins, *_flat(out), *extra)
            return out
        if isinstance(e, relax.Call) and isinstance(e.op, tvm.ir.GlobalVar):
            return run(mod, e.op.name_hint, *[value(a) for a in e.args])
        raise NotImplementedError(f"the test runner cannot evaluate {type(e).__name__}")

    for block in func.body.blocks:
        for b in block.bindings:
            env[b.var] = value(b.value)
            _bind(b.var.struct_info, env[b.var], sym)
    return value(func.body.body)


def random_inputs(shapes, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype("float32") for s in shapes]


def assert_same_results(before, after, name: str, inputs, rtol=1e-5, atol=1e-5) -> None:
    """``name`` computes the same values in both modules."""
    want = _flat(run(before, name, *inputs))
    got = _flat(run(after, name, *inputs))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def check(transform, before: tvm.IRModule, expected: tvm.IRModule) -> tvm.IRModule:
    """``transform(before)`` is structurally equal to ``expected``; ``before`` unchanged."""
    text = before.script()
    after = transform(before)
    tvm.ir.assert_structural_equal(after, expected)
    assert before.script() == text, "the pass modified its input module"
    assert check_well_formed(after) is None
    return after
