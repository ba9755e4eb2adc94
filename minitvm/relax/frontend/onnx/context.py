"""What an ONNX -> Relax converter works with: the BlockBuilder, and values known at import
time (constants as numpy arrays, shape arithmetic as arrays of symbolic ``tir`` dims).

Keeping ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` chains as known values is what
lets a model exported with a dynamic batch axis import with a symbolic ``batch`` dim instead of
data-dependent shapes."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_model import ConverterTable, NodeContext
from ....frontend_common.onnx_model import onnx_dtype as _onnx_dtype
from ....ir.prim_expr import IntImm, PrimExpr
from ....runtime import error as _error
from ....tir.analysis.verify_well_formed import undefined_vars
from ....tir.expr import Var as TirVar
from ... import op as _op
from ...expr import Call, Constant, Expr, PrimValue, ShapeExpr, StringImm, const
from ...struct_info import ShapeStructInfo, TensorStructInfo

__all__ = ["CONVERTERS", "register", "Context", "ONNXImportError", "OpNotImplemented",
           "NeedsConstantInput", "onnx_dtype", "is_known", "normalize_known"]

# op_type -> converter(ctx, inputs, attrs) -> value | list of values
CONVERTERS = ConverterTable()
register = CONVERTERS.register


class ONNXImportError(ValueError):
    """The ONNX model cannot be imported: malformed, or a node the converter rejects."""


class OpNotImplemented(_error.OpNotImplemented):
    """The model uses ONNX operators this importer does not convert (all listed at once)."""


class NeedsConstantInput(ONNXImportError):
    """A graph input is used where a value known at import is required (a shape, axes, pads).

    ``input_name`` names it: a caller that knows its value (the ONNX backend, at run time) can
    re-import with ``from_onnx(..., const_inputs={name: value})``.
    """

    def __init__(self, message: str, input_name: str):
        super().__init__(message)
        self.input_name = input_name


def onnx_dtype(code: int) -> str:
    """The dtype name of an ONNX TensorProto element type."""
    return _onnx_dtype(code, ONNXImportError)


def is_known(v) -> bool:
    """A value known at import time: a numpy array (numeric or of symbolic dims)."""
    return isinstance(v, np.ndarray)


def _as_int(e):
    if isinstance(e, IntImm):
        return int(e.value)
    return e


def normalize_known(arr: np.ndarray) -> np.ndarray:
    """An object array whose entries are all plain integers becomes an int64 array."""
    if not isinstance(arr, np.ndarray):
        if isinstance(arr, int | float | bool | np.generic):
            arr = np.asarray(arr)
        else:
            box = np.empty((), dtype=object)
            box[()] = arr
            arr = box
    if arr.dtype != object:
        return arr
    flat = [_as_int(e) for e in arr.reshape(-1)]
    if all(isinstance(e, int | np.integer) for e in flat):
        return np.array(flat, dtype="int64").reshape(arr.shape)
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(arr.shape)


class Context(NodeContext):
    """The state converters share: the opset, the node being converted, the BlockBuilder."""

    error = ONNXImportError

    def __init__(self, bb, opset: int):
        super().__init__(opset)
        self.bb = bb
        self.analyzer = bb.get_analyzer()
        self.graph_inputs: dict = {}  # id(graph-input Var) -> its ONNX name
        # id(parameter Var) -> the initializer's value, with keep_params_in_input: a shape or
        # axes input that is an initializer reads it (TVM's get_constant); data stays the Var
        self.param_values: dict = {}
        # ONNX tensor name -> (q, scales) of a DequantizeLinear over a constant int8 weight that
        # a Conv may read as it is (``onnx_quant.dequantized_weight_scale``)
        self.int8_weights: dict = {}
        # ... -> (q, scales, zero points) of one over a constant 8-bit MatMul weight with zero
        # points (``onnx_quant.dequantized_zero_point_weight``), which VNNI may read
        self.zp_weights: dict = {}
        # ... -> (float input, (scale, zero point), dtype, input finite) of a QuantizeLinear with a
        # scalar constant scale and zero point (``ops_extra``: its DequantizeLinear skips the round
        # trip)
        self.quantized: dict = {}
        # ... -> (q, scale, zero point) of a DequantizeLinear over an 8-bit activation that a
        # VNNI conv may read as it is (``qdq_vnni``)
        self.act_inputs: dict = {}
        # ... -> (q, scale, axis) of a Softmax over a DequantizeLinear'd 8-bit activation that
        # only a QuantizeLinear reads (``qdq_softmax``: ORT's integer softmax)
        self.softmax_inputs: dict = {}
        # ONNX tensor name -> how many node inputs and graph outputs read it (the importer
        # fills it for the main graph; a name missing counts as unknown, i.e. not 1)
        self.uses: dict = {}
        # run-time checks of sizes (``require``): ``R.assert_op`` calls the importer puts
        # ahead of main's dataflow block; they read only ``size_vars``, main's parameters' dims
        self.checks: list = []
        self.size_vars: set = set()
        self.main_bb = bb

    # -- emitting ----------------------------------------------------------------------------
    def emit(self, e: Expr) -> Expr:
        """Bind a call in the current dataflow block (named like TVM's ``lv``); nested calls
        among its arguments are bound first, innermost first, as TVM's normalizer does."""
        if isinstance(e, Call):
            args = [self.emit(a) if isinstance(a, Call) else a for a in e.args]
            if any(a is not b for a, b in zip(args, e.args, strict=True)):
                e = Call(e.op, args, e.attrs, e.sinfo_args)
        return self.bb.emit(e)

    def expr(self, v, dtype: str | None = None) -> Expr:
        """A Relax expression for a value: known values become constants or shape tensors."""
        if v is None:
            raise self.fail("a required input is missing")
        if isinstance(v, np.generic):  # (a numpy scalar, e.g. a folded reciprocal: 0-d)
            v = np.asarray(v)
        if not is_known(v):
            return v
        v = normalize_known(v)
        if v.dtype != object:  # (the value's own dtype: const alone makes float64 float32)
            return const(v, dtype or str(v.dtype))
        if v.ndim > 1:
            raise self.fail(f"cannot materialize a {v.ndim}-D tensor of symbolic dims")
        dims = [e if isinstance(e, PrimExpr) else IntImm("int64", int(e)) for e in v.reshape(-1)]
        t = self.emit(_op.shape_to_tensor(ShapeExpr(dims)))
        if v.ndim == 0:
            t = self.emit(_op.reshape(t, ShapeExpr([])))
        if dtype is not None and dtype != "int64":
            t = self.emit(_op.astype(t, dtype))
        return t

    def require(self, ok, message: str, shown: list | tuple = ()) -> None:
        """Check that ``ok`` holds (a bool, or a ``tir`` condition over symbolic dims) as
        ONNX Runtime does, rather than clip or repeat into a silent answer: decided at import
        where it can be (False: an import error), else an ``R.assert_op`` at run time whose
        message (``{}``s filled by ``shown``) names the node and the values."""
        if isinstance(ok, PrimExpr):
            ok = self.analyzer.simplify(ok)
            if isinstance(ok, IntImm):
                ok = bool(ok.value)
            elif self.analyzer.can_prove(ok):
                return
        if not isinstance(ok, PrimExpr):
            if bool(ok):
                return
            raise self.fail(message.format(*(self.simplify(v) for v in shown)))
        free = [v for v in undefined_vars(ok) if isinstance(v, TirVar)]
        if self.bb is not self.main_bb or any(v not in self.size_vars for v in free):
            raise self.fail(message.format(*shown) + ": this importer checks such sizes "
                            "only over the dims of the main graph's inputs")
        where = self.where().replace("{", "{{").replace("}", "}}")
        vals = [PrimValue(v if isinstance(v, PrimExpr) else IntImm("int64", int(v)))
                for v in shown]
        self.checks.append(self.bb.normalize(_op.assert_op(
            PrimValue(ok), vals, format=StringImm(f"{where}: {message}"))))

    # -- static information ------------------------------------------------------------------
    def sinfo(self, v) -> TensorStructInfo:
        if is_known(v):
            return TensorStructInfo(list(v.shape), "int64" if v.dtype == object else str(v.dtype))
        s = v.struct_info
        if not isinstance(s, TensorStructInfo):
            raise self.fail(f"expected a tensor, got {s}")
        return s

    def ndim(self, v) -> int:
        if is_known(v):
            return v.ndim
        n = self.sinfo(v).ndim
        if n < 0:
            raise self.fail("the rank of an input is unknown")
        return n

    def dtype(self, v) -> str:
        if is_known(v):
            return "int64" if v.dtype == object else str(v.dtype)
        return str(self.sinfo(v).dtype)

    def shape(self, v) -> list:
        """The dims of a value: ints where static, ``tir`` expressions where symbolic."""
        if is_known(v):
            return list(v.shape)
        s = self.sinfo(v)
        if s.shape is None:
            raise self.fail("the shape of an input is unknown")
        dims = s.shape.values if isinstance(s.shape, ShapeExpr) else None
        if dims is None:
            sh = s.shape.struct_info
            if isinstance(sh, ShapeStructInfo) and sh.values is not None:
                dims = sh.values
        if dims is None:
            raise self.fail("the shape of an input is unknown")
        return [_as_int(d) for d in dims]

    def known(self, v) -> np.ndarray | None:
        """The value of ``v`` when known at import time (numpy array), else None."""
        if v is None:
            return None
        if is_known(v):
            return normalize_known(v)
        if isinstance(v, Constant):
            return v.data.numpy()
        return None

    def value(self, v, what: str) -> np.ndarray:
        """The import-time value of an input that must be known (a shape, axes, pads...)."""
        k = self.known(v)
        if k is None and id(v) in self.param_values:
            k = self.param_values[id(v)]
        if k is None and id(v) in self.graph_inputs:
            name = self.graph_inputs[id(v)]
            raise NeedsConstantInput(
                f"{self.where()}: {what} must be a constant, but it is the graph input "
                f"{name!r}: bind it with from_onnx(..., const_inputs={{'{name}': value}})", name)
        if k is None:
            deps = self._graph_inputs_of(v)
            if deps:  # computed from graph inputs: the backend may bind them and retry
                names = ", ".join(repr(d) for d in deps)
                raise NeedsConstantInput(
                    f"{self.where()}: {what} must be a constant, but it is computed from the "
                    f"graph input(s) {names}: bind them with from_onnx(..., const_inputs="
                    f"{{{deps[0]!r}: value, ...}})", deps[0])
            raise self.fail(f"{what} must be a constant or computed from shapes; "
                            "data-dependent values are not supported")
        return k

    def _graph_inputs_of(self, v, limit: int = 100_000) -> list:
        """The names of the graph inputs a value is computed from, following the bindings of
        the current function (on the error path only; an explicit stack, capped)."""
        from ...expr import Tuple, Var

        names, seen, stack = [], set(), [v]
        while stack and len(seen) < limit:
            e = stack.pop()
            if e is None or id(e) in seen:
                continue
            seen.add(id(e))
            if isinstance(e, Var):
                if id(e) in self.graph_inputs:
                    names.append(self.graph_inputs[id(e)])
                else:
                    stack.append(self.bb.lookup_binding(e))
            elif isinstance(e, Call):
                stack.extend(e.args)
            elif isinstance(e, Tuple):
                stack.extend(e.fields)
        return names

    def ints(self, v, what: str) -> list:
        """A 1-D known integer value as a list (symbolic dims kept as ``tir`` expressions)."""
        return [_as_int(e) if not isinstance(e, np.integer) else int(e)
                for e in self.value(v, what).reshape(-1)]

    def static_ints(self, v, what: str) -> list[int]:
        """``ints``, refused (naming the node) where one is computed from a symbolic dim:
        the op needs it known at import."""
        vals = self.ints(v, what)
        if any(isinstance(e, PrimExpr) for e in vals):
            raise self.fail(f"{what} {vals} is computed from a symbolic dim; this importer "
                            "needs it known at import (give the input a static shape)")
        return [int(e) for e in vals]

    def simplify(self, e):
        if isinstance(e, PrimExpr):
            return _as_int(self.analyzer.simplify(e))
        return e

    def shape_expr(self, dims) -> ShapeExpr:
        return ShapeExpr([d if isinstance(d, PrimExpr) else IntImm("int64", int(d))
                          for d in dims])
