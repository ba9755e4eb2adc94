"""tvm.transform: the pass infrastructure (passes, Sequential, PassContext, registry, debugging).

TVM's rules exactly (see ``explain`` for what they imply on a pipeline), plus pipeline debugging
tools TVM lacks: textual pipelines, explain, verify-each, crash reproducers, IR dumps, a bisect
limit, pass statistics and IR-property contracts.
"""

from .pass_info import PROPERTIES, PassInfo
from .config import list_configs, register_pass_config
from .context import PassContext
from .pass_base import ModulePass, Pass, PrintIR
from .sequential import Sequential
from .decorators import module_pass
from .registry import get_pass, list_passes, register_pass, unregister_pass
from .pipeline_text import PipelineSyntaxError, parse_pipeline
from .explain import Explanation, explain
from .stats import record_stat
from .properties import PropertyError, check_property
from .debug.verify import WellFormedError
from .debug.crash import reproduce
from .instrumented import running_passes


def ApplyPassToFunction(transform, func_name_regex: str,
                        error_if_no_function_matches_regex: bool = False) -> ModulePass:
    """Apply ``transform`` only to the functions whose names match ``func_name_regex``."""
    import re

    pattern = re.compile(func_name_regex)

    def run(mod, ctx):
        from ..ir.module import IRModule

        keep = {gv: f for gv, f in mod.functions.items() if pattern.fullmatch(gv.name_hint)}
        if not keep and error_if_no_function_matches_regex:
            raise ValueError(f"no function matches the regex {func_name_regex!r}")
        sub = transform(IRModule(keep, mod.type_definitions))
        for gv, f in sub.functions.items():
            mod.update_func(gv, f)
        return mod

    return ModulePass(run, PassInfo(0, f"ApplyPassTo{func_name_regex}"))


__all__ = [
    "PassInfo", "PassContext", "Pass", "ModulePass", "Sequential", "module_pass", "PrintIR",
    "register_pass", "get_pass", "list_passes", "unregister_pass", "register_pass_config",
    "list_configs", "parse_pipeline", "PipelineSyntaxError", "explain", "Explanation",
    "record_stat", "PropertyError", "check_property", "WellFormedError", "reproduce",
    "running_passes", "ApplyPassToFunction", "PROPERTIES",
]
