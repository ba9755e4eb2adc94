"""LabelOps as TVM v0.19's LabelOpsMutator labels functions (label_ops.cc read as facts; TVM has
no Before/Expected test of the pass): a 16-hex-digit ``hash`` of the function and every call
attribute whose name contains "layout", empty ones included, the last call in post order winning
where calls disagree. Deliberate differences (documented in the pass): a labelled function keeps
its label, and an enclosing function records the layouts of all its calls, where TVM's record
forgets the calls visited before a nested function."""

import numpy as np
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform


def _label(func):
    mod = transform.InferType()(tvm.IRModule.from_expr(func))
    return transform.LabelOps()(mod)["main"]


def _conv(x, w, **kw):
    return relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1), **kw)


def test_layouts_of_the_calls_become_function_attributes_empty_ones_too():
    x = relay.var("x", shape=(1, 4, 5, 5))
    w = relay.var("w", shape=(4, 4, 3, 3))
    before = relay.Function([x, w], relay.nn.relu(_conv(x, w)))
    got = _label(before)
    expected = before.with_attrs(
        {
            "hash": got.get_attr("hash"),
            "data_layout": "NCHW",
            "kernel_layout": "OIHW",
            "out_layout": "",
        }
    )
    tvm.ir.assert_structural_equal(
        got, transform.InferType()(tvm.IRModule.from_expr(expected))["main"]
    )
    h = got.get_attr("hash")
    assert len(h) == 16 and int(h, 16) >= 0
    check_numerics(before, got, rtol=1e-5, atol=1e-5)


def test_the_last_call_in_post_order_wins():
    """conv2d NCHW then max_pool2d NHWC... both write ``layout``-named keys; the pool (later in
    post order) decides ``layout``, the conv's keys stay."""
    x = relay.var("x", shape=(1, 4, 5, 5))
    w = relay.var("w", shape=(4, 4, 3, 3))
    y = _conv(x, w)
    y = relay.nn.max_pool2d(
        relay.transpose(y, (0, 2, 3, 1)), pool_size=(2, 2), layout="NHWC", out_layout="NHWC"
    )
    y = relay.nn.avg_pool2d(relay.transpose(y, (0, 3, 1, 2)), pool_size=(1, 1), layout="NCHW")
    got = _label(relay.Function([x, w], y))
    assert got.get_attr("layout") == "NCHW"  # avg_pool2d, the last call
    assert got.get_attr("out_layout") == ""  # avg_pool2d's, replacing max_pool2d's NHWC
    assert got.get_attr("data_layout") == "NCHW"


def test_nested_functions_are_labelled_and_feed_their_parent():
    x = relay.var("x", shape=(1, 4, 5, 5))
    w = relay.var("w", shape=(4, 4, 3, 3))
    a = relay.var("a", shape=(1, 4, 5, 5))
    inner = relay.Function([a], relay.nn.avg_pool2d(a, pool_size=(1, 1), layout="NCHW"))
    f = relay.var("f")
    y = relay.Let(f, inner, relay.Call(f, [_conv(x, w)]))
    before = relay.Function([x, w], y)
    got = _label(before)
    nested = got.body.value
    assert nested.get_attr("layout") == "NCHW" and nested.get_attr("data_layout") is None
    assert got.get_attr("layout") == "NCHW" and got.get_attr("data_layout") == "NCHW"
    assert nested.get_attr("hash") != got.get_attr("hash")
    again = transform.LabelOps()(tvm.IRModule.from_expr(got))["main"]
    assert again.get_attr("hash") == got.get_attr("hash")  # labels are kept
    args = [
        np.random.default_rng(0).standard_normal((1, 4, 5, 5)).astype("float32"),
        np.random.default_rng(1).standard_normal((4, 4, 3, 3)).astype("float32"),
    ]
    check_numerics(before, got, args=args, rtol=1e-5, atol=1e-5)


def test_a_100000_call_chain_is_labelled_at_the_default_recursion_limit():
    """The layout collector walks iteratively: a 100,000-deep chain ending in an NHWC pool."""
    x = relay.var("x", shape=(1, 2, 2, 2))
    y = x
    for _ in range(100_000):
        y = relay.negative(y)
    y = relay.nn.max_pool2d(y, pool_size=(1, 1), layout="NHWC")
    got = _label(relay.Function([x], y))
    assert got.get_attr("layout") == "NHWC" and len(got.get_attr("hash")) == 16


def test_repeated_fused_functions_share_one_label_and_keep_their_types(monkeypatch):
    """Thirty equal fused pools (renamed copies): one label and one layout record, as hashing
    each gives; every rebuilt expression carries the type of the one it replaces, so the
    result is typed without a re-check, and a re-check gives the same program."""
    from minitvm.relay.analysis.properties import _check_typed
    from minitvm.relay.transform import label_ops

    def program():
        x = relay.var("x", shape=(1, 4, 5, 5))
        y = x
        for _ in range(30):
            a = relay.var("a", shape=(1, 4, 5, 5))
            pool = relay.nn.avg_pool2d(relay.negative(a), pool_size=(1, 1), layout="NCHW")
            fused = relay.Function([a], pool).with_attr("Primitive", 1)
            y = relay.Call(fused, [y])
        return relay.Function([x], y)

    got = _label(program())
    fused = [e for e in _calls(got) if isinstance(e.op, relay.Function)]
    assert len(fused) == 30 and len({f.op.get_attr("hash") for f in fused}) == 1
    assert all(f.op.get_attr("layout") == "NCHW" for f in fused)
    assert _check_typed(tvm.IRModule.from_expr(got), deep=True) is None
    tvm.ir.assert_structural_equal(got, transform.InferType()(tvm.IRModule.from_expr(got))["main"])
    monkeypatch.setattr(label_ops, "canonical_key", lambda f: None)
    uncached = _label(program())
    assert str(got) == str(uncached)
    check_numerics(program(), got, rtol=1e-5, atol=1e-5)


def _calls(fn):
    from minitvm.relay.analysis.properties import walk

    return [e for e in walk(fn) if isinstance(e, relay.Call)]


def test_an_enclosing_label_hashes_its_nested_functions_as_globals_named_by_their_labels():
    """main's label is the hash of main with each fused function replaced by a global named
    after that function's label (its own hash stays out of main's): what the pass computes
    from stand-ins, without rebuilding main, is that hash."""
    from minitvm.ir.structural import structural_hash

    x = relay.var("x", shape=(1, 4, 5, 5))
    y = x
    for k in range(3):
        a = relay.var("a", shape=(1, 4, 5, 5))
        op = relay.negative if k != 1 else relay.abs
        y = relay.Call(relay.Function([a], op(a)).with_attr("Primitive", 1), [y])
    got = _label(relay.Function([x], y))
    chain, e = [], got.body
    while isinstance(e, relay.Call):  # the outermost call first
        chain.append(e.op)
        e = e.args[0]
    z = got.params[0]
    for fn in reversed(chain):
        z = relay.Call(tvm.ir.GlobalVar(f"labelled_{fn.get_attr('hash')}"), [z])
    want = structural_hash(relay.Function(got.params, z, got.ret_type, got.type_params))
    assert got.get_attr("hash") == f"{want:016x}"
