"""The IVF-PQ vector index is trained on real vectors only, and LanceDB's own warnings go to the index log."""

from __future__ import annotations

import lancedb
import numpy as np
import pyarrow as pa

from papervault.index import tables


def _table(path, pending: int, n: int = 400, dim: int = 32):
    rng = np.random.default_rng(0)
    vec = np.zeros((n, dim), np.float32)
    vec[:, 0] = 1.0                       # the placeholder every pending row holds
    vec[:n - pending] = rng.normal(size=(n - pending, dim))
    data = pa.table({"id": [str(i) for i in range(n)],
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), dim),
                     "pending": [i >= n - pending for i in range(n)]})
    return lancedb.connect(str(path)).create_table("chunks", data, mode="overwrite")


def _ivf(table) -> bool:
    return any(ix.index_type.upper().startswith("IVF") for ix in table.list_indices())


def test_no_vector_index_over_placeholders_and_warnings_in_the_log(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(tables, "VECTOR_INDEX_MIN_ROWS", 150)
    log = tmp_path / "logs" / "index.log"
    tables.set_library_log(log)
    try:
        table = _table(tmp_path / "db", pending=380)
        tables.add_vector_index(table, 32)          # 400 rows, 380 of them waiting for the fill: no index yet
        assert not _ivf(table)
        # The fill has run: the rows are real, but many are still the same point (LanceDB warns of its empty
        # clusters while it trains): the index is built, and the warning is in the log, not on the terminal.
        table.update(where="pending = true", values={"pending": False})
        tables.add_vector_index(table, 32)
        assert _ivf(table)
        err = capfd.readouterr().err
        assert "KMeans" not in err and "clusters are empty" in log.read_text(), err
    finally:
        tables.set_library_log(None)
