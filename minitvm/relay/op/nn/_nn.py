"""``relay.op.nn._nn``: the registered rules of the ``nn.*`` operators under TVM's function
names — ``compute_<op>`` (FTECompute), ``legalize_<op>`` (FTVMLegalize),
``alter_op_layout_<op>`` (FTVMAlterOpLayout), ``convert_<op>`` (FTVMConvertOpLayout),
``<op>_strategy`` (the op's strategy) and ``<op>_shape_func`` (FShapeFunc)."""

from __future__ import annotations

from ....ir.op import Op

_PREFIXES = (("compute_", "FTECompute"), ("legalize_", "FTVMLegalize"),
             ("alter_op_layout_", "FTVMAlterOpLayout"), ("convert_", "FTVMConvertOpLayout"),
             ("infer_correct_layout_", "FInferCorrectLayout"))


def _lookup(op_name: str, key: str):
    op = Op._registry.get(op_name)
    return None if op is None else op.get_attr(key)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    for prefix, key in _PREFIXES:
        if name.startswith(prefix):
            rule = _lookup("nn." + name[len(prefix):], key)
            if rule is not None:
                return rule
    if name.endswith("_shape_func"):
        rule = _lookup("nn." + name[:-len("_shape_func")], "FShapeFunc")
        if rule is not None:
            return rule
    if name.endswith("_strategy") and "nn." + name[:-len("_strategy")] in Op._registry:
        from ..strategy.generic import generic_strategy

        return generic_strategy(name, "nn." + name[:-len("_strategy")])
    raise AttributeError(f"relay.op.nn._nn has no {name!r}: no nn op registers that rule")
