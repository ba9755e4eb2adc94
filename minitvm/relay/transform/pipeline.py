"""relay.build's optimization pipeline, pass for pass as TVM v0.19 builds it (build_module.cc
OptimizeImpl + backend/utils.cc GetPassPrefix), and ``relay.optimize``.

``relay_build_pipeline()`` returns the Sequential; which of its passes run is decided by the
PassContext (opt_level, required_pass, disabled_pass) exactly as for any Sequential, so
``tvm.transform.explain(relay_build_pipeline())`` or ``minitvm passes --opt-level N`` answers
"which passes does relay.build run?". The passes TVM runs directly after the Sequential (at every
opt_level) are listed by ``post_pipeline_passes()``.
"""

from __future__ import annotations

from ...ir.gc_pause import paused
from ...transform.registry import get_pass
from ...transform.sequential import Sequential


def relay_build_pipeline(opt_level: int | None = None, target=None, homogeneous: bool = True,
                         is_vm: bool = False) -> Sequential:
    """The optimization Sequential of ``relay.build`` (``opt_level`` is unused: the context
    decides; it is accepted so ``minitvm passes --opt-level N`` can call this hook)."""
    p = get_pass
    passes = [
        p("RemoveUnusedFunctions", entry_functions=["main"]),
        p("ToBasicBlockNormalForm"),
        Sequential([p("QnnLegalize"), p("QnnCanonicalize")], opt_level=0, name="qnn.Legalize"),
        # ConvertBlockedOps (opt_level 0) is minitvm's: the x86 AlterOpLayout rules' blocked
        # convs / packed dense (a module altered by hand under an x86 -mcpu) back to the NCHW /
        # NC ops that have native kernels
        p("ConvertBlockedOps"),
    ]
    if homogeneous:
        # ConvertNHWCConvs (opt_level 3) is minitvm's: NHWC conv models (TFLite) move to NCHW
        # whole, rather than one conv at a time by Legalize (relay.build and the VM alike)
        passes.append(p("ConvertNHWCConvs"))  # (its required InferType runs first)
        passes.append(p("Legalize"))
    passes.append(p("SimplifyInference"))
    if is_vm:
        passes.append(p("EtaExpand", expand_constructor=True, expand_global_var=False))
    passes += [
        # TVM passes an fskip meant to skip int32 casts that, as written, never skips anything
        p("EliminateCommonSubexpr"),
        p("CombineParallelConv2d", min_num_branches=3),
        p("CombineParallelDense", min_num_branches=3),
        p("CombineParallelBatchMatmul", min_num_branches=3),
        p("FoldConstant"),
        p("FoldScaleAxis"),
        p("SimplifyExpr"),
        p("CanonicalizeCast"),
        p("CanonicalizeOps"),
        p("FlattenAtrousConv"),
        # SinkUnitSqueeze (opt_level 3) is minitvm's: a Conv1d's squeeze (it runs as a conv2d)
        # below its elementwise epilogue, which then fuses into the conv
        p("SinkUnitSqueeze"),
    ]
    if homogeneous:
        if not is_vm:
            passes.append(p("InferType"))
        # (an x86 -mcpu target in scope: the blocked ops AlterOpLayout just made go back to
        # NCHW / NC, which have the native kernels; before FoldConstant folds their weights)
        passes += [p("AlterOpLayout"), p("SimplifyExprPostAlterOp"),
                   p("ConvertBlockedOps", after_alter_op_layout=True)]
    # DenseOfTransposeToMatmul (opt_level 3) is minitvm's: ``a @ b`` of a run-time ``b``, which
    # the importers write as a dense of b's transpose, reads b in place (no transpose kernel);
    # after the FoldConstant that folds a weight's transpose
    passes += [p("FastMath"), p("FoldConstant"), p("DenseOfTransposeToMatmul")]
    max_args = getattr(target, "max_function_args", 0) if target is not None else 0
    if homogeneous:
        passes.append(p("SplitArgs", max_function_args=max_args))
    # FuseAttention (opt_level 3) is minitvm's: a large attention chain as one Primitive
    # function, lowered to one kernel (``schedule.attention``), before FuseOps splits it in three;
    # so is SplitConvPool (opt_level 3): a stem conv's large map read only by a pool, in parts
    # that stay in cache between the two
    # FuseConvPool (opt_level 3) is minitvm's: a fused conv read only by a k x k / k max
    # pool joins it in one function, whose conv pools in its tiles (``schedule.conv_pool``)
    passes += [p("PlanDevices"), p("SplitConvPool"), p("FuseAttention"), p("FuseOps"),
               p("FuseConvPool")]
    return Sequential(passes, opt_level=0, name="sequential")


def post_pipeline_passes() -> list:
    """The passes relay.build runs directly after the Sequential, at every opt_level."""
    return [get_pass("InferType"), get_pass("InlineGlobals"), get_pass("InferType"),
            get_pass("LabelOps")]


def optimize(mod, target=None, params=None):
    """``relay.optimize``: bind params, run the build pipeline under the current PassContext.

    Returns ``(mod, params)`` as TVM does.
    """
    from ...ir.module import IRModule
    from ...target import Target
    from ..expr import Function
    from .bind_params import bind_params_by_name

    if isinstance(mod, Function):
        mod = IRModule.from_expr(mod)
    if not isinstance(mod, IRModule):
        raise TypeError(f"relay.optimize expects an IRModule, got {type(mod).__name__}")
    if params:
        mod = mod.shallow_copy()
        mod["main"] = bind_params_by_name(mod["main"], params)
    if isinstance(target, str):
        target = Target(target)
    seq = relay_build_pipeline(target=target)
    with paused():
        if target is not None:
            with target:
                mod = seq(mod)
        else:
            mod = seq(mod)
        for p in post_pipeline_passes():
            mod = p(mod)
    return mod, params or {}
