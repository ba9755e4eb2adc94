"""Helpers of the LegalizeOps tests: build a one-op Relax function, legalize it, compile the
PrimFuncs it calls and run them on numpy arrays (destination-passing: inputs, then outputs)."""

from __future__ import annotations

import numpy as np

from minitvm import relax, tir
from minitvm.codegen.build import build
from minitvm.relax.transform import LegalizeOps

_RNG = np.random.default_rng(0)


def tensor(shape, dtype="float32"):
    """TensorStructInfo of ``shape``: ints are static, strings symbolic (int64 tir Vars shared by
    name within one call of ``sym``)."""
    return relax.TensorStructInfo(list(shape), dtype)


def sym(*names):
    return [tir.Var(n, "int64") for n in names]


def one_op_module(make, sinfos):
    """``main(x0, x1, ...) = make(x0, x1, ...)`` in a dataflow block."""
    params = [relax.Var(f"x{k}", s) for k, s in enumerate(sinfos)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(make(*params), "out"))
        bb.emit_func_output(out)
    return relax.transform.Normalize()(bb.get())  # nested calls bound to their own vars


def bindings(func):
    return [b for blk in func.body.blocks for b in blk.bindings]


def run_legalized(mod, arrays, n_out=1):
    """Interpret ``main`` of a legalized module binding by binding: call_tir bindings run their
    compiled PrimFunc; Tuple / TupleGetItem / var bindings are followed. Output buffers are
    sized from the call's out_sinfo with the symbolic dims bound from the inputs."""
    main = mod["main"]
    env = dict(zip(main.params, arrays))
    dims: dict = {}
    for p, a in zip(main.params, arrays):
        s = p.struct_info
        if isinstance(s, relax.TensorStructInfo):
            for d, n in zip(s.shape.values, a.shape):
                if isinstance(d, tir.Var):
                    dims[d] = n
    for b in bindings(main):
        v = b.value
        if isinstance(v, relax.Call) and getattr(v.op, "name", "") == "relax.call_tir":
            gv, args = v.args[0], v.args[1]
            ins = [env[a] if not isinstance(a, relax.Constant) else a.data.numpy()
                   for a in args.fields]
            sinfos = v.sinfo_args[0]
            sinfos = sinfos.fields if isinstance(sinfos, relax.TupleStructInfo) else [sinfos]
            outs = [np.zeros([_eval(d, dims) for d in s.shape.values], s.dtype) for s in sinfos]
            scalars = [_eval(d, dims) for d in v.args[2].values] if len(v.args) > 2 else []
            m = build(mod[gv])
            m["main"](*ins, *outs, *scalars)
            env[b.var] = outs[0] if len(outs) == 1 else tuple(outs)
        elif isinstance(v, relax.Call) and getattr(v.op, "name", "") == \
                "relax.call_pure_packed" and v.args[0].global_symbol in _vm_builtins():
            fn, takes_vm = _vm_builtins()[v.args[0].global_symbol]
            assert not takes_vm, v.args[0].global_symbol
            env[b.var] = fn(*[_builtin_arg(a, env) for a in v.args[1:]])
        elif isinstance(v, relax.Tuple):
            env[b.var] = tuple(env[f] for f in v.fields)
        elif isinstance(v, relax.TupleGetItem):
            env[b.var] = env[v.tuple_value][v.index]
        elif isinstance(v, relax.Var):
            env[b.var] = env[v]
        else:
            raise AssertionError(f"binding not legalized: {v}")
    return env[main.body.body]


def _vm_builtins() -> dict:
    from minitvm.runtime.relax_vm.builtins import BUILTINS

    return BUILTINS


def _builtin_arg(a, env):
    """A VM builtin's argument: a bound tensor, a string or an integer."""
    if isinstance(a, relax.StringImm):
        return a.value
    if isinstance(a, relax.PrimValue):
        return int(a.value.value)
    return env[a]


def _eval(d, dims):
    if isinstance(d, tir.IntImm):
        return int(d.value)
    from minitvm.arith import Analyzer
    from minitvm.tir.stmt_functor import substitute

    v = Analyzer().simplify(substitute(d, {k: tir.IntImm("int64", n) for k, n in dims.items()}))
    return int(v.value)


def rand(shape, dtype="float32", lo=-2.0, hi=2.0):
    if dtype == "bool":
        return _RNG.random(shape) > 0.5
    if dtype.startswith("int"):
        return _RNG.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    return _RNG.uniform(lo, hi, size=shape).astype(dtype)


def check(make, sinfos, arrays, expected, rtol=1e-5, atol=1e-5):
    """Legalize ``make`` over ``sinfos``, check nothing is left unlegalized (kernels, or the
    VM builtins legalization calls: run-time checks of symbolic sizes), run it on ``arrays``
    and compare with ``expected`` (an array or tuple of arrays)."""
    mod = LegalizeOps()(one_op_module(make, sinfos))
    for b in bindings(mod["main"]):
        v = b.value
        if isinstance(v, relax.Call):
            builtin = v.op.name == "relax.call_pure_packed" and \
                v.args[0].global_symbol.startswith("vm.builtin.")
            assert v.op.name == "relax.call_tir" or builtin, f"left as a call: {v.op.name}"
    got = run_legalized(mod, arrays)
    if isinstance(expected, tuple):
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
            assert g.dtype == np.asarray(e).dtype or np.asarray(e).dtype == np.float64
    else:
        assert got.shape == np.shape(expected), (got.shape, np.shape(expected))
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    return mod
