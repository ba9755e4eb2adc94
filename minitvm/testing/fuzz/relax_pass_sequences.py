"""Relax programs through random sequences of Relax passes before ``relax.build``.

The Relax fuzzer checks each pass alone (``relax_differential.check_relax_pass``) and the build
pipeline in its own order; a user runs passes of their choice, in their order, before
``relax.build`` legalizes the rest. Here a program of the Relax generator goes through a
sequence drawn from the seed (one to six of the high-level passes, repeats allowed, in any
order), then ``relax.build`` and the VM at a schedule of sizes, against the numpy reference of
the ORIGINAL program: every high-level pass keeps the values, so any order of them must.

A difference is shrunk to the shortest sub-sequence that still shows it
(``minimal_sequence``); the finding names it.
"""

from __future__ import annotations

import random

import numpy as np

from ... import transform as _transform
from .boundaries import relax_near_boundary
from .differential import DEFAULT_RTOL, Finding
from .relax_differential import (
    _floor,
    _reference_on,
    _run_vm,
    _script,
    compare_reference,
    make_relax_pass,
    standalone_pass_names,
)
from .relax_generator import SYM_VALUES, RelaxProgram, generate_relax_program

#: Standalone passes a sequence does not draw: LegalizeOps is what the build does after the
#: sequence ("before legalization"); ToMixedPrecision computes in float16 by design (its
#: values are compared at that precision by the single-pass check); RunCodegen needs targets.
_NOT_DRAWN = frozenset({"LegalizeOps", "ToMixedPrecision", "RunCodegen"})


def sequence_pass_names() -> list[str]:
    """The passes a sequence draws from (short names)."""
    return [n.rsplit(".", 1)[-1] for n in standalone_pass_names()
            if n.rsplit(".", 1)[-1] not in _NOT_DRAWN]


def draw_sequence(seed: int, names: list[str] | None = None) -> tuple[str, ...]:
    """One to six pass names of ``seed``, repeats allowed, in a random order."""
    rng = random.Random(seed * 104729 + 3)
    names = sequence_pass_names() if names is None else names
    return tuple(rng.choice(names) for _ in range(rng.randint(1, 6)))


def generate_pass_program(seed: int) -> RelaxProgram:
    """The Relax program of ``seed`` (with a symbolic batch on odd seeds)."""
    return generate_relax_program(seed, symbolic=bool(seed % 2))


def _apply(mod, sequence):
    with _transform.PassContext(opt_level=3):
        for name in sequence:
            mod = make_relax_pass(name)(mod)
    return mod


def _sizes(prog: RelaxProgram) -> list[int]:
    return list(SYM_VALUES) + [0] if prog.symbolic else [SYM_VALUES[0]]


def _problem(prog: RelaxProgram, sequence, sizes: list[int],
             built: list | None = None) -> tuple[str, str] | None:
    """(kind, what) goes wrong for ``prog`` through ``sequence`` and the build, or None;
    the executable is appended to ``built`` when given (for further checks of it)."""
    import minitvm as tvm
    from minitvm import relax

    try:
        mod = _apply(prog.mod, sequence)
    except Exception as err:  # noqa: BLE001
        return "exception", f"the passes: {type(err).__name__}: {str(err)[:400]}"
    try:
        ex = relax.build(mod, target="llvm")
        vm = relax.VirtualMachine(ex, tvm.cpu())
    except Exception as err:  # noqa: BLE001
        return "exception", f"relax.build: {type(err).__name__}: {str(err)[:400]}"
    if built is not None:
        built.append(ex)
    for k, n in enumerate(sizes):
        inputs = prog.inputs(n, seed=prog.seed * 1000 + k)
        ref = _reference_on(prog, inputs)
        try:
            with np.errstate(all="ignore"):
                got = _run_vm(vm, inputs)
        except Exception as err:  # noqa: BLE001
            return "exception", f"VM at n={n}: {type(err).__name__}: {str(err)[:400]}"
        diff = compare_reference(prog, inputs, ref, got)
        if diff:
            if not isinstance(ref, BaseException):
                near = relax_near_boundary(
                    prog.mod, inputs, DEFAULT_RTOL.get(_floor(prog) or "float32", 2e-4), None)
                if near:
                    return "boundary-dependent", f"n={n}: {diff}; {near}"
            return "mismatch", f"n={n}: {diff}"
    return None


def minimal_sequence(prog: RelaxProgram, sequence, sizes: list[int]) -> tuple[str, ...]:
    """The shortest sub-sequence of ``sequence`` (passes dropped one at a time, greedily)
    under which the program still goes wrong; () when the build alone does."""
    current = list(sequence)
    changed = True
    while changed and current:
        changed = False
        for i in range(len(current)):
            trial = current[:i] + current[i + 1:]
            if _problem(prog, trial, sizes) is not None:
                current = trial
                changed = True
                break
    return tuple(current)


def check_relax_sequence(prog: RelaxProgram, sequence: tuple[str, ...] | None = None,
                         sizes: list[int] | None = None) -> list[Finding]:
    """``prog`` through ``sequence`` (default: the seed's), ``relax.build`` and the VM at
    ``sizes`` (default: the symbolic values and 0, or the one static size) against the
    reference; a finding names the sequence and its minimal failing sub-sequence."""
    sequence = draw_sequence(prog.seed) if sequence is None else tuple(sequence)
    sizes = _sizes(prog) if sizes is None else sizes
    got = _problem(prog, sequence, sizes)
    if got is None:
        return []
    kind, what = got
    minimal = minimal_sequence(prog, sequence, sizes) if kind != "boundary-dependent" else \
        sequence
    return [Finding(kind, "passes+relax.build", prog.seed,
                    f"sequence {list(sequence)} (minimal {list(minimal)}): {what}",
                    _script(prog.mod))]
