"""ONNX Attention and RotaryEmbedding cases both importers' tests run: a one-node model per
case, random inputs, and onnx's own reference implementation (``ReferenceEvaluator``) as the
expected outputs."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

# name -> dict(rank, b, hq, hkv, sq, skv, d, dv, attrs, mask, past, nonpad, opset, outputs)
# mask: None, "bool" / "float" of shape mask_shape (default [sq, skv_total]; "b" is the batch)
_BASE = dict(rank=4, b=2, hq=4, hkv=4, sq=5, skv=5, d=8, dv=8, attrs={}, mask=None,
             mask_shape=None, past=0, nonpad=None, opset=23, outputs=1)


def _case(**kw):
    c = dict(_BASE)
    c.update(kw)
    return c


ATTENTION_CASES = {
    "4d": _case(),
    "4d_cross_diff_v": _case(skv=7, dv=6),
    "4d_gqa_causal": _case(hq=6, hkv=2, attrs={"is_causal": 1}),
    "4d_mqa_scaled": _case(hq=4, hkv=1, attrs={"scale": 0.3}),
    "4d_softcap_bool_mask": _case(attrs={"softcap": 2.0}, mask="bool"),
    "4d_float_mask_4d": _case(mask="float", mask_shape=["b", 1, 5, 5]),
    "4d_short_mask_causal": _case(skv=7, mask="float", mask_shape=[5, 4],
                                  attrs={"is_causal": 1}),
    "4d_bool_mask_3d_causal": _case(mask="bool", mask_shape=[4, 5, 5], attrs={"is_causal": 1}),
    "3d": _case(rank=3, attrs={"q_num_heads": 4, "kv_num_heads": 4}),
    "3d_gqa_causal": _case(rank=3, hq=4, hkv=2, sq=3, skv=6,
                           attrs={"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1}),
    "3d_past_present": _case(rank=3, hq=4, hkv=2, sq=2, skv=2, past=4, outputs=3,
                             attrs={"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1}),
    "4d_past_mask_qk_bias": _case(past=3, sq=2, skv=2, mask="float", mask_shape=[2, 5],
                                  outputs=4, attrs={"qk_matmul_output_mode": 2}),
    "4d_qk_raw": _case(outputs=4, attrs={"softcap": 3.0}),
    "4d_qk_softcap": _case(outputs=4, attrs={"softcap": 3.0, "qk_matmul_output_mode": 1}),
    "4d_qk_softmax_masked_row": _case(outputs=4, mask="bool", mask_shape=[5, 5],
                                      attrs={"qk_matmul_output_mode": 3}),
    "4d_nonpad_causal": _case(hq=4, hkv=2, sq=2, skv=6, nonpad=[4, 6], opset=24,
                              attrs={"is_causal": 1}),
    "4d_nonpad": _case(sq=3, skv=6, nonpad=[2, 5], opset=24),
    "4d_window": _case(sq=5, skv=6, opset=25,
                       attrs={"left_window_size": 2, "right_window_size": 1}),
    "4d_window_causal_nonpad": _case(sq=2, skv=6, nonpad=[3, 6], opset=25,
                                     attrs={"left_window_size": 1, "is_causal": 1}),
}


def ort_checks(c) -> bool:
    """Whether ONNX Runtime runs a case: opset 23, and no mask shorter than the keys (which
    ORT refuses, though the schema allows it)."""
    short = c["mask_shape"] is not None and c["mask_shape"][-1] < c["skv"] + c["past"]
    return c["opset"] == 23 and not short


def attention_model(c, batch=None):
    """A model ``Attention(Q, K, V, [mask], [past_key, past_value], [nonpad])``; ``batch``
    names a symbolic batch dim."""
    b = batch or c["b"]
    if c["rank"] == 4:
        qs = [b, c["hq"], c["sq"], c["d"]]
        ks = [b, c["hkv"], c["skv"], c["d"]]
        vs = [b, c["hkv"], c["skv"], c["dv"]]
    else:
        qs = [b, c["sq"], c["hq"] * c["d"]]
        ks = [b, c["skv"], c["hkv"] * c["d"]]
        vs = [b, c["skv"], c["hkv"] * c["dv"]]
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    inputs = [vi("Q", f, qs), vi("K", f, ks), vi("V", f, vs)]
    names = ["Q", "K", "V", "", "", "", ""]
    total = c["skv"] + c["past"]
    if c["mask"]:
        shape = [b if d == "b" else d for d in c["mask_shape"] or [c["sq"], total]]
        inputs.append(vi("mask", TensorProto.BOOL if c["mask"] == "bool" else f, shape))
        names[3] = "mask"
    if c["past"]:
        inputs.append(vi("past_key", f, [b, c["hkv"], c["past"], c["d"]]))
        inputs.append(vi("past_value", f, [b, c["hkv"], c["past"], c["dv"]]))
        names[4:6] = ["past_key", "past_value"]
    if c["nonpad"] is not None:
        inputs.append(vi("nonpad", TensorProto.INT64, [b]))
        names[6] = "nonpad"
    while names[-1] == "":
        names.pop()
    outs = ["Y", "present_key", "present_value", "qk"][:c["outputs"]]
    node = helper.make_node("Attention", names, outs, **c["attrs"])
    graph = helper.make_graph([node], "attention", inputs,
                              [helper.make_tensor_value_info(o, f, None) for o in outs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", c["opset"])])


def attention_inputs(c, b=None, seed=0) -> dict:
    """Random inputs of a case (batch ``b`` overriding the case's)."""
    rng = np.random.default_rng(seed)
    b = b or c["b"]
    model = attention_model(c)
    feeds = {}
    for vi in model.graph.input:
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        dims[0] = b if vi.name not in ("mask",) else dims[0]
        if vi.name == "mask":
            dims = [b if d == "b" else d for d in c["mask_shape"] or [c["sq"], c["skv"] + c["past"]]]
            if c["mask"] == "bool":
                m = rng.random(dims) > 0.3
                if c["attrs"].get("qk_matmul_output_mode") == 3:
                    m[1, :] = False  # a fully masked row: zeros, not NaN
                feeds["mask"] = m
            else:
                feeds["mask"] = rng.standard_normal(dims).astype("float32")
        elif vi.name == "nonpad":
            feeds["nonpad"] = np.resize(np.array(c["nonpad"], "int64"), b)
        else:
            feeds[vi.name] = rng.standard_normal(dims).astype("float32")
    return feeds


def reference(model, feeds: dict) -> list:
    """onnx's reference implementation of the model on these inputs."""
    return ReferenceEvaluator(model).run(None, feeds)


def attention_expected(c, model, feeds: dict) -> list:
    """The reference's outputs, except ``qk_matmul_output`` in mode 0 with a softcap: the
    schema (and ONNX Runtime) give the raw scaled Q K^T there, the reference the capped one."""
    out = reference(model, feeds)
    if c["outputs"] == 4 and c["attrs"].get("softcap") and not c["attrs"].get(
            "qk_matmul_output_mode"):
        q, k = feeds["Q"], feeds["K"]
        scale = c["attrs"].get("scale") or 1 / np.sqrt(c["d"])
        root = np.float32(np.sqrt(scale))
        out[3] = (q * root) @ np.swapaxes(k * root, -1, -2)
    return out


# name -> (input shape, cache shape, attrs, with position_ids)
ROTARY_CASES = {
    "4d": ((2, 3, 5, 8), (2, 5, 4), {}, False),
    "4d_interleaved": ((2, 3, 5, 8), (2, 5, 4), {"interleaved": 1}, False),
    "3d_positions": ((2, 5, 24), (16, 4), {"num_heads": 3}, True),
    "3d_partial_interleaved": ((2, 5, 24), (2, 5, 2),
                               {"num_heads": 3, "rotary_embedding_dim": 4, "interleaved": 1},
                               False),
    "4d_partial_positions": ((1, 2, 6, 10), (12, 3), {"rotary_embedding_dim": 6}, True),
}


def rotary_model(case, batch=None):
    xs, cs, attrs, with_pos = case
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    b = batch or xs[0]
    cache = list(cs) if with_pos else [b, *cs[1:]]
    inputs = [vi("X", f, [b, *xs[1:]]), vi("cos", f, cache), vi("sin", f, cache)]
    names = ["X", "cos", "sin"]
    if with_pos:
        seq = xs[1] if len(xs) == 3 else xs[2]
        inputs.append(vi("pos", TensorProto.INT64, [b, seq]))
        names.append("pos")
    node = helper.make_node("RotaryEmbedding", names, ["Y"], **attrs)
    graph = helper.make_graph([node], "rope", inputs, [vi("Y", f, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def rotary_inputs(case, b=None, seed=0) -> dict:
    xs, cs, attrs, with_pos = case
    rng = np.random.default_rng(seed)
    b = b or xs[0]
    cache = cs if with_pos else (b, *cs[1:])
    ang = rng.uniform(0, 6.3, cache)
    feeds = {"X": rng.standard_normal((b, *xs[1:])).astype("float32"),
             "cos": np.cos(ang).astype("float32"), "sin": np.sin(ang).astype("float32")}
    if with_pos:
        seq = xs[1] if len(xs) == 3 else xs[2]
        feeds["pos"] = rng.integers(0, cs[0], (b, seq)).astype("int64")
    return feeds
