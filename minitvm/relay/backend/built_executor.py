"""The "graph", "vm" and "aot" executor kinds on compiled code (``relay.create_executor``).

Each builds ``main`` with ``relay.build`` and runs it on the graph executor (the "aot" kind uses
the whole-graph native entry whenever every kernel is native, as all kinds do). When the program
cannot be compiled (closures, control flow, ADTs, dynamic shapes) the executor evaluates it with
the interpreter instead and records why in ``build_error``.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.module import IRModule
from ...ir.type import TupleType
from ...runtime.ndarray import NDArray
from ..expr import Function
from .executor import check_args, convert_kwargs
from .interpreter import Interpreter
from .values import ADT


def _flat_types(t) -> list:
    out, stack = [], [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TupleType):
            stack.extend(reversed(x.fields))
        else:
            out.append(x)
    return out


def _pack(t, flat: list):
    """Rebuild the (possibly nested) tuple value of type ``t`` from flat outputs."""
    if not isinstance(t, TupleType):
        return flat.pop(0)
    return ADT(0, [_pack(f, flat) for f in t.fields])


class CompiledExecutor(Interpreter):
    """Base of the compiled executor kinds; falls back to the interpreter when building fails."""

    _checks_when_made = False  # (it builds lazily: free variables are looked for first)

    def __init__(self, mod, device=None, target="llvm"):
        super().__init__(mod, device, target)
        self.build_error: Exception | None = None
        self.factory = None

    def _make_executor(self, expr=None):
        from ...runtime.graph_executor import GraphModule
        from .graph_build import build

        if expr is None or (isinstance(expr, GlobalVar) and expr.name_hint == "main"):
            mod = self.mod
        elif isinstance(expr, Function) and (self.mod is None or not self.mod.functions):
            mod = IRModule.from_expr(expr)
        else:
            return super()._make_executor(expr)
        try:
            typed, _ = self._prepare(None) if mod is self.mod else (None, None)
            if typed is None:
                from ..transform import InferType

                typed = InferType()(mod)
            factory = build(typed, target=self.target)
            gm = GraphModule.from_factory(factory, self.device)
        except (ValueError, TypeError, NotImplementedError, KeyError) as err:
            self.build_error = err
            return super()._make_executor(expr)
        self.factory = factory
        func = typed["main"]
        ret_type = func.checked_type.ret_type
        entries = [gm._input_index[p.name_hint] for p in func.params] \
            if len({p.name_hint for p in func.params}) == len(func.params) else None
        if entries is None:
            self.build_error = ValueError("main has duplicate parameter names")
            return super()._make_executor(expr)

        def _run(*args, **kwargs):
            args = convert_kwargs(func, args, kwargs, "main")
            values = check_args(func, args, "main")
            gm._write_all_inputs(entries, values)  # every parameter, no per-name lookups
            gm.run()
            outs = [NDArray(gm.get_output(k).numpy().copy())
                    for k in range(gm.get_num_outputs())]
            return _pack(ret_type, outs) if isinstance(ret_type, TupleType) else outs[0]

        return _run


class GraphExecutor(CompiledExecutor):
    """``create_executor("graph")``: the graph executor on ``relay.build``'s output."""


class VMExecutor(CompiledExecutor):
    """``create_executor("vm")``: compiled graph when possible, else the interpreter."""


class AotExecutor(CompiledExecutor):
    """``create_executor("aot")``: one native entry running the whole graph."""


_ = _flat_types
