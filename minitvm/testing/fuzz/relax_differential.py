"""Differential checks of Relax passes and of ``relax.build`` on generated Relax programs.

For one pass on one program: it runs without error, its output is well formed
(``relax.analysis.well_formed``), a second run gives a structurally equal module (determinism),
the input module is not modified, the output's TVMScript parses back to a structurally equal
module, and — while the output is still high-level Relax — the numpy reference evaluator gives
the same values as on the input (NaN-aware). The lowering passes run in the build pipeline's
order with the same checks after each; then ``relax.build`` + the VM run the program at two
values of the symbolic dimension from ONE build and must match the reference.

A failure is a ``Finding`` (from the Relay harness) carrying the program's TVMScript;
``shrink_relax`` drops bindings while the failure persists.
"""

from __future__ import annotations

import re

import numpy as np

from ... import transform as _transform
from ...ir.structural import structural_equal, structural_hash
from .boundaries import relax_near_boundary
from .differential import DEFAULT_RTOL, Finding, compare_values, flatten
from .relax_generator import SYM_VALUES, RelaxProgram
from .relax_reference import EmptyReduction, NoReference, evaluate

__all__ = ["relax_pass_names", "standalone_pass_names", "PIPELINE", "check_relax_pass",
           "check_relax_pipeline", "check_relax_program", "shrink_relax", "make_relax_pass"]

#: The build pipeline's passes in order (``relax.pipeline``): run as a chain, not alone.
PIPELINE = ("FoldConstant", "LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "FuseOps",
            "FuseTIR", "FoldTransposeIntoConsumer", "RewriteDataflowReshape", "ToNonDataflow",
            "CallTIRRewrite", "StaticPlanBlockMemory", "LowerAllocTensor", "KillAfterLastUse",
            "VMBuiltinLower", "VMShapeLower", "AttachGlobalSymbol")
#: Passes that expect a lowered module (or a particular stage): checked inside the chain only.
_STAGE_ONLY = {"CallTIRRewrite", "StaticPlanBlockMemory", "LowerAllocTensor", "KillAfterLastUse",
               "VMBuiltinLower", "VMShapeLower", "FuseTIR", "AnnotateTIROpPattern",
               "RewriteDataflowReshape", "FoldTransposeIntoConsumer", "AttachGlobalSymbol"}
#: Passes needing arguments random programs cannot give (patterns, parameter names...).
NOT_APPLICABLE = {"FuseOpsByPattern": "needs patterns", "MergeCompositeFunctions":
                  "needs composite functions from FuseOpsByPattern", "BindParams":
                  "needs parameter values by name", "relax.BindSymbolicVars":
                  "needs symbolic variable values"}
#: Passes that intentionally leave purity-checked form (outputs are not high-level Relax).
_NO_NUMERICS = {"RemovePurityChecking"}
#: Passes that compute in a lower precision by design: their output is compared at it.
_PRECISION = {"ToMixedPrecision": "float16"}


def relax_pass_names() -> list[str]:
    """Every registered Relax pass."""
    from ...transform.registry import list_passes

    return sorted(e.name for e in list_passes() if e.module.startswith("minitvm.relax."))


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def standalone_pass_names() -> list[str]:
    """Registered Relax passes that are safe to run alone on a high-level module."""
    return [n for n in relax_pass_names() if _short(n) not in _STAGE_ONLY
            and n not in NOT_APPLICABLE and _short(n) not in NOT_APPLICABLE]


def make_relax_pass(name: str):
    """The registered Relax pass ``name`` (full or short name)."""
    from ...transform.registry import get_pass_entry

    entry = get_pass_entry(name)
    if entry is None:
        for full in relax_pass_names():
            if _short(full) == name:
                entry = get_pass_entry(full)
                break
    if entry is None:
        raise ValueError(f"no registered Relax pass named {name!r}")
    return entry.factory()


def _script(mod) -> str:
    try:
        return mod.script(show_meta=True)
    except Exception as err:  # noqa: BLE001 - reported as part of a finding
        return f"<cannot print: {type(err).__name__}: {err}>"


def _well_formed_problem(mod) -> str | None:
    from ...relax.analysis.well_formed import check_well_formed

    try:
        return check_well_formed(mod)
    except Exception as err:  # noqa: BLE001
        return f"well_formed raised {type(err).__name__}: {err}"


def _round_trip_problem(mod) -> str | None:
    from ...script.parser.entry import from_source

    text = _script(mod)
    try:
        back = from_source(text)
    except Exception as err:  # noqa: BLE001
        return f"{type(err).__name__}: {str(err)[:400]}\n{text[:2500]}"
    if not structural_equal(back, mod):
        return "from_source(mod.script()) differs from the module:\n" + text[:2500]
    return None


def reference(prog: RelaxProgram, mod=None, n: int = SYM_VALUES[0], special: bool = False):
    """The numpy reference values of ``mod`` (default: the program) at ``n``: a list of arrays,
    or an EmptyReduction instance when the program has no defined value there."""
    try:
        return flatten(evaluate(mod or prog.mod, prog.inputs(n, special=special)))
    except EmptyReduction as err:
        return err


def _compare(ref, got, floor: str | None) -> str | None:
    if isinstance(ref, EmptyReduction):
        return None if isinstance(got, ValueError) else \
            f"the reference has no value ({ref}) but the result has one"
    if isinstance(got, BaseException):
        return f"the reference has a value but the run raised {type(got).__name__}: {got}"
    return compare_values(ref, got, floor=floor)


def _floor(prog: RelaxProgram) -> str | None:
    text = _script(prog.mod)
    for dt in ("float16", "float32", "float64"):
        if dt in text:
            return dt
    return None


def check_relax_pass(prog: RelaxProgram, name: str, pass_factory=None,
                     round_trip: bool = True, refs: dict | None = None,
                     determinism: bool = True) -> list[Finding]:
    """Every check of Relax pass ``name`` (or ``pass_factory()``) on ``prog``
    (``determinism=False``: skip the second run)."""
    mod = prog.mod
    text = _script(mod)

    def finding(kind, detail):
        return Finding(kind, name, prog.seed, detail, text)

    make = pass_factory or (lambda: make_relax_pass(name))
    before = structural_hash(mod)
    try:
        with _transform.PassContext(opt_level=3):
            out = make()(mod)
    except Exception as err:  # noqa: BLE001
        return [finding("exception", f"{type(err).__name__}: {str(err)[:500]}")]
    found = []
    if structural_hash(mod) != before or _script(mod) != text:
        found.append(finding("mutated", "the pass modified its input module"))
    problem = _well_formed_problem(out)
    if problem:
        return found + [finding("ill-formed", problem[:600])]
    try:
        if determinism:
            with _transform.PassContext(opt_level=3):
                again = make()(mod)
            if not structural_equal(again, out):
                found.append(finding("nondeterministic", "two runs gave different modules"))
    except Exception as err:  # noqa: BLE001
        found.append(finding("nondeterministic", f"second run raised {type(err).__name__}"))
    if round_trip:
        problem = _round_trip_problem(out)
        if problem:
            found.append(finding("round-trip", problem))
    if _short(name) in _NO_NUMERICS:
        return found
    refs = {} if refs is None else refs
    for n in (SYM_VALUES if prog.symbolic else SYM_VALUES[:1]):
        if n not in refs:
            refs[n] = reference(prog, n=n)
        try:
            got = reference(prog, out, n=n)
        except NoReference:
            break  # the output is no longer high-level Relax
        except Exception as err:  # noqa: BLE001
            found.append(finding("exception", f"evaluating the output at n={n}: "
                                 f"{type(err).__name__}: {str(err)[:300]}"))
            break
        diff = _compare(refs[n], got, _PRECISION.get(_short(name)) or _floor(prog))
        if diff:
            found.append(finding("mismatch", f"n={n}: {diff}"))
            break
    return found


def check_relax_pipeline(prog: RelaxProgram, round_trip: bool = True,
                         full_stages=None) -> list[Finding]:
    """The build pipeline pass by pass, then ``relax.build`` + VM at two values of the symbolic
    dimension from one build, against the numpy reference. Every stage's output must be well
    formed; the stages in ``full_stages`` (default: one, chosen by the seed, so a long run
    covers them all at a fraction of the cost; "all": every stage) also get the input-unchanged,
    determinism and TVMScript round-trip checks."""
    from ...relax.transform import LegalizeOps  # noqa: F401 - registers the lowering passes

    if full_stages is None:
        full_stages = {prog.seed % len(PIPELINE)}
    elif full_stages == "all":
        full_stages = set(range(len(PIPELINE)))
    text = _script(prog.mod)
    found: list[Finding] = []
    mod = prog.mod
    for k, name in enumerate(PIPELINE):
        where = f"pipeline[{k}] {name}"
        try:
            make_relax_pass(name)
        except ValueError:
            continue
        full = k in full_stages
        snapshot = _script(mod) if full else None
        before = structural_hash(mod) if full else None

        def run(m=mod, name=name):
            with _transform.PassContext(opt_level=3):
                return make_relax_pass(name)(m)

        try:
            out = run()
        except Exception as err:  # noqa: BLE001
            found.append(Finding("exception", where, prog.seed,
                                 f"{type(err).__name__}: {str(err)[:500]}", _script(mod)))
            return found
        problem = _well_formed_problem(out)
        if problem:
            found.append(Finding("ill-formed", where, prog.seed, problem[:600], _script(mod)))
            return found
        if full:
            if structural_hash(mod) != before or _script(mod) != snapshot:
                found.append(Finding("mutated", where, prog.seed, "input modified", snapshot))
            try:
                if not structural_equal(run(), out):
                    found.append(Finding("nondeterministic", where, prog.seed,
                                         "two runs gave different modules", snapshot))
            except Exception as err:  # noqa: BLE001
                found.append(Finding("nondeterministic", where, prog.seed,
                                     f"second run raised {type(err).__name__}", snapshot))
            if round_trip:
                problem = _round_trip_problem(out)
                if problem:
                    found.append(Finding("round-trip", where, prog.seed, problem, snapshot))
        mod = out
    found += check_relax_build(prog, text)
    return found


def _run_vm(vm, inputs):
    try:
        return flatten(vm["main"](*inputs))
    except ValueError as err:
        return err


def exported_and_loaded(ex, folder: str):
    """Relax executable ``ex`` through ``export_library`` and ``runtime.load_module``: what a
    deployment runs, without the compiler."""
    import os

    import minitvm as tvm

    path = os.path.join(folder, "relax_exec.so")
    ex.export_library(path)
    return tvm.runtime.load_module(path)


def check_relax_build(prog: RelaxProgram, text: str | None = None,
                      special: bool = False, sizes: list[int] | None = None,
                      saved: bool = False) -> list[Finding]:
    """``relax.build`` once, then the VM at each value of ``n`` (``sizes``, by default
    ``SYM_VALUES``) against the reference; the k-th run of a schedule gets its own inputs.
    ``saved``: the VM runs the executable exported and loaded back ("relax.build saved")."""
    import tempfile

    import minitvm as tvm
    from minitvm import relax

    text = text or _script(prog.mod)
    where = "relax.build" + (" [ieee]" if special else "") + (" saved" if saved else "")
    try:
        ex = relax.build(prog.mod, target="llvm")
        if saved:
            with tempfile.TemporaryDirectory() as folder:
                ex = exported_and_loaded(ex, folder)
        vm = relax.VirtualMachine(ex, tvm.cpu())
    except Exception as err:  # noqa: BLE001
        return [Finding("exception", where, prog.seed, f"{type(err).__name__}: "
                        f"{str(err)[:500]}", text)]
    schedule = sizes if sizes is not None else \
        SYM_VALUES if prog.symbolic else SYM_VALUES[:1]
    for k, n in enumerate(schedule):
        inputs = prog.inputs(n, special=special, seed=None if sizes is None else
                             prog.seed * 1000 + k)
        ref = _reference_on(prog, inputs)
        at = f"n={n}" if sizes is None else f"run {k} (n={n}, sizes {list(sizes[:k + 1])})"
        try:
            with np.errstate(all="ignore"):
                got = _run_vm(vm, inputs)
        except Exception as err:  # noqa: BLE001
            return [Finding("exception", where, prog.seed, f"VM at {at}: "
                            f"{type(err).__name__}: {str(err)[:400]}", text)]
        diff = compare_reference(prog, inputs, ref, got)
        if diff:
            kind = "mismatch"
            if special and _order_dependent(prog, vm, inputs):
                kind = "order-dependent"
            elif not special and not isinstance(ref, BaseException):
                outs = [int(k) for k in re.findall(r"output (\d+)", diff)] or None
                near = relax_near_boundary(prog.mod, inputs,
                                           DEFAULT_RTOL.get(_floor(prog) or "float32", 2e-4),
                                           outs)
                if near:
                    kind, diff = "boundary-dependent", f"{diff}; {near}"
            return [Finding(kind, where, prog.seed, f"{at}: {diff}", text)]
    return []


def check_relax_sizes(prog: RelaxProgram, sizes: list[int] | None = None,
                      saved: bool = False) -> list[Finding]:
    """One ``relax.build`` run at a schedule of symbolic sizes (repeats, changes back and
    forth, 1 and 0; by default drawn from the seed): the VM's per-shape state (plans, liveness,
    kernels specialized per size) must give the reference's values at each."""
    import random

    from .dynamic_generator import size_schedule

    if sizes is None:
        # n = 0 included: max / min / argmax / argmin over an axis empty at run time have no
        # value, where the reference raises EmptyReduction the VM must raise a ValueError
        sizes = size_schedule(random.Random(prog.seed), 0) if prog.symbolic else [2, 2, 2]
    return check_relax_build(prog, sizes=sizes, saved=saved)


def _reference_on(prog: RelaxProgram, inputs: list):
    try:
        return flatten(evaluate(prog.mod, inputs))
    except EmptyReduction as err:
        return err


def compare_reference(prog: RelaxProgram, inputs: list, ref, got) -> str | None:
    """``_compare(ref, got)``, where a reference with no value (an empty argmax / argmin)
    also accepts the value of the program whose match_casts to the struct info their value
    already has, and a field of a tuple literal only its own field, do not count as reads:
    the reduction then is dead, and passes may drop the cast or tuple and it
    (CanonicalizeBindings and DeadCodeElimination; seeds 600211, 700515)."""
    diff = _compare(ref, got, _floor(prog))
    if diff and isinstance(ref, EmptyReduction) and not isinstance(got, BaseException):
        try:
            alt = flatten(evaluate(prog.mod, inputs, implied_casts=False,
                                    whole_tuples=False))
        except EmptyReduction:
            return diff
        if _compare(alt, got, _floor(prog)) is None:
            return None
    return diff


#: Relax operators that accumulate (sums of products or of values): compiled loops may
#: contract to FMA and reassociate, so where huge finite inputs overflow depends on the order.
_ACCUMULATING = frozenset({
    "relax.matmul", "relax.nn.conv2d", "relax.sum", "relax.mean", "relax.prod",
    "relax.variance", "relax.std", "relax.cumsum", "relax.nn.avg_pool2d",
    "relax.nn.adaptive_avg_pool2d", "relax.nn.softmax", "relax.nn.log_softmax",
    "relax.nn.layer_norm", "relax.nn.rms_norm"})


def _order_dependent(prog: RelaxProgram, vm, inputs: list) -> bool:
    """Whether a program with an accumulation agrees once its huge finite inputs are replaced
    by 1 (then the difference was where an overflow happened, not a wrong answer)."""
    from .differential import _tamed

    text = _script(prog.mod)
    if not any(f"R.{name[len('relax.'):]}(" in text for name in _ACCUMULATING):
        return False
    tamed = _tamed(inputs)
    if all(np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
           for a, b in zip(tamed, inputs, strict=True)):
        return False
    try:
        with np.errstate(all="ignore"):
            return _compare(_reference_on(prog, tamed), _run_vm(vm, tamed),
                            _floor(prog)) is None
    except Exception:  # noqa: BLE001
        return False


def check_relax_program(prog: RelaxProgram, names=None, pipeline: bool = True,
                        round_trip: bool = True, sample: int = 1) -> list[Finding]:
    """Every standalone pass, then the pipeline and the build, on one program. With
    ``sample=k`` > 1 (long runs), each pass gets the determinism and round-trip checks on one
    program in k (rotating with the seed); runs, well-formedness, input-unchanged and numerics
    are checked on every program."""
    refs: dict = {}
    found = []
    for k, name in enumerate(standalone_pass_names() if names is None else names):
        full = (k + prog.seed) % sample == 0
        found += check_relax_pass(prog, name, round_trip=round_trip and full, refs=refs,
                                  determinism=full)
    if pipeline:
        found += check_relax_pipeline(prog, round_trip=round_trip)
    return found


# ------------------------------------------------------------------------------ shrinking
def drop_binding(mod, index: int):
    """``mod`` with the ``index``-th binding of main (over all blocks) removed and every use of
    its variable replaced by another in-scope value of the same struct info, or None when
    no such value exists (or the result is not well formed)."""
    from ...ir.module import IRModule
    from ...relax.analysis.well_formed import check_well_formed
    from ...relax.expr import (
        BindingBlock,
        DataflowBlock,
        Function,
        SeqExpr,
        VarBinding,
    )
    from ...relax.expr_functor import ExprMutator

    func = mod["main"]
    flat = [(bi, b) for bi, blk in enumerate(func.body.blocks) for b in blk.bindings]
    if not 0 <= index < len(flat):
        return None
    _, victim = flat[index]
    sinfo = victim.var.struct_info
    subst = None
    candidates = list(func.params) + [b.var for _, b in flat[:index]]
    for v in reversed(candidates):
        if structural_equal(v.struct_info, sinfo):
            subst = v
            break
    if subst is None and _is_used(func, victim.var):
        return None

    class _Replace(ExprMutator):
        def visit_var_(self, op):
            return subst if op is victim.var else op

        visit_dataflow_var_ = visit_var_

    rep = _Replace()
    blocks = []
    for blk in func.body.blocks:
        new = []
        for b in blk.bindings:
            if b is victim:
                continue
            value = rep.visit_expr(b.value)
            new.append(VarBinding(b.var, value) if isinstance(b, VarBinding) else
                       type(b)(b.var, value, b.struct_info))
        if new:
            blocks.append(DataflowBlock(new) if isinstance(blk, DataflowBlock)
                          else BindingBlock(new))
    body = rep.visit_expr(func.body.body)
    out = Function(func.params, SeqExpr(blocks, body), func.ret_struct_info, func.is_pure,
                   func.attrs)
    new_mod = IRModule({"main": out})
    try:
        from ...relax.transform import Normalize

        new_mod = Normalize()(new_mod)
        if check_well_formed(new_mod):
            return None
    except Exception:  # noqa: BLE001 - not a valid smaller program
        return None
    return new_mod


def _is_used(func, var) -> bool:
    from ...relax.analysis import free_vars

    body = func.body
    for blk in body.blocks:
        for b in blk.bindings:
            if var in free_vars(b.value):
                return True
    return var in free_vars(body.body)


def shrink_relax(prog: RelaxProgram, fails, max_rounds: int = 200) -> RelaxProgram:
    """A smaller program (bindings dropped one at a time) for which ``fails(program)`` still
    holds; the TVMScript of the result is ``result.script()``."""
    from dataclasses import replace

    cur = prog
    rounds = 0
    changed = True
    while changed and rounds < max_rounds:
        changed = False
        n = sum(len(b.bindings) for b in cur.mod["main"].body.blocks)
        for i in reversed(range(n)):
            rounds += 1
            smaller = drop_binding(cur.mod, i)
            if smaller is None:
                continue
            cand = replace(cur, mod=smaller)
            try:
                bad = fails(cand)
            except Exception:  # noqa: BLE001
                bad = False
            if bad:
                cur = cand
                changed = True
                break
    return cur
