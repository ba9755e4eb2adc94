"""Conv2dToSparse / Conv2dToSparse2: rewrite ``nn.conv2d`` with a sparse weight into
``nn.sparse_conv2d`` on its BSR form (TVM v0.19's convert_sparse_conv2d.cc).

``Conv2dToSparse(weight_name, weight_shape, layout, kernel_size)`` (opt 4): each conv2d whose
weight is a variable named in ``weight_name`` takes three new variables ``<name>.data`` (float32,
the first 2 or 3 dims of its ``weight_shape``), ``<name>.indices`` and ``<name>.indptr`` (int32)
instead; the function's parameters become the old ones still used followed by the new ones
(``relay.data_dep_optimization.bsr_conv2d.convert`` supplies names, shapes and the BSR params).

``Conv2dToSparse2(layout, kernel_size, blocksize, sparsity_threshold)`` (opt 5): each conv2d in
``layout`` with stride 1, the given square kernel and a constant float32 weight is converted to
BSR blocks of ``blocksize`` here, and rewritten with the blocks as constants when the fraction of
zero entries reaches ``sparsity_threshold``. The weight matrix is (out channels, kh*kw*in
channels): OIHW flattened for NCHW, HWIO flattened and transposed for NHWC.

As in TVM, the conv's padding is not carried over: ``nn.sparse_conv2d`` computes a 1x1 conv or a
3x3 "same" conv. Unlike TVM, Conv2dToSparse2 leaves alone the convs that op cannot reproduce
(groups or dilation, other padding, a non-default kernel layout, channels not divisible by the
block, a 3x3 kernel in NCHW) instead of rewriting them wrongly.
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import TensorType
from ...transform.stats import record_stat
from ..analysis import free_vars
from ..analysis.sparse_conv2d import bsr_blocks
from ..expr import Call, Constant, Function, Var
from ..expr_functor import ExprMutator
from ..op.nn._bit_sparse import SparseConv2DAttrs
from ._pass_helpers import make_function_pass, register

__all__ = ["Conv2dToSparse", "Conv2dToSparse2", "conv2d_to_sparse"]

_KERNEL_LAYOUT = {"NCHW": "OIHW", "NHWC": "HWIO"}


def _check_layout(pass_name: str, layout, kernel_size) -> None:
    if layout not in _KERNEL_LAYOUT:
        raise ValueError(f"{pass_name}: layout must be 'NCHW' or 'NHWC', got {layout!r}")
    if kernel_size not in (1, 3):
        raise ValueError(f"{pass_name}: kernel_size must be 1 or 3, got {kernel_size!r}")
    if kernel_size == 3 and layout == "NCHW":
        raise ValueError(f"{pass_name}: nn.sparse_conv2d computes 3x3 kernels only in NHWC")


def _sparse_attrs(layout: str, kernel_size: int) -> SparseConv2DAttrs:
    return SparseConv2DAttrs(layout=layout, kernel_size=(kernel_size, kernel_size))


class _NamedWeights(ExprMutator):
    """Conv2dToSparse's rewrite: named conv weights become three fresh BSR variables."""

    def __init__(self, shapes: dict, layout: str, kernel_size: int):
        super().__init__()
        self.shapes = shapes
        self.layout = layout
        self.kernel_size = kernel_size
        self.conv = Op.get("nn.conv2d")
        self.sparse = Op.get("nn.sparse_conv2d")
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if call.op is not self.conv:
            return new
        weight = call.args[1]
        if type(weight) is not Var or weight.name_hint not in self.shapes:
            return new
        ws = self.shapes[weight.name_hint]
        name = weight.name_hint
        data = Var(f"{name}.data", TensorType(tuple(ws[:-2]), "float32"))
        indices = Var(f"{name}.indices", TensorType((ws[-2],), "int32"))
        indptr = Var(f"{name}.indptr", TensorType((ws[-1],), "int32"))
        self.count += 1
        return Call(self.sparse, [new.args[0], data, indices, indptr],
                    _sparse_attrs(self.layout, self.kernel_size))


def conv2d_to_sparse(func: Function, weight_name, weight_shape, layout: str,
                     kernel_size: int) -> Function:
    """``func`` with its named conv2d weights replaced by BSR variables (TVM's parameter order)."""
    names = [str(n) for n in weight_name]
    shapes = [[int(d) for d in s] for s in weight_shape]
    if len(names) != len(shapes):
        raise ValueError(f"Conv2dToSparse: {len(names)} weight names but {len(shapes)} shapes")
    for n, s in zip(names, shapes, strict=True):
        if len(s) not in (4, 5):
            raise ValueError(f"Conv2dToSparse: the BSR shape of {n!r} must list the data dims "
                             f"(2 or 3), the indices and the indptr sizes, got {s}")
    mutator = _NamedWeights(dict(zip(names, shapes, strict=True)), layout, kernel_size)
    body = mutator.visit(func.body)
    if mutator.count == 0:
        return func
    f0 = Function(func.params, body, func.ret_type, func.type_params, func.attrs, func.span)
    sparse_params = free_vars(f0)
    still_used = free_vars(Function(sparse_params, body))
    return Function(still_used + sparse_params, body, func.ret_type, func.type_params,
                    func.attrs, func.span)


@register("Conv2dToSparse")
def Conv2dToSparse(weight_name, weight_shape, layout: str, kernel_size: int):  # noqa: N802
    """Function pass (opt 4): named conv2d weights -> ``nn.sparse_conv2d`` on BSR variables.

    Parameters
    ----------
    weight_name : list of str
        Names of the weights to convert.
    weight_shape : list of list of int
        Their BSR shapes: data dims, then the sizes of indices and indptr.
    layout : str
        The data layout, "NCHW" or "NHWC".
    kernel_size : int
        The conv kernel size, 1 or 3.
    """
    _check_layout("Conv2dToSparse", layout, kernel_size)
    names, shapes = list(weight_name), list(weight_shape)

    def run(func, mod, ctx):
        return conv2d_to_sparse(func, names, shapes, layout, kernel_size)

    return make_function_pass(run, opt_level=4, name="Conv2dToSparse",
                              required=["DeadCodeElimination"])


class _FrozenWeights(ExprMutator):
    """Conv2dToSparse2's rewrite: constant conv weights sparse enough become BSR constants."""

    def __init__(self, layout: str, kernel_size: int, block, threshold: float):
        super().__init__()
        self.layout = layout
        self.kernel_size = kernel_size
        self.block_h, self.block_w = block
        self.threshold = threshold
        self.conv = Op.get("nn.conv2d")
        self.sparse = Op.get("nn.sparse_conv2d")
        self.count = 0

    def _eligible(self, call) -> bool:
        a = call.attrs
        k = self.kernel_size
        if (a.data_layout or "NCHW") != self.layout or \
                (a.kernel_layout or "OIHW") != _KERNEL_LAYOUT[self.layout]:
            return False
        if tuple(int(s) for s in a.strides)[0] != 1 or int(a.groups) != 1 or \
                any(int(d) != 1 for d in a.dilation):
            return False
        weight = call.args[1]
        if type(weight) is not Constant or weight.data.dtype != "float32":
            return False
        shape = weight.data.shape
        kh, kw = (shape[2], shape[3]) if self.layout == "NCHW" else (shape[0], shape[1])
        if (kh, kw) != (k, k):
            return False
        pad = [int(p) for p in a.padding]
        pad = pad * (4 // len(pad)) if len(pad) in (1, 2) else pad
        return all(p == (k - 1) // 2 for p in pad)

    def visit_call(self, call):
        new = super().visit_call(call)
        if call.op is not self.conv or not self._eligible(call):
            return new
        w = call.args[1].data.numpy()
        if self.layout == "NCHW":  # OIHW -> (O, I*H*W)
            matrix = w.reshape(w.shape[0], -1)
        else:  # HWIO -> (O, H*W*I)
            matrix = w.reshape(-1, w.shape[-1]).T
        rows, cols = matrix.shape
        if rows % self.block_h or cols % self.block_w:
            return new
        data, indices, indptr = bsr_blocks(matrix, self.block_h, self.block_w)
        if 1.0 - data.size / matrix.size < self.threshold:
            return new
        self.count += 1
        return Call(self.sparse, [new.args[0], Constant(data), Constant(indices),
                                  Constant(indptr)], _sparse_attrs(self.layout, self.kernel_size))


@register("Conv2dToSparse2")
def Conv2dToSparse2(layout: str, kernel_size: int, blocksize,  # noqa: N802 - TVM's name
                    sparsity_threshold: float):
    """Function pass (opt 5): constant conv2d weights -> ``nn.sparse_conv2d`` on BSR constants.

    Parameters
    ----------
    layout : str
        The data layout, "NCHW" or "NHWC".
    kernel_size : int
        The conv kernel size, 1 or 3.
    blocksize : tuple of int
        The BSR block (rows, columns).
    sparsity_threshold : float
        The smallest fraction of zero entries worth converting.
    """
    _check_layout("Conv2dToSparse2", layout, kernel_size)
    block = tuple(int(b) for b in blocksize)
    if len(block) != 2 or min(block) < 1:
        raise ValueError(f"Conv2dToSparse2: blocksize must be two positive ints, got "
                         f"{blocksize!r}")

    def run(func, mod, ctx):
        m = _FrozenWeights(layout, kernel_size, block, float(sparsity_threshold))
        out = m.visit(func)
        record_stat("sparse convolutions", m.count)
        return out

    return make_function_pass(run, opt_level=5, name="Conv2dToSparse2",
                              required=["DeadCodeElimination"])
