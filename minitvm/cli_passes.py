"""The ``minitvm passes``, ``minitvm reproduce`` and ``minitvm bisect`` subcommands."""

from __future__ import annotations

import sys


def default_pipeline(opt_level: int):
    """relay.build's pass pipeline at ``opt_level``."""
    from .relay.transform import relay_build_pipeline

    return relay_build_pipeline(opt_level)


def default_post_passes() -> list:
    """The passes relay.build runs directly after its Sequential."""
    from .relay.transform import post_pipeline_passes

    return list(post_pipeline_passes())


POST_PIPELINE_REASON = "run directly by relay.build (no opt_level filter)"


def _post_pipeline_text() -> str:
    posts = default_post_passes()
    if not posts:
        return ""
    from .transform.explain import ExplainEntry, _after_notes

    entries: list = []
    for p in posts:
        entries.append(ExplainEntry(p.info.name, 1, True, POST_PIPELINE_REASON, p.kind,
                                    p.info.opt_level))
        _after_notes(p, 1, entries)
    lines = ["then, directly after the Sequential, at every opt_level:"]
    return "\n".join(lines + [str(e) for e in entries])


def _unknown_names(names, seq) -> list[str]:
    """The names in ``names`` that are neither registered nor in the pipeline ``seq``."""
    from .transform.registry import get_pass_entry

    known, stack = set(), [seq] if seq is not None else []
    while stack:
        p = stack.pop()
        known.add(p.info.name)
        stack.extend(getattr(p, "passes", ()))
    return [n for n in names if n not in known and get_pass_entry(n) is None]


def _table(rows: list[tuple], header: tuple) -> str:
    rows = [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths[:-1]) + "  {}"
    return "\n".join(fmt.format(*r) for r in [header, *rows])


def list_passes_text() -> str:
    from .transform.registry import list_passes

    rows = [(e.name, e.opt_level, e.kind, ",".join(e.required) or "-", e.description)
            for e in list_passes()]
    return _table(rows, ("name", "opt", "kind", "required", "description"))


def cmd_passes(args) -> int:
    """List the registered passes, and explain relay.build's pipeline at ``--opt-level``."""
    from .transform.context import PassContext
    from .transform.explain import explain
    from .transform.pipeline_text import parse_pipeline

    opt_level = getattr(args, "opt_level", 2)
    pipeline_text = getattr(args, "pipeline", None)
    ctx = PassContext(opt_level=opt_level,
                      required_pass=getattr(args, "required_pass", None) or None,
                      disabled_pass=getattr(args, "disabled_pass", None) or None)
    if getattr(args, "all", False):
        print(list_passes_text())
        return 0
    seq = parse_pipeline(pipeline_text) if pipeline_text else default_pipeline(opt_level)
    if seq is None:
        print("relay.build's pipeline is not available (no relay_build_pipeline hook yet); "
              "registered passes and whether a Sequential runs them at "
              f"opt_level={opt_level}:")
        rows = []
        for e in _entries():
            lvl = e.opt_level
            runs = isinstance(lvl, int) and lvl <= opt_level
            rows.append((e.name, lvl, e.kind, "run" if runs else f"skip (opt_level {lvl} > "
                                                                  f"{opt_level})"))
        print(_table(rows, ("name", "opt", "kind", "in a Sequential")))
        return 0
    print(f"pipeline: {seq}")
    print(explain(seq, ctx))
    if not pipeline_text:
        post = _post_pipeline_text()
        if post:
            print(post)
    names = list(ctx.disabled_pass) + list(ctx.required_pass)
    for name in _unknown_names(names, seq):
        print(f"warning: no pass named {name!r} is registered or in the pipeline",
              file=sys.stderr)
    return 0


def _entries():
    from .transform.registry import list_passes

    return list_passes()


def cmd_reproduce(args) -> int:
    """Re-run a crash reproducer; exit status 1 when the error reproduces."""
    from .transform.debug.crash import read_reproducer, reproduce

    rep = read_reproducer(args.file)
    print(f"re-running pipeline {rep.pipeline!r} with context {rep.context}")
    try:
        reproduce(args.file)
    except Exception as err:
        print(f"reproduced: {type(err).__name__}: {err}")
        return 1
    print("the pipeline ran without error: the crash did not reproduce")
    return 0


def cmd_bisect(args) -> int:
    """Run a pipeline on a Relay text file and report the first pass that changes its outputs."""
    from .instrument.bisect import NumericalBisect
    from .ir.dialect import parse_module_text
    from .transform.context import PassContext
    from .transform.pipeline_text import parse_pipeline

    with open(args.file) as fh:
        mod = parse_module_text(fh.read())
    opt_level = getattr(args, "opt_level", 3)
    text = getattr(args, "pipeline", None)
    seq = parse_pipeline(text) if text else default_pipeline(opt_level)
    if seq is None:
        print("no --pipeline given and relay.build's pipeline is not available",
              file=sys.stderr)
        return 2
    bis = NumericalBisect(rtol=getattr(args, "rtol", 1e-5), atol=getattr(args, "atol", 1e-5))
    with PassContext(opt_level=opt_level, instruments=[bis]):
        seq(mod)
    print(bis.report())
    return 1 if bis.first_bad is not None else 0
