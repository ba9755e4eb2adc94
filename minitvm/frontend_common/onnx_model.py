"""ONNX model handling both importers share: loading and validating a model, the default
opset, attribute and initializer decoding, element types, graph-input shapes, the scan for
unsupported operators, and the per-node conversion step.

Dialect-neutral: nothing here builds IR. Errors are raised with the exception class the
calling importer passes (``error=``), so each dialect keeps its own public error type."""

from __future__ import annotations

import collections
import os
from collections.abc import Callable, Iterable

import numpy as np

__all__ = [
    "ConverterTable", "NodeContext", "load_model", "default_opset", "attr_value", "node_attrs",
    "tensor_to_numpy", "ONNX_DTYPES", "onnx_dtype", "unsupported_ops", "input_dims",
    "input_elem_dtype", "convert_node", "graph_outputs", "check_dropout_is_identity",
    "dropout_training_mask",
    "GraphImporterBase",
]

ONNX_DOMAINS = ("", "ai.onnx")


class ConverterTable(dict):
    """op_type -> converter(ctx, inputs, attrs); ``register`` is its decorator."""

    def register(self, *op_types: str) -> Callable:
        """Register one converter under one or more ONNX op types."""

        def deco(fn):
            for name in op_types:
                self[name] = fn
            return fn

        return deco


class NodeContext:
    """The part of a converter context that is the same in every dialect: the opset, the
    node being converted, and errors that name it."""

    error: type[Exception] = ValueError

    def __init__(self, opset: int):
        self.opset = opset
        self.node = None
        # (subgraph, {formal input name: value}) -> its outputs, converted in a scope over
        # the current one; set by the dialect's graph importer (If branches, Loop bodies)
        self.subgraph: Callable | None = None
        # the names of the graph's tensors that cannot be NaN (``onnx_finite.finite_tensors``;
        # the importer fills it): a QuantizeLinear of one needs no NaN select
        self.finite: frozenset = frozenset()

    def where(self) -> str:
        n = self.node
        if n is None:
            return "?"
        return f"{n.op_type} node {n.name!r}" if n.name else n.op_type

    def fail(self, detail: str) -> Exception:
        return self.error(f"{self.where()}: {detail}")

    def num_outputs(self) -> int:
        """How many of the node's outputs the model uses (a trailing '' is unused)."""
        return len([o for o in self.node.output if o]) if self.node is not None else 1

    def output_used(self, i: int) -> bool:
        out = self.node.output
        return i < len(out) and bool(out[i])


def _onnx():
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("from_onnx needs the `onnx` package: pip install 'minitvm[onnx]'") \
            from e
    return onnx


def load_model(model, error: type[Exception]):
    """An ``onnx.ModelProto`` from a ModelProto, a file path or serialized bytes; a clear
    ``error`` for an unreadable file, a ``TypeError`` for anything else."""
    onnx = _onnx()
    if isinstance(model, str | bytes) or hasattr(model, "__fspath__"):
        src = model
        try:
            model = onnx.load_from_string(src) if isinstance(src, bytes) else onnx.load(src)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and friends
            what = f"from {len(src)} bytes" if isinstance(src, bytes) else repr(os.fspath(src))
            raise error(f"cannot read ONNX model {what}: {type(e).__name__}: {e}") from e
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"from_onnx expects an onnx.ModelProto or a file path, got "
                        f"{type(model).__name__}")
    if not model.HasField("graph"):
        raise error("the ONNX model has no graph (empty or malformed file)")
    return model


def default_opset(model, opset: int | None = None) -> int:
    """The default-domain opset to convert with: ``opset`` when given, else the model's."""
    if opset is not None:
        return int(opset)
    return int(max((o.version for o in model.opset_import if o.domain in ONNX_DOMAINS),
                   default=1))


def attr_value(attr):
    """A Python value for an AttributeProto (strings decoded, tensors as numpy arrays)."""
    from onnx import helper, numpy_helper

    v = helper.get_attribute_value(attr)
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [s.decode("utf-8") for s in v]
    if attr.type == attr.TENSOR:
        return np.array(numpy_helper.to_array(v))
    return v


class NodeAttrs(dict):
    """A node's attributes; reading a missing one with ``attrs[name]`` is a clear error (a
    converter reads a required attribute so), not a bare KeyError."""

    def __missing__(self, key):
        have = ", ".join(sorted(self)) or "none"
        raise ValueError(f"the node has no attribute {key!r}, which this opset requires "
                         f"(its attributes: {have})")


def node_attrs(node) -> dict:
    """A node's attributes by name, decoded (``NodeAttrs``)."""
    return NodeAttrs((a.name, attr_value(a)) for a in node.attribute)


def tensor_to_numpy(t, error: type[Exception]) -> np.ndarray:
    """The value of a TensorProto (an initializer); ``error`` names a malformed one."""
    from onnx import numpy_helper

    try:
        return np.array(numpy_helper.to_array(t))
    except Exception as e:  # noqa: BLE001 - protobuf/numpy errors of a malformed tensor
        raise error(f"initializer {t.name!r} cannot be read: {e}") from e


ONNX_DTYPES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
}


def onnx_dtype(code: int, error: type[Exception] = ValueError) -> str:
    """The dtype name of an ONNX TensorProto element type."""
    if code not in ONNX_DTYPES:
        raise error(f"ONNX element type {code} is not supported (supported: "
                    f"{', '.join(sorted(set(ONNX_DTYPES.values())))})")
    return ONNX_DTYPES[code]


def op_key(node) -> str:
    """A node's key in a converter table: its op type, prefixed ``domain.`` outside ONNX's
    own domains (e.g. ``com.microsoft.QLinearAdd``)."""
    return node.op_type if node.domain in ONNX_DOMAINS else f"{node.domain}.{node.op_type}"


def tensor_reads(graph) -> dict[str, int]:
    """ONNX tensor name -> how many node inputs (in the graph and, at any depth, the subgraphs
    of its If / Loop / Scan nodes, which may read outer names) and graph outputs name it."""
    counts: dict[str, int] = {}
    for o in graph.output:
        counts[o.name] = counts.get(o.name, 0) + 1
    stack = [graph]
    while stack:  # (an explicit stack: nesting depth is the model's)
        g = stack.pop()
        for node in g.node:
            for name in node.input:
                if name:
                    counts[name] = counts.get(name, 0) + 1
            for a in node.attribute:
                stack.extend([a.g] if a.HasField("g") else [])
                stack.extend(a.graphs)
    return counts


def unsupported_ops(graph, supported: Iterable[str]) -> dict[str, int]:
    """Every op type in the graph and its subgraphs without a converter, with counts
    (other domains as ``domain.op``). An explicit stack: no recursion per nesting level."""
    supported = set(supported)
    counts: collections.Counter = collections.Counter()
    stack = [graph]
    while stack:
        g = stack.pop()
        for node in g.node:
            if op_key(node) not in supported:
                counts[op_key(node)] += 1
            for a in node.attribute:
                if a.type == a.GRAPH:
                    stack.append(a.g)
                elif a.type == a.GRAPHS:
                    stack.extend(a.graphs)
    return dict(counts)


def input_dims(vi, error: type[Exception], option: str = "shape") -> list:
    """The dims of a graph input's ValueInfo: an int where static, else the ``dim_param``
    name ('' when the dim is unnamed). ``option`` names the importer argument that can
    supply a missing shape, for the error."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        raise error(f"graph input {vi.name!r} has no shape in the model: pass "
                    f"{option}={{'{vi.name}': (...)}} to from_onnx")
    return [int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else d.dim_param
            for d in tt.shape.dim]


def input_elem_dtype(vi, error: type[Exception]) -> str | None:
    """The element dtype a graph input declares, or None when it declares none."""
    tt = vi.type.tensor_type
    if not tt.elem_type:
        return None
    try:
        return onnx_dtype(tt.elem_type, ValueError)
    except ValueError as e:
        raise error(f"graph input {vi.name!r}: {e}") from None


def axis_attr(axis, ndim: int, what: str = "axis") -> int:
    """An ONNX axis in ``[-ndim, ndim)`` made non-negative; a ValueError for one out of range
    (``axis % ndim`` would silently pick another axis)."""
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what} {axis} is out of range for a rank-{ndim} input (ONNX allows "
                         f"[{-ndim}, {ndim - 1}])")
    return axis % ndim


def axes_attr(axes, ndim: int, what: str = "axes") -> list[int]:
    """ONNX axes, each in ``[-ndim, ndim)``, made non-negative (``axis_attr`` for each)."""
    return [axis_attr(a, ndim, what) for a in axes]


def flag_attr(attrs: dict, name: str, default: int) -> bool:
    """A 0/1 attribute (``keepdims``...) as a bool; a ValueError for another value (peers
    disagree on what 5 means: ONNX Runtime reads it as 0, ``bool`` as 1)."""
    value = attrs.get(name, default)
    if isinstance(value, bool) or value not in (0, 1):
        raise ValueError(f"attribute {name!r} must be 0 or 1, got {value!r}")
    return bool(value)


def unsupported_nodes(graph, supported: Iterable[str]) -> str:
    """Where each unsupported op type first occurs, for the error: ``" (first at node 'n1'
    for Foo, node #3 for '')"`` (a node without a name by its index in its graph)."""
    supported, first = set(supported), {}
    stack = [graph]
    while stack:
        g = stack.pop()
        for i, node in enumerate(g.node):
            key = op_key(node)
            if key not in supported and key not in first:
                first[key] = f"node {node.name!r}" if node.name else f"node #{i}"
            for a in node.attribute:
                stack.extend([a.g] if a.type == a.GRAPH else list(a.graphs))
    if not first:
        return ""
    return " (first at " + ", ".join(f"{where} for {key!r}" for key, where in
                                     sorted(first.items())) + ")"


def convert_node(node, values: dict, converters: dict, ctx: NodeContext,
                 error: type[Exception], multi: tuple[type, ...] = ()) -> list:
    """Run one node's converter: look its inputs up in ``values`` (None for an omitted
    optional input), decode its attributes, name the node in any converter failure, and check
    it produced as many outputs as the model uses. Returns the converter's outputs as a list;
    the caller binds them (it may post-process each, e.g. fold constants). ``multi`` names
    the dialect's multi-output wrapper types, unpacked like a list."""
    ctx.node = node
    local = values.maps[0] if isinstance(values, collections.ChainMap) else values
    for name in node.output:
        if name and name in local:  # (ONNX names each value once: a second producer would
            raise error(f"{ctx.where()}: output {name!r} is already defined by an earlier "
                        "node, graph input or initializer (ONNX values are named once)")
    ins = []
    for name in node.input:
        if name == "":
            ins.append(None)
        elif name not in values:
            raise error(f"{ctx.where()}: input {name!r} is not defined before it is used (the "
                        "graph is not topologically sorted or is malformed)")
        else:
            ins.append(values[name])
    from .onnx_sequence import check_tensor_inputs

    check_tensor_inputs(ctx, ins)
    try:
        out = converters[op_key(node)](ctx, ins, node_attrs(node))
    except (error, NotImplementedError):
        raise
    except Exception as e:  # noqa: BLE001 - name the node in any converter failure
        raise error(f"{ctx.where()}: cannot convert: {type(e).__name__}: {e}") from e
    out = list(out) if isinstance(out, (list, tuple, *multi)) else [out]
    used = [o for o in node.output if o]
    if len(out) < len(used):
        raise error(f"{ctx.where()}: produces {len(out)} outputs, the model uses {len(used)}")
    return out


def graph_outputs(graph, values: dict, error: type[Exception]) -> list:
    """The values of the graph's outputs, in order; a clear error for a dangling one."""
    outs = []
    for o in graph.output:
        if o.name not in values:
            raise error(f"graph output {o.name!r} is produced by no node")
        outs.append(values[o.name])
    return outs


def check_dropout_is_identity(ctx: NodeContext, ins: list, attrs: dict,
                              value: Callable) -> None:
    """Dropout converts to the identity (and an all-true mask) in inference mode, or in
    training mode with ratio 0; training with a non-zero ratio is random and rejected.
    ``value(input, what)`` is the dialect's "this input must be known at import"."""
    if dropout_training_mask(ctx, ins, attrs, value, None, seeded=False) is not None:
        raise AssertionError("unreachable: an unseeded training-mode Dropout is rejected")


def dropout_training_mask(ctx: NodeContext, ins: list, attrs: dict, value: Callable,
                          shape, seeded: bool = True) -> tuple[np.ndarray, float] | None:
    """None when Dropout is the identity (inference mode, or ratio 0); else, for a
    training-mode Dropout with a ``seed`` attribute, (keep mask, scale): the mask is drawn
    once, at import, from ``numpy.random.RandomState(seed)`` (the generator the ONNX reference
    uses), so every run of the compiled model applies the same mask. Training mode without a
    seed is random per run and rejected."""
    training = bool(ctx.opset < 7 and attrs.get("is_test", 1) == 0)
    if len(ins) > 2 and ins[2] is not None:
        training = bool(np.asarray(value(ins[2], "Dropout's training_mode")).reshape(-1)[0])
    if not training:
        return None
    ratio = float(attrs.get("ratio", 0.5))
    if len(ins) > 1 and ins[1] is not None:
        ratio = float(np.asarray(value(ins[1], "Dropout's ratio")).reshape(-1)[0])
    if ratio == 0.0:
        return None
    if not seeded or "seed" not in attrs:
        raise ctx.fail(f"training-mode Dropout with ratio {ratio:g} is random (it has no seed "
                       "attribute); only inference mode, ratio 0 or a fixed seed is supported")
    if not 0.0 <= ratio < 1.0:
        raise ctx.fail(f"the ratio must be in [0, 1), got {ratio:g}")
    keep = np.random.RandomState(int(attrs["seed"])).uniform(0.0, 1.0, tuple(shape)) >= ratio
    return keep, 1.0 / (1.0 - ratio)


class GraphImporterBase:
    """The node loop both graph importers share: ``values`` maps ONNX names to the dialect's
    values; nodes convert in order; subgraphs (If branches, Loop bodies) convert in a scope
    layered over the current one. A dialect sets ``error`` (and ``multi``, see
    ``convert_node``) and overrides ``constant`` and, if it post-processes outputs, ``bind``."""

    error: type[Exception] = ValueError
    multi: tuple[type, ...] = ()
    converters: dict = {}

    def __init__(self):
        self.values: dict = {}

    def constant(self, arr: np.ndarray):
        """The value of a subgraph initializer."""
        return arr

    def bind(self, value):
        """The value stored for a node output."""
        return value

    def convert_node(self, ctx: NodeContext, node) -> None:
        out = convert_node(node, self.values, self.converters, ctx, self.error, self.multi)
        for name, value in zip(node.output, out):
            if name:
                self.values[name] = self.bind(value)

    def convert_subgraph(self, ctx: NodeContext, graph, bindings: dict) -> list:
        """Convert a subgraph: ``bindings`` gives its formal inputs, outer names stay visible,
        what it defines is dropped afterwards. Returns its outputs in order."""
        outer, node = self.values, ctx.node
        self.values = collections.ChainMap(dict(bindings), outer)
        try:
            for t in graph.initializer:
                self.values[t.name] = self.constant(tensor_to_numpy(t, self.error))
            for n in graph.node:
                self.convert_node(ctx, n)
            return graph_outputs(graph, self.values, self.error)
        finally:
            self.values, ctx.node = outer, node
