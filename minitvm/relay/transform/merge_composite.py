"""MergeComposite: wrap every match of a pattern table into a ``Composite`` function.

Patterns are applied in table order (earlier entries take priority); each match becomes a call
of a function with ``Composite=<name>`` and ``PartitionedFromPattern`` attributes, as
``dataflow_pattern.partition`` builds it. A table entry's optional ``check(expr)`` vetoes a
match. Matches are never looked for inside functions already made composite. Types are
re-inferred after each entry, so checks can read ``checked_type`` of every node; as TVM's pass
ends with InferType, the composite functions' parameters and return types get the inferred
types written in.
"""

from __future__ import annotations

from ..dataflow_pattern import DFPattern, partition
from ._pass_helpers import make_function_pass, register
from .annotate_missing_types import annotate_missing_types
from .infer_type import InferTypeLocal

__all__ = ["MergeComposite", "merge_composite"]


def _entries(pattern_table) -> list[tuple]:
    out = []
    for k, entry in enumerate(pattern_table):
        if not isinstance(entry, tuple | list) or len(entry) not in (2, 3):
            raise ValueError(f"MergeComposite: pattern table entry {k} must be (name, pattern) "
                             f"or (name, pattern, check), got {entry!r}")
        name, pattern = entry[0], entry[1]
        check = entry[2] if len(entry) == 3 else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"MergeComposite: pattern table entry {k} has no name")
        if not isinstance(pattern, DFPattern):
            raise ValueError(f"MergeComposite: pattern of {name!r} is a "
                             f"{type(pattern).__name__}, not a DFPattern")
        if check is not None and not callable(check):
            raise ValueError(f"MergeComposite: check of {name!r} is not callable")
        out.append((name, pattern, check))
    return out


def merge_composite(func, pattern_table):
    """``func`` with the matches of ``pattern_table`` merged into composite functions."""
    for name, pattern, check in _entries(pattern_table):
        body = partition(pattern, func.body, {"Composite": name}, check)
        if body is not func.body:
            func = func.with_fields(body=body)
            InferTypeLocal(func)  # later checks read the types of the rebuilt nodes
    return func


@register("MergeComposite")
def MergeComposite(pattern_table):  # noqa: N802 - TVM's name
    """Merge the operators matching each pattern into a composite function.

    Parameters
    ----------
    pattern_table : list of (str, DFPattern[, Callable[[relay.Expr], bool]])
        ``(name, pattern, check)`` entries in priority order; ``check`` may veto a match.
    """
    entries = _entries(pattern_table)

    def run(func, mod, ctx):
        out = merge_composite(func, entries)
        if out is not func:
            InferTypeLocal(out)
            out = annotate_missing_types(out)
        return out

    return make_function_pass(run, opt_level=0, name="MergeComposite", required=["InferType"])
