"""The rule table (``RULES``: op tag -> candidate rules in priority order), ``register_rule``
to add one and ``select_rule`` to pick a stage's."""

from __future__ import annotations

from ..te.tensor import ComputeOp
from . import (
    pool,
    resize,
)
from .builtin_rules import (
    _DEPTHWISE,
    _GEMM,
    _GROUPED,
    _POINTWISE,
    _VNNI,
    _VNNI_GEMM,
    _WINOGRAD,
    _emit_pool,
    _pool_supported,
)
from .common import const_int as _const_int
from .common import is_static as _is_static
from .options import LoweringOptions
from .rule import Rule

RULES: dict[str, list[Rule]] = {
    # (integer products of uint8 rows and an int8 weight on VNNI)
    "dense": [_VNNI_GEMM, _GEMM], "matmul": [_VNNI_GEMM, _GEMM],
    "batch_matmul": [_VNNI_GEMM, _GEMM],
    # (grouped convs: on channel lanes, or with few taps per output channel depthwise's, before
    # the GEMM's im2col; integer convs of uint8 data and int8 weights on VNNI first)
    "conv2d_nchw": [_VNNI, _WINOGRAD, _POINTWISE, _GROUPED, _DEPTHWISE, _GEMM],
    # (over run-time sizes: ``pool_symbolic``)
    pool.POOL_TAG: [Rule("pool2d rows", "window", _pool_supported, _emit_pool, epilogue=True,
                         symbolic=True)],
    resize.RESIZE_TAG: [Rule("resize rows", "resize", resize.supported, resize.emit,
                             epilogue=True, materialize=True)],
}


# the rules ``register_rule`` added (id -> rule, which keeps the id taken): scatters in one
# pass, top-k, unique, NMS, RoI pooling, scans, a user's own
_REGISTERED: dict[int, Rule] = {}


def register_rule(tag: str, rule: Rule) -> None:
    """Try ``rule`` first for stages tagged ``tag``. Kernels already in the kernel cache keep
    their schedule (``minitvm.backend.clear_cache()`` forgets them)."""
    RULES.setdefault(tag, []).insert(0, rule)
    _REGISTERED[id(rule)] = rule


def rule_emitted_tags() -> frozenset[str]:
    """Tags of the stages whose loops a rule added by ``register_rule`` writes: their te body may
    only stand in for those loops, so a lowering that does not apply the rules (a PrimFunc over
    symbolic sizes) must refuse them. Read from ``RULES`` as it is now: a rule taken out of it
    (there is no unregister: its list is edited) no longer marks its tag, or every later stage
    of that tag (the untagged ones for tag "") would be refused."""
    return frozenset(tag for tag, rules in RULES.items()
                     if any(_REGISTERED.get(id(r)) is r for r in rules))


def select_rule(t, options: LoweringOptions) -> Rule | None:
    """The first rule of ``t``'s tag that supports it, or None (reduction / injective)."""
    if not isinstance(t.op, ComputeOp):
        return None
    rules = RULES.get(t.op.tag, ())
    if rules and not _static_stage(t):
        rules = [r for r in rules if r.symbolic]
    for rule in rules:
        if rule.supported(t, options):
            return rule
    return None


def _static_stage(t) -> bool:
    """Are ``t``'s shape, its operands' shapes and its reduction extents all constants?"""
    tensors = [t, *t.op.attrs.get("operands", t.op.input_tensors)]
    if not all(_is_static(x.shape) for x in tensors):
        return False
    return all(_const_int(r.dom.extent) is not None for r in t.op.reduce_axis)

def _is_gemm(t, options: LoweringOptions) -> bool:
    rule = select_rule(t, options)
    return rule is not None and rule.kind == "gemm"
