"""A tuning task measured the way the model runs it: its fused function as a program of its own.

An op measured alone (``workload.workload_program``) leaves out what the model's kernel does
around it: the bias, activation or residual add fused into its epilogue, and which inputs are
constants (prepacked weights): BERT-base's 128x3072x768 dense takes 3.2 ms alone and 3.7 ms with
the bias and GELU it is fused with, so a choice can win alone and lose in the model (one that
cannot fuse the epilogue pays a pass over the output). ``extract_tasks`` therefore keeps,
for each workload, the first fused function that reaches it as a *program spec*: the function's
Relay text as a plain ``@main`` and the names of its parameters the model feeds with constants.
The spec is plain text, so a task still pickles to a worker process or a Ray node.
"""

from __future__ import annotations

import functools
import json

import numpy as np

from ..ir.module import IRModule


def program_spec(call) -> str | None:
    """The spec of the fused function ``call`` applies (a Relay ``Call`` of a primitive
    function), or None when its text does not parse back to the same signature (a function
    holding a tensor constant prints as a reference to metadata, which the text does not carry)."""
    from .. import relay
    from ..relay.expr import Constant
    from ..relay.parser import parse

    func = call.op
    plain = relay.Function(func.params, func.body, func.ret_type)
    text = IRModule.from_expr(plain).astext()
    try:
        parsed = parse(text)["main"]
    except Exception:  # an unprintable or unparsable body: the task keeps the op alone
        return None
    if len(parsed.params) != len(func.params):
        return None
    consts = [p.name_hint for p, a in zip(func.params, call.args) if isinstance(a, Constant)]
    return json.dumps({"text": text, "consts": consts})


def fused_program(spec: str, seed: int = 0):
    """(module, constant params, inputs) of ``spec``: every parameter gets uniform values in
    [-1, 1), drawn in parameter order from ``seed``."""
    from ..relay.parser import parse

    data = json.loads(spec)
    mod = parse(data["text"])
    rng = np.random.default_rng(seed)
    params, inputs = {}, {}
    for p in mod["main"].params:
        t = p.type_annotation
        value = rng.uniform(-1, 1, size=tuple(int(d) for d in t.shape)).astype(t.dtype)
        (params if p.name_hint in data["consts"] else inputs)[p.name_hint] = value
    return mod, params, inputs


def build_fused(spec: str, key, knobs: dict | None, target="llvm"):
    """(graph module, inputs) of ``spec`` built with ``knobs`` for workload ``key`` (None: the
    defaults). Raises ``RuntimeError`` when the build never asked for the workload's knobs."""
    from ..schedule.knobs import key_text
    from .workload import build_traced

    mod, params, inputs = fused_program(spec)
    return build_traced(mod, params, inputs, key, knobs, target,
                        f"the fused function of {key_text(key)}")


def checked_spec(spec: str | None, key, target="llvm") -> str | None:
    """``spec`` when its program builds with the default knobs and reaches workload ``key``,
    else None (the task then measures the op alone): a program that cannot be built would fail
    every candidate alike."""
    if spec is None:
        return None
    try:
        build_fused(spec, key, None, target)
    except Exception:  # any failure of the program itself: fall back to the op alone
        return None
    return spec


@functools.lru_cache(maxsize=8)
def reference_output(spec: str) -> np.ndarray:
    """``spec``'s output by the ops' numpy references (the debug executor), with OpenBLAS on
    one thread: its idle threads spin after a call and took the second core from the kernels
    timed next (a BERT batch_matmul measured at one thread's speed, 0.32 against 0.17 ms)."""
    from .. import relay
    from ..relay.transform.bind_params import bind_params_by_name
    from ..runtime import blas

    mod, params, inputs = fused_program(spec)
    main = bind_params_by_name(mod["main"], params)
    run = relay.create_executor("debug", mod=IRModule.from_expr(main)).evaluate()
    with blas.single_threaded():
        return run(*[inputs[p.name_hint] for p in main.params]).numpy()
