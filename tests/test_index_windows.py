"""`index` streams the vault through windows of chunks: the result does not depend on the window, and the
memory a sync holds does not grow with the number of papers (abstract-only papers, as a CSL import makes)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from papervault.workspace import Workspace

from conftest import without_multilingual
from support_index import add_paper


def _abstract_vault(root, n: int, multilingual: bool = True) -> Workspace:
    ws, _ = Workspace.init(root)
    if not multilingual:
        without_multilingual(ws.root)
        ws = Workspace(ws.root)
    for i in range(n):
        add_paper(ws.vault, f"paper{i:05d}", title=f"Replicated log variant {i} for storage tier {i % 13}",
                  abstract=f"We study consensus variant {i} with quorum size {i % 7 + 3} and lease {i % 11} ms.",
                  year=2000 + i % 25)
    return ws


def _sync(ws: Workspace) -> dict:
    from papervault.index.store import PaperIndex

    with ws.write_lock("index"):
        return PaperIndex(ws).sync()


def _rows(ws: Workspace):
    from papervault.index.store import CHUNKS, open_db

    tab = open_db(ws).open_table(CHUNKS).to_arrow().select(["id", "vector"]).sort_by("id")
    return tab["id"].to_pylist(), tab["vector"].combine_chunks().flatten().to_numpy().reshape(len(tab), -1)


def test_windows_give_the_one_window_index(tmp_path, model_dir, monkeypatch):
    from papervault.index import store

    monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", "")    # each index computes its own vectors

    # 30 papers of two chunks: one window of 60 chunks against eight of at most 8 (the English space only: its
    # rows and vectors are what is compared)
    one = _abstract_vault(tmp_path / "one", 30, multilingual=False)
    whole = _sync(one)
    monkeypatch.setattr(store, "WINDOW_CHUNKS", 8)
    many = _abstract_vault(tmp_path / "many", 30, multilingual=False)
    seen: list[tuple[int, int]] = []
    from papervault.index.store import PaperIndex

    with many.write_lock("index"):
        windowed = PaperIndex(many).sync(progress=lambda d, t: seen.append((d, t)))
    assert windowed["chunks_embedded"] == whole["chunks_embedded"] == len(_rows(one)[0])
    assert sorted(windowed["added"]) == sorted(whole["added"]) and len(windowed["added"]) == 30
    ids_one, v_one = _rows(one)
    ids_many, v_many = _rows(many)
    assert ids_many == ids_one
    np.testing.assert_allclose(v_many, v_one, rtol=0, atol=1e-6)
    # the progress total grew window by window and ended at the whole count
    assert len({t for _, t in seen}) > 2 and seen[-1] == (whole["chunks_embedded"], whole["chunks_embedded"])
    # a second sync finds nothing to do
    again = _sync(many)
    assert again["unchanged"] == 30 and again["chunks_embedded"] == 0


def test_sync_memory_stays_flat_as_the_vault_grows(tmp_path, model_dir, monkeypatch):
    from papervault.index import store

    monkeypatch.setattr(store, "WINDOW_CHUNKS", 96)    # 3 windows of the smaller vault, 7 of the larger
    peaks = {}
    for n in (100, 300):
        ws = _abstract_vault(tmp_path / f"v{n}", n)
        # the model is loaded and the tables exist before measuring; the first 100 papers of both vaults are
        # the same, so the second vault's first sync takes their vectors from a cache of this test's own
        monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", str(tmp_path / "warm-vectors"))
        _sync(Workspace(ws.root))    # (a new Workspace reads its settings, with the variable, again)
        monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", "")   # the measured sync really embeds
        ws = Workspace(ws.root)
        for i in range(n):           # every title changes: the measured sync embeds all n papers again
            ws.vault.update_meta(f"paper{i:05d}", title=f"Revised replicated log variant {i}", tags=["changed"])
        tracemalloc.start()
        report = _sync(ws)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert len(report["updated"]) == n and report["chunks_embedded"] >= n, report
    # three times the papers: well under twice the peak (the window, not the vault, bounds what is held), and
    # under 6 KB more per added paper: ids and counts only (measured 3.6 KB; a sync that held every chunk of
    # the vault instead of a window grew by 9.8 KB per paper here)
    assert peaks[300] < 1.6 * peaks[100], peaks
    assert (peaks[300] - peaks[100]) / 200 < 6_000, peaks


def test_indexes_are_built_once_then_follow_each_window(tmp_path, model_dir, monkeypatch):
    """The full-text and vector indexes are made once, within a window of the rows that call for them, and then
    take new rows in (`optimize()`): no sync builds them over the whole table, which held every row's vector or
    postings in memory at once."""
    import lancedb.table

    from papervault.index import store
    from papervault.index.search import search

    monkeypatch.setattr(store, "WINDOW_CHUNKS", 32)
    monkeypatch.setattr(store, "VECTOR_INDEX_MIN_ROWS", 150)
    made: list[tuple[str, int]] = []
    real = lancedb.table.LanceTable.create_index

    def watched(self, *args, **kwargs):
        made.append((type(kwargs.get("config")).__name__, self.count_rows()))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(lancedb.table.LanceTable, "create_index", watched)
    ws = _abstract_vault(tmp_path / "v", 150, multilingual=False)      # 300 chunks: ten windows
    first = _sync(ws)
    assert first["chunks"] == 300
    fts = [rows for kind, rows in made if kind == "FTS"]
    ivf = [rows for kind, rows in made if kind == "IvfPq"]
    # the full-text indexes (chunks, papers) with the first window, the vector index when the table first held
    # 150 rows: each once, over at most a window more than called for
    assert len(fts) + len(ivf) == len(made) and len(fts) == 2 and max(fts) <= 32 + 2, made
    assert len(ivf) == 1 and 150 <= ivf[0] < 150 + 32 + 2, made
    table = store.open_db(ws).open_table(store.CHUNKS)
    for ix in table.list_indices():
        stats = table.index_stats(ix.name)
        assert stats.num_unindexed_rows == 0 and stats.num_indexed_rows == 300, (ix.name, stats)

    # a paper added later joins both indexes without either being made again, and is found by its own words
    made.clear()
    add_paper(ws.vault, "zpaper", title="Quorum leases for geo-replicated reads",
              abstract="A xylophonic lease protocol lets any replica answer reads locally.", year=2024)
    assert _sync(ws)["added"] == ["zpaper"]
    assert made == []
    hits = search(ws, "xylophonic lease protocol", limit=3)
    assert hits and hits[0].paper_id == "zpaper"
    for ix in table.list_indices():
        table.checkout_latest()
        assert table.index_stats(ix.name).num_unindexed_rows == 0, ix.name
