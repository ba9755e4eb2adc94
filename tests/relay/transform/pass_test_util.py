"""Shared checks for pass tests: the input is left alone, the IR is as expected, numerics agree."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.ir.snapshot import snapshot


def run_pass(p, mod):
    """Run ``p`` on ``mod`` and assert that ``mod`` itself was not modified (each function is
    the same object, holding what it held: ``snapshot``, a third of two structural hashes)."""
    before = {gv: (f, snapshot(f)) for gv, f in mod.functions.items()}
    out = p(mod)
    assert before.keys() == mod.functions.keys(), "the pass added or removed functions of its input"
    for gv, (f, snap) in before.items():
        assert mod.functions[gv] is f, f"the pass replaced @{gv.name_hint} in its input module"
        assert snap.changed() is None, f"the pass mutated @{gv.name_hint} of its input module"
    return out


def infer(mod_or_expr):
    """InferType of a module, or of an expression/function wrapped in a module (returns main)."""
    if isinstance(mod_or_expr, tvm.IRModule):
        return relay.transform.InferType()(mod_or_expr)
    mod = tvm.IRModule.from_expr(mod_or_expr)
    return relay.transform.InferType()(mod)["main"]


def random_inputs(mod, seed: int = 0, entry: str = "main"):
    """Random arrays matching the parameter types of ``mod[entry]``."""
    rng = np.random.default_rng(seed)
    typed = relay.transform.InferType()(mod)[entry]
    out = []
    for p in typed.params:
        t = p.checked_type
        shape = tuple(int(d) for d in t.shape)
        if t.dtype == "bool":
            out.append(rng.integers(0, 2, size=shape).astype("bool"))
        elif t.dtype.startswith("int") or t.dtype.startswith("uint"):
            out.append(rng.integers(1, 5, size=shape).astype(t.dtype))
        else:
            out.append((rng.standard_normal(shape) + 0.5).astype(t.dtype))
    return out


def evaluate(mod, args, entry: str = "main"):
    res = relay.create_executor("debug", mod=mod).evaluate(mod.get_global_var(entry))(*args)
    return _to_numpy(res)


def _to_numpy(v):
    if hasattr(v, "numpy"):
        return v.numpy()
    if isinstance(v, list | tuple):
        return [_to_numpy(x) for x in v]
    if hasattr(v, "fields"):
        return [_to_numpy(x) for x in v.fields]
    return v


def _assert_close(a, b, rtol, atol):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_close(x, y, rtol, atol)
    else:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def check_numerics(before, after, args=None, rtol=1e-5, atol=1e-6, entry: str = "main"):
    """The interpreter gives the same outputs for ``before`` and ``after`` (modules or funcs)."""
    if not isinstance(before, tvm.IRModule):
        before = tvm.IRModule.from_expr(before)
    if not isinstance(after, tvm.IRModule):
        after = tvm.IRModule.from_expr(after)
    if args is None:
        args = random_inputs(before, entry=entry)
    _assert_close(evaluate(before, args, entry), evaluate(after, args, entry), rtol, atol)
    return args


def check_numerics_on(before, after, arg_sets, rtol=1e-5, atol=1e-6, entry: str = "main"):
    """``check_numerics`` for each argument list of ``arg_sets``; each module is type-checked
    and made an executor once for all of them (a 100,000-node program: a type inference per
    module, not per argument list)."""
    runs = []
    for m in (before, after):
        if not isinstance(m, tvm.IRModule):
            m = tvm.IRModule.from_expr(m)
        runs.append(relay.create_executor("debug", mod=m).evaluate(m.get_global_var(entry)))
    for args in arg_sets:
        _assert_close(_to_numpy(runs[0](*args)), _to_numpy(runs[1](*args)), rtol, atol)


def count_nodes(expr, cls) -> int:
    found = []
    relay.analysis.post_order_visit(expr, lambda e: found.append(e) if isinstance(e, cls) else None)
    return len(found)


def opt_main(expr, passes, opt_level: int = 3):
    """``main`` of ``expr``'s module after ``passes`` (one pass or a list) at ``opt_level``."""
    mod = tvm.IRModule.from_expr(expr)
    with tvm.transform.PassContext(opt_level=opt_level):
        mod = tvm.transform.Sequential(passes if isinstance(passes, list) else [passes])(mod)
    return mod["main"]


def fn_of(y):
    """A function of ``y`` over its free variables."""
    return relay.Function(relay.analysis.free_vars(y), y)


def conv2d_layout_hook(data_layout, kernel_layout=None):
    """An FTVMAlterOpLayout for nn.conv2d that rebuilds the conv in the given layouts."""
    def alter(attrs, inputs, tinfos, out_type):
        new_attrs = dict(attrs)
        new_attrs["data_layout"] = data_layout
        if kernel_layout is not None:
            new_attrs["kernel_layout"] = kernel_layout
        return relay.nn.conv2d(*inputs, **new_attrs)

    return alter
