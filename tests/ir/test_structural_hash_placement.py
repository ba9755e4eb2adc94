"""structural_hash codes a VirtualDevice without a target once per placement (every Relay
expression reads one): the codes are the ones its text gave before, placements hash apart,
a targeted placement still hashes through its text, and a 100,000-call program hashes at the
default recursion limit."""

import sys

import minitvm as tvm
from minitvm import relay
from minitvm.ir import structural
from minitvm.ir.structural import _h, structural_hash
from minitvm.ir.virtual_device import VirtualDevice


def _text_code(vd) -> int:
    """The code of a leaf from its type name and text (``_leaf_hash``'s rule)."""
    return _h(type(vd).__name__, repr(vd))


def test_placement_codes_are_the_text_codes():
    for vd in (VirtualDevice(), VirtualDevice(tvm.cpu(0)), VirtualDevice.make(2, 1),
               VirtualDevice(memory_scope="global"), VirtualDevice.make(1, 3, None, "local")):
        assert structural._leaf_code(vd, structural._LEAF) == _text_code(vd)
        assert structural._leaf_code(vd, structural._LEAF) == _text_code(vd)  # (cached)


def test_placements_hash_apart_and_targets_keep_their_text():
    codes = {structural._leaf_code(vd, structural._LEAF) for vd in (
        VirtualDevice(), VirtualDevice(tvm.cpu(0)), VirtualDevice.make(1, 1),
        VirtualDevice(memory_scope="global"))}
    assert len(codes) == 4
    targeted = VirtualDevice(tvm.cpu(0), tvm.target.Target("llvm"))
    assert structural._leaf_code(targeted, structural._LEAF) == _text_code(targeted)
    assert _text_code(targeted) != _text_code(VirtualDevice(tvm.cpu(0)))


def _fn(device=None):
    x = relay.var("p0", shape=(1, 16))
    y = relay.var("p1", shape=(1, 16))
    body = relay.add(x, y)
    if device is not None:
        body = body.with_virtual_device(VirtualDevice(device))
    return relay.Function([x, y], body)


def test_functions_hash_by_structure_and_placement():
    assert structural_hash(_fn()) == structural_hash(_fn())
    assert structural_hash(_fn(tvm.cpu(0))) == structural_hash(_fn(tvm.cpu(0)))
    assert structural_hash(_fn()) != structural_hash(_fn(tvm.cpu(0)))


def test_hundred_thousand_calls_hash_without_recursion():
    assert sys.getrecursionlimit() <= 1000  # the default limit: nothing raised it
    x = relay.var("x", shape=(1, 4))
    y = x
    for i in range(100_000):
        y = relay.negative(y) if i % 2 else relay.abs(y)
    a = structural_hash(relay.Function([x], y))
    x2 = relay.var("x", shape=(1, 4))
    y2 = x2
    for i in range(100_000):
        y2 = relay.negative(y2) if i % 2 else relay.abs(y2)
    assert structural_hash(relay.Function([x2], y2)) == a
