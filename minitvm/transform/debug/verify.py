"""Well-formedness after a pass: each dialect checks its own functions (hook ``well_formed``)."""

from __future__ import annotations

from ...ir.dialect import find_hook


class WellFormedError(ValueError):
    """A pass left the IR ill-formed (raised by ``transform.verify_each``)."""


def well_formed_problems(mod, limit: int = 5) -> list[str]:
    """Up to ``limit`` problems of ``mod`` (unbound or twice-bound variables, type mismatches),
    from the ``well_formed(gv, func, limit)`` hook of each function's dialect."""
    problems: list[str] = []
    for gv, fn in mod.functions.items():
        check = find_hook("well_formed", type(fn))
        if check is None:
            continue
        problems.extend(check(gv, fn, limit - len(problems)))
        if len(problems) >= limit:
            return problems[:limit]
    return problems
