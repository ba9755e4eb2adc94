"""random.threefry_generate / threefry_split / uniform / normal: types, the Threefry-4x64 core
against the Random123 known-answer vector, TVM's generator-state rules, distributions, text
round trip and relay.build."""

import numpy as np
import pytest
from relay_op_check import _mod, run_all

import minitvm as tvm
from minitvm import relay
from minitvm.topi.reference import random as R


def test_threefry_core_known_answer():
    # TVM's kernel injects the key nrounds/4 times, before each group of 4 rounds; Threefry
    # proper adds a last injection (s = 5) — with it, the Random123 vector for zeros comes out
    key = np.zeros(4, np.uint64)
    out = R.threefry(key, np.zeros((1, 4), np.uint64))[0]
    ks = np.append(key, np.uint64(0x1BD11BDAA9FC1A22) ^ key[0] ^ key[1] ^ key[2] ^ key[3])
    with np.errstate(over="ignore"):
        final = out + np.array([ks[(5 + j) % 5] + (5 if j == 3 else 0) for j in range(4)],
                               np.uint64)
    assert [hex(int(v)) for v in final] == ["0x9218ebde6c85537", "0x55941f5266d86105",
                                            "0x4bd25e16282434dc", "0xee29ec846bd2e40b"]


def test_threefry_key_and_generate():
    key = relay.random.threefry_key(1).data.numpy()
    assert key.dtype == np.uint64 and key.shape == (10,)
    assert list(key[4:]) == [0, 0, 0, 0, 1 << 63, 0]
    mod = _mod(lambda k: relay.random.threefry_generate(k, (2, 4)).astuple(), key)
    assert str(mod["main"].body.checked_type) == \
        "(Tensor[(10), uint64], Tensor[(2, 4), uint64])"
    new, bits = run_all(lambda k: relay.random.threefry_generate(k, (2, 4)).astuple(), key)
    assert new[7] == 8 and list(new[:6]) == list(key[:6])
    # words 4i..4i+3 hash the block (path, counter) with i added to each word; the counter
    # then advances by the number of words (as TVM's kernel does)
    blocks = np.stack([key[4:8] + np.uint64(i) for i in range(2)])
    np.testing.assert_array_equal(bits.reshape(-1), R.threefry(key[:4], blocks).reshape(-1))
    _, bits2 = run_all(lambda k: relay.random.threefry_generate(k, (8,)).astuple(), new)
    blocks = np.stack([new[4:8] + np.uint64(i) for i in range(2)])
    np.testing.assert_array_equal(bits2, R.threefry(key[:4], blocks).reshape(-1))
    _, big = run_all(lambda k: relay.random.threefry_generate(k, (48,)).astuple(), key)
    np.testing.assert_array_equal(big[:8], bits.reshape(-1))
    assert not np.intersect1d(big, bits2).size
    assert len(set(big.tolist())) == 48
    with pytest.raises(Exception, match="random.threefry_generate: Threefry generates groups"):
        _mod(lambda k: relay.random.threefry_generate(k, (3,)).astuple(), key)
    with pytest.raises(Exception, match=r"random.threefry_split: the generator key must be"):
        _mod(lambda k: relay.random.threefry_split(k).astuple(), key[:4])


def test_threefry_split():
    key = relay.random.threefry_key(7).data.numpy()
    left, right = run_all(lambda k: relay.random.threefry_split(k).astuple(), key)
    # the path gains a 0 (left) or a 1 (right) at the leftmost bit; the next bit moves on
    assert left[4] == 0 and right[4] == 1 << 63
    assert left[8] == right[8] == 1 << 62
    _, a = R.threefry_generate(left, (8,))
    _, b = R.threefry_generate(right, (8,))
    assert not np.intersect1d(a, b).size
    # a used-up path (64 + 64 splits) re-keys, the new key a hash of the old state
    full = key.copy()
    full[8] = full[9] = 0
    l2, r2 = R.threefry_split(full)
    assert list(l2[:4]) == list(r2[:4]) != list(full[:4])
    assert list(l2[4:]) == [0, 0, 0, 0, 1 << 62, 0] and r2[4] == 1 << 63


def test_uniform_and_normal():
    key = relay.random.threefry_key(3).data.numpy()
    new, u = run_all(lambda k: relay.random.uniform(k, (64, 64), low=-2.0, high=3.0).astuple(),
                     key)
    assert u.dtype == np.float32 and u.shape == (64, 64)
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.1 and abs(u.var() - 25 / 12) < 0.2
    # the same bits as threefry_generate: the top 23 bits as a fraction
    _, bits = R.threefry_generate(key, (64, 64))
    want = (bits >> np.uint64(41)).astype("float32") / np.float32(1 << 23) * 5 - 2
    np.testing.assert_allclose(u, want, rtol=1e-6, atol=1e-6)
    _, z = run_all(lambda k: relay.random.normal(k, (128, 64), "float64", mean=1.0,
                                                 scale=2.0).astuple(), key)
    assert z.dtype == np.float64
    assert abs(z.mean() - 1.0) < 0.1 and abs(z.std() - 2.0) < 0.1
    with pytest.raises(Exception, match="random.uniform: low must be a float32 scalar"):
        _mod(lambda k: relay.random.uniform(k, (4,), low=relay.const(0.0, "float64")).astuple(),
             key)


def test_random_program_prints_and_parses():
    key = relay.var("key", shape=(10,), dtype="uint64")
    k1, k2 = relay.random.threefry_split(key)
    _, a = relay.random.uniform(k1, (4,))
    _, b = relay.random.normal(k2, (4,))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([key], a + b)))
    text = mod.astext()
    assert "random.uniform(" in text and "out_shape=[4]" in text
    tvm.ir.assert_structural_equal(relay.parse(text), mod)
