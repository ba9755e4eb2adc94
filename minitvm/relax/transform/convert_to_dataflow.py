"""ConvertToDataflow (TVM's ``relax.transform.ConvertToDataflow(min_size=2)``): runs of at least
``min_size`` consecutive pure bindings outside dataflow blocks (no ``If``, no impure call)
become dataflow blocks, joined with neighbouring dataflow blocks; CanonicalizeBindings then
turns the Vars used only inside a new block into DataflowVars.

Difference from TVM: TVM also demotes an existing dataflow block shorter than ``min_size`` to a
plain block (which leaves its DataflowVars outside any dataflow block); here a run that
contains an existing dataflow block always stays a dataflow block.
"""

from __future__ import annotations

from ...transform.sequential import Sequential
from ...transform.stats import record_stat
from ..expr import BindingBlock, Call, DataflowBlock, Function, If, SeqExpr
from .canonicalize_bindings import CanonicalizeBindings
from .function_pass import function_pass
from .normalize import NormalizingMutator, normalize_blocks
from .utils import is_flat_value, is_impure_call, register

__all__ = ["ConvertToDataflow", "convert_to_dataflow"]


def _is_dataflow_value(value) -> bool:
    return not isinstance(value, If) and not (isinstance(value, Call) and is_impure_call(value))


class _Extractor(NormalizingMutator):
    def __init__(self, min_size: int, mod=None):
        super().__init__(mod)
        self.min_size = min_size
        self.created = 0

    def visit_seq_expr_(self, seq: SeqExpr):
        body = self.visit_expr(seq.body)
        changed = body is not seq.body
        new_blocks = []
        streak = False
        had_dataflow = False  # the current streak contains an existing dataflow block
        df: list = []
        plain: list = []

        def close_streak():
            nonlocal df, plain, had_dataflow, changed
            if len(df) < self.min_size and not had_dataflow:
                plain.extend(df)
            else:
                if not had_dataflow:
                    self.created += 1
                changed = True
                new_blocks.append(BindingBlock(plain))
                new_blocks.append(DataflowBlock(df))
                plain = []
            df = []
            had_dataflow = False

        for block in seq.blocks:
            new = self.visit_binding_block(block)
            changed |= new is not block
            if isinstance(new, DataflowBlock):
                streak = True
                had_dataflow = True
                df.extend(new.bindings)
                continue
            for b in new.bindings:
                is_df = _is_dataflow_value(b.value)
                if not streak:
                    if is_df:
                        streak = True
                        df = [b]
                    else:
                        plain.append(b)
                elif is_df:
                    df.append(b)
                else:
                    streak = False
                    close_streak()
                    plain.append(b)
        close_streak()
        if plain:
            new_blocks.append(BindingBlock(plain))
        if not changed:
            return seq
        blocks = normalize_blocks(new_blocks)
        if body is seq.body and _same_blocks(blocks, seq.blocks):
            return seq
        out = SeqExpr(blocks, body, seq.span)
        out._checked_type = body._struct_info
        return out


def _same_blocks(new, old) -> bool:
    if len(new) != len(old):
        return False
    for a, b in zip(new, old):
        if a is b:
            continue
        if type(a) is not type(b) or len(a.bindings) != len(b.bindings) or \
                any(x is not y for x, y in zip(a.bindings, b.bindings)):
            return False
    return True


def convert_to_dataflow(func, min_size: int = 2, mod=None):
    """``func`` with runs of pure bindings in dataflow blocks (and how many blocks were made);
    CanonicalizeBindings is not applied."""
    if not _has_plain_bindings(func):
        return func, 0  # only dataflow blocks: nothing to extract (no rebuild of every binding)
    m = _Extractor(min_size, mod)
    return m.visit_expr(func), m.created


def _has_plain_bindings(func) -> bool:
    """Whether ``func`` may hold a binding outside a dataflow block (in its body, an ``If``
    branch or a nested function); a value that nests anything else answers yes."""
    stack = [func.body] if isinstance(func, Function) else [func]
    while stack:
        seq = stack.pop()
        if not isinstance(seq, SeqExpr):
            return True
        for block in seq.blocks:
            if not isinstance(block, DataflowBlock) and block.bindings:
                return True
            for b in block.bindings:
                v = b.value
                if isinstance(v, If):
                    stack.extend((v.true_branch, v.false_branch))
                elif isinstance(v, Function):
                    stack.append(v.body)
                elif not is_flat_value(v):
                    return True
    return False


@register("ConvertToDataflow")
def ConvertToDataflow(min_size: int = 2):  # noqa: N802 - TVM's name
    """Sequential(function pass ``ConvertToDataflow`` (opt 0), CanonicalizeBindings), named
    ``ConvertToDataflow`` (TVM leaves the Sequential unnamed)."""
    min_size = int(min_size)

    def transform(func, mod, ctx):
        out, n = convert_to_dataflow(func, min_size, mod)
        if n:
            record_stat("dataflow blocks created", n)
        return out

    inner = function_pass(transform, opt_level=0, name="ConvertToDataflow",
                          needs=["relax_normalized"], keeps=["relax_normalized"])
    return Sequential([inner, CanonicalizeBindings()], name="ConvertToDataflow")
