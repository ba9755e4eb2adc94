"""Selecting the ONNX node tests (shipped in the ``onnx`` package) an importer claims: both
dialects' pass-rate tests use it (it needs the optional ``onnx`` package when called)."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["claimed_cases", "to_arrays", "uses_unsupported_dtype"]


def claimed_cases(claimed: set, order_by_name: bool = False) -> list:
    """(operator, case) for every node test whose operators are all in ``claimed`` and whose
    element types the importers support; an expanded function test counts for the op it
    expands."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    single = {c.name: c.model.graph.node[0].op_type for c in cases
              if len(c.model.graph.node) == 1}
    if order_by_name:
        cases = sorted(cases, key=lambda c: c.name)
    out = []
    for c in cases:
        if not {n.op_type for n in c.model.graph.node} <= claimed or uses_unsupported_dtype(c):
            continue
        if len(c.model.graph.node) == 1:
            op = c.model.graph.node[0].op_type
        else:
            base = max((n for n in single if c.name.startswith(n)), key=len, default=None)
            if base is None or single[base] not in claimed:
                continue
            op = single[base]
        out.append((op, c))
    return out


def uses_unsupported_dtype(case) -> bool:
    """Whether a case uses an element type outside the importers' (``ONNX_DTYPES``): bfloat16,
    the float8/float4 and int4/int2 formats, strings. Such cases are not claimed."""
    from ..frontend_common.onnx_model import ONNX_DTYPES

    g = case.model.graph
    codes = [v.type.tensor_type.elem_type for v in list(g.input) + list(g.output)]
    codes += [t.data_type for t in g.initializer]
    for n in g.node:
        for a in n.attribute:
            if a.name in ("to", "output_dtype", "dtype") and a.type == a.INT:
                codes.append(a.i)
            elif a.type == a.TENSOR:
                codes.append(a.t.data_type)
    return any(c and c not in ONNX_DTYPES for c in codes)


def to_arrays(values) -> list:
    """A case's inputs or outputs (TensorProtos or arrays) as numpy arrays."""
    import onnx
    from onnx import numpy_helper

    return [numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else np.asarray(v)
            for v in values]
