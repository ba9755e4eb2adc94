"""``relax.transform.LegalizeOps`` and the per-op legalizations it uses, one module per op
family (``binary``, ``unary``, ``manipulate``, ``nn``...): each registers ``FLegalize``
functions ``fn(bb, call) -> Expr`` lowering a Relax operator call onto topi computes."""

from . import (  # noqa: F401  (registration of every family's legalizations)
    binary,
    convolution,
    create,
    datatype,
    einsum,
    extra,
    image,
    index,
    layout_transform,
    linear_algebra,
    manipulate,
    nn,
    pooling,
    pooling_nd,
    scan,
    scatter,
    search,
    shape_tensor,
    statistical,
    unary,
)
from .common import LegalizeError, get_legalize, legalizations, register_legalize  # noqa: F401
from .pass_ import LegalizeOps, legalize_module  # noqa: F401
