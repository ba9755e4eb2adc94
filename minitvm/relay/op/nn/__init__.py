"""``relay.nn``: neural-network operators; importing this registers them all."""

from . import _activation, _conv, _dense, _norm, _pool, _shape  # registrations
from . import attrs
from .nn import *
from . import _layout_hooks  # ConvertLayout hooks use the constructors above
from ._space_batch import batch_to_space_nd, space_to_batch_nd  # noqa: E402
from ._rearrange import depth_to_space, dilate, mirror_pad, space_to_depth  # noqa: E402
from ._conv_nd import (  # noqa: E402
    conv1d_transpose, conv2d_backward_weight, conv3d, conv3d_transpose, correlation,
    deformable_conv2d,
)
from ._pool_nd import (  # noqa: E402
    adaptive_avg_pool1d, adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool3d,
    avg_pool3d, global_avg_pool1d, global_avg_pool3d, global_max_pool1d, global_max_pool3d,
    max_pool3d, upsampling3d,
)
from ._loss import cross_entropy, cross_entropy_with_logits, fifo_buffer, nll_loss  # noqa: E402,E501
from ._loss import ctc_log_alpha  # noqa: E402
from ._contrib_more import (  # noqa: E402
    contrib_dense_pack, contrib_depthwise_conv2d_nchwc, sparse_add, sparse_transpose,
)
from ._winograd import (  # noqa: E402
    contrib_conv2d_gemm_weight_transform, contrib_conv2d_gemm_without_weight_transform,
    contrib_conv2d_winograd_weight_transform, contrib_conv2d_winograd_without_weight_transform,
    contrib_conv3d_winograd_weight_transform, contrib_conv3d_winograd_without_weight_transform,
)
from ._bit_sparse import bitpack, bitserial_conv2d, bitserial_dense, sparse_conv2d  # noqa: E402
from . import _layout_hooks_nd  # noqa: E402,F401  (layout rules of the N-d ops)
from . import _alter_layout_x86  # noqa: E402,F401  (x86 AlterOpLayout rules, dense layout rules)
from . import _layout_hooks_blocked  # noqa: E402,F401  (blocked convs back to NCHW)
from . import _legalize_cpu  # noqa: E402,F401  (nn.conv2d Legalize: int8 rules, dilation phases)
from . import _legalize_conv_nd  # noqa: E402,F401  (conv1d as conv2d, conv2d_transpose per phase)
