"""Weight layout transforms as data (``schedule.weight_packs``): every registered kind written
as a JSON record and read back packs a weight exactly as the original transform does."""

import json

import numpy as np
import pytest

from minitvm.schedule import (
    conv_lanes,
    conv_pointwise,
    conv_vnni,
    conv_winograd,
    gemm,
    gemm_vnni,
    weight_packs,
)

_RNG = np.random.default_rng(0)
_F32 = lambda *s: _RNG.standard_normal(s).astype("float32")  # noqa: E731
_I8 = lambda *s: _RNG.integers(-128, 128, s).astype("int8")  # noqa: E731

CASES = [
    ("gemm.pack_b", gemm._PackB(8), _F32(20, 12)),
    ("gemm.pack_b", gemm._PackB(16, transpose_b=False), _F32(12, 20)),
    ("conv_pointwise", conv_pointwise.PackWeight("pixels", 20, 8), _F32(20, 8, 1, 1)),
    ("conv_pointwise", conv_pointwise.PackWeight("channels", 20, 8), _F32(20, 8, 1, 1)),
    ("conv_lanes", conv_lanes.PackWeight(32, 4, 3, 3, real_o=24), _F32(24, 4, 3, 3)),
    ("conv_winograd", conv_winograd.PackWeight(2, 12, 5), _F32(12, 5, 3, 3)),
    ("conv_winograd", conv_winograd.PackWeight(4, 8, 3, groups=2), _F32(8, 3, 3, 3)),
    ("conv_vnni", conv_vnni.PackWeight(20, 6, 3, 3), _I8(20, 6, 3, 3)),
    ("gemm_vnni", gemm_vnni.PackWeight(20, 12, True), _I8(20, 12)),
]


@pytest.mark.parametrize("kind, transform, weight", CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_record_round_trip_packs_identically(kind, transform, weight):
    record = weight_packs.pack_record(transform)
    assert record["kind"] == kind
    again = weight_packs.pack_from_record(json.loads(json.dumps(record)))
    assert type(again) is type(transform) and vars(again) == vars(transform)
    want = transform(weight)
    got = again(weight)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_every_registered_kind_is_covered_and_importable():
    assert {c[0] for c in CASES} == set(weight_packs.PACK_KINDS)


def test_unregistered_transform_is_refused():
    with pytest.raises(ValueError, match="not a registered kind"):
        weight_packs.pack_record(lambda w: w.T)


@pytest.mark.parametrize("record, message", [
    ({"kind": "os.system", "fields": {}}, "unknown weight transform kind 'os.system'"),
    ({"kind": "gemm.pack_b", "fields": {"nr": 8, "bogus": 1}}, "bad fields"),
    ({"kind": "gemm.pack_b", "fields": {"nr": [8]}}, "must be plain values"),
    ({"kind": "gemm.pack_b"}, "must be an object with 'kind' and 'fields'"),
    ("gemm.pack_b", "must be an object"),
])
def test_bad_records_name_what_is_wrong(record, message):
    with pytest.raises(ValueError, match=message):
        weight_packs.pack_from_record(record)
