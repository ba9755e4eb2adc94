"""ONNX GraphProto -> Relax ``main``: inputs (symbolic ``tir`` dims for ``dim_param`` axes),
initializers (constants or trailing parameters), every node in order, outputs."""

from __future__ import annotations

import re

import numpy as np

from ....frontend_common import onnx_model as _om
from ....frontend_common import onnx_sequence as _seq
from ....frontend_common.onnx_finite import finite_tensors
from ....ir.module import IRModule
from ....ir.prim_expr import PrimExpr
from ....runtime.ndarray import NDArray
from ....tir import Var as TirVar
from ...block_builder import BlockBuilder
from ...expr import BindingBlock, Function, SeqExpr, Tuple, Var, VarBinding
from ...struct_info import TensorStructInfo
from .context import (
    CONVERTERS,
    Context,
    ONNXImportError,
    OpNotImplemented,
)

__all__ = ["ONNXGraphImporter", "unsupported_ops", "sanitize_name"]


def sanitize_name(name: str) -> str:
    """A valid identifier for an ONNX value name (what ``sanitize_input_names`` does)."""
    out = re.sub(r"\W", "_", name)
    if not out or out[0].isdigit():
        out = "input_" + out
    return out


def unsupported_ops(graph) -> dict[str, int]:
    """Every op type in the graph (and its subgraphs) without a converter, with counts."""
    return _om.unsupported_ops(graph, CONVERTERS)


class ONNXGraphImporter(_om.GraphImporterBase):
    """Converts one ONNX graph into a Relax function with a BlockBuilder."""

    error = ONNXImportError
    converters = CONVERTERS

    def __init__(self, shape_dict: dict | None, dtype_dict, opset: int,
                 keep_params_in_input: bool, sanitize: bool, const_inputs: dict | None = None):
        self.shape_dict = dict(shape_dict or {})
        self.const_inputs = dict(const_inputs or {})
        self.dtype_dict = dtype_dict
        self.opset = opset
        self.keep_params = keep_params_in_input
        self.sanitize = sanitize
        super().__init__()
        self.sym: dict[str, TirVar] = {}

    def _dim_var(self, name: str) -> TirVar:
        if name not in self.sym:
            self.sym[name] = TirVar(name, "int64")
        return self.sym[name]

    def _input_shape(self, vi) -> list:
        if vi.name in self.shape_dict:
            return [self._dim_var(d) if isinstance(d, str) else
                    (d if isinstance(d, PrimExpr) else int(d)) for d in self.shape_dict[vi.name]]
        dims = []
        for i, d in enumerate(_om.input_dims(vi, ONNXImportError, "shape_dict")):
            if isinstance(d, int):
                dims.append(d)
            else:
                name = d or f"{sanitize_name(vi.name)}_dim{i}"
                dims.append(self._dim_var(sanitize_name(name)))
        return dims

    def _input_dtype(self, vi) -> str:
        if isinstance(self.dtype_dict, dict) and vi.name in self.dtype_dict:
            return str(self.dtype_dict[vi.name])
        declared = _om.input_elem_dtype(vi, ONNXImportError)
        if declared is not None:
            return declared
        return self.dtype_dict if isinstance(self.dtype_dict, str) else "float32"

    def from_onnx(self, graph) -> IRModule:
        missing = unsupported_ops(graph)
        if missing:
            listed = ", ".join(f"{k} (x{v})" for k, v in sorted(missing.items()))
            raise OpNotImplemented(
                f"the ONNX model uses {len(missing)} operator(s) the Relax importer does not "
                f"support: {listed}{_om.unsupported_nodes(graph, CONVERTERS)}")
        params, param_values, initial = [], [], {}
        init_names = set()
        for t in graph.initializer:
            arr = _om.tensor_to_numpy(t, ONNXImportError)
            init_names.add(t.name)
            if self.keep_params:
                name = sanitize_name(t.name) if self.sanitize else t.name
                v = Var(name, TensorStructInfo(list(arr.shape), str(arr.dtype)))
                params.append(v)
                param_values.append(NDArray(arr))
                initial[id(v)] = arr
                self.values[t.name] = v
            else:
                self.values[t.name] = arr
        inputs, input_names = [], {}
        for vi in graph.input:
            if vi.name in init_names:
                continue
            if vi.name in self.const_inputs:
                self.values[vi.name] = np.asarray(self.const_inputs[vi.name])
                continue
            name = sanitize_name(vi.name) if self.sanitize else vi.name
            kind, code = _seq.graph_input_kind(vi)
            if kind != "tensor":
                self.values[vi.name] = self._container_input(vi, name, kind, code, inputs)
                continue
            v = Var(name, TensorStructInfo(self._input_shape(vi), self._input_dtype(vi)))
            self.values[vi.name] = v
            inputs.append(v)
            input_names[id(v)] = vi.name
        attrs = {"num_input": len(inputs)}
        if self.keep_params:
            attrs["params"] = param_values
        bb = BlockBuilder()
        ctx = Context(bb, self.opset)
        ctx.graph_inputs = input_names
        ctx.param_values = initial
        ctx.uses = _om.tensor_reads(graph)
        ctx.size_vars = {d for v in inputs for d in v.struct_info.shape.values
                         if isinstance(d, TirVar)}
        ctx.finite = finite_tensors(graph)
        ctx.subgraph = lambda g, bindings: self.convert_subgraph(ctx, g, bindings)
        ctx.scope = lambda: self.values  # the ONNX names visible now (run-time If / Loop)
        ctx.root_bb = bb  # where the private functions of run-time If / Loop go
        with bb.function("main", inputs + params, attrs=attrs):
            with bb.dataflow():
                for node in graph.node:
                    self.convert_node(ctx, node)
                outs = [self._output_expr(ctx, v) for v in
                        _om.graph_outputs(graph, self.values, ONNXImportError)]
                out = outs[0] if len(outs) == 1 else Tuple(outs)
                gv = bb.emit_output(out)
            bb.emit_func_output(gv)
        mod = bb.get()
        if ctx.checks:
            _check_first(mod, ctx.checks)
        return mod

    def _container_input(self, vi, name: str, kind: str, code, inputs: list):
        """A graph input of sequence or optional type: its value at import, one parameter
        per tensor in it. ``shape_dict`` gives a sequence as a list of element shapes and an
        empty optional as None."""
        if isinstance(self.dtype_dict, dict) and vi.name in self.dtype_dict:
            dtype = str(self.dtype_dict[vi.name])
        elif code:
            dtype = _om.onnx_dtype(code, ONNXImportError)
        else:
            dtype = self.dtype_dict if isinstance(self.dtype_dict, str) else "float32"
        if vi.name not in self.shape_dict:
            what = "a list of element shapes" if "sequence" in kind else "the element shape"
            raise ONNXImportError(
                f"graph input {vi.name!r} is {kind.replace('_', ' ')}-typed: pass "
                f"shape_dict={{'{vi.name}': ...}} with {what} (None for an empty optional) "
                "to from_onnx")
        given = self.shape_dict[vi.name]
        if kind.startswith("optional") and given is None:
            return _seq.OnnxOptional(None)

        def tensor(var_name, dims):
            v = Var(var_name, TensorStructInfo([self._dim_var(d) if isinstance(d, str) else
                                                int(d) for d in dims], dtype))
            inputs.append(v)
            return v

        if "sequence" in kind:
            value = _seq.OnnxSequence([tensor(f"{name}_{i}", dims)
                                       for i, dims in enumerate(given)], dtype)
        else:
            value = tensor(name, given)
        return _seq.OnnxOptional(value) if kind.startswith("optional") else value

    @staticmethod
    def _output_expr(ctx: Context, value):
        """A graph output as a Relax expression: a sequence is a tuple of its tensors, an
        empty optional an empty tuple, a present one its value."""
        items, as_tuple = _seq.output_parts(value)
        return Tuple([ctx.expr(v) for v in items]) if as_tuple else ctx.expr(items[0])


def _check_first(mod: IRModule, checks: list) -> None:
    """Put the run-time size checks (``R.assert_op`` calls over the inputs' dims) in a
    binding block ahead of ``main``'s dataflow block, so a size ONNX Runtime rejects fails
    before any kernel runs; ``main`` becomes impure."""
    gv = mod.get_global_var("main")
    func = mod[gv]
    block = BindingBlock([VarBinding(Var(f"check{i}", c.struct_info), c)
                          for i, c in enumerate(checks)])
    body = SeqExpr([block, *func.body.blocks], func.body.body)
    mod[gv] = Function(func.params, body, func.ret_struct_info, False, func.attrs)
