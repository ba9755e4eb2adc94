"""Relay programs through every executor under random build configurations.

One generated program (``generator``) runs in the interpreter (the reference), through
``relay.build`` + the graph executor (when it has no control flow, closures or ADTs) and
through ``relay.vm.compile`` + the VM, each under one ``PassContext`` drawn from the seed: an
``opt_level`` from 0 to 3 and a random set of ``disabled_pass`` names taken from the build
pipelines' own passes. Every pass of those pipelines is an optimization, so disabling any of
them, alone or together, must leave the values unchanged (as raising the opt level must).

A difference is shrunk to the smallest disabled set that still shows it (``minimal_disabled``),
so a finding names the pass whose absence -- or whose presence -- changes the values.
"""

from __future__ import annotations

import random

import numpy as np

from ... import transform as _transform
from .differential import Finding, _text, compare_values, flatten, precision_floor, run_interpreter
from .generator import GeneratedProgram

#: Passes of the pipelines that are not optimizations: InferType only annotates (the
#: pipelines re-run it where they need types; TVM's does the same and never lists it as
#: optional).
_NOT_OPTIONAL = frozenset({"InferType"})


def build_pass_names() -> list[str]:
    """The names of the passes ``relay.build`` and ``relay.vm.compile`` run in their
    optimization Sequential (nested Sequentials opened), each a candidate for
    ``disabled_pass``."""
    from ...relay.transform.pipeline import relay_build_pipeline
    from ...transform.sequential import Sequential

    names: list[str] = []
    for is_vm in (False, True):
        stack = [relay_build_pipeline(is_vm=is_vm)]
        while stack:
            p = stack.pop()
            if isinstance(p, Sequential):  # its own name disables it whole (FoldScaleAxis)
                if p.info.name != "sequential" and p.info.name not in names:
                    names.append(p.info.name)
                stack.extend(reversed(list(p.passes)))
                continue
            name = p.info.name
            if name not in names and name not in _NOT_OPTIONAL:
                names.append(name)
    return names


def draw_config(seed: int, names: list[str] | None = None) -> tuple[int, tuple[str, ...]]:
    """(opt_level, disabled pass names) of ``seed``: a level from 0 to 3, and none, one or a
    few passes (a quarter of the seeds: a random half of them)."""
    rng = random.Random(seed * 7919 + 17)
    names = build_pass_names() if names is None else names
    level = rng.randrange(4)
    r = rng.random()
    if r < 0.2:
        disabled: list[str] = []
    elif r < 0.75:
        disabled = rng.sample(names, rng.randint(1, 3))
    else:
        disabled = [n for n in names if rng.random() < 0.5]
    return level, tuple(sorted(disabled))


def generate_build_program(seed: int) -> GeneratedProgram:
    """The program of ``seed`` for the build matrix: even seeds without control flow, closures
    or ADTs (the graph executor runs them too), odd seeds with them (the VM only)."""
    from .generator import generate_program

    if seed % 2 == 0:
        return generate_program(seed, bounded=True, control_flow=False, closures=False,
                                adts=False)
    return generate_program(seed, bounded=True)


def _graph_run(prog: GeneratedProgram, level: int, disabled, inputs: list) -> list:
    from ...relay.build_module import build
    from ...runtime.graph_executor import GraphModule

    with _transform.PassContext(opt_level=level, disabled_pass=list(disabled)):
        lib = build(prog.mod, target="llvm")
    m = GraphModule(lib["default"]())
    for (name, _), x in zip(prog.input_types, inputs, strict=True):
        m.set_input(name, x)
    with np.errstate(all="ignore"):
        m.run()
    return [m.get_output(k).numpy().copy() for k in range(m.get_num_outputs())]


def _vm_run(prog: GeneratedProgram, level: int, disabled, inputs: list) -> list:
    import minitvm as tvm

    from ...relay.backend import vm as relay_vm
    from ...runtime import vm as runtime_vm

    with _transform.PassContext(opt_level=level, disabled_pass=list(disabled)):
        exe = relay_vm.compile(prog.mod, target="llvm")
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    with np.errstate(all="ignore"):
        return flatten(vm.run(*inputs))


#: The compiled executors a program goes through: name -> run(prog, level, disabled, inputs).
EXECUTORS = {"graph": _graph_run, "vm": _vm_run}


def _problem(prog, executor: str, level: int, disabled, inputs, ref, floor) -> str | None:
    """What goes wrong running ``prog`` on ``executor`` under the configuration: an exception
    or a difference from ``ref``; None when it agrees."""
    try:
        got = EXECUTORS[executor](prog, level, disabled, inputs)
    except Exception as err:  # noqa: BLE001
        return f"exception: {type(err).__name__}: {str(err)[:300]}"
    return compare_values(ref, got, floor=floor)


def _near_jump(prog: GeneratedProgram, inputs: list, floor) -> str | None:
    """``boundaries.near_tie`` on the program in graph normal form (its let-bound values
    inlined, so every jump's operand is a function of the parameters): where an op that jumps
    (a cast, floor, sign, comparison, arg-max...) takes a computed value within rounding of the
    jump, both sides may be right."""
    from ...relay.transform import ToGraphNormalForm
    from .boundaries import near_tie
    from .differential import DEFAULT_RTOL

    try:
        return near_tie(ToGraphNormalForm()(prog.mod), inputs,
                        DEFAULT_RTOL.get(floor or "float32", 2e-4))
    except Exception:  # noqa: BLE001 - then the difference stays a mismatch
        return None


def minimal_disabled(prog, executor: str, level: int, disabled, inputs, ref,
                     floor) -> tuple[str, ...]:
    """The smallest subset of ``disabled`` (one pass removed at a time, greedily) under which
    ``executor`` still goes wrong."""
    current = list(disabled)
    changed = True
    while changed and current:
        changed = False
        for name in list(current):
            trial = [n for n in current if n != name]
            if _problem(prog, executor, level, trial, inputs, ref, floor) is not None:
                current = trial
                changed = True
    return tuple(current)


def check_build_matrix(prog: GeneratedProgram, level: int | None = None,
                       disabled: tuple[str, ...] | None = None,
                       executors: tuple[str, ...] | None = None) -> list[Finding]:
    """The interpreter's values from the graph executor (dataflow programs) and the VM, both
    built under the seed's configuration (or ``level`` / ``disabled``). A finding's pass is
    ``relay.build+graph`` / ``relay.vm.compile``, its detail names the configuration and the
    minimal disabled set that still shows it."""
    if level is None or disabled is None:
        lv, dis = draw_config(prog.seed)
        level = lv if level is None else level
        disabled = dis if disabled is None else disabled
    inputs = prog.inputs()
    text = _text(prog.mod)
    try:
        ref = run_interpreter(prog.mod, inputs)
    except Exception as err:  # noqa: BLE001
        return [Finding("exception", "interpreter", prog.seed,
                        f"{type(err).__name__}: {str(err)[:300]}", text)]
    floor = precision_floor(prog.mod)
    if executors is None:
        executors = ("graph", "vm") if prog.graph_compatible else ("vm",)
    found = []
    for ex in executors:
        problem = _problem(prog, ex, level, disabled, inputs, ref, floor)
        if problem is None:
            continue
        kind = "exception" if problem.startswith("exception: ") else "mismatch"
        if kind == "mismatch":
            near = _near_jump(prog, inputs, floor)
            if near:
                kind, problem = "boundary-dependent", f"{problem}; {near}"
        where = "relay.build+graph" if ex == "graph" else "relay.vm.compile"
        minimal = disabled if kind == "boundary-dependent" else \
            minimal_disabled(prog, ex, level, disabled, inputs, ref, floor)
        found.append(Finding(kind, where, prog.seed,
                             f"opt_level={level} disabled_pass={list(disabled)} (minimal "
                             f"{list(minimal)}): {problem}", text))
    return found
