"""The Relay VM's kernels compiled in parallel before its codegen lowers them one by one.

``relay.vm.compile`` lowers each primitive function when its codegen reaches the call: static
ones through the te_compiler's kernel cache, ones with ``Any`` dimensions as one symbolic kernel
(``symbolic``). ``prefetch_vm_kernels`` finds those calls first and hands the functions to
``backend.parallel_compile`` as ``relay.build`` does (``te_compiler.prefetch_kernels``): forked
workers compile them into the on-disk cache, and this process loads each one as a worker
reports it, so the codegen after finds every kernel in the in-process caches. Symbolic kernels
recorded on disk (``saved.RecordStore``) are read first, all into one engine, and neither
scheduled nor handed to the workers.
"""

from __future__ import annotations

from ....backend.parallel_compile import run_sharded
from ....ir.module import IRModule
from ....ir.type import TupleType
from ....schedule import LoweringOptions
from ...adt import Match
from ...expr import Call, Constant, Function, Let
from ...expr_functor import dataflow_children, dataflow_post_order
from ..graph_executor_codegen import _is_primitive
from ..te_compiler import _lower_cached, compile_cost, func_ops, user_strategies
from .kernels import is_static_type
from .symbolic import lower_symbolic, schedule_symbolic

__all__ = ["primitive_calls", "prefetch_vm_kernels"]

_VM_OPS = frozenset({"vm.shape_of", "vm.reshape_tensor", "vm.update_row"})


def _children(e) -> tuple:
    """Operands to search for primitive calls: through lets, matches and closures, not into
    the primitive functions themselves."""
    if isinstance(e, Call):
        return tuple(e.args) if _is_primitive(e.op) else (e.op, *e.args)
    if isinstance(e, Let):
        return (e.value, e.body)
    if isinstance(e, Function):
        return () if _is_primitive(e) else (e.body,)
    if isinstance(e, Match):
        return (e.data, *(c.rhs for c in e.clauses))
    return dataflow_children(e)


def _is_vm_op(func: Function) -> bool:
    """A fused function that only wraps a ``vm.*`` op (``_VM_OPS``: no kernel)."""
    b = func.body
    return isinstance(b, Call) and getattr(b.op, "name", None) in _VM_OPS


def primitive_calls(mod: IRModule) -> list:
    """``[(primitive function, constant input positions)]`` of every call the VM codegen lowers
    to a kernel, as it computes them (``codegen.FunctionCompiler._packed``); repeats kept."""
    out = []
    for _, f in mod.functions.items():
        if not isinstance(f, Function) or _is_primitive(f):
            continue
        for e in dataflow_post_order(f.body, _children):
            if not (isinstance(e, Call) and _is_primitive(e.op)) or _is_vm_op(e.op):
                continue
            const = frozenset(k for k, a in enumerate(e.args) if isinstance(a, Constant))
            if any(_tuple_typed(a) for a in e.args):
                const = frozenset()  # (a tuple argument: positions would not line up)
            out.append((e.op, const))
    return out


def _tuple_typed(a) -> bool:
    return isinstance(a.checked_type, TupleType)


def _is_static(func: Function) -> bool:
    return all(is_static_type(p.checked_type) for p in func.params) and \
        is_static_type(func.body.checked_type)


def _lower_one(task, options: LoweringOptions, store) -> None:
    func, const = task
    if _is_static(func):
        _lower_cached(func, "prefetch", options, const, None)
    else:
        lower_symbolic(func, "prefetch", options, const, store)


def prefetch_vm_kernels(mod: IRModule, options: LoweringOptions, store=None) -> int:
    """Compile the kernels of ``mod``'s primitive calls in parallel worker processes (see the
    module doc); returns the number of workers used (0: the codegen compiles them as before:
    too few kernels, one job, no disk cache, or a warm build). ``store``: the on-disk records
    of symbolic kernels (``saved.RecordStore``): a recorded one is loaded, not scheduled."""
    if not options.native:
        return 0
    seen, tasks = set(), []
    for func, const in primitive_calls(mod):
        if (id(func), const) in seen or user_strategies(func) or \
                (func.attrs is not None and func.attrs.get("Compiler")):
            continue
        seen.add((id(func), const))
        tasks.append((func, const))

    if store is not None:  # every recorded kernel's code loaded at once
        store.load_many([store.key(f, options, c) for f, c in tasks if not _is_static(f)])
    ready = set()
    for func, const in tasks:  # symbolic kernels scheduled here, once: the workers inherit
        if not _is_static(func):  # the schedules and only generate code
            made = schedule_symbolic(func, options, const, store)
            if isinstance(made, Exception) or made.native is not None:
                ready.add((id(func), const))  # (recorded on disk, or refused: nothing to do)
    tasks = [t for t in tasks if (id(t[0]), t[1]) not in ready]

    def group(task):  # structurally equal functions share a group (cheaper than hashing)
        f, c = task
        return (tuple(func_ops(f)), tuple(str(p.checked_type) for p in f.params),
                str(f.body.checked_type), c)

    return run_sharded(tasks, lambda t: _lower_one(t, options, store), group,
                       cost=lambda t: compile_cost(t[0]))
