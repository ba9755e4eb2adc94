"""tvm.relay.qnn.op: quantized operator constructors."""

from .qnn import (  # noqa: F401
    add, concatenate, conv2d, dense, dequantize, mul, quantize, requantize,
    simulated_dequantize, simulated_quantize, subtract,
)
from . import canonicalize  # noqa: F401  (registers FTVMQnnCanonicalize)
from .qnn_more import batch_matmul, conv2d_transpose  # noqa: F401,E402
