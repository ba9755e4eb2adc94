"""explain(): for each pass of a pipeline, whether it would run under a context, and why."""

from __future__ import annotations

from dataclasses import dataclass

from .instrumented import BISECT_EXEMPT


@dataclass
class ExplainEntry:
    name: str
    depth: int
    runs: bool
    reason: str
    kind: str = "pass"
    opt_level: int | None = None

    def __str__(self) -> str:
        mark = "run " if self.runs else "skip"
        return f"{'  ' * self.depth}[{mark}] {self.name}: {self.reason}"


class Explanation:
    """The answer of ``explain``: ``entries`` in execution order; ``str()`` renders a report."""

    def __init__(self, header: str, entries: list[ExplainEntry], notes: list[str]):
        self.header = header
        self.entries = entries
        self.notes = notes

    def __iter__(self):
        return iter(self.entries)

    def __len__(self):
        return len(self.entries)

    def would_run(self, name: str) -> bool:
        """Whether any occurrence of the pass ``name`` runs."""
        return any(e.runs for e in self.entries if e.name == name)

    def entry(self, name: str) -> ExplainEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise KeyError(f"no pass named {name!r} in the pipeline")

    def __str__(self) -> str:
        lines = [self.header]
        lines += [str(e) for e in self.entries]
        if self.notes:
            lines.append("notes:")
            lines += [f"  - {n}" for n in self.notes]
        return "\n".join(lines)

    __repr__ = __str__


def _vetoes(ctx, mod, info) -> list[str]:
    if mod is None or not ctx.instruments or info.name in ctx._required_set:
        return []
    out = []
    for inst in ctx.instruments:
        should_run = getattr(inst, "should_run", None)
        if should_run is not None and not should_run(mod, info):
            out.append(type(inst).__name__)
    return out


def explain(seq_or_pipeline, ctx=None, mod=None) -> Explanation:
    """Say, for each pass of ``seq_or_pipeline`` in order, whether it runs under ``ctx`` and why.

    ``seq_or_pipeline`` is a Pass (usually a Sequential) or pipeline text. With ``mod``, the
    instruments' should_run is asked too (on ``mod``).
    """
    from .context import PassContext
    from .pipeline_text import parse_pipeline

    ctx = ctx or PassContext.current()
    root = parse_pipeline(seq_or_pipeline) if isinstance(seq_or_pipeline, str) else \
        seq_or_pipeline
    lvl = ctx.opt_level
    header = (f"pipeline {root.info.name!r} at opt_level={lvl}, required_pass="
              f"{ctx.required_pass}, disabled_pass={ctx.disabled_pass}:")
    entries: list[ExplainEntry] = []
    notes: list[str] = []
    limit = ctx.config.get("transform.bisect_limit", -1)
    counted = [0]

    def add(p, depth, runs, reason):
        if runs and limit >= 0 and p.kind != "sequential" and p.info.name not in BISECT_EXEMPT:
            counted[0] += 1
            if counted[0] > limit:
                runs, reason = False, f"beyond transform.bisect_limit={limit} " \
                                      f"(pass number {counted[0]})"
        if runs:
            vetoes = _vetoes(ctx, mod, p.info)
            if vetoes:
                runs, reason = False, f"vetoed by instrument should_run: {', '.join(vetoes)}"
        entries.append(ExplainEntry(p.info.name, depth, runs, reason, p.kind, p.info.opt_level))
        return runs

    if root.kind != "sequential":
        add(root, 0, True, "called directly: a pass called directly always runs "
                           f"(its opt_level {root.info.opt_level} is not checked)")
        _after_notes(root, 0, entries)
        return Explanation(header, entries, notes)
    if root.info.opt_level > lvl:
        notes.append(f"the top-level Sequential's own opt_level ({root.info.opt_level}) is "
                     "ignored when it is called directly (TVM)")
    # explicit stack of (pass, depth); children pushed in reverse to pop in order
    stack = [(c, 1) for c in reversed(root.passes)]
    while stack:
        child, depth = stack.pop()
        info = child.info
        name = info.name
        if name in ctx._disabled_set:
            why = "disabled by disabled_pass"
            if name in ctx._required_set:
                why += " (disabled_pass beats required_pass)"
            add(child, depth, False, why)
            continue
        if name in ctx._required_set:
            reason = "forced by required_pass (opt_level not checked; should_run not asked)"
        elif lvl < info.opt_level:
            why = f"opt_level {info.opt_level} > context opt_level {lvl}"
            if child.kind == "sequential":
                why += (f"; the whole group of {len(child.passes)} passes is skipped: a nested "
                        "Sequential's own opt_level applies (TVM trap)")
            add(child, depth, False, why)
            continue
        else:
            reason = f"opt_level {info.opt_level} <= context opt_level {lvl}"
        for req in info.required:
            why = f"required by {name}: built from the registry and run before it"
            if req in ctx._disabled_set:
                why += "; runs even though disabled (TVM does not filter required passes)"
            elif _level_of(req) is not None and _level_of(req) > lvl:
                why += f"; runs even though its opt_level {_level_of(req)} > {lvl} (TVM)"
            req_pass = _RequiredStub(req)
            add(req_pass, depth, True, why)
        if add(child, depth, True, reason):
            if child.kind == "sequential":
                stack.extend((c, depth + 1) for c in reversed(child.passes))
            else:
                _after_notes(child, depth, entries)
    return Explanation(header, entries, notes)


def _after_notes(p, depth, entries) -> None:
    """The pass a pass runs after itself (``p.runs_after``: Relay function passes re-infer
    types), as the pass manager does."""
    after = getattr(p, "runs_after", None)
    if after:
        entries.append(ExplainEntry(after, depth, True,
                                    f"after function pass {p.info.name}: function passes "
                                    "re-infer types (skipped when no function changed)",
                                    "module", 0))


def _level_of(name: str):
    from .registry import get_pass_entry

    e = get_pass_entry(name)
    if e is None:
        return None
    lvl = e.opt_level
    return lvl if isinstance(lvl, int) else None


class _RequiredStub:
    """Stands for a required pass in explain without building it."""

    kind = "required"

    def __init__(self, name: str):
        from .pass_info import PassInfo

        self.info = PassInfo(_level_of(name) or 0, name)
