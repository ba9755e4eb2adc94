"""Records every IRModule a test builds and checks that each one holding Relax functions prints
and parses back structurally equal (``from_source(m.script()) == m``).

Used by ``tests/relax/conftest.py`` for the tests of ``ROUNDTRIP_PATHS``, and for every Relax
test when ``MINITVM_RELAX_ROUNDTRIP=1`` (the whole Relax suite as a
TVMScript round-trip corpus), and by ``test_relax_script_roundtrip_suite.py``."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import minitvm as tvm
from minitvm.ir.module import IRModule
from minitvm.relax.analysis import well_formed
from minitvm.relax.expr import Function as RelaxFunction

# fast Relax test files whose modules are checked in every run (they used to be re-run in a
# child pytest by test_relax_script_roundtrip_suite.py: running the hook in place saves
# running them twice)
ROUNDTRIP_PATHS = ("op", "frontend/test_nn.py", "frontend/test_relax_nn_kv_cache.py",
                   "analysis", "transform/legalize/test_relax_legalize_pass.py",
                   "transform/test_relax_canonicalize_bindings.py",
                   "transform/test_relax_bind.py")
# the 100k-binding legalization's modules are one op pair repeated: printing and parsing 100k
# bindings is tested in tests/script (test_script_parser_deep, test_relax_printer), and
# round-tripping them took 30 of the child run's 54 s in CI
ROUNDTRIP_EXCLUDED = ("transform/legalize/test_relax_legalize_pass.py::"
                      "test_100k_bindings_default_recursion_limit",)
HERE = Path(__file__).parent
_EVERY_TEST = os.environ.get("MINITVM_RELAX_ROUNDTRIP") == "1"


def roundtrip_checked(path: Path, name: str) -> bool:
    """Whether the test ``name`` of file ``path`` has its modules round-trip checked."""
    if _EVERY_TEST:
        return True
    try:
        rel = path.resolve().relative_to(HERE.resolve()).as_posix()
    except ValueError:
        return False
    if f"{rel}::{name}" in ROUNDTRIP_EXCLUDED:
        return False
    return any(rel == p or rel.startswith(p + "/") for p in ROUNDTRIP_PATHS)


@contextlib.contextmanager
def recording():
    """Collect the IRModules constructed inside the block (a list, filled as they are made)."""
    made: list[IRModule] = []
    original = IRModule.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    original_copy = IRModule.shallow_copy

    def shallow_copy(self):  # how passes make their result modules
        new = original_copy(self)
        made.append(new)
        return new

    IRModule.__init__ = init
    IRModule.shallow_copy = shallow_copy
    try:
        yield made
    finally:
        IRModule.__init__ = original
        IRModule.shallow_copy = original_copy


def has_relax(mod: IRModule) -> bool:
    return any(isinstance(f, RelaxFunction) for f in mod.functions.values())


def roundtrip_failure(mod: IRModule) -> str | None:
    """None when ``mod`` round-trips; else a message with the stage that failed."""
    try:
        text = mod.script(show_meta=True)  # non-scalar constants in the metadata section
    except Exception as err:  # noqa: BLE001 - reported, not swallowed
        return f"printing failed: {type(err).__name__}: {err}"
    try:
        back = tvm.script.from_source(text)
    except Exception as err:  # noqa: BLE001
        return f"parsing failed: {type(err).__name__}: {err}\n{text}"
    try:
        tvm.ir.assert_structural_equal(back, mod, map_free_vars=True)
    except ValueError as err:
        return f"parsed module differs from the original: {err}\n{text}"
    return None


def check_all(mods) -> list[str]:
    """Round-trip failures of the distinct well-formed Relax modules in ``mods`` (TVMScript
    describes normalized IR: a module the well-formedness check rejects is skipped)."""
    failures, seen, contents = [], set(), set()
    for mod in mods:
        if id(mod) in seen or not mod.functions or not has_relax(mod):
            continue
        # a copy holding the very same function objects (a pass that changed nothing, a
        # shallow copy) prints and parses exactly as the module already checked
        content = tuple(tuple(sorted((str(k), id(v)) for k, v in d.items()))
                        for d in (mod.functions, mod.attrs, mod.global_infos))
        if content in contents:
            continue
        if not well_formed(mod):  # deliberately broken or not-yet-normalized inputs
            continue
        seen.add(id(mod))
        contents.add(content)
        msg = roundtrip_failure(mod)
        if msg is not None:
            failures.append(msg)
    return failures
