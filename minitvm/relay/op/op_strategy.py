"""Operator strategies (``relay.op.OpStrategy``): the implementations an op can be lowered with.

An implementation pairs a compute (``fcompute(attrs, inputs, out_type) -> [te.Tensor]``) with a
schedule (``fschedule(attrs, outs, target)``) under a name and a priority level. An op's
``FTVMStrategy`` attribute (``strategy(attrs, inputs, out_type, target) -> OpStrategy``) lists
them; ``relay.backend.te_compiler.select_implementation`` picks the highest priority. minitvm's
default strategy for an op holds its ``FTECompute`` with the schedule rule table
(``minitvm.schedule.RULES``) as schedule."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["OpImplementation", "OpSpecialization", "OpStrategy"]


class OpImplementation:
    """One way to compute and schedule an op."""

    __slots__ = ("fcompute", "fschedule", "name", "plevel")

    def __init__(self, fcompute: Callable, fschedule: Callable, name: str = "default",
                 plevel: int = 10):
        if not callable(fcompute) or not callable(fschedule):
            raise TypeError("OpImplementation: compute and schedule must be callables")
        self.fcompute = fcompute
        self.fschedule = fschedule
        self.name = name
        self.plevel = int(plevel)

    def compute(self, attrs, inputs, out_type) -> list:
        """The output tensors of the op on ``inputs`` (TE tensors)."""
        outs = self.fcompute(attrs, inputs, out_type)
        return list(outs) if isinstance(outs, list | tuple) else [outs]

    def schedule(self, attrs, outs, target):
        """The schedule of ``outs`` for ``target``."""
        return self.fschedule(attrs, outs, target)

    def __repr__(self):
        return f"OpImplementation({self.name}, plevel={self.plevel})"


class OpSpecialization:
    """Implementations valid under one condition (``None``: always)."""

    __slots__ = ("condition", "implementations")

    def __init__(self, condition=None):
        self.condition = condition
        self.implementations: list[OpImplementation] = []


class OpStrategy:
    """The implementations of an op for a target, grouped by specialization condition."""

    __slots__ = ("specializations",)

    def __init__(self):
        self.specializations: list[OpSpecialization] = []

    def add_implementation(self, compute: Callable, schedule: Callable, name: str = "default",
                           plevel: int = 10, condition=None) -> None:
        """Add an implementation (under ``condition`` when given)."""
        impl = OpImplementation(compute, schedule, name, plevel)
        spec = next((s for s in self.specializations if s.condition is condition), None)
        if spec is None:
            spec = OpSpecialization(condition)
            self.specializations.append(spec)
        spec.implementations.append(impl)

    @property
    def implementations(self) -> list[OpImplementation]:
        """Every implementation, in the order added."""
        return [i for s in self.specializations for i in s.implementations]

    def __repr__(self):
        return f"OpStrategy({[i.name for i in self.implementations]})"
