"""A primitive function with ``Any`` dimensions as ONE native kernel for every size.

Each distinct ``relay.Any()`` of the parameters' types (an ONNX dim_param, a ``relay.Any()``
the user wrote) becomes a ``tir.Var``; type inference then gives every intermediate and output
its shape as an expression of those variables (``n``, ``n * 49``), and each op's compute builds
its tensor expression over them. The TE graph becomes a PrimFunc the way Relax's kernels are
made (``te.make_te_prim_func``, ``schedule.optimize_prim_func``: a symbolic batch runs the static
schedules once per image), compiled once: the kernel reads the sizes from its input buffers.

``SymbolicKernel`` runs it from the VM: per input shapes it binds the variables, checks every
input dimension against them (a size that the typing took equal to another and is not, e.g. a
dynamic axis broadcast at size 1, runs the per-shape specialization instead) and allocates the
outputs. A function whose output shape depends on values, or with an op not lowered
symbolically, is not made one (``lower_symbolic`` raises): ``kernels.ShapeSpecializer`` runs it.
Stages whose loops a lowering rule writes (one-pass scatters, scans, top-k / sort along a
static axis, of a whole dynamic one or a fixed k of it, unique, all-class NMS, valid counts and
box NMS, RoI pools, the dense factorizations and solves, CTC's forward variables) go through
their rule when it takes symbolic extents (``SYMBOLIC_RULE_TAGS``). What the shape rules assumed
of the sizes (``topi.shape_conditions``), in the typing or in a compute (two sizes ``topi.linalg``
takes as a square's), is checked at each new shape the same way as the typing's equalities:
typed symbolically, a broadcast / join takes two sizes it cannot prove equal as equal
(``shape_conditions.taken_equal``: ``n`` and a slice's ``max(min(n, 1), 0) + max(n - 1, 0)``),
and a slice along a symbolic axis has its clamped length as an expression of the size.
"""

from __future__ import annotations

import ctypes
import logging
import threading

import numpy as np

from ....backend.compile import compile_scheduled, schedule_symbolic_te
from ....ir.attrs import DictAttrs
from ....ir.module import IRModule
from ....ir.op import Op, OpPattern
from ....ir.prim_expr import Any
from ....ir.structural import structural_equal, structural_hash
from ....ir.type import TensorType, TupleType
from ....runtime import blas, threadpool
from ....runtime.bounded_cache import BoundedCache
from ....runtime.module import Kernel
from ....runtime.ndarray import contiguous
from ....schedule import LoweringError, LoweringOptions
from ....tir import expr as E
from ....topi import nn_te, shape_conditions
from ....topi.all_class_nms import NMS_TABLE_TAG
from ....topi.box_nms import BOX_NMS_TAG, VALID_COUNTS_TAG
from ....topi.ctc import CTC_ALPHA_TAG
from ....topi.linalg import LINALG_TAG
from ....topi.multiclass_nms import MULTICLASS_NMS_TAG
from ....topi.roi_align import ROI_ALIGN_ONNX_TAG, ROI_POOL_TAG
from ....topi.scan import SCAN_TAG
from ....topi.scatter_linear import SCATTER_LINEAR_TAG
from ....topi.selection import TOPK_TAG
from ....topi.unique import UNIQUE_TABLE_TAG
from ...expr import Call, Function, Var, bind
from ..te_compiler import build_te, tensor_types, user_strategies
from .bound_call import BindingCache, BoundCall

__all__ = ["SymbolicKernel", "lower_symbolic", "packed_weight"]

LOG = logging.getLogger(__name__)
_VARS = ctypes.c_int64
_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)


def _with_vars(t, sizes: dict, keep: frozenset = frozenset()):
    """``t`` with each ``Any`` dimension replaced by its size (one variable per Any object, made
    at its first sight, or the expression ``sizes`` holds); the Anys in ``keep`` stay."""
    if isinstance(t, TupleType):
        return TupleType([_with_vars(f, sizes, keep) for f in t.fields])
    if not isinstance(t, TensorType):
        raise LoweringError(f"parameter of type {t} in a primitive function")
    dims = []
    for d in t.shape:
        if isinstance(d, Any) and id(d) not in keep:
            v = sizes.get(id(d))
            if v is None:
                v = sizes[id(d)] = (d, E.Var(f"n{len(sizes)}", "int64"))
            dims.append(v[1])
        else:
            dims.append(d)
    return TensorType(dims, t.dtype)


def _has_any(e) -> bool:
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Any):
            return True
        if isinstance(x, E.PrimExpr):
            stack.extend(getattr(x, k) for k in ("a", "b", "value") if hasattr(x, k))
    return False


def _typed(func: Function, sizes: dict, keep: frozenset = frozenset()) -> Function:
    """``func`` with its parameters' Any dims replaced (``_with_vars``), re-typed."""
    from ...transform import InferType

    params = [Var(p.name_hint, _with_vars(p.checked_type, sizes, keep)) for p in func.params]
    body = bind(func.body, dict(zip(func.params, params, strict=True)))
    typed = InferType()(IRModule.from_expr(Function(params, body)))["main"]
    typed = Function(typed.params, typed.body, typed.ret_type, attrs=DictAttrs({"Primitive": 1}))
    return InferType()(IRModule.from_expr(typed))["main"]


# ops whose result's dims line up with their arguments' (right-aligned) where both are sizes:
# a broadcast, and batch_matmul's batch (whose typing takes two unknown batches as equal)
_ALIGNED_OPS = frozenset({"nn.batch_matmul"})
# ops whose operands' dims must agree with each other: op -> its pairs (``_operand_pairs``)
_PAIRED_OPS = frozenset({"scatter_elements", "scatter_nd", "vision.all_class_non_max_suppression",
                         "vision.onnx_roi_align"})
# (operand, axis, operand, axis) a kernel reads as one extent: NMS's boxes and scores (batch,
# boxes), RoiAlign's boxes and their image indices, box NMS's rows, valid counts and indices
_OPERAND_AXES = {
    "vision.all_class_non_max_suppression": ((0, 0, 1, 0), (0, 1, 1, 2)),
    "vision.onnx_roi_align": ((1, 0, 2, 0),),
    "vision.non_max_suppression": ((0, 0, 1, 0), (0, 0, 2, 0), (0, 1, 2, 1)),
    "vision.multiclass_nms": ((0, 1, 1, 1),),
    "linalg.factored_solve": ((0, 0, 1, 0), (0, 1, 1, 1)),
    "nn.ctc_log_alpha": ((0, 1, 2, 0), (0, 1, 3, 0)),  # (log_probs' batch, the lengths')
}


def _scatter_pairs(call) -> list:
    """(dimension, dimension) pairs a scatter's typing requires equal: the indices' and the
    updates' (scatter_elements), the updates' and ``indices[1:] + data[m:]`` (scatter_nd)."""
    data, idx, upd = (a.checked_type for a in call.args)
    if not all(isinstance(t, TensorType) for t in (data, idx, upd)):
        return []
    if call.op.name == "scatter_elements":
        want = list(idx.shape)
    else:
        if not idx.shape:
            return []
        m = idx.shape[0]  # (a run-time one: the rank the ranks allow, as the rule takes it)
        if not isinstance(m, int | E.IntImm):
            m = len(idx.shape) - 1 + len(data.shape) - len(upd.shape)
        want = list(idx.shape[1:]) + list(data.shape[int(m):])
    if len(want) != len(upd.shape):
        return []
    pairs = list(zip(upd.shape, want, strict=True))
    return pairs + [(b, a) for a, b in pairs]


def _operand_pairs(call) -> list:
    """The dimension pairs of ``_OPERAND_AXES`` of ``call`` (both ways)."""
    types = [a.checked_type for a in call.args]
    pairs = []
    for i, a, j, b in _OPERAND_AXES[call.op.name]:
        ti, tj = types[i], types[j]
        if isinstance(ti, TensorType) and isinstance(tj, TensorType) and \
                a < len(ti.shape) and b < len(tj.shape):
            pairs += [(ti.shape[a], tj.shape[b]), (tj.shape[b], ti.shape[a])]
    return pairs


def _bias_pairs(call) -> list:
    """The bias length and the data's dim at ``axis`` of a ``nn.bias_add`` (both ways): what
    ties a normalization's parameters to the channels it scales (SimplifyInference's
    ``_tie``)."""
    data, bias = (a.checked_type for a in call.args)
    if not (isinstance(data, TensorType) and isinstance(bias, TensorType)) or \
            len(bias.shape) != 1 or not data.shape:
        return []
    d = data.shape[int(call.attrs.axis) % len(data.shape)]
    return [(bias.shape[0], d), (d, bias.shape[0])]


def _aligned_pairs(e) -> list:
    """(argument dimension, the dimension an aligned op's typing matched it with) of call
    ``e``: a broadcast's or batch_matmul's result dims against its arguments' (right-aligned),
    a scatter's operands against each other (``_scatter_pairs``), the operands a kernel reads
    as one extent (``_OPERAND_AXES``)."""
    if e.op.name in _OPERAND_AXES:
        return _operand_pairs(e)
    if e.op.name == "nn.bias_add":
        return _bias_pairs(e)
    if e.op.name in _PAIRED_OPS:
        return _scatter_pairs(e)
    if e.op.get_attr("TOpPattern") not in (OpPattern.ELEMWISE, OpPattern.BROADCAST) and \
            e.op.name not in _ALIGNED_OPS:
        return []
    out = e.checked_type
    if not isinstance(out, TensorType):
        return []
    pairs = []
    for a in e.args:
        at = a.checked_type
        if not isinstance(at, TensorType):
            continue
        lead = len(out.shape) - len(at.shape)
        pairs += [(d, out.shape[lead + k]) for k, d in enumerate(at.shape) if lead + k >= 0]
    return pairs


def _aligned_resolved(typed: Function, kept: set) -> dict:
    """id(Any) -> the expression an aligned op's typing matched it with: a call whose argument
    has the Any where its result (or a scatter's other operand) has an expression (``(n*8)//48``
    for the fresh Any a reshape gave the same batch)."""
    from ...expr_functor import dataflow_post_order

    found: dict = {}
    for e in dataflow_post_order(typed.body):
        if not (isinstance(e, Call) and isinstance(e.op, Op)):
            continue
        for d, o in _aligned_pairs(e):
            if id(d) in kept and id(d) not in found and isinstance(o, E.PrimExpr) and \
                    not isinstance(o, E.IntImm) and not _has_any(o):
                found[id(d)] = o
    return found


def symbolic_function(func: Function) -> tuple[Function, list, list]:
    """``func`` re-typed with a ``tir.Var`` for each distinct ``Any`` of its parameters, those
    variables, and the conditions its shape rules assumed of them (``topi.shape_conditions``:
    an exact division, two equal sizes, a positive extent), which each call must check; raises
    ``LoweringError`` when a result dimension stays unknown (an output
    whose size depends on values: arange, nonzero, a shape computed from data).

    Two Anys the program could not tell equal (a reshape's ``-1`` gives a fresh one for the same
    batch) would not broadcast together, or a batch_matmul's typing would take them equal
    unchecked, or a scatter's typing would read past the smaller of two operands: so the Anys
    of the parameters but one (the one whose sizes resolve the most others, the first on a tie)
    are first typed as Any, and each one an aligned op matches with an expression
    (``_aligned_resolved``) is given that expression; the kernel checks at each call that the
    sizes agree (and runs the shape's specialization where they do not). The others get their
    own variables."""
    anys = {id(d): d for p in func.params for t in tensor_types(p.checked_type)
            for d in t.shape if isinstance(d, Any)}
    sizes: dict = {}
    best = -1
    for k, p in enumerate(func.params):  # each parameter with Anys in turn defines them
        first = {id(d) for t in tensor_types(p.checked_type) for d in t.shape
                 if isinstance(d, Any)}
        later = frozenset(a for a in anys if a not in first)
        if not first and k + 1 < len(func.params):
            continue
        trial: dict = {}
        try:
            resolved = _aligned_resolved(_typed(func, trial, later), later) if later else {}
        except TypeError:
            resolved = {}
        for a, expr in resolved.items():
            trial[a] = (anys[a], expr)
        if not sizes or len(resolved) > best:
            sizes, best = trial, len(resolved)  # (the first one resolving the most)
        if len(resolved) == len(later):
            break
    with shape_conditions.collect() as found:
        typed = _typed(func, sizes)
    for t in tensor_types(typed.body.checked_type):
        if any(_has_any(d) for d in t.shape):
            raise LoweringError(f"the result type {typed.body.checked_type} depends on values")
    conditions = list({repr(c): c for c in found}.values())
    return typed, [v for _, v in sizes.values() if isinstance(v, E.Var)], conditions


def _conv2d(attrs, inputs, out_type):
    """``nn.conv2d`` as ``topi.nn_te.conv`` writes it (a ``pad_temp`` stage, then the plain
    window sum), the form the PrimFunc schedules recognize as a convolution
    (``schedule.raise_patterns``); Relay's own compute folds the padding into guarded loads,
    which only Relay's static lowering schedules."""
    dtype = out_type.dtype if isinstance(out_type, TensorType) else None
    x, w = inputs
    return [nn_te.conv(x, w, list(attrs.strides), list(attrs.padding), list(attrs.dilation),
                       int(attrs.groups), attrs.data_layout, attrs.kernel_layout,
                       attrs.out_layout or attrs.data_layout, dtype)]


def _conv3d(attrs, inputs, out_type):
    """``nn.conv3d`` over symbolic sizes: ``topi.nn_te.conv``'s loop nest (a ``pad_temp``
    stage, then the window sum; any layout letters). The static compute's conv2d over the depth
    folded into the batch needs its extents as ints."""
    from ....topi.utils import pad_tuple

    dtype = out_type.dtype if isinstance(out_type, TensorType) else None
    x, w = inputs
    return [nn_te.conv(x, w, list(attrs.strides), list(pad_tuple(attrs.padding, 3, "nn.conv3d")),
                       list(attrs.dilation), int(attrs.groups), attrs.data_layout,
                       attrs.kernel_layout, attrs.out_layout or attrs.data_layout, dtype)]


def _conv_transpose(nd: int):
    """The compute of ``nn.conv<nd>d_transpose`` over symbolic sizes: ``topi.nn_te
    .conv_transpose``, each output element gathering the input positions that scatter onto it
    (masked per tap; the output padding only widens the output). The static lowering legalizes
    the op onto conv2d phases, which need the sizes as ints."""
    sp = {1: "W", 2: "HW", 3: "DHW"}[nd]

    def fcompute(attrs, inputs, out_type):
        from ....topi.utils import out_dims, pad_tuple

        if attrs.data_layout != "NC" + sp or attrs.kernel_layout != "IO" + sp or \
                (attrs.out_layout or attrs.data_layout) != attrs.data_layout:
            raise ValueError(f"a symbolic conv{nd}d_transpose takes NC{sp} data and an IO{sp} "
                             f"kernel, got {attrs.data_layout} / {attrs.kernel_layout}")
        x, w = inputs
        return [nn_te.conv_transpose(x, w, list(attrs.strides),
                                     list(pad_tuple(attrs.padding, nd)),
                                     list(attrs.output_padding), list(attrs.dilation),
                                     int(attrs.groups), out_dims(out_type), out_type.dtype)]

    return fcompute


def _softmax(attrs, inputs, out_type):
    """``nn.softmax`` as ``topi.nn_te.softmax`` writes it: the row kernel's form
    (``schedule.softmax_rows``) in a PrimFunc."""
    return [nn_te.softmax(inputs[0], int(attrs.axis))]


# ops whose PrimFunc must take the form the shared PrimFunc schedules recognize
# (and the ops whose static compute or lowering needs int sizes, written here over symbolic ones)
_PRIM_FUNC_COMPUTES = {"nn.conv2d": _conv2d, "nn.softmax": _softmax, "nn.conv3d": _conv3d,
                       "nn.conv1d_transpose": _conv_transpose(1),
                       "nn.conv2d_transpose": _conv_transpose(2),
                       "nn.conv3d_transpose": _conv_transpose(3)}


def _compute_of(call: Call):
    """The compute of ``call`` in a symbolic kernel: its FTECompute, or the form of
    ``_PRIM_FUNC_COMPUTES``."""
    return _PRIM_FUNC_COMPUTES.get(call.op.name) or call.op.get_attr("FTECompute")


def lower_symbolic(func: Function, name: str, options: LoweringOptions,
                   const_inputs: frozenset = frozenset(), store=None) -> Kernel:
    """One native kernel for ``func`` at every size of its ``Any`` dimensions (a ``Kernel``
    whose ``run`` is a ``SymbolicKernel``). Raises ``LoweringError`` (or the compute's
    ValueError / TypeError / NotImplementedError) when it cannot be lowered so. ``store``: the
    build's ``saved.RecordStore`` (a kernel recorded on disk is not scheduled again)."""
    if not options.native:
        raise LoweringError("native lowering disabled")
    if func.attrs is not None and func.attrs.get("Compiler") is not None:
        raise LoweringError("partitioned for an external codegen")
    if user_strategies(func):  # (the static lowering of each shape honours them)
        raise LoweringError("an op carries a user strategy")
    native, variables, in_shapes, out_shapes, kvars, conditions = _compiled(
        func, name, options, const_inputs, store)
    run = SymbolicKernel(native, variables, in_shapes, out_shapes, func, options, const_inputs,
                         kvars, conditions)
    # (weights it takes in another layout are packed by ``run``, once per constant: an exported
    # executable keeps the function's own constants, for the numpy run it loads as)
    return Kernel(name, "fallback", reason=SYMBOLIC_REASON, source=func,
                  source_format=SAVED_FORMAT, run=run)


# how a symbolic kernel is saved in an exported library: ``saved`` reads and writes it
SYMBOLIC_REASON = "dynamic shapes: one symbolic kernel"
SAVED_FORMAT = "relay_symbolic"




# (structural hash, options, const inputs) -> [(function, its record)]: a function lowered
# again (the sequential VM codegen after a parallel prefetch, a second relay.vm.compile) is not
# scheduled nor compiled again. A record holds the schedule (``_Scheduled``) or the error its
# lowering raised, then the native kernel. Functions that differ only in which Anys are the same
# object share a record: the kernel checks the sizes at each call, and specializes where they
# break it. The most recent ``SYMBOLIC_CACHE_SIZE`` keys are kept (LRU): a record holds its
# function, schedule and native kernel, and a process compiling thousands of distinct dynamic
# programs (a fuzzer) kept them all.
SYMBOLIC_CACHE_SIZE = 128
_COMPILED = BoundedCache("relay.vm.symbolic_kernels", SYMBOLIC_CACHE_SIZE)
_COMPILED_LOCK = threading.Lock()
LOWERING_ERRORS = (LoweringError, ValueError, TypeError, NotImplementedError, KeyError)


def _rule_stages(outputs) -> list:
    """The stages of the te graph that only a registered lowering rule emits
    (``schedule.lower.rule_emitted_tags()``: a one-pass scatter's te body is a stand-in that,
    compiled as written, copies the data and drops every update)."""
    from ....schedule.lower import rule_emitted_tags

    emitted = rule_emitted_tags()
    found, seen, stack = [], set(), list(outputs)
    while stack:
        t = stack.pop()
        op = t.op
        if id(op) in seen:
            continue
        seen.add(id(op))
        if getattr(op, "tag", "") in emitted:
            found.append(t)
        stack.extend(getattr(op, "input_tensors", ()))
    return found


def _schedule_with_rules(inputs, consts, outputs, stages: list, options: LoweringOptions,
                         const_inputs: frozenset) -> tuple:
    """``(PrimFunc, input packs)`` of a graph with rule-emitted ``stages``: the PrimFunc path
    applies no rule, so the graph goes through ``lower_te``'s rule table (symbolic extents
    allowed) when each such stage is one of ``SYMBOLIC_RULE_TAGS`` and its rule takes it
    symbolically, and needs no workspace; else LoweringError (specialized per shape)."""
    from ....backend.compile import schedule_te
    from ....schedule import select_rule

    for t in stages:
        rule = select_rule(t, options) if t.op.tag in SYMBOLIC_RULE_TAGS else None
        if rule is None or not rule.symbolic:
            raise LoweringError(f"stage {t.op.name!r} (tag {t.op.tag!r}) is emitted by a "
                                "lowering rule that symbolic kernels do not apply")
    prim, packs, ws = schedule_te(inputs, consts, outputs, "kernel", options, const_inputs)
    if ws:
        raise LoweringError(f"a symbolic kernel with rule-emitted stages needs a workspace "
                            f"({ws} bytes)")
    return prim, packs


# tags of rule-emitted stages a symbolic kernel lowers through their rule (``lower_te``),
# each checked at several sizes against the per-shape kernels and the interpreter: the one-pass
# scatters, scans, top-k / sort / argsort, unique, all-class NMS, RoI pooling / ONNX RoiAlign,
# valid counts and box NMS, TFLite's multiclass NMS (a run-time box count), Cholesky / LU /
# factored and triangular solves (a run-time batch of matrices or order), CTC's forward
# variables (a run-time frame count, batch, targets length)
SYMBOLIC_RULE_TAGS = frozenset({SCATTER_LINEAR_TAG, SCAN_TAG, TOPK_TAG, UNIQUE_TABLE_TAG,
                                NMS_TABLE_TAG, ROI_POOL_TAG, ROI_ALIGN_ONNX_TAG,
                                VALID_COUNTS_TAG, BOX_NMS_TAG, MULTICLASS_NMS_TAG, LINALG_TAG,
                                CTC_ALPHA_TAG})


class _Scheduled:
    """A symbolic kernel scheduled (``schedule_symbolic``), its native code made on demand;
    ``key`` its on-disk record's (None: not recorded)."""

    __slots__ = ("variables", "in_shapes", "out_shapes", "conditions", "fast", "packs",
                 "consts", "source", "native", "kvars", "key")

    def __init__(self, func: Function, options: LoweringOptions, const_inputs: frozenset):
        STATS["scheduled"] += 1
        typed, self.variables, conditions = symbolic_function(func)
        with shape_conditions.collect() as stated:  # (what the computes assume, e.g. linalg's)
            inputs, consts, outputs = build_te(typed, _compute_of, symbolic=True)
        self.conditions = list({repr(c): c for c in [*conditions, *stated]}.values())
        stages = _rule_stages(outputs)
        if stages:
            self.fast, self.packs = _schedule_with_rules(inputs, consts, outputs, stages,
                                                         options, const_inputs)
        else:
            self.fast, self.packs = schedule_symbolic_te(inputs, consts, outputs, options,
                                                         const_inputs)
        self.consts = consts
        self.source = typed
        self.out_shapes = [(tuple(t.shape), t.dtype)
                           for t in tensor_types(typed.body.checked_type)]
        self.in_shapes = [tuple(t.shape) for p in typed.params
                          for t in tensor_types(p.checked_type)]
        self.native = None
        self.kvars = None
        self.key = None


class _Restored:
    """A symbolic kernel read back from its on-disk record (``saved``): native code loaded,
    nothing scheduled."""

    __slots__ = ("variables", "in_shapes", "out_shapes", "conditions", "native", "kvars", "key")

    def __init__(self, func: Function, hit: tuple, key: str):
        from .saved import restore

        meta, consts, compiled, ir = hit
        (self.variables, self.in_shapes, self.out_shapes, self.kvars, packs,
         self.conditions) = restore(meta)
        self.native = Kernel("restored", "native", symbol=compiled.symbol,
                             address=compiled.address, ir=ir, consts=consts,
                             compiled=compiled, input_packs=packs, source=func)
        self.key = key


# calls of ``_Scheduled`` in this process: a warm build (its kernels recorded on disk) and a
# loaded executable make none
STATS = {"scheduled": 0}


def _from_store(func: Function, options: LoweringOptions, const_inputs: frozenset, store):
    """``(key, the record on disk or None)`` of ``func``'s symbolic kernel: a ``_Restored``, or
    the LoweringError the symbolic path raised for it."""
    key = store.key(func, options, const_inputs) if store is not None else None
    hit = store.load(key) if key is not None else None
    if hit is None:
        return key, None
    if len(hit) == 2:  # (error type, message)
        return key, LoweringError(f"{hit[0]}: {hit[1]} (recorded)")
    try:
        return key, _Restored(func, hit, key)
    except ValueError:  # a damaged record: lowered again (and recorded anew)
        return key, None


def schedule_symbolic(func: Function, options: LoweringOptions,
                      const_inputs: frozenset = frozenset(), store=None):
    """The schedule of ``func``'s symbolic kernel (``_Scheduled``), from the in-process cache,
    the on-disk records of ``store`` (a ``_Restored``, nothing scheduled) or made now; the
    error its lowering raises instead, returned (not raised)."""
    key = (structural_hash(func), options, const_inputs)
    with _COMPILED_LOCK:
        for cand, made in _COMPILED.get(key, ()):
            if cand is func or structural_equal(cand, func):
                return made
    disk_key, made = _from_store(func, options, const_inputs, store)
    if made is None:
        try:
            made = _Scheduled(func, options, const_inputs)
            made.key = disk_key
        except LOWERING_ERRORS as err:
            made = err
            if disk_key is not None:
                store.store_error(disk_key, err)
    with _COMPILED_LOCK:
        _COMPILED[key] = [*_COMPILED.get(key, ()), (func, made)]
    return made


def _compiled(func: Function, name: str, options: LoweringOptions, const_inputs: frozenset,
              store=None):
    """``(native kernel, variables, input shapes, output (shape, dtype)s, kernel var places,
    shape conditions)`` of ``func``'s symbolic kernel (its object code through the disk
    cache; the record written to ``store`` once made); raises its lowering error."""
    made = schedule_symbolic(func, options, const_inputs, store)
    if isinstance(made, Exception):
        raise made
    if made.native is None:
        made.native = compile_scheduled(made.fast, made.packs, made.consts, name, made.source)
        made.kvars = _kernel_var_places(made.native)
        if made.key is not None and store is not None:
            store.store(made.key, made)
    return (made.native.renamed(name, made.native.source), made.variables, made.in_shapes,
            made.out_shapes, made.kvars, made.conditions)


def clear_symbolic_cache() -> None:
    """Forget the symbolic kernels lowered in this process."""
    with _COMPILED_LOCK:
        _COMPILED.clear()


def _eval_dim(e, env: dict) -> int:
    """The value of dimension expression ``e`` for variable values ``env`` (id -> int)."""
    if isinstance(e, int):
        return e
    if isinstance(e, E.IntImm):
        return int(e.value)
    if isinstance(e, E.Var):
        return env[id(e)]
    if isinstance(e, E.Cast):
        return _eval_dim(e.value, env)
    a, b = _eval_dim(e.a, env), _eval_dim(e.b, env)
    kind = type(e).__name__
    if kind == "Add":
        return a + b
    if kind == "Sub":
        return a - b
    if kind == "Mul":
        return a * b
    if kind in ("FloorDiv", "Div"):
        return a // b if b else -1
    if kind in ("FloorMod", "Mod"):
        return a % b if b else -1
    if kind == "Min":
        return min(a, b)
    if kind == "Max":
        return max(a, b)
    raise LoweringError(f"dimension expression {e} cannot be evaluated")


def _holds(condition: tuple, env: dict) -> bool:
    """Whether a shape rule's assumption (``shape_conditions``) holds at sizes ``env``."""
    kind, a, b = condition
    a, b = _eval_dim(a, env), _eval_dim(b, env)
    if kind == "divisible":
        return b != 0 and a % b == 0
    if kind == "greater":
        return a > b
    return a == b


class SymbolicKernel:
    """``run(args)`` of a primitive function with dynamic shapes through one symbolic kernel;
    ``native_call(args)`` gives the VM's native entry the call to record."""

    def __init__(self, kernel: Kernel, variables: list, in_shapes: list, out_shapes: list,
                 func: Function, options: LoweringOptions, const_inputs: frozenset,
                 kvars: list | None = None, conditions: list = ()):
        self.kernel = kernel
        self.variables = variables
        self.in_shapes = in_shapes
        self.out_shapes = out_shapes
        self.conditions = list(conditions)  # (``shape_conditions``: checked at each new shape)
        where = {}
        for k, shape in enumerate(in_shapes):
            for d, dim in enumerate(shape):
                if isinstance(dim, E.Var) and id(dim) not in where:
                    where[id(dim)] = (k, d)
        missing = [v.name for v in variables if id(v) not in where]
        if missing:
            raise LoweringError(f"sizes {missing} are no input's dimension")
        self._where = [where[id(v)] for v in variables]
        # the kernel's own scalar arguments: its signature's variables, read from its buffers
        self._kvars = list(kvars) if kvars is not None else _kernel_var_places(kernel)
        if any(k >= len(in_shapes) for k, _ in self._kvars):
            raise LoweringError(f"kernel {kernel.name}: a size is read from no input")
        self._entry = _ENTRY(kernel.address)
        self._calls: dict = {}  # input shapes -> (kernel vars, output (shape, dtype)s) | None
        self._fallback = None  # the per-shape specialization, for shapes the typing got wrong
        self._packs: dict = {}  # (position, id) -> (the constant, its packed copy)
        self._bindings = BindingCache()  # (call sites of equal inputs share a binding)
        self._spec_args = (func, kernel.name, options, const_inputs)

    def _shapes_for(self, shapes: tuple):
        """(the kernel's int64 vars, the outputs' (shape, dtype)s) for input ``shapes``; None
        when those shapes break an equality the symbolic typing assumed or a condition of its
        shape rules (the per-shape specialization then types them, and raises its error)."""
        hit = self._calls.get(shapes)
        if hit is not None or shapes in self._calls:
            return hit
        env = {id(v): shapes[k][d] for v, (k, d) in zip(self.variables, self._where,
                                                        strict=True)}
        ok = len(shapes) == len(self.in_shapes) and all(
            len(s) == len(want) and all(_eval_dim(w, env) == g for w, g in
                                        zip(want, s, strict=True))
            for s, want in zip(shapes, self.in_shapes, strict=True)) and all(
            _holds(c, env) for c in self.conditions)
        got = None
        if ok:
            outs = [(tuple(_eval_dim(d, env) for d in s), dt) for s, dt in self.out_shapes]
            kv = (_VARS * max(1, len(self._kvars)))(*[shapes[k][d] for k, d in self._kvars])
            got = (kv, outs)
        else:
            LOG.debug("%s: input shapes %s break the symbolic typing: specialized",
                      self.kernel.name, shapes)
        self._calls[shapes] = got
        return got

    def _specializer(self):
        if self._fallback is None:
            from .kernels import ShapeSpecializer

            func, name, options, const_inputs = self._spec_args
            if not isinstance(func, Function):  # (a loaded kernel's ``saved.SavedFunction``)
                func = func.function()
            self._fallback = ShapeSpecializer(func, name, options, const_inputs)
        return self._fallback

    def native_call(self, args: list) -> tuple | None:
        """``(kernel, inputs, outputs, vars)`` of the native call that runs ``args``."""
        got = self._shapes_for(tuple(a.shape for a in args))
        if got is None:
            return self._specializer().native_call(args)
        kv, outs = got
        return (self.kernel, self._inputs(args), [np.empty(s, dtype=d) for s, d in outs], kv)

    def prepack(self, pos: int, const: np.ndarray) -> None:
        """Pack constant ``const`` (the weight the VM passes at input ``pos``) now, at build
        time, when the kernel takes it in another layout (else the first call would)."""
        transform = self.kernel.input_packs.get(pos)
        if transform is not None and (pos, id(const)) not in self._packs:
            self._packs[(pos, id(const))] = (const, packed_weight(transform, const))

    def _inputs(self, args: list) -> list:
        """``args`` contiguous, the weights the kernel takes packed in its layout (each packed
        once, kept while the VM passes the same constant)."""
        ins = [contiguous(a) for a in args]
        for pos, transform in self.kernel.input_packs.items():
            key = (pos, id(args[pos]))  # (a kernel shared by layers gets each one's weight)
            held = self._packs.get(key)
            if held is None or held[0] is not args[pos]:
                held = self._packs[key] = (args[pos], packed_weight(transform, ins[pos]))
            ins[pos] = held[1]
        return ins

    def bind(self, args: list) -> BoundCall | None:
        """This kernel's native call of ``args`` bound to their shapes, for a call site that
        repeats them (``BoundCall``); shapes the typing got wrong bind their specialization."""
        got = self._shapes_for(tuple(a.shape for a in args))
        if got is None:
            return self._specializer().bind(args)
        kv, outs = got
        ins = self._inputs(args)
        packs = [(pos, args[pos], ins[pos]) for pos in self.kernel.input_packs]
        return self._bindings.bind(args, packs, self.kernel.consts, outs, None,
                                   self.kernel.address, kv)

    def __call__(self, args: list) -> list:
        got = self._shapes_for(tuple(a.shape for a in args))
        if got is None:
            return self._specializer()(args)
        kv, outs = got
        outputs = [np.empty(s, dtype=d) for s, d in outs]
        arrays = [*self._inputs(args), *self.kernel.consts, *outputs]
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        self._entry(ptrs, kv, threadpool.get_num_threads())
        return outputs


def packed_weight(transform, weight: np.ndarray) -> np.ndarray:
    """``weight`` in a kernel's layout (``transform``, one of its ``input_packs``), contiguous.
    BLAS runs on one thread meanwhile: a transform's products are small, and OpenBLAS's threads
    made packing ResNet-18's Winograd weights 8x slower (0.34 s instead of 0.04)."""
    with blas.single_threaded():
        return contiguous(transform(contiguous(weight)))


def _kernel_var_places(kernel: Kernel) -> list:
    """(buffer parameter, axis) the kernel's entry reads each of its scalar vars from (the
    entry takes ``(buffers, int64 vars, threads)``)."""
    sig = kernel.kernel.sig
    bufs = dict(sig.buffers)
    where = {}
    for k, p in enumerate(sig.params):
        b = bufs.get(p)
        if b is None:
            raise LoweringError(f"kernel {kernel.name}: scalar parameter {p}")
        for d, dim in enumerate(b.shape):
            if isinstance(dim, E.Var) and id(dim) not in where:
                where[id(dim)] = (k, d)
    places = []
    for v in sig.vars:
        if id(v) not in where:
            raise LoweringError(f"kernel {kernel.name}: size {v.name} is no buffer's dimension")
        places.append(where[id(v)])
    return places
