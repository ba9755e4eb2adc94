"""``minitvm check-pass NAME --programs N``: the differential checks for any pass, yours too.

NAME is a registered pass (``FoldConstant``), or ``module:attr`` / ``file.py:attr`` naming a pass
object or a factory taking no arguments. ``--import FILE`` imports a file first, so a pass that
registers itself with ``@register_pass`` is found by name. Exit status 0 when every program
passed, 1 when some check failed (each failure is printed with its seed and program), 2 when
NAME does not name a pass.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time

from .differential import check_pass, make_pass
from .generator import generate_program


def _check_programs(programs: int, seed: int, check) -> tuple[list, dict[str, int], float]:
    """Run ``check(seed)`` on ``programs`` consecutive seeds: the findings, their count per
    kind, and the seconds taken."""
    t0 = time.perf_counter()
    failures: list = []
    kinds: dict[str, int] = {}
    for k in range(programs):
        found = check(seed + k)
        for f in found:
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
        failures.extend(found)
    return failures, kinds, time.perf_counter() - t0


def _import_file(path: str):
    name = "_minitvm_user_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def resolve_pass(name: str):
    """A zero-argument factory of the pass ``name`` (see the module docstring)."""
    from ...transform.pass_base import Pass
    from ...transform.registry import get_pass_entry

    if get_pass_entry(name) is not None:
        return lambda: make_pass(name)
    where, sep, attr = name.rpartition(":")
    if not sep:
        raise ValueError(f"no registered pass named {name!r} (use module:attr or file.py:attr "
                         "for a pass that is not registered, or --import the file that "
                         "registers it)")
    module = _import_file(where) if where.endswith(".py") else importlib.import_module(where)
    obj = getattr(module, attr, None)
    if obj is None:
        raise ValueError(f"{where} has no attribute {attr!r}")
    if isinstance(obj, Pass):
        return lambda: obj
    if callable(obj):
        return obj
    raise ValueError(f"{name} is neither a pass nor a factory of one")


def _is_relax_pass_name(name: str) -> bool:
    from .relax_differential import relax_pass_names

    return any(n == name or n.rsplit(".", 1)[-1] == name for n in relax_pass_names())


def run_check_pass(name: str, programs: int = 100, seed: int = 0, imports=(),
                   round_trip: bool = True, max_ops: int = 14, show: int = 3,
                   out=sys.stdout, dialect: str | None = None) -> int:
    """Check pass ``name`` on ``programs`` random programs; print a summary; exit status.
    ``dialect="relax"`` (automatic for a registered Relax pass) uses random Relax programs."""
    for path in imports:
        _import_file(path)
    from ...transform.registry import get_pass_entry

    entry = get_pass_entry(name)
    if dialect == "relax" or (dialect is None and (
            (entry is not None and entry.module.startswith("minitvm.relax."))
            or (entry is None and ":" not in name and _is_relax_pass_name(name)))):
        return _run_relax(name, programs, seed, round_trip, max_ops, show, out)
    try:
        factory = resolve_pass(name)
    except (ValueError, ImportError) as err:
        out.write(f"minitvm check-pass: {err}\n")
        return 2
    failures, kinds, dt = _check_programs(
        programs, seed, lambda s: check_pass(generate_program(s, max_ops=max_ops), name,
                                             round_trip=round_trip, pass_factory=factory))
    out.write(f"check-pass {name}: {programs} random programs (seeds {seed}..{seed + programs - 1})"
              f" in {dt:.1f} s: {programs - len({f.seed for f in failures})} passed every check"
              f"\n")
    out.write("checks: runs without error, well formed and well typed after, same interpreter "
              "values (NaN-aware), deterministic, input unchanged, text round trip\n")
    if not failures:
        return 0
    out.write("failures by kind: " + ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items()))
              + "\n")
    for f in failures[:show]:
        out.write("\n" + str(f)[:4000] + "\n")
    out.write(f"\nre-run one: minitvm check-pass {name} --programs 1 --seed {failures[0].seed}\n")
    return 1


def _run_relax(name: str, programs: int, seed: int, round_trip: bool, max_ops: int, show: int,
               out) -> int:
    """The Relax differential checks (``relax_differential``) of pass ``name``."""
    from .relax_differential import check_relax_pass, make_relax_pass
    from .relax_generator import generate_relax_program

    if ":" in name:
        try:
            factory = resolve_pass(name)
        except (ValueError, ImportError) as err:
            out.write(f"minitvm check-pass: {err}\n")
            return 2
    else:
        try:
            make_relax_pass(name)
        except ValueError as err:
            out.write(f"minitvm check-pass: {err}\n")
            return 2
        factory = None
    failures, kinds, dt = _check_programs(
        programs, seed, lambda s: check_relax_pass(generate_relax_program(s, max_ops=max_ops),
                                                   name, pass_factory=factory,
                                                   round_trip=round_trip))
    out.write(f"check-pass {name} (Relax): {programs} random Relax programs (seeds {seed}.."
              f"{seed + programs - 1}) in {dt:.1f} s: "
              f"{programs - len({f.seed for f in failures})} passed every check\n")
    out.write("checks: runs without error, well formed after (relax.analysis.well_formed), same "
              "values as the numpy reference (NaN-aware, both symbolic sizes), deterministic, "
              "input unchanged, TVMScript round trip\n")
    if not failures:
        return 0
    out.write("failures by kind: " + ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items()))
              + "\n")
    for f in failures[:show]:
        out.write("\n" + str(f)[:4000] + "\n")
    out.write(f"\nre-run one: minitvm check-pass {name} --programs 1 --seed "
              f"{failures[0].seed}\n")
    return 1
