"""Schedule knobs: the constants of the tunable schedules, declared as a search space per workload.

A schedule module declares, per op tag, a function ``(stage, options) -> (workload key or None,
Space)``: the key names the workload (op, shapes, dtype, layout attributes) as plain JSON-able
values, the ``Space`` lists each knob's candidate values and its default (today's hand-picked
constant). When a stage is lowered the schedule asks ``select(options, stage)`` for its knob
values: the defaults, overridden by the entry for the workload in ``options.knobs`` (a
``KnobTable``, chosen for the build by ``use_knobs`` — e.g. ``minitvm.tune.apply_history_best``).
The table is part of ``LoweringOptions`` and so of the kernel cache keys.

A build outside any ``use_knobs`` block uses the built-in table of the host's vector ISA
(``builtin_table``: tuned records shipped in ``minitvm/tune/builtin/{avx2,avx512}.jsonl``), with
the host CPU's own records (``{cpu}.jsonl``, by LLVM's name for it, e.g. ``znver4.jsonl``) laid
over it, so an untuned build still gets the knobs measured best for common workloads on its ISA
and micro-architecture; ``MINITVM_BUILTIN_KNOBS=0`` or
``PassContext(config={"schedule.use_builtin_knobs": False})`` turns it off.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..transform.config import register_pass_config
from ..transform.context import PassContext

Knobs = dict  # knob name -> value (int, bool or str)


@dataclass(frozen=True)
class Space:
    """The candidate values of each knob (first axis = name) and the default configuration."""

    knobs: tuple[tuple[str, tuple], ...]
    defaults: tuple[tuple[str, object], ...]

    @staticmethod
    def of(defaults: Mapping[str, object], **candidates) -> Space:
        """A space from ``name=[values...]`` with ``defaults`` (added to the values if absent)."""
        if set(defaults) != set(candidates):
            raise ValueError(f"Space: defaults {sorted(defaults)} and knobs "
                             f"{sorted(candidates)} differ")
        knobs = []
        for name, values in candidates.items():
            vals = list(dict.fromkeys(values))
            if defaults[name] not in vals:
                vals.insert(0, defaults[name])
            knobs.append((name, tuple(vals)))
        return Space(tuple(knobs), tuple((k, defaults[k]) for k, _ in knobs))

    @property
    def names(self) -> list[str]:
        return [k for k, _ in self.knobs]

    def values(self, name: str) -> tuple:
        for k, v in self.knobs:
            if k == name:
                return v
        raise KeyError(f"no knob {name!r} in this space (knobs: {self.names})")

    def default(self) -> Knobs:
        return dict(self.defaults)

    def size(self) -> int:
        n = 1
        for _, v in self.knobs:
            n *= len(v)
        return n

    def validate(self, knobs: Mapping) -> Knobs:
        """``knobs`` restricted to this space: unknown names and undeclared values raise."""
        out = self.default()
        for name, value in knobs.items():
            if value not in self.values(name):
                raise ValueError(f"knob {name}={value!r} is not among the declared values "
                                 f"{list(self.values(name))}")
            out[name] = value
        return out

    def to_json(self) -> dict:
        return {"knobs": {k: list(v) for k, v in self.knobs}, "defaults": dict(self.defaults)}


def key_text(key) -> str:
    """The canonical text of a workload key (tuples as JSON lists, no spaces)."""
    return json.dumps(key, separators=(",", ":"), sort_keys=True)


class KnobTable:
    """Chosen knobs per workload (``key_text(key) -> knobs``); hashable, picklable.

    ``trace=True`` makes a table that also records every workload asked about (key and space)
    in ``seen``, for task extraction; a tracing table hashes by identity so that a build under
    it never reuses kernels lowered without it.
    """

    __slots__ = ("entries", "trace", "seen", "_hash")

    def __init__(self, entries: Mapping[str, Mapping] | None = None, trace: bool = False):
        self.entries = {str(k): dict(v) for k, v in (entries or {}).items()}
        self.trace = trace
        self.seen: dict[str, tuple] = {}  # key text -> (key, space, count)
        frozen = tuple(sorted((k, tuple(sorted(v.items()))) for k, v in self.entries.items()))
        self._hash = hash((frozen, id(self) if trace else 0))

    def lookup(self, key) -> Knobs | None:
        return self.entries.get(key_text(key))

    def note(self, key, space: Space) -> None:
        if self.trace:
            text = key_text(key)
            _, _, n = self.seen.get(text, (key, space, 0))
            self.seen[text] = (key, space, n + 1)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if not isinstance(other, KnobTable):
            return NotImplemented
        if self.trace or other.trace:
            return self is other
        return self.entries == other.entries

    def __getstate__(self):
        return {"entries": self.entries, "trace": self.trace}

    def __setstate__(self, state):
        KnobTable.__init__(self, state["entries"], state["trace"])

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"KnobTable({len(self.entries)} workloads{', tracing' if self.trace else ''})"


# op tag -> declaration ``(stage, options) -> (key or None, Space)``
SPACES: dict[str, Callable] = {}


def register_space(tag: str, declare: Callable) -> None:
    """Declare the search space of stages tagged ``tag``."""
    SPACES[tag] = declare


def space_of(t, options) -> tuple | None:
    """``(workload key or None, Space)`` of stage ``t``, or None when its op has no knobs."""
    declare = SPACES.get(getattr(t.op, "tag", None))
    return declare(t, options) if declare is not None else None


def select(options, t) -> Knobs:
    """The knob values stage ``t`` is scheduled with: defaults, overridden by the table's entry.

    Table entries are validated against the declared space (a value outside it is ignored, so
    a stale or hand-edited records file can never make a build emit an undeclared schedule).
    """
    got = space_of(t, options)
    if got is None:
        raise KeyError(f"no search space is declared for op tag {t.op.tag!r}")
    key, space = got
    table = getattr(options, "knobs", None)
    if key is None or table is None:
        return space.default()
    table.note(key, space)
    entry = table.lookup(key)
    if not entry:
        return space.default()
    try:
        return space.validate(entry)
    except (ValueError, KeyError):
        return space.default()


# ------------------------------------------------------------------ the build's knob table
_STATE = threading.local()


def _stack() -> list:
    if not hasattr(_STATE, "stack"):
        _STATE.stack = []
    return _STATE.stack


def current_table() -> KnobTable | None:
    """The knob table of the innermost ``use_knobs`` block of this thread; outside every block,
    the built-in table of the host's ISA (``builtin_table``), or None."""
    stack = _stack()
    return stack[-1] if stack else builtin_table()


# ------------------------------------------------------------------ the built-in knob table
BUILTIN_DIR = Path(__file__).resolve().parent.parent / "tune" / "builtin"  # package data
BUILTIN_ENV = "MINITVM_BUILTIN_KNOBS"
BUILTIN_CONFIG = "schedule.use_builtin_knobs"
register_pass_config(BUILTIN_CONFIG, bool, True,
                     "Builds outside any tuning-records context use the knobs shipped for the "
                     "host's ISA (minitvm/tune/builtin/*.jsonl); False: the schedules' defaults.")


def builtin_enabled() -> bool:
    """Whether builds may use the built-in table (the env var and the PassContext say yes)."""
    if os.environ.get(BUILTIN_ENV, "1").strip().lower() in ("0", "false", "off", "no"):
        return False
    cfg = getattr(PassContext.current(), "config", None) or {}
    return bool(cfg.get(BUILTIN_CONFIG, True))


@functools.cache
def _builtin(name: str) -> KnobTable | None:
    """The built-in table ``name`` (an ISA or a CPU): per workload, the knobs of its lowest-cost
    record."""
    path = BUILTIN_DIR / f"{name}.jsonl"
    if not path.exists():
        return None
    best: dict[str, tuple[float, dict]] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            key, knobs = key_text(d["workload"]), dict(d["knobs"])
            cost = min(float(c) for c in d.get("costs") or [float("inf")])
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}:{n}: not a tuning record ({err})") from None
        if key not in best or cost < best[key][0]:
            best[key] = (cost, knobs)
    return KnobTable({k: v for k, (_, v) in best.items()}) if best else None


def builtin_table(isa: str | None = None, cpu: str | None = None) -> KnobTable | None:
    """The built-in knob table of ``isa`` with ``cpu``'s entries laid over it (theirs win per
    workload), or None when both are empty or the table is turned off. Default: the host's
    vector ISA and CPU (the CPU's table only with the host's ISA: a table is measured on one
    micro-architecture, and an ISA named here means another machine's; nor for code of another
    ISA than the CPU's own: ``common.own_isa_cpu``)."""
    if not builtin_enabled():
        return None
    if isa is None:
        from .common import own_isa_cpu, vector_isa

        isa, cpu = vector_isa(), cpu or own_isa_cpu()
    base = _builtin(isa)
    over = _builtin(cpu) if cpu and _PLAIN_NAME.match(cpu) else None
    if over is None or base is None:
        return over or base
    return KnobTable({**base.entries, **over.entries})


_PLAIN_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")  # a table's file name: no path, no dots


# the IRModule attribute under which a module carries the knob table its kernels are to be
# lowered with (set by MetaScheduleApplyDatabase, read by relax.build)
SCHEDULE_KNOBS_ATTR = "minitvm.schedule_knobs"


@contextmanager
def use_knobs(table: KnobTable | None) -> Iterator[KnobTable | None]:
    """Builds started inside this block (in this thread) schedule with ``table``'s knobs."""
    stack = _stack()
    stack.append(table)
    try:
        yield table
    finally:
        stack.pop()
