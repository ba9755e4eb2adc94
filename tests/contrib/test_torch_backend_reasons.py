"""``torch_backend.fallback_reasons`` keeps the last ``FALLBACK_REASONS_KEPT`` reasons (a process
compiling graphs for hours must not grow by one per eager graph) and reads as the list it was."""

import collections
import warnings

from minitvm.contrib import torch_backend as tb


class _Graph:
    """What ``_fallback`` needs of a torch.fx GraphModule (no torch here)."""

    def forward(self):
        return "eager"


def test_fallback_reasons_are_bounded_and_read_like_a_list(monkeypatch):
    monkeypatch.setattr(tb, "_WARNED", collections.OrderedDict())
    saved = list(tb.fallback_reasons)
    tb.fallback_reasons.clear()
    try:
        assert tb.fallback_reasons == [] and not tb.fallback_reasons
        keep = tb.FALLBACK_REASONS_KEPT
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for n in range(keep + 5):
                assert tb._fallback(_Graph(), f"reason {n}")() == "eager"
        assert len(tb.fallback_reasons) == keep
        assert tb.fallback_reasons[0] == "reason 5"
        assert tb.fallback_reasons[-1] == f"reason {keep + 4}"
        assert tb.fallback_reasons == [f"reason {n}" for n in range(5, keep + 5)]
        assert tb.fallback_reasons != ["reason 5"]
        tb.fallback_reasons.clear()
        assert tb.fallback_reasons == []
    finally:
        tb.fallback_reasons.clear()
        tb.fallback_reasons.extend(saved)


def test_each_reason_still_warns_once(monkeypatch):
    monkeypatch.setattr(tb, "_WARNED", collections.OrderedDict())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(3):
            tb._fallback(_Graph(), "the same reason")
    assert [str(w.message) for w in seen] == \
        ["minitvm torch.compile backend: running this graph eagerly: the same reason"]
    assert list(tb.fallback_reasons)[-3:] == ["the same reason"] * 3


def test_warned_reasons_are_bounded_too(monkeypatch):
    monkeypatch.setattr(tb, "_WARNED", collections.OrderedDict())
    saved = list(tb.fallback_reasons)
    keep = tb.FALLBACK_REASONS_KEPT
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            for n in range(keep + 5):
                tb._fallback(_Graph(), f"reason {n}")
            assert len(tb._WARNED) == keep and len(seen) == keep + 5
            tb._fallback(_Graph(), f"reason {keep + 4}")  # recent: no second warning
            assert len(seen) == keep + 5
            tb._fallback(_Graph(), "reason 0")  # pushed out long ago: warns again
            assert len(seen) == keep + 6 and len(tb._WARNED) == keep
    finally:
        tb.fallback_reasons.clear()
        tb.fallback_reasons.extend(saved)
