"""``minitvm tune MODEL --trials N -o records.jsonl`` on a Relay text model."""

from __future__ import annotations

from tune_helpers import DENSE, small_mlp

from minitvm.cli import main
from minitvm.tune import RecordDatabase


def test_cli_tune_writes_records(tmp_path, capsys, patient_workers):
    model = tmp_path / "mlp.relay"
    model.write_text(small_mlp().astext())
    out = tmp_path / "records.jsonl"
    assert main(["tune", str(model), "--trials", "2", "-o", str(out), "-q",
                 "--timeout", str(patient_workers)]) == 0
    text = capsys.readouterr().out
    assert "1 tasks: dense(16, 48, 64)" in text and f"records: {out}" in text
    db = RecordDatabase(out)
    # 2 candidates, each confirmed; the best is one of those measured
    assert len(db) == 4, [(r.knobs, r.error) for r in db]
    measured = [r.knobs for r in db if not r.confirm]
    assert len(measured) == 2 and db.best(DENSE).knobs in measured
