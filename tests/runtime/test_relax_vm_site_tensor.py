"""``builtins.site_tensor``: the allocator of one storage site of generated code hands back a
tensor it made before only when nothing refers to that tensor or its memory (a view of it, a
tuple holding it), makes a new aligned buffer otherwise, and keeps numpy's bound on the
storage's size."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm.runtime.relax_vm import builtins

SIZE, SHAPE = builtins.ShapeTuple([64]), builtins.ShapeTuple([4, 4])


def test_a_free_tensor_is_handed_back_itself():
    alloc = builtins.site_tensor(0, "float32")
    a = alloc(SIZE, SHAPE)
    assert a.shape == (4, 4) and a.dtype == "float32" and a.ctypes.data % builtins.ALIGN == 0
    first = id(a)
    del a
    b = alloc(SIZE, SHAPE)
    assert id(b) == first and alloc.buffers == 1


def test_the_two_last_tensors_alternate_while_one_is_alive():
    alloc = builtins.site_tensor(0, "float32")
    a = alloc(SIZE, SHAPE)
    b = alloc(SIZE, SHAPE)  # (a alive: another buffer)
    assert not np.shares_memory(a, b)
    ida, idb = id(a), id(b)
    del a
    c = alloc(SIZE, SHAPE)  # b alive, a free: a itself
    assert id(c) == ida
    del b
    d = alloc(SIZE, SHAPE)  # c alive, b free
    assert id(d) == idb and alloc.buffers == 2


_HOLD = {"tensor": lambda a: a, "view": lambda a: a.reshape(16), "row": lambda a: a[1],
         "tuple": lambda a: (a,), "numpy view": lambda a: a.view(np.int32)}


@pytest.mark.parametrize("hold", sorted(_HOLD))
def test_a_tensor_something_still_sees_is_not_handed_out(hold):
    alloc = builtins.site_tensor(0, "float32")
    a = alloc(SIZE, SHAPE)
    a[...] = 7
    kept = _HOLD[hold](a)
    del a
    others = [alloc(SIZE, SHAPE) for _ in range(3)]  # (each alive: three new buffers)
    for o in others:
        o[...] = -1
    seen = kept[0] if hold == "tuple" else kept
    assert not any(np.shares_memory(o, seen) for o in others)
    assert (np.asarray(seen).view(np.float32) == 7).all()


def test_another_shape_or_a_larger_offset_makes_a_new_tensor():
    alloc = builtins.site_tensor(8, "int64")
    a = alloc(SIZE, builtins.ShapeTuple([7]))
    assert a.ctypes.data % builtins.ALIGN == 8
    first = id(a)
    del a
    b = alloc(SIZE, builtins.ShapeTuple([2, 3]))
    assert b.shape == (2, 3) and id(b) != first
    del b
    assert alloc(SIZE, (2, 3)).shape == (2, 3) and alloc.buffers == 2  # (a plain tuple too)


def test_a_storage_too_small_for_the_tensor_is_numpys_error():
    alloc = builtins.site_tensor(0, "float32")
    alloc(SIZE, SHAPE)  # (made for 64 bytes: the next call's storage is smaller)
    with pytest.raises(TypeError, match="buffer is too small"):
        alloc(builtins.ShapeTuple([60]), SHAPE)
    with pytest.raises(TypeError, match="buffer is too small"):
        alloc(SIZE, builtins.ShapeTuple([5, 4]))


def test_a_zero_size_tensor():
    alloc = builtins.site_tensor(0, "float32")
    assert alloc(builtins.ShapeTuple([0]), builtins.ShapeTuple([0, 4])).shape == (0, 4)
