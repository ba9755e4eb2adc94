"""Relax pipelines (TVM's ``relax.get_pipeline``): ``"zero"`` — legalize every op to a PrimFunc,
annotate op patterns, fold constants, fuse — and ``"default_build"`` — the zero pipeline followed
by the lowering to the VM (``lowering_pipeline``). Passes another part of minitvm provides
(LegalizeOps, FuseOps...) are included when they are present. FuseOps runs with minitvm's
``fuse_read_outputs`` (a block output the block reads fuses into its consumers)."""

from __future__ import annotations

from .. import transform as _transform

__all__ = ["zero_pipeline", "default_build_pipeline", "lowering_pipeline", "get_pipeline",
           "register_pipeline"]

# FoldConstant runs first too: it evaluates Relax operators on constants (numpy references),
# while after LegalizeOps it cannot fold ``call_tir`` (TVM builds the PrimFunc there), so bound
# weights would otherwise be transposed on every call. FoldTransposeIntoConsumer does the same
# for weights passed as arguments: the matmul reads W untransposed (the NT-GEMM schedules).
# SinkUnitSqueeze (minitvm's): a Conv1d's squeeze (it runs as a conv2d) below its elementwise
# epilogue, which then fuses into the conv. SplitConvPool (minitvm's, as Relay's): a stem conv's
# large map read only by a pool, in channel parts whose maps stay in L2 for their pools.
# FoldConvScale (minitvm's, as Relay's FoldScaleAxis / SimplifyInference): a conv's constant
# per-channel scale or inference batch norm goes into its weights (a torch.export'ed ResNet's
# or MobileNetV2's kernels then add a bias only, as Relay's do).
_ZERO = ("FoldConstant", "FoldConvScale", "SinkUnitSqueeze", "SplitConvPool", "LegalizeOps",
         "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR")
# RemoveStopFusion: the fusion barriers FuseOps consumes, where a pipeline has no FuseOps
_LOWERING = ("RemoveStopFusion", "FoldTransposeIntoConsumer", "RewriteDataflowReshape", "ToNonDataflow", "CallTIRRewrite",
             "StaticPlanBlockMemory", "LowerAllocTensor", "KillAfterLastUse", "VMBuiltinLower",
             "VMShapeLower", "AttachGlobalSymbol")


# minitvm's options of passes in its build pipelines (the passes' defaults are TVM's)
_OPTIONS = {"FuseOps": {"fuse_read_outputs": True}}


def _passes(names) -> list:
    from . import transform

    out = []
    for name in names:
        factory = getattr(transform, name, None)
        if factory is not None:
            out.append(factory(**_OPTIONS.get(name, {})))
    return out


def zero_pipeline(**kwargs) -> _transform.Pass:
    """FoldConstant, FoldConvScale, SinkUnitSqueeze, SplitConvPool, LegalizeOps, AnnotateTIROpPattern,
    FoldConstant, FuseOps, FuseTIR (those present)."""
    return _transform.Sequential(_passes(_ZERO), opt_level=0, name="relax.zero_pipeline")


def lowering_pipeline() -> _transform.Pass:
    """From legalized Relax to what the VM runs: explicit allocation, memory planning, kills,
    builtins, shape checks and symbolic shapes on the heap, global symbols."""
    return _transform.Sequential(_passes(_LOWERING), opt_level=0,
                                 name="relax.lowering_pipeline")


def default_build_pipeline() -> _transform.Pass:
    """The zero pipeline followed by the lowering to the VM (``relax.build``'s default)."""
    return _transform.Sequential(_passes(_ZERO) + _passes(_LOWERING), opt_level=0,
                                 name="relax.default_build_pipeline")


_PIPELINES = {"zero": zero_pipeline, "default_build": default_build_pipeline,
              "default": default_build_pipeline}


def register_pipeline(name: str, factory) -> None:
    """Make ``get_pipeline(name)`` return ``factory(**kwargs)``."""
    _PIPELINES[name] = factory


def get_pipeline(name: str = "zero", **kwargs) -> _transform.Pass:
    """The pipeline registered as ``name``: "zero", "default_build" (or "default")."""
    if name not in _PIPELINES:
        raise ValueError(f"unknown Relax pipeline {name!r}; known: {sorted(_PIPELINES)}")
    return _PIPELINES[name](**kwargs)
