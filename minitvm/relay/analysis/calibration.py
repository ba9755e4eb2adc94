"""get_calibration_data: the values flowing into and out of each external (``Compiler``)
function when ``main`` runs on given inputs, as TVM's calibration pass reports them.

As TVM does: ``main`` is rewritten to return, for every call of a global function that has a
``Compiler`` attribute (in post-order), its arguments and then its outputs (one per field when the
function's body is a tuple), the functions lose that attribute so they run on the host, and the
module is executed once — here with our interpreter.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ..expr import Call, Function, Tuple, TupleGetItem
from ..expr_functor import post_order_visit

__all__ = ["get_calibration_data"]


def _external(mod, call) -> Function | None:
    if not isinstance(call, Call) or not isinstance(call.op, GlobalVar):
        return None
    if call.op.name_hint not in mod._gvars:
        raise ValueError(f"get_calibration_data: @{call.op.name_hint} is called but not defined "
                         "in the module")
    func = mod[call.op]
    if isinstance(func, Function) and func.get_attr("Compiler") is not None:
        return func
    return None


def get_calibration_data(mod, data: dict) -> dict:
    """``{global var: {"inputs": [NDArray], "outputs": [NDArray]}}`` for every ``Compiler``
    function ``main`` calls, from one run of ``main`` on ``data``.

    Parameters
    ----------
    mod : tvm.IRModule
        The partitioned module (control flow free; function arguments are not tuples).
    data : Dict[str, NDArray]
        ``main``'s inputs by parameter name.
    """
    from ..build_module import create_executor

    if "main" not in mod._gvars:
        raise ValueError("get_calibration_data: the module has no @main")
    main = mod["main"]
    calls: list = []
    post_order_visit(main.body, lambda e: calls.append(e) if _external(mod, e) else None)

    fields, layout = [], {}
    for call in calls:
        func = mod[call.op]
        n_out = len(func.body.fields) if isinstance(func.body, Tuple) else 1
        layout[call.op] = (len(fields), len(call.args), n_out)
        fields.extend(call.args)
        if isinstance(func.body, Tuple):
            fields.extend(TupleGetItem(call, i) for i in range(n_out))
        else:
            fields.append(call)

    run = mod.shallow_copy()
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function) and func.get_attr("Compiler") is not None:
            run.update_func(gv, func.without_attr("Compiler"))
    run.update_func(mod.get_global_var("main"), Function(main.params, Tuple(fields)))
    values = create_executor("debug", mod=run).evaluate()(**data) if fields else []
    values = list(values)

    out = {}
    for gv, (offset, n_in, n_out) in layout.items():
        out[gv] = {"inputs": values[offset:offset + n_in],
                   "outputs": values[offset + n_in:offset + n_in + n_out]}
    return out
