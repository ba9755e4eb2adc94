"""tvm.relay.qnn: quantized operators (``relay.qnn.op.quantize``, ``qnn.conv2d``, ...) with their
canonicalization to integer Relay (QnnCanonicalize, run by relay.build)."""

from . import op  # noqa: F401
from . import transform  # noqa: F401,E402
