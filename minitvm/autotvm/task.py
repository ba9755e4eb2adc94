"""``autotvm.task``: tuning tasks extracted from a Relay program.

A task is one workload of minitvm's built-in schedules (an operator with its shapes) and the
knobs those schedules declare (``config_space``); ``extract_from_program`` finds them the way
``relay.build`` would compile the model (``minitvm.tune.extract_tasks``). User-written AutoTVM
templates (``@autotvm.template``, ``cfg.define_split``) do not exist in minitvm: its search
space is the knobs of the schedules it ships.
"""

from __future__ import annotations

from ..tune import extract_tasks
from ..tune.task import Task as _TuneTask
from .differs import missing_attribute


class ConfigSpace:
    """The knob space of a task: ``len(space)`` candidate configurations."""

    def __init__(self, space):
        self.space = space

    def __len__(self) -> int:
        return self.space.size()

    @property
    def space_map(self) -> dict:
        return {name: list(values) for name, values in self.space.knobs}

    def __repr__(self) -> str:
        knobs = ", ".join(f"{n}: {len(v)}" for n, v in self.space.knobs)
        return f"ConfigSpace(len={len(self)}, {knobs})"


class Task:
    """A tuning task (``tasks[i].name``, ``.config_space``, ``.workload``, ``.target``)."""

    def __init__(self, task: _TuneTask):
        self.task = task
        self.name = task.name
        self.workload = tuple(task.workload)
        self.args = tuple(task.workload[1:])
        self.target = task.target
        self.config_space = ConfigSpace(task.space)

    def __repr__(self) -> str:
        return f"Task(func_name={self.task.workload[0]}, args={self.args})"


def _op_base(op) -> str:
    name = op if isinstance(op, str) else getattr(op, "name", None)
    if not isinstance(name, str):
        raise TypeError(f"autotvm.task.extract_from_program: ops must be relay ops "
                        f"(relay.op.get('nn.conv2d')) or their names, got {op!r}")
    return name.split(".")[-1]


def extract_from_program(mod, params, target, target_host=None, ops=None,
                         mod_name: str = "main") -> list[Task]:
    """The tunable tasks of ``mod`` (a Relay IRModule or Function) when built for ``target``;
    ``ops`` (relay ops such as ``relay.op.get("nn.conv2d")``) keeps only their workloads."""
    tasks = extract_tasks(mod, params, target)
    if ops is not None:
        bases = [_op_base(op) for op in ops]
        tasks = [t for t in tasks if any(str(t.workload[0]).startswith(b) for b in bases)]
    return [Task(t) for t in tasks]


def extract_from_multiple_program(mods, params, target, target_host=None, ops=None
                                  ) -> list[Task]:
    """The tasks of several programs, each workload once."""
    out, seen = [], set()
    for mod, p in zip(mods, params, strict=True):
        for t in extract_from_program(mod, p, target, target_host, ops):
            if t.task.key not in seen:
                seen.add(t.task.key)
                out.append(t)
    return out


_TEMPLATES = ("the search space is the knobs of minitvm's built-in schedules; user-written "
              "AutoTVM templates are not supported",
              "autotvm.task.extract_from_program (or minitvm.tune.extract_tasks) on a Relay "
              "program, whose operators' schedules declare the knobs")
_LEFT_OUT = {name: _TEMPLATES for name in ("template", "register", "create", "get_config",
                                           "DispatchContext", "FallbackContext",
                                           "register_topi_compute", "register_topi_schedule")}


def __getattr__(name: str):
    missing_attribute(__name__.replace("minitvm", "tvm"), name, _LEFT_OUT)
