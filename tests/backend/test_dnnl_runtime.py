"""The "dnnl" external codegen: oneDNN primitives through ctypes, the Relay flow
(partition_for_dnnl -> relay.build), export/load, ResNet-18 and a BERT layer vs the interpreter."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.backend.contrib import dnnl as dnnl_rt

needs_dnnl = pytest.mark.skipif(
    not dnnl_rt.available(),
    reason="oneDNN is not installed: pip install 'minitvm[dnnl]' (onednn-cpu-gomp)")


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _conv_ref(x, w, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, o, oh, ow), np.float32)
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return out


def _graph_build(mod, params=None):
    from minitvm.contrib import graph_executor

    lib = relay.build(mod, "llvm", params=params)
    return lib, graph_executor.GraphModule(lib["default"](tvm.cpu()))


@needs_dnnl
def test_primitives_with_post_ops():
    x, w, b = _rand(1, 8, 10, 10), _rand(16, 8, 3, 3, seed=1), _rand(16, seed=2)
    res = _rand(1, 16, 10, 10, seed=3)
    g = {"inputs": [[1, 8, 10, 10], [1, 16, 10, 10]], "nodes": [
        {"op": "conv2d", "args": [["in", 0], ["const", 0], ["const", 1]], "shape": [1, 16, 10, 10],
         "attrs": {"strides": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1,
                   "post_ops": [{"kind": "sum", "arg": ["in", 1]},
                                {"kind": "eltwise", "alg": "relu"}]}},
        {"op": "pool", "args": [["node", 0]], "shape": [1, 16, 5, 5],
         "attrs": {"alg": "max", "kernel": [2, 2], "strides": [2, 2], "padding": [0, 0, 0, 0],
                   "dilation": [1, 1]}},
        {"op": "reshape", "args": [["node", 1]], "attrs": {}, "shape": [1, 400]},
        {"op": "dense", "args": [["node", 2], ["const", 2]], "shape": [1, 6],
         "attrs": {"post_ops": [{"kind": "eltwise", "alg": "tanh"}]}},
        {"op": "softmax", "args": [["node", 3]], "attrs": {"axis": -1}, "shape": [1, 6]},
    ], "outputs": [["node", 0], ["node", 4]]}
    wd = _rand(6, 400, seed=4) * 0.05
    conv, probs = dnnl_rt.DnnlGraph(g, [w, b, wd]).run([x, res])
    ref = np.maximum(_conv_ref(x, w, 1) + b[None, :, None, None] + res, 0)
    np.testing.assert_allclose(conv, ref, rtol=1e-4, atol=1e-4)
    pooled = ref.reshape(1, 16, 5, 2, 5, 2).max(axis=(3, 5)).reshape(1, 400)
    logits = np.tanh(pooled @ wd.T)
    e = np.exp(logits - logits.max())
    np.testing.assert_allclose(probs, e / e.sum(), rtol=1e-4, atol=1e-5)


@needs_dnnl
def test_graph_input_errors():
    g = {"inputs": [[2, 3]], "nodes": [
        {"op": "eltwise", "args": [["in", 0]], "attrs": {"alg": "relu"}, "shape": [2, 3]}],
        "outputs": [["node", 0]]}
    run = dnnl_rt.DnnlGraph(g, []).run
    with pytest.raises(ValueError, match="expected shape"):
        run([np.zeros((3, 2), "float32")])
    with pytest.raises(ValueError, match="takes 1 inputs"):
        run([])
    with pytest.raises(ValueError, match="unsupported operation 'nope'"):
        dnnl_rt.DnnlGraph({"inputs": [], "nodes": [{"op": "nope", "args": [], "attrs": {},
                                                    "shape": []}], "outputs": []}, [])


def _resnet_block():
    """conv-bn-relu, conv-bn, + identity, relu: the ResNet basic block (BN as bias_add)."""
    x = relay.var("x", shape=(1, 16, 14, 14))
    ws = [relay.var(f"w{i}", shape=(16, 16, 3, 3)) for i in range(2)]
    bs = [relay.var(f"b{i}", shape=(16,)) for i in range(2)]
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, ws[0], padding=(1, 1)), bs[0]))
    h = relay.nn.bias_add(relay.nn.conv2d(h, ws[1], padding=(1, 1)), bs[1])
    out = relay.nn.relu(relay.add(h, x))
    params = {f"w{i}": _rand(16, 16, 3, 3, seed=i) * 0.2 for i in range(2)}
    params.update({f"b{i}": _rand(16, seed=10 + i) for i in range(2)})
    mod = tvm.IRModule.from_expr(relay.Function([x, *ws, *bs], out))
    return mod, params


@needs_dnnl
def test_resnet_block_partition_build_run():
    from minitvm.relay.op.contrib.dnnl import partition_for_dnnl

    mod, params = _resnet_block()
    pm = partition_for_dnnl(mod, params)
    ext = [gv.name_hint for gv in pm.functions if gv.name_hint != "main"]
    assert ext == ["tvmgen_default_dnnl_main_0"]
    fn = pm[ext[0]]
    assert fn.get_attr("Compiler") == "dnnl"
    text = fn.astext()
    assert "dnnl.conv2d_bias_relu" in text and "dnnl.conv2d_bias_sum_relu" in text
    lib, m = _graph_build(pm)
    assert "tvmgen_default_dnnl_main_0  (external codegen dnnl" in lib.get_lib().summary()
    x = _rand(1, 16, 14, 14, seed=7)
    m.set_input("x", x)
    m.run()
    ref = relay.create_executor("debug", mod=mod, params=params).evaluate()(x).numpy()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-4)


@needs_dnnl
def test_export_load_roundtrip(tmp_path):
    from minitvm.contrib import graph_executor
    from minitvm.relay.op.contrib.dnnl import partition_for_dnnl

    mod, params = _resnet_block()
    lib = relay.build(partition_for_dnnl(mod, params), "llvm")
    path = str(tmp_path / "block.so")
    lib.export_library(path)
    loaded = tvm.runtime.load_module(path)
    m = graph_executor.GraphModule(loaded["default"](tvm.cpu()))
    x = _rand(1, 16, 14, 14, seed=8)
    m.set_input("x", x)
    m.run()
    ref = relay.create_executor("debug", mod=mod, params=params).evaluate()(x).numpy()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-4)


@needs_dnnl
def test_mixed_dnnl_and_generated_code():
    """Ops dnnl does not take (erf here) run through our own code generator."""
    from minitvm.relay.op.contrib.dnnl import partition_for_dnnl

    x = relay.var("x", shape=(4, 8))
    w = relay.var("w", shape=(8, 8))
    out = relay.nn.relu(relay.erf(relay.nn.dense(x, w)))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], out))
    params = {"w": _rand(8, 8, seed=3)}
    pm = partition_for_dnnl(mod, params)
    assert len([g for g in pm.functions if "dnnl" in g.name_hint]) == 2
    lib, m = _graph_build(pm)
    summary = lib.get_lib().summary()
    assert "external codegen dnnl" in summary and "native   tvmgen_default_fused_erf" in summary
    xv = _rand(4, 8, seed=5)
    m.set_input("x", xv)
    m.run()
    ref = relay.create_executor("debug", mod=mod, params=params).evaluate()(xv).numpy()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-5)


@needs_dnnl
@pytest.mark.parametrize("model", ["resnet18", "bert_layer"])
def test_models_match_interpreter(model):
    from minitvm.relay.op.contrib.dnnl import partition_for_dnnl
    from minitvm.relay.testing import bert, resnet

    if model == "resnet18":
        mod, params = resnet.get_workload(batch_size=1, num_layers=18, image_shape=(3, 64, 64))
        shape, name = (1, 3, 64, 64), "data"
    else:
        mod, params = bert.get_workload(batch_size=1, seq_len=16, hidden=128, num_heads=4,
                                        ffn=512)
        shape, name = (1, 16, 128), "data"
    pm = partition_for_dnnl(mod, params)
    assert any("dnnl" in g.name_hint for g in pm.functions)
    lib, m = _graph_build(pm)
    x = _rand(*shape, seed=11)
    m.set_input(name, x)
    m.run()
    ref = relay.create_executor("debug", mod=mod, params=params).evaluate()(x).numpy()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-4)


def test_missing_library_is_a_clear_error(monkeypatch):
    from minitvm.backend.contrib.dnnl import lib as L
    from minitvm.relay.op.contrib.dnnl import partition_for_dnnl

    monkeypatch.setattr(L, "_LIB", None)
    monkeypatch.setattr(L, "library_path", lambda: None)
    mod, params = _resnet_block()
    with pytest.raises(ImportError, match=r"minitvm\[dnnl\]"):
        partition_for_dnnl(mod, params)
    assert not L.available()


@needs_dnnl
def test_multi_output_region_and_unsupported_ops_stay_home():
    """A dnnl region with two outputs; an NHWC conv2d is not offloaded (the predicate asks the
    codegen)."""
    from minitvm.relay.op.contrib.dnnl import partition_for_dnnl

    x = relay.var("x", shape=(2, 8))
    a = relay.nn.relu(x)
    out = relay.Tuple([relay.tanh(a), relay.sigmoid(a)])
    mod = tvm.IRModule.from_expr(relay.Function([x], out))
    pm = partition_for_dnnl(mod)
    assert [g.name_hint for g in pm.functions if g.name_hint != "main"] == [
        "tvmgen_default_dnnl_main_0"]
    lib, m = _graph_build(pm)
    xv = _rand(2, 8, seed=2)
    m.set_input("x", xv)
    m.run()
    r = np.maximum(xv, 0)
    np.testing.assert_allclose(m.get_output(0).numpy(), np.tanh(r), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.get_output(1).numpy(), 1 / (1 + np.exp(-r)), rtol=1e-5,
                               atol=1e-6)

    d = relay.var("d", shape=(1, 8, 8, 3))
    w = relay.var("w", shape=(3, 3, 3, 4))
    nhwc = relay.nn.conv2d(d, w, data_layout="NHWC", kernel_layout="HWIO")
    pm = partition_for_dnnl(tvm.IRModule.from_expr(relay.Function([d, w], nhwc)))
    assert all("dnnl" not in g.name_hint for g in pm.functions)
