"""``minitvm tune MODEL --trials N -o records.jsonl`` on a Relay text model."""

from __future__ import annotations

from tune_helpers import DENSE, small_mlp

from minitvm.cli import main
from minitvm.tune import RecordDatabase


def test_cli_tune_writes_records(tmp_path, capsys):
    model = tmp_path / "mlp.relay"
    model.write_text(small_mlp().astext())
    out = tmp_path / "records.jsonl"
    assert main(["tune", str(model), "--trials", "2", "-o", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    assert "1 tasks: dense(16, 48, 64)" in text and f"records: {out}" in text
    db = RecordDatabase(out)
    assert len(db) == 4 and db.best(DENSE) is not None  # 2 candidates, each confirmed
