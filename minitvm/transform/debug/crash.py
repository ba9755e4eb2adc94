"""Crash reproducers: when a pass raises, save what is needed to re-run it exactly.

The file holds the input module's text (in its dialect's format), the failing pass as pipeline text, the files that
define the passes it uses, and the PassContext (opt_level, config, required/disabled passes).
``minitvm reproduce FILE`` (or ``tvm.transform.reproduce(FILE)``) re-runs it.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys
import tempfile

from ...ir.dialect import parse_module_text
from .checks import dump_ir, file_suffix, module_text

_MARK = "//!"
_SEPARATOR = "// ---- module ----"
_counter = itertools.count()


def _defining_files(p) -> list[str]:
    """Source files of the Python modules that define ``p`` and the passes nested in it."""
    from ..registry import get_pass_entry

    files: list[str] = []
    stack = [p]
    while stack:
        q = stack.pop()
        stack.extend(getattr(q, "passes", ()))
        mods = {type(q).__module__}
        fn = getattr(q, "pass_func", None)
        if fn is not None:
            mods.add(getattr(fn, "__module__", None))
        entry = get_pass_entry(q._factory_name or q.info.name)
        if entry is not None:
            mods.add(entry.module)
        for m in mods:
            if not m or m.startswith("minitvm.") or m == "minitvm":
                continue
            f = getattr(sys.modules.get(m), "__file__", None)
            if f and f not in files:
                files.append(os.path.abspath(f))
    return files


def _jsonable(v):
    try:
        json.dumps(v)
        return True
    except (TypeError, ValueError):
        return False


def write_reproducer(p, mod, ctx, err: Exception) -> str:
    """Write the reproducer file of ``p`` failing on ``mod``; return its path."""
    from ..pipeline_text import pass_to_text

    d = ctx.config.get("transform.reproducer_dir") or os.environ.get(
        "MINITVM_REPRODUCER_DIR") or os.path.join(tempfile.gettempdir(), "minitvm_reproducers")
    os.makedirs(d, exist_ok=True)
    safe = "".join(c if c.isalnum() else "_" for c in p.info.name)
    path = os.path.join(d, f"crash_{safe}_{os.getpid()}_{next(_counter)}{file_suffix(mod)}")
    context = {"opt_level": ctx.opt_level, "required_pass": ctx.required_pass,
               "disabled_pass": ctx.disabled_pass,
               "config": {k: v for k, v in ctx.config.items() if _jsonable(v)}}
    first = (str(err).splitlines() or [""])[0]
    lines = [f"// minitvm crash reproducer: re-run with `minitvm reproduce {path}`",
             f"// error: {type(err).__name__}: {first}",
             f"{_MARK} pipeline: {pass_to_text(p)}"]
    lines += [f"{_MARK} import: {f}" for f in _defining_files(p)]
    lines += [f"{_MARK} context: {json.dumps(context)}", _SEPARATOR, module_text(mod)]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


#: At most this many reproducers are written per process (a test suite full of expected errors
#: must not flood the temp directory).
MAX_REPRODUCERS = 100
_written = [0]
_OFF, _ON = ("0", "false", "no", "off"), ("1", "true", "yes", "on")


def _reproducers_enabled(cfg) -> bool:
    """Reproducers are opt-in: ``transform.crash_reproducer=True``, a ``transform.reproducer_dir``
    or ``MINITVM_CRASH_REPRODUCER=1``; an explicit False (config or env) always wins. Errors in
    user input (a type error in parsed text) are explained by their message and need no file."""
    env = os.environ.get("MINITVM_CRASH_REPRODUCER", "").strip().lower()
    flag = cfg.get("transform.crash_reproducer")
    if env in _OFF or flag is False:
        return False
    if not (flag is True or cfg.get("transform.reproducer_dir") or env in _ON):
        return False
    _written[0] += 1
    return _written[0] <= MAX_REPRODUCERS


def on_pass_crash(p, mod, ctx, err: Exception) -> None:
    """Called once per exception, by the innermost pass it escapes from."""
    if getattr(err, "_minitvm_handled", False):
        return
    try:
        err._minitvm_handled = True
    except AttributeError:  # an exception type without a __dict__
        return
    name = p.info.name
    notes = []
    cfg = ctx.config
    if cfg.get("transform.dump_ir_dir"):
        path = dump_ir(p, mod, ctx, suffix=".input")
        sys.stderr.write(f"IR received by the failing pass {name!r} (also in {path}):\n"
                         f"{module_text(mod)}\n")
    if _reproducers_enabled(cfg):
        try:
            path = write_reproducer(p, mod, ctx, err)
        except Exception as werr:  # never hide the pass's own error
            notes.append(f"minitvm: could not write a crash reproducer: {werr}")
        else:
            err.reproducer = path
            notes.append(f"minitvm: pass {name!r} raised; a reproducer was written to {path}; "
                         f"re-run it with: minitvm reproduce {path}")
    if hasattr(err, "add_note"):
        for n in notes:
            err.add_note(n)


# ------------------------------------------------------------------------------- re-running
class Reproducer:
    """A parsed reproducer file."""

    def __init__(self, pipeline: str, imports: list[str], context: dict, module_text: str):
        self.pipeline = pipeline
        self.imports = imports
        self.context = context
        self.module_text = module_text


def read_reproducer(path: str) -> Reproducer:
    with open(path) as fh:
        text = fh.read()
    head, sep, body = text.partition(_SEPARATOR + "\n")
    if not sep:
        raise ValueError(f"{path} is not a minitvm reproducer (no '{_SEPARATOR}' line)")
    pipeline, imports, context = None, [], {}
    for line in head.splitlines():
        if not line.startswith(_MARK):
            continue
        key, _, value = line[len(_MARK):].strip().partition(": ")
        if key == "pipeline":
            pipeline = value
        elif key == "import":
            imports.append(value)
        elif key == "context":
            context = json.loads(value)
    if pipeline is None:
        raise ValueError(f"{path} has no '{_MARK} pipeline:' line")
    return Reproducer(pipeline, imports, context, body)


def _import_file(path: str):
    for m in list(sys.modules.values()):
        if os.path.abspath(getattr(m, "__file__", "") or "") == path:
            return m
    name = "_minitvm_repro_" + "".join(c if c.isalnum() else "_" for c in path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def reproduce(path: str):
    """Re-run a crash reproducer: raises the pass's error again (or returns the module)."""
    from ..context import PassContext
    from ..pipeline_text import parse_pipeline

    rep = read_reproducer(path)
    namespaces = [vars(_import_file(f)) for f in rep.imports]
    mod = parse_module_text(rep.module_text)
    seq = parse_pipeline(rep.pipeline, namespaces=namespaces)
    c = rep.context
    config = dict(c.get("config", {}))
    config["transform.crash_reproducer"] = False
    with PassContext(opt_level=c.get("opt_level", 2), required_pass=c.get("required_pass"),
                     disabled_pass=c.get("disabled_pass"), config=config):
        return seq(mod)
