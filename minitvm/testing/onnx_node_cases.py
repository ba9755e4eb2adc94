"""Selecting the ONNX node tests (shipped in the ``onnx`` package) an importer claims: both
dialects' pass-rate tests use it (it needs the optional ``onnx`` package when called)."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["claimed_cases", "to_arrays", "compare_outputs", "uses_unsupported_dtype"]


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
    """A case's inputs or outputs (TensorProtos or arrays) as numpy arrays; a sequence value
    (a list) stays a list of arrays and an empty optional (None) stays None."""
    import onnx
    from onnx import numpy_helper

    def one(v):
        if v is None:
            return None
        if isinstance(v, onnx.TensorProto):
            return numpy_helper.to_array(v)
        if isinstance(v, list):
            return [one(e) for e in v]
        return np.asarray(v)

    return [one(v) for v in values]


def compare_outputs(got: list, expected: list, rtol: float, atol: float) -> str:
    """Why a run's outputs differ from a case's expected ones ('' when they match); floats
    to the case's tolerance, everything else exactly, sequences element by element."""
    if len(got) < len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    pairs = list(zip(got, expected))
    while pairs:
        g, e = pairs.pop()
        if e is None or isinstance(e, list):
            if not (g is None and e is None) and not (isinstance(g, list) and
                                                       isinstance(e, list)):
                return f"got {type(g).__name__}, expected {type(e).__name__}"
            if e is not None:
                if len(g) != len(e):
                    return f"a sequence of {len(g)} tensors, expected {len(e)}"
                pairs.extend(zip(g, e))
            continue
        e = np.asarray(e)
        if isinstance(g, list) or g is None:
            return f"got {type(g).__name__}, expected a tensor"
        if g.shape != e.shape:
            return f"shape {g.shape} != {e.shape}"
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(g.astype(e.dtype), e, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, e)
    return ""


def tally(cases, run_case) -> dict:
    """op -> [passed, total, failure reasons] over ``(op, case)`` pairs, ``run_case(case)``
    giving ``(ok, why)``."""
    per_op: dict = {}
    for op, case in cases:
        ok, why = run_case(case)
        rec = per_op.setdefault(op, [0, 0, []])
        rec[1] += 1
        if ok:
            rec[0] += 1
        else:
            rec[2].append(f"{case.name}: {why}")
    return per_op


def overall(rates: dict) -> tuple[int, int]:
    """(passed, total) over every operator of a ``tally``."""
    return sum(r[0] for r in rates.values()), sum(r[1] for r in rates.values())


def print_rates(rates: dict, label: str, verbose: bool = False) -> None:
    """The per-operator pass-rate table (markdown), the overall line, and failures if asked."""
    passed, total = overall(rates)
    print("| operator | passed | total | rate |\n|---|---|---|---|")
    for op in sorted(rates):
        p, n, _ = rates[op]
        print(f"| {op} | {p} | {n} | {p / n:.0%} |")
    print(f"\noverall: {passed}/{total} = {passed / total:.1%} ({label})")
    if verbose:
        for op in sorted(rates):
            for why in rates[op][2]:
                print("FAIL", why)
