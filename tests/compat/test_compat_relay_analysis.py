"""relay.analysis's model statistics as TVM defines them."""

import minitvm as tvm
from minitvm import relay
from minitvm.relay import analysis


def _typed(body, params):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))
    return mod


def test_mac_count_dense_conv_batch_matmul():
    x = relay.var("x", shape=(512, 1024))
    w = relay.var("w", shape=(256, 1024))
    mod = _typed(relay.Tuple([relay.nn.dense(x, w)]), [x, w])
    assert analysis.get_total_mac_number(mod["main"]) == 512 * 256 * 1024
    d = relay.var("d", shape=(1, 3, 224, 224))
    k = relay.var("k", shape=(64, 3, 7, 7))
    conv = relay.nn.conv2d(d, k, strides=(2, 2), padding=(3, 3), channels=64, kernel_size=(7, 7))
    mod = _typed(conv, [d, k])
    assert analysis.get_total_mac_number(mod["main"]) == 64 * 112 * 112 * 3 * 7 * 7
    g = relay.var("g", shape=(1, 8, 10, 10))
    gk = relay.var("gk", shape=(8, 2, 3, 3))
    mod = _typed(relay.nn.conv2d(g, gk, padding=(1, 1), groups=4), [g, gk])
    assert analysis.get_total_mac_number(mod) == 8 * 10 * 10 * 2 * 9
    a = relay.var("a", shape=(4, 5, 6))
    b = relay.var("b", shape=(4, 7, 6))
    mod = _typed(relay.nn.batch_matmul(a, b), [a, b])
    assert analysis.get_total_mac_number(mod["main"]) == 4 * 5 * 7 * 6
    # untyped: nothing counted, as in TVM
    assert analysis.get_total_mac_number(relay.nn.dense(x, w)) == 0


def test_op_freqs_and_layers():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("w", shape=(4, 4, 3, 3))
    a = relay.nn.conv2d(x, w, padding=(1, 1))
    b = relay.nn.conv2d(x, w, padding=(1, 1))  # parallel to a: the same layer
    c = relay.nn.relu(relay.add(a, b))
    d = relay.nn.conv2d(c, w, padding=(1, 1))
    func = relay.Function([x, w], d)
    assert analysis.count_layers(func, ["nn.conv2d"]) == 2
    assert analysis.count_layers(func, ["nn.conv2d", "nn.relu"]) == 3
    assert analysis.list_op_freqs(tvm.IRModule.from_expr(func)) == {
        "nn.conv2d": 3, "add": 1, "nn.relu": 1}


def test_layer_count_long_chain_is_iterative():
    x = relay.var("x", shape=(2,))
    y = x
    for _ in range(100_000):
        y = relay.nn.relu(y)
    assert analysis.count_layers(y, ["nn.relu"]) == 100_000
    assert analysis.list_op_freqs(y) == {"nn.relu": 100_000}


def test_check_constant_and_fc_transpose():
    c = relay.const(1.0)
    assert analysis.check_constant(relay.Tuple([c, relay.add(c, c)]))
    x = relay.var("x", shape=(2,))
    assert not analysis.check_constant(relay.add(x, c))
    data = relay.var("data", shape=(1, 8))
    w = relay.var("w", shape=(8, 16))
    out = relay.nn.dense(data, relay.transpose(w, [1, 0]))
    assert analysis.search_fc_transpose(relay.Function([data, w], out)) == ["w"]


def test_extract_fused_functions():
    x = relay.var("x", shape=(1, 8))
    w = relay.var("w", shape=(4, 8))
    y = relay.nn.relu(relay.nn.dense(x, w))
    z = relay.nn.softmax(y)
    funcs = analysis.extract_fused_functions(tvm.IRModule.from_expr(relay.Function([x, w], z)))
    assert len(funcs) == 2
    ops = sorted(sorted(analysis.list_op_freqs(f)) for f in funcs.values())
    assert ops == [["nn.dense", "nn.relu"], ["nn.softmax"]]
