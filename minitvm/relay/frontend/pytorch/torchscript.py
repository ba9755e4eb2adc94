"""TorchScript graph -> Relay: ``relay.frontend.from_pytorch(scripted_or_traced, input_infos)``.

The module is frozen (parameters become constants) and inlined; then the graph's nodes are
converted in order with the ATen table. Control flow (prim::If / prim::Loop) is not supported.
"""

from __future__ import annotations

import collections
import re

import numpy as np

from ....frontend_common.torch_arrays import tensor_to_numpy
from ....ir.module import IRModule
from ... import expr as _expr
from ... import op as _op
from ...analysis import free_vars
from ...transform.infer_type import InferType
from ..common import ImportError_, unsupported_error
from .aten import ATEN, AtenContext, DType, torch_dtype
from .aten_fft import ComplexValue, array_constant, refuse_complex
from .aten_views import written_into

_PRIM = {"prim::Constant", "prim::ListConstruct", "prim::TupleConstruct", "prim::ListUnpack",
         "prim::TupleUnpack", "prim::NumToTensor", "prim::dtype", "prim::device",
         "prim::TupleIndex", "aten::__getitem__", "prim::min", "prim::max", "aten::len",
         "prim::unchecked_cast", "aten::floordiv", "aten::neg", "prim::Uninitialized",
         "prim::DictConstruct"}


def _numpy(t) -> np.ndarray:
    return tensor_to_numpy(t)  # bfloat16 widened to float32 (frontend_common.torch_arrays)


def _scalar_type_args(node) -> set[int]:
    """Positions of ScalarType arguments in an aten node's schema."""
    import torch

    try:
        text = node.schema()
        if text == "(no schema)":
            return set()
        names = [a.name for a in torch._C.parse_schema(text).arguments]
    except Exception:  # noqa: BLE001 - no schema: nothing is a dtype
        return set()
    dtype_names = set(re.findall(r"ScalarType\??\s+(\w+)", text))
    return {i for i, n in enumerate(names) if n in dtype_names}


def _graph_of(module, freeze: bool = True):
    """(the inlined graph, the module its ``self`` input stands for, or None for a function).
    Freezing folds the parameters into constants; what it leaves (an attribute read in a way
    its alias analysis cannot prove unmutated, e.g. a GRU's weights in a traced beam-search
    loop) stays ``prim::GetAttr`` off ``self``, read from the module at conversion. Without
    ``freeze`` every parameter is read so (freezing would also fold a weight's fake
    quantization into float values, which ``fake_quantize_as_qnn`` keeps as qnn ops)."""
    import torch

    if isinstance(module, torch.jit.ScriptFunction):
        graph = module.graph.copy()
        owner = None
    elif isinstance(module, torch.jit.ScriptModule):
        frozen = module if not module.training else module.eval()
        try:
            frozen = torch.jit.freeze(frozen) if freeze else frozen
        except Exception:  # noqa: BLE001 - freezing fails on some modules; keep attributes
            pass
        graph = frozen.graph.copy()
        owner = frozen
    else:
        raise TypeError(f"from_pytorch expects a TorchScript module (torch.jit.trace or "
                        f"torch.jit.script), got {type(module).__name__}; trace it first: "
                        "torch.jit.trace(model.eval(), example_inputs)")
    torch._C._jit_pass_inline(graph)
    return graph, owner


def _fake_quantizes(module) -> bool:
    """Does the module fake-quantize a tensor (a QAT model)? Then it is not frozen: freezing
    folds a weight's fake quantization into float values, where the importer notes the 8-bit
    integers for the conv that reads them (``aten_fake_quant_conv``)."""
    graph = getattr(module, "inlined_graph", None)
    return graph is not None and any(n.kind().startswith("aten::fake_quantize_per_")
                                     for n in graph.nodes())


def _table_name(kind: str) -> str:
    """A node kind's key in the converter table: ATen ops by their bare name, other
    namespaces' ops (``torchvision::roi_align``) by their full one."""
    return kind[6:] if kind.startswith("aten::") else kind


def _check_supported(graph, table, has_self: bool) -> None:
    counts: collections.Counter = collections.Counter()
    nodes: dict[str, list[str]] = {}
    for node in graph.nodes():
        kind = node.kind()
        if kind in _PRIM or (has_self and kind == "prim::GetAttr"):
            continue
        if not kind.startswith("prim::") and _table_name(kind) in table:
            continue
        counts[kind] += 1
        if node.outputsSize():  # (a node is known by its first output's name)
            nodes.setdefault(kind, []).append(f"%{node.outputsAt(0).debugName()}")
    if counts:
        raise unsupported_error("PyTorch (TorchScript)", dict(counts), nodes)


def from_pytorch(script_module, input_infos, custom_convert_map=None, default_dtype="float32",
                 use_parser_friendly_name=False, keep_quantized_weight=False,
                 export_renamed_c_graph_path=None, fake_quantize_as_qnn: bool = False):
    """Convert a TorchScript module (traced or scripted) into a Relay module.

    Parameters
    ----------
    script_module : torch.jit.ScriptModule or torch.jit.ScriptFunction
    input_infos : list of (name, shape) or (name, (shape, dtype))
        One entry per graph input, in order.
    custom_convert_map : dict of str to callable, optional
        Extra converters by ATen name (without the ``aten::`` prefix), called as
        ``fn(ctx, args)``.
    fake_quantize_as_qnn : bool
        (minitvm) Import ``torch.fake_quantize_per_tensor_affine`` / ``..._per_channel_affine``
        over an 8-bit range as ``qnn.quantize`` -> ``qnn.dequantize`` pairs, for
        ``relay.transform.FakeQuantizationToInteger`` (the integer path of a QAT model;
        numerics: ``aten_fake_quant``). By default they are float arithmetic equal to eager,
        and a conv2d / linear of an 8-bit fake-quantized input and a constant fake-quantized
        weight is the integer op of the 8-bit values, scaled after (``aten_fake_quant_conv``).

    Returns
    -------
    mod : tvm.IRModule
    params : dict of str to tvm.nd.NDArray (empty: parameters are embedded as constants)
    """
    graph, owner = _graph_of(script_module, freeze=not fake_quantize_as_qnn and
                             not _fake_quantizes(script_module))
    table = dict(ATEN)
    table.update({k.replace("aten::", ""): v for k, v in (custom_convert_map or {}).items()})
    _check_supported(graph, table, owner is not None)
    inputs = list(graph.inputs())[0 if owner is None else 1:]
    infos = list(input_infos)
    if len(infos) != len(inputs):
        raise ImportError_(f"the TorchScript graph takes {len(inputs)} inputs, input_infos "
                           f"describes {len(infos)}")
    env: dict = {} if owner is None else {next(graph.inputs()): owner}
    params = []
    for k, (value, info) in enumerate(zip(inputs, infos)):
        v = _input_var(k, info, default_dtype)
        env[value] = v
        params.append(v)
    ctx = AtenContext()
    if fake_quantize_as_qnn:  # (a dequantized constant weight stays one for qnn.conv2d)
        ctx.fake_quantize_as_qnn = True
        ctx.fold.keep = frozenset({"qnn.dequantize"})
    views = _Views(graph, traced_views(script_module))
    for i, node in enumerate(graph.nodes()):
        _convert(ctx, node, env, table)
        _write_back(ctx, node, env, views)
        views.prune(i)
    outs = [env[o] for o in graph.outputs()]
    if any(isinstance(o, ComplexValue) for o in outs):
        raise ImportError_("a complex graph output is not supported (Relay has no complex "
                           "dtype): return torch.view_as_real of it")
    body = _to_expr(outs[0] if len(outs) == 1 else tuple(outs))
    known = set(params)
    func = _expr.Function(params + [v for v in free_vars(body) if v not in known], body)
    return InferType()(IRModule.from_expr(func)), {}


def _input_var(k: int, info, default_dtype: str) -> _expr.Var:
    """The Relay input ``input_infos[k]`` describes: ``(name, shape)`` or ``(name, (shape,
    dtype))``; a malformed entry is refused naming it."""
    where = f"input_infos[{k}]"
    if not isinstance(info, tuple | list) or len(info) != 2:
        raise TypeError(f"{where} = {info!r}: expected a (name, shape) or (name, (shape, "
                        "dtype)) pair")
    name, spec = info
    if not isinstance(name, str):
        raise TypeError(f"{where}: the input name {name!r} is not a string")
    where = f"{where} ({name!r})"
    if isinstance(spec, tuple | list) and len(spec) == 2 and isinstance(spec[1], str):
        shape, dtype = spec
    else:
        shape, dtype = spec, default_dtype
    if not isinstance(shape, tuple | list) or not all(
            isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0
            for d in shape):
        raise ValueError(f"{where}: shape {shape!r} is not a sequence of non-negative ints")
    try:
        return _expr.var(name, shape=tuple(int(d) for d in shape), dtype=torch_dtype(dtype))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: dtype {dtype!r}: {e}") from e


def _mutates(name: str) -> bool:
    """Whether ATen op ``name`` writes into its first argument (``add_``, ``index_put_``,
    ``__iand__``), not a dunder like ``__and__``."""
    return (name.endswith("_") and not name.endswith("__")) or (
        name.startswith("__i") and name.endswith("__"))


# ops whose result shares its input's storage with the same elements in another shape or order
# (a write into one is a write into the other; an ``expand``ed view is read, torch refuses to
# write into one that repeats an element)
_SHAPE_VIEWS = frozenset({"view", "unsqueeze", "squeeze", "unflatten", "permute", "transpose",
                          "t", "mT", "alias", "view_as", "expand", "expand_as", "detach",
                          "movedim", "moveaxis", "swapaxes", "swapdims"})
# ops that return such a view when their input's strides allow it and a copy otherwise
_MAYBE_VIEWS = frozenset({"reshape", "flatten", "reshape_as", "contiguous"})


def _strides_allow_view(node) -> bool:
    """Whether ``reshape`` / ``flatten`` / ``contiguous`` node returns a view of its input:
    the input strides its value type recorded in the trace allow the output shape without a
    copy (torch's rule, asked of an empty tensor of those strides). False without strides."""
    import torch

    tin, tout = node.inputsAt(0).type(), node.output().type()
    if not isinstance(tin, torch._C.TensorType) or not isinstance(tout, torch._C.TensorType):
        return False
    sizes, strides, out = tin.sizes(), tin.strides(), tout.sizes()
    if sizes is None or strides is None or out is None or None in sizes or None in strides:
        return False
    probe = torch.empty_strided(sizes, strides, dtype=torch.uint8)
    if node.kind() == "aten::contiguous":
        return probe.is_contiguous()
    try:
        probe.view(out)
    except RuntimeError:
        return False
    return True


def traced_views(module) -> dict:
    """(kind, source range) -> whether every ``reshape`` / ``flatten`` / ``contiguous`` node of
    ``module``'s traced graph there returned a view: freezing erases the recorded strides, so
    they are read before, and a node of the frozen graph is a view only where all agree."""
    graph = getattr(module, "inlined_graph", None)
    found: dict = {}
    for node in graph.nodes() if graph is not None else ():
        if node.kind()[6:] in _MAYBE_VIEWS and node.kind().startswith("aten::"):
            key = (node.kind(), str(node.sourceRange()))
            found[key] = found.get(key, True) and _strides_allow_view(node)
    return found


class _Views(dict):
    """view value -> (its source value, how it views it), for ``_write_back``; entries no later
    node reads (neither the view nor a view of it) are dropped after each node, so a write
    refreshes only live views and a model of many in-place ops imports in linear time."""

    def __init__(self, graph, traced: dict | None = None) -> None:
        super().__init__()
        self.traced = traced or {}  # ``traced_views``: which maybe-view nodes are views
        self.last = {}  # value -> index of the last top-level node reading it (nested blocks too)
        for i, node in enumerate(graph.nodes()):
            stack = [node]
            while stack:
                n = stack.pop()
                for v in n.inputs():
                    self.last[v] = i
                for b in n.blocks():
                    stack.extend(b.nodes())
                    for v in b.outputs():
                        self.last[v] = i
        for v in graph.outputs():
            self.last[v] = float("inf")
        self.live = {}  # entry -> the last index it or a view of it is read at

    def add(self, view, source, spec) -> None:
        self[view] = (source, spec)
        until = self.live[view] = self.last.get(view, -1)
        while source in self and self.live[source] < until:  # (its sources stay while it does)
            self.live[source] = until
            source = self[source][0]

    def prune(self, index: int) -> None:
        for view in [v for v, until in self.live.items() if until <= index]:
            del self[view], self.live[view]


def _write_back(ctx, node, env, views) -> None:
    """In-place semantics the graph leaves implicit. An op that writes into its first
    argument rebinds that value to its result (the graph may read the argument later, as
    ``return kc`` after ``kc.index_copy_(...)`` does). A ``slice`` or ``select`` is a view of its
    source, and so are the shape views (``view``, ``permute``, ``transpose``, ``unsqueeze``,
    ``expand``, and ``reshape`` / ``flatten`` where the traced strides let them view, ...):
    a write into one (``x[:, 1:3] = v`` traces to a slice and ``copy_``; ``kc[:, :, pos] = v``
    to full-range slices and ``index_put_``; ``x.permute(1, 0).relu_()``) writes the source too,
    up the chain of views, and every other view of that storage read later sees the write."""
    kind = node.kind()
    if not kind.startswith("aten::"):
        return
    name = kind[6:]
    ins = list(node.inputs())
    if name in ("slice", "select") and len(ins) in (3, 5):
        spec = _view_spec(ctx, name, [env.get(v) for v in ins])
        if spec is not None:
            views.add(node.output(), ins[0], ("index", spec))
        return
    if (name in _SHAPE_VIEWS or name in _MAYBE_VIEWS and views.traced.get(
            (kind, str(node.sourceRange())), False)) and \
            node.outputsSize() == 1 and isinstance(env.get(ins[0]), _expr.Expr) and \
            isinstance(env.get(node.output()), _expr.Expr):
        _add_shape_view(ctx, env, views, node.output(), ins[0], name,
                        [env.get(v) for v in ins[1:]])
        return
    if not _mutates(name) or not ins or node.outputsSize() != 1:
        return
    out = env.get(node.output())
    if not isinstance(out, _expr.Expr) or not isinstance(env.get(ins[0]), _expr.Expr):
        return
    target = ins[0]
    if ctx.dtype(out) != ctx.dtype(env[target]):  # (an in-place result keeps its target's dtype)
        out = env[node.output()] = _op.cast(out, ctx.dtype(env[target]))
    env[target] = out
    # (an in-place op returns self: the same view of the same source as its target, or an alias)
    views.add(node.output(), *views.get(target, (target, ("shape", "alias", []))))
    written = {target, node.output()}
    while target in views:
        source, spec = views[target]
        out = _into_source(ctx, env[source], out, spec)
        env[source] = out
        target = source
        written.add(target)
    for view, (source, spec) in views.items():  # (in creation order: sources first)
        if view not in written and _root(views, view) is target:
            env[view] = _from_source(ctx, env[source], spec)


def _root(views, value):
    while value in views:
        value = views[value][0]
    return value


# shape views that keep the elements in order (a write back is a reshape); identities among them
_RESHAPES = frozenset({"view", "reshape", "flatten", "unsqueeze", "squeeze", "unflatten",
                       "view_as", "reshape_as", "contiguous", "detach", "alias"})
_IDENTITIES = frozenset({"contiguous", "detach", "alias"})


def _order(name: str, args, rank: int) -> list[int] | None:
    """The axis order of a permuting shape view (its axis k is its source's ``order[k]``), or
    None for a view that does not permute."""
    axes = list(range(rank))
    if name == "permute":
        return [int(d) % rank for d in args[0]]
    if name in ("movedim", "moveaxis"):
        src, dst = ([int(d) % rank for d in (a if isinstance(a, list | tuple) else [a])]
                    for a in args[:2])
        order = [d for d in axes if d not in src]
        for to, frm in sorted(zip(dst, src, strict=True)):
            order.insert(to, frm)
        return order
    if name in ("transpose", "swapaxes", "swapdims") and rank or \
            name in ("t", "mT") and rank >= 2:
        d0, d1 = (int(args[0]) % rank, int(args[1]) % rank) if name not in ("t", "mT") else \
            (rank - 2, rank - 1)
        axes[d0], axes[d1] = axes[d1], axes[d0]
        return axes
    return None


def _add_shape_view(ctx, env, views, out, source, name: str, args) -> None:
    """Record ``out``, the shape view ``name`` of ``source``; a view of a view of the same kind
    (both reshapes, both permutations, or either an identity) is recorded as one view of the
    outer source, so a chain of them stays one entry deep (the table linear in the program)."""
    spec = ("shape", name, args)
    if source in views and views[source][1][0] == "shape":
        outer, (_, inner, inner_args) = views[source]
        rank = len(ctx.shape(env[outer]))
        if name in _IDENTITIES:
            source, spec = views[source]
        elif inner in _IDENTITIES:
            source = outer
        elif name in _RESHAPES and inner in _RESHAPES:
            source, spec = outer, ("shape", "reshape", [[int(d) for d in ctx.shape(env[out])]])
        else:
            o1, o2 = _order(inner, inner_args, rank), _order(name, args, rank)
            if o1 is not None and o2 is not None:
                source, spec = outer, ("shape", "permute", [[o1[i] for i in o2]])
    views.add(out, source, spec)


def _into_source(ctx, source, view, spec):
    """``source`` after a write of ``view`` into the view ``spec`` of it."""
    if spec[0] == "index":
        return written_into(ctx, source, view, *spec[1])
    _, name, args = spec
    if name in _IDENTITIES:
        return view
    order = _order(name, args, len(ctx.shape(source)))
    if order is not None:
        return _op.transpose(view, [int(i) for i in np.argsort(order)])
    return _op.reshape(view, [int(d) for d in ctx.shape(source)])


def _from_source(ctx, source, spec):
    """The view ``spec`` of ``source`` (again, after a write into its storage)."""
    if spec[0] == "index":
        axis, positions, dropped = spec[1]
        out = _op.take(source, _expr.const(np.asarray(positions, "int64"), "int64"), axis=axis)
        return _op.squeeze(out, [axis]) if dropped else out
    _, name, args = spec
    if name in _IDENTITIES:
        return source
    ctx.op_name = name
    return ATEN[name](ctx, [source, *args])


def _view_spec(ctx, name, args):
    """(axis, positions of the source along it, whether the axis is dropped) of a static
    ``slice(x, dim, start, end, step)`` or ``select(x, dim, index)``; None if not static."""
    x, dim = args[0], args[1]
    if not isinstance(x, _expr.Expr) or not isinstance(dim, int):
        return None
    shape = ctx.shape(x)
    axis = dim % len(shape)
    size = int(shape[axis])
    if name == "select":
        if not isinstance(args[2], int):
            return None
        return axis, np.array([args[2] % size]), True
    start, end, step = args[2:5]
    if not all(v is None or isinstance(v, int) for v in (start, end, step)):
        return None
    return axis, np.arange(size)[slice(start, end, step)], False


def _to_expr(value):
    if isinstance(value, tuple | list):
        return _expr.Tuple([_to_expr(v) for v in value])
    if isinstance(value, _expr.Expr):
        return value
    raise ImportError_(f"the model returns a non-tensor value {value!r}")


def _constant(v):
    """A TorchScript constant (or attribute) as the importer holds it: a tensor as a Relay
    constant (a complex one as its two parts), a list of tensors as a list of them."""
    if hasattr(v, "detach"):
        return array_constant(_numpy(v))  # (a frozen complex weight: its two parts)
    if isinstance(v, list | tuple) and any(hasattr(t, "detach") for t in v):
        return [_expr.const(_numpy(t), str(_numpy(t).dtype)) if hasattr(t, "detach") else t
                for t in v]  # a frozen Tensor[] constant (an RNN's weights)
    return v


def _convert(ctx, node, env, table) -> None:
    kind = node.kind()
    outs = list(node.outputs())
    ins = [env.get(i) for i in node.inputs()]
    if kind == "prim::Constant":
        v = outs[0].toIValue() if outs[0].type().kind() != "NoneType" else None
        env[outs[0]] = _constant(v)
        return
    if kind == "prim::GetAttr":  # what freezing left: a submodule, or a tensor to embed
        env[outs[0]] = _constant(getattr(ins[0], node.s("name")))
        return
    if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
        env[outs[0]] = list(ins) if kind == "prim::ListConstruct" else tuple(ins)
        return
    if kind == "prim::DictConstruct":  # a dict output: its values, in insertion order
        env[outs[0]] = tuple(ins[1::2])
        return
    if kind in ("prim::ListUnpack", "prim::TupleUnpack"):
        seq = ins[0]
        if isinstance(seq, _expr.Expr):
            seq = [_expr.TupleGetItem(seq, i) for i in range(len(outs))]
        for o, v in zip(outs, seq):
            env[o] = v
        return
    if kind in ("prim::TupleIndex", "aten::__getitem__"):
        env[outs[0]] = ins[0][ins[1]]
        return
    if kind in ("prim::NumToTensor", "prim::unchecked_cast"):
        env[outs[0]] = ins[0]
        return
    if kind == "prim::dtype":
        env[outs[0]] = DType(ctx.dtype(ins[0]))
        return
    if kind == "prim::device":
        env[outs[0]] = "cpu"
        return
    if kind in ("prim::min", "prim::max"):
        vals = ins[0] if len(ins) == 1 else ins
        env[outs[0]] = (min if kind == "prim::min" else max)(vals)
        return
    if kind == "aten::len":
        env[outs[0]] = len(ins[0])
        return
    if kind == "aten::floordiv":
        env[outs[0]] = ins[0] // ins[1]
        return
    if kind == "aten::neg" and not isinstance(ins[0], _expr.Expr):
        env[outs[0]] = -ins[0]
        return
    name = _table_name(kind)
    for i in _scalar_type_args(node):
        if i < len(ins) and isinstance(ins[i], int) and not isinstance(ins[i], bool):
            ins[i] = DType(torch_dtype(ins[i]))
    ctx.op_name = name
    refuse_complex(ctx, table[name], ins)
    try:
        out = table[name](ctx, ins)
        # (folded here: an argument a converter took on trust, a list where a tensor belongs,
        # fails when its result is folded, and the failure is this node's)
        vals = [out] if len(outs) == 1 else list(out)
        vals = [ctx.fold(v) if isinstance(v, _expr.Expr) else v for v in vals]
    except ImportError_:
        raise
    except Exception as e:  # noqa: BLE001 - name the node in any converter failure
        raise ImportError_(f"{kind} (output %{outs[0].debugName()}): cannot convert: "
                           f"{type(e).__name__}: {e}") from e
    for o, v in zip(outs, vals):
        env[o] = v
