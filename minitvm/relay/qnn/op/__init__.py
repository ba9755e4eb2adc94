"""tvm.relay.qnn.op: quantized operator constructors."""

from .qnn import (  # noqa: F401
    RequantizeConfig, current_requantize_config, requantize_config,
    add, concatenate, conv2d, dense, dequantize, mul, quantize, requantize,
    simulated_dequantize, simulated_quantize, subtract,
)
from . import canonicalize  # noqa: F401  (registers FTVMQnnCanonicalize)
from .qnn_more import batch_matmul, conv2d_transpose  # noqa: F401,E402
from .unary import (  # noqa: F401,E402
    abs, erf, exp, leaky_relu, log, rsqrt, sigmoid, sqrt, tanh,
)
from .op import register_qnn_canonicalize, register_qnn_legalize  # noqa: F401,E402
from . import canonicalizations  # noqa: F401,E402
from . import legalizations  # noqa: F401,E402  (registers FTVMQnnLegalize)
from . import layout_conversions  # noqa: F401,E402  (registers FTVMConvertOpLayout)
