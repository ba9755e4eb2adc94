"""The ONNX operator table (op_type -> converter) and the context converters receive."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_model import ConverterTable, NodeContext
from ....frontend_common.onnx_model import onnx_dtype as _onnx_dtype
from ....ir.prim_expr import Any
from ....ir.type import TensorType
from ... import expr as _expr
from ..common import ImportError_, const_value, infer_dtype, infer_shape, infer_type
from .dynamic_dim import DynamicDim
from .param_values import with_param_values
from .shape_values import SizeOf, evaluate
from .size_factors import SizeFactors

__all__ = ["CONVERTERS", "register", "Context", "onnx_dtype", "NeedsConstantInput"]

# op_type -> converter(ctx, inputs, attrs) -> Expr | list[Expr]
CONVERTERS = ConverterTable()
register = CONVERTERS.register


def has_any(v) -> bool:
    """Whether variable ``v``'s type has a run-time (``relay.Any()``) size."""
    t = v.type_annotation
    return isinstance(t, TensorType) and any(isinstance(d, Any) for d in t.shape)


def onnx_dtype(code: int) -> str:
    """The dtype name of an ONNX TensorProto element type."""
    return _onnx_dtype(code, ImportError_)


class NeedsConstantInput(ImportError_):
    """A graph input is used where a constant is required (a shape, axes, pads, ...).

    ``input_name`` names it: a caller that knows the input's value (the ONNX backend, at run
    time) can re-import with that input bound as a constant.

    ``computed`` says the value is computed from that input rather than being it.
    """

    def __init__(self, message: str, input_name: str, computed: bool = False):
        super().__init__(message)
        self.input_name = input_name
        self.computed = computed


class Context(NodeContext):
    """What a converter may ask about: the opset, the node, static shapes and constants."""

    error = ImportError_

    def __init__(self, opset: int, fold, graph_inputs=()):
        super().__init__(opset)
        self.fold = fold
        self.graph_inputs = set(graph_inputs)
        # graph input -> {axis: size} a converter needs static where the input's is a run-time
        # size: the input's type is narrowed to it (``narrow_input``), checked on entry
        self.narrowed: dict = {}
        # ONNX tensor name -> (q, scale) of a DequantizeLinear over a constant int8 weight,
        # which a Conv may read as it is (``qdq_weight``)
        self.int8_weights: dict = {}
        # ... -> (q, scales, zero points) of one over a constant 8-bit MatMul weight with zero
        # points (``onnx_quant.dequantized_zero_point_weight``), which VNNI may read
        self.zp_weights: dict = {}
        # ... -> (float input, (scale, zero point), dtype, input finite) of a QuantizeLinear with a
        # scalar constant scale and zero point (``ops_extra``: its DequantizeLinear skips the round
        # trip)
        self.quantized: dict = {}
        # ... -> (q, scale, zero point) of a DequantizeLinear over an 8-bit activation with a
        # constant scalar scale and zero point, which a Conv may read on VNNI (``qdq_weight``)
        self.act_inputs: dict = {}
        # ONNX tensor name -> how many node inputs and graph outputs read it (filled for the
        # main graph; a name missing counts as unknown, i.e. not 1)
        self.uses: dict = {}
        # ... -> (q, scale, axis) of a Softmax over a DequantizeLinear'd 8-bit activation that
        # only a QuantizeLinear reads (``qdq_softmax``: ORT's integer softmax)
        self.softmax_inputs: dict = {}
        # QuantizeLinear / DequantizeLinear as qnn.quantize / qnn.dequantize (TVM's form, for
        # FakeQuantizationToInteger; from_onnx's convert_config "qdq_as_qnn")
        self.qdq_as_qnn = False
        # id of a relay.Any() in a graph input's type -> the ONNX dim_param it stands for
        self.dim_names: dict[int, str] = {}
        # parameter Var -> its value as a Constant, for each initializer kept a parameter
        # (freeze_params=False): read where a converter needs a constant (``param_values``)
        self.param_consts: dict = {}
        # what each run-time size a reshape computed is the product of (``size_factors``)
        self.size_factors = SizeFactors()
        # ids of expressions known to read no graph input's values (``value_inputs``), and
        # the roots of those walks, kept alive so the ids stay theirs
        self._sizes_only: dict[int, None] = {}
        self._sizes_keep: list = []

    def narrow_input(self, e, axis: int, size: int) -> bool:
        """Fix run-time axis ``axis`` of graph input ``e`` at ``size`` (its parameter's type says
        so: the VM checks a call's argument against it); False when ``e`` is not a graph input
        or another converter fixed that axis at another size."""
        if e not in self.graph_inputs:
            return False
        axes = self.narrowed.setdefault(e, {})
        if axes.get(axis, size) != size:
            return False
        axes[axis] = size
        return True

    def shape(self, e) -> tuple:
        """The shape of ``e``: ints, and a ``DynamicDim`` for each ``relay.Any()`` axis (that
        ``Any`` object is its identity, so a size shared through the types compares equal; a
        reshape's size that is exactly another, ``batch * 1``, takes that one's)."""
        t = infer_type(e)
        if isinstance(t, TensorType) and not t.is_static() and \
                all(isinstance(d, int | Any) for d in t.shape):
            canon = self.size_factors.canonical
            return tuple(DynamicDim(i, canon(d), e, self.dim_names.get(id(canon(d)), ""))
                         if isinstance(d, Any) else d for i, d in enumerate(t.shape))
        return infer_shape(e)

    def ndim(self, e) -> int:
        return len(self.shape(e))

    def dtype(self, e) -> str:
        return infer_dtype(e)

    def value(self, e, what: str) -> np.ndarray:
        """The constant value of an input, or a clear error saying it must be constant. An
        input computed from initializers kept as parameters alone reads their values."""
        e = self.fold(with_param_values(e, self.param_consts))
        v = const_value(e)
        if v is None and e in self.graph_inputs:
            raise NeedsConstantInput(
                f"{self.where()}: {what} must be a constant, but it is the graph input "
                f"{e.name_hint!r}: bind it with from_onnx(..., const_inputs={{"
                f"'{e.name_hint}': value}})", e.name_hint)
        if v is None:
            sizes = self._dynamic_sizes_in(e)
            if sizes:  # computed from run-time sizes (a Range to a dynamic seq length)
                raise self.fail(
                    f"{what} must be a constant, but it is computed from the dynamic size(s) "
                    f"{', '.join(sizes)}; pass static sizes for them in from_onnx's shape=")
            deps = self.value_inputs(e)
            if deps:  # computed from graph inputs' values (EmbeddingBag offsets as an input)
                names = ", ".join(repr(d.name_hint) for d in deps)
                raise NeedsConstantInput(
                    f"{self.where()}: {what} must be a constant, but it is computed from the "
                    f"values of graph input(s) {names} (a data-dependent shape): bind them with "
                    f"from_onnx(..., const_inputs={{{deps[0].name_hint!r}: value, ...}})",
                    deps[0].name_hint, computed=True)
            shaped = [d for d in self._graph_inputs_of(e) if has_any(d)]
            if shaped:  # (a Range over batch * 9 feeding this: known at run time only)
                names = ", ".join(repr(d.name_hint) for d in shaped)
                raise self.fail(
                    f"{what} must be known at import, but it is computed at run time from the "
                    f"run-time size(s) of {names}, and this converter has no form that takes "
                    "it at run time; pass static sizes for them in from_onnx's shape=")
            raise self.fail(f"{what} must be a constant (or computable from static shapes); "
                            "values computed at run time are not supported here")
        return v

    def computed_at_run_time(self, e) -> bool:
        """Whether ``e`` is unknown at import yet reads no graph input's values, only sizes
        (``shape_of``), constants and local variables (a loop's iteration): a value Relay
        computes at run time (a Range to ``batch * 9``, a loop's slice bounds over it),
        which a converter with a run-time form takes as it is, where one that reads a graph
        input's values asks for that input bound (``NeedsConstantInput``)."""
        return self.maybe_value(e) is None and not self.value_inputs(e, first=True)

    def at_run_time(self, e) -> bool:
        """Whether a converter with a ``dyn.*`` form (OneHot's depth, Pad's pads, Split's
        sizes, ...) takes ``e`` as it is: unknown at import, and computed from run-time sizes
        only, or read from graph inputs' values in an import that has run-time sizes anyway
        (a data-dependent shape: the output's is ``relay.Any()``, for the VM). In a static
        import a value read from an input still asks for that input bound
        (``NeedsConstantInput``), which keeps the program static."""
        if self.maybe_value(e) is not None:
            return False
        return not self.value_inputs(e, first=True) or self.has_run_time_sizes()

    def has_run_time_sizes(self) -> bool:
        """Whether a graph input has a run-time (``relay.Any()``) size."""
        return any(has_any(v) for v in self.graph_inputs)

    def value_inputs(self, e, first: bool = False) -> list:
        """The graph inputs whose values ``e`` reads (through anything but ``shape_of``), in
        the order found; ``first``: stop at the first. Walks each sub-expression once per
        context: the ones found to read none are remembered (``_sizes_only``)."""
        out, stack, seen = [], [e], set()
        clean = self._sizes_only
        while stack:
            n = stack.pop()
            if id(n) in seen or id(n) in clean:
                continue
            seen.add(id(n))
            if isinstance(n, _expr.Var):
                if n in self.graph_inputs and n not in out:
                    out.append(n)
                    if first:
                        return out
            elif isinstance(n, _expr.Call):
                if getattr(n.op, "name", None) != "shape_of":
                    stack.extend(n.args)
                    stack.append(n.op)  # (a call of a local function: its body)
            elif isinstance(n, _expr.Tuple):
                stack.extend(n.fields)
            elif isinstance(n, _expr.TupleGetItem):
                stack.append(n.tuple_value)
            elif isinstance(n, _expr.Let):
                stack.extend((n.value, n.body))
            elif isinstance(n, _expr.If):
                stack.extend((n.cond, n.true_branch, n.false_branch))
            elif isinstance(n, _expr.Function):
                stack.append(n.body)
        if not out:
            clean.update((i, None) for i in seen)
            self._sizes_keep.append(e)  # (keeps the ids remembered valid)
        return out

    def _dynamic_sizes_in(self, e) -> list[str]:
        """The tensor axes of dynamic size that ``e`` (shape arithmetic) is computed from,
        as "axis 1 (seq) of 'x'" (on the error path only)."""
        elems = evaluate(e)
        if elems is None:
            return []
        out = []
        for v in elems.ravel():
            if isinstance(v, SizeOf) and v.tensor is not None:
                d = self.shape(v.tensor)[v.axis]
                of = f" of {v.tensor.name_hint!r}" if hasattr(v.tensor, "name_hint") else ""
                text = f"axis {v.axis}{f' ({d.name})' if getattr(d, 'name', '') else ''}{of}"
                if text not in out:
                    out.append(text)
        return out

    def _graph_inputs_of(self, e) -> list:
        """The graph inputs a value is computed from (on the error path only)."""
        from ...analysis import free_vars

        return [v for v in free_vars(e) if v in self.graph_inputs]

    def elements(self, e) -> np.ndarray | None:
        """The elements of the small integer tensor ``e`` as shape arithmetic gives them (ints
        and run-time ``SizeOf``s, ``shape_values.evaluate``), integer initializers kept as
        parameters read as their values; None when it is not shape arithmetic."""
        return evaluate(self.fold(with_param_values(e, self.param_consts, integer_only=True,
                                                    shape_arithmetic=True)))

    def maybe_value(self, e) -> np.ndarray | None:
        """The constant value of ``e``, or None; integer initializers kept as parameters (a
        shape) read as their values, float ones (weights) stay parameters."""
        if e is None:
            return None
        return const_value(self.fold(with_param_values(e, self.param_consts, integer_only=True)))

    @staticmethod
    def const(value, dtype: str | None = None):
        arr = np.asarray(value, dtype=dtype)
        return _expr.const(arr, str(arr.dtype))
