"""RemoveStandaloneReshapes(): drop the reshape kernels left alone after lowering (TVM v0.19).

In a lowered ``main``, a reshape that FuseOps could not fuse is its own kernel, called as
``call_lowered(@..._reshape, (%x,))`` with ``relay.reshape_only=1`` in its ``relay_attrs``
metadata. Where ``%x`` is let-bound to ``on_device(call_lowered(@producer, ...))``, the reshape
call is replaced by that producer call itself (flat buffers make the reshape a no-op, and the
``on_device`` wrapper is not repeated), then RemoveUnusedFunctions(["main"]) drops the reshape
kernels nothing calls any more. Only ``main`` is rewritten; the pass is what AOT runs when the
config option ``relay.remove_standalone_reshapes.enable`` is set.
"""

from __future__ import annotations

from ...transform.config import register_pass_config
from ...transform.stats import record_stat
from ..expr import Call, Function, Var
from ..expr_functor import ExprMutator
from ..op.call import call_lowered_props, is_reshape_only
from ._pass_helpers import make_module_pass, register
from .remove_unused_functions import remove_unused_functions

__all__ = ["RemoveStandaloneReshapes", "remove_standalone_reshapes"]

register_pass_config("relay.remove_standalone_reshapes.enable", bool, True,
                     "Run RemoveStandaloneReshapes in the AOT flow")


def _on_device_body(e):
    """The body of an ``on_device`` call, else None (TVM's GetOnDeviceProps)."""
    if type(e) is Call and getattr(e.op, "name", None) == "on_device":
        return e.args[0]
    return None


class _Remover(ExprMutator):
    """Replaces reshape-only call_lowered calls of let-bound producers by the producers."""

    def __init__(self):
        super().__init__()
        self.producer: dict = {}  # let var -> the call_lowered its on_device wraps
        self.count = 0

    def visit_let(self, let):
        chain = self._let_chain(let)
        parts = []
        for node in chain:
            var = self.visit(node.var)
            value = self.visit(node.value)
            body = _on_device_body(value)
            if body is not None and call_lowered_props(body) is not None:
                self.producer[var] = body
            parts.append((var, value))
        return self._rebuild_let_chain(chain, parts, self.visit(chain[-1].body))

    def visit_call(self, call):
        new = super().visit_call(call)
        props = call_lowered_props(new)
        if props is None:
            return new
        _, args, metadata = props
        if is_reshape_only(metadata) and args and type(args[0]) is Var:
            producer = self.producer.get(args[0])
            if producer is not None:
                self.count += 1
                return producer
        return new


def remove_standalone_reshapes(mod):
    """A copy of ``mod`` whose main no longer calls standalone reshape kernels."""
    if "main" not in mod:
        raise ValueError("RemoveStandaloneReshapes: the module has no 'main' function")
    main = mod["main"]
    if not isinstance(main, Function):
        raise TypeError("RemoveStandaloneReshapes: 'main' is not a Relay function")
    remover = _Remover()
    body = remover.visit(main.body)
    out = mod
    if body is not main.body:
        out = mod.shallow_copy()
        out.update_func(mod.get_global_var("main"),
                        Function(main.params, body, main.ret_type, main.type_params,
                                 main.attrs, main.span))
    record_stat("removed reshapes", remover.count)
    return remove_unused_functions(out, ["main"])


@register("RemoveStandaloneReshapes")
def RemoveStandaloneReshapes():  # noqa: N802 - TVM's name
    """Module pass (opt 0): replace standalone reshape kernels by their producers' calls."""
    return make_module_pass(lambda mod, ctx: remove_standalone_reshapes(mod), opt_level=0,
                            name="RemoveStandaloneReshapes")
