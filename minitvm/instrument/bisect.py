"""NumericalBisect: find the first pass whose output changes the module's numerical results."""

from __future__ import annotations

import numpy as np

from ..ir.dialect import find_hook
from .base import PassInstrument


def random_inputs(mod, seed: int = 0, entry: str = "main") -> list[np.ndarray]:
    """Fixed random arguments for ``mod[entry]`` from its parameters' (shape, dtype), which the
    function's dialect reports through the ``input_specs`` hook."""
    func = mod[entry]
    specs = find_hook("input_specs", type(func))
    if specs is None:
        raise TypeError(f"cannot make random inputs for a {type(func).__name__}; give inputs= "
                        "explicitly")
    rng = np.random.default_rng(seed)
    out = []
    for name, shape, dtype in specs(func):
        dt = np.dtype(dtype)
        if dt.kind == "f":
            a = rng.standard_normal(shape).astype(dt)
        elif dt.kind in "iu":
            a = rng.integers(0 if dt.kind == "u" else -5, 6, size=shape).astype(dt)
        elif dt.kind == "b":
            a = rng.random(shape) < 0.5
        else:
            raise TypeError(f"cannot make a random input of dtype {dtype} for {name}")
        out.append(a)
    return out


def _flatten(value) -> list[np.ndarray]:
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if hasattr(v, "numpy"):
            out.append(np.asarray(v.numpy()))
        elif isinstance(v, np.ndarray | np.generic | int | float | bool):
            out.append(np.asarray(v))
        else:
            fields = getattr(v, "fields", None)
            items = list(fields) if fields is not None else list(v)
            stack.extend(reversed(items))
    return out


def run_module(mod, inputs, entry: str = "main", evaluator=None) -> list[np.ndarray]:
    """Evaluate ``mod[entry]`` on ``inputs``; a flat list of arrays.

    ``evaluator(mod, inputs, entry)`` defaults to the reference evaluator of the entry
    function's dialect (Relay's debug interpreter for a Relay function).
    """
    if evaluator is None:
        evaluator = find_hook("evaluate", type(mod[entry]))
        if evaluator is None:
            raise NotImplementedError(f"no reference evaluator for {type(mod[entry]).__name__}; "
                                      "pass evaluator= to NumericalBisect")
    return _flatten(evaluator(mod, inputs, entry))


def _same_module(a, b) -> bool:
    """The same object, or a copy holding the very same functions (a no-op module pass)."""
    return a is b or b is not None and a.functions == b.functions


class NumericalBisect(PassInstrument):
    """After every pass, run the module on fixed random inputs and record the first pass whose
    outputs differ from the input module's beyond ``rtol``/``atol``. ``evaluator(mod, inputs,
    entry)`` runs a module (default: the entry function's dialect's reference evaluator).

    ``report()`` says which; with ``raise_on_mismatch`` the pipeline stops there.
    """

    def __init__(self, inputs=None, rtol: float = 1e-5, atol: float = 1e-5, seed: int = 0,
                 entry: str = "main", raise_on_mismatch: bool = False, evaluator=None):
        super().__init__()
        self.evaluator = evaluator
        self.inputs = inputs
        self.rtol, self.atol, self.seed, self.entry = rtol, atol, seed, entry
        self.raise_on_mismatch = raise_on_mismatch
        self.reference: list[np.ndarray] | None = None
        self.ran = 0  # passes run so far (a pass nested in another counts with it)
        self.checked: list[str] = []  # passes after which the outputs were compared
        self.first_bad: tuple[int, str, str] | None = None  # (index, pass, why)
        self.errors: list[tuple[str, str]] = []  # passes after which the module did not run
        self._last = None

    def enter_pass_ctx(self) -> None:
        self.reference = None
        self.ran = 0

    def run_before_pass(self, mod, info) -> None:
        from ..transform.instrumented import running_passes

        if self.reference is None and len(running_passes()) == 1:
            if self.inputs is None:
                self.inputs = random_inputs(mod, self.seed, self.entry)
            self.reference = run_module(mod, self.inputs, self.entry, self.evaluator)
            self._last = mod

    def _compare(self, outs) -> str | None:
        ref = self.reference
        if len(outs) != len(ref):
            return f"{len(outs)} outputs instead of {len(ref)}"
        for i, (a, b) in enumerate(zip(outs, ref)):
            if a.shape != b.shape:
                return f"output {i} has shape {a.shape} instead of {b.shape}"
            if not np.allclose(a, b, rtol=self.rtol, atol=self.atol, equal_nan=True):
                diff = np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))
                return f"output {i} differs by up to {diff:.6g} (rtol={self.rtol}, " \
                       f"atol={self.atol})"
        return None

    def run_after_pass(self, mod, info) -> None:
        from ..transform.instrumented import is_outermost_transform

        if self.reference is None or self.first_bad is not None:
            return
        if not is_outermost_transform():
            return
        self.ran += 1
        if _same_module(mod, self._last):
            return
        self._last = mod
        self.checked.append(info.name)
        try:
            outs = run_module(mod, self.inputs, self.entry, self.evaluator)
        except Exception as err:
            self.errors.append((info.name, f"{type(err).__name__}: {err}"))
            return
        why = self._compare(outs)
        if why:
            self.first_bad = (self.ran, info.name, why)
            if self.raise_on_mismatch:
                raise ValueError(self.report())

    def report(self) -> str:
        if self.first_bad is not None:
            n, name, why = self.first_bad
            return f"first pass whose outputs differ: #{n} {name}: {why}"
        msg = f"all {len(self.checked)} passes keep the outputs within rtol={self.rtol}, " \
              f"atol={self.atol}"
        if self.errors:
            msg += "; the module could not run after: " + ", ".join(n for n, _ in self.errors)
        return msg
