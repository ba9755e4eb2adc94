"""Sequential: run a list of passes, filtered by the context exactly as TVM's SequentialNode."""

from __future__ import annotations

from .pass_base import Pass
from .pass_info import PassInfo


class Sequential(Pass):
    """A pass that runs ``passes`` in order under the current PassContext.

    A child is skipped when its name is disabled (disabled beats required); otherwise it runs
    when it is required or ``ctx.opt_level >= child.info.opt_level``. Before a child runs, the
    passes named in its ``info.required`` are built from the registry and run (even if disabled,
    as TVM does). The Sequential's own opt_level matters only when it is nested in another one.
    """

    kind = "sequential"

    def __init__(self, passes=None, opt_level: int = 0, name: str = "sequential",
                 required=None, traceable: bool = False):
        passes = [] if passes is None else passes
        if not isinstance(passes, list | tuple):
            raise TypeError("passes must be a list of Pass objects.")
        for p in passes:
            if not isinstance(p, Pass):
                raise TypeError(f"Sequential got {p!r} ({type(p).__name__}), which is not a Pass")
        if required is not None and not isinstance(required, list | tuple):
            raise TypeError("Required is expected to be the type of list/tuple.")
        super().__init__(PassInfo(opt_level, name, required, traceable))
        self.passes = list(passes)

    def __str__(self) -> str:
        """The pipeline as text (``parse_pipeline(str(seq))`` rebuilds it)."""
        from .pipeline_text import pass_to_text

        return pass_to_text(self)

    def describe(self) -> str:
        """TVM's str() of a Sequential."""
        names = "".join(f"{p.info.name} " for p in self.passes)
        return (f"Run Sequential pass: {self.info.name} at the optimization level "
                f"{self.info.opt_level}. The passes will be executed are: [{names}]")

    def _run(self, mod, ctx):
        from .properties import managed_pass

        done: list[str] = []
        for child in self.passes:
            info = child.info
            name = info.name
            if name in ctx._disabled_set:
                continue
            if name not in ctx._required_set and ctx.opt_level < info.opt_level:
                continue
            try:
                for req in info.required:
                    mod = managed_pass(req)(mod, ctx)
                mod = child(mod, ctx)
            except Exception as err:
                _add_pipeline_note(err, self, name, done)
                raise
            done.append(name)
        return mod


def _add_pipeline_note(err: Exception, seq: Sequential, failing: str, done: list[str]) -> None:
    ran = ", ".join(done) if done else "none"
    note = f"while running pass {failing!r} in Sequential {seq.info.name!r} (passes run before " \
           f"it: {ran})"
    if hasattr(err, "add_note"):
        err.add_note(note)
    trail = getattr(err, "_minitvm_pipeline", None)
    if trail is not None:
        trail.append(seq)
