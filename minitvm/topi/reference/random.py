"""Numpy references of TVM's splittable counter-based random ops (random.threefry_generate,
random.threefry_split, random.uniform, random.normal).

The generator is TVM's 10-word uint64 state: words 0-3 the Threefry-4x64 key, 4-5 the split
path, 6-7 the counter (only word 7 counts), 8-9 the next path bit as a 128-bit one-hot. Random
words are Threefry-4x64 (20 rounds, Skein's rotation and permutation constants) of the key and
the path+counter block incremented by i, so the bits equal TVM's. ``normal`` turns pairs of
TVM-identical uniforms into normals by Box-Muller (the pairing is ours).
"""

from __future__ import annotations

import numpy as np

from ..utils import reference

__all__ = ["threefry", "threefry_generate", "threefry_split", "uniform", "normal",
           "threefry_key_array"]

_ROT = ((14, 16), (52, 57), (23, 40), (5, 37), (25, 33), (46, 12), (58, 22), (32, 32))
_PERM = (0, 3, 2, 1)
_PARITY = np.uint64(0x1BD11BDAA9FC1A22)
_MASK = (1 << 64) - 1
_TOP = np.uint64(1 << 63)


def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def threefry(key: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """Threefry-4x64-20 of ``blocks`` (M, 4) under the 4-word ``key``; wrapping uint64."""
    with np.errstate(over="ignore"):
        ks = np.empty(5, np.uint64)
        ks[:4] = key
        ks[4] = _PARITY ^ key[0] ^ key[1] ^ key[2] ^ key[3]
        x = blocks.astype(np.uint64).copy()
        for s in range(5):  # 5 key injections, each followed by 4 rounds
            for j in range(4):
                x[:, j] += ks[(s + j) % 5] + (np.uint64(s) if j == 3 else np.uint64(0))
            for k in range(4):
                for j in range(2):
                    a, b = x[:, 2 * j], x[:, 2 * j + 1]
                    a = a + b
                    b = _rotl(b, _ROT[(s * 4 + k) % 8][j]) ^ a
                    x[:, 2 * j], x[:, 2 * j + 1] = a, b
                x = x[:, _PERM]
    return x


def threefry_key_array(seed: int) -> np.ndarray:
    """TVM's initial generator state of ``seed`` (its 32 big-endian bytes read as 4 words)."""
    words = np.frombuffer(int(seed).to_bytes(32, "big"), dtype=np.uint64)
    return np.concatenate([words, np.array([0, 0, 0, 0, 1 << 63, 0], np.uint64)])


def _shift_path(hi, lo):
    """The 128-bit one-hot (hi, lo) moved one bit to the right."""
    if hi == 1:
        return np.uint64(0), _TOP
    if hi == 0:
        return np.uint64(0), lo >> np.uint64(1)
    return hi >> np.uint64(1), np.uint64(0)


def threefry_generate(gen: np.ndarray, out_shape) -> tuple[np.ndarray, np.ndarray]:
    """(new generator, random uint64 words of ``out_shape``)."""
    gen = gen.astype(np.uint64)
    n = int(np.prod(out_shape, dtype=np.int64))
    tmp = gen.copy()
    if not int(gen[7]) < _MASK - n:  # the counter is used up: extend the path or re-key
        if gen[8] == 0 and gen[9] == 0:
            tmp[:4] = threefry(gen[:4], np.array([[gen[4], gen[5], _MASK, _MASK]],
                                                 np.uint64))[0]
            tmp[4:] = np.array([0, 0, 0, 0, 1 << 63, 0], np.uint64)
        else:
            tmp[4], tmp[5] = gen[4] | gen[8], gen[5] | gen[9]
            tmp[6] = tmp[7] = np.uint64(0)
            tmp[8], tmp[9] = _shift_path(gen[8], gen[9])
    with np.errstate(over="ignore"):
        blocks = np.tile(tmp[4:8], (n // 4, 1))
        blocks += np.arange(n // 4, dtype=np.uint64)[:, None]
        bits = threefry(tmp[:4], blocks).reshape(out_shape)
        new = tmp.copy()
        new[6] = np.uint64(0)
        new[7] = tmp[7] + np.uint64(n)
    return new, bits


def threefry_split(gen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two distinct generators: the path extended by a 0 (left) and by a 1 (right)."""
    gen = gen.astype(np.uint64)
    left, right = gen.copy(), gen.copy()
    if gen[8] == 0 and gen[9] == 0:  # no room left in the path: re-key
        left[:4] = threefry(gen[:4], gen[4:8][None, :])[0]
        left[4:] = np.array([0, 0, 0, 0, 1 << 62, 0], np.uint64)
        right[:4] = left[:4]
        right[4:] = np.array([1 << 63, 0, 0, 0, 1 << 62, 0], np.uint64)
        return left, right
    left[8], left[9] = _shift_path(gen[8], gen[9])
    right[4], right[5] = gen[4] | gen[8], gen[5] | gen[9]
    right[8], right[9] = left[8], left[9]
    return left, right


def uniform(gen, low, high, out_shape, out_dtype="float32"):
    """(new generator, samples in [low, high)): the top mantissa bits of the random words."""
    new, bits = threefry_generate(gen, out_shape)
    nfrac = 23 if out_dtype == "float32" else 52
    dt = np.dtype(out_dtype)
    std = (bits >> np.uint64(64 - nfrac)).astype(dt) / dt.type(1 << nfrac)
    return new, (std * (dt.type(high) - dt.type(low)) + dt.type(low)).astype(dt)


def normal(gen, mean, scale, out_shape, out_dtype="float32"):
    """(new generator, normal samples): Box-Muller on pairs of uniforms."""
    n = int(np.prod(out_shape, dtype=np.int64))
    m = -(-n // 4) * 4 if n % 2 == 0 else -(-(n + 1) // 4) * 4
    m = max(m, 4)
    new, u = uniform(gen, 0.0, 1.0, (m,), "float64")
    half = m // 2
    r = np.sqrt(-2.0 * np.log1p(-u[:half]))
    theta = 2.0 * np.pi * u[half:]
    z = np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1).reshape(-1)[:n]
    dt = np.dtype(out_dtype)
    return new, (z.reshape(out_shape) * float(scale) + float(mean)).astype(dt)


def _shape(attrs):
    return tuple(int(s) for s in attrs.out_shape)


@reference("random.threefry_generate")
def _generate(attrs, args, out_type):
    return threefry_generate(args[0], _shape(attrs))


@reference("random.threefry_split")
def _split(attrs, args, out_type):
    return threefry_split(args[0])


@reference("random.uniform")
def _uniform(attrs, args, out_type):
    gen, low, high = args
    return uniform(gen, np.asarray(low).item(), np.asarray(high).item(), _shape(attrs),
                   str(attrs.out_dtype))


@reference("random.normal")
def _normal(attrs, args, out_type):
    gen, mean, scale = args
    return normal(gen, np.asarray(mean).item(), np.asarray(scale).item(), _shape(attrs),
                  str(attrs.out_dtype))
