"""ONNX GraphProto -> Relay function: inputs, initializers, nodes in order, outputs."""

from __future__ import annotations

import warnings

import numpy as np

from ....frontend_common import onnx_model as _om
from ....frontend_common import onnx_sequence as _seq
from ....frontend_common.onnx_finite import finite_tensors
from ....ir.diagnostics import DiagnosticError
from ....ir.module import IRModule
from ....ir.prim_expr import Any
from ....ir.type import TensorType
from ....runtime.ndarray import NDArray
from ... import expr as _expr
from ...analysis import free_vars
from ...expr import Call, Function, Tuple, TupleWrapper, bind
from ...transform.infer_type import InferType
from ..common import Folder, ImportError_, infer_type, unsupported_error
from .param_values import param_constants, with_param_values
from .registry import CONVERTERS, Context
from .shape_values import SizeOf, evaluate


def _static_shape_value(value):
    """``value`` as a constant when it is shape arithmetic over ``shape_of`` of a dynamic
    tensor whose elements are all static (a Gather of a static axis of a dynamic-batch shape)."""
    if not isinstance(value, Call) or getattr(value.op, "name", None) == "shape_of":
        return value
    elems = evaluate(value)  # (None at once for a tensor operation)
    if elems is None or elems.size > 64 or any(isinstance(v, SizeOf) for v in elems.ravel()):
        return value
    t = infer_type(value)
    if not isinstance(t, TensorType) or not t.is_static() or \
            t.concrete_shape != elems.shape or str(t.dtype)[:3] not in ("int", "uin"):
        return value
    return _expr.const(elems.astype(str(t.dtype)), str(t.dtype))


class GraphProto(_om.GraphImporterBase):
    """Converts one ONNX graph; keeps the name -> Relay expression table while it goes."""

    error = ImportError_
    multi = (TupleWrapper,)
    converters = CONVERTERS
    qdq_as_qnn = False  # (from_onnx's convert_config "qdq_as_qnn")

    def __init__(self, shape: dict | None, dtype, freeze_params: bool, opset: int,
                 const_inputs: dict | None = None):
        self.shape = dict(shape or {})
        self.const_inputs = dict(const_inputs or {})
        self.dtype = dtype
        self.freeze_params = freeze_params
        self.opset = opset
        super().__init__()
        self.params: dict[str, NDArray] = {}
        self.fold = Folder()
        self.dim_symbols: dict[str, Any] = {}  # ONNX dim_param -> its relay.Any()
        self.dim_names: dict[int, str] = {}  # id of that relay.Any() -> the dim_param
        self.param_consts: dict = {}  # (freeze_params=False) parameter Var -> its Constant
        self.size_factors = None  # (a dynamic-shape import: the context's SizeFactors)

    def _input_dtype(self, name: str, proto_dtype: str | None) -> str:
        if isinstance(self.dtype, dict):
            return self.dtype.get(name, proto_dtype or "float32")
        if proto_dtype is not None:
            return proto_dtype
        return self.dtype or "float32"

    def _input_shape(self, vi) -> tuple:
        """A graph input's Relay dims. A dynamic dim (an ONNX dim_param, an unnamed dim, or
        relay.Any() in ``shape=``) is a ``relay.Any()``, one object per dim_param name (ONNX:
        one name is one size in a model), so converters can tell which sizes are the same."""
        given = self.shape.get(vi.name)
        if given is not None and not any(isinstance(d, Any) for d in given):
            return tuple(int(d) for d in given)
        declared = _om.input_dims(vi, ImportError_, "shape") if given is None or \
            vi.type.tensor_type.HasField("shape") else []
        if given is None:
            dynamic = [f"{i} ({d or '?'})" for i, d in enumerate(declared) if isinstance(d, str)]
            if dynamic:
                warnings.warn(f"graph input {vi.name!r} has dynamic dimensions at axes "
                              f"{', '.join(dynamic)}: imported as relay.Any() (compile with "
                              "relay.vm.compile); pass shape= with static sizes for a static "
                              "build", stacklevel=5)
            return tuple(d if isinstance(d, int) else self._symbol(d) for d in declared)
        names = declared if len(declared) == len(given) else [""] * len(given)
        # a relay.Any() given where the model names the axis takes that name's identity
        return tuple((self._symbol(n) if isinstance(n, str) and n else d) if isinstance(d, Any)
                     else int(d) for d, n in zip(given, names, strict=True))

    def _symbol(self, name: str) -> Any:
        """The relay.Any() standing for the dim_param ``name`` (a fresh one when unnamed)."""
        if not name:
            return Any()
        if name not in self.dim_symbols:
            self.dim_symbols[name] = Any()
            self.dim_names[id(self.dim_symbols[name])] = name
        return self.dim_symbols[name]

    def from_onnx(self, graph) -> tuple[IRModule, dict]:
        missing = _om.unsupported_ops(graph, CONVERTERS)
        if missing:
            err = unsupported_error("ONNX", missing)
            raise type(err)(f"{err}{_om.unsupported_nodes(graph, CONVERTERS)}")
        init_names = set()
        for t in graph.initializer:
            arr = _om.tensor_to_numpy(t, ImportError_)
            init_names.add(t.name)
            if self.freeze_params:
                self.values[t.name] = _expr.const(arr, str(arr.dtype))
            else:
                self.values[t.name] = _expr.var(t.name, shape=arr.shape, dtype=str(arr.dtype))
                self.params[t.name] = NDArray(arr)
        inputs = []
        for vi in graph.input:
            if vi.name in init_names:
                continue
            if vi.name in self.const_inputs:
                arr = np.asarray(self.const_inputs[vi.name])
                self.values[vi.name] = _expr.const(arr, str(arr.dtype))
                continue
            kind, code = _seq.graph_input_kind(vi)
            if kind != "tensor":
                self.values[vi.name] = self._container_input(vi, kind, code, inputs)
                continue
            proto = _om.input_elem_dtype(vi, ImportError_)
            v = _expr.var(vi.name, shape=self._input_shape(vi),
                          dtype=self._input_dtype(vi.name, proto))
            self.values[vi.name] = v
            inputs.append(v)
        ctx = Context(self.opset, self.fold, inputs)
        ctx.finite = finite_tensors(graph)
        ctx.qdq_as_qnn = self.qdq_as_qnn
        if self.qdq_as_qnn:  # (a dequantized constant weight stays one for FQ2I's qnn.conv2d)
            self.fold.keep = frozenset({"qnn.dequantize"})
        ctx.dim_names = self.dim_names
        ctx.uses = _om.tensor_reads(graph)
        ctx.param_consts = self.param_consts = param_constants(self.params, self.values)
        if any(not isinstance(infer_type(v), TensorType) or not infer_type(v).is_static()
               for v in inputs):  # (run-time sizes: note what reshapes make of them)
            self.size_factors = ctx.size_factors
        ctx.subgraph = lambda g, bindings: self.convert_subgraph(ctx, g, bindings)
        for node in graph.node:
            self.convert_node(ctx, node)
        outs = [self._output_expr(o) for o in _om.graph_outputs(graph, self.values,
                                                                  ImportError_)]
        body = outs[0] if len(outs) == 1 else Tuple(outs)
        if ctx.narrowed:  # (inputs whose run-time sizes a converter fixed: typed so)
            inputs, body = _narrowed_inputs(inputs, body, ctx.narrowed)
        known = set(inputs)
        params = inputs + [v for v in free_vars(body) if v not in known]
        func = Function(params, body)
        mod = InferType()(IRModule.from_expr(func))
        kept = {v.name_hint for v in params}
        return mod, {k: v for k, v in self.params.items() if k in kept}

    def _container_input(self, vi, kind: str, code, inputs: list):
        """A graph input of sequence or optional type: its value at import, one parameter
        per tensor in it. ``shape`` gives a sequence as a list of element shapes and an
        empty optional as None."""
        name = vi.name
        dtype = self._input_dtype(name, _om.onnx_dtype(code, ImportError_) if code else None)
        if name not in self.shape:
            what = "a list of element shapes" if "sequence" in kind else "the element shape"
            raise ImportError_(f"graph input {name!r} is {kind.replace('_', ' ')}-typed: pass "
                               f"shape={{'{name}': ...}} with {what} (None for an empty "
                               "optional) to from_onnx")
        given = self.shape[name]
        if kind.startswith("optional") and given is None:
            return _seq.OnnxOptional(None)
        if "sequence" in kind:
            items = []
            for i, dims in enumerate(given):
                v = _expr.var(f"{name}_{i}", shape=tuple(int(d) for d in dims), dtype=dtype)
                inputs.append(v)
                items.append(v)
            value = _seq.OnnxSequence(items, dtype)
        else:
            value = _expr.var(name, shape=tuple(int(d) for d in given), dtype=dtype)
            inputs.append(value)
        return _seq.OnnxOptional(value) if kind.startswith("optional") else value

    @staticmethod
    def _output_expr(value):
        """A graph output as a Relay expression: a sequence is a tuple of its tensors, an
        empty optional an empty tuple, a present one its value."""
        items, as_tuple = _seq.output_parts(value)
        return Tuple(items) if as_tuple else items[0]

    def constant(self, arr):
        return _expr.const(arr, str(arr.dtype))

    def convert_node(self, ctx, node) -> None:
        """Convert ``node``, then type its tensor outputs: a converter that built an ill-typed
        expression (a Gemm whose transB was dropped) is named, not the node that reads it."""
        super().convert_node(ctx, node)
        for name in node.output:
            value = self.values.get(name) if name else None
            if isinstance(value, _expr.Expr) and value._checked_type is None:
                try:
                    infer_type(value)
                except DiagnosticError as e:
                    raise ImportError_(f"{ctx.where()}: cannot convert: {type(e).__name__}: "
                                       f"{e}") from e

    def bind(self, value):
        if isinstance(value, _seq.OnnxSequence | _seq.OnnxOptional):
            structure, leaves = _seq.flatten(value)
            return _seq.unflatten(structure, [self.fold(v) for v in leaves])
        if self.param_consts:  # (shape arithmetic over integer initializers kept parameters)
            value = with_param_values(value, self.param_consts, integer_only=True,
                                      shape_arithmetic=True)
        value = _static_shape_value(self.fold(value))
        if self.size_factors is not None:
            self.size_factors.note(value)
        return value


def _narrowed_inputs(inputs: list, body, narrowed: dict) -> tuple[list, object]:
    """``inputs`` with the axes ``narrowed`` fixes ({input: {axis: size}}) static in their
    types, and ``body`` reading the new inputs: a call whose input has another size at such an
    axis fails on entry, naming the input and its expected type."""
    swap = {}
    for v in inputs:
        axes = narrowed.get(v)
        if axes:
            t = infer_type(v)
            shape = [axes.get(k, d) for k, d in enumerate(t.shape)]
            swap[v] = _expr.var(v.name_hint, shape=shape, dtype=t.dtype)
    return [swap.get(v, v) for v in inputs], bind(body, swap)
