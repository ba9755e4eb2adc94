"""torch.export ExportedProgram -> Relax ``main``: user inputs become parameters (symbolic
dims for dynamic ``Dim``s), weights constants or trailing parameters, ATen nodes bindings."""

from __future__ import annotations

import operator
import re

import numpy as np

from ....frontend_common.torch_arrays import tensor_to_numpy
from ....frontend_common.torch_schema import schema_args
from ....ir.module import IRModule
from ....runtime.ndarray import NDArray
from ...block_builder import BlockBuilder
from ...expr import Expr, Tuple, Var, const
from ...struct_info import TensorStructInfo
from .aten_fft import ComplexValue, refuse_complex
from .context import ATEN, AtenContext, OpNotImplemented, TorchImportError, torch_dtype

__all__ = ["ExportedProgramImporter", "aten_name"]

_PY_OPS = {operator.add: "operator.add", operator.sub: "operator.sub",
           operator.mul: "operator.mul", operator.floordiv: "operator.floordiv",
           operator.mod: "operator.mod", operator.ge: "operator.ge",
           operator.le: "operator.le", operator.gt: "operator.gt", operator.lt: "operator.lt",
           operator.eq: "operator.eq"}


def aten_name(target) -> str:
    """``"add.Tensor"`` for ``torch.ops.aten.add.Tensor``; ``"operator.mul"`` for size math."""
    if target in _PY_OPS:
        return _PY_OPS[target]
    schema = getattr(target, "_schema", None)
    if schema is None:
        return getattr(target, "__name__", str(target))
    ns, _, name = schema.name.partition("::")
    overload = schema.overload_name or "default"
    return f"{name}.{overload}" if ns == "aten" else f"{ns}::{name}.{overload}"


def _numpy(t) -> np.ndarray:
    return tensor_to_numpy(t)  # bfloat16 widened to float32 (frontend_common.torch_arrays)


def _constant(arr: np.ndarray):
    """A constant of the program: a complex one (a rotary embedding's ``torch.polar``
    frequencies kept as a buffer) as the pair of float tensors complex values are here."""
    if np.iscomplexobj(arr):
        part = np.float64 if arr.dtype == np.complex128 else np.float32
        return ComplexValue(const(arr.real.astype(part)), const(arr.imag.astype(part)))
    return const(arr)


def _var_name(name: str) -> str:
    return re.sub(r"\W", "_", name)


class ExportedProgramImporter:
    """Walks the (decomposed) graph module of an ExportedProgram in order."""

    def __init__(self, keep_params_as_input: bool, unwrap_unit_return_tuple: bool,
                 custom_convert_map: dict | None = None):
        self.keep_params = keep_params_as_input
        self.unwrap = unwrap_unit_return_tuple
        # ATen name ("sigmoid.default") -> the user's converter(node, importer) -> Relax expr
        self.custom_convert_map = dict(custom_convert_map or {})
        self.env: dict = {}
        self.block_builder: BlockBuilder | None = None  # set while converting
        # torch symbol name ("s0") -> the tir var to use for it (from_fx: the user's names)
        self.symbols: dict = {}
        # False: main returns its output tuple unbound (from_fx's no_bind_return_tuple)
        self.bind_return_tuple = True

    def unsupported(self, gm) -> dict[str, list[str]]:
        """The operators no converter handles -> the names of the nodes that use them."""
        found: dict[str, list[str]] = {}
        for n in gm.graph.nodes:
            if n.op == "call_function" and n.target is not operator.getitem:
                name = aten_name(n.target)
                if name not in ATEN and name not in self.custom_convert_map:
                    found.setdefault(name, []).append(n.name)
            elif n.op in ("call_module", "call_method"):
                found.setdefault(f"{n.op}:{n.target}", []).append(n.name)
        return found

    def retrieve_args(self, node) -> list:
        """The converted values of ``node``'s positional arguments (for custom converters)."""
        return list(self._value(tuple(node.args)))

    def _value(self, a):
        import torch

        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, list | tuple):
            return type(a)(self._value(x) for x in a)
        if isinstance(a, torch.Tensor):
            return _constant(_numpy(a))
        return a

    def from_exported_program(self, ep) -> IRModule:
        import torch

        gm = ep.graph_module
        missing = self.unsupported(gm)
        if missing:
            listed = ", ".join(f"{k} (x{len(v)})" for k, v in sorted(missing.items()))
            listed += " [at nodes: " + "; ".join(
                f"{k}: {', '.join(v[:3])}{', ...' if len(v) > 3 else ''}"
                for k, v in sorted(missing.items())) + "]"
            raise OpNotImplemented(f"the exported program uses {len(missing)} operator(s) the "
                                   f"Relax importer does not support: {listed}")
        bb = BlockBuilder()
        self.block_builder = bb
        ctx = AtenContext(bb)
        ctx.symbols.update(self.symbols)
        state = dict(ep.state_dict)
        state.update(getattr(ep, "constants", {}) or {})
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        inputs, params, param_values = [], [], []
        for spec, node in zip(ep.graph_signature.input_specs, placeholders, strict=True):
            if spec.kind.name == "USER_INPUT":
                val = node.meta.get("val")
                if not isinstance(val, torch.Tensor):
                    raise TorchImportError(f"user input {node.name!r} is not a tensor "
                                           f"({type(val).__name__}); only tensor inputs are "
                                           "supported")
                shape = [ctx.sym(d) for d in val.shape]
                v = Var(node.name, TensorStructInfo(shape, torch_dtype(val.dtype)))
                inputs.append(v)
                self.env[node] = v
                continue
            if spec.target not in state:
                raise TorchImportError(f"exported program input {spec.target!r} "
                                       f"({spec.kind.name}) has no value in its state dict")
            value = state[spec.target]
            if not isinstance(value, torch.Tensor):
                self.env[node] = value
                continue
            arr = _numpy(value)
            if self.keep_params and spec.kind.name == "PARAMETER" and not np.iscomplexobj(arr):
                v = Var(_var_name(spec.target), TensorStructInfo(list(arr.shape),
                                                                 str(arr.dtype)))
                params.append(v)
                param_values.append(NDArray(arr))
                self.env[node] = v
            else:
                self.env[node] = _constant(arr)
        attrs = {"num_input": len(inputs)}
        if self.keep_params:
            attrs["params"] = param_values
        with bb.function("main", inputs + params, attrs=attrs):
            with bb.dataflow():
                outputs = None
                for n in gm.graph.nodes:
                    if n.op == "call_function":
                        self._convert(ctx, n)
                    elif n.op == "get_attr":
                        obj = gm
                        for part in n.target.split("."):
                            obj = getattr(obj, part)
                        self.env[n] = _constant(_numpy(obj))
                    elif n.op == "output":
                        outputs = self._value(n.args[0])
                flat = list(outputs) if isinstance(outputs, list | tuple) else [outputs]
                n_user = sum(1 for s in ep.graph_signature.output_specs
                             if s.kind.name == "USER_OUTPUT")
                flat = flat[len(flat) - n_user:] if n_user else flat
                if any(isinstance(o, ComplexValue) for o in flat):
                    raise TorchImportError("a complex program output is not supported (Relax "
                                           "has no complex dtype): return torch.view_as_real "
                                           "of it")
                bad = [i for i, o in enumerate(flat) if not isinstance(o, Expr)]
                if bad:
                    raise TorchImportError(f"program outputs {bad} are not tensors")
                if self.unwrap and len(flat) == 1:
                    gv = bb.emit_output(flat[0])
                elif self.bind_return_tuple:
                    gv = bb.emit_output(Tuple(flat))
                else:
                    gv = Tuple([bb.emit_output(o) for o in flat])
            bb.emit_func_output(gv)
        return bb.get()

    def _convert(self, ctx: AtenContext, n) -> None:
        if n.target is operator.getitem:
            seq = self.env[n.args[0]]
            self.env[n] = seq[n.args[1]]
            return
        ctx.node = n
        name = aten_name(n.target)
        if name in self.custom_convert_map:
            out = self.custom_convert_map[name](n, self)
            if not isinstance(out, Expr):
                raise TorchImportError(f"the custom converter of {name} (node {n.name}) "
                                       f"returned {type(out).__name__}, not a Relax expression")
            self.env[n] = out
            return
        args = self._value(schema_args(n.target, n.args, n.kwargs))
        refuse_complex(ctx, ATEN[name], list(args))
        try:
            out = ATEN[name](ctx, list(args))
        except (TorchImportError, NotImplementedError):
            raise
        except Exception as e:  # noqa: BLE001 - name the node in any converter failure
            raise TorchImportError(f"{name} (node {n.name}): cannot convert: "
                                   f"{type(e).__name__}: {e}") from e
        self.env[n] = out
