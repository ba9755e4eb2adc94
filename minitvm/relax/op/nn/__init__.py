"""tvm.relax.op.nn: neural-network operators (convolution, pooling, activations, norms)."""

from .convolution import conv1d, conv1d_transpose, conv2d, conv2d_transpose
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from .nn import (
    attention, batch_norm, dropout, gelu, gelu_tanh, group_norm, layer_norm, leakyrelu,
    log_softmax, pad, relu, relu6, rms_norm, silu, softmax,
)
from ..linear_algebra import linear
from .conv3d import conv3d
from .lrn import lrn
from .pooling_nd import (
    adaptive_avg_pool1d, adaptive_avg_pool3d, avg_pool1d, avg_pool3d, max_pool1d, max_pool3d,
)
from .nn_extra import (
    attention_bias, batch_flatten, conv3d_transpose, cross_entropy_with_logits, instance_norm,
    nll_loss, pixel_shuffle, prelu, selu, softplus,
)
