"""ToBasicBlockNormalForm: let-bind only the values shared across basic blocks.

A value used in more than one block (both If branches, a function body and its surroundings, ...)
is bound once in the innermost scope enclosing all its uses, so that no block reads a value
computed inside a sibling block. Everything else stays a dataflow graph. Lets already present
are kept. Built on the scope analysis of ToANormalForm.
"""

from __future__ import annotations

from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ._pass_helpers import register
from .to_a_normal_form import calc_scopes, fill_counting, fill_normal_form, transform_module

__all__ = ["ToBasicBlockNormalForm", "to_basic_block_normal_form",
           "check_basic_block_normal_form"]


def to_basic_block_normal_form(expr):
    """The basic-block normal form of an expression."""
    return fill_normal_form(expr, lifted_only=True)


def check_basic_block_normal_form(expr) -> bool:
    """``relay.analysis.check_basic_block_normal_form``: True, or ValueError naming the culprit."""
    _, _, lifted = calc_scopes(expr)
    if lifted:
        culprit = next(iter(lifted))
        raise ValueError("The expression below violates the basic block normal form in that its "
                         f"scope should be lifted:\n{culprit}")
    return True


@register("ToBasicBlockNormalForm")
def ToBasicBlockNormalForm():  # noqa: N802 - TVM's name
    """Module pass (opt 1): bind values used across blocks, as the build pipeline's first steps."""

    def run(mod, ctx):
        total = [0]
        out = transform_module(mod, fill_counting(True, total), "ToBasicBlockNormalForm")
        record_stat("let-bound expressions", total[0])
        return out

    return module_pass(run, opt_level=1, name="ToBasicBlockNormalForm", breaks=["gnf"])
