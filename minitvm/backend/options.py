"""The back-end options of a build, read once from the PassContext into a ``LoweringOptions``.

Config keys (``PassContext(config={...})``; the names are TVM-style and shared by every
dialect's build): ``relay.backend.use_native``, ``relay.backend.use_blas``,
``relay.backend.use_generated_conv`` / ``_dense`` / ``_batch_matmul``,
``relay.backend.strict_native`` (or ``MINITVM_STRICT_NATIVE=1``).
"""

from __future__ import annotations

import os

from ..runtime import blas, jit
from ..schedule.knobs import current_table
from ..schedule.options import LoweringOptions
from ..transform.config import config_default, register_pass_config
from ..transform.context import PassContext

register_pass_config("relay.backend.use_native", bool, True,
                     "Lower fused functions to native code (False: run all kernels in numpy).")
register_pass_config("relay.backend.use_blas", bool, True,
                     "Let dense/matmul/conv2d call the process's BLAS (like -libs=cblas).")
register_pass_config("relay.backend.use_generated_conv", bool, True,
                     "conv2d (float32, groups 1) as the generated implicit GEMM (else im2col "
                     "+ BLAS when BLAS is allowed).")
register_pass_config("relay.backend.use_generated_dense", bool, True,
                     "dense (float32, 2+ rows) as the generated packed GEMM (else BLAS when "
                     "allowed).")
register_pass_config("relay.backend.use_generated_batch_matmul", bool, True,
                     "batch_matmul (float32, A not transposed) as the generated batch GEMM, "
                     "B packed per call (else BLAS when allowed).")
register_pass_config("relay.backend.strict_native", bool, False,
                     "A kernel whose native lowering fails raises (NativeFallbackError) instead "
                     "of warning and running in numpy (unset: MINITVM_STRICT_NATIVE=1 decides).")

ENV_STRICT = "MINITVM_STRICT_NATIVE"


def strict_native(cfg: dict) -> bool:
    """Is native lowering strict under config ``cfg``, else ``$MINITVM_STRICT_NATIVE``? (A
    config value set either way wins over the environment.)"""
    if "relay.backend.strict_native" in cfg:
        return bool(cfg["relay.backend.strict_native"])
    return os.environ.get(ENV_STRICT, "").strip() not in ("", "0")


def lowering_options(ctx: PassContext | None = None) -> LoweringOptions:
    """The options of the current (or given) PassContext; BLAS only when one is present."""
    ctx = ctx if ctx is not None else PassContext.current()
    cfg = getattr(ctx, "config", None) or {}

    def get(key: str) -> bool:
        return bool(cfg.get(key, config_default(key)))

    return LoweringOptions(
        native=get("relay.backend.use_native"),
        blas=get("relay.backend.use_blas") and blas.available(),
        generated_conv=get("relay.backend.use_generated_conv"),
        generated_dense=get("relay.backend.use_generated_dense"),
        generated_batch_matmul=get("relay.backend.use_generated_batch_matmul"),
        knobs=current_table(),  # tuned schedule knobs (``minitvm.tune.apply_history_best``)
        cpu=jit.codegen_target(),  # a build's -mcpu (``backend.target_cpu``)
        strict_native=strict_native(cfg),
    )
