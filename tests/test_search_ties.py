"""A ranking cut at `n` returns the same rows every time the table is opened: rows of equal score at the boundary
(duplicate texts score alike) are read whole, reading further while they run past what was read, and ordered
by the vault's reading order; only a tie group beyond the most a ranking reads is left out whole. Before, the engine's choice among tied rows changed from one opening to the
next, and so did a survey's selection."""

from __future__ import annotations

import lancedb
from lancedb.index import FTS

from papervault.index.search import _fts, _vector

DIM = 4


def _table(path, distinct: int, tied: int):
    """`distinct` rows that match "alpha" better than `tied` rows of one identical text, in a real LanceDB
    table with its full-text index; the tied rows are written in reverse reading order."""
    rows = [{"id": f"d{k}", "paper_id": f"a{k:02d}", "ordinal": 0, "text": "alpha alpha alpha " + "x " * k,
             "vector": [1.0, 0.0, 0.0, float(k + 1)]} for k in range(distinct)]
    rows += [{"id": f"t{k:02d}", "paper_id": f"p{k:02d}", "ordinal": 0, "text": "alpha filler words here",
              "vector": [0.0, 1.0, 0.0, 0.0]} for k in reversed(range(tied))]
    db = lancedb.connect(str(path))
    t = db.create_table("chunks", rows)
    t.create_index("text", config=FTS(), replace=True)
    return lambda: lancedb.connect(str(path)).open_table("chunks")


def test_rows_tied_at_the_boundary_come_in_reading_order_every_time(tmp_path):
    open_table = _table(tmp_path / "db", distinct=5, tied=10)
    cols = ["id", "paper_id", "ordinal", "text"]
    runs = [[r["id"] for r in _fts(open_table(), "alpha", None, 8, cols)] for _ in range(4)]
    assert all(r == runs[0] for r in runs), runs
    # the five better rows, then the tied ones by paper in reading order (p00, p01, ...), not as written
    assert sorted(runs[0][:5]) == [f"d{k}" for k in range(5)] and runs[0][5:] == ["t00", "t01", "t02"], runs[0]
    vec = [[r["id"] for r in _vector(open_table(), [0.0, 1.0, 0.0, 0.0], None, 3, cols)] for _ in range(4)]
    assert all(v == ["t00", "t01", "t02"] for v in vec), vec


def test_a_tie_group_larger_than_what_was_read_is_read_further(tmp_path, monkeypatch):
    from papervault.index import search

    open_table = _table(tmp_path / "db", distinct=5, tied=60)
    cols = ["id", "paper_id", "ordinal"]
    # 60 rows tie for the places 6 to 8: they are read whole (16 rows first, then 64, then all 65), so the
    # ranking still has its 8 rows, the tied ones in reading order
    runs = [[r["id"] for r in _fts(open_table(), "alpha", None, 8, cols)] for _ in range(3)]
    assert all(r == runs[0] for r in runs), runs
    assert sorted(runs[0][:5]) == [f"d{k}" for k in range(5)] and runs[0][5:] == ["t00", "t01", "t02"], runs[0]
    vec = [r["id"] for r in _vector(open_table(), [0.0, 1.0, 0.0, 0.0], None, 3, cols)]
    assert vec == ["t00", "t01", "t02"], vec

    # beyond the most a ranking reads, which rows the engine returned is its choice: the group is left out whole
    monkeypatch.setattr(search, "TIE_MAX_ROWS", 32)
    rows = _fts(open_table(), "alpha", None, 8, cols)
    assert sorted(r["id"] for r in rows) == [f"d{k}" for k in range(5)], rows
