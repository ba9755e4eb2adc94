"""``autotvm.graph_tuner``: not in minitvm (the error names what chooses layouts instead)."""

from __future__ import annotations

from .differs import missing_attribute

_WHY = ("there is no graph tuner: the x86 layout of each conv (NCHWc block sizes) is chosen "
        "by its schedule's knobs when the model is built",
        "the autotvm tuners (or minitvm.tune.tune_relay) then autotvm.apply_history_best(log) "
        "around relay.build; the layout transforms between convs are placed by AlterOpLayout")
_LEFT_OUT = {name: _WHY for name in ("DefaultGraphTuner", "PBQPTuner", "BaseGraphTuner")}


def __getattr__(name: str):
    missing_attribute(__name__.replace("minitvm", "tvm"), name, _LEFT_OUT)
