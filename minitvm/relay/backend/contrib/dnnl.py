"""The "dnnl" external codegen: a partitioned Relay function (``Compiler="dnnl"``) to the JSON
graph that ``minitvm.backend.contrib.dnnl.DnnlGraph`` runs with oneDNN.

Plain op calls map to one oneDNN primitive each; calls of composite functions
(``Composite="dnnl.conv2d_bias_relu"`` ...) become one convolution / inner product / matmul
with the bias folded in and the ops after it as fused post-ops (eltwise, sum, binary).
``supported(call)`` is the single definition of what the codegen accepts: the ``target.dnnl``
annotation predicates call it, so AnnotateTarget never offloads what cannot run.
"""

from __future__ import annotations

import numpy as np

from ....ir.op import Op
from ....ir.type import TensorType
from ...expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from ...expr_functor import dataflow_post_order

__all__ = ["codegen", "supported", "ELTWISE_OPS", "BINARY_OPS", "ANCHOR_OPS"]

ELTWISE_OPS = {"nn.relu": "relu", "tanh": "tanh", "sigmoid": "logistic", "exp": "exp",
               "sqrt": "sqrt", "abs": "abs", "log": "log", "clip": "clip",
               "nn.leaky_relu": "relu", "round": "round"}
BINARY_OPS = {"add": "add", "multiply": "mul", "subtract": "sub", "divide": "div",
              "maximum": "max", "minimum": "min"}
RESHAPE_OPS = {"reshape", "squeeze", "expand_dims", "nn.batch_flatten", "reshape_like"}
ANCHOR_OPS = {"nn.conv2d", "nn.dense", "nn.batch_matmul"}
_COMMUTATIVE = {"add", "multiply", "maximum", "minimum"}


class DnnlCodegenError(ValueError):
    """A function offloaded to dnnl holds something the codegen cannot translate."""


def _shape(e) -> list[int]:
    t = e.checked_type
    if not isinstance(t, TensorType):
        raise DnnlCodegenError(f"dnnl handles tensors only, got {t}")
    return [int(s) for s in t.shape]


def _f32(e) -> bool:
    t = e._checked_type
    return isinstance(t, TensorType) and t.dtype == "float32" and all(
        isinstance(s, int) or hasattr(s, "value") for s in t.shape)


def _eltwise_attrs(call: Call) -> dict:
    name = call.op.name
    node = {"alg": ELTWISE_OPS[name]}
    if name == "clip":
        node.update(alpha=float(call.attrs.a_min), beta=float(call.attrs.a_max))
    elif name == "nn.leaky_relu":
        node["alpha"] = float(call.attrs.alpha)
    return node


def supported(call: Call) -> bool:
    """Can the dnnl codegen run this op call by itself (types must be inferred)?"""
    op = call.op
    if not isinstance(op, Op):
        return False
    if not all(_f32(a) for a in call.args) or not _f32(call):
        return False
    name, a = op.name, call.attrs
    if name == "nn.conv2d":
        return (a.data_layout == "NCHW" and a.kernel_layout == "OIHW"
                and a.out_dtype in ("", "float32") and len(_shape(call)) == 4)
    if name == "nn.dense":
        return len(_shape(call.args[1])) == 2 and a.out_dtype in ("", "float32")
    if name == "nn.batch_matmul":
        return len(_shape(call.args[0])) == 3 and len(_shape(call.args[1])) == 3 and \
            _shape(call.args[0])[0] == _shape(call.args[1])[0]
    if name in ELTWISE_OPS:
        return True
    if name in BINARY_OPS:
        out = _shape(call)
        lhs, rhs = _shape(call.args[0]), _shape(call.args[1])
        return lhs == out or (name in _COMMUTATIVE and rhs == out)
    if name == "nn.bias_add":
        return True
    if name == "nn.softmax":
        return True
    if name == "nn.layer_norm":
        return int(a.axis) in (-1, len(_shape(call)) - 1)
    if name in ("nn.max_pool2d", "nn.avg_pool2d"):
        return a.layout == "NCHW" and not a.ceil_mode
    if name in ("nn.global_avg_pool2d", "nn.global_max_pool2d"):
        return a.layout == "NCHW"
    if name in RESHAPE_OPS or name == "transpose":
        return True
    return False


class _Builder:
    def __init__(self, func: Function):
        self.func = func
        self.nodes: list[dict] = []
        self.consts: list[np.ndarray] = []
        self.env: dict[int, list] = {}
        self.inputs = []
        for k, p in enumerate(func.params):
            self.env[id(p)] = ["in", k]
            self.inputs.append(_shape(p))

    def add(self, op: str, args: list, attrs: dict, shape) -> list:
        self.nodes.append({"op": op, "args": args, "attrs": attrs, "shape": list(shape)})
        return ["node", len(self.nodes) - 1]

    def ref(self, e, env=None) -> list:
        env = self.env if env is None else env
        r = env.get(id(e))
        if r is not None:
            return r
        if isinstance(e, Constant):
            arr = np.asarray(e.data.numpy(), dtype=np.float32)
            self.consts.append(arr)
            r = env[id(e)] = ["const", len(self.consts) - 1]
            return r
        raise DnnlCodegenError(f"dnnl codegen: no value for {type(e).__name__}")

    # ------------------------------------------------------------------ plain ops
    def op_call(self, call: Call, env) -> list:
        name = call.op.name
        if not supported(call):
            raise DnnlCodegenError(f"dnnl codegen: {name} with these attributes/types is not "
                                   "supported")
        args = [self.ref(a, env) for a in call.args]
        out = _shape(call)
        a = call.attrs
        if name in ANCHOR_OPS:
            return self.anchor(call, args, None, [])
        if name in ELTWISE_OPS:
            return self.add("eltwise", args, _eltwise_attrs(call), out)
        if name in BINARY_OPS:
            if _shape(call.args[0]) != out:
                args = args[::-1]
            return self.add("binary", args, {"alg": BINARY_OPS[name]}, out)
        if name == "nn.bias_add":
            bshape = [1] * len(out)
            axis = int(a.axis) % len(out)
            bshape[axis] = out[axis]
            b = self.add("reshape", [args[1]], {}, bshape)
            return self.add("binary", [args[0], b], {"alg": "add"}, out)
        if name == "nn.softmax":
            return self.add("softmax", args, {"axis": int(a.axis)}, out)
        if name == "nn.layer_norm":
            ln_args = [args[0]] + ([args[1]] if a.scale else []) + ([args[2]] if a.center
                                                                   else [])
            if a.center and not a.scale:
                ones = self.ref(Constant(np.ones(out[-1], np.float32)), {})
                ln_args = [args[0], ones, args[2]]
            return self.add("layer_norm", ln_args, {"epsilon": float(a.epsilon)}, out)
        if name in ("nn.max_pool2d", "nn.avg_pool2d"):
            alg = "max" if name == "nn.max_pool2d" else (
                "avg" if a.count_include_pad else "avg_exclude")
            return self.add("pool", args, {"alg": alg, "kernel": list(a.pool_size),
                                           "strides": list(a.strides),
                                           "padding": list(a.padding),
                                           "dilation": list(a.dilation)}, out)
        if name in ("nn.global_avg_pool2d", "nn.global_max_pool2d"):
            h, w = _shape(call.args[0])[2:]
            return self.add("pool", args, {"alg": "max" if "max" in name else "avg",
                                           "kernel": [h, w], "strides": [1, 1],
                                           "padding": [0, 0, 0, 0], "dilation": [1, 1]}, out)
        if name in RESHAPE_OPS:
            return self.add("reshape", args[:1], {}, out)
        if name == "transpose":
            n = len(out)
            axes = list(a.axes) if a.axes is not None else list(range(n))[::-1]
            return self.add("transpose", args, {"axes": axes}, out)
        raise DnnlCodegenError(f"dnnl codegen: no rule for {name}")

    # ------------------------------------------------------------------ fused anchors
    def anchor(self, call: Call, args, bias, post_ops, shape=None) -> list:
        name = call.op.name
        a = call.attrs
        out = list(shape or _shape(call))
        node_args = list(args) + ([bias] if bias is not None else [])
        attrs = {"post_ops": post_ops}
        if name == "nn.conv2d":
            attrs.update(strides=list(a.strides), padding=list(a.padding),
                         dilation=list(a.dilation), groups=int(a.groups))
            return self.add("conv2d", node_args, attrs, out)
        if name == "nn.dense":
            return self.add("dense", node_args, attrs, out)
        if bias is not None:
            raise DnnlCodegenError("dnnl codegen: batch_matmul with a bias is not supported")
        attrs.update(transpose_a=bool(a.transpose_a), transpose_b=bool(a.transpose_b))
        return self.add("matmul", node_args, attrs, out)

    def composite(self, fn: Function, call_args, env) -> list:
        """One fused primitive for a composite function: anchor, bias, post-ops."""
        name = str(fn.get_attr("Composite"))
        inner = {id(p): self.ref(a, env) for p, a in zip(fn.params, call_args)}
        order = [e for e in dataflow_post_order(fn.body) if isinstance(e, Call)]
        if name.endswith("layernorm"):
            return self.layer_norm(fn, order, inner, env)
        anchors = [e for e in order if isinstance(e.op, Op) and e.op.name in ANCHOR_OPS]
        if len(anchors) != 1:
            raise DnnlCodegenError(f"dnnl codegen: composite {name} needs exactly one "
                                   "conv2d/dense/batch_matmul")
        anchor = anchors[0]
        if not supported(anchor):
            raise DnnlCodegenError(f"dnnl codegen: composite {name}: unsupported "
                                   f"{anchor.op.name}")
        out = _shape(anchor)
        ch = out[1] if anchor.op.name == "nn.conv2d" else out[-1]
        bias, post, weight = None, [], None
        prev = anchor
        rest = order[order.index(anchor) + 1:]
        if "gelu" in name:
            erf = [e for e in rest if e.op.name == "erf"]
            if not erf:
                raise DnnlCodegenError(f"dnnl codegen: composite {name} has no erf")
        k = 0
        while k < len(rest):
            e = rest[k]
            k += 1
            opname = e.op.name
            if not any(x is prev for x in e.args) and not (bias is not None and "gelu" in name):
                raise DnnlCodegenError(f"dnnl codegen: composite {name} is not a chain")
            others = [x for x in e.args if x is not prev]
            if opname == "multiply" and prev is anchor and others and \
                    anchor.op.name in ("nn.conv2d", "nn.dense") and \
                    int(np.prod(_shape(others[0]))) == ch and _shape(e) == out:
                scaled = self.scale_weight(self.ref_inner(anchor.args[1], inner, env),
                                           self.ref_inner(others[0], inner, env), ch)
                if scaled is not None:  # a folded batch norm's scale: into the weights
                    weight = scaled
                    prev = e
                    continue
            if opname in ("nn.bias_add", "add") and bias is None and not post and others \
                    and int(np.prod(_shape(others[0]))) == ch and _shape(e) == out and \
                    (opname == "nn.bias_add" or _bias_broadcasts(_shape(others[0]), out,
                                                                 anchor.op.name)):
                b = self.ref_inner(others[0], inner, env)
                bias = self.add("reshape", [b], {}, [ch])
                prev = e
                continue
            if "gelu" in name:
                # the rest is x * 0.5 * (1 + erf(x / sqrt 2)): one gelu_erf post-op
                post.append({"kind": "eltwise", "alg": "gelu_erf"})
                prev = rest[-1]
                break
            if opname in ELTWISE_OPS:
                post.append({"kind": "eltwise", **_eltwise_attrs(e)})
                prev = e
                continue
            if opname == "add" and others and _shape(others[0]) == out:
                post.append({"kind": "sum", "arg": self.ref_inner(others[0], inner, env)})
                prev = e
                continue
            if opname in BINARY_OPS and others and (opname in _COMMUTATIVE
                                                    or e.args[0] is prev):
                post.append({"kind": "binary", "alg": BINARY_OPS[opname],
                             "arg": self.ref_inner(others[0], inner, env)})
                prev = e
                continue
            raise DnnlCodegenError(f"dnnl codegen: composite {name}: cannot fuse {opname}")
        if prev is not fn.body:
            raise DnnlCodegenError(f"dnnl codegen: composite {name} does not end at its "
                                   "fused chain")
        args = [self.ref_inner(x, inner, env) for x in anchor.args]
        if weight is not None:
            args[1] = weight
        return self.anchor(anchor, args, bias, post, _shape(fn.body))

    def scale_weight(self, wref, sref, ch: int):
        """A constant weight scaled per output channel by a constant (None if either is not
        a constant)."""
        if wref[0] != "const" or sref[0] != "const":
            return None
        w = self.consts[wref[1]]
        s = self.consts[sref[1]].reshape(-1)
        if w.shape[0] != ch or s.size != ch:
            return None
        self.consts.append((w * s.reshape((ch,) + (1,) * (w.ndim - 1))).astype(np.float32))
        return ["const", len(self.consts) - 1]

    def layer_norm(self, fn: Function, order, inner, env) -> list:
        """``dnnl.layernorm``: (x - mean) / sqrt(variance + eps) * gamma + beta, one primitive."""
        try:
            body = fn.body
            mul = body.args[0]
            div = mul.args[0]
            diff, deno = div.args
            eps = deno.args[0].args[1]
            data = diff.args[0]
            gamma, beta = mul.args[1], body.args[1]
            eps_value = float(np.asarray(eps.data.numpy()).reshape(-1)[0])
        except (AttributeError, IndexError, ValueError) as err:
            raise DnnlCodegenError(f"dnnl codegen: layernorm composite has an unexpected "
                                   f"form: {err}") from None
        args = [self.ref_inner(x, inner, env) for x in (data, gamma, beta)]
        return self.add("layer_norm", args, {"epsilon": eps_value}, _shape(body))

    def ref_inner(self, e, inner, env) -> list:
        if id(e) in inner:
            return inner[id(e)]
        return self.ref(e, inner)

    def build(self) -> dict:
        body = self.func.body
        env = self.env
        for e in dataflow_post_order(body):
            if id(e) in env or isinstance(e, Function):
                continue
            if isinstance(e, Var):
                raise DnnlCodegenError(f"dnnl codegen: free variable %{e.name_hint}")
            if isinstance(e, Constant):
                self.ref(e)
            elif isinstance(e, Tuple):
                env[id(e)] = ["tuple", [self.ref(f) for f in e.fields]]
            elif isinstance(e, TupleGetItem):
                t = env[id(e.tuple_value)]
                if t[0] != "tuple":
                    raise DnnlCodegenError("dnnl codegen: projections of op results are not "
                                           "supported")
                env[id(e)] = t[1][e.index]
            elif isinstance(e, Call) and isinstance(e.op, Op):
                env[id(e)] = self.op_call(e, env)
            elif isinstance(e, Call) and isinstance(e.op, Function) and \
                    e.op.get_attr("Composite") is not None:
                env[id(e)] = self.composite(e.op, e.args, env)
            else:
                raise DnnlCodegenError(f"dnnl codegen: cannot offload a {type(e).__name__}")
        res = env[id(body)]
        outputs = res[1] if res[0] == "tuple" else [res]
        return {"inputs": self.inputs, "nodes": self.nodes, "outputs": outputs}


def _bias_broadcasts(bshape, out, anchor: str) -> bool:
    """Is ``bshape`` a per-output-channel bias of ``out`` (channels: axis 1 for conv2d, last
    for dense)?"""
    if anchor == "nn.conv2d":
        full = [1] * (len(out) - len(bshape)) + list(bshape)
        return len(full) == len(out) and full[1] == out[1] and all(
            s == 1 for k, s in enumerate(full) if k != 1)
    return list(bshape)[-1:] == [out[-1]] and all(s == 1 for s in list(bshape)[:-1])


def codegen(func: Function) -> tuple[dict, list[np.ndarray]]:
    """The JSON graph and constants of a dnnl function."""
    b = _Builder(func)
    graph = b.build()
    return graph, b.consts
