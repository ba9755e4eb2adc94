"""ONNX control flow resolved at import, shared by both importers: ``If`` whose condition is
known takes one branch; ``Loop`` is unrolled when its trip count, or its condition, is known
at import (a constant, a bound input, or computed from constants and the iteration number).

The dialect supplies ``ctx.subgraph(graph, bindings) -> outputs`` (converting a subgraph in
a scope over the current one) and small callables for constants and stacking; ``import_loop``
chooses between unrolling and the dialect's run-time loop."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .onnx_model import NodeContext
from .onnx_sequence import OnnxOptional, OnnxSequence

__all__ = ["MAX_UNROLL", "scalar_flag", "known_branch", "unroll_loop", "import_loop",
           "loop_parts", "check_tensors_carried"]

MAX_UNROLL = 1024


def scalar_flag(v) -> bool:
    """The truth value of a one-element condition tensor."""
    arr = np.asarray(v)
    if arr.size != 1:
        raise ValueError(f"a condition must have one element, got shape {arr.shape}")
    return bool(arr.reshape(-1)[0])


def known_branch(ctx: NodeContext, cond_value, attrs: dict) -> list:
    """The outputs of the branch an ``If`` with a known condition takes."""
    return ctx.subgraph(attrs["then_branch"] if scalar_flag(cond_value) else
                        attrs["else_branch"], {})


def loop_parts(ctx: NodeContext, ins: list, attrs: dict) -> tuple:
    """``(body, M, cond, carried values, body input names, scan output count)`` of an ONNX
    ``Loop`` node (absent M / cond are None), the body's inputs and outputs checked against
    the carried values."""
    body = attrs["body"]
    ins = list(ins) + [None] * max(0, 2 - len(ins))
    m, cond, carried = ins[0], ins[1], list(ins[2:])
    formal = [vi.name for vi in body.input]
    n_scan = len(body.output) - 1 - len(carried)
    if len(formal) != 2 + len(carried) or n_scan < 0:
        raise ctx.fail(f"the body takes {len(formal)} inputs and gives {len(body.output)} "
                       f"outputs for {len(carried)} loop-carried values")
    return body, m, cond, carried, formal, n_scan


def check_tensors_carried(ctx: NodeContext, carried: list) -> None:
    """Refuse a sequence or optional loop-carried value (a run-time loop carries tensors)."""
    for k, v in enumerate(carried):
        if isinstance(v, OnnxSequence | OnnxOptional):
            raise ctx.fail(f"loop-carried value {k} is a sequence or optional; with a "
                           "run-time trip count only tensors can be carried")


def unroll_loop(ctx: NodeContext, ins: list, attrs: dict, *, value: Callable,
                maybe_value: Callable, const: Callable, stack: Callable) -> list:
    """The outputs (final loop-carried values, then the stacked scan outputs) of an ONNX
    ``Loop`` node, unrolled. ``value(v, what)`` must give a known input or raise the dialect's
    clear error; ``maybe_value(v)`` gives it or None; ``const(numpy array)`` makes a value;
    ``stack(values)`` stacks along a new axis 0."""
    body, m, cond, carried, formal, n_scan = loop_parts(ctx, ins, attrs)
    trip = None if m is None else int(np.asarray(value(m, "Loop's trip count M"))
                                      .reshape(-1)[0])
    go = True if cond is None else scalar_flag(value(cond, "Loop's initial condition"))
    scans: list[list] = [[] for _ in range(n_scan)]
    i = 0
    while go and (trip is None or i < trip):
        if i >= MAX_UNROLL:
            raise ctx.fail(f"the loop runs past {MAX_UNROLL} iterations; it is unrolled at "
                           "import, so its trip count must be small")
        binds = {formal[0]: const(np.array(i, "int64")), formal[1]: const(np.array(go))}
        binds.update(zip(formal[2:], carried))
        outs = ctx.subgraph(body, binds)
        carried = outs[1:1 + len(carried)]
        for acc, v in zip(scans, outs[1 + len(carried):]):
            acc.append(v)
        i += 1
        if cond is None and trip is not None:
            continue  # a for loop: the body's condition output is ignored
        known = maybe_value(outs[0])
        if known is None:
            raise ctx.fail("the loop condition depends on run-time data; Loop is unrolled at "
                           "import and needs a condition known then (or a trip count with no "
                           "condition input)")
        go = scalar_flag(known)
    if n_scan and i == 0:
        raise ctx.fail("the loop runs zero times, so its scan outputs have no known shape")
    return list(carried) + [stack(acc) for acc in scans]


def import_loop(ctx: NodeContext, ins: list, attrs: dict, *, known: Callable,
                unroll: Callable, run_time_loop: Callable,
                needs_input: type[Exception]) -> list:
    """The outputs of an ONNX ``Loop`` node: ``unroll()`` when ``known(v)`` holds for its trip
    count and condition (those given) and the unrolling does not stop at run-time data, else
    ``run_time_loop()``. When that fails too, a trip count or condition the caller could bind
    is asked for (the dialect's ``needs_input`` error, unless it says the value is
    ``computed`` from an input), and otherwise the error gives both reasons."""
    m = ins[0] if ins else None
    cond = ins[1] if len(ins) > 1 else None
    unrolling = ""
    if all(v is None or known(v) for v in (m, cond)):
        try:
            return unroll()
        except ctx.error as e:
            if "run-time data" not in str(e):
                raise
            unrolling = str(e).split(": ", 1)[-1]
    try:
        return run_time_loop()
    except ctx.error as e:
        # a body the run-time loop cannot express (it needs the iteration number as a
        # constant, carries sequences or changes shapes): unrolling needs the trip count and
        # condition known at import, which asks the caller to bind them when they are graph
        # inputs
        for v, what in ((m, "Loop's trip count M"), (cond, "Loop's initial condition")):
            if v is not None:
                try:
                    ctx.value(v, what)
                except needs_input as need:
                    if not getattr(need, "computed", False):  # (computed: the fuller reason)
                        raise
                except ctx.error:
                    pass
        why = f" ({unrolling})" if unrolling else ""
        raise ctx.fail(f"the loop's trip count or condition is only known at run time{why}, "
                       f"and its body cannot run as a run-time loop: {e}") from e
