"""``broadcast_to_like`` / ``collapse_sum_like`` / ``collapse_sum_to``: the smaller shape must
broadcast onto the larger one, in that direction (numpy's ``broadcast_to``), a type error
otherwise, where the relation checked only that the two broadcast together."""

import pytest

import minitvm as tvm
from minitvm import relay


def _typed(body, *params):
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(list(params), body)))


def test_broadcast_to_like_needs_the_data_to_broadcast_onto_the_like():
    x, like = relay.var("x", shape=(1, 3)), relay.var("l", shape=(4, 3))
    assert str(_typed(relay.broadcast_to_like(x, like), x, like)["main"].ret_type) == \
        "Tensor[(4, 3), float32]"
    with pytest.raises(Exception, match=r"broadcast_to_like: \(4, 3\) does not broadcast to "
                                        r"\(1, 3\)"):
        _typed(relay.broadcast_to_like(like, x), x, like)


def test_collapse_sum_needs_the_target_to_broadcast_onto_the_data():
    x, like = relay.var("x", shape=(4, 3)), relay.var("l", shape=(3,))
    assert str(_typed(relay.collapse_sum_like(x, like), x, like)["main"].ret_type) == \
        "Tensor[(3), float32]"
    small = relay.var("s", shape=(1, 3))
    with pytest.raises(Exception, match=r"collapse_sum_like: \(4, 3\) does not broadcast to "
                                        r"\(1, 3\)"):
        _typed(relay.collapse_sum_like(small, x), small, x)
    with pytest.raises(Exception, match=r"collapse_sum_to: \(4, 3\) does not broadcast to "
                                        r"\(1, 3\)"):
        _typed(relay.collapse_sum_to(small, (4, 3)), small)
