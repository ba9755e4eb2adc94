"""``tvm.topi``: the operator library shared by every dialect — tensor-expression computes and
numpy references.

Each compute is ``fcompute(attrs, inputs: list[te.Tensor], out_type) -> list[te.Tensor]``,
registered under the operator's name (``get_compute("nn.conv2d")``). Relay attaches them to its
operators as ``FTECompute``; Relax's legalization calls them to build PrimFuncs. The schedules in
``minitvm.schedule`` turn the resulting tensor expressions into loops.

Each numpy reference (``topi.reference``) is ``impl(attrs, args: list[np.ndarray], out_type) ->
ndarray | tuple``, registered the same way (``get_reference("nn.conv2d")``). Relay's ``define_op``
takes them as its operators' ``FNumpy`` (the interpreter, constant folding and the fallback
kernels run them); Relax uses the same ones. The shape, layout and axis rules both need
(``topi.shape``, ``topi.layout``, ``topi.utils``) live here too, so no dialect is imported.
"""

from . import utils, layout, shape, tensor, reduce, transform, nn, reference  # noqa: F401
# TVM's te-level topi API (te tensors in, te tensors out; symbolic shapes), as Relax's
# legalization and ``bb.emit_te(topi.add, x, y)`` use it
from . import broadcast, math, manipulation, reduction, nn_te  # noqa: F401,E402
from . import nn_nd  # noqa: F401,E402  (computes of the N-d / detection ops)
from . import image_resize  # noqa: F401,E402  (image.resize*, nn.upsampling*)
from . import scan, selection  # noqa: F401,E402  (cumsum, cumprod, topk)
from . import rearrange  # noqa: F401,E402  (nn.depth_to_space, nn.space_to_depth)
from . import lrn  # noqa: F401,E402  (nn.lrn)
from . import einsum  # noqa: F401,E402  (einsum)
from . import grid_sample  # noqa: F401,E402  (image.affine_grid, image.grid_sample)
from . import roi_align  # noqa: F401,E402  (vision.roi_align)
from . import multiclass_nms  # noqa: F401,E402  (vision.multiclass_nms)
from . import all_class_nms  # noqa: F401,E402  (vision.all_class_non_max_suppression)
from . import box_nms  # noqa: F401,E402  (vision.get_valid_counts, vision.non_max_suppression)
from . import space_batch  # noqa: F401,E402  (nn.space_to_batch_nd, nn.batch_to_space_nd)
from . import index_ops  # noqa: F401,E402  (one_hot, scatter_nd, trilu, sequence_mask...)
from . import linalg  # noqa: F401,E402  (the Cholesky / LU loop kernels)
from . import ctc  # noqa: F401,E402  (the CTC forward variables)
from .broadcast import (  # noqa: F401,E402
    add, subtract, multiply, divide, floor_divide, floor_mod, power, maximum, minimum, equal,
    not_equal, less, less_equal, greater, greater_equal, logical_and, logical_or, broadcast_to,
)
from .math import exp, log, sqrt, rsqrt, tanh, sigmoid, erf, abs, negative, cast  # noqa: F401,E402,A004
from .manipulation import (  # noqa: F401,E402
    transpose, reshape, expand_dims, squeeze, concatenate, split, strided_slice, take, repeat,
    where, full, arange, trilu,
)
from .reduction import sum, max, min, prod, mean, argmax, argmin  # noqa: F401,E402,A004
from .utils import (  # noqa: F401
    get_compute,
    get_reference,
    registered_computes,
    registered_references,
)
