"""``tvm.topi.testing``: numpy reference implementations under the names TVM's tests call
(``conv2d_nchw_python``, ``softmax_python``, ...), written over ``topi.reference``."""

from .conv import (
    conv1d_ncw_python, conv2d_nchw_python, conv2d_nhwc_python, conv2d_transpose_nchw_python,
    depthwise_conv2d_python_nchw, depthwise_conv2d_python_nhwc, dilate_python, get_pad_tuple,
)
from .norm import (
    batch_norm, group_norm_python, instance_norm_python, l2_normalize_python,
    layer_norm_python, log_softmax_python, lrn_python, softmax_python,
)
from .pool import adaptive_pool, poolnd_python, upsampling_python
from .conv_nd import (  # noqa: E402
    conv1d_transpose_ncw_python, conv2d_backward_weight_nchw_python,
    conv2d_backward_weight_python, conv3d_ncdhw_python, conv3d_ndhwc_python,
    conv3d_transpose_ncdhw_python, correlation_nchw_python, deformable_conv2d_nchw_python,
)
from .image_nd import (  # noqa: E402
    affine_grid_python, crop_and_resize_python, grid_sample_python, resize1d_python,
    resize3d_python, trilinear_resize3d_python, upsampling3d_python,
)
from .loss import nll_loss  # noqa: E402
from .vision import (  # noqa: E402
    reorg_python, roi_align_nchw_python, roi_align_nhwc_python, roi_pool_nchw_python,
)
from .transform import (
    batch_matmul, depth_to_space_python, gather_nd_python, gather_python, one_hot,
    sequence_mask, space_to_depth_python, strided_slice_python,
)
from .selection import selection_order_python  # noqa: E402
