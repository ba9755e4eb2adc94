"""``relay.op.strategy.x86``: the CPU strategies. minitvm's CPU code comes from one schedule
rule table, so these are the generic strategies (``strategy.generic``) under TVM's x86 names
(``conv2d_strategy_cpu`` is ``generic.conv2d_strategy``)."""

from . import generic as _generic

__all__: list[str] = []
for _name in _generic._STRATEGIES:
    globals()[_name.replace("_strategy", "_strategy_cpu")] = getattr(_generic, _name)
    __all__.append(_name.replace("_strategy", "_strategy_cpu"))
