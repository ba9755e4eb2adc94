"""``tvm.runtime.profiling``: per-call metrics of a run (a ``Report``) and the metric values.

A ``Report`` holds one dict of metrics per call (name, duration, device, argument shapes, ...),
per-device totals and the run's configuration; it prints as TVM's table (``table()``), and
converts to CSV and JSON (and back, ``Report.from_json``). ``profile_function`` times one
function of a compiled module.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from .object import Object

__all__ = ["Report", "Count", "Duration", "Percent", "Ratio", "MetricCollector",
           "DeviceWrapper", "profile_function"]


class Count(Object):
    """An integer count of something (``.value``)."""

    __slots__ = ("value",)

    def __init__(self, count: int):
        self.value = int(count)

    def __repr__(self):
        return f"Count({self.value})"


class Duration(Object):
    """A duration in microseconds (``.microseconds``)."""

    __slots__ = ("microseconds",)

    def __init__(self, duration: float):
        self.microseconds = float(duration)

    def __repr__(self):
        return f"Duration({self.microseconds:g} us)"


class Percent(Object):
    """A percentage (``.percent``)."""

    __slots__ = ("percent",)

    def __init__(self, percent: float):
        self.percent = float(percent)

    def __repr__(self):
        return f"Percent({self.percent:g})"


class Ratio(Object):
    """A ratio of two quantities (``.ratio``)."""

    __slots__ = ("ratio",)

    def __init__(self, ratio: float):
        self.ratio = float(ratio)

    def __repr__(self):
        return f"Ratio({self.ratio:g})"


class MetricCollector(Object):
    """Base of metric collectors: ``init(devices)``, ``start(dev) -> token`` and
    ``stop(token) -> dict`` of extra metrics around each profiled call."""

    __slots__ = ()

    def init(self, devices) -> None:
        """Prepare for a run on ``devices``."""

    def start(self, dev):
        return None

    def stop(self, token) -> dict:
        return {}


class DeviceWrapper(Object):
    """A device used as a key of per-device metrics."""

    __slots__ = ("device",)

    def __init__(self, dev):
        self.device = dev


_JSON_KEYS = ((Duration, "microseconds"), (Count, "count"), (Percent, "percent"),
              (Ratio, "ratio"))


def _to_json_value(v):
    if isinstance(v, Duration):
        return {"microseconds": v.microseconds}
    if isinstance(v, Count):
        return {"count": v.value}
    if isinstance(v, Percent):
        return {"percent": v.percent}
    if isinstance(v, Ratio):
        return {"ratio": v.ratio}
    if isinstance(v, str | int | float | bool) or v is None:
        return v
    return str(v)


def _from_json_value(v):
    if isinstance(v, dict) and len(v) == 1:
        (key, x), = v.items()
        for cls, name in _JSON_KEYS:
            if key == name:
                return cls(x)
    return v


def _number(v) -> float | None:
    if isinstance(v, Duration):
        return v.microseconds
    if isinstance(v, Count):
        return float(v.value)
    if isinstance(v, Percent):
        return v.percent
    if isinstance(v, Ratio):
        return v.ratio
    return None


def _cell(v) -> str:
    if isinstance(v, Duration):
        return f"{v.microseconds:,.2f}"
    if isinstance(v, Percent):
        return f"{v.percent:.2f}"
    if isinstance(v, Ratio):
        return f"{v.ratio:.2f}"
    if isinstance(v, Count):
        return f"{v.value:,}"
    return "" if v is None else str(v)


_FIRST_COLUMNS = ("Name", "Duration (us)", "Percent", "Device", "Count", "Argument Shapes")
_GROUP_KEYS = ("Name", "Device", "Argument Shapes")


def _add(a, b):
    if isinstance(a, Duration):
        return Duration(a.microseconds + b.microseconds)
    if isinstance(a, Count):
        return Count(a.value + b.value)
    if isinstance(a, Percent):
        return Percent(a.percent + b.percent)
    return a  # strings and ratios: the first call's value stands for the group


class Report(Object):
    """The metrics of a profiling run: ``calls`` (one dict per call), ``device_metrics``
    (per device) and ``configuration`` (threads, executor, ...)."""

    __slots__ = ("calls", "device_metrics", "configuration")

    def __init__(self, calls: Sequence[dict], device_metrics: dict[str, dict],
                 configuration: dict | None = None):
        self.calls = [dict(c) for c in calls]
        self.device_metrics = {str(k): dict(v) for k, v in device_metrics.items()}
        self.configuration = dict(configuration or {})

    # ------------------------------------------------------------------ formats
    def _rows(self, sort: bool, aggregate: bool) -> list[dict]:
        if not aggregate:
            return [dict(c) for c in self.calls]  # order of appearance
        groups: dict[tuple, dict] = {}
        for c in self.calls:
            key = tuple(str(c.get(k, "")) for k in _GROUP_KEYS)
            row = groups.get(key)
            if row is None:
                groups[key] = dict(c, Count=c.get("Count", Count(1)))
            else:
                for k, v in c.items():
                    if k in row and type(row[k]) is type(v):
                        row[k] = _add(row[k], v)
                if "Count" not in c:
                    row["Count"] = Count(row["Count"].value + 1)
        rows = list(groups.values())
        if sort:
            rows.sort(key=lambda r: -(_number(r.get("Duration (us)")) or 0.0))
        return rows

    def _columns(self, rows: list[dict]) -> list[str]:
        seen = {k for r in rows for k in r}
        cols = [c for c in _FIRST_COLUMNS if c in seen]
        return cols + sorted(seen - set(cols))

    def table(self, sort: bool = True, aggregate: bool = True, col_sums: bool = True) -> str:
        """A human-readable table: one line per call (or per op with ``aggregate``), a ``Sum``
        line, per-device ``Total`` lines and the configuration."""
        rows = self._rows(sort, aggregate)
        cols = self._columns(rows)
        lines = [[c for c in cols]]
        for r in rows:
            lines.append([_cell(r.get(c)) for c in cols])
        if col_sums and rows:
            sums = []
            for c in cols:
                vals = [r.get(c) for r in rows]
                if c in ("Name",):
                    sums.append("Sum")
                elif vals and all(isinstance(v, Duration | Percent | Count) for v in vals):
                    total = vals[0]
                    for v in vals[1:]:
                        total = _add(total, v)
                    sums.append(_cell(total))
                else:
                    sums.append("")
            lines.append(None)
            lines.append(sums)
        for dev, metrics in self.device_metrics.items():
            lines.append([("Total" if c == "Name" else dev if c == "Device" else
                           _cell(metrics.get(c))) for c in cols])
        widths = [max(len(line[i]) for line in lines if line is not None)
                  for i in range(len(cols))]
        out = []
        for line in lines:
            if line is None:
                out.append("-" * 10)
                continue
            out.append("  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                                 for i, (v, w) in enumerate(zip(line, widths))).rstrip())
        if self.configuration:
            out += ["", "Configuration", "-------------"]
            out += [f"{k}: {_cell(v)}" for k, v in self.configuration.items()]
        return "\n".join(out)

    def csv(self) -> str:
        """The calls as CSV (durations in microseconds); overall metrics are not included."""
        cols = self._columns(self.calls)
        out = [",".join(cols)]
        for c in self.calls:
            cells = []
            for k in cols:
                v = c.get(k)
                num = _number(v)
                text = repr(num) if num is not None and not isinstance(v, Count) else \
                    str(v.value) if isinstance(v, Count) else _cell(v)
                cells.append(f'"{text}"' if "," in text else text)
            out.append(",".join(cells))
        return "\n".join(out)

    def json(self) -> str:
        """The report as JSON text (``Report.from_json`` reads it back)."""
        return json.dumps({
            "calls": [{k: _to_json_value(v) for k, v in c.items()} for c in self.calls],
            "device_metrics": {d: {k: _to_json_value(v) for k, v in m.items()}
                               for d, m in self.device_metrics.items()},
            "configuration": {k: _to_json_value(v) for k, v in self.configuration.items()},
        })

    @classmethod
    def from_json(cls, s: str) -> Report:
        """Read a report written by ``json()``."""
        data = json.loads(s)
        if not isinstance(data, dict) or "calls" not in data:
            raise ValueError("Report.from_json: expected an object with 'calls' and "
                             "'device_metrics' (text written by Report.json())")
        calls = [{k: _from_json_value(v) for k, v in c.items()} for c in data["calls"]]
        devs = {d: {k: _from_json_value(v) for k, v in m.items()}
                for d, m in data.get("device_metrics", {}).items()}
        conf = {k: _from_json_value(v) for k, v in data.get("configuration", {}).items()}
        return cls(calls, devs, conf)

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__


def _device_name(dev) -> str:
    text = str(dev)
    return text.replace("(", "").replace(")", "")


def profile_function(mod, dev, collectors: Sequence[MetricCollector] = (), func_name=None,
                     warmup_iters: int = 10):
    """A function that runs ``mod[func_name]`` ``warmup_iters`` times, then once measured, and
    returns ``{"Duration (us)": Duration, ...}`` plus what each collector reports."""
    if func_name is None:
        func_name = getattr(mod, "entry_name", None) or "default_function"
    func = mod[func_name]
    collectors = list(collectors or ())
    for c in collectors:
        c.init([dev])

    def profiled(*args) -> dict:
        for _ in range(warmup_iters):
            func(*args)
        tokens = [c.start(dev) for c in collectors]
        t0 = time.perf_counter()
        func(*args)
        elapsed = time.perf_counter() - t0
        metrics: dict = {"Duration (us)": Duration(elapsed * 1e6)}
        for c, tok in zip(collectors, tokens):
            metrics.update(c.stop(tok) or {})
        return metrics

    return profiled
