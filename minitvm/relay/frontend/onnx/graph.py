"""ONNX GraphProto -> Relay function: inputs, initializers, nodes in order, outputs."""

from __future__ import annotations

import collections

import numpy as np

from ....ir.module import IRModule
from ....runtime.ndarray import NDArray
from ... import expr as _expr
from ...analysis import free_vars
from ...expr import Function, Tuple, TupleWrapper
from ...transform.infer_type import InferType
from ..common import Folder, ImportError_, unsupported_error
from .registry import CONVERTERS, Context, onnx_dtype


def _attr_value(attr):
    """A Python value for an AttributeProto (strings decoded, tensors as numpy)."""
    from onnx import helper, numpy_helper

    v = helper.get_attribute_value(attr)
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [s.decode("utf-8") for s in v]
    if attr.type == attr.TENSOR:
        return numpy_helper.to_array(v)
    return v


def _tensor_to_numpy(t) -> np.ndarray:
    from onnx import numpy_helper

    try:
        return np.array(numpy_helper.to_array(t))
    except Exception as e:  # noqa: BLE001 - protobuf/numpy errors of a malformed tensor
        raise ImportError_(f"initializer {t.name!r} cannot be read: {e}") from e


def _unsupported(graph) -> dict[str, int]:
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


class GraphProto:
    """Converts one ONNX graph; keeps the name -> Relay expression table while it goes."""

    def __init__(self, shape: dict | None, dtype, freeze_params: bool, opset: int,
                 const_inputs: dict | None = None):
        self.shape = dict(shape or {})
        self.const_inputs = dict(const_inputs or {})
        self.dtype = dtype
        self.freeze_params = freeze_params
        self.opset = opset
        self.nodes: dict[str, object] = {}
        self.params: dict[str, NDArray] = {}
        self.fold = Folder()

    def _input_dtype(self, name: str, proto_dtype: str | None) -> str:
        if isinstance(self.dtype, dict):
            return self.dtype.get(name, proto_dtype or "float32")
        if proto_dtype is not None:
            return proto_dtype
        return self.dtype or "float32"

    def _input_shape(self, vi) -> tuple[int, ...]:
        if vi.name in self.shape:
            return tuple(int(d) for d in self.shape[vi.name])
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            raise ImportError_(f"graph input {vi.name!r} has no shape in the model: pass "
                               f"shape={{'{vi.name}': (...)}} to from_onnx")
        dims, symbolic = [], []
        for i, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            else:
                symbolic.append(f"{i} ({d.dim_param or '?'})")
                dims.append(-1)
        if symbolic:
            raise ImportError_(
                f"graph input {vi.name!r} has dynamic dimensions at axes {', '.join(symbolic)}; "
                f"pass shape={{'{vi.name}': {tuple(d if d > 0 else 1 for d in dims)}}} (or the "
                "shape you need) to from_onnx")
        return tuple(dims)

    def from_onnx(self, graph) -> tuple[IRModule, dict]:
        missing = _unsupported(graph)
        if missing:
            raise unsupported_error("ONNX", missing)
        init_names = set()
        for t in graph.initializer:
            arr = _tensor_to_numpy(t)
            init_names.add(t.name)
            if self.freeze_params:
                self.nodes[t.name] = _expr.const(arr, str(arr.dtype))
            else:
                self.nodes[t.name] = _expr.var(t.name, shape=arr.shape, dtype=str(arr.dtype))
                self.params[t.name] = NDArray(arr)
        inputs = []
        for vi in graph.input:
            if vi.name in init_names:
                continue
            if vi.name in self.const_inputs:
                arr = np.asarray(self.const_inputs[vi.name])
                self.nodes[vi.name] = _expr.const(arr, str(arr.dtype))
                continue
            tt = vi.type.tensor_type
            proto = onnx_dtype(tt.elem_type) if tt.elem_type else None
            v = _expr.var(vi.name, shape=self._input_shape(vi),
                          dtype=self._input_dtype(vi.name, proto))
            self.nodes[vi.name] = v
            inputs.append(v)
        ctx = Context(self.opset, self.fold, inputs)
        for node in graph.node:
            self._convert_node(ctx, node)
        outs = []
        for o in graph.output:
            if o.name not in self.nodes:
                raise ImportError_(f"graph output {o.name!r} is produced by no node")
            outs.append(self.nodes[o.name])
        body = outs[0] if len(outs) == 1 else Tuple(outs)
        known = set(inputs)
        params = inputs + [v for v in free_vars(body) if v not in known]
        func = Function(params, body)
        mod = InferType()(IRModule.from_expr(func))
        kept = {v.name_hint for v in params}
        return mod, {k: v for k, v in self.params.items() if k in kept}

    def _convert_node(self, ctx: Context, node) -> None:
        ctx.node = node
        ins = []
        for name in node.input:
            if name == "":
                ins.append(None)
            elif name not in self.nodes:
                raise ImportError_(f"{ctx.where()}: input {name!r} is not defined before it is "
                                   "used (the graph is not topologically sorted or is malformed)")
            else:
                ins.append(self.nodes[name])
        attrs = {a.name: _attr_value(a) for a in node.attribute}
        try:
            out = CONVERTERS[node.op_type](ctx, ins, attrs)
        except (ImportError_, NotImplementedError):
            raise
        except Exception as e:  # noqa: BLE001 - name the node in any converter failure
            raise ImportError_(f"{ctx.where()}: cannot convert: {type(e).__name__}: {e}") from e
        if isinstance(out, TupleWrapper):
            out = list(out)
        if not isinstance(out, list | tuple):
            out = [out]
        outs = [o for o in node.output]
        for name, e in zip(outs, out):
            if name:
                self.nodes[name] = self.fold(e)
        if len(out) < len([o for o in outs if o]):
            raise ImportError_(f"{ctx.where()}: produces {len(out)} outputs, the model uses "
                               f"{len(outs)}")
