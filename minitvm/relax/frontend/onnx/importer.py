"""ONNX GraphProto -> Relax ``main``: inputs (symbolic ``tir`` dims for ``dim_param`` axes),
initializers (constants or trailing parameters), every node in order, outputs."""

from __future__ import annotations

import collections
import re

import numpy as np

from ....ir.module import IRModule
from ....ir.prim_expr import PrimExpr
from ....runtime.ndarray import NDArray
from ....tir import Var as TirVar
from ...block_builder import BlockBuilder
from ...expr import Tuple, Var
from ...struct_info import TensorStructInfo
from .context import (
    CONVERTERS,
    Context,
    ONNXImportError,
    OpNotImplemented,
    onnx_dtype,
)

__all__ = ["ONNXGraphImporter", "unsupported_ops", "sanitize_name"]


def sanitize_name(name: str) -> str:
    """A valid identifier for an ONNX value name (what ``sanitize_input_names`` does)."""
    out = re.sub(r"\W", "_", name)
    if not out or out[0].isdigit():
        out = "input_" + out
    return out


def attr_value(attr):
    """A Python value for an AttributeProto (strings decoded, tensors as numpy)."""
    from onnx import helper, numpy_helper

    v = helper.get_attribute_value(attr)
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [s.decode("utf-8") for s in v]
    if attr.type == attr.TENSOR:
        return np.array(numpy_helper.to_array(v))
    return v


def unsupported_ops(graph) -> dict[str, int]:
    """Every op type in the graph (and its subgraphs) without a converter, with counts."""
    counts: collections.Counter = collections.Counter()
    stack = [graph]
    while stack:
        g = stack.pop()
        for node in g.node:
            if node.domain not in ("", "ai.onnx"):
                counts[f"{node.domain}.{node.op_type}"] += 1
            elif node.op_type not in CONVERTERS:
                counts[node.op_type] += 1
            for a in node.attribute:
                if a.type == a.GRAPH:
                    stack.append(a.g)
                elif a.type == a.GRAPHS:
                    stack.extend(a.graphs)
    return dict(counts)


class ONNXGraphImporter:
    """Converts one ONNX graph into a Relax function with a BlockBuilder."""

    def __init__(self, shape_dict: dict | None, dtype_dict, opset: int,
                 keep_params_in_input: bool, sanitize: bool):
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dtype_dict
        self.opset = opset
        self.keep_params = keep_params_in_input
        self.sanitize = sanitize
        self.values: dict[str, object] = {}
        self.sym: dict[str, TirVar] = {}

    def _dim_var(self, name: str) -> TirVar:
        if name not in self.sym:
            self.sym[name] = TirVar(name, "int64")
        return self.sym[name]

    def _input_shape(self, vi) -> list:
        if vi.name in self.shape_dict:
            return [self._dim_var(d) if isinstance(d, str) else
                    (d if isinstance(d, PrimExpr) else int(d)) for d in self.shape_dict[vi.name]]
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            raise ONNXImportError(f"graph input {vi.name!r} has no shape in the model: pass "
                                  f"shape_dict={{'{vi.name}': (...)}} to from_onnx")
        dims = []
        for i, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            else:
                name = d.dim_param or f"{sanitize_name(vi.name)}_dim{i}"
                dims.append(self._dim_var(sanitize_name(name)))
        return dims

    def _input_dtype(self, vi) -> str:
        tt = vi.type.tensor_type
        if isinstance(self.dtype_dict, dict) and vi.name in self.dtype_dict:
            return str(self.dtype_dict[vi.name])
        if tt.elem_type:
            return onnx_dtype(tt.elem_type)
        return self.dtype_dict if isinstance(self.dtype_dict, str) else "float32"

    def from_onnx(self, graph) -> IRModule:
        from onnx import numpy_helper

        missing = unsupported_ops(graph)
        if missing:
            listed = ", ".join(f"{k} (x{v})" for k, v in sorted(missing.items()))
            raise OpNotImplemented(
                f"the ONNX model uses {len(missing)} operator(s) the Relax importer does not "
                f"support: {listed}")
        params, param_values = [], []
        init_names = set()
        for t in graph.initializer:
            try:
                arr = np.array(numpy_helper.to_array(t))
            except Exception as e:  # noqa: BLE001 - protobuf/numpy errors of a malformed tensor
                raise ONNXImportError(f"initializer {t.name!r} cannot be read: {e}") from e
            init_names.add(t.name)
            if self.keep_params:
                name = sanitize_name(t.name) if self.sanitize else t.name
                v = Var(name, TensorStructInfo(list(arr.shape), str(arr.dtype)))
                params.append(v)
                param_values.append(NDArray(arr))
                self.values[t.name] = v
            else:
                self.values[t.name] = arr
        inputs = []
        for vi in graph.input:
            if vi.name in init_names:
                continue
            name = sanitize_name(vi.name) if self.sanitize else vi.name
            v = Var(name, TensorStructInfo(self._input_shape(vi), self._input_dtype(vi)))
            self.values[vi.name] = v
            inputs.append(v)
        attrs = {"num_input": len(inputs)}
        if self.keep_params:
            attrs["params"] = param_values
        bb = BlockBuilder()
        ctx = Context(bb, self.opset)
        with bb.function("main", inputs + params, attrs=attrs):
            with bb.dataflow():
                for node in graph.node:
                    self._convert_node(ctx, node)
                outs = []
                for o in graph.output:
                    if o.name not in self.values:
                        raise ONNXImportError(f"graph output {o.name!r} is produced by no node")
                    outs.append(ctx.expr(self.values[o.name]))
                out = outs[0] if len(outs) == 1 else Tuple(outs)
                gv = bb.emit_output(out)
            bb.emit_func_output(gv)
        return bb.get()

    def _convert_node(self, ctx: Context, node) -> None:
        ctx.node = node
        ins = []
        for name in node.input:
            if name == "":
                ins.append(None)
            elif name not in self.values:
                raise ONNXImportError(f"{ctx.where()}: input {name!r} is not defined before it "
                                      "is used (the graph is not topologically sorted or is "
                                      "malformed)")
            else:
                ins.append(self.values[name])
        attrs = {a.name: attr_value(a) for a in node.attribute}
        try:
            out = CONVERTERS[node.op_type](ctx, ins, attrs)
        except (ONNXImportError, NotImplementedError):
            raise
        except Exception as e:  # noqa: BLE001 - name the node in any converter failure
            raise ONNXImportError(f"{ctx.where()}: cannot convert: {type(e).__name__}: {e}") \
                from e
        if not isinstance(out, list | tuple):
            out = [out]
        used = [o for o in node.output if o]
        if len(out) < len(used):
            raise ONNXImportError(f"{ctx.where()}: produces {len(out)} outputs, the model uses "
                                  f"{len(used)}")
        for name, value in zip(node.output, out):
            if name:
                self.values[name] = value
