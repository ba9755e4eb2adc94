"""The instrumented pass path: instrument callbacks and the debugging options of the context."""

from __future__ import annotations

import sys

from .context import _STATE

#: Passes transform.bisect_limit never counts or skips: analyses the pipeline depends on
#: (each dialect adds its own with register_bisect_exempt; Relay: InferType).
BISECT_EXEMPT: set[str] = set()


def register_bisect_exempt(name: str) -> None:
    """Pass ``name`` is never counted or skipped by ``transform.bisect_limit``."""
    BISECT_EXEMPT.add(name)


def _gate(p, mod, ctx) -> bool:
    """TVM's InstrumentBeforePass: should_run (all asked, ANDed) unless required, then before."""
    info = p.info
    insts = ctx.instruments
    if info.name not in ctx._required_set:
        run = True
        for inst in insts:
            should_run = getattr(inst, "should_run", None)
            if should_run is not None and not should_run(mod, info):
                run = False
        if not run:
            return False
    for inst in insts:
        inst.run_before_pass(mod, info)
    return True


def _bisect_allows(p, ctx) -> bool:
    limit = ctx.config.get("transform.bisect_limit", -1)
    if limit < 0 or p.kind == "sequential" or p.info.name in BISECT_EXEMPT:
        return True
    _STATE.bisect_count += 1
    n = _STATE.bisect_count
    if n <= limit:
        sys.stderr.write(f"BISECT: running pass ({n}) {p.info.name}\n")
        return True
    sys.stderr.write(f"BISECT: NOT running pass ({n}) {p.info.name}\n")
    return False


def run_instrumented(p, mod, ctx):
    """Run ``p`` on ``mod`` with instruments and debugging options (the slow path)."""
    st = _STATE
    if st.depth == 0:
        st.bisect_count = 0
        st.pass_index = 0
    st.depth += 1
    st.running.append(p)
    try:
        return _run(p, mod, ctx)
    finally:
        st.running.pop()
        st.depth -= 1


def running_passes() -> tuple:
    """The passes running now on the instrumented path, outermost first (for instruments)."""
    return tuple(_STATE.running)


def is_outermost_transform() -> bool:
    """True while the innermost running pass is not a Sequential and no enclosing pass is
    anything but a Sequential: the unit print-after-change and bisection report on."""
    running = _STATE.running
    if not running or running[-1].kind == "sequential":
        return False
    return all(q.kind == "sequential" for q in running[:-1])


def _run(p, mod, ctx):
    info = p.info
    debug = ctx._debug
    if debug and not _bisect_allows(p, ctx):
        return mod
    insts = ctx.instruments
    if insts and not _gate(p, mod, ctx):
        return mod
    if info.needs:
        from .properties import ensure_properties

        mod = ensure_properties(p, mod, ctx)
    leaf = p.kind != "sequential"
    before = None
    if debug and leaf and ctx.config.get("testing.immutable_module"):
        from ..ir.snapshot import snapshot

        before = snapshot(mod)  # what the module holds, by identity: cheaper than two hashes
    try:
        result = p._run(mod, ctx)
        if before is not None and before.changed() is not None:
            raise RuntimeError(f"Immutable module has been modified in pass: {info.name}")
        if info.has_contracts:
            from .properties import record_properties

            record_properties(p, mod, result, ctx)
        if debug and leaf:
            from .debug.checks import after_pass_checks

            after_pass_checks(p, mod, result, ctx)
    except Exception as err:
        from .debug.crash import on_pass_crash

        on_pass_crash(p, mod, ctx, err)
        raise
    for inst in insts:
        inst.run_after_pass(result, info)
    return result
