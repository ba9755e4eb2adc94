"""Tuning tasks: the tunable workloads of a model, found by scheduling its fused functions.

``extract_tasks`` runs ``relay.build``'s optimization pipeline, then schedules (without code
generation) every fused primitive function with a tracing knob table: each workload the
schedules ask knobs for becomes a task, so the keys are exactly those a later build looks up.
Each task keeps the first fused function reaching it, measured in its stead (``tune.fused``).
A Relax module is built once under the tracing table instead (Relax schedules while building).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..backend.options import lowering_options
from ..backend.target_cpu import for_target
from ..ir.module import IRModule
from ..relay.backend.te_compiler import build_te
from ..relay.expr import Call, Function
from ..relay.expr_functor import dataflow_post_order
from ..schedule import LoweringError, lower_te
from ..schedule.knobs import KnobTable, Space, key_text, use_knobs
from ..transform.context import PassContext
from .fused import checked_spec, program_spec
from .workload import can_rebuild


@dataclass
class Task:
    """One workload to tune: its key, its declared knob space, and how often the model runs it.

    ``measure``: the candidate measurement function (``(task, knobs) -> costs in seconds``)
    the runners call in a worker; None: ``workload.measure_workload`` (the fused function
    ``program`` built with the knobs, or without one the workload alone, then timed). Tests
    give one that crashes or hangs. ``program``: the spec of the first fused function of the
    model that reaches the workload (``tune.fused``), or None.
    """

    workload: list
    space: Space
    weight: int = 1
    target: str = "llvm"
    measure: object = None
    program: str | None = None

    @property
    def key(self) -> str:
        return key_text(self.workload)

    @property
    def name(self) -> str:
        w = self.workload
        return f"{w[0]}{tuple(x for x in w[1:] if not isinstance(x, str))}"

    def __repr__(self) -> str:
        return f"Task({self.name}, space={self.space.size()}, weight={self.weight})"


def _primitive_calls(main: Function) -> list[Call]:
    """The first call of each primitive function in ``main``, in post order."""
    out, seen = [], set()
    for e in dataflow_post_order(main.body):
        f = e.op if isinstance(e, Call) else None
        if isinstance(f, Function) and f.attrs is not None and f.attrs.get("Primitive") \
                and not f.attrs.get("Compiler") and id(f) not in seen:
            seen.add(id(f))
            out.append(e)
    return out


def _is_relax(mod) -> bool:
    from ..relax.expr import Function as RelaxFunction

    return any(isinstance(f, RelaxFunction) for f in mod.functions.values())


def _extract_relax(mod, params, target) -> list[Task]:
    """Relax: build the module once under a tracing table (Relax schedules its kernels while
    building them); each workload is one task (weight 1)."""
    from ..relax.vm.build import build

    table = KnobTable(trace=True)
    with use_knobs(table):
        build(mod, target, params=params)
    return [Task(list(key), space, 1, str(target)) for key, space, _ in table.seen.values()
            if can_rebuild(key)]


def extract_tasks(mod, params: dict | None = None, target="llvm", opt_level: int = 3
                  ) -> list[Task]:
    """The tunable workloads of ``mod`` as ``relay.build`` (or ``relax.build``, for a Relax
    module) would compile it.

    Workloads repeated in a Relay model appear once, with ``weight`` = the number of fused
    functions using them; workloads the measurement cannot rebuild alone are left out.
    """
    from ..relay.transform.pipeline import optimize

    if isinstance(mod, Function):
        mod = IRModule.from_expr(mod)
    if _is_relax(mod):
        return _extract_relax(mod, params, target)
    ctx = PassContext.current()
    # as relay.build: optimized for a plain llvm target (its NCHW kernels; an x86 -mcpu would
    # re-block convs for TVM's templates), the kernels scheduled for the -mcpu's CPU
    with for_target(target), PassContext(
            opt_level=opt_level, config=dict(getattr(ctx, "config", {}) or {}),
            disabled_pass=list(getattr(ctx, "disabled_pass", []) or [])):
        opt_mod, _ = optimize(mod, "llvm", params)
        base = lowering_options()
    tasks: dict[str, Task] = {}
    for call in _primitive_calls(opt_mod["main"]):
        func = call.op
        table = KnobTable(trace=True)
        try:
            inputs, consts, outputs = build_te(func)
            with for_target(target):
                lower_te(list(inputs) + [c[0] for c in consts], outputs, "extract",
                         options=dataclasses.replace(base, knobs=table))
        except (LoweringError, ValueError, TypeError, NotImplementedError, KeyError):
            continue  # this function runs in numpy: nothing to tune
        for text, (key, space, _) in table.seen.items():
            if text in tasks:
                tasks[text].weight += 1
            elif can_rebuild(key):
                tasks[text] = Task(list(key), space, 1, str(target),
                                   program=checked_spec(program_spec(call), key, target))
    return list(tasks.values())
