"""ToMixedPrecision (TVM's ``relax.transform.ToMixedPrecision``): automatic float16 mixed
precision of a float32 program, binding by binding inside dataflow blocks.

Each operator has a policy, as in TVM:
- *always* (``matmul``, convolutions): the float32 tensor operands are cast to float16 and the
  op accumulates in ``out_dtype`` (``"float32"`` by default, ``"float16"`` for a pure float16
  computation);
- *follow* (elementwise arithmetic and activations, comparisons, layout and indexing ops): run
  in float16 when every floating operand is already available in float16 (a result of an
  *always* op or of a float16 *follow* op, a constant, or a parameter named in
  ``fp16_input_names``), else in float32;
- *never* (everything else: reductions, softmax, normalizations, ...): float32.

Casts (``R.astype``) are emitted where a value is needed in the other precision, once per
value and precision; dataflow-block outputs keep their original dtype. Only float32 values are
converted; integer and boolean tensors and other dtypes are left as they are."""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import Call, Constant, DataflowBlock, DataflowVar, Function, Tuple, Var, VarBinding
from ..expr_functor import ExprMutator
from ..op.datatype import astype
from ..struct_info import TensorStructInfo, TupleStructInfo
from .function_pass import function_pass
from .utils import register

__all__ = ["ToMixedPrecision", "ALWAYS_OPS", "FOLLOW_OPS"]

ALWAYS_OPS = frozenset({
    "relax.matmul", "relax.nn.conv1d", "relax.nn.conv2d", "relax.nn.conv3d",
    "relax.nn.conv1d_transpose", "relax.nn.conv2d_transpose", "relax.nn.conv3d_transpose",
})

FOLLOW_OPS = frozenset({
    # elementwise unary
    "relax.abs", "relax.acos", "relax.acosh", "relax.asin", "relax.asinh", "relax.atan",
    "relax.atanh", "relax.ceil", "relax.cos", "relax.cosh", "relax.erf", "relax.exp",
    "relax.floor", "relax.log", "relax.negative", "relax.round", "relax.rsqrt",
    "relax.sigmoid", "relax.sign", "relax.sin", "relax.sinh", "relax.sqrt", "relax.square",
    "relax.tan", "relax.tanh", "relax.trunc", "relax.clip", "relax.isfinite", "relax.isinf",
    "relax.isnan",
    # elementwise binary (arithmetic and comparison)
    "relax.add", "relax.subtract", "relax.multiply", "relax.divide", "relax.floor_divide",
    "relax.power", "relax.maximum", "relax.minimum", "relax.mod", "relax.floor_mod",
    "relax.equal", "relax.not_equal", "relax.less", "relax.less_equal", "relax.greater",
    "relax.greater_equal",
    # activations
    "relax.nn.relu", "relax.nn.relu6", "relax.nn.gelu", "relax.nn.gelu_tanh", "relax.nn.silu",
    "relax.nn.leakyrelu", "relax.nn.selu", "relax.nn.softplus",
    # layout and indexing (one tensor result)
    "relax.reshape", "relax.permute_dims", "relax.expand_dims", "relax.squeeze",
    "relax.flatten", "relax.concat", "relax.broadcast_to", "relax.strided_slice",
    "relax.take", "relax.repeat", "relax.tile", "relax.flip", "relax.image.resize2d",
    "relax.nn.pad", "relax.where",
})

_F32, _F16 = "float32", "float16"


def _is_f32(e) -> bool:
    s = e._struct_info
    return isinstance(s, TensorStructInfo) and s.dtype == _F32


def _tensor_operands(args) -> list:
    """The operands of a call that are tensors, through one level of tuples (``concat``)."""
    out = []
    for a in args:
        if isinstance(a, Tuple):
            out.extend(f for f in a.fields if isinstance(f._struct_info, TensorStructInfo))
        elif isinstance(a._struct_info, TensorStructInfo):
            out.append(a)
    return out


class _MixedPrecision(ExprMutator):
    """Rebuilds each dataflow block with per-value float16 / float32 versions."""

    def __init__(self, mod, out_dtype: str, fp16_inputs: dict):
        super().__init__(mod)
        self.out_dtype = out_dtype
        self.high: dict = {}   # original float32 var -> its float32 value in the new program
        self.low: dict = {}    # original float32 var -> its float16 value
        self.native: set = set()  # originals whose value is computed in float16 (or eligible)
        self.casts = 0
        for old, new in fp16_inputs.items():
            self.low[old] = new
            self.native.add(old)

    # ------------------------------------------------------------------ values
    def _cast(self, value, dtype: str, name: str):
        self.casts += 1
        return self.builder_.emit(astype(value, dtype), name_hint=name)

    def as_high(self, e):
        """``e`` (an operand of the original program) as a value of its original dtype."""
        if isinstance(e, Tuple):
            return Tuple([self.as_high(f) for f in e.fields], e.span)
        if isinstance(e, Var):
            if e in self.high:
                return self.high[e]
            if e in self.low:
                self.high[e] = self._cast(self.low[e], _F32, "lv")
                return self.high[e]
        return self.visit_expr(e)

    def as_low(self, e):
        """Float32 tensor operand ``e`` as a float16 value."""
        if isinstance(e, Constant) and _is_f32(e):
            return Constant(e.data.numpy().astype(np.float16))
        if isinstance(e, Var) and e in self.low:
            return self.low[e]
        high = self.as_high(e)
        low = self._cast(high, _F16, "lv")
        if isinstance(e, Var):
            self.low[e] = low
        return low

    def eligible(self, e) -> bool:
        return isinstance(e, Constant) or (isinstance(e, Var) and e in self.native)

    # ------------------------------------------------------------------ blocks
    def visit_dataflow_block_(self, block: DataflowBlock) -> DataflowBlock:
        self.builder_._begin_block(True)
        for b in block.bindings:
            if isinstance(b, VarBinding) and isinstance(b.value, Call) \
                    and isinstance(b.value.op, Op):
                self._call_binding(b)
            else:
                self._plain_binding(b)
        return DataflowBlock(self.builder_._end_block(), block.span)

    def visit_var_(self, op: Var):
        if op in self.high or op in self.low:
            return self.as_high(op)
        return super().visit_var_(op)

    visit_dataflow_var_ = visit_var_

    def _plain_binding(self, b) -> None:
        if isinstance(b, VarBinding):
            value = self.as_high(b.value) if isinstance(b.value, Var | Tuple) else \
                self.visit_expr(b.value)
            var = self._emit(b.var, value)
            if var is not b.var:
                self.set_var_remap(b.var, var)
            if _is_f32(b.var):
                self.high[b.var] = var
        else:
            self.visit_binding(b)

    def _emit(self, old: Var, value):
        """Bind ``value`` to a variable named like ``old`` (an output stays an output)."""
        if isinstance(old, DataflowVar):
            return self.builder_.emit(value, name_hint=old.name_hint)
        return self.builder_.emit_output(value, name_hint=old.name_hint)

    def _call_binding(self, b: VarBinding) -> None:
        call = b.value
        name = call.op.name
        operands = _tensor_operands(call.args)
        floats = [a for a in operands if _is_f32(a)]
        low_result = False
        if name in ALWAYS_OPS and floats and len(floats) == len(operands):
            args = [self.as_low(a) if _is_f32(a) else self.as_high(a) for a in call.args]
            attrs = call.attrs.with_fields(out_dtype=self.out_dtype) if call.attrs is not None \
                and "out_dtype" in call.attrs else call.attrs
            new = Call(call.op, args, attrs, call.sinfo_args, call.span)
            low_result = self.out_dtype == _F16
            eligible = _is_f32(b.var)
        elif name in FOLLOW_OPS and floats and all(self.eligible(a) for a in floats):
            args = [self._low_operand(a) for a in call.args]
            new = Call(call.op, args, call.attrs, call.sinfo_args, call.span)
            low_result = eligible = _is_f32(b.var)
        else:
            new = Call(call.op, [self.as_high(a) for a in call.args], call.attrs,
                       call.sinfo_args, call.span)
            eligible = False
        if not _is_f32(b.var):  # an integer / boolean / tuple result: bound as it is
            var = self._emit(b.var, new)
            self.set_var_remap(b.var, var)
            return
        if low_result and not isinstance(b.var, DataflowVar):
            low = self.builder_.emit(new, name_hint="lv")
            self.low[b.var] = low
            self.native.add(b.var)
            self.high[b.var] = self._emit(b.var, astype(low, _F32))
            self.casts += 1
            return
        var = self._emit(b.var, new)
        if low_result:
            self.low[b.var] = var
        else:
            self.high[b.var] = var
        if eligible:
            self.native.add(b.var)

    def _low_operand(self, a):
        if isinstance(a, Tuple):
            return Tuple([self._low_operand(f) for f in a.fields], a.span)
        return self.as_low(a) if _is_f32(a) else self.as_high(a)


def to_mixed_precision(func: Function, mod=None, out_dtype: str = _F32,
                       fp16_input_names=None) -> tuple[Function, int]:
    """``func`` in mixed precision (see the module docstring) and the number of casts made."""
    names = set(fp16_input_names or ())
    params, fp16_inputs = [], {}
    for p in func.params:
        if p.name_hint in names and _is_f32(p):
            s = p.struct_info
            new = Var(p.name_hint, TensorStructInfo(s.shape, _F16, s.vdevice, s.ndim))
            params.append(new)
            fp16_inputs[p] = new
        else:
            params.append(p)
    m = _MixedPrecision(mod, out_dtype, fp16_inputs)
    body = m.visit_expr(func.body)
    if not m.casts and not fp16_inputs:
        return func, 0
    ret = func.ret_struct_info
    if isinstance(ret, TensorStructInfo | TupleStructInfo) and body._struct_info is not None:
        ret = body._struct_info
    return Function(params, body, ret, func.is_pure, func.attrs, func.span), m.casts


@register("ToMixedPrecision")
def ToMixedPrecision(out_dtype: str = "float32", fp16_input_names=None):  # noqa: N802
    """Function pass (opt 0): automatic float16 mixed precision of float32 dataflow blocks;
    ``out_dtype`` is the accumulation dtype of matmul / convolutions ("float32" or "float16"),
    ``fp16_input_names`` the parameters that become float16 in the signature."""
    if out_dtype not in (_F32, _F16):
        raise ValueError(f"ToMixedPrecision: out_dtype must be 'float32' or 'float16', got "
                         f"{out_dtype!r}")

    def transform(func, mod, ctx):
        if (func.attrs or {}).get("Primitive"):
            return func
        out, n = to_mixed_precision(func, mod, out_dtype, fp16_input_names)
        if n:
            record_stat("casts inserted", n)
        return out

    return function_pass(transform, opt_level=0, name="ToMixedPrecision")
