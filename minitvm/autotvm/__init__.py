"""``tvm.autotvm`` for scripts written against TVM's tuning tutorials, on ``minitvm.tune``.

The workflow of "Auto-tuning a Convolutional Network for x86 CPU" runs unchanged::

    tasks = autotvm.task.extract_from_program(mod["main"], target=target, params=params,
                                              ops=(relay.op.get("nn.conv2d"),))
    for task in tasks:
        tuner = autotvm.tuner.XGBTuner(task, loss_type="reg")
        tuner.tune(n_trial=min(32, len(task.config_space)),
                   measure_option=autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                                         runner=autotvm.LocalRunner()),
                   callbacks=[autotvm.callback.log_to_file("tuning.log")])
    with autotvm.apply_history_best("tuning.log"):
        lib = relay.build(mod, target=target, params=params)

Where minitvm deliberately differs (no RPC runner, no user templates, no graph tuner, TVM's own
log files) the error says so and names what to use (``TVMDifferenceError``).
"""

from __future__ import annotations

from . import callback, graph_tuner, measure, record, task, tuner
from .differs import TVMDifferenceError
from .measure import LocalBuilder, LocalRunner, RPCRunner, measure_option
from .record import apply_history_best
from .task import Task

__all__ = ["LocalBuilder", "LocalRunner", "RPCRunner", "TVMDifferenceError", "Task",
           "apply_history_best", "callback", "graph_tuner", "measure", "measure_option",
           "record", "task", "tuner"]

_LEFT_OUT = {
    name: ("the search space is the knobs of minitvm's built-in schedules; user-written "
           "AutoTVM templates are not supported",
           "autotvm.task.extract_from_program on a Relay program (or minitvm.tune)")
    for name in ("template", "register_topi_compute", "register_topi_schedule", "get_config",
                 "FallbackContext", "DispatchContext", "ApplyConfig")}
_LEFT_OUT["RPCRunner"] = ("there is no RPC runner", "autotvm.LocalRunner")


def __getattr__(name: str):
    from .differs import missing_attribute

    missing_attribute("tvm.autotvm", name, _LEFT_OUT)
