"""tvm.relax.op: Relax operators, each defined once with its struct-info inference."""

from . import op_attrs
from .base import (
    StructInfoError, StructInfoTypeError, call_dps_packed, call_pure_packed, call_tir,
    infer_struct_info, null_value, register_op_rule, shape_of,
)
from .binary import *
from .unary import *
from .datatype import astype
from .manipulate import (
    broadcast_to, concat, expand_dims, flatten, permute_dims, repeat, reshape, split, squeeze,
)
from .index import strided_slice, take
from .linear_algebra import linear, matmul
from .statistical import max, mean, min, prod, std, sum, variance
from .closure import invoke_closure, invoke_pure_closure, make_closure
from .search import argmax, argmin, where
from .create import (
    arange, full, full_like, ones, ones_like, tril, triu, zeros, zeros_like,
)
from . import binary, unary, datatype, manipulate, index, linear_algebra, statistical, search
from . import closure, create, nn
from .scan import cumprod, cumsum
from . import scan
from . import image
from .shape_tensor import shape_to_tensor, tensor_to_shape
from .debug import assert_op, print  # noqa: A004 - TVM's name
from . import shape_tensor, debug
from .call_inplace import call_inplace_packed
from . import call_inplace
from .call_tir_inplace import call_tir_inplace
from .einsum import einsum
from . import einsum as _einsum_module  # noqa: F401
from . import builtin, memory, vm  # noqa: E402  (lowering ops: allocation, VM)
from .manipulate_extra import (
    bucketize, collapse_sum_like, collapse_sum_to, dynamic_strided_slice, ewise_fma, eye,
    eye_like, flip,
    gather_elements, gather_nd, hamming_window, index_put, index_tensor, log_add_exp,
    masked_fill, meshgrid, multinomial_from_uniform, one_hot, outer, scatter_elements,
    scatter_nd, slice_scatter, stack, tile, wrap_param,
)
from .vm import call_builtin_with_ctx
from .sorting import argsort, sort, topk
from .qdq import dequantize, quantize
from .set_ops import nonzero, unique
from . import manipulate_extra, sorting, qdq, set_ops  # noqa: E402
from .layout_transform import layout_transform  # noqa: E402
from .vdevice import to_vdevice  # noqa: E402  (copy to a virtual device)
from .stop_fusion import stop_fusion  # noqa: E402  (a fusion barrier)
