"""``relay.testing.check_grad``: the gradient ``relay.transform.gradient`` computes, checked
against central finite differences of the summed output (TVM's test helper)."""

from __future__ import annotations

import numpy as np


def _as_arrays(values):
    if hasattr(values, "fields"):
        return [np.asarray(v.numpy()) for v in values.fields]
    if isinstance(values, (list, tuple)):
        return [np.asarray(v.numpy() if hasattr(v, "numpy") else v) for v in values]
    return [np.asarray(values.numpy() if hasattr(values, "numpy") else values)]


def _total(out) -> float:
    return float(sum(a.astype("float64").sum() for a in _as_arrays(out)))


def check_grad(func, inputs=None, test_inputs=None, eps: float = 1e-6, atol: float = 1e-5,
               rtol: float = 1e-3, scale=None, mean: float = 0, mode: str = "higher_order",
               target_devices=None, executor_kind: str = "debug") -> None:
    """Check ``gradient(func)`` against finite differences on random (or given) inputs.

    ``inputs`` are the values of every parameter (random normal with ``mean``/``scale`` when
    None); ``test_inputs`` the subset whose gradients are compared (all by default). Raises an
    AssertionError naming the parameter whose gradient disagrees.
    """
    from ...ir.module import IRModule
    from ..build_module import create_executor
    from ..transform import InferType, gradient

    fwd = InferType()(IRModule.from_expr(func))["main"]
    bwd = gradient(fwd, mode=mode)
    bwd = InferType()(IRModule.from_expr(bwd))["main"]
    if inputs is None:
        rng = np.random.default_rng(0)
        inputs = []
        for p in fwd.params:
            t = p.checked_type
            shape = tuple(int(d) for d in t.shape)
            s = 10 * eps if scale is None else scale  # TVM: inputs on eps's scale (precision)
            inputs.append((rng.standard_normal(shape) * s + mean).astype(t.dtype))
    inputs = [np.asarray(i.numpy() if hasattr(i, "numpy") else i) for i in inputs]
    test_inputs = inputs if test_inputs is None else test_inputs
    positions = [next(k for k, a in enumerate(inputs) if a is t) for t in test_inputs]
    run_fwd = create_executor(executor_kind, mod=IRModule.from_expr(fwd)).evaluate()
    run_bwd = create_executor(executor_kind, mod=IRModule.from_expr(bwd)).evaluate()
    _, grads = run_bwd(*inputs)
    grads = _as_arrays(grads)
    for pos in positions:
        x = inputs[pos].astype("float64")
        approx = np.zeros_like(x)
        for idx in np.ndindex(*x.shape):
            plus = [a.copy() for a in inputs]
            minus = [a.copy() for a in inputs]
            plus[pos][idx] += eps
            minus[pos][idx] -= eps
            # the step the input's dtype could represent (x + eps rounds in float32)
            step = float(plus[pos][idx]) - float(minus[pos][idx]) or 2 * eps
            approx[idx] = (_total(run_fwd(*plus)) - _total(run_fwd(*minus))) / step
        name = fwd.params[pos].name_hint
        try:
            np.testing.assert_allclose(grads[pos], approx, atol=atol, rtol=rtol)
        except AssertionError as err:
            raise AssertionError(f"check_grad: the gradient of parameter %{name} disagrees "
                                 f"with finite differences:\n{err}") from None
