"""DnnlGraph: run a small dataflow graph (the JSON a codegen emits) with oneDNN primitives.

The graph is dialect-neutral: ``inputs`` (shapes), ``nodes`` (``op``, ``args`` as references
``["in", i]`` / ``["const", i]`` / ``["node", i]``, ``attrs``, ``shape``) and ``outputs``.
Constants (weights) are given as arrays. Everything is built once: primitive descriptors,
primitives, buffers; convolution weights are reordered once into the layout the primitive
picked. Convolutions and poolings keep their activations in oneDNN's blocked layouts between
each other; a reorder is inserted only where a consumer needs another layout.
``run(arrays)`` binds the inputs, executes the primitives in order and returns the outputs.

Fused post-ops (primitive attributes): ``eltwise`` (relu, gelu, ... with alpha/beta),
``sum`` (accumulate into the output: residual connections) and ``binary`` (add/mul ... of a
broadcast tensor).
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import lib as L

__all__ = ["DnnlGraph"]


class _Value:
    """A tensor living in one oneDNN memory: its descriptor, memory object and buffer."""

    __slots__ = ("md", "mem", "buf", "shape")

    def __init__(self, md: L.MemoryDesc, buf=None):
        self.md = md
        self.shape = md.shape
        if buf is None:
            buf = np.empty(max(md.size, 4), dtype=np.uint8)
        self.buf = buf
        m = L.out_ptr()
        handle = ctypes.c_void_p(buf.ctypes.data)
        L.call("dnnl_memory_create", ctypes.byref(m), md.ptr, L.engine(), handle)
        self.mem = m

    def __del__(self):
        if L._LIB is not None and self.mem:
            L._LIB.dnnl_memory_destroy(self.mem)
            self.mem = None


class _Primitive:
    __slots__ = ("prim", "args", "keep")

    def __init__(self, pd, args: list[tuple[int, _Value]], keep=()):
        p = L.out_ptr()
        L.call("dnnl_primitive_create", ctypes.byref(p), pd)
        self.prim = p
        arr = (L.ExecArg * len(args))()
        for k, (a, v) in enumerate(args):
            arr[k].arg = a
            arr[k].memory = v.mem
        self.args = arr
        self.keep = (list(keep), [v for _, v in args])

    def execute(self, stream) -> None:
        L.call("dnnl_primitive_execute", self.prim, stream, len(self.args), self.args)

    def __del__(self):
        if L._LIB is not None and self.prim:
            L._LIB.dnnl_primitive_destroy(self.prim)
            self.prim = None


class _PrimDesc:
    """An owned primitive descriptor."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

    def md(self, what: int, shape, index: int = 0) -> L.MemoryDesc:
        raw = L.lib().dnnl_primitive_desc_query_md(self.ptr, what, index)
        return L.MemoryDesc.clone(raw, shape)

    def __del__(self):
        if L._LIB is not None and self.ptr:
            L._LIB.dnnl_primitive_desc_destroy(self.ptr)
            self.ptr = None


def _pd(fn: str, *args) -> _PrimDesc:
    p = L.out_ptr()
    L.call(fn, ctypes.byref(p), *args)
    return _PrimDesc(p)


class _Attr:
    """Primitive attributes carrying a post-op chain."""

    def __init__(self):
        self.attr = L.out_ptr()
        L.call("dnnl_primitive_attr_create", ctypes.byref(self.attr))
        self.post_ops = None

    def post(self):
        if self.post_ops is None:
            self.post_ops = L.out_ptr()
            L.call("dnnl_post_ops_create", ctypes.byref(self.post_ops))
        return self.post_ops

    def finish(self):
        if self.post_ops is not None:
            L.call("dnnl_primitive_attr_set_post_ops", self.attr, self.post_ops)
        return self.attr

    def __del__(self):
        if L._LIB is not None:
            if self.post_ops:
                L._LIB.dnnl_post_ops_destroy(self.post_ops)
            if self.attr:
                L._LIB.dnnl_primitive_attr_destroy(self.attr)


def _nhwc(shape) -> L.MemoryDesc:
    """The NHWC layout of a logical NCHW shape (plain for other ranks)."""
    if len(shape) != 4:
        return L.plain_md(shape)
    n, c, h, w = shape
    return L.plain_md(shape, [h * w * c, 1, w * c, c])


def _contig(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


class DnnlGraph:
    """A graph of oneDNN primitives built from its JSON description (see the module doc)."""

    def __init__(self, graph: dict, consts: list[np.ndarray]):
        L.lib()
        self.graph = graph
        self.consts = [_contig(c) for c in consts]
        self.steps: list = []
        self._keep: list = []
        self._reorders: dict[tuple[int, int], _Value] = {}
        # inputs are copied into buffers of their own: views of them (reshapes) stay valid
        self.inputs = [_Value(L.plain_md(s)) for s in graph["inputs"]]
        self.values: dict[tuple, _Value] = {}
        for i, v in enumerate(self.inputs):
            self.values[("in", i)] = v
        for i, c in enumerate(self.consts):
            self.values[("const", i)] = _Value(L.plain_md(c.shape if c.ndim else (1,)),
                                               buf=c.reshape(-1).view(np.uint8))
        self._const_ids = {id(self.values[("const", i)]) for i in range(len(self.consts))}
        for k, node in enumerate(graph["nodes"]):
            builder = getattr(self, "_op_" + node["op"], None)
            if builder is None:
                raise ValueError(f"dnnl: unsupported operation {node['op']!r} in node {k}")
            self.values[("node", k)] = builder(node)
        self.outputs = []
        for ref in graph["outputs"]:
            v = self._plain(self._ref(ref))
            self.outputs.append(v)

    # ------------------------------------------------------------------ helpers
    def _ref(self, ref) -> _Value:
        return self.values[tuple(ref)]

    def _is_const(self, v: _Value) -> bool:
        return id(v) in self._const_ids

    def _as(self, v: _Value, md: L.MemoryDesc) -> _Value:
        """``v`` in layout ``md``: itself, or a reordered copy (done now for constants)."""
        if v.md == md:
            return v
        key = (id(v), id(md))
        hit = self._reorders.get(key)
        if hit is not None:
            return hit
        out = _Value(md)
        pd = _pd("dnnl_reorder_primitive_desc_create", v.md.ptr, L.engine(), md.ptr, L.engine(),
                 None)
        prim = _Primitive(pd.ptr, [(L.ARG_SRC, v), (L.ARG_DST, out)], keep=[pd, md])
        if self._is_const(v):
            prim.execute(L.stream())
            L.call("dnnl_stream_wait", L.stream())
            self._const_ids.add(id(out))
            self._keep.append(prim)
        else:
            self.steps.append(prim)
        self._keep.append(v)
        self._reorders[key] = out
        return out

    def _plain(self, v: _Value) -> _Value:
        hit = self._reorders.get((id(v), "plain"))
        if hit is None:
            hit = self._reorders[(id(v), "plain")] = self._as(v, L.plain_md(v.shape))
        return hit

    def _attr(self, node) -> tuple[_Attr, list]:
        """Primitive attributes for the node's post-ops, and their extra arguments."""
        attr = _Attr()
        extra = []
        for k, po in enumerate(node["attrs"].get("post_ops", [])):
            kind = po["kind"]
            if kind == "eltwise":
                L.call("dnnl_post_ops_append_eltwise", attr.post(), L.ELTWISE[po["alg"]],
                       float(po.get("alpha", 0.0)), float(po.get("beta", 0.0)))
            elif kind == "sum":
                L.call("dnnl_post_ops_append_sum", attr.post(), float(po.get("scale", 1.0)),
                       0, 0)
                extra.append(("sum", self._ref(po["arg"])))
            elif kind == "binary":
                src1 = self._plain(self._ref(po["arg"]))
                shape = list(src1.shape)
                ndim = len(node["shape"])
                shape = [1] * (ndim - len(shape)) + shape
                md = L.plain_md(shape)
                src1 = self._alias(src1, md)
                L.call("dnnl_post_ops_append_binary", attr.post(), L.BINARY[po["alg"]], md.ptr)
                extra.append((L.ARG_POST_OP_SRC1(k), src1))
            else:
                raise ValueError(f"dnnl: unknown post-op {kind!r}")
        return attr, extra

    def _alias(self, v: _Value, md: L.MemoryDesc) -> _Value:
        """A plain value seen with another (same-size, plain) shape, sharing the buffer."""
        out = _Value(md, buf=v.buf)
        if self._is_const(v):
            self._const_ids.add(id(out))
        return out

    def _emit(self, pd: _PrimDesc, args, extra, dst: _Value, keep=()) -> _Value:
        sums = [v for k, v in extra if k == "sum"]
        for s in sums:  # the sum post-op accumulates into dst: copy the operand there first
            src = self._plain(s) if s.md != dst.md else s
            pd_r = _pd("dnnl_reorder_primitive_desc_create", src.md.ptr, L.engine(), dst.md.ptr,
                       L.engine(), None)
            self.steps.append(_Primitive(pd_r.ptr, [(L.ARG_SRC, src), (L.ARG_DST, dst)],
                                         keep=[pd_r]))
        args = args + [(k, v) for k, v in extra if k != "sum"]
        self.steps.append(_Primitive(pd.ptr, args, keep=[pd, *keep]))
        return dst

    # ------------------------------------------------------------------ ops
    def _op_conv2d(self, node) -> _Value:
        a = node["attrs"]
        data, weight = self._ref(node["args"][0]), self._ref(node["args"][1])
        bias = self._ref(node["args"][2]) if len(node["args"]) > 2 else None
        groups = int(a.get("groups", 1))
        o, i, kh, kw = weight.shape
        wshape = [groups, o // groups, i, kh, kw] if groups > 1 else [o, i, kh, kw]
        # activations in NHWC (oneDNN's fast layout that per-channel binaries also handle)
        src_any, w_any = _nhwc(data.shape), L.any_md(wshape)
        dst_any = _nhwc(node["shape"])
        b_md = L.plain_md([o]) if bias is not None else None
        attr, extra = self._attr(node)
        st, pad, dil = a["strides"], a["padding"], [d - 1 for d in a["dilation"]]
        pd = _pd("dnnl_convolution_forward_primitive_desc_create", L.engine(),
                 L.FORWARD_INFERENCE, L.CONVOLUTION_DIRECT, src_any.ptr, w_any.ptr,
                 b_md.ptr if b_md else None, dst_any.ptr, L.dims(st), L.dims(dil),
                 L.dims(pad[:2]), L.dims(pad[2:]), attr.finish())
        src = self._as(data, pd.md(L.QUERY_SRC_MD, data.shape))
        w_plain = self._alias(weight, L.plain_md(wshape)) if groups > 1 else weight
        w = self._as(w_plain, pd.md(L.QUERY_WEIGHTS_MD, wshape))
        dst = _Value(pd.md(L.QUERY_DST_MD, node["shape"]))
        args = [(L.ARG_SRC, src), (L.ARG_WEIGHTS, w), (L.ARG_DST, dst)]
        if bias is not None:
            args.append((L.ARG_BIAS, self._plain(bias)))
        return self._emit(pd, args, extra, dst, keep=[attr, b_md])

    def _op_dense(self, node) -> _Value:
        data, weight = self._plain(self._ref(node["args"][0])), self._ref(node["args"][1])
        bias = self._ref(node["args"][2]) if len(node["args"]) > 2 else None
        k = data.shape[-1]
        rows = int(np.prod(data.shape[:-1]))
        o = weight.shape[0]
        src = self._alias(data, L.plain_md([rows, k]))
        w_any = L.any_md([o, k])
        dst2 = L.plain_md([rows, o])
        b_md = L.plain_md([o]) if bias is not None else None
        attr, extra = self._attr({"attrs": node["attrs"], "shape": [rows, o]})
        pd = _pd("dnnl_inner_product_forward_primitive_desc_create", L.engine(),
                 L.FORWARD_INFERENCE, src.md.ptr, w_any.ptr, b_md.ptr if b_md else None,
                 dst2.ptr, attr.finish())
        w = self._as(weight, pd.md(L.QUERY_WEIGHTS_MD, [o, k]))
        dst = _Value(dst2)
        args = [(L.ARG_SRC, src), (L.ARG_WEIGHTS, w), (L.ARG_DST, dst)]
        if bias is not None:
            args.append((L.ARG_BIAS, self._plain(bias)))
        self._emit(pd, args, extra, dst, keep=[attr, b_md])
        return self._alias(dst, L.plain_md(node["shape"]))

    def _op_matmul(self, node) -> _Value:
        a = node["attrs"]
        x, y = self._plain(self._ref(node["args"][0])), self._plain(self._ref(node["args"][1]))

        def view(v, transpose):
            shape = list(v.shape)
            if not transpose:
                return v.md
            b, r, c = shape
            return L.plain_md([b, c, r], [r * c, 1, c])

        x_md, y_md = view(x, a.get("transpose_a", False)), view(y, a.get("transpose_b", False))
        dst_md = L.plain_md(node["shape"])
        attr, extra = self._attr(node)
        pd = _pd("dnnl_matmul_primitive_desc_create", L.engine(), x_md.ptr, y_md.ptr, None,
                 dst_md.ptr, attr.finish())
        xs = x if x_md is x.md else _Value(x_md, buf=x.buf)
        ys = y if y_md is y.md else _Value(y_md, buf=y.buf)
        dst = _Value(dst_md)
        return self._emit(pd, [(L.ARG_SRC, xs), (L.ARG_WEIGHTS, ys), (L.ARG_DST, dst)], extra,
                          dst, keep=[attr])

    def _op_eltwise(self, node) -> _Value:
        a = node["attrs"]
        x = self._ref(node["args"][0])
        pd = _pd("dnnl_eltwise_forward_primitive_desc_create", L.engine(), L.FORWARD_INFERENCE,
                 L.ELTWISE[a["alg"]], x.md.ptr, x.md.ptr, float(a.get("alpha", 0.0)),
                 float(a.get("beta", 0.0)), None)
        dst = _Value(L.MemoryDesc.clone(x.md.ptr, x.shape))
        return self._emit(pd, [(L.ARG_SRC, x), (L.ARG_DST, dst)], [], dst)

    def _op_binary(self, node) -> _Value:
        a = node["attrs"]
        x, y = self._ref(node["args"][0]), self._ref(node["args"][1])
        ndim = len(node["shape"])
        if list(x.shape) != list(node["shape"]):
            raise ValueError("dnnl binary: the first operand must have the output's shape")
        if list(y.shape) == list(x.shape):
            y = self._as(y, x.md)  # same shape: both operands in one layout
        else:
            # a broadcast operand: fast kernels take it plain, with src0 plain or NHWC
            if not (len(x.shape) == 4 and x.md == _nhwc(x.shape)):
                x = self._plain(x)
            y = self._plain(y)
            y = self._alias(y, L.plain_md([1] * (ndim - len(y.shape)) + list(y.shape)))
        attr, extra = self._attr(node)
        dst_md = L.MemoryDesc.clone(x.md.ptr, x.shape)
        pd = _pd("dnnl_binary_primitive_desc_create", L.engine(), L.BINARY[a["alg"]], x.md.ptr,
                 y.md.ptr, dst_md.ptr, attr.finish())
        dst = _Value(dst_md)
        return self._emit(pd, [(L.ARG_SRC, x), (L.ARG_SRC_1, y), (L.ARG_DST, dst)], extra, dst,
                          keep=[attr])

    def _op_softmax(self, node) -> _Value:
        x = self._plain(self._ref(node["args"][0]))
        axis = int(node["attrs"]["axis"]) % len(x.shape)
        dst = _Value(L.plain_md(x.shape))
        pd = _pd("dnnl_softmax_forward_primitive_desc_create", L.engine(), L.FORWARD_INFERENCE,
                 L.SOFTMAX_ACCURATE, x.md.ptr, dst.md.ptr, axis, None)
        return self._emit(pd, [(L.ARG_SRC, x), (L.ARG_DST, dst)], [], dst)

    def _op_layer_norm(self, node) -> _Value:
        x = self._plain(self._ref(node["args"][0]))
        gamma = self._ref(node["args"][1]) if len(node["args"]) > 1 else None
        beta = self._ref(node["args"][2]) if len(node["args"]) > 2 else None
        flags = (L.USE_SCALE if gamma is not None else 0) | (L.USE_SHIFT if beta is not None
                                                             else 0)
        dst = _Value(L.plain_md(x.shape))
        pd = _pd("dnnl_layer_normalization_forward_primitive_desc_create", L.engine(),
                 L.FORWARD_INFERENCE, x.md.ptr, dst.md.ptr, None,
                 float(node["attrs"]["epsilon"]), flags, None)
        args = [(L.ARG_SRC, x), (L.ARG_DST, dst)]
        if gamma is not None:
            args.append((L.ARG_SCALE, self._plain(gamma)))
        if beta is not None:
            args.append((L.ARG_SHIFT, self._plain(beta)))
        return self._emit(pd, args, [], dst)

    def _op_pool(self, node) -> _Value:
        a = node["attrs"]
        x = self._ref(node["args"][0])
        alg = {"max": L.POOL_MAX, "avg": L.POOL_AVG_INCLUDE,
               "avg_exclude": L.POOL_AVG_EXCLUDE}[a["alg"]]
        dst_any = _nhwc(node["shape"]) if x.md == _nhwc(x.shape) else L.any_md(node["shape"])
        pd = _pd("dnnl_pooling_forward_primitive_desc_create", L.engine(), L.FORWARD_INFERENCE,
                 alg, x.md.ptr, dst_any.ptr, L.dims(a["strides"]), L.dims(a["kernel"]),
                 L.dims([d - 1 for d in a["dilation"]]), L.dims(a["padding"][:2]),
                 L.dims(a["padding"][2:]), None)
        dst = _Value(pd.md(L.QUERY_DST_MD, node["shape"]))
        return self._emit(pd, [(L.ARG_SRC, x), (L.ARG_DST, dst)], [], dst)

    def _op_reshape(self, node) -> _Value:
        return self._alias(self._plain(self._ref(node["args"][0])), L.plain_md(node["shape"]))

    def _op_transpose(self, node) -> _Value:
        x = self._plain(self._ref(node["args"][0]))
        axes = [int(a) % len(x.shape) for a in node["attrs"]["axes"]]
        # the output seen in the input's dimension order: a strided view for a reorder
        out_shape = node["shape"]
        out_strides, acc = [0] * len(out_shape), 1
        for k in range(len(out_shape) - 1, -1, -1):
            out_strides[k] = acc
            acc *= out_shape[k]
        view_strides = [0] * len(axes)
        for k, ax in enumerate(axes):
            view_strides[ax] = out_strides[k]
        view = L.plain_md(x.shape, view_strides)
        dst = _Value(L.plain_md(out_shape))
        dst_view = _Value(view, buf=dst.buf)
        pd = _pd("dnnl_reorder_primitive_desc_create", x.md.ptr, L.engine(), view.ptr,
                 L.engine(), None)
        self._emit(pd, [(L.ARG_SRC, x), (L.ARG_DST, dst_view)], [], dst_view)
        self._keep.append(dst_view)
        return dst

    # ------------------------------------------------------------------ run
    def run(self, args) -> list[np.ndarray]:
        if len(args) != len(self.inputs):
            raise ValueError(f"dnnl graph takes {len(self.inputs)} inputs, got {len(args)}")
        for k, (v, a) in enumerate(zip(self.inputs, args)):
            a = np.asarray(a)
            if tuple(a.shape) != tuple(v.shape) and not (a.ndim == 0 and v.shape == (1,)):
                raise ValueError(f"dnnl graph input {k}: expected shape {list(v.shape)}, got "
                                 f"{list(a.shape)}")
            n = int(np.prod(v.shape))
            np.copyto(v.buf[: n * 4].view(np.float32).reshape(a.shape), a, casting="same_kind")
        s = L.stream()
        for p in self.steps:
            p.execute(s)
        L.call("dnnl_stream_wait", s)
        outs = []
        for v in self.outputs:
            n = int(np.prod(v.shape))
            outs.append(v.buf[: n * 4].view(np.float32).reshape(v.shape).copy())
        return outs
