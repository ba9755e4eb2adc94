"""Checks and dumps run after every pass when the context asks for them."""

from __future__ import annotations

import os

from ...ir.dialect import module_hook
from ..context import _STATE


def module_text(mod) -> str:
    """The module's text (Relay text with metadata, or TVMScript), or a note saying why it cannot be printed."""
    try:
        try:
            return mod.astext(show_meta_data=True)
        except NotImplementedError:
            return mod.script()
    except Exception as err:
        return f"// the module could not be printed: {type(err).__name__}: {err}\n"


def file_suffix(mod) -> str:
    """The file extension of ``mod``'s text: its dialect's (``.relay``), else ``.txt``."""
    hook = module_hook("file_suffix", mod)
    return hook(mod) if hook is not None else ".txt"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name.strip()) or "pass"


def dump_ir(p, mod, ctx, suffix: str = "") -> str | None:
    """Write ``mod`` to the dump directory as ``NNN_<pass>.<dialect suffix>``; return the path."""
    d = ctx.config.get("transform.dump_ir_dir")
    if not d:
        return None
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{_STATE.pass_index:03d}_{_safe(p.info.name)}{suffix}{file_suffix(mod)}")
    with open(path, "w") as fh:
        fh.write(module_text(mod))
    return path


def after_pass_checks(p, before, after, ctx) -> None:
    """verify_each and dump_ir_dir, after a leaf pass ran."""
    cfg = ctx.config
    _STATE.pass_index += 1
    if cfg.get("transform.verify_each"):
        from .verify import WellFormedError, well_formed_problems

        problems = well_formed_problems(after)
        if problems:
            raise WellFormedError(
                f"pass {p.info.name!r} produced ill-formed IR:\n  " + "\n  ".join(problems)
            )
    if cfg.get("transform.dump_ir_dir"):
        dump_ir(p, after, ctx)
