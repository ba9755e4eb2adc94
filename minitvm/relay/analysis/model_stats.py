"""Whole-model statistics TVM users ask of a typed Relay program: multiply-accumulate counts,
op frequencies, layer depth, constant-ness, dense weights fed through a transpose, and the
primitive functions fusion would produce."""

from __future__ import annotations

from collections import Counter

from ...ir.module import IRModule
from ...ir.op import Op
from ..expr import Call, Constant, Function, Tuple, Var
from ..expr_functor import post_order_visit


def _shape(e) -> list[int]:
    """The static shape of an expression's checked type; [] while it is not type-checked."""
    ty = getattr(e, "_checked_type", None)
    return [int(d) for d in getattr(ty, "shape", ())] if ty is not None else []


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= int(x)
    return out


def _layout_dim(layout: str, shape, axis: str) -> int:
    return int(shape[layout.index(axis)]) if axis in layout and shape else 1


def _conv_macs(call) -> int:
    a = call.attrs
    out = _shape(call)
    w = _shape(call.args[1])
    if not out or not w:
        return 0
    kl = a.kernel_layout
    spatial = _prod(w[i] for i, ch in enumerate(kl) if ch not in "OI")
    in_per_group = _layout_dim(kl, w, "I")
    return _prod(out) * in_per_group * spatial


def _conv_transpose_macs(call) -> int:
    a = call.attrs
    x = _shape(call.args[0])
    w = _shape(call.args[1])
    if not x or not w:
        return 0
    kl = a.kernel_layout
    spatial = _prod(w[i] for i, ch in enumerate(kl) if ch not in "OI")
    out_ch = _layout_dim(a.out_layout or a.data_layout, _shape(call), "C")
    return _prod(x) * spatial * out_ch // max(int(a.groups), 1)


def _dense_macs(call) -> int:
    x, w = _shape(call.args[0]), _shape(call.args[1])
    return _prod(x) * w[0] if x and w else 0


def _matmul_macs(call) -> int:
    x, out = _shape(call.args[0]), _shape(call)
    if not x or not out:
        return 0
    k = x[-2] if getattr(call.attrs, "transpose_a", False) else x[-1]
    return _prod(out) * k


def _batch_matmul_macs(call) -> int:
    x, out = _shape(call.args[0]), _shape(call)
    if not x or not out:
        return 0
    k = x[-2] if getattr(call.attrs, "transpose_a", False) else x[-1]
    return _prod(out) * k


_MACS = {
    "nn.conv1d": _conv_macs, "nn.conv2d": _conv_macs, "nn.conv3d": _conv_macs,
    "nn.conv2d_transpose": _conv_transpose_macs, "nn.conv1d_transpose": _conv_transpose_macs,
    "nn.dense": _dense_macs, "nn.matmul": _matmul_macs, "nn.batch_matmul": _batch_matmul_macs,
}


def _op_calls(expr):
    calls = []
    post_order_visit(expr, lambda e: calls.append(e)
                     if isinstance(e, Call) and isinstance(e.op, Op) else None)
    return calls


def _exprs_of(expr_or_mod):
    if isinstance(expr_or_mod, IRModule):
        return [f for _, f in expr_or_mod.functions.items() if isinstance(f, Function)]
    return [expr_or_mod]


def get_total_mac_number(expr) -> int:
    """Multiply-accumulates of the convolutions, dense layers and matmuls in a type-checked
    ``expr`` (0 for an op whose types are not known yet, as TVM counts)."""
    total = 0
    for e in _exprs_of(expr):
        for call in _op_calls(e):
            count = _MACS.get(call.op.name)
            if count is not None and _shape(call):
                total += count(call)
    return total


def list_op_freqs(mod) -> dict[str, int]:
    """How many times each op is called in ``mod`` (an IRModule or expression)."""
    freqs: Counter = Counter()
    for e in _exprs_of(mod):
        for call in _op_calls(e):
            freqs[call.op.name] += 1
    return dict(freqs)


def count_layers(expr, valid_ops) -> int:
    """The largest number of calls to ``valid_ops`` on one dataflow path of ``expr``: parallel
    branches count once (two side-by-side convolutions are one layer)."""
    wanted = {v if isinstance(v, str) else v.name for v in valid_ops}
    from ..expr_functor import dataflow_children

    depth: dict[int, int] = {}

    def visit(e):
        kids = [c for c in dataflow_children(e) if not isinstance(c, Op)]
        if isinstance(e, Function):
            kids = [e.body]
        elif hasattr(e, "body") and hasattr(e, "value"):  # Let
            kids = [e.value, e.body]
        d = max((depth.get(id(c), 0) for c in kids), default=0)
        if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in wanted:
            d += 1
        depth[id(e)] = d

    post_order_visit(expr, visit)
    return depth.get(id(expr), 0)


def check_constant(expr) -> bool:
    """Whether ``expr`` is built only of constants (tuples of them included)."""
    ok = [True]

    def visit(e):
        if isinstance(e, Var) or (isinstance(e, Call) and not isinstance(e.op, Op)):
            ok[0] = False

    post_order_visit(expr, visit)
    return ok[0] and isinstance(expr, (Constant, Tuple, Call)) and not isinstance(expr, Function)


def search_fc_transpose(expr) -> list[str]:
    """Names of the weights fed to ``nn.dense`` through ``transpose(w, [1, 0])`` (the candidates
    of SimplifyFCTranspose)."""
    names: list[str] = []
    for call in _op_calls(expr):
        if call.op.name != "nn.dense":
            continue
        w = call.args[1]
        if isinstance(w, Call) and isinstance(w.op, Op) and w.op.name == "transpose" \
                and isinstance(w.args[0], Var):
            axes = w.attrs.axes
            if axes is None or [int(a) for a in axes] == [1, 0]:
                name = w.args[0].name_hint
                if name not in names:
                    names.append(name)
    return names


def extract_fused_functions(mod) -> dict[int, Function]:
    """The primitive functions ``FuseOps`` makes of ``mod``'s main function (after the passes
    relay.build runs first), keyed by their structural hash."""
    from ...ir.structural import structural_hash
    from ...transform import Sequential
    from ..transform import FoldConstant, FuseOps, InferType, SimplifyInference

    fused = Sequential([InferType(), SimplifyInference(), FoldConstant(), FuseOps(3)])(mod)
    out: dict[int, Function] = {}

    def visit(e):
        if isinstance(e, Function) and e.attrs and int(e.attrs.get("Primitive", 0) or 0) == 1:
            out[structural_hash(e)] = e

    for _, f in fused.functions.items():
        if isinstance(f, Function):
            post_order_visit(f, visit)
    return out
