"""Relax programs through pass sequences that lower them (LegalizeOps, AnnotateTIROpPattern,
FuseOps, FuseTIR, ...) before ``relax.build``, and the built executable exported and loaded.

``relax_pass_sequences`` draws high-level passes only: LegalizeOps is what the build does after
them. A user writing TVM's pipeline by hand runs the lowering passes themselves, with the
clean-ups between them (DeadCodeElimination, CanonicalizeBindings, FoldConstant,
EliminateCommonSubexpr, RewriteDataflowReshape). Here a BlockBuilder program of the Relax
generator goes through zero to three high-level passes, LegalizeOps, then a prefix of
AnnotateTIROpPattern -> FuseOps -> FuseTIR (the order the passes need), a clean-up drawn after
each step, then ``relax.build``. The VM's values must match the numpy reference of the ORIGINAL
program at the seed's sizes, and the executable exported (``export_library``) and loaded back
(``runtime.load_module``) must give the in-memory executable's values bit for bit.
"""

from __future__ import annotations

import random
import tempfile

import numpy as np

from .differential import Finding
from .relax_differential import _run_vm, _script, exported_and_loaded
from .relax_generator import RelaxProgram
from .relax_pass_sequences import (
    _problem,
    _sizes,
    generate_pass_program,
    minimal_sequence,
    sequence_pass_names,
)

#: The lowering chain, in the order each pass needs the one before it.
LOWERING = ("LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR")
#: Clean-ups a hand-written pipeline puts between lowering steps.
CLEANUPS = ("DeadCodeElimination", "CanonicalizeBindings", "FoldConstant",
            "EliminateCommonSubexpr", "RewriteDataflowReshape")


def draw_lowered_sequence(seed: int) -> tuple[str, ...]:
    """High-level passes, LegalizeOps, a prefix of the rest of the lowering chain, each step
    maybe followed by a clean-up."""
    rng = random.Random(seed * 7307 + 19)
    high = sequence_pass_names()
    seq = [rng.choice(high) for _ in range(rng.randint(0, 3))]
    for name in LOWERING[:rng.randint(1, len(LOWERING))]:
        seq.append(name)
        if rng.random() < 0.5:
            seq.append(rng.choice(CLEANUPS))
    return tuple(seq)


def generate_lowered_program(seed: int) -> RelaxProgram:
    """The Relax program of ``seed`` (the pass-sequence generator's: symbolic on odd seeds)
    with its lowering sequence as features."""
    prog = generate_pass_program(seed)
    seq = draw_lowered_sequence(seed)
    prog.features = set(getattr(prog, "features", ())) | {f"pass {n}" for n in seq} | \
        {f"lowered to {next(n for n in reversed(seq) if n in LOWERING)}"}
    return prog


def _same(a: list, b: list) -> str | None:
    """None when two runs' outputs are equal bit for bit (NaN where NaN); else what differs."""
    if len(a) != len(b):
        return f"{len(a)} outputs vs {len(b)}"
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"output {k}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
        if not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
            return f"output {k}: {np.count_nonzero(x != y)} values differ"
    return None


def _saved_difference(prog: RelaxProgram, ex, sizes) -> str | None:
    """Executable ``ex`` exported and loaded back against itself in memory, or None when
    they give the same values."""
    import minitvm as tvm
    from minitvm import relax

    vm = relax.VirtualMachine(ex, tvm.cpu())
    with tempfile.TemporaryDirectory() as folder:
        loaded = relax.VirtualMachine(exported_and_loaded(ex, folder), tvm.cpu())
        for k, n in enumerate(sizes):
            inputs = prog.inputs(n, seed=prog.seed * 1000 + k)
            with np.errstate(all="ignore"):
                want, got = _run_vm(vm, inputs), _run_vm(loaded, inputs)
            if isinstance(want, BaseException) or isinstance(got, BaseException):
                if type(want) is not type(got) or str(want) != str(got):
                    return f"n={n}: in memory {want!r:.200}, loaded {got!r:.200}"
                continue
            diff = _same(want, got)
            if diff:
                return f"n={n}: {diff}"
    return None


def check_lowered_program(prog: RelaxProgram, sequence: tuple[str, ...] | None = None
                          ) -> list[Finding]:
    """``prog`` through its lowering sequence and relax.build vs the reference, then the
    exported-and-loaded executable vs the in-memory one."""
    seq = draw_lowered_sequence(prog.seed) if sequence is None else tuple(sequence)
    sizes = _sizes(prog)
    built: list = []
    got = _problem(prog, seq, sizes, built)
    if got is not None:
        kind, what = got
        minimal = minimal_sequence(prog, seq, sizes) if kind != "boundary-dependent" else seq
        return [Finding(kind, "lowering passes+relax.build", prog.seed,
                        f"sequence {list(seq)} (minimal {list(minimal)}): {what}",
                        _script(prog.mod))]
    try:
        diff = _saved_difference(prog, built[0], sizes)
    except Exception as err:  # noqa: BLE001
        diff = f"{type(err).__name__}: {str(err)[:400]}"
    if diff:
        return [Finding("mismatch", "export_library+load", prog.seed,
                        f"sequence {list(seq)}: {diff}", _script(prog.mod))]
    return []
