"""The Relay VM against the interpreter on programs with ``Any`` dimensions.

A program is compiled ONCE by ``relay.vm.compile`` and one ``VirtualMachine`` runs it at a
schedule of batch sizes (repeats, so call shapes get planned and call sites bound; changes back
and forth; 1; 0 where legal), each run with fresh inputs and shape-valued inputs drawn anew (so
a kernel sees the same shapes with other shape values). Every run must give the interpreter's
values (``differential.compare_values``: same shapes and dtypes, NaN-aware, close). Where the
interpreter refuses an input (an error), the VM must refuse it too. A difference explained by
a near tie in a computed sort key (``boundaries``) is "boundary-dependent", tolerated like
``differential.TOLERATED_KINDS``.
"""

from __future__ import annotations

import random

import numpy as np

from .boundaries import near_tie
from .differential import DEFAULT_RTOL, Finding, compare_values, flatten, precision_floor
from .dynamic_generator import DynamicProgram, generate_dynamic_program, size_schedule

__all__ = ["check_dynamic", "shrink_dynamic"]


def _text(mod) -> str:
    try:
        return mod.astext()
    except Exception as err:  # noqa: BLE001 - part of a finding
        return f"<cannot print: {type(err).__name__}: {err}>"


def _saved_and_loaded(exe, folder: str):
    """``exe`` through ``save()``, its kernels exported to a shared library in ``folder`` and
    ``Executable.load_exec`` of both: what a deployment runs, without the compiler."""
    import os

    from minitvm.runtime.module import load_module
    from minitvm.runtime.vm import Executable

    code, lib = exe.save()
    path = os.path.join(folder, "kernels.so")
    lib.export_library(path)
    return Executable.load_exec(bytes(code), load_module(path))


def check_dynamic(prog: DynamicProgram, sizes: list[int] | None = None,
                  opt_level: int | None = None, saved: bool = False) -> list[Finding]:
    """Compile ``prog`` once for the VM and run it at each batch of ``sizes`` (by default a
    schedule drawn from the seed) against the interpreter. ``saved``: the VM runs the
    executable saved, exported and loaded back (``_saved_and_loaded``; "relay.vm saved")."""
    import tempfile

    import minitvm as tvm
    from minitvm import relay
    from minitvm.runtime import vm as runtime_vm

    rng = random.Random(prog.seed)
    if sizes is None:
        sizes = size_schedule(rng, prog.min_size)
    if opt_level is None:
        opt_level = rng.choice([3, 3, 2, 0])
    where = f"relay.vm{' saved' if saved else ''} O{opt_level}"
    text = _text(prog.mod)
    try:
        with tvm.transform.PassContext(opt_level=opt_level):
            exe = relay.vm.compile(prog.mod, target="llvm")
        if saved:
            with tempfile.TemporaryDirectory() as folder:
                exe = _saved_and_loaded(exe, folder)
        vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
        ref_fn = relay.create_executor("debug", mod=prog.mod).evaluate()
    except Exception as err:  # noqa: BLE001 - what the fuzzer looks for
        return [Finding("exception", where, prog.seed, f"compile: {type(err).__name__}: "
                        f"{str(err)[:500]}", text)]
    floor = precision_floor(prog.mod)
    for k, n in enumerate(sizes):
        inputs = prog.inputs(n, seed=k)
        shapes = [a.shape for a in inputs]
        try:
            with np.errstate(all="ignore"):
                ref = flatten(ref_fn(*inputs))
        except Exception as err:  # noqa: BLE001 - the interpreter refuses: so must the VM
            try:
                got = flatten(vm.run(*inputs))
            except Exception:  # noqa: BLE001
                continue
            return [Finding("accepted", where, prog.seed,
                            f"run {k} (n={n}, sizes {sizes[:k + 1]}, shapes {shapes}): the "
                            f"interpreter raised {type(err).__name__}: {str(err)[:200]}, the VM "
                            "returned values", text)]
        try:
            with np.errstate(all="ignore"):
                got = flatten(vm.run(*inputs))
        except Exception as err:  # noqa: BLE001
            return [Finding("exception", where, prog.seed,
                            f"run {k} (n={n}, sizes {sizes[:k + 1]}, shapes {shapes}): "
                            f"{type(err).__name__}: {str(err)[:400]}", text)]
        diff = compare_values(ref, got, floor=floor)
        if diff:
            tie = near_tie(prog.mod, inputs, DEFAULT_RTOL.get(floor or "float32", 2e-4))
            kind = "mismatch" if tie is None else "boundary-dependent"
            diff = diff if tie is None else f"{diff}; {tie}"
            return [Finding(kind, where, prog.seed,
                            f"run {k} (n={n}, sizes {sizes[:k + 1]}, shapes {shapes}): {diff}",
                            text)]
    return []


def shrink_dynamic(seed: int, fails, max_ops: int = 10, **options) -> DynamicProgram | None:
    """The smallest program (fewest operator steps) of ``seed`` for which ``fails(prog)``."""
    best = None
    for ops in range(max_ops, 0, -1):
        try:
            prog = generate_dynamic_program(seed, max_ops=ops, **options)
        except Exception:  # noqa: BLE001 - a generator failure is not this finding
            continue
        if fails(prog):
            best = prog
    return best
