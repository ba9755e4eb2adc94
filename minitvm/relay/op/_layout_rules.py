"""``FInferCorrectLayout`` rules, as TVM v0.19 registers them: which layouts a call wants for its
inputs and which its outputs have, read by ConvertLayout / AlterOpLayout.

A rule is ``rule(attrs, new_in_layouts, old_in_layouts, old_in_types) -> (input layouts, output
layouts, new attrs)``. ``new_in_layouts`` is None on the first call (the program as it was) and a
list once a producer changed layout; a layout is a ``Layout`` or None (undefined: inference
failed, the call stays in its old layouts). ``Layout("")`` is the defined scalar layout.
"""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.type import TensorType, TupleType
from .layout import Layout


class _ScalarLayout(Layout):
    """The defined layout of a rank-0 operand (TVM's ``Layout(Array<IterVar>())``); an empty
    ``Layout("")`` is *undefined*, as in TVM."""

    __slots__ = ()

    def __init__(self):
        super().__init__("")


SCALAR = _ScalarLayout()


def is_defined(layout) -> bool:
    """A usable layout: the scalar layout or one with axes."""
    return isinstance(layout, _ScalarLayout) or (isinstance(layout, Layout) and layout.defined)


def sub_layout(layout: Layout, pos: int, length: int) -> Layout:
    """``Layout::SubLayout``: ``length`` axes from ``pos`` (the scalar layout for 0)."""
    if length <= 0:
        return SCALAR
    axes = tuple(layout.axes[pos:pos + length])
    if all(a.is_primal or a.to_primal() in axes for a in axes):
        return Layout("".join(str(a) for a in axes))
    out = Layout.__new__(Layout)  # a split axis without its primal (TVM's SubLayout allows it)
    out.axes, out.name = axes, "".join(str(a) for a in axes)
    return out


def expand_primal(src: Layout, dst: Layout) -> Layout:
    """``Layout::ExpandPrimal``: prefix ``src`` with ``dst``'s primal axes it lacks."""
    missing = "".join(a.name for a in dst.axes if a.is_primal and a.name not in src)
    return Layout(missing + ("" if not src.axes else src.name))


def _shape(t) -> tuple:
    return tuple(t.shape) if isinstance(t, TensorType) else ()


def elemwise_arbitrary_layout(attrs, new_in, old_in, types):
    """Any input layout goes through unchanged (TVM's ElemwiseArbitraryLayout)."""
    if new_in is not None:
        ret = new_in[0]
    else:
        ret = next((lay for lay in old_in if lay is not None), None)
    return [ret] * len(old_in), [ret], attrs


def _isomorphic(lhs: Layout, rhs: Layout) -> bool:
    if len(lhs.axes) != len(rhs.axes):
        return False
    to, back = {}, {}
    for a, b in zip(lhs.axes, rhs.axes):
        if a.is_primal != b.is_primal:
            return False
        if to.setdefault(a.name, b.name) != b.name or back.setdefault(b.name, a.name) != a.name:
            return False
        if not a.is_primal and a.factor != b.factor:
            return False
    return True


def try_transform_like(old: Layout, ref_old: Layout, ref_new: Layout) -> Layout | None:
    """Rename ``ref_new`` so it changes ``old`` the way it changes ``ref_old`` (TVM's
    TryTransformLike); None when ``old`` is not a trailing look-alike of ``ref_old``."""
    large, small = (ref_old, old) if len(ref_old) > len(old) else (old, ref_old)
    tail = sub_layout(large, len(large) - len(small), len(small))
    rest = sub_layout(large, 0, len(large) - len(small))
    for a in rest.axes:
        if a.to_primal() in tail or a.to_subordinate() in tail:
            return None
    if not _isomorphic(tail, small):
        return None
    if not old.axes:
        return old
    mapping: dict[str, str] = {}
    used: set[str] = set()
    for a_ref, a in zip(reversed(ref_old.axes), reversed(old.axes)):
        mapping[a_ref.to_primal()] = a.to_primal()
        used.add(a.to_primal())
    for a_ref in reversed(ref_old.axes):
        name = a_ref.to_primal()
        if name not in mapping:
            pick = name if name not in used else next(
                chr(c) for c in range(ord("A"), ord("Z") + 1) if chr(c) not in used)
            mapping[name] = pick
            used.add(pick)
    out = []
    for ch in ref_new.name:
        if ch.isupper():
            out.append(mapping[ch])
        elif ch.islower():
            out.append(mapping[ch.upper()].lower())
        else:
            out.append(ch)
    return Layout("".join(out))


def adjust_subordinate_factors(src: Layout, old: Layout, old_shape) -> Layout:
    """``src`` with the factor of each split axis set to 1 where ``old`` has extent 1 there
    (a broadcast), unless ``old`` itself splits that axis (its extent-1 block is real)."""
    parts = []
    for a in src.axes:
        if not a.is_primal:
            idx = old.index_of(a.to_primal())
            if idx == -1 or (old_shape[idx] == 1 and old.index_of(a.name) == -1):
                parts.append("1")
            else:
                parts.append(str(a.factor))
        parts.append(a.name)
    return Layout("".join(parts)) if parts else SCALAR


def binary_broadcast_layout(attrs, new_in, old_in, types):
    """TVM's BinaryBroadcastLayout: infer an undefined operand from the other's trailing axes;
    after a rewrite, change the smaller operand the way the larger one changed."""
    shapes = [_shape(t) for t in types]
    old_large = 0 if len(shapes[0]) >= len(shapes[1]) else 1
    layouts = list(old_in)
    fail = ([None, None], [None], attrs)
    if layouts[0] is None and layouts[1] is None:
        out = fail
    elif layouts[0] is None or layouts[1] is None:
        d = 0 if layouts[0] is not None else 1
        u = 1 - d
        if len(shapes[d]) >= len(shapes[u]):
            layouts[u] = sub_layout(layouts[d], len(shapes[d]) - len(shapes[u]), len(shapes[u]))
            out = (list(layouts), [layouts[d]], attrs)
        else:
            out = fail
    else:
        out = (list(layouts), [layouts[old_large]], attrs)
    if new_in is None:
        return out
    if out is fail:
        return fail
    ret = new_in[old_large]
    large = 0 if new_in[0].ndim_primal() >= new_in[1].ndim_primal() else 1
    small = 1 - large
    tgt = try_transform_like(layouts[small], layouts[large], new_in[large])
    if tgt is None:
        return fail
    layouts[small] = adjust_subordinate_factors(tgt, layouts[small], shapes[small])
    layouts[large] = new_in[large]
    return layouts, [ret], attrs


def conv_layout(attrs, new_in, old_in, types):
    """The attrs fix every layout of a convolution."""
    data = Layout(attrs.data_layout)
    out = Layout(attrs.out_layout) if getattr(attrs, "out_layout", "") else data
    return [data, Layout(attrs.kernel_layout)] + [SCALAR] * (len(old_in) - 2), [out], attrs


def pool_layout(attrs, new_in, old_in, types):
    """A pool with an explicit ``out_layout`` keeps its layouts; otherwise it takes on the
    layout its input arrives in (its ``layout`` attribute rewritten)."""
    if not getattr(attrs, "out_layout", "") and new_in is not None and new_in[0] is not None:
        attrs = attrs.with_fields(layout=new_in[0].name)
    return [Layout(attrs.layout)], [Layout(attrs.layout)], attrs


def concatenate_layout(attrs, new_in, old_in, types):
    """Same-layout inputs concatenate in that layout along the renamed axis."""
    fields = types[0].fields if isinstance(types[0], TupleType) else types
    rank = len(_shape(fields[0]))
    axis = attrs.axis + rank if attrs.axis < 0 else attrs.axis
    if new_in is not None and old_in[0] is not None and all(n == new_in[0] for n in new_in):
        ret = new_in[0]
        attrs = attrs.with_fields(axis=ret.index_of(old_in[0][axis]))
        return [ret] * len(old_in), [ret], attrs
    ret = next((lay for lay in old_in if lay is not None), None)
    if ret is None or len(ret) <= axis or not ret.axes[axis].is_primal:
        return [None], [None], attrs
    return [ret] * len(old_in), [ret], attrs


def transpose_layout(attrs, new_in, old_in, types):
    """The permutation is renamed through the new layout; the output layout follows it."""
    old = old_in[0]
    if old is None:
        return [None], [None], attrs
    axes = list(attrs.axes) if attrs.axes else list(range(len(old) - 1, -1, -1))
    axes = [a + len(old) if a < 0 else a for a in axes]
    in_layout = None
    if new_in is not None and new_in[0] is not None:
        new = new_in[0]
        new_axes = [new.index_of(old[a]) for a in axes]
        if -1 not in new_axes and len(new_axes) == len(new):
            axes, in_layout = new_axes, new
    if in_layout is None:
        in_layout = old
    attrs = attrs.with_fields(axes=tuple(axes))
    try:
        out = Layout("".join(in_layout.axes[a].name for a in axes))
    except ValueError:
        return [None], [None], attrs
    if any(not a.is_primal for a in in_layout.axes):
        return [None], [None], attrs
    return [in_layout], [out], attrs


def squeeze_layout(attrs, new_in, old_in, types):
    """Squeezed axes are renamed through the new layout; the output keeps the other axes."""
    inp = new_in[0] if new_in is not None else old_in[0]
    if inp is None:
        return [None], [None], attrs
    shape = _shape(types[0])
    axis = list(attrs.axis) if attrs.axis is not None else [
        i for i, d in enumerate(shape) if d == 1]
    if new_in is not None and old_in[0] is not None:
        axis = [new_in[0].index_of(old_in[0][a]) for a in axis]
        attrs = attrs.with_fields(axis=tuple(axis))
    drop = {a + len(inp) if a < 0 else a for a in axis}
    kept = "".join(str(a) for i, a in enumerate(inp.axes) if i not in drop)
    out = Layout(kept) if kept else SCALAR
    return [inp], [out], attrs


def split_layout(attrs, new_in, old_in, types):
    """The split axis is renamed; indices are divided by the new layout's factor (the old
    layout is kept when they do not divide)."""
    rank = len(_shape(types[0]))
    axis = attrs.axis + rank if attrs.axis < 0 else attrs.axis
    ios = attrs.indices_or_sections
    size = ios if isinstance(ios, int) else len(ios) + 1
    ret = None
    if new_in is not None and old_in[0] is not None:
        dim = old_in[0][axis]
        new = new_in[0]
        attrs = attrs.with_fields(axis=new.index_of(dim))
        factor = new.factor_of(dim)
        divisible = True
        if factor > 1 and not isinstance(ios, int):
            divisible = all(v % factor == 0 for v in ios)
            if divisible:
                attrs = attrs.with_fields(indices_or_sections=tuple(v // factor for v in ios))
        ret = new if divisible else old_in[0]
    elif old_in[0] is not None:
        ret = old_in[0]
    return [ret], [ret] * size, attrs


def pad_layout(attrs, new_in, old_in, types):
    """Pad widths follow the new layout; a split axis must not be padded."""
    ret = old_in[0]
    if new_in is not None and old_in[0] is not None and new_in[0] is not None:
        widths = dict(zip((a.name for a in old_in[0].axes), attrs.pad_width))
        new_widths, ok = [], True
        for a in new_in[0].axes:
            if a.is_primal and a.name in widths:
                new_widths.append(widths[a.name])
            else:
                w = widths.get(a.to_primal())
                if w is None:
                    raise ValueError(f"nn.pad: axis {a.to_primal()} missing in {old_in[0].name}")
                new_widths.append(w)
                ok = ok and all(isinstance(v, int) and v == 0 for v in w)
        if ok:
            ret = new_in[0]
            attrs = attrs.with_fields(pad_width=tuple(tuple(w) for w in new_widths))
    return [ret, SCALAR], [ret], attrs


def reduce_layout(attrs, new_in, old_in, types):
    """Reduced axes are renamed through the new layout; a split reduced axis reduces both of
    its parts (TVM's ReduceInferCorrectLayout)."""
    rank = len(_shape(types[0]))
    exclude = bool(getattr(attrs, "exclude", False))
    keep = bool(getattr(attrs, "keepdims", False))
    named = range(rank) if attrs.axis is None else [a + rank if a < 0 else a for a in attrs.axis]
    if attrs.axis is None:  # TVM's GetReduceAxes: no axis reduces every axis, exclude or not
        r_axes = list(range(rank))
    else:
        r_axes = [i for i in range(rank) if i not in set(named)] if exclude else sorted(set(named))

    def infer(layout):
        old_r = {old_in[0][a] for a in r_axes}
        new_axes, ins, outs = [], "", ""

        def push(dim, i):
            if (dim in old_r) != exclude:
                new_axes.append(i)
                return True
            return False

        for i, a in enumerate(layout.axes):
            if a.is_primal:
                push(a.name, i)
                ins += a.name
                if a.name not in old_r or keep:
                    outs += a.name
            else:
                packed = f"{a.factor}{a.name}"
                ins += packed
                if push(a.to_primal(), i):
                    if exclude:
                        outs += packed
                    elif keep:
                        outs += "1" + a.name
                else:
                    outs += packed
        return Layout(ins), Layout(outs), new_axes

    if new_in is not None and r_axes:
        inferred_in, inferred_out, axes = infer(new_in[0])
        attrs = attrs.with_fields(axis=tuple(axes))
    elif old_in[0] is not None:
        inferred_in, inferred_out, _ = infer(old_in[0])
    else:
        inferred_in = inferred_out = None
    return [inferred_in] * len(old_in), [inferred_out], attrs


def deformable_conv_layout(attrs, new_in, old_in, types):
    """Data and offsets in the data layout, the kernel in the kernel layout."""
    data = Layout(attrs.data_layout)
    out = Layout(attrs.out_layout) if getattr(attrs, "out_layout", "") else data
    return [data, data, Layout(attrs.kernel_layout)], [out], attrs


def strided_slice_layout(attrs, new_in, old_in, types):
    """Begin/end/strides are reordered for a permuted layout, or divided by the factor of a
    split axis (TVM's StridedSliceInferCorrectLayout)."""
    layout = old_in[0]
    fail = ([None], [None], attrs)
    if layout is None or new_in is None:
        return [layout], [layout], attrs
    new = new_in[0]
    shape = _shape(types[0])
    size_mode = attrs.slice_mode == "size"
    strides = [1 if size_mode else s for s in attrs.strides]
    begin, end = list(attrs.begin), list(attrs.end)
    old_name, new_name = layout.name, new.name
    if not old_name.startswith(new_name) and not new_name.startswith(old_name):
        if len(old_name) != len(new_name):
            return fail
        if attrs.axes is not None:
            axes = [new.index_of(layout[a]) for a in attrs.axes]
            return [new], [new], attrs.with_fields(axes=tuple(axes), strides=tuple(strides))
        nb, ne, ns = [], [], []
        for i in range(len(new)):
            idx = layout.index_of(new[i])
            if idx == -1:
                return fail
            ns.append(strides[idx] if idx < len(strides) else 1)
            nb.append(begin[idx] if idx < len(begin) else 0)
            ne.append(end[idx] if idx < len(end) else shape[idx])
        return [new], [new], attrs.with_fields(begin=tuple(nb), end=tuple(ne), strides=tuple(ns))
    if len(old_name) < len(new_name):
        nb, ne = [], []
        if attrs.axes is not None:
            axes = []
            for i, a in enumerate(attrs.axes):
                axes.append(new.index_of(layout[a]))
                factor = new.factor_of(layout[a])
                if factor == -1:
                    nb.append(begin[i])
                    ne.append(end[i])
                    continue
                if i < len(strides) and strides[i] != 1:
                    return fail
                if begin[i] % factor or end[i] % factor:
                    return fail
                nb.append(begin[i] // factor)
                ne.append(end[i] // factor)
            attrs = attrs.with_fields(axes=tuple(axes))
        else:
            for i in range(len(begin)):
                factor = new.factor_of(layout[i])
                if factor == -1:
                    nb.append(begin[i])
                    ne.append(end[i])
                    continue
                if i < len(strides) and strides[i] != 1:
                    return fail
                bg = 0 if begin[i] is None else begin[i]
                if i >= len(end) or end[i] is None:  # None: to the end of the axis (TVM)
                    ed = shape[i]
                elif size_mode:
                    ed = shape[i] if end[i] < 0 else bg + end[i]
                else:
                    ed = end[i]
                if bg % factor or ed % factor:
                    return fail
                nb.append(bg // factor)
                ne.append(ed // factor)
        return [new], [new], attrs.with_fields(begin=tuple(nb), end=tuple(ne))
    return [layout], [layout], attrs


def _norm_rule(n_in: int, n_out: int):
    """batch/layer/instance norm: the data follows its producer with ``axis`` renamed; the
    per-channel operands and outputs are 1-D ("C")."""

    def rule(attrs, new_in, old_in, types):
        rank = len(_shape(types[0]))
        axis = attrs.axis + rank if attrs.axis < 0 else attrs.axis
        ret = None
        if new_in is not None and old_in[0] is not None:
            ret = new_in[0]
            attrs = attrs.with_fields(axis=ret.index_of(old_in[0][axis]))
        elif old_in[0] is not None:
            ret = old_in[0]
        c = Layout("C")
        return [ret] + [c] * (n_in - 1), [ret] + [c] * (n_out - 1), attrs

    return rule


def bias_add_layout(attrs, new_in, old_in, types):
    """nn.bias_add follows its data's new layout with ``axis`` renamed, the bias staying 1-D
    ("C"): what TVM reaches by running CanonicalizeOps before ConvertLayout (bias_add as
    expand_dims + add, which follows the new layout). Not into a layout that splits that axis:
    the 1-D bias would no longer match it."""
    rank = len(_shape(types[0]))
    axis = attrs.axis + rank if attrs.axis < 0 else attrs.axis
    old = old_in[0] if old_in else None
    if new_in is not None and new_in[0] is not None and old is not None:
        name, new = old[axis], new_in[0]
        if name not in new or new.factor_of(name) != -1:
            return [None] * len(old_in), [None], attrs
        return [new, Layout("C")], [new], attrs.with_fields(axis=new.index_of(name))
    return [old, Layout("C")], [old], attrs


def resize_layout(attrs, new_in, old_in, types):
    """An image op follows a new input layout of the same rank when its ``layout`` was the old
    one (TVM's ResizeInferCorrectLayout)."""
    if new_in is not None:
        raw, new, old = Layout(attrs.layout), new_in[0], old_in[0]
        if new != old and raw == old and len(new) == len(old):
            attrs = attrs.with_fields(layout=new.name)
    lay = Layout(attrs.layout)
    return [lay] + [SCALAR] * (len(old_in) - 1), [lay], attrs


def upsampling_layout(attrs, new_in, old_in, types):
    """nn.upsampling(3d) follows a new input layout that keeps its spatial axes where they
    were and does not split them (TVM's UpsamplingInferCorrectLayout)."""
    if new_in is not None and new_in[0] is not None:
        raw, new = Layout(attrs.layout), new_in[0]
        spatial = [a for a in "DHW" if a in raw]
        if all(new.index_of(a) == raw.index_of(a) and a.lower() not in new for a in spatial):
            attrs = attrs.with_fields(layout=new.name)
    return [Layout(attrs.layout)], [Layout(attrs.layout)], attrs


def roi_layout(attrs, new_in, old_in, types):
    """roi_align / roi_pool: the attrs fix the data layout; the rois stay as they are."""
    return [Layout(attrs.layout), SCALAR], [Layout(attrs.layout)], attrs


def l2_normalize_layout(attrs, new_in, old_in, types):
    """The normalized axes are renamed through the new layout (order kept)."""
    if new_in is not None and old_in[0] is not None:
        rank = len(old_in[0])
        axes = [old_in[0][a + rank if a < 0 else a] for a in attrs.axis]
        attrs = attrs.with_fields(axis=tuple(new_in[0].index_of(a) for a in axes))
        return [new_in[0]], [new_in[0]], attrs
    return [old_in[0]], [old_in[0]], attrs


def slice_like_layout(attrs, new_in, old_in, types):
    """slice_like's axes are renamed when both operands arrive in one new layout."""
    if new_in is not None and old_in[0] is not None and old_in[1] is not None and \
            new_in[0] == new_in[1] and old_in[0] == old_in[1] and attrs.axes:
        new_axes = [new_in[0].index_of(old_in[0][a]) for a in attrs.axes]
        if -1 not in new_axes:
            return [new_in[0]] * 2, [new_in[0]], attrs.with_fields(axes=tuple(new_axes))
    return [old_in[0], old_in[1]], [old_in[1]], attrs


def topk_layout(attrs, new_in, old_in, types):
    """topk follows its input's layout with ``axis`` renamed; every output in that layout."""
    rank = len(_shape(types[0]))
    axis = attrs.axis + rank if attrs.axis < 0 else attrs.axis
    ret = old_in[0]
    if new_in is not None and old_in[0] is not None:
        ret = new_in[0]
        attrs = attrs.with_fields(axis=ret.index_of(old_in[0][axis]))
    n_out = 2 if attrs.ret_type == "both" else 1
    return [ret], [ret] * n_out, attrs


def _head(layouts, n: int):
    return None if layouts is None else list(layouts[:n])


def _channel_tail(rule, n_extra):
    """A qnn op: ``rule`` for its data operands, the channel layout "C" for its
    ``n_extra`` scale / zero-point operands (TVM's qnn layout rules)."""

    def qnn_rule(attrs, new_in, old_in, types):
        n_data = len(old_in) - n_extra(types)
        ins, outs, new_attrs = rule(attrs, _head(new_in, n_data), _head(old_in, n_data), types)
        return list(ins) + [Layout("C")] * (len(old_in) - len(ins)), outs, new_attrs

    return qnn_rule


def requantize_layout(attrs, new_in, old_in, types):
    """qnn.requantize: the quantization ``axis`` is renamed through the new (primal) layout."""
    c = Layout("C")
    if new_in is not None:
        rank = len(_shape(types[0]))
        axis = rank - 1 if attrs.axis == -1 else attrs.axis
        old_dim = old_in[0][axis]
        primal = [a.name for a in new_in[0].axes if a.is_primal]
        new_axis = next((i for i, a in enumerate(primal) if a == old_dim), attrs.axis)
        new = Layout("".join(primal))
        return [new] + [c] * 4, [new], attrs.with_fields(axis=new_axis)
    if old_in[0] is not None:
        return [old_in[0]] + [c] * 4, [old_in[0]], attrs
    return [None] * 5, [None], attrs


def _qnn_concat_rule(attrs, new_in, old_in, types):
    n = len(types[0].fields)
    ins, outs, new_attrs = concatenate_layout(attrs, _head(new_in, n), _head(old_in, n),
                                              types[:1])
    if len(ins) == 1 and ins[0] is None:
        ins = [None] * n
    return list(ins) + [Layout("C")] * (2 * n + 2), outs, new_attrs


_BUILTIN = {
    "nn.conv2d": conv_layout, "nn.conv2d_transpose": conv_layout,
    "nn.contrib_conv2d_NCHWc": conv_layout, "nn.conv3d": conv_layout,
    "nn.contrib_conv2d_gemm_without_weight_transform": conv_layout,
    "nn.conv1d_transpose": conv_layout, "nn.conv3d_transpose": conv_layout,
    "nn.contrib_depthwise_conv2d_NCHWc": conv_layout, "nn.deformable_conv2d": deformable_conv_layout,
    "concatenate": concatenate_layout, "transpose": transpose_layout,
    "squeeze": squeeze_layout, "split": split_layout, "nn.pad": pad_layout,
    "strided_slice": strided_slice_layout,
}
_BUILTIN["nn.bias_add"] = bias_add_layout
_BUILTIN["nn.batch_norm"] = _norm_rule(5, 3)
_BUILTIN["nn.layer_norm"] = _norm_rule(3, 1)
_BUILTIN["nn.instance_norm"] = _norm_rule(3, 1)
for _name in ("image.resize1d", "image.resize2d", "image.resize3d"):
    _BUILTIN[_name] = resize_layout
for _name in ("nn.upsampling", "nn.upsampling3d"):
    _BUILTIN[_name] = upsampling_layout
for _name in ("vision.roi_align", "vision.roi_pool"):
    _BUILTIN[_name] = roi_layout
_BUILTIN["topk"] = topk_layout
_BUILTIN["slice_like"] = slice_like_layout
_BUILTIN["nn.l2_normalize"] = l2_normalize_layout
_BUILTIN["qnn.conv2d"] = _channel_tail(conv_layout, lambda types: 4)
_BUILTIN["qnn.conv2d_transpose"] = _channel_tail(conv_layout, lambda types: 4)
_BUILTIN["qnn.requantize"] = requantize_layout
_BUILTIN["qnn.concatenate"] = _qnn_concat_rule
for _name in ("qnn.add", "qnn.mul", "qnn.subtract"):
    _BUILTIN[_name] = _channel_tail(binary_broadcast_layout, lambda types: 6)
for _name in ("sum", "mean", "max", "min", "prod", "argmax", "argmin", "variance", "std",
              "all"):
    _BUILTIN[_name] = reduce_layout
for _dim in ("1d", "2d", "3d"):
    for _kind in ("max_pool", "avg_pool", "global_max_pool", "global_avg_pool",
                  "adaptive_max_pool", "adaptive_avg_pool"):
        _BUILTIN[f"nn.{_kind}{_dim}"] = pool_layout


# broadcast-pattern ops whose attributes or second operand spell out a shape: no rule
_SHAPED = frozenset(("broadcast_to", "expand_dims", "broadcast_to_like", "collapse_sum_like",
                     "collapse_sum_to", "reshape_like"))
_AXIS_KEYS = frozenset(("axis", "axes", "shape", "newshape", "reps", "repeats"))


def _adapt3(rule):
    """A rule written as ``rule(attrs, in_layouts, in_types) -> (ins, outs[, attrs])``."""

    def adapted(attrs, new_in, old_in, types):
        res = rule(attrs, list(new_in if new_in is not None else old_in), list(types))
        return res if len(res) == 3 else (res[0], res[1], attrs)

    return adapted


def rule_of(op):
    """The FInferCorrectLayout rule of ``op`` (an op attribute, TVM's built-in rule, or the
    elementwise / binary-broadcast rule its pattern implies); None when it has none."""
    if not isinstance(op, Op):
        return None
    rule = op.get_attr("FInferCorrectLayout")
    if rule is not None:
        import inspect

        try:
            n = len(inspect.signature(rule).parameters)
        except (TypeError, ValueError):
            n = 4
        return _adapt3(rule) if n == 3 else rule
    if op.name in _BUILTIN:
        return _BUILTIN[op.name]
    if op.name in _SHAPED or op.name.startswith(("qnn.", "dyn.")):
        return None
    pattern = op.get_attr("TOpPattern")
    if pattern == OpPattern.ELEMWISE:
        return _pattern_rule(elemwise_arbitrary_layout, 1)
    if pattern == OpPattern.BROADCAST:
        return _pattern_rule(binary_broadcast_layout, 2)
    return None


def _pattern_rule(rule, n_args: int):
    def checked(attrs, new_in, old_in, types):
        keys = set(attrs.keys()) if attrs is not None and hasattr(attrs, "keys") else set()
        if len(old_in) != n_args or keys & _AXIS_KEYS or not all(
                isinstance(t, TensorType) for t in types):
            return [None] * len(old_in), [None], attrs
        return rule(attrs, new_in, old_in, types)

    return checked
