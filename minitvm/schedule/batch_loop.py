"""A symbolic batch as a loop over images around the static kernel of one image.

A model imported with a dynamic batch axis (ONNX ``dynamic_axes``, ``torch.export`` ``Dim``)
reaches the schedules with every activation's leading dimension symbolic. Most fast schedules
(Winograd, channel-lane and depthwise convs, pooling rows, the softmax row kernel) want static
shapes, so such a function fell back to the symbolic im2col GEMM and generic loop nests: an ONNX
ResNet-18 with a dynamic batch ran 1.20x ONNX Runtime at batch 1, where the same model with a
static batch runs under it.

When every image is computed from that image alone, the function is the same kernel per image:
``per_image`` writes the function for one image (the batch variable replaced by 1, so the
static schedules apply), and ``around_images`` runs the optimized result once per image, every
buffer of a batched parameter moved by that image's offset (``elem_offset``: the views the
schedules derive from a parameter share its data pointer, so they all move with it).

The image loop is a parallel loop: with several threads the images spread over the pool (each
image's temporaries are allocated inside the loop body, so on its own thread's stack or heap,
and its kernel's own parallel loops run on that thread), and with one thread the loop body
runs as the outlined chunk function, whose buffer pointers are ``noalias``: an SE block's
per-image scale loop ran 1.4x faster there than inline in the kernel (MobileNetV3-small, batch 4).
The image loop is an ``INSTANCE_LOOP``: the code generator compiles its body once, and where the
image's kernel has parallel loops of its own, those run on the pool when the image loop runs on
one thread (a batch of one); its symbolic extent does not keep the kernel from the light LLVM
pipelines the static kernel gets. (A serial twin of the image loop for that case, chosen at run
time, compiled every such kernel twice: EfficientNet-B0's kernels took 1.35x the CPU time to
compile, for the same run-time speed.)

Applies to functions where one variable ``n`` is the leading dimension of some parameter of four
or more dimensions, or of three with ``MIN_IMAGE_ROWS`` rows or more (images, not GEMM rows: one
GEMM over ``n`` rows beats ``n`` one-row ones),
every buffer either has ``n`` as its leading dimension and static other dimensions or has static
dimensions only, and every block reads and writes batched buffers only at its own image (index
0 is the block's batch axis, which nothing else reads).

A leading dimension ``n * k`` (``k`` a constant) is ``k`` rows an image: a dilated conv's
image-major dilation phases (``topi.dilated_phases``: Relax's LegalizeOps folds an image's
``dh * dw`` phases into the batch) are a conv of batch ``n * k``, whose kernel for one image is
the static conv of batch ``k`` (Winograd's, as Relay's static build gets). A block's batch axis
then ranges over ``n * k`` and indexes only buffers of that leading dimension.
"""

from __future__ import annotations

from ..codegen.llvm.stmt import INSTANCE_LOOP
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import Buffer
from ..tir.function import PrimFunc
from ..tir.stmt_functor import (
    expr_children,
    post_order,
    transform_expr,
    transform_stmt,
    walk_stmts,
)
from .common import const_int
from .narrow_index import narrow_indices

MIN_IMAGE_DIMS = 4
# a 3-dim (n, rows, features) parameter is n images when each has this many rows (ViT's
# (n, 197, 192) tokens: one GEMM of 197 rows per image ran as fast as one of 788 at batch 4,
# and faster than the symbolic GEMM); fewer rows stay one GEMM over n * rows
MIN_IMAGE_ROWS = 64


def _buffers(func: PrimFunc) -> list[Buffer]:
    """Every buffer the function declares: parameters, then blocks' allocations."""
    out = list(func.buffer_map.values())
    for s in walk_stmts(func.body):
        if isinstance(s, S.Block):
            out.extend(s.alloc_buffers)
    return out


def _is_var(e, v) -> bool:
    return isinstance(e, E.Var) and e is v


def rows_per_image(d, n) -> int | None:
    """``k`` when dimension ``d`` is ``n * k`` for a constant ``k >= 1`` (``n`` itself: 1), else
    None."""
    if _is_var(d, n):
        return 1
    if isinstance(d, E.Mul):
        for v, c in ((d.a, d.b), (d.b, d.a)):
            k = const_int(c)
            if _is_var(v, n) and k is not None and k >= 1:
                return k
    return None


def _lead_var(d):
    """The variable ``n`` of a leading dimension ``n`` or ``n * k``, or None."""
    if isinstance(d, E.Var):
        return d
    if isinstance(d, E.Mul):
        v = d.a if isinstance(d.a, E.Var) else d.b
        return v if isinstance(v, E.Var) and rows_per_image(d, v) else None
    return None


def batch_var(func: PrimFunc):
    """The symbolic batch variable of ``func`` (see the module docstring), or None."""
    lead = [b.shape[0] for b in func.buffer_map.values() if len(b.shape) >= MIN_IMAGE_DIMS or (
        len(b.shape) == MIN_IMAGE_DIMS - 1 and (const_int(b.shape[1]) or 0) >= MIN_IMAGE_ROWS)]
    n = next((v for v in map(_lead_var, lead) if v is not None), None)
    if n is None:
        return None
    for b in _buffers(func):
        dims = b.shape[1:] if _batched(b, n) else b.shape
        if any(const_int(d) is None for d in dims) or b.strides or \
                const_int(b.elem_offset) != 0:
            return None
    return n


def _batched(b: Buffer, n) -> bool:
    return bool(b.shape) and rows_per_image(b.shape[0], n) is not None


def separable(func: PrimFunc, n) -> bool:
    """Does every block of ``func`` compute each image from that image alone? A block that
    writes a parameter without a batch axis (an output of the function the same for every
    image, fused beside the batched work: a ``split`` of a static weight) does not: inside the
    image loop it would run once per image and, at a batch of 0, never (its output then held
    whatever its memory held; Relax pass-sequence fuzzer, seed 600945)."""
    static_params = {id(b.data) for b in func.buffer_map.values() if not _batched(b, n)}
    for s in walk_stmts(func.body):
        if isinstance(s, S.Block) and s.match_buffers:
            return False
        if not isinstance(s, S.BlockRealize) or not s.block.iter_vars:
            continue  # (the root block holds the others)
        blk = s.block
        # the batch axis: its variable -> rows an image (``n * k`` rows in all)
        images = {id(iv.var): rows_per_image(iv.dom.extent, n) for iv in blk.iter_vars
                  if iv.iter_type == E.IterVar.DataPar and rows_per_image(iv.dom.extent, n)}
        if len(images) > 1:
            return False  # (two batch axes: images paired with images)
        stmts = [blk.body] + ([blk.init] if blk.init is not None else [])
        for root in stmts:
            for st in walk_stmts(root):
                if isinstance(st, (S.Block, S.BlockRealize)):
                    return False  # (nested blocks: not LegalizeOps' form)
                if isinstance(st, S.BufferStore) and (
                        id(st.buffer.data) in static_params or
                        not _own_image(st.buffer, st.indices, images, n)):
                    return False
                exprs = [st.value] if isinstance(st, S.BufferStore) else \
                    [getattr(st, "condition", None)] if isinstance(st, S.IfThenElse) else []
                for e in exprs:
                    if e is not None and not _expr_own_image(e, images, n):
                        return False
        if any(id(iv.var) not in images and _mentions(iv.dom.extent, {id(n)})
               for iv in blk.iter_vars):
            return False  # (a reduction over the batch)
    # nothing outside the blocks may store
    return all(not isinstance(st, S.BufferStore) for st in _outside_blocks(func.body))


def _outside_blocks(root):
    stack = [root]
    while stack:
        s = stack.pop()
        if isinstance(s, S.BlockRealize) and s.block.iter_vars:
            continue
        yield s
        if isinstance(s, S.SeqStmt):
            stack.extend(s.seq)
        elif isinstance(s, S.BlockRealize):
            stack.append(s.block)
        elif isinstance(s, S.Block):
            stack.extend(x for x in (s.init, s.body) if x is not None)
        elif getattr(s, "body", None) is not None:
            stack.append(s.body)


def _mentions(e, ids: set) -> bool:
    return any(isinstance(x, E.Var) and id(x) in ids for x in post_order(e))


def _own_image(buf: Buffer, indices, images: dict, n) -> bool:
    """An access to ``buf`` at ``indices`` stays within the block's image: a batched buffer at
    the image axis (of as many rows an image as the buffer has) and at it only, any other
    buffer nowhere near it."""
    near = set(images) | {id(n)}
    if _batched(buf, n):
        first = indices[0] if indices else None
        return isinstance(first, E.Var) and \
            images.get(id(first)) == rows_per_image(buf.shape[0], n) and \
            not any(_mentions(i, near) for i in indices[1:])
    return not any(_mentions(i, near) for i in indices)


def _expr_own_image(e, images: dict, n) -> bool:
    """Every load in ``e`` stays within its image, and the image axis and ``n`` are read
    nowhere but as a batched load's first index (a load in another load's index is checked as
    a load of its own: a gather's index read from the image's indices). One walk, each shared
    node once: rewriting ``e`` with its loads dropped and walking the rest took two passes and
    a copy of every node, 1 s of the 100,000-node chain's ``separable``."""
    near = set(images) | {id(n)}
    seen: set[int] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, E.BufferLoad):
            indices = list(x.indices)
            if _batched(x.buffer, n):  # the image axis first (as ``_own_image``)
                first = indices.pop(0) if indices else None
                if not (isinstance(first, E.Var) and images.get(id(first)) ==
                        rows_per_image(x.buffer.shape[0], n)):
                    return False
            stack.extend(indices)  # (the image axis nowhere else; their loads checked)
        elif isinstance(x, E.Var):
            if id(x) in near:
                return False
        else:
            stack.extend(expr_children(x))
    return True


def per_image(func: PrimFunc, n) -> tuple[PrimFunc, dict] | None:
    """``(the function for one image, {id(data var): bits per image})`` of every batched
    parameter, or None when ``func`` is not separable by images."""
    if not separable(func, n):
        return None
    new: dict[int, Buffer] = {}
    strides: dict[int, int] = {}

    def rows(b):
        return E.IntImm(n.dtype, rows_per_image(b.shape[0], n))

    for b in func.buffer_map.values():
        if _batched(b, n):
            new[id(b)] = Buffer(b.data, b.dtype, (rows(b), *b.shape[1:]), name=b.name)
            size = rows_per_image(b.shape[0], n)
            for d in b.shape[1:]:
                size *= const_int(d)
            strides[id(b.data)] = size * _bits(b.dtype)  # (in bits: views may retype it)
    for b in _buffers(func)[len(func.buffer_map):]:
        if _batched(b, n):
            new[id(b)] = Buffer(E.Var(b.name, "handle"), b.dtype, (rows(b), *b.shape[1:]),
                                name=b.name, scope=b.scope)
            new[id(b)].data.type_annotation = getattr(b.data, "type_annotation", None)
    # (one rewrite of the body: n -> 1 in its expressions, the per-image buffers)
    body = _rebuffer(func.body, lambda b: new.get(id(b)), _one_image(n))
    buffer_map = {p: new.get(id(b), b) for p, b in func.buffer_map.items()}
    one_image = PrimFunc(func.params, body, func.ret_type, buffer_map, func.attrs)
    return narrow_indices(one_image), strides


def _one_image(n):
    """The expression rewrite (a ``transform_expr`` ``fpost``) that replaces ``n`` by 1 and
    folds the rows an image ``1 * k`` to ``k``."""
    one = E.IntImm(n.dtype, 1)

    def fpost(e):
        if _is_var(e, n):
            return one
        if isinstance(e, E.Mul) and (const_int(e.a) == 1 or const_int(e.b) == 1):
            other = e.b if const_int(e.a) == 1 else e.a
            return other if other.dtype == e.dtype else None
        return None

    return fpost


def around_images(func: PrimFunc, n, image_func: PrimFunc, strides: dict) -> PrimFunc | None:
    """``func`` as a loop over its ``n`` images of ``image_func`` (``per_image``'s function,
    optimized), or None when the optimized function reads a batched parameter's data pointer
    other than through a buffer (it could not be moved per image).

    The image loop is a parallel ``INSTANCE_LOOP`` (see the module docstring)."""
    par = _image_loop(func, n, image_func, strides)
    if par is None:
        return None
    body, buffer_map = par
    return PrimFunc(func.params, body, func.ret_type, buffer_map, image_func.attrs)


def image_loop_var(func: PrimFunc):
    """The batch variable of a function ``around_images`` wrote (its body is the image loop),
    else None. Such a kernel called with a batch of one on pointers moved by ``image`` images
    of each batched parameter computes that image alone: a caller may run the images one by
    one (the Relax native entry does, to write them into pieces of a concatenation)."""
    body = func.body
    if isinstance(body, S.For) and body.annotations.get(INSTANCE_LOOP) and \
            isinstance(body.extent, E.Var) and const_int(body.min) == 0:
        return body.extent
    return None


def _image_loop(func: PrimFunc, n, image_func: PrimFunc, strides: dict):
    """``(parallel for image in [0, n): image_func's body with the image's views, buffer
    map)``, or None (``around_images``)."""
    img = E.Var("image", n.dtype)
    moved: dict[int, Buffer] = {}

    def shift(b: Buffer):
        per = strides.get(id(b.data))
        if per is None:
            return None
        if id(b) not in moved:
            if per % _bits(b.dtype):
                bad.append(b)  # (a view whose elements do not tile one image)
                return None
            step = E.IntImm(n.dtype, per // _bits(b.dtype))
            moved[id(b)] = Buffer(b.data, b.dtype, b.shape, b.strides,
                                  b.elem_offset + img * step, b.name, b.scope, b.data_alignment,
                                  b.offset_factor, b.axis_separators)
        return moved[id(b)]

    bad: list = []
    body = _rebuffer(image_func.body, shift)
    if bad:
        return None
    data_ids = set(strides)
    for st in walk_stmts(body):  # a data pointer used as a value (an extern call's argument)
        for e in _stmt_exprs(st):
            if _mentions(e, data_ids):
                return None
    buffer_map = {}
    for p, b in image_func.buffer_map.items():
        if id(b.data) in strides:  # the symbolic parameter; its image's view declared inside
            buffer_map[p] = func.buffer_map[p]
            if id(b) in moved:
                body = S.DeclBuffer(moved[id(b)], body)
        else:
            buffer_map[p] = b
    return S.For(img, E.IntImm(n.dtype, 0), n, S.ForKind.PARALLEL, body,
                 annotations={INSTANCE_LOOP: 1}), buffer_map


def _bits(dtype: str) -> int:
    digits = "".join(ch for ch in str(dtype) if ch.isdigit())
    return int(digits) if digits else 8


def _stmt_exprs(st) -> list:
    if isinstance(st, S.BufferStore):
        return [st.value, *st.indices]
    if isinstance(st, S.For):
        return [st.min, st.extent]
    if isinstance(st, (S.LetStmt, S.Evaluate, S.AttrStmt)):
        return [st.value]
    if isinstance(st, (S.IfThenElse, S.AssertStmt)):
        return [st.condition]
    if isinstance(st, S.Allocate):
        return [*st.extents]
    return []


def _rebuffer(root, fmap, rewrite=None):
    """``root`` with every buffer ``b`` for which ``fmap(b)`` is a buffer replaced by it (in
    loads, stores, buffer declarations, blocks' regions and allocations), and its expressions
    rewritten by ``rewrite`` (a ``transform_expr`` ``fpost``) in the same pass when given."""
    def fpost(e):
        if rewrite is not None:
            rep = rewrite(e)
            if rep is not None:
                return rep
        if isinstance(e, E.BufferLoad):
            nb = fmap(e.buffer)
            if nb is not None:
                return E.BufferLoad(nb, e.indices, e.predicate)
        return None

    def fstmt(s):
        if isinstance(s, S.BufferStore):
            nb = fmap(s.buffer)
            return None if nb is None else S.BufferStore(nb, s.value, s.indices, s.predicate)
        if isinstance(s, S.DeclBuffer):
            nb = fmap(s.buffer)
            return None if nb is None else S.DeclBuffer(nb, s.body)
        if isinstance(s, S.Block):
            def region(rs):
                return [S.BufferRegion(fmap(r.buffer) or r.buffer, r.region) for r in rs]
            return S.Block(s.iter_vars, region(s.reads), region(s.writes), s.name_hint,
                           s.body, s.init, [fmap(b) or b for b in s.alloc_buffers],
                           s.match_buffers, s.annotations)
        return None

    memo: dict = {}
    return transform_stmt(root, lambda e: transform_expr(e, fpost, memo), fstmt)
